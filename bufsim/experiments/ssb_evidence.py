"""Notebook 01, diagnosis: what the document's own numbers say about the cost structure.

Nothing here is fitted or fed back into the prediction; these are the checks behind the
notebook's explanation of its misses (000_fe2813b876a91991.txt):

* :func:`q11_identifiability` — the four Q1.1 times as a linear system in the four
  constants (CPU per row, per get, per old-blocks time check, per page read), with the
  document's own counters as the counts.  Its condition number and how far each constant
  moves when the four times move by a few per cent show which constants Q1.1 determines.
* :func:`implied_check_cost` — per plan, (time at 1000 - time at 0) / PAGES_NOT_MADE_YOUNG:
  the price of one time check that each plan implies on its own.
* :func:`profile_offthread` — the document's ``SHOW PROFILE`` rows: CPU (``getrusage``
  of the whole server process) minus the statement's wall time, per page read.
* :func:`table_implied` — the 13-query table read through the model's counts: the CPU
  per get the 4G runs imply (no reads, no checks), the cost per page read the 128M t=0
  runs then imply, the price per check the t=1000 regression implies, and the disk time
  per touched page the Cold runs imply.
* :func:`ahi_heap` — the pages the adaptive hash index's node heap takes from the buffer
  pool when a long run of B-tree searches leaves a frozen young sublist (date_first with
  old_blocks_time 1000): each young leaf searched more than ``n_recs / 16`` times in its
  residency gets a hash node per record, and the node heap grows in whole pool blocks.
* :func:`stats_refresh` — what ``INNODB_BUFFER_POOL_STATS``' per-second rates say about
  the pool before the statement: each rate is the counter's increase since the last
  ``buf_refresh_io_stats`` divided by the seconds since it, so with the counter itself
  they give the seconds since that refresh and every counter's value at it (the pages
  read before the statement, and that none had been made young or not made young).
* :func:`unchecked_gets` — with old_blocks_time > 0 every get counts not made young, made
  young or nothing (a young page, or no eviction yet): the gets that counted nothing.
* :func:`lock_pair_ns` — what the one source difference between 5.5.30's and 5.6.10's
  ``buf_page_get_gen`` costs uncontended: 5.5's ``buf_pool->mutex`` enter/exit fast path
  against 5.6's page-hash rw-lock S lock/unlock, each as a minimal machine-code kernel
  (LLVM, through numba's llvmlite), timed on this machine.
"""
from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np
import pandas as pd

from .._validation import check_int

__all__ = ["q11_identifiability", "implied_check_cost", "profile_offthread", "table_implied",
           "ahi_heap", "lock_pair_ns", "stats_refresh", "RATE_OF", "unchecked_gets", "CONSTANTS", "AHI_NODE_BYTES", "MEM_BLOCK_HEADER_BYTES",
           "BTR_SEARCH_PAGE_BUILD_LIMIT"]

#: the four constants, in the order of the columns of the linear system
CONSTANTS = ("row_us", "get_us", "check_us", "read_us")

_COUNTS = {"rows": "INNODB_ROWS_READ", "gets": "NUMBER_PAGES_GET",
           "checks": "PAGES_NOT_MADE_YOUNG", "reads": "NUMBER_PAGES_READ",
           "seconds": "query_seconds"}


def _q11_table(counters: pd.DataFrame) -> pd.DataFrame:
    need = {"plan", "old_blocks_time_ms", "metric", "value"}
    if not need <= set(counters.columns):
        raise ValueError(f"counters must have columns {sorted(need)}; got {sorted(counters.columns)}")
    wide = counters.pivot_table(index=["plan", "old_blocks_time_ms"], columns="metric",
                                values="value", aggfunc="first")
    missing = [m for m in _COUNTS.values() if m not in wide.columns]
    if missing:
        raise ValueError(f"counters lack metric(s) {missing}; allowed: data/ssb_q11_counters.csv")
    out = pd.DataFrame({k: wide[m].astype(float) for k, m in _COUNTS.items()})
    if out.isna().any().any():
        raise ValueError("counters: every run needs all of " + ", ".join(_COUNTS.values()))
    return out


