"""Issue 36 on the live tier: advise's figure for the protected thread, held against the server
at the recommended size (marker ``live``).

Two connections interleave on a private MariaDB 10.11: ``oltp`` runs primary-key point
selects on a hot range of ``sbtest``, ``scan`` scans ``lineorder`` (several times the hot
range) now and then. The statements' page gets are compiled over the geometry read from the
server (:mod:`bufsim.live.workload`'s models, the ones the live grid checks), timed by the
statements' wall-clock times in a run where the pool holds everything, into a two-thread
trace; ``advise`` (preset ``mariadb1011``, its default rule) recommends a pool size and
``old_blocks_time``; the server is restarted at that size and setting and the workload runs
three times. Both sides are measured with their spread: the advice from two timing runs (the
threads interleave differently each time), the server from three runs; the advice's range
must meet the live tier's tolerance band (:func:`bufsim.live.tolerance.tolerance_band`, 5%
on pages read) of the server's range. The OLTP thread's own synchronous page reads come from
the server's slow query log: with ``log_slow_verbosity=innodb`` and ``long_query_time=0``
MariaDB writes ``Pages_read`` (and ``Pages_prefetched``, read-ahead) per statement under its
``Thread_id``.
"""
from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tests._live import require_server
from bufsim import Trace
from bufsim.advise import advise
from bufsim.live import MariaDBServer
from bufsim.live import tolerance as T
from bufsim.live import workload as W

pytestmark = [pytest.mark.live, pytest.mark.timeout(900)]
# the server test takes 2-3 minutes (five runs of the workload, two advice runs): slow and
# ci, so that make test's default tier stays within its budget and .ci/run still runs it

SCALE = W.Scale(orders=120_000, sbtest_rows=80_000, point_selects=1, krange_rows=1)
SLOW_LOG = {"slow_query_log": 1, "long_query_time": 0, "log_slow_verbosity": "innodb"}
HOT_LEAVES = 500           # the OLTP thread's hot range: the first ids of sbtest, this many leaves
WARM, SELECTS, PASSES, PAUSE_S = 4_000, 9_000, 3, 0.5
SEED = 36
#: the trace is timed by a run where the pool holds everything (its statements' wall times
#: are CPU, not I/O: 553 of the OLTP thread's reads, at its start), and advise's device
#: model adds the I/O waits.  Timed by a run at 16 MiB (9,479 OLTP reads) the OLTP thread
#: is slowed by I/O it will not wait for at the recommended size, fewer of its gets fall
#: during a scan, and the replay read 17% more than the server's highest run (device
#: 'instant': 5,969 against 4,440-5,099; 'ssd', which adds the waits twice: 6,323)
DEVICE = "ssd"
TIMING_POOL = "64M"
TIMING = 2

def _slow_log_path(conn, datadir: Path) -> Path:
    (name,), = conn.query("SELECT @@slow_query_log_file")
    p = Path(name)
    return p if p.is_absolute() else datadir / p


def per_thread_reads(text: str) -> dict:
    """Sum ``Pages_read`` and ``Pages_prefetched`` per ``Thread_id`` over a slow-log excerpt:
    ``{thread_id: (statements, pages_read, pages_prefetched)}``."""
    out: dict = {}
    for block in re.split(r"(?=^# User@Host)", text, flags=re.M):
        t = re.search(r"^# Thread_id: (\d+)", block, re.M)
        if not t:
            continue
        r = re.search(r"^# Pages_accessed: \d+\s+Pages_read: (\d+)\s+Pages_prefetched: (\d+)",
                      block, re.M)
        n, rd, pf = out.get(int(t.group(1)), (0, 0, 0))
        out[int(t.group(1))] = (n + 1, rd + (int(r.group(1)) if r else 0),
                                pf + (int(r.group(2)) if r else 0))
    return out


def test_per_thread_reads_are_summed_from_the_slow_log():
    text = """# User@Host: root[root] @ localhost []
# Thread_id: 4  Schema:   QC_hit: No
# Query_time: 0.065252  Lock_time: 0.000057  Rows_sent: 1  Rows_examined: 20000
# Pages_accessed: 296  Pages_read: 91  Pages_prefetched: 225  Pages_updated: 0  Old_rows_read: 0
SELECT COUNT(*) FROM t1.a;
# User@Host: root[root] @ localhost []
# Thread_id: 5  Schema:   QC_hit: No
# Query_time: 0.000097  Lock_time: 0.000000  Rows_sent: 1  Rows_examined: 0
SELECT 1;
# Time: 261128 18:55:44
# User@Host: root[root] @ localhost []
# Thread_id: 4  Schema:   QC_hit: No
# Pages_accessed: 3  Pages_read: 2  Pages_prefetched: 0  Pages_updated: 0  Old_rows_read: 0
SELECT c FROM sbtest WHERE id = 3;
"""
    assert per_thread_reads(text) == {4: (2, 93, 225), 5: (1, 0, 0)}


