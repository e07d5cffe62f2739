"""DBT-3 runs as 002_5c4a4fbcadbdca94.txt made them: versions, repetitions, CPU, claims.

The document ran each DBT-3 query 10 times in a row in a 50MB pool (disk-bound,
``O_DIRECT`` on one hard disk) and reported the mean of the last 8 runs, and 20
times in a 3GB pool (CPU-bound), again the mean of the last 8.  This module runs a
query's trace the same way through one :class:`bufsim.Pool` (run
``k + 1`` starts from the pool run ``k`` left), adds the executor CPU that is not
a page get (:class:`Dbt3Cpu`), and checks the document's claims
(:func:`claims_table`).

Three variants (:data:`VARIANTS`):

``5.5``
    MySQL 5.5: the ``plain`` plans of :class:`~bufsim.workloads.dbt3.Dbt3` on
    :func:`bufsim.mysql55` (no page cleaner, one instance).
``5.6.5``
    MySQL 5.6.5, default optimizer_switch: the same plans on
    :func:`bufsim.mysql56` with ``innodb_old_blocks_time`` 0 (its default
    became 1000 only in 5.6.6), 5.6's instance rule (8 from 1 GiB) and
    :data:`CLEANER_ACTIVITY` ``'statement'`` (below).
``5.6.5 mrr+bka``
    ``mrr_cost_based=off,batched_key_access=on``: the ``bka`` plans.

Page cleaner (:data:`CLEANER_ACTIVITY`): 5.6's ``buf_flush_page_cleaner_thread``
runs its LRU batch (``buf_flush_LRU_tail``, which refills each instance's free list
to ``innodb_lru_scan_depth`` = 1,024 blocks) only when ``srv_check_activity`` sees
the server activity count move since its previous pass.  Page gets do not move
that count; a statement's end does (``innobase_commit`` ->
``srv_active_wake_master_thread`` -> ``srv_inc_activity_count``), and so does DML.
A DBT-3 query is one long read-only SELECT, so during it the cleaner stays idle and
the user thread evicts its own victims, as in 5.5; the free list is refilled once
after each run ends.  The 5.6.5 variants therefore run with
``PoolConfig(cleaner_activity="statement")`` on traces whose query ends carry
:data:`bufsim.FLAG_STMT_END` (:meth:`~bufsim.workloads.dbt3.Dbt3.query`).  With
the engine's default ``'get'`` the cleaner would keep 1,024 free blocks, a third
of the 50MB pool, through the whole query.

Q18 differs between 5.5 and 5.6.5 in the plan (5.5 re-executes the IN
subquery per outer row, 5.6.5 materializes it once): :func:`q18_mysql55_seconds`
estimates the 5.5 time from one replayed subquery execution.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import cache as _cache
from .._validation import check_int, check_int_fields
from ..config import DEVICES, DeviceModel, PoolConfig, preset
from ..versions import record
from ..pool import Pool
from ..trace import Chunk, Trace
from ..workloads.plans import CpuCost

__all__ = ["Dbt3Cpu", "VARIANTS", "CLEANER_ACTIVITY", "pool_config", "repeated_runs", "protocol_mean",
           "measure_query", "q18_mysql55_seconds", "claims_table", "NO_CPU",
           "reref_distances", "distance_summary", "skip_pricing_recheck", "family_ranges",
           "MIN_RANDOM_READ_NS"]

#: the shortest mean time one 7200 rpm disk can give a random 16 KiB read that its cache does
#: not serve: no seek at all, half a rotation (4.17 ms) and the transfer (0.11 ms), the
#: :meth:`bufsim.DeviceModel.hdd7200` figures without the 8.5 ms seek
MIN_RANDOM_READ_NS = 4_170_000 + 110_000

#: variant label -> (Dbt3 plan variant, version)
VARIANTS = {"5.5": ("plain", "5.5"), "5.6.5": ("plain", "5.6"),
            "5.6.5 mrr+bka": ("bka", "5.6")}

#: what moves 5.6's page-cleaner activity count in the 5.6.5 variants: statement
#: ends only, as ``srv_check_activity`` in ``buf_flush_page_cleaner_thread`` (module
#: docstring); :class:`bufsim.PoolConfig` ``cleaner_activity``
CLEANER_ACTIVITY = "statement"
#: the preset of each variant's version and what the document's server changes in it
#: (5.6.5 predates 5.6.6's innodb_old_blocks_time default of 1000)
_VARIANT_PRESETS = {"mysql55": {},
                    "mysql56": dict(old_blocks_time_ms=0, cleaner_activity=CLEANER_ACTIVITY)}


@dataclass(frozen=True)
class Dbt3Cpu:
    """Executor CPU of a DBT-3 query, in nanoseconds (integers >= 0).

    ``row_ns`` per row read and ``get_ns`` per page get go into the trace
    (:class:`~bufsim.workloads.plans.CpuCost`); the rest is the work BKA and
    DS-MRR add (:meth:`bufsim.workloads.dbt3.Dbt3.work`), charged by
    :meth:`extra_ns`: ``compare_ns`` per row-id comparison of the DS-MRR sorts
    (``m log2 m`` per pass of ``m`` row ids), ``buffer_ns`` per record written
    into a BKA join buffer and again per DS-MRR row matched back to its record.

    None of these is fitted (the document gives no CPU-bound time to fit to).
    Defaults: ``row_ns`` 1000 (MySQL 5.6 evaluates on the order of a million
    rows per second and core), ``get_ns`` 100 (a page-hash lookup, a buffer fix
    and a page latch), ``compare_ns`` = row_ns / 100 (the optimizer's own ratio:
    ``TIME_FOR_COMPARE`` 5 per row, ``TIME_FOR_COMPARE_ROWID`` 500 per row-id
    comparison), ``buffer_ns`` 200 (copying a record's fields in or out of the
    join buffer: a fifth of a row, as ``ROW_EVALUATE_COST`` 0.2 is to a page
    read).
    """

    row_ns: int = 1000
    get_ns: int = 100
    compare_ns: int = 10
    buffer_ns: int = 200

    def __post_init__(self):
        check_int_fields(self, ("row_ns", "get_ns", "compare_ns", "buffer_ns"), 0)

    @property
    def trace_cost(self) -> CpuCost:
        return CpuCost(row_ns=int(self.row_ns), get_ns=int(self.get_ns))

    def extra_ns(self, work: dict) -> int:
        """CPU of sorting row ids and handling join-buffer records."""
        return int(round(work.get("sort_compares", 0.0) * self.compare_ns
                         + (work.get("buffer_records", 0) + work.get("bka_rowids", 0))
                         * self.buffer_ns))


#: no executor CPU at all (what the stop-9 measurement used)
NO_CPU = Dbt3Cpu(0, 0, 0, 0)


def pool_config(version: str, pool_pages: int, *, device="hdd7200", misc_pages: int = 0,
                **overrides) -> PoolConfig:
    """The pool of a variant: ``'5.5'`` (:func:`bufsim.mysql55`) or ``'5.6'`` (5.6.5:
    :func:`bufsim.mysql56` with ``old_blocks_time_ms=0`` and ``cleaner_activity=``
    :data:`CLEANER_ACTIVITY`).  ``overrides`` replace any of these."""
    try:
        name = record(version).preset
    except ValueError:
        name = None
    if name not in _VARIANT_PRESETS:
        raise ValueError(f"version = {version!r} is unknown; allowed: '5.5', '5.6'")
    kw = dict(_VARIANT_PRESETS[name])
    kw.update(overrides)
    return preset(name, pool_pages=pool_pages, device=device, misc_pages=misc_pages, **kw)


_COUNTERS = ("NUMBER_PAGES_READ", "NUMBER_PAGES_READ_AHEAD", "evictions", "PAGES_MADE_YOUNG",
             "NUMBER_PAGES_WRITTEN")


def _snapshot(pool: Pool, free: bool = True) -> dict:
    """The stream's totals and the counters of :data:`_COUNTERS` (summed over instances);
    with ``free``, FREE_BUFFERS too (a level, read from :meth:`Pool.stats`, a DataFrame:
    the quiescent check is its only reader), else -1."""
    s = pool.totals()
    c = pool.cumulative()
    d = dict(clock=s["clock_ns"], cpu=s["cpu_ns"], io=s["io_wait_ns"], gets=s["gets"],
             misses=s["misses"], busy=s["busy_ns"])
    d.update({k: int(c[k]) for k in _COUNTERS})
    d["FREE_BUFFERS"] = int(pool.stats()["FREE_BUFFERS"].sum()) if free else -1
    return d


#: distinct pages of a materialized trace, by trace (see _always_reads)
_DISTINCT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _always_reads(trace: Trace, config: PoolConfig) -> bool:
    """True when every run of ``trace`` reads a page whatever the pool holds at its start:
    the trace touches more distinct pages than the pool has frames, so some are not
    resident at the start and each is read (NUMBER_PAGES_READ counts synchronous and
    read-ahead reads).  Such a run is never quiescent.  Only for traces held in memory
    (one pass, kept per trace); False otherwise."""
    if config.pool_pages >= trace.tablespaces.n_pages or not trace.is_materialized:
        return False
    n = _DISTINCT.get(trace)
    if n is None:
        seen = np.zeros(trace.tablespaces.n_pages, dtype=bool)
        for c in trace:
            seen[c.page] = True
        n = _DISTINCT[trace] = int(np.count_nonzero(seen))
    return n > config.pool_pages


def repeated_runs(trace: Trace, config: PoolConfig, n_runs: int, *,
                  skip_quiescent: bool = True) -> pd.DataFrame:
    """Run ``trace`` ``n_runs`` times in a row through one pool (run 1 cold).

    Returns one row per run: ``elapsed_ns``, ``cpu_ns``, ``io_wait_ns``, ``gets``,
    ``misses``, ``pages_read`` (synchronous and read-ahead), ``read_ahead``,
    ``seq_reads`` / ``random_reads`` (from the device's busy time: a read-only run
    spends ``seq * seq_read_ns + random * random_read_ns``; 0 / all reads when the
    device prices skips by distance, where no such split exists), ``evictions``,
    ``made_young`` and ``simulated`` (False for a run copied from the previous).

    With ``skip_quiescent``, once a run is *quiescent* (no page read, no eviction,
    no page made young, free list unchanged) the pool ends it exactly as it
    started it: its LRU lists, old flags and freed_page_clock are unchanged, and
    with ``old_blocks_time`` 0 nothing else in the pool state is consulted (the
    page cleaner has nothing to do with a full free list and no dirty page). The
    next run is then an identical replay.  It is still simulated once to check
    that (a ``RuntimeError`` if any counter differs); the runs after it are
    copies.

    Served from the result cache (:mod:`bufsim.cache`) when the same events ran in the
    same configuration before: the notebook's sensitivity (its 50MB pool, the default
    join_buffer_size) and skip-pricing sections repeat runs of its first table.
    """
    check_int("n_runs", n_runs, 1)
    if skip_quiescent and config.old_blocks_time_ms != 0:
        raise ValueError("skip_quiescent needs old_blocks_time_ms = 0 (access times would "
                         "matter); pass skip_quiescent=False")

    def key() -> str:
        return _cache.Key("dbt3.repeated_runs").add(
            config, int(n_runs), bool(skip_quiescent), _trace_digest(trace)).hexdigest()
    return _cache.cached(key, lambda: _repeated_runs(trace, config, n_runs, skip_quiescent))


#: content digest of a held trace, by trace (see _trace_digest)
_DIGESTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _trace_digest(trace: Trace) -> str:
    """:func:`bufsim.cache.trace_key` of ``trace`` (its events, tablespaces, streams) as
    a digest, hashed once per held trace: notebook 05 replays each trace in up to four
    pools, and hashing a 6.6 M-event trace (218 MB) for each key was most of what the
    result cache cost it.  A trace's chunks are never written, so its digest stays its
    content's; a generated trace is hashed (or refused) each time."""
    if not trace.is_materialized:
        return _cache.trace_key(_cache.Key("dbt3.trace"), trace).hexdigest()
    d = _DIGESTS.get(trace)
    if d is None:
        d = _DIGESTS[trace] = _cache.trace_key(_cache.Key("dbt3.trace"), trace).hexdigest()
    return d


