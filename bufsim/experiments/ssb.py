"""Notebook 01: the SSB ``innodb_old_blocks_time`` regression of 000_fe2813b876a91991.txt.

What is here, and what the notebook does with it:

* :class:`Calibration` — the four constants the notebook fits: CPU per row and per
  page get (carried by the trace, :class:`bufsim.workloads.CpuCost`), CPU per
  old-blocks time check (one ``ut_time_ms()`` clock read, ``CostModel.clock_read_ns``)
  and the time of one 16 KiB read served by the warm file-system cache (a
  :class:`bufsim.DeviceModel` with that service time).  Make-young moves, miss CPU
  and user-thread evictions cost 0 apart: their cost is inside the per-get and
  per-read constants (the Q1.1 runs cannot tell them apart).
* :func:`q11_run` — one Q1.1 replay from an empty pool (the document's counters are
  per query: ``PAGES_MADE_YOUNG`` 3 after one run and 29,501 after the next, so the
  server was restarted between runs; the file-system cache stayed warm).
* :func:`fit_q11` — least squares (non-negative) of the four constants on the four
  Q1.1 query times, iterated to a fixed point because the replay's virtual time
  decides which gets are old-blocks time checks.
* :func:`run_ssb` — Cold and Run1-3 of the 13 queries in one pool, each query a
  statement followed by an idle second (the page cleaner refills the free list
  between statements, not during one: ``cleaner_activity="statement"``).
* :func:`cold_extra_ns` — Cold runs read from a cold file-system cache: the first
  read of each page in the run comes from the disk.  The replay serves every read
  at the file-system-cache time; this adds, per page first read in the run, the
  disk's extra time (sequential for the scanned ``lineorder`` and ``dim_date``
  clustered indexes, random for the probed dimensions), with no overlap with CPU.

References: ``storage/innobase/buf/buf0buf.cc`` (``buf_page_peek_if_too_old``:
``ut_time_ms()`` on every get of an old page while old_blocks_time > 0),
``buf/buf0flu.cc`` (``buf_flush_page_cleaner_thread``: ``buf_flush_LRU_tail`` only
when ``srv_check_activity``), MySQL 5.6.10.
"""
from __future__ import annotations

import concurrent.futures as cf
from dataclasses import asdict, dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .. import cache as _cache
from .._cores import default_jobs
from . import ssb_chunks as _chunks
from .._units import NS_PER_S
from .._validation import check_int, check_int_fields, check_ns
from ..analytic import exact_mrc
from ..analytic.midpoint import ScanClass, midpoint_lru
from ..config import CostModel, DeviceModel, PoolConfig, pages_from_bytes, preset
from ..engine import replay
from ..pool import Pool
from ..versions import from_server_string
from ..workloads.plans import CpuCost, emit_chunk
from ..workloads.ssb import QUERIES, SSB

__all__ = ["Calibration", "SsbConfig", "CONFIGS", "pool_config", "q11_run", "q11_sequence", "fit_q11",
           "STATS_SAMPLE_PAGES", "table_open_pages", "q11_after_restart",
           "FitResult", "run_ssb", "cold_extra_ns", "Q11_METRICS", "analytic_check", "sweep_chart"]


#: document counter -> column of :func:`q11_run`'s result
Q11_METRICS = {
    "NUMBER_PAGES_GET": "gets",
    "NUMBER_PAGES_READ": "pages_read",
    "NUMBER_PAGES_READ_AHEAD": "read_ahead",
    "PAGES_MADE_YOUNG": "made_young",
    "PAGES_NOT_MADE_YOUNG": "not_made_young",
    "INNODB_ROWS_READ": "rows",
    "query_seconds": "seconds",
}


@dataclass(frozen=True)
class Calibration:
    """The cost constants fitted on Q1.1 (integers, nanoseconds, >= 0).

    Parameters
    ----------
    row_ns, get_ns
        Executor CPU per row read and per page get.
    clock_read_ns
        CPU of one old-blocks time check (and of the access-time stamp of a first access).
    read_ns
        Service time of one 16 KiB read from the warm file-system cache.
    """

    row_ns: int = 0
    get_ns: int = 1_000
    clock_read_ns: int = 1_000
    read_ns: int = 10_000

    def __post_init__(self):
        check_int_fields(self, ("row_ns", "get_ns", "clock_read_ns", "read_ns"), 0, 10**9)

    @property
    def cpu(self) -> CpuCost:
        return CpuCost(row_ns=int(self.row_ns), get_ns=int(self.get_ns))

    @property
    def cost(self) -> CostModel:
        return CostModel(clock_read_ns=int(self.clock_read_ns), make_young_ns=0, miss_cpu_ns=0,
                         evict_ns=0)

    @property
    def device(self) -> DeviceModel:
        r = int(self.read_ns)
        return DeviceModel("fs_cache (fitted)", r, r, r)


