"""Hand-computed goldens for the InnoDB rules of docs/semantics.md."""
import numpy as np
import pytest

from bufsim import PoolConfig, Tablespaces, Trace, mysql55, mysql56, replay
from bufsim.config import CostModel, DeviceModel, mariadb105, mysql57, pages_from_bytes, preset
from bufsim._pool_state import PoolState
from bufsim.pages import SpaceSpec
from bufsim.policies._state import P_OLD, P_STAMP
from bufsim.trace import FLAG_MODIFY, FLAG_STMT_END, Chunk

FREE = CostModel(0, 0, 0, 0)
INSTANT = DeviceModel.instant()


def unlinked(n):
    """A tablespace whose pages carry no leaf links, so linear read-ahead never fires
    (the rules below are about the LRU; read-ahead has its own tests)."""
    none = np.full(n, -1)
    return Tablespaces([SpaceSpec(1, n, "t", leaf_links=(none, none))])


def run_events(cfg, ts, page, count=1, cpu=0, flags=0):
    state = PoolState(cfg, ts, 1)
    state.feed(0, Chunk.from_arrays(np.asarray(page), count, cpu, 0, flags))
    state.close(0)
    assert state.run() == 0
    return state


def stat(state, col, i=0):
    return int(state.stats()[col].iloc[i])


# ---- §2.2 ratio and §3.1 young window --------------------------------------------------------
@pytest.mark.parametrize("pct,ratio", [(5, 51), (37, 378), (50, 512), (95, 972)])
def test_old_ratio_from_pct(pct, ratio):
    assert PoolConfig(old_blocks_pct=pct).old_ratio == ratio


def test_young_window_w():
    assert PoolConfig(pool_pages=8192).young_window == 1292
    assert PoolConfig(pool_pages=8191).young_window == 1291


@pytest.mark.parametrize("pool,area", [(320, 16), (1024, 32), (1056, 64), (8192, 64)])
def test_read_ahead_area(pool, area):
    assert PoolConfig(pool_pages=pool).read_ahead_area == area


# ---- §2.3 the list reaching 512 pages ----------------------------------------------------------
def test_list_reaching_512_pages_leaves_209_old():
    ts = unlinked(2000)
    cfg = mysql56(pool_pages=8192, cost=FREE, device=INSTANT)
    state = run_events(cfg, ts, np.arange(512))
    assert stat(state, "DATABASE_PAGES") == 512
    assert stat(state, "OLD_DATABASE_PAGES") == 209
    # every page went to the head, so the old ones are the 209 read first
    old = {p for p in state.lru() if state.page_field(p, P_OLD)}
    assert old == set(range(209))
    state511 = run_events(cfg, ts, np.arange(511))
    assert stat(state511, "OLD_DATABASE_PAGES") == 0


def test_old_length_stays_in_band_and_moves_to_its_edge():
    ts = unlinked(9000)
    cfg = mysql55(pool_pages=8192, cost=FREE, device=INSTANT)
    state = run_events(cfg, ts, np.arange(7162))
    # 7162 pages, ratio 378: target 2643, the band [2623, 2663]; reads enter old, so
    # the old length grows to the top edge and is pulled back there each time
    assert stat(state, "OLD_DATABASE_PAGES") == 2643 + 20


# ---- §3.1 warm-up, time rule, quarter rule ----------------------------------------------------
def test_warm_up_rule_moves_no_counter_while_nothing_was_evicted():
    ts = unlinked(3000)
    # 5.5: no page cleaner, so nothing is evicted while the pages fit
    cfg = mysql55(pool_pages=2048, old_blocks_time_ms=1000, cost=FREE, device=INSTANT)
    pages = np.concatenate([np.arange(1500), np.arange(1500), np.arange(0, 1500, 7)])
    state = run_events(cfg, ts, pages, cpu=2_000_000)
    st = state.stats()
    assert st["evictions"].iloc[0] == 0
    assert st["PAGES_MADE_YOUNG"].iloc[0] == 0
    assert st["PAGES_NOT_MADE_YOUNG"].iloc[0] == 0
    # the same in 5.6 once the page cleaner has evicted: the counters move
    st = run_events(cfg.replace(version="5.6"), ts, pages, cpu=2_000_000).stats()
    assert st["evictions"].iloc[0] > 0
    assert st["PAGES_NOT_MADE_YOUNG"].iloc[0] > 0