def _repeated_runs(trace: Trace, config: PoolConfig, n_runs: int,
                   skip_quiescent: bool) -> pd.DataFrame:
    pool = Pool(config, trace.tablespaces)
    dev = config.device
    rows = []
    # FREE_BUFFERS matters only to a run that reads no page (the quiescent check)
    free = not _always_reads(trace, config)
    prev = _snapshot(pool, free)
    checked = False
    for k in range(n_runs):
        if rows and skip_quiescent and rows[-1]["quiescent"] and checked:
            rows.append(dict(rows[-1], run=k + 1, simulated=False))
            continue
        # one stream to its end: the kernel calls of begin(), feed() per chunk and end()
        # (reopen, run per chunk, close, run), without end()'s one-row DataFrame (~5-9 ms)
        pool.open([trace])
        pool.run_until()
        now = _snapshot(pool, free)
        d = {key: now[key] - prev[key] for key in now}
        if d["NUMBER_PAGES_WRITTEN"]:
            raise RuntimeError("a DBT-3 run wrote pages; the sequential/random split needs a "
                               "read-only run")
        n = d["NUMBER_PAGES_READ"]
        # the split holds only where every read is priced sequential or random
        rnd = (d["busy"] - n * dev.seq_read_ns) / (dev.random_read_ns - dev.seq_read_ns) \
            if dev.random_read_ns != dev.seq_read_ns and dev.skip_pricing == "adjacent" \
            else float("nan")
        row = dict(run=k + 1, elapsed_ns=d["clock"], cpu_ns=d["cpu"], io_wait_ns=d["io"],
                   gets=d["gets"], misses=d["misses"], pages_read=n,
                   read_ahead=d["NUMBER_PAGES_READ_AHEAD"],
                   seq_reads=int(round(n - rnd)) if rnd == rnd else 0,
                   random_reads=int(round(rnd)) if rnd == rnd else n,
                   evictions=d["evictions"], made_young=d["PAGES_MADE_YOUNG"], simulated=True,
                   quiescent=(n == 0 and d["evictions"] == 0 and d["PAGES_MADE_YOUNG"] == 0
                              and now["FREE_BUFFERS"] == prev["FREE_BUFFERS"]))
        if rows and rows[-1]["quiescent"]:
            same = all(row[c] == rows[-1][c] for c in ("elapsed_ns", "cpu_ns", "io_wait_ns",
                                                        "gets", "misses", "pages_read"))
            if not same:
                raise RuntimeError(f"run {k + 1} differs from the quiescent run {k}")
            checked = True
        rows.append(row)
        prev = now
    return pd.DataFrame(rows)