def q11_identifiability(counters: pd.DataFrame,
                        rel_errors: Sequence[float] = (0.01, 0.02, 0.05)) -> dict:
    """The Q1.1 times as ``A @ x = seconds`` with the document's counts.

    ``A``'s columns are rows, gets, time checks (``PAGES_NOT_MADE_YOUNG``) and pages read;
    ``x`` the four constants in microseconds.  The system has one row per reported run
    (four in the document: exactly determined, so no residual tells the error).  The
    sensitivity is the range of the exact solution over all sign combinations of
    ``seconds * (1 +/- e)`` for each ``e`` in ``rel_errors``.

    Returns ``dict(system, condition, solution_us, ranges)``: the system (DataFrame),
    the 2-norm condition number of ``A`` with unit-norm columns, the exact solution
    (Series, us) and the ranges (DataFrame: rel_error, constant, low_us, high_us).
    """
    errs = [float(e) for e in rel_errors]
    if not errs or any(not 0 <= e < 1 for e in errs):
        raise ValueError(f"rel_errors = {rel_errors!r} is out of range; allowed: values in [0, 1)")
    t = _q11_table(counters)
    if len(t) != 4:
        raise ValueError(f"counters hold {len(t)} runs; allowed: exactly 4 (2 plans x 2 settings)")
    A = t[["rows", "gets", "checks", "reads"]].to_numpy(float)
    y = t["seconds"].to_numpy(float)
    cond = float(np.linalg.cond(A / np.linalg.norm(A, axis=0)))
    sol = np.linalg.solve(A, y) * 1e6
    ranges = []
    for e in errs:
        xs = np.array([np.linalg.solve(A, y * (1 + e * np.array(s))) * 1e6
                       for s in itertools.product((-1.0, 1.0), repeat=len(y))])
        for j, name in enumerate(CONSTANTS):
            ranges.append(dict(rel_error=e, constant=name, low_us=float(xs[:, j].min()),
                               high_us=float(xs[:, j].max())))
    return dict(system=t, condition=cond, solution_us=pd.Series(sol, index=list(CONSTANTS)),
                ranges=pd.DataFrame(ranges))


def implied_check_cost(counters: pd.DataFrame) -> pd.DataFrame:
    """Per plan: the time the old_blocks_time 1000 run took more than the 0 run, divided
    by its ``PAGES_NOT_MADE_YOUNG`` (every one of them is a ``ut_time_ms()`` call in
    ``buf_page_peek_if_too_old``), and the change of the other counts between the runs."""
    t = _q11_table(counters).reset_index()
    out = []
    for plan, g in t.groupby("plan", sort=False):
        g = g.set_index("old_blocks_time_ms")
        if not {0, 1000} <= set(g.index):
            raise ValueError(f"plan {plan!r} needs runs with old_blocks_time_ms 0 and 1000")
        a, b = g.loc[1000], g.loc[0]
        out.append(dict(plan=plan, extra_seconds=a.seconds - b.seconds, checks=a.checks,
                        us_per_check=(a.seconds - b.seconds) / a.checks * 1e6,
                        reads_change=a.reads - b.reads, gets_change=a.gets - b.gets))
    return pd.DataFrame(out)


def profile_offthread(profile: pd.DataFrame, counters: pd.DataFrame) -> pd.DataFrame:
    """The ``Sending data`` rows of the document's ``SHOW PROFILE``: ``cpu_s`` is
    ``getrusage(RUSAGE_SELF)`` of the server process, so ``cpu_s - duration_s`` is a
    lower bound of the CPU that threads other than the query's spent meanwhile (the
    query thread cannot use more than the wall time).  Divided by the run's pages read."""
    need = {"plan", "old_blocks_time_ms", "duration_s", "cpu_s", "context_switches", "block_ops"}
    if not need <= set(profile.columns):
        raise ValueError(f"profile must have columns {sorted(need)}")
    t = _q11_table(counters)
    out = []
    for r in profile.itertuples():
        key = (r.plan, int(r.old_blocks_time_ms))
        if key not in t.index:
            raise ValueError(f"profile run {key} has no counters")
        reads = t.loc[key, "reads"]
        off = r.cpu_s - r.duration_s
        out.append(dict(plan=r.plan, old_blocks_time_ms=int(r.old_blocks_time_ms),
                        duration_s=r.duration_s, cpu_s=r.cpu_s, offthread_cpu_min_s=off,
                        pages_read=int(reads), offthread_us_per_read_min=off / reads * 1e6,
                        context_switches=int(r.context_switches), block_ops=int(r.block_ops)))
    return pd.DataFrame(out)