def test_time_rule_edges():
    """Old page first accessed at 0 ms: an access at 999 ms is not made young, at 1000 ms it is."""
    ts = unlinked(1000)
    cfg = mysql55(pool_pages=600, old_blocks_time_ms=1000, cost=FREE, device=INSTANT)
    scan = np.arange(700)
    # 0..511 go to the head, 512..599 to the midpoint during warm-up (no count),
    # 600..699 each evict first, then fail the time rule once: 100 not made young
    state = run_events(cfg, ts, scan)
    assert stat(state, "PAGES_NOT_MADE_YOUNG") == 100
    assert stat(state, "PAGES_MADE_YOUNG") == 0
    cpu = np.zeros(702, dtype=np.int64)
    cpu[699] = 999_000_000   # page 699 is first accessed at t=0, then 999 ms pass
    cpu[700] = 1_000_000     # the re-access at 999 ms fails; 1 ms later ...
    pages = np.concatenate([scan, [699, 699]])
    state = run_events(cfg, ts, pages, cpu=cpu)
    assert stat(state, "PAGES_NOT_MADE_YOUNG") == 101
    assert stat(state, "PAGES_MADE_YOUNG") == 1  # ... the access at 1000 ms moves it
    assert state.lru()[0] == 699


def test_quarter_rule_moves_young_pages_without_counting_them():
    ts = unlinked(1000)
    cfg = mysql55(pool_pages=600, cost=FREE, device=INSTANT)  # old_blocks_time 0
    assert cfg.young_window == 94
    scan = np.arange(700)
    # 600..699 each evict one page; read pages carry stamp 0, so the first access to
    # 693..699 (clock 94..100 >= W) moves them to the head: 7 old pages made young
    base = run_events(cfg, ts, scan)
    assert stat(base, "PAGES_MADE_YOUNG") == 7
    # page 511 was put at the head with stamp 0 and is young: moved and restamped, not counted
    state = run_events(cfg, ts, np.concatenate([scan, [511]]))
    assert state.page_field(511, P_STAMP) == 100
    assert stat(state, "PAGES_MADE_YOUNG") == 7
    # page 690 (first accessed at clock 90 < W, so left old) is old: counted
    state = run_events(cfg, ts, np.concatenate([scan, [690]]))
    assert stat(state, "PAGES_MADE_YOUNG") == 8
    assert state.lru()[0] == 690


def test_young_enough_page_is_not_moved():
    ts = unlinked(1000)
    cfg = mysql55(pool_pages=600, cost=FREE, device=INSTANT)
    # 600..649 evict 50 pages (< W = 94); then 511 (stamp 0) is young enough
    state = run_events(cfg, ts, np.concatenate([np.arange(650), [511]]))
    assert state.page_field(511, P_STAMP) == 0
    head = state.lru()[0]
    assert head == 511


def test_ahi_hit_counts_two_gets_and_two_checks():
    ts = unlinked(1000)
    cfg = mysql55(pool_pages=600, old_blocks_time_ms=1000, cost=FREE, device=INSTANT)
    pages = np.concatenate([np.arange(700), [699]])
    flags = np.zeros(701, dtype=np.uint8)
    flags[-1] = 1
    state = run_events(cfg, ts, pages, flags=flags)
    assert stat(state, "NUMBER_PAGES_GET") == 702
    assert stat(state, "PAGES_NOT_MADE_YOUNG") == 102
    off = run_events(cfg.replace(adaptive_hash_index=False), ts, pages, flags=flags)
    assert stat(off, "NUMBER_PAGES_GET") == 701
    assert stat(off, "PAGES_NOT_MADE_YOUNG") == 101


def test_ahi_shortcut_counts_one_get_and_no_check():
    """row_sel_try_search_shortcut_for_mysql: +1 get, no stamp, no make-young check."""
    ts = unlinked(1000)
    cfg = mysql55(pool_pages=600, old_blocks_time_ms=1000, cost=FREE, device=INSTANT)
    pages = np.concatenate([np.arange(700), [699, 5]])
    flags = np.zeros(702, dtype=np.uint8)
    flags[-2:] = 4                   # 699: resident, accessed, old; 5: evicted long ago
    state = run_events(cfg, ts, pages, flags=flags)
    assert stat(state, "NUMBER_PAGES_GET") == 702
    # 699 takes the shortcut (no check); 5 is not resident: a normal miss, checked
    assert stat(state, "PAGES_NOT_MADE_YOUNG") == 101
    assert stat(state, "Innodb_buffer_pool_reads") == 701
    off = run_events(cfg.replace(adaptive_hash_index=False), ts, pages, flags=flags)
    assert stat(off, "PAGES_NOT_MADE_YOUNG") == 102