@dataclass(frozen=True)
class SsbConfig:
    """One of the document's five configurations."""

    version: str            # as in data/ssb_response_times.csv
    buffer_pool: str        # "128M" or "4G"
    old_blocks_time_ms: int

    @property
    def preset(self) -> str:
        return from_server_string(self.version).preset

    @property
    def label(self) -> str:
        return f"{self.version} {self.buffer_pool} t={self.old_blocks_time_ms}"


#: the document's configurations, in its table's order
CONFIGS = (SsbConfig("5.5.30", "128M", 0), SsbConfig("5.6.10", "128M", 1000),
           SsbConfig("5.6.10", "128M", 0), SsbConfig("5.5.30", "4G", 0),
           SsbConfig("5.6.10", "4G", 1000))


def pool_config(cfg: SsbConfig, calib: Calibration, *, scale: float = 1.0,
                device: DeviceModel | None = None, **overrides) -> PoolConfig:
    """The replay configuration of ``cfg``: its preset, pool size times ``scale``
    (at least 320 pages; instances as the preset gives for the unscaled size),
    the calibrated costs and device, and ``cleaner_activity="statement"``."""
    if not 0 < scale <= 1:
        raise ValueError(f"scale = {scale!r} is out of range; allowed: 0 < scale <= 1")
    full = pages_from_bytes(cfg.buffer_pool)
    inst = preset(cfg.preset, pool_pages=full).instances
    pages = max(320 * inst, int(full * scale))
    args = dict(pool_pages=pages, instances=inst, old_blocks_time_ms=cfg.old_blocks_time_ms,
                cost=calib.cost, device=device or calib.device, cleaner_activity="statement")
    args.update(overrides)
    return preset(cfg.preset, **args)


def _features(gets, rows, cpu_ns, io_ns, calib: Calibration) -> dict:
    """Counts that multiply each constant in the elapsed time (see :func:`fit_q11`)."""
    trace_cpu = gets * calib.get_ns + rows * calib.row_ns
    # >= 0: the trace's per-get CPU is floored per event (plans.emit_chunk), a few ns per event
    clock_reads = max(0.0, (cpu_ns - trace_cpu) / calib.clock_read_ns) if calib.clock_read_ns \
        else np.nan
    io_reads = io_ns / calib.read_ns if calib.read_ns else np.nan
    return dict(clock_reads=clock_reads, io_waits=io_reads)


def q11_run(ssb: SSB, plan: str, old_blocks_time_ms: int, calib: Calibration, *,
            config: SsbConfig = SsbConfig("5.6.10", "128M", 1000), **overrides) -> dict:
    """Q1.1 under ``plan`` replayed from an empty pool; the document's counters and
    the time split (``cpu_rows_s``, ``cpu_gets_s``, ``time_checks_s``, ``io_s``).
    Served from the result cache (:mod:`bufsim.cache`) when it ran before."""
    return _cache.cached(
        lambda: _cache.digest("ssb.q11_run", ssb.cache_params, plan, old_blocks_time_ms, calib,
                              config, overrides),
        lambda: _q11_run(ssb, plan, old_blocks_time_ms, calib, config=config, **overrides))


def _q11_run(ssb: SSB, plan: str, old_blocks_time_ms: int, calib: Calibration, *,
             config: SsbConfig, **overrides) -> dict:
    op = _chunks.statement(ssb, "Q1.1", plan, calib.cpu)
    cfg = pool_config(config, calib, old_blocks_time_ms=old_blocks_time_ms, **overrides)
    res = replay(op.trace(ssb.tablespaces), cfg)
    t, s = res.totals, res.streams.iloc[0]
    out = dict(plan=plan, old_blocks_time_ms=old_blocks_time_ms,
               gets=int(t["NUMBER_PAGES_GET"]), pages_read=int(t["NUMBER_PAGES_READ"]),
               read_ahead=int(t["NUMBER_PAGES_READ_AHEAD"]), made_young=int(t["PAGES_MADE_YOUNG"]),
               not_made_young=int(t["PAGES_NOT_MADE_YOUNG"]), rows=int(op.rows),
               seconds=s["elapsed_ns"] / NS_PER_S, cpu_ns=int(s["cpu_ns"]), io_wait_ns=int(s["io_wait_ns"]),
               hit_ratio=1 - t["NUMBER_PAGES_READ"] / t["NUMBER_PAGES_GET"])
    out.update(_features(int(s["gets"]), op.rows, int(s["cpu_ns"]), int(s["io_wait_ns"]), calib))
    out.update(_split(out, calib))
    return out