def protocol_mean(runs: pd.DataFrame, last: int = 8) -> pd.Series:
    """Mean of the last ``last`` runs (the document's protocol)."""
    if not 1 <= last <= len(runs):
        raise ValueError(f"last = {last!r} is out of range; allowed: 1..{len(runs)}")
    cols = ["elapsed_ns", "cpu_ns", "io_wait_ns", "gets", "misses", "pages_read", "read_ahead",
            "seq_reads", "random_reads", "evictions", "made_young"]
    return runs.iloc[-last:][cols].mean()


def _trace(d, q, plan_variant, cpu: Dbt3Cpu, kept: dict | None = None) -> Trace:
    """Query ``q``'s trace as one chunk (:meth:`~bufsim.workloads.dbt3.Dbt3.query_chunk`,
    which also leaves the plan's work where ``d.work`` finds it); with ``kept`` (a dict
    the caller holds), made once per query, plan variant, buffer sizes and CPU costs and
    kept there (the replays never write a chunk)."""
    key = (q, plan_variant, d.join_buffer_size, d.read_rnd_buffer_size, cpu)
    if kept is not None and key in kept:
        return kept[key]
    tr = Trace([d.query_chunk(q, plan_variant, cpu=cpu.trace_cost)], d.tablespaces,
               name=f"Q{q} {plan_variant}")
    if kept is not None:
        kept[key] = tr
    return tr


