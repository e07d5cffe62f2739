"""bufsim.Pool, the pool session, against the pure-Python reference: cold, warm,
SET GLOBAL of old_blocks_time and old_blocks_pct, idle time with the page cleaner,
snapshot and restore; counters, stream clocks and lists compared after every step."""
import copy

import numpy as np
import pandas as pd
import pytest

import bufsim
from bufsim import Pool
from bufsim.config import DeviceModel, PoolConfig
from bufsim.pages import SpaceSpec, Tablespaces
from bufsim.policies._state import T_CLOCK, T_CPU, T_EVENTS, T_GETS, T_IOWAIT, T_MISSES, T_RA
from bufsim.reference import ReferencePool
from bufsim.trace import FLAG_AHI, FLAG_MODIFY, FLAG_RELATCH, Chunk, Trace

SPACES = Tablespaces([SpaceSpec(1, 900, "t1"), SpaceSpec(2, 700, "t2")])
STREAM_COLS = [T_CLOCK, T_CPU, T_IOWAIT, T_GETS, T_MISSES, T_EVENTS, T_RA]


def events(seed, n=400, hot=700):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        if rng.random() < 0.2:  # a short scan: read-ahead, old pages
            start = int(rng.integers(0, SPACES.n_pages - 70))
            out += [(p, 1, 20_000, 0) for p in range(start, start + 66)]
        else:
            out.append((int(rng.integers(0, hot)), int(rng.integers(1, 3)),
                        int(rng.integers(0, 40_000_000)),
                        int(rng.choice([0, 0, FLAG_AHI, FLAG_MODIFY, FLAG_RELATCH]))))
    return out


def trace_of(ev):
    page, count, cpu, flags = (np.array(x, dtype=np.int64) for x in zip(*ev))
    return Trace([Chunk.from_arrays(page, count, cpu, 0, flags.astype(np.uint8))], SPACES)


def check(pool, ref, what):
    st = pool._state
    np.testing.assert_array_equal(st.cnt, ref.counters(), err_msg=f"counters after {what}")
    np.testing.assert_array_equal(st.sst[:, STREAM_COLS], ref.stream_table(),
                                  err_msg=f"stream after {what}")
    np.testing.assert_array_equal(st.space_misses, ref.space_misses,
                                  err_msg=f"reads per tablespace after {what}")
    for i in range(pool.config.instances):
        assert st.lru(i) == ref.lists(i)[0], f"list of instance {i} after {what}"
        if pool.config.policy == "innodb":
            inst = ref.inst[i]
            assert {p for p in st.lru(i) if st.page_field(p, bufsim.policies._state.P_OLD)} \
                == inst.old_pages(), f"old pages after {what}"
            assert st.ist[i, bufsim.policies._state.I_FREE] == inst.free


def step(pool, ref, ev, what):
    row = pool.run(trace_of(ev))
    ref.add_events(0, ev)
    ref.run()
    check(pool, ref, what)
    return row


@pytest.mark.parametrize("config", [
    bufsim.mysql56(pool_pages=640, device="ssd", instances=1, lru_scan_depth=300),
    bufsim.mysql57(pool_pages=1280, device="hdd7200", instances=2, lru_scan_depth=100),
    PoolConfig(policy="lru", pool_pages=500, device=DeviceModel.ssd()),
])
def test_pool_session_against_the_reference(config):
    pool = Pool(config, SPACES)
    ref = ReferencePool(config, SPACES, [[]])
    a, b, c = events(1), events(2), events(3)
    cold = step(pool, ref, a, "cold run")
    warm = step(pool, ref, a, "warm run")
    assert int(warm["misses"].iloc[0]) < int(cold["misses"].iloc[0])
    assert int(warm["gets"].iloc[0]) == int(cold["gets"].iloc[0]) > 0
    first = pool.delta()
    assert first.equals(pool.counters()[first.columns])  # since creation
    if config.policy == "innodb":
        pool.set(old_blocks_time_ms=0)
        ref.set(old_blocks_time_ms=0)
        step(pool, ref, b, "old_blocks_time=0")
        pool.set(old_blocks_pct=15)
        ref.set(old_blocks_pct=15)
        check(pool, ref, "old_blocks_pct=15")
        pool.set(old_blocks_time_ms=1000, old_blocks_pct=60)
        ref.set(old_blocks_time_ms=1000, old_blocks_pct=60)
        check(pool, ref, "old_blocks_pct=60")
        assert pool.config.old_blocks_time_ms == 1000 and pool.config.old_blocks_pct == 60
    step(pool, ref, b, "run b")
    before_idle = pool.counters()
    pool.idle(3.5)
    ref.idle_until(pool.clock_ns)
    check(pool, ref, "idle")
    if config.policy == "innodb":  # the page cleaner freed blocks in the idle time
        assert int(pool.counters()["FREE_BUFFERS"].iloc[0]) > int(before_idle["FREE_BUFFERS"].iloc[0])
    snap = pool.snapshot()
    ref_snap = copy.deepcopy(ref)
    d1 = step(pool, ref, c, "run c")
    after_c = pool.counters()
    pool.restore(snap)
    ref = ref_snap
    check(pool, ref, "restore")
    d2 = step(pool, ref, c, "run c again")
    pd.testing.assert_frame_equal(d1, d2)
    pd.testing.assert_frame_equal(after_c, pool.counters())
    second = pool.delta()  # since the first delta() (the snapshot kept its baseline)
    tot = pool.counters()
    for col in ("NUMBER_PAGES_GET", "NUMBER_PAGES_READ", "PAGES_MADE_YOUNG"):
        assert int(second[col].iloc[0]) == int(tot[col].iloc[0]) - int(first[col].iloc[0])