def q11_sequence(ssb: SSB, steps: Sequence[tuple[str, int]], calib: Calibration, *,
                 config: SsbConfig = SsbConfig("5.6.10", "128M", 1000), idle_ns: int = NS_PER_S,
                 **overrides) -> pd.DataFrame:
    """Q1.1 run several times in one pool that starts empty, ``old_blocks_time`` set
    before each run as ``SET GLOBAL innodb_old_blocks_time`` would (the pool keeps its
    pages), an idle ``idle_ns`` after each statement.

    ``steps``: ``[(plan, old_blocks_time_ms), ...]``.  Returns one row per step with
    the counters' increments (columns as :func:`q11_run`'s counters).
    """
    if not steps:
        raise ValueError("steps must hold at least one (plan, old_blocks_time_ms)")
    cfg = pool_config(config, calib, old_blocks_time_ms=int(steps[0][1]), **overrides)
    pool = Pool(cfg, ssb.tablespaces)
    out = []
    for plan, t_ms in steps:
        pool.set(old_blocks_time_ms=check_int("old_blocks_time_ms", t_ms, 0, 2**32 - 1))
        op = _chunks.statement(ssb, "Q1.1", plan, calib.cpu)
        rows = op.rows
        pool.begin()
        for chunk in op.chunks():
            pool.feed(chunk)
        d = pool.end().iloc[0]
        out.append(dict(plan=plan, old_blocks_time_ms=int(t_ms), rows=rows,
                        gets=int(d["NUMBER_PAGES_GET"]), pages_read=int(d["NUMBER_PAGES_READ"]),
                        read_ahead=int(d["NUMBER_PAGES_READ_AHEAD"]),
                        made_young=int(d["PAGES_MADE_YOUNG"]),
                        not_made_young=int(d["PAGES_NOT_MADE_YOUNG"]),
                        seconds=int(d["elapsed_ns"]) / NS_PER_S))
        if idle_ns:
            pool.idle_ns(int(idle_ns))
    return pd.DataFrame(out)


#: srv_stats_transient_sample_pages, 8 in 5.5 and 5.6: the leaf pages InnoDB's transient
#: statistics sample per index when a table is opened (dict_stats_update_transient ->
#: btr_estimate_number_of_different_key_vals, one btr_cur_open_at_rnd_pos descent each)
STATS_SAMPLE_PAGES = 8
#: the tables Q1.1 never touches, whose leaves stand for the pages a server reads after a
#: restart before the SSB tables are opened (the system tablespace's pages, other tables)
_UNTOUCHED = ("customer", "part", "supplier")


def table_open_pages(ssb: SSB, tables: Sequence[str] = ("dim_date", "lineorder"), *,
                     sample_pages: int = STATS_SAMPLE_PAGES, seed: int = 0) -> np.ndarray:
    """The pages InnoDB gets when it opens ``tables`` (in that order), as dense page ids.

    Opening a table computes its transient statistics: for every index, clustered first
    then the secondary indexes in creation order, ``sample_pages`` descents from the root
    to a random leaf (5.6 ``dict0stats.cc`` dict_stats_update_transient_for_index ->
    ``btr0cur.cc`` btr_estimate_number_of_different_key_vals, btr_cur_open_at_rnd_pos).
    The leaves are drawn with ``seed`` (a NumPy Generator).  This is what the document's
    pool holds of the indexes Q1.1 does not use: 15-17 pages each, a root, the level-1
    pages and the leaves of 8 descents (its ``INNODB_BUFFER_PAGE_LRU`` tables).
    """
    check_int("sample_pages", sample_pages, 1, 10_000)
    rng = np.random.default_rng(check_int("seed", seed, 0, 2**63 - 1))
    db = ssb.db
    out = []
    for t in tables:
        for ix in db.table(t).indexes:
            leaf = rng.integers(0, ix.leaves.size, sample_pages)
            out.append(db.dense(t, ix.paths(leaf)).ravel())
    return np.concatenate(out)