def _runs(replays: dict | None, d, q, plan_variant, cpu: Dbt3Cpu, config: PoolConfig,
          n_runs: int):
    """The first ``n_runs`` rows of a sequence of :func:`repeated_runs` kept in ``replays``
    for this trace source and ``config``, or None.  Run ``k`` of a sequence depends only
    on the runs before it (one pool, cold at run 1; a copied run equals the run it
    copies, :func:`repeated_runs`), so the first ``n`` runs of a longer sequence are the
    sequence of ``n`` runs."""
    if replays is None:
        return None
    have = replays.get(_replay_key(d, q, plan_variant, cpu, config))
    if have is None or len(have) < n_runs:
        return None
    return have.iloc[:n_runs].reset_index(drop=True)


def _replay_key(d, q, plan_variant, cpu, config) -> tuple:
    # the database (a copy with other buffers shares it: the buffers are in the key) and
    # what its trace is made from, as in _trace
    return (id(d.db), q, plan_variant, d.join_buffer_size, d.read_rnd_buffer_size, cpu, config)


def _keep_runs(replays: dict | None, d, q, plan_variant, cpu, config, runs: pd.DataFrame):
    if replays is None:
        return
    held = replays.setdefault("_databases", [])            # keeps id(d.db) unique meanwhile
    if not any(x is d.db for x in held):
        held.append(d.db)
    key = _replay_key(d, q, plan_variant, cpu, config)
    if key not in replays or len(replays[key]) < len(runs):
        replays[key] = runs


def measure_query(d, q: int, pools: dict, *, cpu: Dbt3Cpu = Dbt3Cpu(),
                  variants=tuple(VARIANTS), device="hdd7200",
                  runs_by_variant: dict | None = None, traces: dict | None = None,
                  replays: dict | None = None) -> pd.DataFrame:
    """Query ``q`` of ``d`` (a :class:`~bufsim.workloads.dbt3.Dbt3`) under every variant
    and pool.

    ``pools`` maps a setting name to ``(pool_pages, misc_pages, n_runs, last)``,
    e.g. ``{"disk": (3200, 0, 10, 8), "cpu": (196608, 0, 20, 8)}``.  Returns one
    row per (setting, variant) with the protocol means of :func:`repeated_runs`,
    ``extra_cpu_ns`` (:meth:`Dbt3Cpu.extra_ns`, added to ``cpu_ns`` and
    ``time_ns``), ``time_ns``, the number of runs simulated, and ``spread``: (max -
    min) / mean of the elapsed times of the runs averaged.  ``runs_by_variant``
    overrides ``(n_runs, last)`` per variant and setting, e.g.
    ``{"5.5": {"disk": (3, 2)}}``.  ``traces``: a dict the caller holds, where each
    trace is kept after it is made and found by the next call with the same database
    (same ``d``), query, plan, buffer sizes and ``cpu`` (the rows are those of traces
    made anew).  ``replays``: a dict the caller holds, where the runs of each trace source
    (database, query, plan, buffers, ``cpu``) and pool configuration are kept; a later
    call asking for as many runs or fewer of the same takes their first rows (see
    :func:`_runs`) and makes the trace only when some run is missing.  Notebook 05's
    sensitivity (its 50MB pool, the default join buffer) and skip-pricing ('adjacent')
    sections ask again for runs of its first table.
    """
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"variant = {v!r} is unknown; allowed: {', '.join(VARIANTS)}")
    out = []
    by_plan: dict = {}
    for v in variants:
        by_plan.setdefault(VARIANTS[v][0], []).append(v)
    for plan_variant, vs in by_plan.items():
        tr = None
        for setting, (pages, misc, n_runs0, last0) in pools.items():
            for v in vs:
                n_runs, last = ((runs_by_variant or {}).get(v) or {}).get(setting,
                                                                          (n_runs0, last0))
                cfg = pool_config(VARIANTS[v][1], pages, misc_pages=misc, device=device)
                runs = _runs(replays, d, q, plan_variant, cpu, cfg, n_runs)
                if runs is None:
                    if tr is None:
                        tr = _trace(d, q, plan_variant, cpu, traces)
                    runs = repeated_runs(tr, cfg, n_runs)
                    _keep_runs(replays, d, q, plan_variant, cpu, cfg, runs)
                extra = cpu.extra_ns(d.work(q, plan_variant))
                m = protocol_mean(runs, last)
                el = runs["elapsed_ns"].iloc[-last:].astype(float)
                out.append(dict(query=q, setting=setting, variant=v, **m.to_dict(),
                                extra_cpu_ns=extra, cpu_total_ns=m["cpu_ns"] + extra,
                                time_ns=m["elapsed_ns"] + extra,
                                first_run_ns=int(runs["elapsed_ns"].iloc[0]) + extra,
                                runs_simulated=int(runs["simulated"].sum()), n_runs=n_runs,
                                spread=float((el.max() - el.min()) / el.mean())))
        del tr
    return pd.DataFrame(out)