# ---- §5 linear read-ahead ------------------------------------------------------------------------
@pytest.mark.parametrize("order", ["up", "down"])
@pytest.mark.parametrize("preset_fn,threshold,expect_ra", [
    (mysql56, 56, True), (mysql56, 0, False), (mysql55, 0, True), (mysql55, 56, True),
    (mysql57, 64, True),
])
def test_linear_read_ahead_on_a_full_scan(order, preset_fn, threshold, expect_ra):
    ts = Tablespaces.single(1024)
    cfg = preset_fn(pool_pages=8192, read_ahead_threshold=threshold)
    pages = np.arange(1024) if order == "up" else np.arange(1023, -1, -1)
    res = replay(Trace.from_arrays(pages, count=50, cpu_ns=1000, tablespaces=ts), cfg)
    t = res.totals
    # 16 areas of 64: the first one scanned is read page by page, the access to its last
    # page fetches the next area, and so on: 15 areas read ahead.  Going down, area 0 is
    # read ahead too, except page 1, the ibuf bitmap page, which read-ahead skips.
    ra = (960 if order == "up" else 959) if expect_ra else 0
    assert t["NUMBER_PAGES_READ_AHEAD"] == ra
    assert t["Innodb_buffer_pool_reads"] == 1024 - ra
    assert t["NUMBER_PAGES_READ"] == 1024
    assert t["NUMBER_PAGES_GET"] == 1024 * 50


@pytest.mark.parametrize("threshold,expect", [(64, 0), (63, 960)])
def test_read_ahead_failure_limit_is_64_minus_threshold(threshold, expect):
    """Swap pages 10 and 11 of every area and give each page its own millisecond:
    one access out of order per area; threshold 64 allows none, 63 allows one."""
    ts = Tablespaces.single(1024)
    pages = np.arange(1024)
    pages[10::64], pages[11::64] = pages[11::64].copy(), pages[10::64].copy()
    trace = Trace.from_arrays(pages, cpu_ns=1_000_000, tablespaces=ts)
    res = replay(trace, mysql56(pool_pages=8192, read_ahead_threshold=threshold))
    assert res.totals["NUMBER_PAGES_READ_AHEAD"] == expect


def test_read_ahead_saves_time_on_a_disk_scan():
    ts = Tablespaces.single(1024)
    trace = Trace.from_arrays(np.arange(1024), count=50, cpu_ns=1000, tablespaces=ts)
    on = replay(trace, mysql56(pool_pages=8192))
    off = replay(trace, mysql56(pool_pages=8192, read_ahead_threshold=0))
    # both read sequentially; with read-ahead the next extent is read while this one is
    # scanned, without it each page's transfer and its CPU follow one another
    assert on.streams["elapsed_ns"][0] < off.streams["elapsed_ns"][0]


# ---- §4 page cleaner --------------------------------------------------------------------------
def test_page_cleaner_refills_the_free_list_once_per_active_second():
    ts = unlinked(3000)
    cfg = mysql56(pool_pages=2048, cost=FREE, device=INSTANT)
    cpu = np.zeros(2002, dtype=np.int64)
    cpu[2000] = 1_500_000_000
    pages = np.concatenate([np.arange(2000), [0, 2999]])
    res = replay(Trace.from_arrays(pages, cpu_ns=cpu, tablespaces=ts), cfg)
    assert res.cleaner_passes == 1
    assert res.totals["evictions"] == 976        # 48 free -> 1024 free
    assert res.stats["FREE_BUFFERS"].iloc[0] == 1023  # the last read took one
    assert res.totals["NUMBER_READ_AHEAD_EVICTED"] == 0
    no_cleaner = replay(Trace.from_arrays(pages, cpu_ns=cpu, tablespaces=ts),
                        mysql55(pool_pages=2048, cost=FREE, device=INSTANT))
    assert no_cleaner.cleaner_passes == 0
    assert no_cleaner.totals["evictions"] == 0


def _long_select(last_flags=0, mid_flags=0):
    """6,000 pages at 1 ms each (a 6 s read-only statement over a 2,048-page pool),
    then a 1.5 s pause on a resident page and one more miss."""
    pages = np.concatenate([np.arange(6000), [5999, 0]])
    cpu = np.full(pages.size, 1_000_000, dtype=np.int64)
    cpu[6000] = 1_500_000_000
    flags = np.zeros(pages.size, dtype=np.uint8)
    flags[5999] = last_flags
    flags[3000] = mid_flags
    return pages, cpu, flags