def q11_after_restart(ssb: SSB, plan: str, old_blocks_time_ms: int, calib: Calibration, *,
                      earlier_pages: int = 600, seed: int = 0, idle_ns: int = 2 * NS_PER_S,
                      config: SsbConfig = SsbConfig("5.6.10", "128M", 1000),
                      **overrides) -> dict:
    """Q1.1 as the document ran it after a restart: the pool is not empty.

    Before the statement the server has read ``earlier_pages`` pages the query never
    touches (after a restart: the system tablespace's pages, other tables; stood for by
    leaves of ``customer``, ``part`` and ``supplier``), then opened the SSB tables
    (:func:`table_open_pages`, statistics drawn with ``seed``), then stayed idle
    ``idle_ns`` (a statement typed by hand after the client opened the tables).  Returns
    the statement's counter increments (as :func:`q11_sequence`'s rows).  Nothing here
    is fitted: ``earlier_pages``, ``seed`` and ``idle_ns`` are the history the document
    does not give; the notebook runs a grid of them.
    """
    filler = np.concatenate([ssb.db.dense(t, ssb.db.index(t).leaves) for t in _UNTOUCHED])
    n = check_int("earlier_pages", earlier_pages, 0, filler.size)
    check_ns("idle_ns", idle_ns)
    cfg = pool_config(config, calib, old_blocks_time_ms=old_blocks_time_ms, **overrides)
    pool = Pool(cfg, ssb.tablespaces)
    before = np.concatenate([filler[:n], table_open_pages(ssb, seed=seed)])
    pool.begin()
    pool.feed(emit_chunk(before, 0, calib.cpu, 0, 0))
    pool.end()
    if idle_ns:
        pool.idle_ns(int(idle_ns))
    pool.begin()
    for chunk in _chunks.statement(ssb, "Q1.1", plan, calib.cpu).chunks():
        pool.feed(chunk)
    d = pool.end().iloc[0]
    return dict(plan=plan, old_blocks_time_ms=int(old_blocks_time_ms), earlier_pages=n, seed=seed,
                idle_s=idle_ns / NS_PER_S, gets=int(d["NUMBER_PAGES_GET"]),
                pages_read=int(d["NUMBER_PAGES_READ"]), made_young=int(d["PAGES_MADE_YOUNG"]),
                not_made_young=int(d["PAGES_NOT_MADE_YOUNG"]),
                seconds=int(d["elapsed_ns"]) / NS_PER_S)


def _split(r: Mapping, calib: Calibration) -> dict:
    return dict(cpu_rows_s=r["rows"] * calib.row_ns / NS_PER_S,
                cpu_gets_s=(r["cpu_ns"] - r["rows"] * calib.row_ns
                            - r["clock_reads"] * calib.clock_read_ns) / NS_PER_S
                if calib.clock_read_ns else (r["cpu_ns"] - r["rows"] * calib.row_ns) / NS_PER_S,
                time_checks_s=r["clock_reads"] * calib.clock_read_ns / NS_PER_S
                if calib.clock_read_ns else 0.0,
                io_s=r["io_wait_ns"] / NS_PER_S)


@dataclass
class FitResult:
    """The fitted constants, the Q1.1 runs at them and the iteration history."""

    calibration: Calibration
    runs: pd.DataFrame
    history: pd.DataFrame


def fit_q11(ssb: SSB, reported_seconds: Mapping[tuple[str, int], float], *,
            start: Calibration = Calibration(), max_iter: int = 8, tol: float = 0.005,
            config: SsbConfig = SsbConfig("5.6.10", "128M", 1000), **overrides) -> FitResult:
    """Fit :class:`Calibration` to the Q1.1 query times.

    Model: a run's elapsed virtual time is ``rows*row_ns + gets*get_ns +
    clock_reads*clock_read_ns + io_waits*read_ns``, exactly so for a single
    stream with zero make-young, miss and eviction costs (``io_waits`` is the I/O
    wait in units of one read).  The counts depend on the constants (old-blocks
    time decides which gets are checks, read-ahead overlap decides the waits), so
    the fit alternates: replay every run at the current constants, solve the
    non-negative least squares of the relative errors for the constants, repeat
    until no constant moves by more than ``tol`` (relative) or ``max_iter``.

    Parameters
    ----------
    reported_seconds
        ``{(plan, old_blocks_time_ms): seconds}``, e.g. the four Q1.1 times of
        ``data/ssb_q11_counters.csv``.  At least 4 runs (4 constants).
    **overrides
        PoolConfig fields passed to every :func:`q11_run` (e.g. a smaller pool).
    """
    from scipy.optimize import nnls

    if len(reported_seconds) < 4:
        raise ValueError(f"reported_seconds has {len(reported_seconds)} runs; allowed: >= 4 "
                         "(four constants are fitted)")
    check_int("max_iter", max_iter, 1)
    keys = list(reported_seconds)
    y = np.array([float(reported_seconds[k]) for k in keys])
    if (y <= 0).any():
        raise ValueError("reported_seconds must all be > 0")
    calib = start
    hist = []
    for it in range(max_iter):
        runs = [q11_run(ssb, p, t, calib, config=config, **overrides) for p, t in keys]
        A = np.array([[r["rows"], r["gets"], r["clock_reads"], r["io_waits"]] for r in runs],
                     dtype=float) / NS_PER_S
        w = 1 / y
        x, _ = nnls(A * w[:, None], y * w)
        # at least 1 ns each, so that the next replay's counts stay defined
        new = Calibration(*(max(1, int(round(v))) for v in x))
        hist.append(dict(iteration=it, **asdict(calib),
                         max_rel_error=float(np.max(np.abs(A @ np.array(list(asdict(calib).values()))
                                                           - y) / y))))
        moved = max(abs(a - b) / max(b, 1) for a, b in zip(asdict(new).values(), asdict(calib).values()))
        calib = new
        if moved <= tol:
            break
    runs = pd.DataFrame([q11_run(ssb, p, t, calib, config=config, **overrides) for p, t in keys])
    runs["reported_seconds"] = y
    return FitResult(calib, runs, pd.DataFrame(hist))