def table_implied(times: pd.DataFrame, model_runs: pd.DataFrame, *, q11: pd.DataFrame | None = None,
                  cold_pages: int | None = None) -> pd.DataFrame:
    """Per configuration: what its reported Run1-3 mean and Cold imply through the
    model's counts.

    ``times``: data/ssb_response_times.csv.  ``model_runs``: one row per configuration
    (index = label ``"<version> <pool> t=<ms>"``) of the model's Run1 counts: ``gets``,
    ``pages_read``, ``not_made_young``.  ``q11``: the system of :func:`q11_identifiability`
    (optional; adds the per-read cost each Q1.1 t=0 run implies at each configuration's
    per-get CPU).  ``cold_pages``: the pages a Cold run reads from the disk in the model.

    Columns: ``run_mean_s`` (reported Run1-3 mean), ``cold_minus_run_s``,
    ``us_per_get`` (4G pools only: run mean / gets; no reads, no checks in the model),
    ``us_per_read`` (128M, t=0: (run mean - gets * the same version's 4G per-get CPU) /
    pages read), ``us_per_check`` (128M t=1000: its run mean minus the same version's
    128M t=0 run mean, divided by the difference of the model's checks),
    ``ms_per_cold_page`` (Cold - run mean over ``cold_pages``).
    """
    need = {"version", "buffer_pool", "old_blocks_time_ms", "run", "seconds"}
    if not need <= set(times.columns):
        raise ValueError(f"times must have columns {sorted(need)}")
    for c in ("gets", "pages_read", "not_made_young"):
        if c not in model_runs.columns:
            raise ValueError(f"model_runs lacks column {c!r}")
    if cold_pages is not None:
        check_int("cold_pages", cold_pages, 1)
    t = times.assign(config=[f"{v} {b} t={m}" for v, b, m in
                             zip(times.version, times.buffer_pool, times.old_blocks_time_ms)])
    mean = t[t.run != "Cold"].groupby("config", sort=False).seconds.mean()
    cold = t[t.run == "Cold"].set_index("config").seconds
    rows = {}
    for cfg in mean.index:
        if cfg not in model_runs.index:
            raise ValueError(f"model_runs has no row for configuration {cfg!r}")
        rows[cfg] = dict(version=cfg.split()[0], pool=cfg.split()[1], t=int(cfg.split("t=")[1]),
                         run_mean_s=mean[cfg], cold_minus_run_s=cold[cfg] - mean[cfg],
                         **{k: float(model_runs.loc[cfg, k]) for k in ("gets", "pages_read",
                                                                       "not_made_young")})
    df = pd.DataFrame.from_dict(rows, orient="index")
    big = df[(df.pool != "128M") & (df.pages_read == 0)]
    per_get = (big.run_mean_s / big.gets * 1e6)
    df["us_per_get"] = per_get.reindex(df.index)
    get_by_version = dict(zip(big.version, per_get))
    g = df.version.map(get_by_version)
    small0 = (df.pool == "128M") & (df.t == 0)
    df["us_per_read"] = np.where(small0, (df.run_mean_s - df.gets * g / 1e6) / df.pages_read * 1e6,
                                 np.nan)
    df["us_per_check"] = np.nan
    for cfg in df.index[(df.pool == "128M") & (df.t > 0)]:
        base = df[(df.pool == "128M") & (df.t == 0) & (df.version == df.loc[cfg, "version"])]
        if len(base):
            b = base.iloc[0]
            dchk = df.loc[cfg, "not_made_young"] - b.not_made_young
            if dchk > 0:
                df.loc[cfg, "us_per_check"] = (df.loc[cfg, "run_mean_s"] - b.run_mean_s) / dchk * 1e6
    df["ms_per_cold_page"] = df.cold_minus_run_s / cold_pages * 1e3 if cold_pages else np.nan
    if q11 is not None:
        for plan, r in q11.xs(0, level="old_blocks_time_ms").iterrows():
            df[f"q11_{plan}_us_per_read"] = (r.seconds - r.gets * g / 1e6) / r.reads * 1e6
    return df


