"""The jitted engine against the pure-Python reference, event by event.

Every example replays the same per-stream events through :class:`bufsim.PoolState`
(one event per kernel call) and :class:`bufsim.reference.ReferencePool`, and after
each event compares every counter of every instance and every stream's clock,
CPU, I/O wait, gets and misses; every few events and at the end it also compares
each instance's list order, old pages, free blocks, freed_page_clock, flush list
and every dirty page's oldest_modification.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples

from bufsim.config import CostModel, DeviceModel, PoolConfig
from bufsim._pool_state import PoolState
from bufsim.pages import SpaceSpec, Tablespaces
from bufsim.policies._state import (
    COUNTER_NAMES, C_RA, C_YOUNG, I_CAP,
    I_CLOCK, I_FREE, LF_LEN, P_DIRTY, P_OLD, T_CLOCK, T_CPU, T_EVENTS, T_GETS, T_IOWAIT, T_MISSES, T_RA,
)
from bufsim.reference import ReferencePool
from bufsim.trace import Chunk

FULL_EVERY = 10
STREAM_COLS = [T_CLOCK, T_CPU, T_IOWAIT, T_GETS, T_MISSES, T_EVENTS, T_RA]


def run_both(config, tablespaces, streams):
    """Replay per-stream event lists through kernel and twin, comparing as we go."""
    state = PoolState(config, tablespaces, len(streams))
    for s, ev in enumerate(streams):
        if ev:
            page, count, cpu, flags = (np.array(x, dtype=np.int64) for x in zip(*ev))
            state.feed(s, Chunk.from_arrays(page, count, cpu, s, flags.astype(np.uint8)))
        state.close(s)
    ref = ReferencePool(config, tablespaces, streams)
    n = 0
    while ref.step():
        n += 1
        code = state.run(max_events=1)
        assert code in (0, -2), f"event {n}: kernel returned {code}"
        np.testing.assert_array_equal(state.cnt, ref.counters(), err_msg=f"counters after event {n}")
        np.testing.assert_array_equal(state.sst[:, STREAM_COLS], ref.stream_table(),
                                      err_msg=f"streams after event {n}")
        np.testing.assert_array_equal(state.space_misses, ref.space_misses,
                                      err_msg=f"reads per tablespace after event {n}")
        if n % FULL_EVERY == 0:
            compare_lists(state, ref, n)
    assert state.run(max_events=1) == 0, "the kernel has events the reference does not"
    compare_lists(state, ref, n)
    return state, ref


def compare_lists(state, ref, n):
    for i in range(state.config.instances):
        for l in range(1, 5):
            assert state.lru(i, l) == ref.lists(i)[l - 1], f"instance {i} list {l} after event {n}"
        if state.config.policy == "innodb":
            inst = ref.inst[i]
            kernel_old = {p for p in state.lru(i) if state.page_field(p, P_OLD)}
            assert kernel_old == inst.old_pages(), f"old pages of instance {i} after event {n}"
            assert state.ist[i, I_FREE] == inst.free
            assert state.ist[i, I_CLOCK] == inst.clock
            assert state.flush_list(i) == inst.flush, f"flush list {i} after event {n}"
            assert state.ist[i, LF_LEN] == len(inst.flush)
            for p in state.lru(i):
                assert state.page_field(p, P_DIRTY) == inst.pages[p].oldest, \
                    f"oldest_modification of page {p} after event {n}"
            L = len(inst.lru)
            if L >= 512:  # §2.4: the old length stays in the band around its target
                target = min(L * state.config.old_ratio // 1024, L - 25)
                assert target - 20 <= inst.old_len <= target + 20


# ---- random traces ------------------------------------------------------------------------
SPACES = Tablespaces([SpaceSpec(1, 640, "t1"),
                      SpaceSpec(2, 512, "t2", unused_pages=np.r_[70:100, 300:310]),
                      SpaceSpec(7, 200, "t3")])


@st.composite
def innodb_cases(draw, versions=("5.5", "5.6", "5.7", "mariadb10.5", "mariadb10.11")):
    instances = draw(st.sampled_from([1, 1, 2]))
    pool = draw(st.integers(560, 760)) * instances
    max_dirty = draw(st.sampled_from([0, 1, 5, 75]))
    cfg = PoolConfig(
        policy="innodb",
        version=draw(st.sampled_from(list(versions))),
        pool_pages=pool, instances=instances,
        old_blocks_pct=draw(st.sampled_from([5, 37, 50, 95])),
        old_blocks_time_ms=draw(st.sampled_from([0, 1, 4])),
        read_ahead_threshold=draw(st.sampled_from([0, 56, 62, 64])),
        # 1536 (MariaDB's default) is more than these pools: the cleaner's floor decides
        lru_scan_depth=draw(st.sampled_from([100, 300, 1536])),
        adaptive_hash_index=draw(st.booleans()),
        cleaner_activity=draw(st.sampled_from(["get", "statement"])),
        # flushing: small thresholds so that the flush-list batches run in short traces
        io_capacity=draw(st.sampled_from([100, 200, 700])),
        max_dirty_pages_pct=max_dirty,
        max_dirty_pages_pct_lwm=draw(st.integers(0, max_dirty)),
        flush_list_flushing=draw(st.sampled_from([True, True, False])),
        cost=CostModel(clock_read_ns=20, make_young_ns=100, miss_cpu_ns=1000, evict_ns=50),
        device=DeviceModel("test", draw(st.sampled_from([0, 200_000, 2_000_000])), 30_000, 150_000),
    )
    n_streams = draw(st.integers(1, 3))
    streams = []
    for _ in range(n_streams):
        ev = []
        for _ in range(draw(st.integers(1, 5))):
            kind = draw(st.sampled_from(["scan", "random", "hot"]))
            cpu = draw(st.sampled_from([0, 1000, 300_000, 1_500_000]))
            # 34 = FLAG_TEMP | FLAG_MODIFY (a temporary page: MariaDB 10.11's oldest
            # modification 2), 32 FLAG_TEMP alone (inert)
            fl = draw(st.sampled_from([0, 0, 1, 2, 3, 4, 6, 8, 8, 10, 12, 34, 32]))
            if kind == "scan":
                sp = draw(st.integers(0, 2))
                base, size = int(SPACES.space_base[sp]), int(SPACES.space_size[sp])
                lo = draw(st.integers(0, size - 1))
                hi = draw(st.integers(lo + 1, min(size, lo + 400)))
                step = draw(st.sampled_from([1, 1, -1]))
                rng = range(lo, hi) if step == 1 else range(hi - 1, lo - 1, -1)
                ev += [(base + j, draw(st.integers(1, 3)), cpu, fl) for j in rng]
            else:
                n = draw(st.integers(1, 120))
                top = 60 if kind == "hot" else SPACES.n_pages
                pages = draw(st.lists(st.integers(0, top - 1), min_size=n, max_size=n))
                ev += [(p, draw(st.integers(1, 2)), cpu, fl) for p in pages]
        streams.append(ev)
    return cfg, streams


@pytest.mark.parametrize("seed_block", range(4))
@settings(max_examples=examples(55), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(case=innodb_cases())
def test_innodb_kernel_matches_reference(seed_block, case):
    cfg, streams = case
    run_both(cfg, SPACES, streams)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(case=innodb_cases(versions=("mariadb10.11",)))
def test_mariadb1011_kernel_matches_reference(case):
    # the §13 mechanisms (refill on demand, next-area read-ahead, the failure count)
    # event by event against the pure-Python twin
    cfg, streams = case
    run_both(cfg, SPACES, streams)


@pytest.mark.parametrize("threshold", [56, 64])
@pytest.mark.parametrize("depth", [100, 300])
def test_mariadb1011_scan_through_unused_pages_matches_reference(threshold, depth):
    # a scan of t2 whose read-ahead areas hold the unused pages 70..99 and 300..309,
    # then a second pass: read-ahead, freeing of unused pages and refills all happen
    base = int(SPACES.space_base[1])
    ev = [(base + j, 2, 20_000, 0) for j in range(0, 480)] * 2
    cfg = PoolConfig(policy="innodb", version="mariadb10.11", pool_pages=600,
                     read_ahead_threshold=threshold, lru_scan_depth=depth,
                     cost=CostModel(clock_read_ns=20, make_young_ns=100, miss_cpu_ns=1000,
                                    evict_ns=50),
                     device=DeviceModel("test", 200_000, 30_000, 150_000))
    state, ref = run_both(cfg, SPACES, [ev])
    totals = dict(zip(COUNTER_NAMES, ref.counters().sum(axis=0)))
    assert totals["NUMBER_PAGES_READ_AHEAD"] > 0 and totals["evictions"] > 0


@pytest.mark.parametrize("depth", [100, 1536])
@pytest.mark.parametrize("pool", [379, 600])
def test_mariadb1011_temporary_pages_and_cleaner_floor_match_reference(depth, pool):
    # 150 temporary pages dirtied first (FLAG_TEMP | FLAG_MODIFY, as the server's startup
    # creates its temporary tablespace), then two scans of t1: the LRU batches write the
    # temporary pages and free them when they end, and at lru_scan_depth 1536 empty the
    # LRU to min(pool / 20 - 1, 256) pages
    base2, base1 = int(SPACES.space_base[2]), int(SPACES.space_base[0])
    ev = [(base2 + j, 1, 5_000, 34) for j in range(150)]
    ev += [(base1 + j, 2, 20_000, 0) for j in range(0, 640)] * 2
    cfg = PoolConfig(policy="innodb", version="mariadb10.11", pool_pages=pool,
                     read_ahead_threshold=0, lru_scan_depth=depth,
                     cost=CostModel(clock_read_ns=20, make_young_ns=100, miss_cpu_ns=1000,
                                    evict_ns=50),
                     device=DeviceModel("test", 200_000, 30_000, 150_000))
    state, ref = run_both(cfg, SPACES, [ev])
    totals = dict(zip(COUNTER_NAMES, ref.counters().sum(axis=0)))
    assert totals["NUMBER_PAGES_WRITTEN"] == 150
    assert totals["Innodb_buffer_pool_write_requests"] == 0      # no redo: no write request
    assert state.ist[0, LF_LEN] == 0                               # never in the flush list


@st.composite
def policy_cases(draw, policy):
    instances = draw(st.sampled_from([1, 2]))
    cfg = PoolConfig(policy=policy, pool_pages=draw(st.integers(2, 40)) * instances,
                     instances=instances, device=DeviceModel("test", 100_000, 10_000, 0))
    streams = []
    for _ in range(draw(st.integers(1, 2))):
        pages = draw(st.lists(st.integers(0, 150), min_size=1, max_size=250))
        cpu = draw(st.sampled_from([0, 5000]))
        streams.append([(p, draw(st.integers(1, 2)), cpu, 0) for p in pages])
    return cfg, streams


SMALL = Tablespaces([SpaceSpec(3, 151, "small")])


@pytest.mark.parametrize("policy", ["lru", "fifo", "clock", "two_q", "arc"])
@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_policy_engine_matches_reference(policy, data):
    from bufsim.policies import registry
    if policy not in registry.MODULES:
        pytest.fail(f"policy {policy} is not registered")
    cfg, streams = data.draw(policy_cases(policy))
    run_both(cfg, SMALL, streams)



# ---- the InnoDB fast loop (one stream, one instance, whole runs) ---------------------------
STATE_ARRAYS = ("pst", "stat", "ist", "cnt", "sst", "glob", "fmap", "ffree", "hk", "hv", "edge")


def assert_same_state(a, b, what):
    """Every state array of PoolStates a and b equal (each per-frame field apart)."""
    for name in STATE_ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        pairs = zip(x._fields, x, y) if name == "pst" else [("", x, y)]
        for field, u, v in pairs:
            np.testing.assert_array_equal(u, v, err_msg=f"{name}{field and '.' + field}: {what}")


def _one_stream_state(config, events):
    state = PoolState(config, SPACES, 1)
    page, count, cpu, flags = (np.array(x, dtype=np.int64) for x in zip(*events))
    state.feed(0, Chunk.from_arrays(page, count, cpu, 0, flags.astype(np.uint8)))
    state.close(0)
    return state


def _replay_whole(config, events, kernel=None, budget=None, stop_every=None):
    """One stream's events run to the end by ``PoolState.run()``: the kernel's own loop,
    no per-event limit, so the fast loop takes every get it can; ``budget`` is the
    gets per kernel call (events are cut wherever it runs out); ``stop_every``: run
    to stop times this many ns apart (as ``replay(sample_every_ns=...)`` does)."""
    from bufsim import _pool_state
    state = _one_stream_state(config, events)
    if kernel is not None:
        state._kernel = kernel
    saved = _pool_state.GETS_PER_CALL
    _pool_state.GETS_PER_CALL = budget or saved
    try:
        stop = stop_every or -1
        while state.run(stop_ns=stop) != 0:
            stop += stop_every
    finally:
        _pool_state.GETS_PER_CALL = saved
    return state


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.data_too_large])
@given(case=innodb_cases(versions=("5.5", "5.6", "5.7", "mariadb10.5")),
       pool=st.integers(600, 1000),
       budget=st.sampled_from([1, 2, 7, 1000, 2_000_000]),
       stop_every=st.sampled_from([None, None, 50_000, 3_000_000]))
def test_innodb_fast_loop_matches_general_kernel_and_reference(case, pool, budget, stop_every):
    """Whole-run replays of one stream over one instance go through the fast loop
    (``_innodb_fast``): every state array equals the general kernel's, with the get
    budget of a kernel call cutting events anywhere and stop times, and the counters, streams and
    lists equal the pure-Python reference's.  (Pools of 600-1,000 pages and every
    stream's events in one: the LRU must grow past OLD_MIN_LEN pages, beside the
    page cleaner's free blocks, for the fast loop to take the gets.)"""
    from bufsim.policies import innodb
    cfg, streams = case
    cfg = cfg.replace(pool_pages=pool, instances=1)
    # a first pass over more pages than the pool holds, so that the old sublist is set
    # and blocks are evicted (before that, no make-young check counts)
    warm = [(int(p), 1, 1000, 0) for p in range(0, SPACES.n_pages, 2)]
    events = warm + [ev for s in streams for ev in s]
    fast = _replay_whole(cfg, events, budget=budget, stop_every=stop_every)
    general = _replay_whole(cfg, events, innodb.run_general, budget, stop_every)
    assert_same_state(fast, general, "fast loop against general kernel")
    ref = ReferencePool(cfg, SPACES, [events])
    n = 0
    while ref.step():
        n += 1
    np.testing.assert_array_equal(fast.cnt, ref.counters())
    np.testing.assert_array_equal(fast.sst[:, STREAM_COLS], ref.stream_table())
    np.testing.assert_array_equal(fast.space_misses, ref.space_misses)
    compare_lists(fast, ref, n)