# ---- the 13-query table ------------------------------------------------------------------------
def run_ssb(ssb: SSB, configs: PoolConfig | Mapping[str, PoolConfig], calib: Calibration, *,
            runs: Sequence[str] = ("Cold", "Run1", "Run2", "Run3"),
            queries: Sequence[str] = QUERIES, idle_ns: int = NS_PER_S,
            states_out: dict | None = None, jobs: int | None = None,
            runs_of: Mapping[str, int] | None = None) -> pd.DataFrame:
    """The 13 queries (scan plans) run after each other ``len(runs)`` times in one
    pool per configuration, each pool starting empty, an idle ``idle_ns`` after
    every statement (the 5.6 page cleaner's pass falls into it).  ``runs_of`` gives
    labels that run fewer times: ``{label: n}`` runs the first ``n`` of ``runs``
    (1 <= n <= len(runs)); its pool replays those alone, beside the others (the same
    rows as a call of its own with ``runs[:n]``).

    ``configs`` is one :class:`PoolConfig` or ``{label: PoolConfig}``; every pool
    replays the same chunks, generated once per query and process
    (:mod:`bufsim.experiments.ssb_chunks`), and a configuration given under several
    labels replays once.  A query is
    ``"Q2.1"`` (scan plan), ``"Q1.1:date_first"`` or ``"Q2.1:index_first"``
    (:data:`bufsim.workloads.ssb.INDEX_PLAN_QUERIES` names the 13 with index_first).  If ``states_out`` is a dict,
    it receives ``{label: bufsim.Pool}`` at the end (after the last idle gap), e.g.
    for the pool contents per index.  ``jobs``: threads that replay the pools side by
    side, each chunk fed to every pool before the next is made (None: one per core, at
    most one per pool: :func:`bufsim._cores.default_jobs`; 1: one after another).  The kernels run without the GIL, and each
    pool sees the same chunks in the same order, so the numbers do not depend on it.

    Returns one row per configuration, run and query: the counters' increments,
    rows, elapsed seconds (idle time not included), CPU, I/O wait, clock reads and
    the time split of :func:`q11_run`.
    """
    if isinstance(configs, PoolConfig):
        configs = {"": configs}
    if not configs:
        raise ValueError("configs must hold at least one PoolConfig")
    if not runs:
        raise ValueError("runs must name at least one run")
    check_ns("idle_ns", idle_ns)
    if jobs is not None:
        check_int("jobs", jobs, 1)
    unknown = sorted(set(runs_of or {}) - set(configs))
    if unknown:
        raise ValueError(f"runs_of names {unknown}, not labels of configs; allowed: {sorted(configs)}")
    n_of = {k: check_int(f"runs_of[{k!r}]", (runs_of or {}).get(k, len(runs)), 1, len(runs))
            for k in configs}
    if states_out is None:
        return _run_ssb_once(ssb, configs, calib, runs, queries, idle_ns, jobs, n_of)
    return _run_ssb(ssb, configs, calib, runs, queries, idle_ns, states_out, jobs, n_of)


