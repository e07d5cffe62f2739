"""Notebook 01, issue 20 part 1: a CPU model of query execution, fitted on named subsets
of 000_fe2813b876a91991.txt and checked out of sample.

The model prices what a statement does, not only its page gets.  Per statement it takes

* **operator counts** from the plan (:func:`operator_counts`, pure NumPy over the data
  the plans already hold): rows a full scan evaluates (``scan_rows``), ``eq_ref``
  dimension probes (``eq_ref``), rows read through a secondary index with the
  clustered lookup of each (``ref_rows``: date_first's ``LO_OrderDateKey`` range,
  index_first's driving dimension rows and their ``LO_PartKey``/``LO_CustKey`` rows),
  and rows that pass every predicate and reach the aggregation (``group_rows``);
* **buffer-pool counts** from a replay (:func:`bufsim.experiments.ssb.run_ssb` /
  :func:`~bufsim.experiments.ssb.q11_run`): page gets, clock reads of the old-blocks
  time check, synchronous page reads and read-ahead page reads;
* for a Cold run, the pages read from the disk (``cold_extra_ns``'s touched pages).

and splits the work in two lanes that run at the same time (:data:`LANES`):

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

Two exact programs say what any estimator on these counts could do (:class:`_Program`,
``scipy.optimize.milp``, one binary per statement for its slower lane):
``fit(..., objective="minimax")`` finds the costs with the smallest largest relative
error (its residual is a floor no costs go below), and :func:`prediction_range` the
smallest and largest prediction of held-out observations over every cost vector that
keeps the others within the limits (:data:`LIMITS`).

Every cost is fitted by non-negative least squares (``scipy.optimize.nnls``) of the
relative errors on a named set of observations (:func:`fit`); the max() makes the model
piecewise linear, so the fit alternates between choosing each observation's slower lane
and an nnls solve with those lanes, from several starts, and keeps the best.  The costs
are not separately identifiable from these data (the table's 13 queries are the same in
every configuration, so scanned rows, probes and aggregated rows move together); what
the data determine is their combination, and that is what the out-of-sample checks
test.
"""
from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .._validation import check_int
from ..workloads.ssb import N_DATES, PLANS, QUERIES, SSB

__all__ = ["COSTS", "LANES", "OPERATOR_COUNTS", "operator_counts", "statement_features",
           "observations", "totals", "CpuFit", "OBJECTIVES", "LIMITS", "fit", "predict",
           "leave_one_out", "prediction_range", "band_floor", "held_out_ranges", "range_rows",
           "twins", "twin_requirement", "BUILD_SCALED", "scale_version", "version_factor_loo",
           "out_of_sample_rows", "phase_of"]

#: operator counts of a statement (from the plan)
OPERATOR_COUNTS = ("scan_rows", "eq_ref", "ref_rows", "group_rows")

#: cost name -> (feature column it multiplies, lane, what it is)
COSTS = {
    "scan_row": ("scan_rows", "query", "CPU per row a full scan evaluates (WHERE on lineorder columns)"),
    "eq_ref": ("eq_ref", "query", "CPU per eq_ref dimension probe (row read and its predicate)"),
    "ref_row": ("ref_rows", "query", "CPU per row read through a secondary index (entry + clustered lookup)"),
    "group_row": ("group_rows", "query", "CPU per row reaching the aggregation (GROUP BY / SUM)"),
    "get": ("gets", "query", "CPU per page get (buf_page_get_gen)"),
    "check": ("clock_reads", "query", "CPU per clock read (old-blocks time check, ut_time_ms)"),
    "sync_read": ("sync_reads", "query", "time per synchronous page read from the file-system cache"),
    "ahead_read": ("ahead_reads", "ahead", "I/O-thread time per read-ahead page (read, checksum, completion)"),
    "cold_page_q": ("cold_random_pages", "query", "disk time per probed page in a Cold run (tied to cold_page)"),
    "cold_page": ("cold_seq_pages", "ahead", "disk time per page read from the disk in a Cold run"),
}
#: the two lanes that run at the same time
LANES = ("query", "ahead")
#: the fitted costs (cold_page_q is cold_page: one disk price for every cold page)
FITTED = tuple(k for k in COSTS if k != "cold_page_q")

NS = 1_000_000_000


def _final_alive(ssb: SSB, name: str) -> np.ndarray:
    """Rows of lineorder that pass every predicate of ``name`` (the rows aggregated)."""
    spec = PLANS[name]
    d = ssb.data
    alive = spec["lo"](d) if "lo" in spec else np.ones(d.rows, dtype=bool)
    for table, pred in spec["joins"]:
        m = ssb._dim_mask(table, pred)
        if m is not None:
            alive &= m[ssb._key_column(table).astype(np.int64)]
    return alive


def operator_counts(ssb: SSB, query: str, plan: str = "scan") -> dict:
    """The operator counts of ``query`` under ``plan`` (see the module docstring).

    ``scan``: lineorder's rows are evaluated (``scan_rows``), each probe a row passes
    into is an ``eq_ref`` (consecutive repeats skipped, as the plan does), rows passing
    all are aggregated.  ``date_first``: ``dim_date``'s 2,556 rows are scanned, each
    qualifying date's lineorder rows are read through ``LO_OrderDateKey`` (``ref_rows``)
    and the lineorder predicates evaluated on them; those passing are aggregated.
    """
    if query not in PLANS:
        raise ValueError(f"query = {query!r} is not an SSB query; allowed: {', '.join(QUERIES)}")
    group_rows = int(_final_alive(ssb, query).sum())
    if plan == "scan":
        eq = sum(int((e >= 0).sum()) for _, e in ssb.probes(query))
        return dict(scan_rows=int(ssb.data.rows), eq_ref=eq, ref_rows=0, group_rows=group_rows)
    if plan == "date_first":
        if not query.startswith("Q1."):
            raise ValueError(f"plan = 'date_first' exists for Q1.1-Q1.3 only, not {query}")
        _, pred = PLANS[query]["joins"][0]
        dates = pred(np.arange(N_DATES))
        ref = int(dates[ssb.data.orderdate].sum())
        return dict(scan_rows=N_DATES, eq_ref=0, ref_rows=ref, group_rows=group_rows)
    if plan == "index_first":
        c = ssb.index_first_rows(query)
        return dict(scan_rows=0, eq_ref=c["eq_ref"], ref_rows=c["driver"] + c["ref"],
                    group_rows=group_rows)
    raise ValueError(f"plan = {plan!r} is not a plan; allowed: 'scan', 'date_first', 'index_first'")