# ---- the statistics refresh before a run ------------------------------------------------------
#: INNODB_BUFFER_POOL_STATS rate field -> the counter it is the rate of
RATE_OF = {"PAGES_MADE_YOUNG_RATE": "PAGES_MADE_YOUNG",
           "PAGES_MADE_NOT_YOUNG_RATE": "PAGES_NOT_MADE_YOUNG",
           "PAGES_READ_RATE": "NUMBER_PAGES_READ",
           "READ_AHEAD_RATE": "NUMBER_PAGES_READ_AHEAD"}


def stats_refresh(counters: pd.DataFrame) -> pd.DataFrame:
    """The pool at the last statistics refresh before each run's ``INNODB_BUFFER_POOL_STATS``.

    MySQL 5.6 ``buf0buf.cc`` ``buf_stats_get_pool_info`` computes each rate as
    ``(stat.n - old_stat.n) / time_elapsed`` with ``time_elapsed = 0.001 +
    difftime(now, last_printout_time)`` (whole seconds + 0.001), where ``old_stat`` and
    ``last_printout_time`` are what ``buf_refresh_io_stats`` copied at the last refresh.
    A counter that was 0 at the refresh has ``counter / rate = time_elapsed`` exactly;
    one that was not has a larger quotient.  So the smallest quotient, when it is a whole
    number of seconds + 0.001, is ``time_elapsed``, and every counter's value at the
    refresh is ``counter - round(rate * time_elapsed)``.
    ``NOT_YOUNG_MAKE_PER_THOUSAND_GETS`` and ``YOUNG_MAKE_PER_THOUSAND_GETS`` (``1000 *
    increase / gets increase``, truncated) bound the gets at the refresh from above.

    ``counters``: ``plan``, ``old_blocks_time_ms``, ``metric``, ``value`` (as
    ``data/ssb_q11_counters.csv``), with the rate fields of :data:`RATE_OF`.  One row per
    run whose rates are not all 0 (all 0: nothing happened since the refresh, which then
    says nothing about the pool before the statement): ``plan``, ``old_blocks_time_ms``,
    ``elapsed_s``, ``<counter>_at_refresh`` for each counter of :data:`RATE_OF`, and
    ``gets_at_refresh_max`` (-1 when no per-thousand field is non-zero).

    Raises
    ------
    ValueError
        If a column or a field is missing, or a run's smallest quotient is not within
        1e-6 s of a whole number of seconds + 0.001 (no counter was 0 at the refresh, so
        the seconds since it are not determined; the document prints its rates to 16-17
        digits).
    """
    need = {"plan", "old_blocks_time_ms", "metric", "value"}
    if not need <= set(counters.columns):
        raise ValueError(f"counters must have columns {sorted(need)}; got {sorted(counters.columns)}")
    wide = counters.pivot_table(index=["plan", "old_blocks_time_ms"], columns="metric",
                                values="value", aggfunc="first")
    fields = [*RATE_OF, *RATE_OF.values(), "NUMBER_PAGES_GET", "NOT_YOUNG_MAKE_PER_THOUSAND_GETS",
              "YOUNG_MAKE_PER_THOUSAND_GETS"]
    missing = [m for m in fields if m not in wide.columns]
    if missing:
        raise ValueError(f"counters lack metric(s) {missing}; allowed: data/ssb_q11_counters.csv")
    out = []
    for key, r in wide.iterrows():
        rates = {f: float(r[f]) for f in RATE_OF}
        live = {f: v for f, v in rates.items() if v > 0}
        if not live:
            continue
        elapsed = min(float(r[RATE_OF[f]]) / v for f, v in live.items())
        whole = round(elapsed - 0.001)
        if abs(elapsed - (whole + 0.001)) > 1e-6:
            raise ValueError(f"run {key}: the smallest counter / rate is {elapsed:.6f} s, not a whole "
                             "number of seconds + 0.001: no counter was 0 at the refresh")
        elapsed = whole + 0.001
        row = dict(plan=key[0], old_blocks_time_ms=int(key[1]), elapsed_s=elapsed)
        for f, c in RATE_OF.items():
            row[f"{c}_at_refresh"] = int(round(float(r[c]) - rates[f] * elapsed))
        g_max = -1
        for per, c in (("NOT_YOUNG_MAKE_PER_THOUSAND_GETS", "PAGES_NOT_MADE_YOUNG"),
                       ("YOUNG_MAKE_PER_THOUSAND_GETS", "PAGES_MADE_YOUNG")):
            k = float(r[per])
            if k > 0:
                # k = floor(1000 * d / dg), so dg > 1000 * d / (k + 1)
                d = float(r[c]) - row[f"{c}_at_refresh"]
                bound = int(r["NUMBER_PAGES_GET"]) - math.floor(1000 * d / (k + 1)) - 1
                g_max = bound if g_max < 0 else min(g_max, bound)
        row["gets_at_refresh_max"] = g_max
        out.append(row)
    return pd.DataFrame(out)