@pytest.mark.parametrize("old_blocks_time_ms", [0, 1000])
def test_innodb_fast_loop_on_a_large_pool_matches_general_kernel(old_blocks_time_ms):
    """On pools of innodb.DEEP_FRAMES frames or more the fast loop also prefetches each
    coming frame's plain-hit fields (a hint that changes no value): every state array
    still equals the general kernel's, over Zipf gets with misses, moves and hits."""
    from bufsim import mysql56
    from bufsim.policies import innodb
    from bufsim.synthetic import zipf_trace
    n_pages = 3 * innodb.DEEP_FRAMES
    cfg = mysql56(pool_pages=innodb.DEEP_FRAMES + 4096, instances=1,
                  old_blocks_time_ms=old_blocks_time_ms)
    chunk = zipf_trace(400_000, n_pages, 0.9, seed=3, cpu_ns=2_000).materialize()
    states = []
    for kernel in (None, innodb.run_general):
        state = PoolState(cfg, Tablespaces.single(n_pages), 1)
        if kernel is not None:
            state._kernel = kernel
        state.feed(0, chunk)
        state.close(0)
        while state.run() != 0:
            pass
        states.append(state)
    assert int(states[0].ist[0, I_CAP]) >= innodb.DEEP_FRAMES
    assert int(states[0].cnt[0, C_YOUNG]) > 10_000  # moves, not only hits and misses
    assert_same_state(states[0], states[1], "large pool: fast loop against general kernel")