def statement_features(counts: Mapping, replay_row: Mapping) -> dict:
    """One statement's features: its operator counts and its replay's buffer-pool
    counts (``gets``, ``pages_read``, ``read_ahead``, ``clock_reads`` as in
    :func:`bufsim.experiments.ssb.run_ssb`'s rows)."""
    reads, ahead = float(replay_row["pages_read"]), float(replay_row["read_ahead"])
    clock = float(replay_row["clock_reads"])
    if not np.isfinite(clock):
        raise ValueError("replay row has no clock_reads (Calibration.clock_read_ns was 0)")
    out = {k: float(counts[k]) for k in OPERATOR_COUNTS}
    out.update(gets=float(replay_row["gets"]), clock_reads=clock,
               sync_reads=max(0.0, reads - ahead), ahead_reads=ahead,
               cold_seq_pages=0.0, cold_random_pages=0.0)
    return out


def phase_of(run: str) -> str:
    """The table's run name -> the phase of the results file (``cold`` or ``run1-3``)."""
    if run == "Cold":
        return "cold"
    if run in ("Run1", "Run2", "Run3"):
        return "run1-3"
    raise ValueError(f"run = {run!r} is not a run of the table; allowed: Cold, Run1, Run2, Run3")


_FEATURES = tuple(dict.fromkeys(f for f, _, _ in COSTS.values()))


def observations(ssb: SSB, per_query: pd.DataFrame, times: pd.DataFrame, cold: Mapping, *,
                 q11_runs: pd.DataFrame | None = None, q11_ssb: SSB | None = None,
                 table_scale: float = 1.0, statements: bool = False) -> pd.DataFrame:
    """The observations the model is fitted on and checked against, one row each.

    * One per configuration and phase of the 13-query table: ``per_query`` is
      :func:`~bufsim.experiments.ssb.run_ssb`'s result (configs labelled as
      ``SsbConfig.label``), ``times`` is ``data/ssb_response_times.csv``.  Phase
      ``run1-3``: the mean of Run1-3, reported and simulated counts alike; phase
      ``cold``: the Cold run, plus ``cold``'s pages read from the disk
      (:func:`~bufsim.experiments.ssb.cold_extra_ns`'s ``seq_pages`` and
      ``random_pages``).
    * With ``q11_runs`` (:func:`~bufsim.experiments.ssb.fit_q11`'s ``runs`` with
      ``reported_seconds``), one per Q1.1 run (``config`` "Q1.1 <plan> t=<ms>", phase
      ``q11``, flight 1).  ``q11_ssb`` is the SSB those runs used (default ``ssb``).

    ``table_scale`` multiplies the table's counts (not Q1.1's): a table replayed at scale
    factor ``sf`` with pools scaled by ``sf`` (notebook 01's quick mode) has about ``sf``
    times the SF1 counts, so ``1 / sf`` brings them to the document's size (a smoke test).

    Columns: ``config``, ``phase``, ``flight`` (the flights whose queries the time
    contains: ``"1-4"`` for the table, ``"1"`` for Q1.1), ``reported`` (seconds) and
    the features (``COSTS``' columns).

    With ``statements``, one row per statement of each observation instead (column
    ``statement``: the query as ``per_query`` names it, ``"Q1.1:<plan>"`` for Q1.1's
    runs; ``reported`` is the observation's time on each of its rows): the lanes then
    overlap within a statement only (:func:`predict`).  A Cold statement carries the
    disk pages it touches first (``cold["by_query"]``, :func:`~bufsim.experiments.ssb.cold_extra_ns`).
    """
    if not (isinstance(table_scale, (int, float)) and 0 < table_scale < 1e6):
        raise ValueError(f"table_scale = {table_scale!r} is out of range; allowed: 0 < table_scale < 1e6")
    need = {"config", "run", "query", "gets", "pages_read", "read_ahead", "clock_reads"}
    if not need <= set(per_query.columns):
        raise ValueError(f"per_query lacks column(s) {sorted(need - set(per_query.columns))}")
    for k in ("seq_pages", "random_pages"):
        if k not in cold:
            raise ValueError(f"cold lacks {k!r} (see cold_extra_ns)")
    counts = {}
    for q in per_query["query"].unique():
        name, _, plan = q.partition(":")
        counts[q] = operator_counts(ssb, name, plan or "scan")
    feats = pd.DataFrame([statement_features(counts[r["query"]], r)
                          for r in per_query.to_dict("records")])
    feats["config"] = per_query["config"].to_numpy()
    feats["phase"] = [phase_of(r) for r in per_query["run"]]
    feats["run"] = per_query["run"].to_numpy()
    if statements:
        if "by_query" not in cold:
            raise ValueError("cold lacks 'by_query' (see cold_extra_ns), needed with statements=True")
        feats["statement"] = per_query["query"].to_numpy()
        sim = feats.groupby(["config", "phase", "statement"], sort=False)[list(_FEATURES)].mean()
        ph = sim.index.get_level_values("phase") == "cold"
        st = sim.index.get_level_values("statement")
        by_q = cold["by_query"]
        missing = sorted(set(st[ph]) - set(by_q))
        if missing:
            raise ValueError(f"cold['by_query'] lacks {missing}")
        sim.loc[ph, "cold_seq_pages"] = [float(by_q[q][0]) for q in st[ph]]
        sim.loc[ph, "cold_random_pages"] = [float(by_q[q][1]) for q in st[ph]]
        sim = sim * float(table_scale)
        keys = ["config", "phase"]
    else:
        per_run = feats.groupby(["config", "phase", "run"], sort=False)[list(_FEATURES)].sum()
        sim = per_run.groupby(level=["config", "phase"], sort=False).mean()
        cold_rows = sim.index.get_level_values("phase") == "cold"
        sim.loc[cold_rows, "cold_seq_pages"] = float(cold["seq_pages"])
        sim.loc[cold_rows, "cold_random_pages"] = float(cold["random_pages"])
        sim = sim * float(table_scale)
        keys = None
    t = times.assign(config=[f"{v} {b} t={m}" for v, b, m in
                             zip(times.version, times.buffer_pool, times.old_blocks_time_ms)])
    t["phase"] = [phase_of(r) for r in t.run]
    rep = t.groupby(["config", "phase"], sort=False).seconds.mean().rename("reported")
    out = sim.reset_index().merge(rep.reset_index(), on=["config", "phase"], how="inner")
    if len(out) != len(sim):
        missing = set(zip(sim.index.get_level_values("config"), sim.index.get_level_values("phase"))) \
            - set(rep.index)
        raise ValueError(f"no reported time for {sorted(missing)}")
    out["flight"] = "1-4"
    if q11_runs is not None:
        s1 = q11_ssb if q11_ssb is not None else ssb
        rows = []
        for r in q11_runs.to_dict("records"):
            f = statement_features(operator_counts(s1, "Q1.1", r["plan"]), r)
            f.update(config=f"Q1.1 {r['plan']} t={int(r['old_blocks_time_ms'])}", phase="q11",
                     flight="1", reported=float(r["reported_seconds"]), statement=f"Q1.1:{r['plan']}")
            rows.append(f)
        out = pd.concat([pd.DataFrame(rows), out], ignore_index=True)
    lead = ["config", "phase", "flight", "reported"] + (["statement"] if keys else [])
    return out[[*lead, *_FEATURES]].reset_index(drop=True)