def test_pool_set_validates_and_replay_is_unchanged():
    pool = Pool("mysql56", SPACES)
    with pytest.raises(ValueError, match="old_blocks_pct"):
        pool.set(old_blocks_pct=1)
    with pytest.raises(ValueError, match="seconds"):
        pool.idle(-1)
    ev = events(4)
    cfg = bufsim.mysql56(pool_pages=640, device="ssd")
    res = bufsim.replay(trace_of(ev), cfg)
    row = Pool(cfg, SPACES).run(trace_of(ev))
    for col in ("NUMBER_PAGES_GET", "NUMBER_PAGES_READ", "PAGES_MADE_YOUNG", "evictions"):
        assert int(row[col].iloc[0]) == int(res.totals[col])
    assert int(row["elapsed_ns"].iloc[0]) == int(res.streams["elapsed_ns"].iloc[0])


def test_pool_from_content():
    cfg = bufsim.mysql56(pool_pages=1024, device="ssd", instances=1)
    pages = np.arange(600)[::-1]           # head first: 599 is the most recent
    old = np.zeros(600, dtype=bool)
    old[-230:] = True                      # pages 229..0 are old
    dirty = np.zeros(600, dtype=bool)
    dirty[:5] = True
    pool = Pool(cfg, SPACES, content=dict(pages=pages, old=old, dirty=dirty))
    assert pool._state.lru() == pages.tolist()
    c = pool.counters()
    assert int(c["DATABASE_PAGES"].iloc[0]) == 600 and int(c["OLD_DATABASE_PAGES"].iloc[0]) == 230
    assert int(c["FREE_BUFFERS"].iloc[0]) == 1024 - 600
    row = pool.run(trace_of([(p, 1, 0, 0) for p in range(0, 600, 7)]))
    assert int(row["misses"].iloc[0]) == 0
    with pytest.raises(ValueError, match="tail"):
        Pool(cfg, SPACES, content=dict(pages=pages, old=~old))
    with pytest.raises(ValueError, match="not empty"):
        pool.load(pages)


def test_begin_feed_end_is_run_chunk_by_chunk_and_feeds_several_pools():
    """One chunk stream fed to two pools equals each pool's own run (the drivers of the
    SSB table do this: each query's chunks are generated once)."""
    cfgs = [bufsim.mysql56(pool_pages=640, device="ssd", instances=1),
            bufsim.mariadb1011(pool_pages=640, device="ssd", lru_scan_depth=300)]
    ev = events(11)
    chunks = [trace_of(ev[k:k + 97]).materialize() for k in range(0, len(ev), 97)]
    fed = [Pool(c, SPACES) for c in cfgs]
    alone = [Pool(c, SPACES) for c in cfgs]
    for rnd in range(2):  # cold, then warm with an idle gap between
        for p in fed:
            p.begin()
        for ch in chunks:
            for p in fed:
                p.feed(ch)
        rows = [p.end() for p in fed]
        for p, row in zip(alone, rows):
            pd.testing.assert_frame_equal(row, p.run(trace_of(ev)))
        for p in fed + alone:
            p.idle_ns(1_500_000_000)
    for a, b in zip(fed, alone):
        pd.testing.assert_frame_equal(a.counters(), b.counters())
        assert a.totals() == b.totals() and a.clock_ns == b.clock_ns
        pd.testing.assert_frame_equal(a.contents(), b.contents())
    with pytest.raises(RuntimeError, match="call begin"):
        fed[0].feed(chunks[0])
    with pytest.raises(ValueError, match=r"ns=-1 is out of range"):
        fed[0].idle_ns(-1)