def _run_ssb_once(ssb, configs, calib, runs, queries, idle_ns, jobs, n_of) -> pd.DataFrame:
    """run_ssb replaying each distinct configuration once (each pool replays on its own:
    its rows do not depend on the others, nor on the runs' labels, so a configuration
    given under two labels gets the rows of one replay), through the result cache when
    it is on: one entry per configuration and number of runs, only the missing ones
    replay.  A replay of ``n`` runs also stores its first ``1 .. n-1`` runs: the first
    runs of a longer sequence are the same statements in the same pool (01's sweeps, one
    pass from an empty pool, reuse the cold runs of its 13-query table)."""
    n_q = len(queries)
    use = _cache.enabled()

    def key(c, n_runs):
        return _cache.digest("ssb.run_ssb", ssb.cache_params, c, calib, n_runs,
                             tuple(queries), idle_ns)
    try:
        keys = {k: key(c, n_of[k]) for k, c in configs.items()}
    except _cache.Uncacheable:
        return _run_ssb(ssb, configs, calib, runs, queries, idle_ns, None, jobs, n_of)
    got = {h: _cache.load(h) if use else _cache.MISSING for h in set(keys.values())}
    todo, queued = {}, set()                    # one label per missing configuration
    for k, c in configs.items():
        if got[keys[k]] is _cache.MISSING and keys[k] not in queued:
            todo[k] = c
            queued.add(keys[k])
    if todo:
        fresh = _run_ssb(ssb, todo, calib, runs, queries, idle_ns, None, jobs, n_of)
        for k, c in todo.items():
            rows = fresh[fresh.config == k].drop(columns="config").reset_index(drop=True)
            rows["run"] = np.arange(len(rows)) // n_q      # the run's place, not its label
            if use:
                for n in range(1, n_of[k]):
                    _cache.store(key(c, n), rows.iloc[:n * n_q].copy())
                _cache.store(keys[k], rows)
            got[keys[k]] = rows
    # the rows in run_ssb's order: run, query, then configuration
    parts = [got[keys[k]].assign(config=k, run=[runs[i] for i in got[keys[k]]["run"]],
                                 _row=np.arange(len(got[keys[k]])), _cfg=j)
             for j, k in enumerate(configs)]
    out = pd.concat(parts, ignore_index=True).sort_values(["_row", "_cfg"], kind="stable")
    cols = ["config"] + [c for c in got[keys[next(iter(configs))]].columns]
    return out[cols].reset_index(drop=True)


def _query_chunks(ssb, q, calib):
    """:func:`bufsim.experiments.ssb_chunks.statement` of ``"Q2.1"`` (the scan plan) or
    ``"Q2.1:index_first"``: its rows and chunks, generated by the first pass of the
    process over them and kept packed for the later runs, pools and calls."""
    name, _, plan = q.partition(":")
    return _chunks.statement(ssb, name, plan or "scan", calib.cpu)


def _run_ssb(ssb, configs, calib, runs, queries, idle_ns, states_out, jobs, n_of) -> pd.DataFrame:
    every = {k: Pool(c, ssb.tablespaces) for k, c in configs.items()}
    n_jobs = min(len(every), jobs or default_jobs())
    ex = cf.ThreadPoolExecutor(max_workers=n_jobs) if n_jobs > 1 else None
    rows_out = []
    try:
        for i, run in enumerate(runs):
            pools = {k: p for k, p in every.items() if i < n_of.get(k, len(runs))}
            for q in queries:
                op = _query_chunks(ssb, q, calib)
                chunks = op.chunks()
                for pool in pools.values():
                    pool.begin()
                pending = []
                for chunk in chunks:       # generated once, fed to every pool
                    if ex is None:
                        for pool in pools.values():
                            pool.feed(chunk)
                        continue
                    # the next chunk is made while the pools replay this one; a pool
                    # takes it once it has replayed the one before
                    for f in pending:
                        f.result()
                    pending = [ex.submit(pool.feed, chunk) for pool in pools.values()]
                for f in pending:
                    f.result()
                rows_out.extend(_ssb_rows(pools, run, q, op, calib, idle_ns))
    finally:
        if ex is not None:
            ex.shutdown()
    if states_out is not None:
        states_out.update(every)
    return pd.DataFrame(rows_out)


def _ssb_rows(pools, run, q, op, calib, idle_ns) -> list[dict]:
    """run_ssb's rows of one query's run: each pool's counters, then its idle gap."""
    rows_out = []
    for label, pool in pools.items():
        d = pool.end().iloc[0]
        r = dict(config=label, run=run, query=q, rows=int(op.rows),
                 gets=int(d["NUMBER_PAGES_GET"]),
                 pages_read=int(d["NUMBER_PAGES_READ"]),
                 read_ahead=int(d["NUMBER_PAGES_READ_AHEAD"]),
                 made_young=int(d["PAGES_MADE_YOUNG"]),
                 not_made_young=int(d["PAGES_NOT_MADE_YOUNG"]),
                 seconds=int(d["elapsed_ns"]) / NS_PER_S, cpu_ns=int(d["cpu_ns"]),
                 io_wait_ns=int(d["io_wait_ns"]), misses=int(d["misses"]))
        r.update(_features(int(d["gets"]), r["rows"], r["cpu_ns"], r["io_wait_ns"],
                           calib))
        r.update(_split(r, calib))
        rows_out.append(r)
        # the statement ended: an idle gap, in which the page cleaner (5.6) runs
        if idle_ns:
            pool.idle_ns(int(idle_ns))
    return rows_out