def totals(obs: pd.DataFrame) -> pd.DataFrame:
    """Per-statement observations (``observations(..., statements=True)``) summed into one
    row per observation (``config``, ``phase``, ``flight``, ``reported`` and the features);
    observations without a ``statement`` column are returned unchanged."""
    if "statement" not in obs.columns:
        return obs
    head = obs.groupby(["config", "phase"], sort=False)[["flight", "reported"]].first()
    feats = obs.groupby(["config", "phase"], sort=False)[list(_FEATURES)].sum()
    return head.join(feats).reset_index()


# ---- the model -----------------------------------------------------------------------------
def _lane_matrices(obs: pd.DataFrame):
    """Per lane, the matrix of features times costs (columns in FITTED order; the tied
    cold_page_q feature is added onto cold_page's column in the query lane)."""
    mats = {}
    for lane in LANES:
        m = np.zeros((len(obs), len(FITTED)))
        for name, (col, ln, _) in COSTS.items():
            if ln != lane:
                continue
            j = FITTED.index("cold_page" if name == "cold_page_q" else name)
            m[:, j] += obs[col].to_numpy(float)
        mats[lane] = m / NS       # ns -> seconds
    return mats


def _groups(obs: pd.DataFrame):
    """The observations (``config``, ``phase``) in order of first appearance, and the
    0/1 matrix summing ``obs``' rows into them (the identity without a ``statement``
    column: each row is an observation)."""
    if "statement" not in obs.columns:
        keys = list(zip(obs["config"], obs["phase"]))
        return keys, np.eye(len(obs))
    pairs = list(zip(obs["config"], obs["phase"]))
    keys = list(dict.fromkeys(pairs))
    pos = {k: i for i, k in enumerate(keys)}
    g = np.zeros((len(keys), len(obs)))
    g[[pos[p] for p in pairs], np.arange(len(obs))] = 1.0
    return keys, g


def predict(costs: Mapping[str, float], obs: pd.DataFrame, *, overlap: bool = True) -> pd.DataFrame:
    """Per observation: the query-thread and read-ahead lane seconds and the predicted
    time (their max with ``overlap``, else their sum).  With a ``statement`` column
    (``observations(..., statements=True)``) the max is taken per statement and summed
    over the observation's statements; one row per observation (``config``, ``phase``,
    ``reported`` when ``obs`` has it)."""
    missing = [k for k in FITTED if k not in costs]
    if missing:
        raise ValueError(f"costs lack {missing}; allowed keys: {', '.join(FITTED)}")
    x = np.array([float(costs[k]) for k in FITTED])
    if (x < 0).any() or not np.isfinite(x).all():
        raise ValueError(f"costs must be finite and >= 0, got {dict(costs)}")
    mats = _lane_matrices(obs)
    q, a = mats["query"] @ x, mats["ahead"] @ x
    t = np.maximum(q, a) if overlap else q + a
    keys, g = _groups(obs)
    out = pd.DataFrame({"config": [k[0] for k in keys], "phase": [k[1] for k in keys],
                        "query_s": g @ q, "ahead_s": g @ a, "predicted": g @ t})
    if "statement" not in obs.columns:
        out.index = obs.index
    if "reported" in obs.columns:
        first = obs.groupby(["config", "phase"], sort=False)["reported"].first()
        out.insert(2, "reported", [float(first.loc[k]) for k in keys])
    return out


@dataclass
class CpuFit:
    """Fitted costs (ns, >= 0), the fit set's names, the in-sample predictions and the
    residual: the norm of the relative errors (``objective="lsq"``) or the largest
    relative error (``"minimax"``)."""

    costs: dict
    fit_set: tuple
    in_sample: pd.DataFrame
    residual: float
    overlap: bool
    objective: str = "lsq"

    def table(self) -> pd.DataFrame:
        """The costs with what each prices and its fit set (written beside it)."""
        return pd.DataFrame([dict(cost=k, ns=self.costs[k], lane=COSTS[k][1], prices=COSTS[k][2],
                                  fit_set=", ".join(self.fit_set)) for k in FITTED])


OBJECTIVES = ("lsq", "minimax")


