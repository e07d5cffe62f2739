"""End-to-end replays: streams in virtual time, chunking, sampling, imported traces."""
import numpy as np
import pandas as pd
import pytest

import bufsim
from bufsim import CostModel, DeviceModel, PoolConfig, Trace, mysql55, mysql56, replay
from bufsim.pages import SpaceSpec, Tablespaces

FREE = CostModel(0, 0, 0, 0)
INSTANT = DeviceModel.instant()


def test_imported_threads_replay_on_their_own_timeline(tmp_path):
    csv = tmp_path / "t.csv"
    pd.DataFrame({
        "space": [5, 5, 5, 5, 5],
        "page": [1, 2, 3, 1, 4],
        "time_ms": [10, 12, 15, 30, 31],
        "thread": ["a", "b", "a", "b", "a"],
    }).to_csv(csv, index=False)
    trace = bufsim.read_trace(csv, cpu_ns_per_get=1000)
    res = replay(trace, mysql56(cost=FREE, device=INSTANT))
    s = res.streams.set_index("name")
    # thread a: first access at 10 ms, last at 31 ms, then its last get's 1 us
    assert s.loc["a", "start_ns"] == 0
    assert s.loc["a", "end_ns"] == 21_000_000 + 1000
    assert s.loc["b", "start_ns"] == 2_000_000
    assert s.loc["b", "end_ns"] == 20_000_000 + 1000
    assert res.totals["NUMBER_PAGES_GET"] == 5
    assert res.totals["Innodb_buffer_pool_reads"] == 4


def test_streams_interleave_in_virtual_time_and_share_the_device():
    ts = Tablespaces.single(1000)
    dev = DeviceModel("d", 1_000_000, 1_000_000, 0)
    fast = Trace.from_arrays(np.arange(0, 100), cpu_ns=0, tablespaces=ts)
    slow = Trace.from_arrays(np.arange(500, 600), cpu_ns=0, tablespaces=ts)
    alone = replay(fast, mysql56(cost=FREE, device=dev, read_ahead_threshold=0))
    both = replay([fast, slow], mysql56(cost=FREE, device=dev, read_ahead_threshold=0))
    assert alone.streams["elapsed_ns"][0] == 100 * 1_000_000
    # two streams, one device: every read waits for the other stream's
    assert list(both.streams["elapsed_ns"]) == [199_000_000, 200_000_000]


def test_chunk_size_does_not_change_the_result():
    a = bufsim.synthetic.zipf_trace(60_000, 5_000, 0.9, seed=3, chunk_size=1 << 20)
    b = bufsim.synthetic.zipf_trace(60_000, 5_000, 0.9, seed=3, chunk_size=777)
    cfg = mysql56(pool_pages=1000, device="ssd")
    ra, rb = replay(a, cfg), replay(b, cfg)
    pd.testing.assert_frame_equal(ra.stats, rb.stats)
    pd.testing.assert_frame_equal(ra.streams, rb.streams)


def test_same_inputs_same_numbers_and_seed_matters():
    cfg = mysql56(pool_pages=1000)
    r1 = replay(bufsim.synthetic.zipf_trace(30_000, 5_000, 0.9, seed=1), cfg)
    r2 = replay(bufsim.synthetic.zipf_trace(30_000, 5_000, 0.9, seed=1), cfg)
    r3 = replay(bufsim.synthetic.zipf_trace(30_000, 5_000, 0.9, seed=2), cfg)
    pd.testing.assert_frame_equal(r1.stats, r2.stats)
    assert not r1.stats.equals(r3.stats)