def _workload(geo, data):
    """The statements of each thread: ``{thread: [(sql, dense pages, flags)]}``."""
    rng = np.random.default_rng(SEED)
    ix = geo.table("sbtest").clustered
    hot_rows = int(ix.leaf_recs[:HOT_LEAVES].sum())
    ids = rng.integers(1, hot_rows + 1, size=WARM + SELECTS)
    scan = W.plans(geo, data, SCALE, SEED)["scan"]
    (scan_sql,) = scan.statements
    sp = np.concatenate([c.page for c in scan.trace(geo)])
    sf = np.concatenate([c.flags for c in scan.trace(geo)])
    oltp = []
    for i in ids.tolist():
        pages = W.exact_lookup_pages(geo, "sbtest", [i - 1])
        oltp.append((f"SELECT c FROM `{W.SCHEMA}`.sbtest WHERE id = {i}", pages,
                     np.zeros(pages.size, np.uint8)))
    return {"oltp": oltp, "scan": [(scan_sql, sp, sf)] * PASSES}, hot_rows


def _run(srv, steps, settings):
    """Restart the server (a cold pool) with ``settings``; ``oltp`` runs its warm-up, then
    its other statements while ``scan`` runs its scans beside it on a thread of its own
    (a pause of PAUSE_S after each).  Returns (per-thread slow-log sums, {thread: [(t0, t1)
    ns per statement]})."""
    srv.restart(**settings)
    conns = {"oltp": srv.connect(), "scan": srv.connect()}
    tid = {}
    for name, c in conns.items():
        (tid[name],), = c.query("SELECT CONNECTION_ID()")
        for t in ("sbtest", "lineorder"):
            c.query(f"SELECT * FROM `{W.SCHEMA}`.`{t}` LIMIT 0")
    log = _slow_log_path(conns["oltp"], srv.datadir)
    start = log.stat().st_size
    times = {"oltp": [], "scan": []}
    warm = threading.Event()
    errors = []
    t_zero = time.perf_counter_ns()

    def run(who, stmts, after=None):
        try:
            for k, (sql, _, _) in enumerate(stmts):
                t0 = time.perf_counter_ns() - t_zero
                conns[who].query(sql, doing=f"running the {who} thread")
                times[who].append((t0, time.perf_counter_ns() - t_zero))
                if after is not None:
                    after(k)
        except Exception as exc:         # noqa: BLE001 - re-raised in the main thread
            errors.append(exc)

    def scans():
        if warm.wait(120):
            run("scan", steps["scan"], lambda k: time.sleep(PAUSE_S))
    th = threading.Thread(target=scans, daemon=True)
    th.start()
    run("oltp", steps["oltp"], lambda k: warm.set() if k == WARM - 1 else None)
    warm.set()
    th.join(300)
    assert not th.is_alive() and not errors, errors
    conns["oltp"].query("FLUSH SLOW LOGS")
    for c in conns.values():
        c.close()
    with open(log, "rb") as f:
        f.seek(start)
        sums = per_thread_reads(f.read().decode(errors="replace"))
    return {name: sums.get(tid[name], (0, 0, 0)) for name in conns}, times