def fit(obs: pd.DataFrame, fit_set: Iterable[str] | None = None, *, overlap: bool = True,
        max_iter: int = 50, objective: str = "lsq", time_limit: float = 120.0) -> CpuFit:
    """Fit the costs on the observations named in ``fit_set`` (``config`` values;
    None: all).

    ``objective="minimax"`` minimises the largest relative error instead, exactly
    (:func:`_minimax`, a mixed-integer program; ``time_limit`` seconds at most): its
    residual is the smallest largest error any costs >= 0 reach on the fit set, so a
    smaller one is not in the model.

    ``"lsq"`` minimises the squared relative errors subject to costs >= 0 (``scipy.optimize.nnls``).
    With ``overlap`` (max of the lanes) the fit alternates: fix each observation's slower
    lane, solve the nnls with that lane's features, re-decide the lanes; from three starts
    (every observation on the query lane, every one on the read-ahead lane, the no-overlap
    solution) until the lanes stop changing or ``max_iter``; the start with the smallest
    max-model error wins.  A cost whose feature is 0 in every fitted observation is 0
    (nothing determines it).
    """
    from scipy.optimize import nnls

    check_int("max_iter", max_iter, 1)
    if objective not in OBJECTIVES:
        raise ValueError(f"objective = {objective!r}; allowed: {', '.join(map(repr, OBJECTIVES))}")
    names = list(obs["config"]) if fit_set is None else list(fit_set)
    unknown = [n for n in names if n not in set(obs["config"])]
    if unknown or not names:
        raise ValueError(f"fit_set names {unknown or 'nothing'}; allowed: {sorted(set(obs['config']))}")
    sub = obs[obs["config"].isin(names)]
    keys, g = _groups(sub)
    y = sub.groupby(["config", "phase"], sort=False)["reported"].first()
    y = np.array([float(y.loc[k]) for k in keys])
    if (y <= 0).any():
        raise ValueError("reported times must all be > 0")
    w = 1 / y
    mats = _lane_matrices(sub)
    Aq, Aa = mats["query"], mats["ahead"]

    def solve(A):
        x, _ = nnls(A * w[:, None], y * w, maxiter=50 * A.shape[1])
        return x

    def err(x):
        q, a = Aq @ x, Aa @ x
        t = g @ (np.maximum(q, a) if overlap else q + a)
        return float(np.sqrt(np.sum(((t - y) * w) ** 2)))

    x_sum = solve(g @ (Aq + Aa))
    best = x_sum
    if overlap:
        best_err = np.inf
        for start in ("query", "ahead", "sum"):
            if start == "sum":
                on_q = (Aq @ x_sum) >= (Aa @ x_sum)
            else:
                on_q = np.full(len(sub), start == "query")
            for _ in range(max_iter):
                A = g @ np.where(on_q[:, None], Aq, Aa)
                x = solve(A)
                new = (Aq @ x) >= (Aa @ x)
                if (new == on_q).all():
                    break
                on_q = new
            e = err(x)
            if e < best_err - 1e-12:
                best, best_err = x, e
    residual = err(best)
    if objective == "minimax":
        q, a = Aq @ best, Aa @ best
        start = g @ (np.maximum(q, a) if overlap else q + a)
        best, residual = _minimax(Aq, Aa, g, y, overlap,
                                  float(np.max(np.abs(start / y - 1))) * 1.01 + 1e-4,
                                  time_limit)
    costs = {k: float(v) for k, v in zip(FITTED, best)}
    pred = predict(costs, sub, overlap=overlap)
    pred["reported"] = y
    pred["ratio"] = pred["predicted"] / y
    return CpuFit(costs, tuple(dict.fromkeys(names)), pred, residual, overlap, objective)