def q18_mysql55_seconds(d, pool_pages: int, *, misc_pages: int = 0, cpu: Dbt3Cpu = Dbt3Cpu(),
                        device="hdd7200", plain_ns: float = 0.0) -> dict:
    """MySQL 5.5's Q18: the IN subquery becomes a dependent EXISTS with the
    equality pushed into HAVING, so every orders row probed re-runs the grouping
    scan of ``i_l_orderkey_quantity``.  One execution is replayed twice on a 5.5
    pool (the second, warm, is timed); the estimate is ``plain_ns`` (the rest of
    the plan) plus orders rows x that time.  An extrapolation, not a replay."""
    op = d._covering_scan(cpu.trace_cost)
    tr = Trace([Chunk.concat(list(op.chunks()))], d.tablespaces, name="Q18 subquery")
    runs = repeated_runs(tr, pool_config("5.5", pool_pages, misc_pages=misc_pages,
                                         device=device), 2)
    one = float(runs["elapsed_ns"].iloc[-1])
    n_outer = int(d.data.o_cust.size)
    return dict(subquery_ns=one, executions=n_outer, time_ns=plain_ns + n_outer * one)


# ---- the document's claims ---------------------------------------------------------------
def _ratio(m: pd.DataFrame, setting, q, num, den, col="time_ns") -> float:
    a = m[(m.setting == setting) & (m["query"] == q) & (m.variant == num)][col]
    b = m[(m.setting == setting) & (m["query"] == q) & (m.variant == den)][col]
    if a.empty or b.empty:
        return float("nan")
    return float(a.iloc[0]) / float(b.iloc[0])


def claims_table(claims: pd.DataFrame, measured: pd.DataFrame,
                 extra: dict | None = None) -> pd.DataFrame:
    """Each claim of ``claims`` (``data/dbt3_claims.csv``) with its simulated value and
    whether it holds.

    ``kind``: ``faster`` (ratio < 1), ``slower`` (ratio > 1; with ``factor`` also
    reported as the reported value), ``same`` (``|ratio - 1| <= tolerance``),
    ``not_faster`` (ratio >= 1 - ``tolerance``), ``max_seconds`` / ``min_seconds``
    (a time bound; simulated seconds from ``extra[claim_id]`` or the measured
    ``numerator`` variant).  Ratios are ``numerator`` time / ``denominator`` time.
    """
    extra = extra or {}
    rows = []
    for c in claims.itertuples(index=False):
        q = int(c.query)
        if c.kind in ("max_seconds", "min_seconds"):
            sim = extra.get(c.claim_id)
            if sim is None:
                a = measured[(measured.setting == c.setting) & (measured["query"] == q)
                             & (measured.variant == c.numerator)]["time_ns"]
                sim = float(a.iloc[0]) / 1e9 if not a.empty else float("nan")
            holds = sim <= c.value if c.kind == "max_seconds" else sim >= c.value
            reported = float(c.value)
        else:
            sim = _ratio(measured, c.setting, q, c.numerator, c.denominator)
            tol = float(c.tolerance) if c.tolerance == c.tolerance else 0.0
            holds = {"faster": sim < 1.0, "slower": sim > 1.0,
                     "same": abs(sim - 1.0) <= tol,
                     "not_faster": sim >= 1.0 - tol}[c.kind]
            reported = float(c.value) if c.value == c.value else float("nan")
        rows.append(dict(claim_id=c.claim_id, setting=c.setting, query=q, kind=c.kind,
                         numerator=c.numerator, denominator=c.denominator,
                         reported=reported, simulated=sim,
                         holds=bool(holds) if sim == sim else False, claim=c.claim))
    return pd.DataFrame(rows)