@pytest.mark.parametrize("activity,last,mid,passes,free", [
    # every get is activity: a pass every second, the last at 7 s, before the final miss
    ("get", 0, 0, 7, 1023),
    ("statement", 0, 0, 0, 0),              # no statement end: the cleaner stays idle
    # one pass at 6 s, after the statement ended; it freed 1024 tail pages, among them
    # pages 5999 and 0, so both later gets miss
    ("statement", FLAG_STMT_END, 0, 1, 1022),
    ("statement", 0, FLAG_MODIFY, 1, 0),    # a modifying get moves the count too
])
def test_cleaner_runs_only_after_activity(activity, last, mid, passes, free):
    # srv_check_activity: the LRU batch (buf_flush_LRU_tail) runs only in a second in
    # which the activity count moved; page gets do not move it, statement ends do.
    ts = unlinked(6000)
    pages, cpu, flags = _long_select(last, mid)
    cfg = mysql56(pool_pages=2048, cost=FREE, device=INSTANT, cleaner_activity=activity)
    res = replay(Trace.from_arrays(pages, cpu_ns=cpu, flags=flags, tablespaces=ts), cfg)
    assert res.cleaner_passes == passes
    assert res.stats["FREE_BUFFERS"].iloc[0] == free
    assert res.totals["NUMBER_PAGES_GET"] == 6002


def test_cleaner_activity_is_validated():
    with pytest.raises(ValueError, match="cleaner_activity"):
        mysql56(cleaner_activity="query")


def test_statement_marks_only_the_last_event():
    from bufsim.workloads.ssb import SSB
    op = SSB(0.002).query("Q1.1")
    fl = np.concatenate([c.flags for c in op.chunks()])
    assert ((fl & FLAG_STMT_END) != 0).sum() == 1 and fl[-1] & FLAG_STMT_END


# ---- §6.1 instances -------------------------------------------------------------------------------
def test_extents_go_round_robin_over_instances():
    ts = Tablespaces([SpaceSpec(1, 256, "t")])
    cfg = mysql56(pool_pages=4096, instances=4, cost=FREE, device=INSTANT)
    res = replay(Trace.from_arrays(np.arange(256), tablespaces=ts), cfg)
    # fold(1, x) = 2**20 + 1 + x; mod 4 -> extent x goes to instance (1 + x) % 4
    assert list(res.stats["NUMBER_PAGES_GET"]) == [64, 64, 64, 64]
    res = replay(Trace.from_arrays(np.arange(64), tablespaces=ts), cfg)
    assert list(res.stats["NUMBER_PAGES_GET"]) == [0, 64, 0, 0]


# ---- presets and validation -------------------------------------------------------------------------
def test_presets_carry_version_defaults():
    assert mysql55().old_blocks_time_ms == 0 and not mysql55().page_cleaner
    assert mysql56().old_blocks_time_ms == 1000 and mysql56().page_cleaner
    assert mysql56(pool_pages=pages_from_bytes("4G")).instances == 8
    assert mysql56(pool_pages=pages_from_bytes("512M")).instances == 1
    assert mysql57(pool_pages="1G").instances == 8
    assert mariadb105().lru_scan_depth == 1536 and not mariadb105().adaptive_hash_index
    assert preset("mysql56", old_blocks_time_ms=0).old_blocks_time_ms == 0
    assert pages_from_bytes("128M") == 8192


@pytest.mark.parametrize("kwargs,field,allowed", [
    (dict(old_blocks_pct=4), "old_blocks_pct", "5..95"),
    (dict(old_blocks_pct=96), "old_blocks_pct", "5..95"),
    (dict(old_blocks_time_ms=-1), "old_blocks_time_ms", "0..4294967295"),
    (dict(pool_pages=100), "pool_pages", "320.."),
    (dict(instances=65), "instances", "1..64"),
    (dict(read_ahead_threshold=65), "read_ahead_threshold", "0..64"),
    (dict(lru_scan_depth=99), "lru_scan_depth", "100.."),
    (dict(policy="mru"), "policy", "innodb, lru"),
    (dict(version="9.9"), "version", "5.5, 5.6"),
])
def test_bad_configuration_names_field_and_range(kwargs, field, allowed):
    with pytest.raises(ValueError) as e:
        PoolConfig(**kwargs)
    assert field in str(e.value) and allowed in str(e.value)