@contextlib.contextmanager
def _quiet_fd1():
    """The process's standard output (file descriptor 1) goes to the null device inside.

    HiGHS, the solver behind ``scipy.optimize.milp``, prints some internal lines (e.g.
    ``HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();``) straight
    to descriptor 1 even with ``disp`` off, and Jupyter shows those in the cell's output.
    The result and any error still come back through ``milp``'s return value.  Where
    descriptor 1 cannot be duplicated, nothing is redirected."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


class _Program:
    """The mixed-integer program behind :func:`_minimax` and :func:`prediction_range`.

    Row ``r`` of ``Aq``/``Aa`` (a statement, or an observation) takes ``v_r``: the sum of
    its lanes without ``overlap`` or where one lane has no feature; else their max, by one
    binary ``b_r`` (``v_r >= q_r, a_r``; ``v_r <= q_r + M b_r``; ``v_r <= a_r + M (1 - b_r)``,
    so ``M`` must bound every lane).  Observation ``o`` (``g``'s row) predicts
    ``sum v_r`` with relative error ``e_o`` (``e_o >= |sum v_r / y_o - 1|``) and
    ``e_o <= tau`` for each observation ``linked`` (default: all; the others' ``e_o`` are
    bounded through ``ub`` alone).  Variables: the costs (ns), ``v``, ``b``, ``e``, ``tau``.
    """

    def __init__(self, Aq, Aa, g, y, overlap, big, linked=None):
        n, nc, no = Aq.shape[0], Aq.shape[1], len(y)
        linked = np.ones(no, bool) if linked is None else np.asarray(linked, bool)
        two = np.nonzero((Aq.any(axis=1) & Aa.any(axis=1)) if overlap else np.zeros(n, bool))[0]
        self.nc, self.iv, self.ib = nc, nc, nc + n
        self.ie = self.ib + len(two)
        self.it = self.ie + no
        nv = self.it + 1
        rows, lo, hi = [], [], []

        def add(z, lower, upper):
            rows.append(z), lo.append(lower), hi.append(upper)

        for r in np.setdiff1d(np.arange(n), two):              # v_r = (q_r + a_r) . costs
            z = np.zeros(nv); z[:nc] = -(Aq[r] + Aa[r]); z[self.iv + r] = 1; add(z, 0.0, 0.0)
        for j, r in enumerate(two):
            for lane, other in ((Aq[r], 0.0), (Aa[r], 1.0)):
                z = np.zeros(nv); z[:nc] = -lane; z[self.iv + r] = 1; add(z, 0.0, np.inf)
                z = z.copy(); z[self.ib + j] = big if other else -big
                add(z, -np.inf, big * other)
        for o in range(no):
            members = self.iv + np.nonzero(g[o])[0]
            for sign in (1.0, -1.0):
                z = np.zeros(nv); z[members] = -sign / y[o]; z[self.ie + o] = 1; add(z, -sign, np.inf)
            if linked[o]:
                z = np.zeros(nv); z[self.ie + o] = 1; z[self.it] = -1; add(z, -np.inf, 0.0)
        self.a, self.lo, self.hi = np.array(rows), lo, hi
        self.lb, self.ub = np.zeros(nv), np.full(nv, np.inf)
        self.ub[self.ib:self.ie] = 1
        self.integrality = np.zeros(nv)
        self.integrality[self.ib:self.ie] = 1
        self.nv = nv

    def solve(self, cost, time_limit):
        from scipy.optimize import Bounds, LinearConstraint, milp

        with _quiet_fd1():
            res = milp(cost, constraints=LinearConstraint(self.a, self.lo, self.hi),
                       integrality=self.integrality, bounds=Bounds(self.lb, self.ub),
                       options=dict(time_limit=float(time_limit), mip_rel_gap=1e-9))
        if res.status != 0:
            raise RuntimeError(f"cost program: {res.message} (time_limit = {time_limit} s)")
        return res.x


def _minimax(Aq, Aa, g, y, overlap, tau_start, time_limit):
    """The costs (ns, >= 0) whose largest relative error over the observations is the
    smallest, and that error: exact, by ``scipy.optimize.milp`` (HiGHS) over
    :class:`_Program`.  First ``tau`` is minimised; then, with ``tau`` held at its
    minimum, the sum of the errors (the minimum has many costs in general; this picks
    one, deterministically).  ``tau_start`` is an error some costs reach (a little more
    than the least-squares fit's): the minimum is no larger, and it bounds ``M``.
    """
    pr = _Program(Aq, Aa, g, y, overlap, (1 + tau_start) * float(y.max()) * 1.01 + 1.0)
    pr.ub[pr.it] = tau_start
    c1 = np.zeros(pr.nv); c1[pr.it] = 1
    tau = float(pr.solve(c1, time_limit)[pr.it])
    c2 = np.zeros(pr.nv); c2[pr.ie:pr.it] = 1
    slack = max(1e-7, 1e-6 * tau)
    for attempt in range(4):           # the solver's tolerances may need a looser tau
        pr.ub[pr.it] = tau + slack
        try:
            x = pr.solve(c2, time_limit)
            break
        except RuntimeError:
            if attempt == 3:
                raise
            slack *= 10
    costs = np.maximum(x[:pr.nc], 0.0)
    q, a = Aq @ costs, Aa @ costs
    pred = g @ (np.maximum(q, a) if overlap else q + a)
    return costs, float(np.max(np.abs(pred / y - 1)))


#: the relative error an observation of each phase may have (issue 20's limits; Q1.1's
#: times, which the issue gives no limit, are held to the table's Run1-3 limit)
LIMITS = {"cold": 0.35, "run1-3": 0.25, "q11": 0.25}


def prediction_range(obs: pd.DataFrame, held: Sequence[str], *, overlap: bool = True,
                     limits: Mapping[str, float] = LIMITS, ceiling: float = 10.0,
                     time_limit: float = 120.0) -> pd.DataFrame:
    """What the other observations allow the held-out ones to be predicted at.

    Over every cost vector (ns, >= 0) that puts each observation not in ``held``
    (``config`` values) within its phase's limit (``limits``), the smallest and the
    largest prediction of each held-out observation (exact, by :class:`_Program`).  A
    wide range says the fit set does not determine the prediction: any value in it is
    what some costs that fit the rest within the limits predict; a range outside
    ``1 +- limit`` shows that no fit within the limits predicts the held-out observation
    within its own.  ``high`` is capped at ``ceiling`` (>= 2) times the reported time
    (``capped`` True when it reaches it).

    One row per held-out observation: ``config``, ``phase``, ``reported``, ``low``,
    ``high`` (seconds), ``ratio_low``, ``ratio_high``, ``capped``.  Raises ValueError when
    no costs put the fit set within the limits.
    """
    held = list(held)
    cfgs = list(dict.fromkeys(obs["config"]))
    unknown = [h for h in held if h not in cfgs]
    if unknown or not held or len(held) == len(cfgs):
        raise ValueError(f"held = {held!r}: must name some but not all of {cfgs}")
    bad = {k: v for k, v in limits.items()
           if not (isinstance(v, (int, float)) and 0 < v < np.inf and not isinstance(v, bool))}
    if bad:
        raise ValueError(f"limits {bad} out of range; allowed: a finite number > 0")
    if not (isinstance(ceiling, (int, float)) and 2 <= ceiling < np.inf):
        raise ValueError(f"ceiling = {ceiling!r}; allowed: a finite number >= 2")
    keys, g = _groups(obs)
    y = obs.groupby(["config", "phase"], sort=False)["reported"].first()
    y = np.array([float(y.loc[k]) for k in keys])
    missing = sorted({k[1] for k in keys if k[0] not in held} - set(limits))
    if missing:
        raise ValueError(f"limits lack phase(s) {missing}")
    mats = _lane_matrices(obs)
    big = max(float(ceiling), 1 + max(limits.values())) * float(y.max()) * 1.01 + 1.0
    pr = _Program(mats["query"], mats["ahead"], g, y, overlap, big)
    for o, (cfg, phase) in enumerate(keys):
        if cfg in held:                        # a held-out prediction: at most the ceiling
            pr.ub[pr.ie + o] = ceiling - 1
        else:
            pr.ub[pr.ie + o] = float(limits[phase])
    out = []
    for o, (cfg, phase) in enumerate(keys):
        if cfg not in held:
            continue
        cost = np.zeros(pr.nv)
        cost[pr.iv + np.nonzero(g[o])[0]] = 1.0 / y[o]
        try:
            low = float(cost @ pr.solve(cost, time_limit)) * y[o]
            high = float(cost @ pr.solve(-cost, time_limit)) * y[o]
        except RuntimeError as e:
            if "infeasible" in str(e).lower():
                raise ValueError(f"no costs >= 0 put every observation but {held} within "
                                 f"{dict(limits)}") from None
            raise
        out.append(dict(config=cfg, phase=phase, reported=y[o], low=low, high=high,
                        ratio_low=low / y[o], ratio_high=high / y[o],
                        capped=bool(high >= ceiling * y[o] * (1 - 1e-6))))
    return pd.DataFrame(out)


def band_floor(obs: pd.DataFrame, held: Sequence[str], *, overlap: bool = True,
               limits: Mapping[str, float] = LIMITS, time_limit: float = 120.0) -> tuple[float, float]:
    """What predicting ``held`` (``config`` values) within their limits costs the rest.

    Returns ``(floor, in_band)``: ``floor`` is the minimax floor of the observations not
    in ``held`` (:func:`fit`'s ``"minimax"`` residual on them: the smallest largest
    relative error any costs >= 0 reach); ``in_band`` is the same smallest largest error
    over the costs that *also* predict every held-out observation within its phase's
    limit (``limits``), ``nan`` when no costs do.  ``in_band - floor`` is how much worse on
    its own data a fit must be to meet the limits out of sample: 0 when one of the best
    fits of the rest already does; small and positive when the fit set allows it but its
    best fits do not (then which fit meets it is a choice among near-equal costs, not a
    prediction); ``nan`` when none can.  Exact, by :class:`_Program`.
    """
    held = list(held)
    cfgs = list(dict.fromkeys(obs["config"]))
    unknown = [h for h in held if h not in cfgs]
    if unknown or not held or len(held) == len(cfgs):
        raise ValueError(f"held = {held!r}: must name some but not all of {cfgs}")
    keys, g = _groups(obs)
    missing = sorted({k[1] for k in keys if k[0] in held} - set(limits))
    if missing:
        raise ValueError(f"limits lack phase(s) {missing}")
    floor = fit(obs, [c for c in cfgs if c not in held], overlap=overlap, objective="minimax",
                time_limit=time_limit).residual
    y = obs.groupby(["config", "phase"], sort=False)["reported"].first()
    y = np.array([float(y.loc[k]) for k in keys])
    out = np.array([k[0] in held for k in keys])
    mats = _lane_matrices(obs)
    cap = max(9.0, 2 * floor)          # the rest's errors: a bound for M, never reached
    top = 1 + max(cap, max(limits[k[1]] for k in keys if k[0] in held))
    pr = _Program(mats["query"], mats["ahead"], g, y, overlap, top * float(y.max()) * 1.01 + 1.0,
                  linked=~out)
    for o, (cfg, phase) in enumerate(keys):
        pr.ub[pr.ie + o] = float(limits[phase]) if out[o] else cap
    cost = np.zeros(pr.nv)
    cost[pr.it] = 1.0
    try:
        in_band = float(pr.solve(cost, time_limit)[pr.it])
    except RuntimeError as e:
        if "infeasible" not in str(e).lower():
            raise
        in_band = float("nan")
    return floor, max(in_band, floor)


def held_out_ranges(obs: pd.DataFrame, configs: Sequence[str],
                    fits: Mapping[str, pd.DataFrame] | None = None, *, overlap: bool = True,
                    limits: Mapping[str, float] = LIMITS) -> pd.DataFrame:
    """Each configuration of ``configs`` held out alone: its :func:`prediction_range` over
    the costs that keep every other observation within ``limits``, beside each
    leave-one-out result in ``fits`` (name -> :func:`leave_one_out`'s rows; a column of
    ratios each, and ``holds (name)``).

    Where no costs keep the others within ``limits`` (the fit set's own minimax floor is
    above the smallest limit, as with quick mode's smoke counts), the range is over the
    costs within that floor + 0.001 instead; ``range_limit`` says which (``limits`` or the
    floor).  ``limit`` is the acceptance's limit of the row's phase and ``reachable``
    whether the range meets the band ``1 +- limit``: if not, no fit within the limits
    predicts it within its own.  ``fit_floor`` and ``floor_in_band`` are
    :func:`band_floor`'s two numbers for the configuration: the rest's minimax floor, and
    the smallest largest error on the rest of the costs that put this configuration's
    every phase within its limit (``nan``: no costs do).
    """
    fits = dict(fits or {})
    parts = []
    for cfg in configs:
        floor, in_band = band_floor(obs, [cfg], overlap=overlap, limits=limits)
        lim = dict(limits)
        if floor > min(limits.values()):
            lim = {k: max(v, floor + 1e-3) for k, v in limits.items()}
        r = prediction_range(obs, [cfg], overlap=overlap, limits=lim)
        r["range_limit"] = "limits" if lim == dict(limits) else f"floor {floor + 1e-3:.3f}"
        r["fit_floor"], r["floor_in_band"] = floor, in_band
        parts.append(r)
    out = pd.concat(parts, ignore_index=True).drop(columns=["low", "high"])
    for name, loo in fits.items():
        out = out.merge(loo[["config", "phase", "ratio"]].rename(columns={"ratio": name}),
                        on=["config", "phase"], how="left")
    out["limit"] = out.phase.map(limits)
    out["reachable"] = (out.ratio_low <= 1 + out.limit) & (out.ratio_high >= 1 - out.limit)
    for name in fits:
        out[f"holds ({name})"] = (out[name] - 1).abs() <= out.limit
    return out


def range_rows(ranges: pd.DataFrame, experiment: str) -> list[dict]:
    """Rows for :func:`bufsim.results.write_results` from :func:`held_out_ranges`: two per
    configuration and phase (``metric`` "<phase> low" / "<phase> high", ``simulated`` the
    range's end in seconds), ``fitted`` False, ``holds`` = ``reachable``."""
    return [dict(experiment=experiment, metric=f"{r['phase']} {end}", config=r["config"],
                 reported=float(r["reported"]), simulated=float(r[f"ratio_{end}"] * r["reported"]),
                 fitted=False, holds=bool(r["reachable"]))
            for r in ranges.to_dict("records") for end in ("low", "high")]


def leave_one_out(obs: pd.DataFrame, groups: Mapping[str, Sequence[str]], *,
                  overlap: bool = True, objective: str = "lsq") -> pd.DataFrame:
    """For each ``{held-out name: [config, ...]}``: fit on every other observation
    (:func:`fit` with ``objective``) and predict the held-out ones.  One row per held-out
    observation: ``held_out``, ``config``, ``phase``, ``reported``, ``predicted``,
    ``ratio``, the lanes, the fit set's size, its largest in-sample relative error
    (``fit_max_error``) and the costs."""
    rows = []
    all_cfg = list(dict.fromkeys(obs["config"]))
    for name, held in groups.items():
        held = list(held)
        unknown = [h for h in held if h not in all_cfg]
        if unknown or not held:
            raise ValueError(f"held-out group {name!r} names {unknown or 'nothing'}; "
                             f"allowed: {all_cfg}")
        rest = [c for c in all_cfg if c not in held]
        f = fit(obs, rest, overlap=overlap, objective=objective)
        out = obs[obs["config"].isin(held)]
        p = predict(f.costs, out, overlap=overlap)
        n_fit = len(f.in_sample)
        for r in p.itertuples():
            rows.append(dict(held_out=name, config=r.config, phase=r.phase,
                             reported=float(r.reported), predicted=float(r.predicted),
                             ratio=float(r.predicted / r.reported), query_s=float(r.query_s),
                             ahead_s=float(r.ahead_s), fit_observations=n_fit,
                             fit_max_error=float(np.max(np.abs(f.in_sample.ratio - 1))),
                             **{f"{k}_ns": f.costs[k] for k in FITTED}))
    return pd.DataFrame(rows)


def twins(obs: pd.DataFrame, tol: float = 0.02, *, both_ways: bool = False) -> pd.DataFrame:
    """Pairs of configurations that no cost vector tells apart by more than ``tol``.

    For two configurations with the same phases and statements, a phase's ``separation``
    is the largest ratio between a feature of one and the same feature of the other (over
    the phase's statements and every feature; 0 against 0 counts as equal, 0 against
    non-zero as infinitely apart), less 1.  Every lane of every statement is a sum of
    features times costs >= 0, so for *every* cost vector the two predictions of that
    phase lie within a factor ``1 + separation`` of each other: a configuration held out
    with its twin in the fit set is predicted at about what the fit predicts for the twin.

    One row per pair (every phase's ``separation <= tol``) and phase: ``config``, ``twin``, ``phase``,
    ``separation``, ``reported``, ``twin_reported`` and ``reported_ratio`` (the first
    over the second).  Empty when no pair is that close.  With ``both_ways``, each pair
    also appears the other way round (``config`` and ``twin`` swapped, ``reported_ratio``
    inverted): one row per configuration that has a twin, and phase.
    """
    if not (isinstance(tol, (int, float)) and 0 <= tol < np.inf and not isinstance(tol, bool)):
        raise ValueError(f"tol = {tol!r} is out of range; allowed: a finite number >= 0")
    feats = list(_FEATURES)
    if "statement" in obs.columns:
        idx = ["phase", "statement"]
    else:
        idx = ["phase"]
    by = {c: obs[obs["config"] == c].set_index(idx)[feats].sort_index()
          for c in dict.fromkeys(obs["config"])}
    rep = obs.groupby(["config", "phase"], sort=False)["reported"].first()
    rows = []
    names = list(by)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            fa, fb = by[a], by[b]
            if not fa.index.equals(fb.index):
                continue
            xa, xb = fa.to_numpy(float), fb.to_numpy(float)
            if ((xa == 0) != (xb == 0)).any():
                continue
            nz = xa != 0
            far = np.ones_like(xa)
            far[nz] = np.maximum(xa[nz] / xb[nz], xb[nz] / xa[nz])
            phases = fa.index.get_level_values("phase")
            sep = {p: float(far[np.asarray(phases == p)].max()) - 1 for p in dict.fromkeys(phases)}
            if max(sep.values()) > tol:
                continue
            for phase, s_p in sep.items():
                ra, rb = float(rep.loc[(a, phase)]), float(rep.loc[(b, phase)])
                rows.append(dict(config=a, twin=b, phase=phase, separation=s_p, reported=ra,
                                 twin_reported=rb, reported_ratio=ra / rb))
    cols = ["config", "twin", "phase", "separation", "reported", "twin_reported", "reported_ratio"]
    out = pd.DataFrame(rows, columns=cols)
    if both_ways:
        back = out.rename(columns={"config": "twin", "twin": "config", "reported": "twin_reported",
                                   "twin_reported": "reported"})
        out = pd.concat([out, back.assign(reported_ratio=1 / out.reported_ratio)[cols]],
                        ignore_index=True)
    return out


def twin_requirement(obs: pd.DataFrame, fits: Mapping[str, pd.DataFrame], *, tol: float = 0.02,
                     overlap: bool = True, limits: Mapping[str, float] = LIMITS) -> pd.DataFrame:
    """What holding a configuration out alone asks of the fit when its twin is in the fit set.

    :func:`twins` (``tol``) pairs configurations whose predictions every cost vector keeps
    within a factor ``1 + separation``.  So a held-out configuration ``h``
    (reported ``y_h``) is within its phase's limit ``L`` only if its fit predicts the twin
    ``t`` (reported ``y_t``), an observation of its own fit set, within::

        (1 - L) y_h / ((1 + separation) y_t)  <=  predicted_t / y_t  <=  (1 + L)(1 + separation) y_h / y_t

    whatever the costs: a necessary condition, exact when ``separation`` is 0.  ``fits``:
    estimator name -> :func:`leave_one_out`'s rows with one configuration per held-out
    group (each row's costs are the fit that held that configuration out).

    One row per held-out configuration with a twin, phase and estimator: ``config``,
    ``twin``, ``phase``, ``estimator``, ``twin_needs_low`` / ``twin_needs_high`` (the range
    above), ``twin_fitted`` (what that fit predicts for the twin, over its reported time),
    ``twin_within`` (inside the range), ``ratio`` (the held-out prediction over its reported
    time) and ``holds`` (within ``L``).  ``holds`` implies ``twin_within``.
    """
    pairs = twins(obs, tol, both_ways=True)
    missing = sorted(set(pairs.phase) - set(limits))
    if missing:
        raise ValueError(f"limits lack phase(s) {missing}")
    rows = []
    for name, loo in fits.items():
        need = {"held_out", "config", "phase", "ratio", *(f"{k}_ns" for k in FITTED)}
        if not need <= set(loo.columns):
            raise ValueError(f"fits[{name!r}] lacks column(s) {sorted(need - set(loo.columns))} "
                             "(see leave_one_out)")
        shared = loo.groupby("held_out")["config"].nunique()
        if (shared > 1).any():
            raise ValueError(f"fits[{name!r}] holds out {list(shared[shared > 1].index)} with more "
                             "than one configuration; twin_requirement needs each held out alone")
        by = loo.set_index(["config", "phase"])
        for p in pairs.itertuples():
            if (p.config, p.phase) not in by.index:
                continue
            r = by.loc[(p.config, p.phase)]
            lim = float(limits[p.phase])
            pt = predict({k: float(r[f"{k}_ns"]) for k in FITTED}, obs[obs["config"] == p.twin],
                         overlap=overlap).set_index("phase").predicted[p.phase]
            lo = (1 - lim) * p.reported / ((1 + p.separation) * p.twin_reported)
            hi = (1 + lim) * (1 + p.separation) * p.reported / p.twin_reported
            fitted = float(pt / p.twin_reported)
            rows.append(dict(config=p.config, twin=p.twin, phase=p.phase, estimator=name,
                             twin_needs_low=lo, twin_needs_high=hi, twin_fitted=fitted,
                             twin_within=bool(lo <= fitted <= hi), ratio=float(r["ratio"]),
                             holds=bool(abs(float(r["ratio"]) - 1) <= lim)))
    cols = ["config", "twin", "phase", "estimator", "twin_needs_low", "twin_needs_high",
            "twin_fitted", "twin_within", "ratio", "holds"]
    return pd.DataFrame(rows, columns=cols)


#: the features a server build's speed scales: the query thread's CPU per operator and per get,
#: and each page read's work in the server (:func:`version_factor_loo`); not the clock read
#: (a system call) nor the cold disk's time
BUILD_SCALED = ("scan_rows", "eq_ref", "ref_rows", "group_rows", "gets", "sync_reads", "ahead_reads")


def scale_version(obs: pd.DataFrame, prefix: str, k: float,
                  features: Sequence[str] = BUILD_SCALED) -> pd.DataFrame:
    """``obs`` with ``features`` multiplied by ``k`` on the configurations whose name starts
    with ``prefix`` (e.g. ``"5.5.30"``): a server that does the same work ``k`` times slower."""
    if not (isinstance(k, (int, float, np.floating)) and 0 < k < np.inf):
        raise ValueError(f"k = {k!r} is out of range; allowed: 0 < k < inf")
    unknown = [f for f in features if f not in _FEATURES]
    if unknown:
        raise ValueError(f"features {unknown} are not features; allowed: {', '.join(_FEATURES)}")
    m = obs["config"].str.startswith(prefix).to_numpy()
    if not m.any():
        raise ValueError(f"prefix = {prefix!r} names no configuration of {sorted(set(obs['config']))}")
    out = obs.copy()
    for f in features:
        out.loc[m, f] = out.loc[m, f].astype(float) * float(k)
    return out


def version_factor_loo(obs: pd.DataFrame, configs: Sequence[str], prefix: str, *,
                       features: Sequence[str] = BUILD_SCALED, ks: Sequence[float] | None = None,
                       overlap: bool = True) -> pd.DataFrame:
    """Leave one configuration out with one more parameter: the configurations whose name
    starts with ``prefix`` do the work of ``features`` ``k`` times slower than the others
    (:func:`scale_version`), as a server built differently would.

    For each of ``configs`` held out alone, ``k`` is chosen on the others (the fit set
    of :func:`leave_one_out`) as the grid value of ``ks`` (default 41 points, 0.5 to 3,
    evenly in log) whose least-squares fit (:func:`fit`) has the smallest residual; those
    costs and ``k`` predict the held-out configuration.  One row per held-out observation:
    ``config``, ``phase``, ``reported``, ``predicted``, ``ratio``, ``k``, ``k_at_edge``
    (the grid's end: the fit set does not bound ``k``) and ``fit_residual``.
    """
    ks = np.exp(np.linspace(np.log(0.5), np.log(3.0), 41)) if ks is None else np.asarray(ks, float)
    if ks.ndim != 1 or len(ks) < 2 or not (np.isfinite(ks) & (ks > 0)).all():
        raise ValueError("ks must hold at least two finite numbers > 0")
    ks = np.unique(ks)
    all_cfg = list(dict.fromkeys(obs["config"]))
    unknown = [c for c in configs if c not in all_cfg]
    if unknown or not list(configs):
        raise ValueError(f"configs names {unknown or 'nothing'}; allowed: {all_cfg}")
    rows = []
    for cfg in configs:
        rest = [c for c in all_cfg if c != cfg]
        fits = [fit(scale_version(obs, prefix, k, features), rest, overlap=overlap) for k in ks]
        i = int(np.argmin([f.residual for f in fits]))
        scaled = scale_version(obs, prefix, ks[i], features)
        p = predict(fits[i].costs, scaled[scaled["config"] == cfg], overlap=overlap)
        for r in p.itertuples():
            rows.append(dict(config=cfg, phase=r.phase, reported=float(r.reported),
                             predicted=float(r.predicted), ratio=float(r.predicted / r.reported),
                             k=float(ks[i]), k_at_edge=i in (0, len(ks) - 1),
                             fit_residual=float(fits[i].residual)))
    return pd.DataFrame(rows)


def out_of_sample_rows(loo: pd.DataFrame, experiment: str) -> list[dict]:
    """Rows for :func:`bufsim.results.write_results`: one per configuration and phase of
    ``loo`` (its ``cold`` and ``run1-3`` rows), ``metric`` = the phase, ``fitted`` False,
    ``holds`` = within 35% (cold) or 25% (run1-3), issue 20's limits."""
    out = []
    for r in loo.itertuples():
        if r.phase not in ("cold", "run1-3"):
            continue
        limit = LIMITS[r.phase]
        out.append(dict(experiment=experiment, metric=r.phase, config=r.config,
                        reported=float(r.reported), simulated=float(r.predicted), fitted=False,
                        holds=bool(abs(r.predicted / r.reported - 1) <= limit)))
    return out