# ---- the adaptive hash index's node heap ------------------------------------------------------
#: ``ha_node_t`` in a non-debug 64-bit build (5.5/5.6 ``include/ha0ha.h``: ``next``, ``data``,
#: ``fold``; the ``block`` member exists only with UNIV_AHI_DEBUG or UNIV_DEBUG), which
#: ``ha_insert_for_fold`` allocates from the AHI's ``mem_heap`` (8-byte aligned)
AHI_NODE_BYTES = 24
#: ``mem_block_info_t`` in a non-debug 64-bit build (5.6 ``include/mem0mem.h``: magic_n,
#: file_name[8], line, base (3 words), list (2), len, total_size, type, free, start,
#: free_block, buf_block): the header of each node-heap block, which is a whole buffer-pool
#: frame (``btr_search_check_free_space_in_heap`` takes it with ``buf_block_alloc``)
MEM_BLOCK_HEADER_BYTES = 120
#: ``btr0sea.c(c)``: a page gets a hash index once more than ``n_recs / 16`` searches in a
#: row would have been helped by one (and the index's ``n_hash_potential`` >= 100)
BTR_SEARCH_PAGE_BUILD_LIMIT = 16


def ahi_heap(pool_pages: int, free_target: int, recs_per_page: float, *,
             old_blocks_pct: int = 37, page_size: int = 16384) -> dict:
    """The adaptive hash index's node heap when every young page is hashed.

    During a long run of B-tree searches with ``old_blocks_time`` > 0 (Q1.1's date_first
    at 1000), the pages that became young while the pool filled are never made young or
    evicted again (every eviction comes from the old sublist), so each is searched many
    times in one residency and gets a hash index: one node (:data:`AHI_NODE_BYTES`) per
    record, in heap blocks that are whole pool frames (``page_size`` less
    :data:`MEM_BLOCK_HEADER_BYTES`).  The heap's blocks leave the LRU list, which keeps
    its young part at ``1 - old ratio`` (``old_blocks_pct * 1024 // 100 / 1024``,
    ``buf_LRU_old_ratio_update``) of what is left: the fewest blocks ``heap`` with
    ``heap >= ceil(young * recs_per_page / nodes_per_block)`` where
    ``young = (pool_pages - heap) * (1 - old ratio)`` (the fixed point, in whole blocks).
    After the statement the page cleaner frees ``free_target`` pages from the tail.

    Returns ``nodes_per_block``, ``heap_blocks``, ``young_in_statement`` and, after the
    cleaner, ``database_pages`` (the LRU's length) and ``old_database_pages`` (its old
    ratio, before ``buf_LRU_old_adjust_len``'s tolerance of 20 pages).
    """
    check_int("pool_pages", pool_pages, 64)
    check_int("free_target", free_target, 0, pool_pages - 64)
    check_int("old_blocks_pct", old_blocks_pct, 5, 95)
    check_int("page_size", page_size, 4096)
    if not (isinstance(recs_per_page, (int, float)) and 1 <= recs_per_page <= page_size):
        raise ValueError(f"recs_per_page = {recs_per_page!r} is out of range; allowed: 1 to page_size")
    ratio = (old_blocks_pct * 1024 // 100) / 1024
    nodes = (page_size - MEM_BLOCK_HEADER_BYTES) // AHI_NODE_BYTES

    def need(h):                  # blocks the young pages' nodes take when the heap has h
        return int(np.ceil(int((pool_pages - h) * (1 - ratio)) * recs_per_page / nodes))

    c = (1 - ratio) * recs_per_page / nodes
    heap = max(0, int(c * pool_pages / (1 + c)) - 2)      # just below the continuous solution
    while heap < need(heap):                              # the fewest blocks that hold them
        heap += 1
    young = int((pool_pages - heap) * (1 - ratio))
    lru = pool_pages - heap - free_target
    return dict(nodes_per_block=nodes, heap_blocks=heap, young_in_statement=young,
                database_pages=lru, old_database_pages=int(lru * ratio))


# ---- the uncontended lock pairs of 5.5.30 and 5.6.10's buf_page_get_gen --------------------
_LOCK_KERNELS = {}
#: rw_lock_t's lock_word when nobody holds the lock (X_LOCK_DECR, 5.6 include/sync0rw.h)
X_LOCK_DECR = 0x20000000


def _lock_kernels():
    """Compile (once) three loops of ``n`` iterations over a two-word block ``w``, each
    returning how many iterations took their fast path:

    * ``mutex``: 5.5's ``mutex_enter`` fast path, ``os_atomic_test_and_set_byte(&lock_word,
      1)`` (``xchg``), then ``mutex_exit``: ``mutex_reset_lock_word`` (``xchg`` of 0) and the
      read of ``waiters`` (``w[1]``) that decides whether to signal (sync0sync.ic);
    * ``rw_s``: 5.6's ``rw_lock_s_lock`` fast path, ``rw_lock_lock_word_decr``: a
      compare-and-swap of ``lock_word`` to ``lock_word - 1`` (``lock cmpxchg``), then
      ``rw_lock_s_unlock``: ``rw_lock_lock_word_incr`` (``lock xadd``/``inc``) (sync0rw.ic);
    * ``loop``: the same loop with one plain load, the loop's own cost.
    """
    if _LOCK_KERNELS:
        return _LOCK_KERNELS
    import ctypes

    import llvmlite.binding as llvm
    import llvmlite.ir as ir

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
    mod = ir.Module(name="bufsim_lock_pairs")
    mod.triple = llvm.get_process_triple()

    def loop(name, body):
        fn = ir.Function(mod, ir.FunctionType(i64, [i64.as_pointer(), i64]), name=name)
        word, n = fn.args
        entry, head, blk, done = (fn.append_basic_block(x) for x in ("entry", "head", "body", "done"))
        ir.IRBuilder(entry).branch(head)
        b = ir.IRBuilder(head)
        i, acc = b.phi(i64), b.phi(i64)
        i.add_incoming(ir.Constant(i64, 0), entry)
        acc.add_incoming(ir.Constant(i64, 0), entry)
        b.cbranch(b.icmp_signed("<", i, n), blk, done)
        b = ir.IRBuilder(blk)
        acc2 = b.add(acc, body(b, word))
        i2 = b.add(i, ir.Constant(i64, 1))
        i.add_incoming(i2, blk)
        acc.add_incoming(acc2, blk)
        b.branch(head)
        ir.IRBuilder(done).ret(acc)

    def mutex(b, word):
        lw = b.bitcast(word, i8.as_pointer())
        old = b.atomic_rmw("xchg", lw, ir.Constant(i8, 1), "seq_cst")      # mutex_test_and_set
        b.atomic_rmw("xchg", lw, ir.Constant(i8, 0), "seq_cst")            # mutex_reset_lock_word
        waiters = b.load_atomic(b.gep(word, [ir.Constant(i32, 1)]), "monotonic", 8)
        took = b.sub(ir.Constant(i64, 1), b.zext(old, i64))                 # 1: was free
        return b.sub(took, waiters)                                        # 0 waiters: no signal

    def rw_s(b, word):
        cur = b.load_atomic(word, "monotonic", 8)
        res = b.cmpxchg(word, cur, b.sub(cur, ir.Constant(i64, 1)), "seq_cst", "seq_cst")
        b.atomic_rmw("add", word, ir.Constant(i64, 1), "seq_cst")          # rw_lock_lock_word_incr
        return b.and_(b.zext(b.extract_value(res, 1), i64),                 # CAS took, and the lock
                      b.zext(b.icmp_signed(">", cur, ir.Constant(i64, 0)), i64))   # was free

    def plain(b, word):
        return b.and_(b.load_atomic(word, "monotonic", 8), ir.Constant(i64, 1))

    for name, body in (("mutex", mutex), ("rw_s", rw_s), ("loop", plain)):
        loop(name, body)
    compiled = llvm.parse_assembly(str(mod))
    compiled.verify()
    machine = llvm.Target.from_default_triple().create_target_machine(opt=2)
    engine = llvm.create_mcjit_compiler(compiled, machine)
    engine.finalize_object()
    proto = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.POINTER(ctypes.c_int64), ctypes.c_int64)
    _LOCK_KERNELS["engine"] = engine          # keeps the machine code alive
    for name in ("mutex", "rw_s", "loop"):
        _LOCK_KERNELS[name] = proto(engine.get_function_address(name))
    return _LOCK_KERNELS