def family_ranges(table: pd.DataFrame, measured: pd.DataFrame, *, cpu: Dbt3Cpu = Dbt3Cpu(),
                  seq_read_ns: int = 110_000, min_random_read_ns: int = MIN_RANDOM_READ_NS,
                  resolution: float = 0.01) -> pd.DataFrame:
    """For each claim of :func:`claims_table` that does not hold, the range every
    parameter choice of the model family gives, and whether the document's figure
    lies outside it (``document_excludes``, with ``computed_range`` beside it).

    * CPU-bound ``faster`` claims: with every page a hit (``pages_read`` = 0) a run's
      time is ``rows * row_ns + gets * get_ns + extra``, ``extra`` =
      :meth:`Dbt3Cpu.extra_ns` (>= 0), and BKA / DS-MRR make the nested loop's gets
      over its rows up to a few (they reorder them).  Over every ``Dbt3Cpu`` (all fields
      >= 0) the ratio's lowest value is ``min(gets ratio, rows ratio)`` (no extra CPU,
      all the cost on the count that shrank most); rows are recovered from ``cpu_ns``
      with ``cpu``'s ``row_ns`` and ``get_ns``.  "Faster" is taken as below
      ``1 - resolution`` (1%: the smallest step the document's relative-time charts
      show); ``document_excludes`` when the lowest value is above that.
    * ``max_seconds`` (Q18 5.6.5 under 45 minutes, disk-bound): with the replayed
      plan's reads, the random-read time at which the run would take the document's
      time, ``(seconds - CPU - seq_reads * seq_read_ns) / random_reads``, against
      ``min_random_read_ns``, the least a disk can take for a read its cache does not
      serve (:data:`MIN_RANDOM_READ_NS`).

    * Disk-bound ``slower`` claims (Q11 with BKA): the pages each plan reads are fixed by
      the plan, the pool and the join buffer; only the device's prices vary.  With
      skips priced ``'adjacent'``, a run costs ``random_reads * random + seq_reads *
      sequential + CPU``; the ratio's highest value over ``random >= min_random_read_ns``
      and ``0 <= sequential <= random`` lies at a corner of that box (the ratio is
      monotone in each price), and ``document_excludes`` when it is <= 1.

    Other rows get ``document_excludes`` False and an empty ``computed_range``.
    """
    out = table.copy()
    excl, ranges = [], []
    for r in table.itertuples(index=False):
        ok = r.holds is True or r.holds == "holds"
        e, txt = False, ""
        if not ok and r.setting == "cpu" and r.kind == "faster":
            m = measured[(measured.setting == "cpu") & (measured["query"] == r.query)].set_index("variant")
            a, b = m.loc[r.numerator], m.loc[r.denominator]
            if a.pages_read == 0 and b.pages_read == 0 and cpu.row_ns > 0:
                rows_a = (a.cpu_ns - cpu.get_ns * a.gets) / cpu.row_ns
                rows_b = (b.cpu_ns - cpu.get_ns * b.gets) / cpu.row_ns
                low = float(min(a.gets / b.gets, rows_a / rows_b))
                e = low > 1.0 - resolution
                txt = (f"every Dbt3Cpu >= 0 gives {low:.4f} .. inf ({int(a.gets):,} vs {int(b.gets):,} gets, "
                       f"{rows_a:,.0f} vs {rows_b:,.0f} rows, no read; extra CPU {a.extra_cpu_ns / 1e6:.1f} "
                       f"vs {b.extra_cpu_ns / 1e6:.1f} ms, >= 0); 'faster' needs < {1 - resolution:g}")
        elif not ok and r.setting == "disk" and r.kind == "slower":
            m = measured[(measured.setting == "disk") & (measured["query"] == r.query)].set_index("variant")
            a, b = m.loc[r.numerator], m.loc[r.denominator]
            if all(x == x for x in (a.seq_reads, b.seq_reads)) and a.pages_read == a.seq_reads + a.random_reads:
                rmin = min_random_read_ns

                def ratio(rr, k):      # every random read rr, every sequential one k * rr
                    ta = (a.random_reads + k * a.seq_reads) * rr + a.cpu_total_ns
                    tb = (b.random_reads + k * b.seq_reads) * rr + b.cpu_total_ns
                    return ta / tb
                corners = [ratio(rr, k) for rr in (rmin, 1e3 * rmin) for k in (0.0, 1.0)]
                corners += [(a.random_reads + k * a.seq_reads) / (b.random_reads + k * b.seq_reads)
                            for k in (0.0, 1.0)]             # the random read time -> infinity
                high = float(max(corners))
                e = high <= 1.0
                txt = (f"every device with random >= {rmin / 1e6:.2f} ms and 0 <= sequential <= random "
                       f"(adjacent pricing) gives at most {high:.3f}: {a.pages_read:,.0f} vs "
                       f"{b.pages_read:,.0f} pages read (fixed by plan, pool and join buffer), "
                       f"CPU {a.cpu_total_ns / 1e9:.1f} vs {b.cpu_total_ns / 1e9:.1f} s; 'slower' needs > 1")
        elif not ok and r.kind == "max_seconds":
            m = measured[(measured.setting == r.setting) & (measured["query"] == r.query)
                         & (measured.variant == r.numerator)]
            if len(m) and m.random_reads.iloc[0] > 0:
                row = m.iloc[0]
                need = (r.reported * 1e9 - row.cpu_total_ns - row.seq_reads * seq_read_ns) / row.random_reads
                e = need < min_random_read_ns
                txt = (f"{r.reported:g} s needs {need / 1e6:.2f} ms per random read "
                       f"({row.random_reads:,.0f} random, {row.seq_reads:,.0f} sequential reads); "
                       f"one disk takes >= {min_random_read_ns / 1e6:.2f} ms (half a rotation + transfer)")
        excl.append(bool(e))
        ranges.append(txt)
    out["document_excludes"] = excl
    out["computed_range"] = ranges
    return out