def touched_pages(ssb: SSB, queries: Sequence[str] = QUERIES) -> np.ndarray:
    """Boolean mask over the dense pages: touched by any of ``queries`` (``"Q2.1"``: the
    scan plan, ``"Q2.1:index_first"``: that plan).  A statement :func:`run_ssb` replayed
    gives its pages from its kept events (:func:`bufsim.experiments.ssb_chunks.kept_pages`),
    the others from their plan (``Operator.pages``: the same pages)."""
    n = ssb.tablespaces.n_pages
    mask = np.zeros(n, dtype=bool)
    for q in queries:
        name, _, plan = q.partition(":")
        kept = _chunks.kept_pages(ssb, name, plan or "scan")
        if kept is None:
            mask |= np.unpackbits(_cache.cached(
                lambda: _cache.digest("ssb.touched_pages", ssb.cache_params, name, plan or "scan"),
                lambda: _plan_mask(ssb, name, plan or "scan")), count=n).astype(bool)
        for pages in kept or ():
            mask[pages] = True
    return mask


def _plan_mask(ssb: SSB, name: str, plan: str) -> np.ndarray:
    """The pages of ``name``'s ``plan`` as a bit-packed mask over the dense pages (what
    :func:`touched_pages` keeps in the result cache: a rerun whose replays the cache
    serves has no kept events, and building a plan's page list is seconds at SF 1)."""
    m = np.zeros(ssb.tablespaces.n_pages, dtype=bool)
    m[ssb.query(name, plan).pages()] = True
    return np.packbits(m)


def cold_extra_ns(ssb: SSB, disk: DeviceModel, fs_read_ns: int, *,
                  queries: Sequence[str] = QUERIES) -> dict:
    """Extra time of a run whose file-system cache starts cold.

    Every page the queries touch is read from the disk once in the run (the
    replay charged it ``fs_read_ns``).  Pages of the indexes read in key order
    (``lineorder``'s clustered index, ``dim_date``'s) are charged the disk's
    sequential time, the other (probed) pages its random time.  No overlap with
    CPU is assumed.

    Returns ``dict(seq_pages, random_pages, extra_ns, by_query)``; ``by_query`` maps each
    query to the ``(seq_pages, random_pages)`` it touches first in the run's order (the
    statement that reads them from the disk).
    """
    check_ns("fs_read_ns", fs_read_ns)
    ts = ssb.tablespaces
    names = list(ts.group_names)
    seq_groups = [j for j, n in enumerate(names)
                  if ("lineorder" in n and "GEN_CLUST" in n) or ("dim_date" in n and "PRIMARY" in n)]
    seq = np.isin(ts.page_group, seq_groups)
    mask = np.zeros(ts.n_pages, dtype=bool)
    by_query = {}
    for q in queries:
        new = touched_pages(ssb, [q]) & ~mask
        by_query[q] = (int((new & seq).sum()), int((new & ~seq).sum()))
        mask |= new
    n_seq = int((mask & seq).sum())
    n_rand = int((mask & ~seq).sum())
    extra = n_seq * max(0, disk.seq_read_ns - fs_read_ns) + \
        n_rand * max(0, disk.random_read_ns - fs_read_ns)
    return dict(seq_pages=n_seq, random_pages=n_rand, extra_ns=int(extra), by_query=by_query)


def analytic_check(ssb: SSB, calib: Calibration, queries: Sequence[str] = ("Q1.1", "Q2.1")) -> pd.DataFrame:
    """Hit ratios of the analytic models beside replays of single queries (scan plans) in
    MySQL 5.6.10's 128M pool: the exact LRU miss-ratio curve against the replay with
    old_blocks_time 0 (the two agree when no page is made young early), and for Q1.1 the
    two-class midpoint model (hot ``dim_date`` pages at the probe rate of the replay,
    ``lineorder``'s leaves as one scan) at 0 and 1000 ms.  Columns: query, estimate,
    old_blocks_time_ms, analytic, simulated, difference.  Served from the result cache
    (:mod:`bufsim.cache`) when it ran before (its replays, curve and model: 4.9 s of a
    rerun of notebook 01)."""
    return _cache.cached(
        lambda: _cache.digest("ssb.analytic_check", ssb.cache_params, calib, tuple(queries)),
        lambda: _analytic_check(ssb, calib, tuple(queries)))


