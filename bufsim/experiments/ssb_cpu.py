"""Notebook 01, issue 20 part 1: a CPU model of query execution, fitted on named subsets
of 000_fe2813b876a91991.txt and checked out of sample.

The model prices what a statement does, not only its page gets.  Per statement it takes

* **operator counts** from the plan
  (:func:`~bufsim.experiments.ssb_cpu_counts.operator_counts`, pure NumPy over the data
  the plans already hold): rows a full scan evaluates (``scan_rows``), ``eq_ref``
  dimension probes (``eq_ref``), rows read through a secondary index with the
  clustered lookup of each (``ref_rows``: date_first's ``LO_OrderDateKey`` range,
  index_first's driving dimension rows and their ``LO_PartKey``/``LO_CustKey`` rows),
  and rows that pass every predicate and reach the aggregation (``group_rows``);
* **buffer-pool counts** from a replay (:func:`bufsim.experiments.ssb.run_ssb` /
  :func:`~bufsim.experiments.ssb.q11_run`): page gets, clock reads of the old-blocks
  time check, synchronous page reads and read-ahead page reads;
* for a Cold run, the pages read from the disk (``cold_extra_ns``'s touched pages).

and splits the work in two lanes that run at the same time
(:data:`~bufsim.experiments.ssb_cpu_counts.LANES`):

* the **query thread**: CPU per scanned row, probe, ref row, aggregated row, get and
  clock read, the synchronous reads it waits for, and the disk reads of the probed
  (randomly read) pages in a Cold run;
* the **read-ahead lane**: each read-ahead page's read from the file-system cache,
  checksum and completion (``buf_page_io_complete``), done by the I/O threads, and in a
  Cold run the disk reads of the scanned pages.

A statement takes ``max(query thread, read-ahead lane)``: the query thread waits for
read-ahead only when it catches up with it.  The lanes overlap within a statement, not
across statements (the next statement starts when the previous one has returned its
result): with ``observations(..., statements=True)`` each observation is the sum of its
statements' maxima; without, the max is taken over the observation's totals.  The overlap is the document's own
evidence: ``SHOW PROFILE``'s CPU (``getrusage`` of the whole server) exceeds the
statement's wall time by 5.5-6.4 s in the Q1.1 scans (``data/ssb_q11_profile.csv``),
i.e. other threads worked while the query ran.  ``overlap=False`` gives the sum of the
two lanes instead (no overlap), for comparison.

Not modelled, with the reason: join buffers and Batched Key Access (the plans are
``eq_ref`` nested loops, 5.6.10's default ``optimizer_switch`` has ``batched_key_access=off``
and a join buffer is used only for joins without a usable index); the final sort
(at most 800 groups in the SSB queries, Q4.3: 2 years x 10 cities x 40 brands; microseconds).

Two exact programs say what any estimator on these counts could do
(:class:`~bufsim.experiments.ssb_cpu_fit.ExactProgram`,
``scipy.optimize.milp``, one binary per statement for its slower lane):
``fit(..., objective="minimax")`` finds the costs with the smallest largest relative
error (its residual is a floor no costs go below), and
:func:`~bufsim.experiments.ssb_cpu_ranges.prediction_range` the
smallest and largest prediction of held-out observations over every cost vector that
keeps the others within the limits (:data:`~bufsim.experiments.ssb_cpu_ranges.LIMITS`).

Every cost is fitted by non-negative least squares (``scipy.optimize.nnls``) of the
relative errors on a named set of observations (:func:`~bufsim.experiments.ssb_cpu_fit.fit`);
the max() makes the model
piecewise linear, so the fit alternates between choosing each observation's slower lane
and an nnls solve with those lanes, from several starts, and keeps the best.  The costs
are not separately identifiable from these data (the table's 13 queries are the same in
every configuration, so scanned rows, probes and aggregated rows move together); what
the data determine is their combination, and that is what the out-of-sample checks
test.

The model is built in named steps, one module each (every public name is re-exported
here):

1. :mod:`bufsim.experiments.ssb_cpu_counts`: the operator and buffer-pool counts, the
   observations;
2. :mod:`bufsim.experiments.ssb_cpu_fit`: :func:`~bufsim.experiments.ssb_cpu_fit.predict`
   and :func:`~bufsim.experiments.ssb_cpu_fit.fit` (least squares, or the exact minimax);
3. :mod:`bufsim.experiments.ssb_cpu_ranges`: leave-one-out predictions and their exact
   ranges; beside it :mod:`bufsim.experiments.ssb_cpu_twins`: twins, a version factor,
   the results rows.
"""
from __future__ import annotations

from .ssb_cpu_counts import (  # noqa: F401  (FEATURES: the feature columns, in COSTS order)
    FEATURES, COSTS, FITTED, LANES, NS, OPERATOR_COUNTS, observations, operator_counts, phase_of,
    statement_features, totals,
)
from .ssb_cpu_fit import (  # noqa: F401  (the fit's steps: the tests reach them here)
    OBJECTIVES, CpuFit, obs_groups, lane_matrices, minimax, ExactProgram, quiet_fd1, fit, predict,
)
from .ssb_cpu_ranges import (
    LIMITS, band_floor, held_out_ranges, leave_one_out, prediction_range, range_rows,
)
from .ssb_cpu_twins import (
    BUILD_SCALED, out_of_sample_rows, scale_version, twin_requirement, twins, version_factor_loo,
)

__all__ = ["COSTS", "LANES", "OPERATOR_COUNTS", "operator_counts", "statement_features",
           "observations", "totals", "CpuFit", "OBJECTIVES", "LIMITS", "fit", "predict",
           "leave_one_out", "prediction_range", "band_floor", "held_out_ranges", "range_rows",
           "twins", "twin_requirement", "BUILD_SCALED", "scale_version", "version_factor_loo",
           "out_of_sample_rows", "phase_of"]