def test_timeline_samples_contents_every_interval():
    ts = Tablespaces([SpaceSpec(1, 300, "hot"), SpaceSpec(2, 3000, "big")])
    hot = Trace.from_arrays(np.tile(np.arange(300), 40), cpu_ns=100_000, tablespaces=ts)
    res = replay(hot, mysql56(pool_pages=1024, cost=FREE, device=INSTANT),
                 sample_every_ns=100_000_000)
    tl = res.timeline
    end = res.streams["end_ns"][0]
    assert len(tl) == -(-end // 100_000_000)  # one per whole interval passed, one at the end
    assert tl["time_ns"].is_monotonic_increasing
    assert tl["pages:hot"].iloc[-1] == res.contents.set_index("index").loc["hot", "pages"] == 300
    assert tl["NUMBER_PAGES_GET"].iloc[-1] == 12_000


@pytest.mark.parametrize("policy", ["lru", "fifo", "clock", "two_q", "arc"])
def test_comparison_policies_replay_under_the_same_clock(policy):
    trace = bufsim.synthetic.zipf_trace(20_000, 2_000, 0.9, seed=5, cpu_ns=1000)
    res = replay(trace, PoolConfig(policy=policy, pool_pages=300, device="ssd"))
    s = res.streams.iloc[0]
    assert 0.3 < res.hit_ratio < 0.95
    assert s["gets"] == 20_000
    assert res.totals["NUMBER_PAGES_GET"] == 20_000
    assert s["io_wait_ns"] >= s["misses"] * 33_000
    assert res.stats["DATABASE_PAGES"].iloc[0] == 300


def test_old_blocks_time_protects_a_hot_table_from_a_scan():
    """The side-load mechanism in miniature: a hot table warmed for 2 s, then a scan of
    a table 8x the pool (20 gets per page, 40 us per page).  With old_blocks_time 0
    every scan page is made young once W pages have been evicted and the scan flushes
    the hot table out; with 1000 ms scan pages stay old and most of the hot table
    survives the scan."""
    ts = Tablespaces([SpaceSpec(1, 400, "hot"), SpaceSpec(2, 8000, "scan")])
    rng = np.random.default_rng(0)
    hot = Trace.from_arrays(rng.integers(0, 400, 30_000), cpu_ns=200_000, tablespaces=ts)
    scan = Trace.from_arrays(400 + np.arange(8000), count=20, cpu_ns=2_000, tablespaces=ts)
    low = {}
    for t in (0, 1000):
        res = replay([hot, scan], mysql55(pool_pages=1000, old_blocks_time_ms=t, device="ssd"),
                     sample_every_ns=20_000_000, start_ns=[0, 2_000_000_000])
        tl = res.timeline
        during = tl[(tl.time_ns >= 2_000_000_000) & (tl.time_ns <= res.streams["end_ns"][1])]
        low[t] = during["pages:hot"].min()
    assert low[0] < 60
    assert low[1000] > 180


def test_bad_inputs_raise_before_replay():
    ts = Tablespaces.single(10)
    t = Trace.from_arrays(np.arange(10), tablespaces=ts)
    with pytest.raises(ValueError, match="sample_every_ns"):
        replay(t, mysql56(), sample_every_ns=0)
    with pytest.raises(ValueError, match="preset"):
        replay(t, "mysql99")
    with pytest.raises(ValueError, match="old_blocks_pct=3"):
        replay(t, "mysql56", old_blocks_pct=3)
    with pytest.raises(ValueError, match="device"):
        PoolConfig(device="floppy")


@pytest.mark.parametrize("policy", ["lru", "innodb"])
def test_fast_loops_sample_as_the_general_kernels(policy, monkeypatch):
    """A one-stream replay sampled every few virtual milliseconds: the fast loops
    (``lru.run``, ``innodb.fast_loop``) stop at each sample time exactly where the general
    kernels do, so every sample and the final counters are the same."""
    from bufsim.policies import innodb, registry
    rng = np.random.default_rng(3)
    ts = Tablespaces([SpaceSpec(0, 4000, "t")])
    pages = np.r_[np.arange(4000), rng.integers(0, 4000, 30_000)]
    trace = Trace.from_arrays(pages, cpu_ns=rng.integers(0, 40_000, len(pages)), tablespaces=ts)
    cfg = PoolConfig(policy=policy, pool_pages=1000, device=DeviceModel("d", 100_000, 20_000, 100_000))

    def run():
        res = replay(trace, cfg, sample_every_ns=7_000_000)
        return res.timeline, res.stats
    fast_timeline, fast_stats = run()
    monkeypatch.setattr(registry, "kernel", lambda name: innodb.run_general
                        if name == "innodb" else registry.run_generic)
    general_timeline, general_stats = run()
    assert len(fast_timeline) > 20
    pd.testing.assert_frame_equal(fast_timeline, general_timeline)
    pd.testing.assert_frame_equal(fast_stats, general_stats)