# ---- forward skips priced by distance -----------------------------------------------------
def skip_pricing_recheck(d, pools: dict, *, cpu: Dbt3Cpu = Dbt3Cpu(), device="hdd7200",
                         queries=(11, 18), variants=("5.6.5", "5.6.5 mrr+bka"),
                         pricings=("adjacent", "distance"),
                         runs_by_variant: dict | None = None,
                         replays: dict | None = None) -> pd.DataFrame:
    """Queries re-run on the same device with each ``skip_pricing`` of ``pricings``:
    ``'adjacent'`` (the default: only the next page is a sequential read) and
    ``'distance'`` (a forward skip of ``d`` pages in the same tablespace costs
    ``min(random, d * seq)``, :mod:`bufsim.policies.device`).  Nothing else changes
    and nothing is fitted.

    Returns :func:`measure_query`'s rows with a ``skip_pricing`` column, plus
    ``ratio_to_default`` (the variant's time over the ``'5.6.5'`` time of the same
    query, setting and pricing) and ``minutes``.  ``replays``: as for
    :func:`measure_query` (the 'adjacent' runs of the default device are those of
    notebook 05's first table).
    """
    base = DEVICES[device]() if isinstance(device, str) else device
    if not isinstance(base, DeviceModel):
        raise ValueError(f"device = {device!r} must be a DeviceModel or one of {', '.join(DEVICES)}")
    for pricing in pricings:
        if pricing not in ("adjacent", "distance"):
            raise ValueError(f"pricings: {pricing!r} is unknown; allowed: 'adjacent', 'distance'")
    out = {}
    for q in queries:      # each query's traces made once for every pricing
        kept: dict = {}
        for pricing in pricings:
            dev = base.replace(skip_pricing=pricing)
            m = measure_query(d, q, pools, cpu=cpu, variants=variants, device=dev,
                              runs_by_variant=runs_by_variant, traces=kept, replays=replays)
            out[pricing, q] = m.assign(skip_pricing=pricing)
        del kept
    m = pd.concat([out[p, q] for p in pricings for q in queries], ignore_index=True)
    key = ["skip_pricing", "setting", "query"]
    den = m[m.variant == "5.6.5"].set_index(key).time_ns
    m["ratio_to_default"] = m.time_ns.to_numpy() / den.reindex(
        pd.MultiIndex.from_frame(m[key])).to_numpy()
    m["minutes"] = m.time_ns / 60e9
    return m


# ---- re-reference distances -------------------------------------------------------------
def reref_distances(d, q: int, plan_variant: str, group: str = "lineitem.PRIMARY", *,
                    leaves_only: bool = True) -> np.ndarray:
    """LRU stack distance (distinct pages since the previous get) of every event of
    query ``q`` whose page is in index ``group`` (``'table.INDEX'``); -1 marks a
    first reference.  Computed over the whole trace with
    :func:`bufsim.analytic.mrc.stack_distances`; an event hits in an LRU pool of
    ``n`` pages exactly when its distance is 1..n.  ``leaves_only`` keeps the
    index's leaf pages (the rows), not the root and inner pages every descent
    re-reads."""
    from ..analytic.mrc import stack_distances
    names = list(d.tablespaces.group_names)
    if group not in names:
        raise ValueError(f"group = {group!r} is unknown; allowed: {', '.join(names)}")
    c = d.query_chunk(q, plan_variant)
    dist = stack_distances(c.page, c.count)
    g = np.asarray(d.tablespaces.page_group)[c.page]
    keep = g == names.index(group)
    if leaves_only:
        table, _, index = group.partition(".")
        ix = d.db.index(table, None if index == "PRIMARY" else index)
        leaves = np.unique(d.db.dense(table, ix.leaf_of(np.arange(ix.geometry.rows))))
        keep &= np.isin(c.page, leaves)
    return dist[keep]


def distance_summary(dist: np.ndarray, pool_pages: int) -> dict:
    """Events, first references, re-references within ``pool_pages`` (LRU hits) and
    beyond it (LRU misses), and the median re-reference distance."""
    re = dist[dist > 0]
    within = int((re <= pool_pages).sum())
    return dict(events=int(dist.size), first=int((dist < 0).sum()), rereferences=int(re.size),
                within_pool=within, beyond_pool=int(re.size) - within,
                median_distance=float(np.median(re)) if re.size else float("nan"))


# ---- notebook 05's driver ------------------------------------------------------------------