def test_unknown_preset_and_override():
    with pytest.raises(ValueError, match="preset='mysql99'.*mysql55"):
        preset("mysql99")
    with pytest.raises(ValueError, match="unknown configuration field.*old_blocks"):
        mysql56(old_block_time=0)


def test_bad_trace_is_rejected_before_replay():
    ts = Tablespaces.single(100)
    with pytest.raises(ValueError, match="page"):
        replay(Trace.from_arrays(np.array([1, 2, 100]), tablespaces=ts), mysql56())
    with pytest.raises(ValueError, match="page"):
        Chunk.from_arrays(np.array([1.0, np.nan]))


# ---- §13 MariaDB 10.11 ---------------------------------------------------------------------
@pytest.mark.parametrize("threshold,mysql,mariadb", [(64, 0, 960), (63, 960, 0), (62, 960, 960)])
def test_mariadb1011_failure_count_aborts_at_zero(threshold, mysql, mariadb):
    """One access out of order per area (pages 10 and 11 swapped).  MySQL aborts when
    ``fail_count > 64 - threshold``; MariaDB 10.11 counts ``min(64 - threshold, area)``
    down and aborts when it reaches zero, one failure earlier (and with threshold 64 the
    count starts at zero, so its first decrement wraps and it never aborts)."""
    ts = Tablespaces.single(1024)
    pages = np.arange(1024)
    pages[10::64], pages[11::64] = pages[11::64].copy(), pages[10::64].copy()
    trace = Trace.from_arrays(pages, cpu_ns=1_000_000, tablespaces=ts)
    my = replay(trace, mysql56(pool_pages=8192, read_ahead_threshold=threshold))
    ma = replay(trace, preset("mariadb1011", pool_pages=8192, read_ahead_threshold=threshold))
    assert my.totals["NUMBER_PAGES_READ_AHEAD"] == mysql
    assert ma.totals["NUMBER_PAGES_READ_AHEAD"] == mariadb


def test_mariadb1011_reads_the_next_page_number_area():
    """Leaves in the order of extents 0, 2, 1, 3 (an index whose extents interleave with
    another's).  MySQL reads the area of the successor leaf, so every area after the
    first is read ahead; MariaDB 10.11 reads the area of the next page number, so the
    page after extent 0 is extent 1, and extent 2 is read on demand."""
    order = np.concatenate([np.arange(0, 64), np.arange(128, 192), np.arange(64, 128),
                            np.arange(192, 256)])
    prev, nxt = np.full(256, -1), np.full(256, -1)
    prev[order[1:]], nxt[order[:-1]] = order[:-1], order[1:]
    ts = Tablespaces([SpaceSpec(1, 256, "t", leaf_links=(prev, nxt))])
    trace = Trace.from_arrays(order, count=50, cpu_ns=1000, tablespaces=ts)
    my = replay(trace, mysql56(pool_pages=8192)).totals
    ma = replay(trace, preset("mariadb1011", pool_pages=8192)).totals
    assert (my["NUMBER_PAGES_READ_AHEAD"], my["Innodb_buffer_pool_reads"]) == (192, 64)
    assert (ma["NUMBER_PAGES_READ_AHEAD"], ma["Innodb_buffer_pool_reads"]) == (128, 128)
    assert my["NUMBER_PAGES_READ"] == ma["NUMBER_PAGES_READ"] == 256


@pytest.mark.parametrize("pool,depth,lru", [(1000, 300, None), (379, 1536, 80), (630, 1536, 184),
                                            (1260, 1536, 280)])