def lock_pair_ns(n: int = 5_000_000, repeat: int = 5) -> dict:
    """Nanoseconds per uncontended lock/unlock pair on this machine, best of ``repeat``
    runs of ``n`` pairs: ``mutex`` (5.5.30's ``buf_pool->mutex`` around
    ``buf_page_get_gen``'s page-hash lookup), ``rw_s`` (5.6.10's page-hash rw-lock in S
    mode), ``loop`` (the loop alone; it is included in the other two).  See
    :func:`_lock_kernels` for what each kernel executes.  Every run checks that all ``n``
    pairs took the fast path and left the lock free; a measurement, not asserted anywhere.
    """
    import ctypes
    import time

    check_int("n", n, 1, 10**10)
    check_int("repeat", repeat, 1, 1000)
    k = _lock_kernels()
    out = {}
    for name, free in (("mutex", 0), ("rw_s", X_LOCK_DECR), ("loop", 0)):
        word = (ctypes.c_int64 * 2)(free, 0)
        best = np.inf
        for _ in range(repeat):
            t0 = time.perf_counter_ns()
            took = k[name](word, n)
            best = min(best, (time.perf_counter_ns() - t0) / n)
            if name != "loop" and (took != n or word[0] != free or word[1] != 0):
                raise RuntimeError(f"lock kernel {name}: {took} of {n} fast paths, "
                                   f"lock word {word[0]:#x}")
        out[name] = float(best)
    return out