def test_pool_of_two_streams_runs_until_each_moment_as_the_reference():
    """Two streams share the pool and interleave by virtual time: ``run_until(t)`` stops
    at each moment (the pool's clock there) and the pool after the last one equals the
    pure-Python reference of the whole run, counters, stream clocks and lists."""
    cfg = bufsim.mysql56(pool_pages=640, device="ssd", instances=1, lru_scan_depth=300)
    ev = [events(21, n=150), events(22, n=150)]
    pool = Pool(cfg, SPACES, streams=["oltp", "dump"])
    pool.open([trace_of(e) for e in ev])
    t, stops = 0, 0
    while pool.run_until(t):
        assert pool.clock_ns >= t
        stops += 1
        t += 250_000_000
    assert stops > 5
    ref = ReferencePool(cfg, SPACES, ev)
    ref.run()
    check(pool, ref, "two streams run to moments")
    assert list(pool.streams()["name"]) == ["oltp", "dump"]
    assert pool.streams()["gets"].tolist() == [int(pool._state.sst[s, T_GETS]) for s in (0, 1)]


def test_pool_streams_start_at_their_start_ns_and_check_their_arguments():
    cfg = bufsim.mysql56(pool_pages=640, device="ssd", instances=1)
    ev = [events(23, n=60), events(24, n=60)]
    pool = Pool(cfg, SPACES, streams=2, start_ns=[0, 10**12])
    with pytest.raises(RuntimeError, match="call open"):
        pool.run_until(5)
    with pytest.raises(ValueError, match="1 for a pool of 2 streams"):
        pool.open([trace_of(ev[0])])
    with pytest.raises(ValueError, match="use open"):
        pool.run(trace_of(ev[0]))
    pool.open([trace_of(e) for e in ev])
    assert pool.run_until(10**12)            # stream 1 has not started yet
    gets = pool.streams()["gets"].tolist()
    assert gets[0] == sum(c for _, c, _, f in ev[0] if not f & FLAG_RELATCH) and gets[1] == 0
    assert not pool.run_until()
    st = pool.streams()
    assert st["start_ns"].tolist() == [0, 10**12] and st["end_ns"].iat[1] > 10**12
    assert st["gets"].iat[1] == sum(c for _, c, _, f in ev[1] if not f & FLAG_RELATCH)
    with pytest.raises(ValueError, match="streams=0 is out of range"):
        Pool(cfg, SPACES, streams=0)
    with pytest.raises(ValueError, match="start_ns must hold 2 times"):
        Pool(cfg, SPACES, streams=2, start_ns=[0])


def test_stats_is_innodb_buffer_pool_stats_and_its_hit_rate_wraps_as_the_servers():
    """stats(): one row per instance, INNODB_BUFFER_POOL_STATS's columns in order, int64,
    the counters the kernel kept; HIT_RATE is buf_stats_get_pool_info's 1000 - 1000 *
    reads / gets in unsigned 64-bit arithmetic, which passes int64 when read-ahead makes
    an instance's reads exceed its gets (the column is uint64 then)."""
    from bufsim.policies._state import C_GETS, C_READ, COUNTER_NAMES, I_OLDLEN, I_SIZE
    pool = Pool(bufsim.mysql56(pool_pages=600, instances=2), SPACES)
    pool.open([trace_of(events(5))])
    pool.run_until()
    st = pool._state
    df = pool.stats()
    assert list(df.columns) == ["POOL_ID", "POOL_SIZE", "FREE_BUFFERS", "DATABASE_PAGES",
                                "OLD_DATABASE_PAGES", "MODIFIED_DATABASE_PAGES",
                                *COUNTER_NAMES, "HIT_RATE"]
    assert (df.dtypes == np.int64).all() and df["POOL_ID"].tolist() == [0, 1]
    assert df["POOL_SIZE"].tolist() == st.ist[:, I_SIZE].tolist()
    assert df["OLD_DATABASE_PAGES"].tolist() == st.ist[:, I_OLDLEN].tolist()
    assert df[list(COUNTER_NAMES)].to_numpy().tolist() == st.cnt.tolist()
    gets, reads = st.cnt[:, C_GETS], st.cnt[:, C_READ]
    assert gets.min() > 0
    assert df["HIT_RATE"].tolist() == [1000 - 1000 * int(r) // int(g) for r, g in zip(reads, gets)]
    st.cnt[1, C_READ] = 3 * st.cnt[1, C_GETS] + 1          # more reads than gets
    df = pool.stats()
    assert df["HIT_RATE"].dtype == np.uint64
    g1, r1 = int(st.cnt[1, C_GETS]), int(st.cnt[1, C_READ])
    assert df["HIT_RATE"].tolist() == [1000 - 1000 * int(reads[0]) // int(gets[0]),
                                       (1000 - 1000 * r1 // g1) % 2**64]
    assert (df.drop(columns="HIT_RATE").dtypes == np.int64).all()
    df.columns.name = "counters"                 # a frame's own: the next has none
    assert pool.stats().columns.name is None