def _trace(steps, times, geo) -> Trace:
    """The two threads' page gets, each statement's spread evenly over its wall time; a
    get's CPU time is the gap to its thread's next get."""
    page, flags, when, stream = [], [], [], []
    for s, who in enumerate(("oltp", "scan")):
        for (_, p, f), (t0, t1) in zip(steps[who], times[who]):
            page.append(p)
            flags.append(f)
            when.append(t0 + (t1 - t0) * np.arange(p.size) // max(p.size, 1))
            stream.append(np.full(p.size, s))
    page, flags = np.concatenate(page), np.concatenate(flags)
    when, stream = np.concatenate(when).astype(np.int64), np.concatenate(stream)
    o = np.argsort(when, kind="stable")
    page, flags, when, stream = page[o], flags[o], when[o], stream[o]
    cpu = np.zeros(page.size, np.int64)
    start = np.zeros(2, np.int64)
    for s in (0, 1):
        idx = np.flatnonzero(stream == s)
        cpu[idx[:-1]] = np.diff(when[idx])
        start[s] = when[idx[0]]
    tr = Trace.from_arrays(page, 1, cpu, stream, flags, tablespaces=geo.tablespaces,
                           name="live oltp+scan")
    tr.stream_names = ("oltp", "scan")
    tr.stream_start_ns = start - start.min()
    return tr


def _misses(curve, pages, obt, stream):
    c = curve[(curve.pool_pages == pages) & (curve.old_blocks_time_ms == obt)
              & (curve.stream == stream) & (curve.old_blocks_pct == 37)]
    assert len(c) == 1, (pages, obt, stream)
    return int(c.misses.iloc[0])


# slow tier only, not ci: on a fresh-clone CI run (2026-11-28) the advice's 4,408/4,416 reads
# fell below the server's band (4,495..5,379 from 4,732/5,123/4,878): the figure sits on the
# curve's steep part (1,088 pages: 9,020; 1,280: 4,408, about 24 reads a page) and advise
# replayed 1,280 pages where a 20 MiB MariaDB 10.11 pool has 1,265 frames (5 per 8 MiB
# extent hold the block descriptors): 15 frames, some 360 reads, the gap.  advise now
# replays each size at the server's frames (bufsim.pages_from_bytes).  On a machine at load
# average 15-19 (2 cores, eight sessions) the test still fails the other way: the advice
# 7,696/7,572 and 7,493/9,851 against the server's 4,149/3,689/4,207 and 3,529/3,803/4,101
# at 20 MiB; the same traces replayed with device ssd, fs_cache and instant gave
# 7,493/9,851, 7,384/9,769, 7,314/9,771, so the device model is not it: the timing runs'
# traces are (the OLTP thread's reads at 20 MiB move by a third between two of them).  A
# third run (advice 5,635/5,567, server 4,068/4,271/4,257) replayed each server run's own
# timing at its 1,265 frames: 5,545/5,447/4,840 (instant), 5,960/5,590/5,029 (ssd), so at
# that load the replay reads 14-40% more than the server even with the server's own
# interleaving; a candidate, not checked: the server's page cleaner, starved of CPU, frees
# fewer pages ahead of need than the replay's cleaner does on its clock.
# Its 2-3 minutes of CPU beside the other live tests also slowed their runs past
# old_blocks_time's 1000 ms of real time (test_live's ICP re-latch check failed beside it)
@pytest.mark.slow
def test_the_server_at_the_recommended_size_reads_what_the_advice_says(tmp_path):
    require_server()
    srv = MariaDBServer({"innodb_buffer_pool_size": "64M", **SLOW_LOG}).start()
    try:
        with srv.connect() as conn:
            data = W.generate(SCALE, SEED)
            W.load(conn, data)
            geo = conn.geometry(W.SCHEMA)
        steps, hot_rows = _workload(geo, data)
        lo_leaves = len(geo.table("lineorder").clustered.leaves)
        assert len(geo.table("sbtest").clustered.leaves) > HOT_LEAVES
        assert lo_leaves > 2 * HOT_LEAVES          # the scan's table dwarfs the hot range

        # the advice, from traces of the statements' gets timed by TIMING runs at TIMING_POOL
        # (the interleaving of the two threads differs from run to run, and the advice's
        # figure with it: its spread is measured as the server's is).  The first run's
        # recommendation is the size the server runs at; the later runs replay it too
        # (current_pages) and give their figure there.  Their own recommendations may differ
        # by a grid step: the thread's reads still fall slowly past its cliff, and how much
        # a step cuts them against the average step moves with the run's timing (on one
        # machine at load average 10: 24 and 20 MiB)
        reps = []
        for k in range(TIMING):
            got, times = _run(srv, steps, {"innodb_buffer_pool_size": TIMING_POOL,
                                          "innodb_old_blocks_time": 1000})
            assert got["oltp"][0] >= WARM + SELECTS     # the slow log has every statement
            reps.append(advise(_trace(steps, times, geo), preset="mariadb1011", device=DEVICE,
                               jobs=1, current_pages=reps[0].recommended_pages if k else None))
        for r in reps:
            c = r.curve
            print(r.markdown().splitlines()[0][:200])
            print(c[(c.stream == "oltp") & (c.old_blocks_pct == 37)].pivot(
                index="pool_pages", columns="old_blocks_time_ms", values="misses").to_string())
        rep = reps[0]
        rec, obt = rep.recommended_pages, rep.recommended_old_blocks_time
        for r in reps:
            s = r.streams.set_index("name")
            assert s.loc["oltp", "protected"] and not s.loc["scan", "protected"]
        figures = [_misses(r.curve, rec, obt, "oltp") for r in reps]
        mib = rec * 16 // 1024
        # MariaDB 10.11 refuses a pool below 6 MiB with 16 KiB pages; advise's grid starts
        # at the version's smallest pool (ServerVersion.min_pool_bytes)
        assert mib >= 6 and rec % 64 == 0 and rep.curve.pool_pages.min() == 384, (mib, rec)

        # the server at the recommended size and old_blocks_time, three times
        reads, prefetched = [], []
        for _ in range(3):
            got, _ = _run(srv, steps, {"innodb_buffer_pool_size": f"{mib}M",
                                      "innodb_old_blocks_time": obt})
            reads.append(got["oltp"][1])
            prefetched.append(got["oltp"][2])
        lo, hi = (T.tolerance_band("NUMBER_PAGES_READ", min(reads))[0],
                  T.tolerance_band("NUMBER_PAGES_READ", max(reads))[1])
        print(f"hot range {hot_rows} rows ({HOT_LEAVES} leaves), lineorder {lo_leaves} leaves; "
              f"advice {mib} MiB ({rec} pages), old_blocks_time {obt}: oltp reads {figures}; "
              f"server runs {reads} (read-ahead {prefetched}), band {lo:.0f}..{hi:.0f}")
        # the advice's range meets the tolerance band of the server's range
        assert min(figures) <= hi and max(figures) >= lo, (figures, reads)
    finally:
        srv.close()