@pytest.mark.parametrize("old_blocks_time_ms, modify_every, rand_ns, pct", [
    (0, 0, 0, 37), (1000, 0, 0, 37), (0, 3, 0, 37), (0, 0, 2_000_000, 5), (1000, 2, 300_000, 5)])
def test_innodb_fast_read_ahead_matches_general_kernel(old_blocks_time_ms, modify_every,
                                                       rand_ns, pct):
    """The fast loop's read-ahead (fast_steps.buf_read_ahead_linear: its own steps, the
    general read where a block cannot be had on the main path, a dirty tail or one still
    being read) leaves every state array as the general kernel's read_ahead_linear, over
    sequential scans of a space larger than the pool between random gets, with pages
    modified (``modify_every``-th scan get) and reads that take time (``rand_ns``)."""
    from bufsim import mysql56
    from bufsim.policies import innodb
    n_pages = 14_000
    cfg = mysql56(pool_pages=1500, instances=1, old_blocks_time_ms=old_blocks_time_ms,
                  old_blocks_pct=pct, read_ahead_threshold=56,
                  cost=CostModel(clock_read_ns=20, make_young_ns=100, miss_cpu_ns=1000,
                                 evict_ns=50),
                  device=DeviceModel("test", rand_ns, rand_ns // 8, 150_000))
    rng = np.random.default_rng(5)
    events = []
    for scan in range(4):
        events += [(int(p), 1, 1000, 0) for p in rng.integers(0, 3000, 3000)]
        lo = 3000 + 2000 * scan
        events += [(p, 1, 1000, 2 if modify_every and p % modify_every == 0 else 0)
                   for p in range(lo, lo + 4000)]
    sp = Tablespaces.single(n_pages)
    states = []
    for kernel in (None, innodb.run_general):
        state = PoolState(cfg, sp, 1)
        if kernel is not None:
            state._kernel = kernel
        page, count, cpu, flags = (np.array(x, dtype=np.int64) for x in zip(*events))
        state.feed(0, Chunk.from_arrays(page, count, cpu, 0, flags.astype(np.uint8)))
        state.close(0)
        while state.run() != 0:
            pass
        states.append(state)
    assert int(states[0].cnt[0, C_RA]) > 3_000   # read-ahead read many scanned pages
    assert_same_state(states[0], states[1], "read-ahead: fast loop against general kernel")


def test_innodb_fast_loop_does_the_work_of_a_long_replay():
    """After the warm-up, the fast loop does the gets, not the general kernel: the
    fast loop and the fallbacks it asks for, driven one by one, replay 20,000 random
    gets and two scans to the same state as the dispatcher, and the general kernel
    took over 14 times (the warm-ups of the LRU to OLD_MIN_LEN + 1 pages after the
    page cleaner shortened it, and its pass): the scans' linear read-aheads and the
    area edge pages' first accesses stay in the fast loop (they were 625 more
    fallbacks when they left it)."""
    from bufsim.policies import innodb, loop
    rng = np.random.default_rng(5)
    events = [(int(p), 1, 1000, 0) for p in rng.integers(0, SPACES.n_pages, 20_000)]
    events += [(int(p), 1, 1000, 0) for p in range(640)] * 2   # t1 in page order, twice
    cfg = PoolConfig(policy="innodb", version="5.6", pool_pages=700,
                     device=DeviceModel("test", 100_000, 100_000, 100_000))
    whole = _replay_whole(cfg, events)
    state = _one_stream_state(cfg, events)
    args = lambda: (*state._arrays, state.pst, state.stat, state.ist, state.cnt,  # noqa: E731
                    state.sst, state.glob, state.cfg, state._pm, state.exhausted)
    room = state._room()
    fast_gets = general_gets = fallbacks = 0
    while True:
        code, n, want = innodb.fast_loop(*args(), -1, 10**9, room)
        fast_gets += n
        if code != loop.FALLBACK:
            break
        assert innodb.run_general(*args(), -1, -1, want, room) == loop.YIELD
        general_gets += want
        fallbacks += 1
    assert code == loop.DONE
    assert fast_gets + general_gets == 20_000 + 1_280
    assert fallbacks == 14 and general_gets < 1_100
    assert state.cnt[0, C_RA] == 195
    assert_same_state(state, whole, "fast loop and fallbacks driven one by one")


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(case=innodb_cases())
def test_local_ids_replay_as_dense_keys(case):
    """The two page-id schemes (dense keys, and local ids with a hash where the
    numbering is too large for them) replay every case to the same counters, streams
    and lists: the facts the kernels compute from the spaces equal those they read
    from ``stat``."""
    from bufsim import _pool_state
    cfg, streams = case
    dense = run_both(cfg, SPACES, streams)[0]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_pool_state, "DENSE_MAP_MAX_PAGES", 0)
        local = run_both(cfg, SPACES, streams)[0]
    assert dense.dense_keys and not local.dense_keys
    np.testing.assert_array_equal(dense.cnt, local.cnt)
    np.testing.assert_array_equal(dense.sst, local.sst)
    for i in range(cfg.instances):
        for l in (1, 2):
            assert dense.lru(i, l) == local.lru(i, l)
        assert dense.flush_list(i) == local.flush_list(i)
    assert dense.distinct_pages == local.distinct_pages
    # whole runs of one stream over one instance: the fast loop, in both schemes
    one = cfg.replace(pool_pages=700, instances=1)
    events = [(int(p), 1, 1000, 0) for p in range(0, SPACES.n_pages, 2)] + \
        [ev for s in streams for ev in s]
    dense = _replay_whole(one, events)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_pool_state, "DENSE_MAP_MAX_PAGES", 0)
        local = _replay_whole(one, events)
    np.testing.assert_array_equal(dense.cnt, local.cnt)
    np.testing.assert_array_equal(dense.sst, local.sst)
    assert dense.lru() == local.lru() and dense.flush_list() == local.flush_list()