def test_mariadb1011_refills_the_free_list_on_demand(pool, depth, lru):
    """§13: a block taken leaving fewer than lru_scan_depth / 2 free, with more than 256
    (BUF_LRU_MIN_LEN) LRU pages, has the cleaner evict from the LRU tail at once, until
    lru_scan_depth blocks are free or the LRU is down to min(pool / 20 - 1, 256) pages
    (MariaDB 10.11.18 buf_flush_LRU_list_batch's ``buf_lru_min_len``), so the LRU of a
    small pool stays far below its size (no old sublist at 379 pages).  10.5's
    once-per-second cleaner does not run in this sub-second replay.

    Issue 38 item 6, innodb_lru_scan_depth above the pool's page count: at 20 MiB (1,260
    pages, the default depth 1536) the pool holds lru_scan_depth / 2 free blocks but not
    lru_scan_depth, so the wake-up comes only once the LRU holds 1260 - 768 = 492 pages
    and the batch leaves 62 (1260 // 20 - 1): the LRU never reaches BUF_LRU_OLD_MIN_LEN
    (512), so no old sublist ever forms (no page can be counted made young or not made
    young), although pages are evicted (freed_page_clock advances)."""
    ts = unlinked(3000)
    pages = np.random.default_rng(5).permutation(3000)[:2000]
    kw = dict(pool_pages=pool, lru_scan_depth=depth, cost=FREE, device=INSTANT)
    old = run_events(mariadb105(**kw), ts, pages, cpu=1000)
    new = run_events(preset("mariadb1011", **kw), ts, pages, cpu=1000)
    cap = mariadb105(**kw).instance_pages - mariadb105(**kw).misc_pages
    assert stat(old, "DATABASE_PAGES") == cap
    got, free = stat(new, "DATABASE_PAGES"), stat(new, "FREE_BUFFERS")
    if lru is None:
        # the free-list target is reached first: between the wake-up and the refill
        assert cap - depth <= got <= cap - depth // 2
    else:
        # the pool cannot hold depth free blocks: each wake-up (a take with top pages in
        # the LRU: more than 256, and leaving fewer than depth / 2 free, so top = 257 at
        # 379 and 630 pages, 1260 - 768 = 492 at 1,260) empties the LRU to
        # floor = pool // 20 - 1 pages (17 at 379, 30 at 630, 62 at 1,260), then the page
        # read is added: the LRU cycles floor + 1 .. top, and after 2,000 reads it holds
        # floor + 1 + (2000 - top - 1) % (top - floor) pages
        floor, top = pool // 20 - 1, max(257, cap - depth // 2)
        assert top < 512      # below BUF_LRU_OLD_MIN_LEN at its longest: no old sublist
        assert lru == floor + 1 + (2000 - top - 1) % (top - floor)
        assert got == lru
        assert stat(new, "evictions") == 2000 - lru
    assert got + free == cap
    assert stat(new, "Innodb_buffer_pool_reads") == stat(old, "Innodb_buffer_pool_reads") == 2000
    if got < 512:
        assert stat(new, "OLD_DATABASE_PAGES") == 0
    # evictions by the cleaner are not read-ahead evictions (§13 "who evicts")
    assert stat(new, "NUMBER_READ_AHEAD_EVICTED") == 0


def test_mariadb1011_frees_read_ahead_pages_that_hold_no_data():
    """§13: pages of a read-ahead area that hold no data (FIL_PAGE_TYPE_ALLOCATED) are
    freed once read; each such eviction advances freed_page_clock, which ends the
    warm-up exemption of §3.1.  A scan of extent 0 reads extent 1 ahead, whose pages
    100..127 are unused."""
    ts = Tablespaces([SpaceSpec(1, 256, "t", unused_pages=np.arange(100, 128))])
    trace = Trace.from_arrays(np.arange(64), count=50, cpu_ns=1000, tablespaces=ts)
    kw = dict(pool_pages=8192, cost=FREE, device=INSTANT)
    ma = replay(trace, preset("mariadb1011", **kw))
    my = replay(trace, mariadb105(**kw))
    assert ma.totals["NUMBER_PAGES_READ_AHEAD"] == my.totals["NUMBER_PAGES_READ_AHEAD"] == 64
    assert int(ma.stats["DATABASE_PAGES"].sum()) == 128 - 28
    assert int(my.stats["DATABASE_PAGES"].sum()) == 128
    assert ma.totals["evictions"] == 28 and my.totals["evictions"] == 0
    assert ma.totals["NUMBER_READ_AHEAD_EVICTED"] == 0


def test_unused_pages_are_checked_and_kept_in_json():
    spec = SpaceSpec(1, 10, "t", unused_pages=[7, 3, 3])
    assert spec.unused_pages.tolist() == [3, 7]
    ts = Tablespaces([SpaceSpec(2, 5), spec])
    assert ts.unused_dense.tolist() == [8, 12]
    assert Tablespaces.from_json(ts.to_json()) == ts
    with pytest.raises(ValueError, match=r"unused_pages row 0 = 10 is out of range; allowed: 0\.\.9"):
        SpaceSpec(1, 10, unused_pages=[10])