def _analytic_check(ssb: SSB, calib: Calibration, queries: tuple[str, ...]) -> pd.DataFrame:
    """:func:`analytic_check`, computed."""
    rows = []
    pool = pool_config(CONFIGS[1], calib).pool_pages
    for q in queries:
        op = ssb.query(q, "scan", cpu=calib.cpu)
        made = _chunks.statement(ssb, q, "scan", calib.cpu)       # generated once, replayed thrice
        sim = {}               # old_blocks_time -> (hit ratio, virtual seconds)
        for t_ms in (0, 1000):
            res = replay(made.trace(ssb.tablespaces),
                         pool_config(CONFIGS[1], calib, old_blocks_time_ms=t_ms))
            sim[t_ms] = (1 - res.totals["NUMBER_PAGES_READ"] / res.totals["NUMBER_PAGES_GET"],
                         res.streams.elapsed_ns[0] / NS_PER_S)
        mrc = exact_mrc(made.trace(ssb.tablespaces), [pool])
        rows.append(dict(query=q, estimate="exact LRU MRC (= InnoDB t=0)", old_blocks_time_ms=0,
                         analytic=float(mrc.hit_ratio.iloc[0]), simulated=sim[0][0]))
        if q != "Q1.1":
            continue
        pages = op.pages()
        names = np.asarray(ssb.tablespaces.group_names)
        hot = pages[names[ssb.tablespaces.page_group[pages]] == "dim_date.PRIMARY"]
        _, cnt = np.unique(hot, return_counts=True)
        n_leaf = ssb.db.index("lineorder").leaves.size
        gpp = int(round(ssb.data.rows / n_leaf))
        for t_ms in (0, 1000):
            secs = sim[t_ms][1]
            scan = ScanClass(pages=int(n_leaf), gets_per_page=gpp, get_time=secs / op.gets)
            est = midpoint_lru(cnt / secs, [scan], pool_pages=pool, old_blocks_time_ms=t_ms)
            rows.append(dict(query=q, estimate="midpoint_lru (hot dim_date + scan)", old_blocks_time_ms=t_ms,
                             analytic=float(est.hit_ratio), simulated=sim[t_ms][0]))
    out = pd.DataFrame(rows)
    out["difference"] = out.analytic - out.simulated
    return out


def sweep_chart(sweeps: pd.DataFrame, setting: str, title: str, xtitle: str, *,
                sizes: Sequence[str] = (), logx: bool = False):
    """Seconds and hit ratio of one sensitivity sweep of notebook 01 (rows of ``sweeps``
    whose ``setting`` is ``setting``: "old_blocks_time_ms", "old_blocks_pct" or "pool",
    one line per old_blocks_time), as two Altair panels side by side.  ``sizes``
    orders the pool sizes; ``logx`` puts a numeric setting on a symmetric log scale."""
    import altair as alt      # here: the drivers import without altair's start-up cost
    d = sweeps[sweeps.setting == setting].copy()
    if setting != "pool":
        d["x"] = d.value.astype(float)
        x = alt.X("x:Q", title=xtitle,
                  scale=alt.Scale(type="symlog", constant=1) if logx else alt.Scale(zero=False),
                  axis=alt.Axis(values=sorted(d.x.unique()), format="d", labelOverlap="greedy", labelAngle=0))
    else:
        d["x"] = d.value.astype(str)
        x = alt.X("x:N", title=xtitle, sort=[str(s) for s in sizes], axis=alt.Axis(labelAngle=0))
    legend = alt.Legend(orient="bottom", title="innodb_old_blocks_time", labelLimit=0)
    base = alt.Chart(d).encode(x=x, color=alt.Color("old_blocks_time:N", legend=legend),
                               strokeDash=alt.StrokeDash("old_blocks_time:N", legend=legend))
    left = base.mark_line(point=True).encode(y=alt.Y("seconds:Q", title="seconds (one pass, 13 queries)"))
    right = base.mark_line(point=True).encode(y=alt.Y("hit_ratio:Q", title="hit ratio (1 - reads/gets)",
                                                      scale=alt.Scale(zero=False)))
    return alt.hconcat(left.properties(width=300, height=220), right.properties(width=300, height=220)
                       ).properties(title=title)