def unchecked_gets(counters: pd.DataFrame) -> pd.DataFrame:
    """Per run with ``old_blocks_time_ms`` > 0: the gets that counted neither not made
    young nor made young, ``gets - PAGES_NOT_MADE_YOUNG - PAGES_MADE_YOUNG``, and per row.

    In 5.6.10 every get runs ``buf_page_peek_if_too_old`` once (``buf_page_get_gen``,
    ``buf_page_optimistic_get``, ``buf_page_get_known_nowait``), which with a non-zero
    old_blocks_time counts a page not made young (an old page first accessed less than
    the time ago, or never), or moves an old page past it (made young), or counts nothing
    (a young page, or no eviction yet: ``freed_page_clock`` 0).  So the unchecked gets are
    the gets of young pages and of the warm-up.  Columns: ``plan``,
    ``old_blocks_time_ms``, ``gets``, ``rows``, ``unchecked``, ``unchecked_per_row``,
    ``gets_per_row``.
    """
    need = {"plan", "old_blocks_time_ms", "metric", "value"}
    if not need <= set(counters.columns):
        raise ValueError(f"counters must have columns {sorted(need)}; got {sorted(counters.columns)}")
    wide = counters.pivot_table(index=["plan", "old_blocks_time_ms"], columns="metric",
                                values="value", aggfunc="first")
    fields = ["NUMBER_PAGES_GET", "PAGES_NOT_MADE_YOUNG", "PAGES_MADE_YOUNG", "INNODB_ROWS_READ"]
    missing = [m for m in fields if m not in wide.columns]
    if missing:
        raise ValueError(f"counters lack metric(s) {missing}; allowed: data/ssb_q11_counters.csv")
    out = []
    for (plan, t), r in wide.iterrows():
        if int(t) <= 0:
            continue
        g, rows = float(r.NUMBER_PAGES_GET), float(r.INNODB_ROWS_READ)
        u = g - float(r.PAGES_NOT_MADE_YOUNG) - float(r.PAGES_MADE_YOUNG)
        out.append(dict(plan=plan, old_blocks_time_ms=int(t), gets=g, rows=rows, unchecked=u,
                        unchecked_per_row=u / rows, gets_per_row=g / rows))
    return pd.DataFrame(out)