def scaled_settings(sf: float) -> dict:
    """The document's buffers and pools at scale factor ``sf``: join_buffer_size and
    read_rnd_buffer_size scaled with the data (5.6.5 defaults 128K and 256K at SF1,
    at least 128 bytes), the disk-bound 50MB pool (3,200 pages at SF1; MySQL's
    smallest pool is 320 pages, below it the rest is held by non-data blocks:
    ``misc_pages``), the CPU-bound 3GB pool and the protocol of each
    (``measure_query``'s ``pools``: 10 runs mean of the last 8, 20 runs last 8)."""
    scale = min(1.0, sf)
    disk_pages = int(3200 * sf)
    disk_pool = (max(320, disk_pages), max(0, 320 - disk_pages))
    cpu_pool = (196_608, 0)
    return dict(scale=scale, join_buffer=max(128, int(131072 * scale)),
                read_rnd_buffer=max(128, int(262144 * scale)), disk_pool=disk_pool,
                cpu_pool=cpu_pool,
                protocol={"disk": (*disk_pool, 10, 8), "cpu": (*cpu_pool, 20, 8)})


def measure_all(d, queries, protocol: dict, *, cpu: Dbt3Cpu, runs_by_variant: dict | None = None,
                replays: dict | None = None):
    """:func:`measure_query` over ``queries``, with MySQL 5.5's Q18 replaced by the
    :func:`q18_mysql55_seconds` estimate in every setting; adds ``relative_time`` (to
    5.6.5 in the same setting and query) and ``io_s``, ``cpu_s``, ``time_s``.

    Returns ``(measured, q18_55)``: the rows and the Q18 estimates by setting.
    ``replays``: as for :func:`measure_query` (the later sections' dict).
    """
    measured = pd.concat([measure_query(d, q, protocol, cpu=cpu, runs_by_variant=runs_by_variant,
                                        replays=replays)
                          for q in queries], ignore_index=True)
    q18_55 = {}
    for setting, (pages, misc, _, _) in protocol.items():
        sel = (measured.setting == setting) & (measured["query"] == 18)
        plain = float(measured[sel & (measured.variant == "5.5")].time_ns.iloc[0])
        est = q18_mysql55_seconds(d, pages, misc_pages=misc, cpu=cpu, plain_ns=plain)
        q18_55[setting] = est
        measured.loc[sel & (measured.variant == "5.5"), "time_ns"] = est["time_ns"]
    base = measured[measured.variant == "5.6.5"].set_index(["setting", "query"]).time_ns
    measured["relative_time"] = measured.time_ns / measured.set_index(
        ["setting", "query"]).index.map(base)
    measured["io_s"] = measured.io_wait_ns / 1e9
    measured["cpu_s"] = measured.cpu_total_ns / 1e9
    measured["time_s"] = measured.time_ns / 1e9
    return measured, q18_55


def lru_miss_curve(dist: np.ndarray, sizes) -> pd.DataFrame:
    """LRU miss ratio of events with stack distances ``dist`` (-1: first reference) in
    pools of ``sizes`` pages: first references plus re-references beyond the pool."""
    re = np.sort(dist[dist > 0])
    first = int((dist < 0).sum())
    miss = first + re.size - np.searchsorted(re, sizes, side="right")
    return pd.DataFrame({"pool_pages": sizes, "misses": miss / max(dist.size, 1)})


def bka_sensitivity(d, queries, pool_mb, join_buffer_kb, *, sf: float, cpu: Dbt3Cpu,
                    reference_mb: int = 50, replays: dict | None = None) -> pd.DataFrame:
    """BKA (``5.6.5 mrr+bka``) time relative to the 5.6.5 default for each query over
    pool sizes (MB at SF1, scaled by ``sf``; cold then warm, the warm run timed) and over
    join_buffer_size (KB at SF1, scaled, in the ``reference_mb`` pool; the default's
    time is that pool's).  Rows: query, axis, x, ratio.  ``replays``: as for
    :func:`measure_query`."""
    import copy

    s = scaled_settings(sf)

    def pool(mb):
        pages = max(64, int(mb * 64 * sf))
        return (max(320, pages), max(0, 320 - pages), 2, 1)

    pools = {mb: pool(mb) for mb in pool_mb}
    rows = []
    for q in queries:
        kept: dict = {}    # the BKA trace at the default join_buffer_size serves both axes
        m = measure_query(d, q, pools, cpu=cpu, variants=("5.6.5", "5.6.5 mrr+bka"),
                          traces=kept, replays=replays)
        t = m.pivot(index="setting", columns="variant", values="time_ns")
        for mb in pool_mb:
            rows.append(dict(query=q, axis="pool size (MB)", x=mb,
                             ratio=t.loc[mb, "5.6.5 mrr+bka"] / t.loc[mb, "5.6.5"]))
        default_ns = t.loc[reference_mb, "5.6.5"]
        for kb in join_buffer_kb:
            dj = copy.copy(d)
            dj.join_buffer_size = max(128, int(kb * 1024 * s["scale"]))
            m = measure_query(dj, q, {"disk": (*s["disk_pool"], 2, 1)}, cpu=cpu,
                              variants=("5.6.5 mrr+bka",), traces=kept, replays=replays)
            rows.append(dict(query=q, axis="join_buffer_size (KB), 50MB pool", x=kb,
                             ratio=float(m.time_ns.iloc[0]) / default_ns))
    return pd.DataFrame(rows)
