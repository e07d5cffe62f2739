"""Notebook 01's CPU model, step 1 of 3: what a statement does, counted.

The operator counts of a statement from its plan (:func:`operator_counts`), the
buffer-pool counts of its replay (:func:`statement_features`), and the observations the
model is fitted on and checked against (:func:`observations`, :func:`totals`).  The costs
that price these counts (:data:`COSTS`) and the two lanes they fall in (:data:`LANES`)
are described in :mod:`bufsim.experiments.ssb_cpu`, which re-exports every public name.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from .. import cache as _cache
from ..workloads.ssb import N_DATES, PLANS, QUERIES, SSB

__all__ = ["COSTS", "LANES", "FITTED", "NS", "OPERATOR_COUNTS", "operator_counts",
           "statement_features", "phase_of", "observations", "totals"]

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

    Served from the result cache (:mod:`bufsim.cache`: the SSB's parameters, the query and
    the plan) when counted before: 34 statements take 3.7 s of a rerun of notebook 01.
    """
    if query not in PLANS:
        raise ValueError(f"query = {query!r} is not an SSB query; allowed: {', '.join(QUERIES)}")
    return _cache.cached(
        lambda: _cache.digest("ssb.operator_counts", ssb.cache_params, query, plan),
        lambda: _operator_counts(ssb, query, plan))


def _operator_counts(ssb: SSB, query: str, plan: str) -> dict:
    """:func:`operator_counts`, counted."""
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


FEATURES = tuple(dict.fromkeys(f for f, _, _ in COSTS.values()))


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
    overlap within a statement only (:func:`~bufsim.experiments.ssb_cpu_fit.predict`).  A Cold
    statement carries the
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
        sim = feats.groupby(["config", "phase", "statement"], sort=False)[list(FEATURES)].mean()
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
        per_run = feats.groupby(["config", "phase", "run"], sort=False)[list(FEATURES)].sum()
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
    return out[[*lead, *FEATURES]].reset_index(drop=True)


def totals(obs: pd.DataFrame) -> pd.DataFrame:
    """Per-statement observations (``observations(..., statements=True)``) summed into one
    row per observation (``config``, ``phase``, ``flight``, ``reported`` and the features);
    observations without a ``statement`` column are returned unchanged."""
    if "statement" not in obs.columns:
        return obs
    head = obs.groupby(["config", "phase"], sort=False)[["flight", "reported"]].first()
    feats = obs.groupby(["config", "phase"], sort=False)[list(FEATURES)].sum()
    return head.join(feats).reset_index()
