"""The result cache (bufsim.cache): keys, staleness, bounds, and the replay hook."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bufsim
from bufsim import CostModel, DeviceModel, Trace, cache, mysql56, replay
from bufsim.pages import Tablespaces

FREE = CostModel(0, 0, 0, 0)
TS = Tablespaces.single(3000)


@pytest.fixture
def on(tmp_path, monkeypatch):
    """The cache on, over a temporary folder, with this test's hit/miss counts."""
    monkeypatch.delenv(cache.OFF_ENV_VAR, raising=False)
    monkeypatch.setenv(cache.DIR_ENV_VAR, str(tmp_path / "cache"))
    monkeypatch.delenv(cache.BYTES_ENV_VAR, raising=False)
    monkeypatch.setattr(cache, "_stats", {"hits": 0, "misses": 0, "stores": 0})
    return tmp_path / "cache"


def _trace(page_shift=0):
    rng = np.random.default_rng(3)
    pages = rng.integers(0, 2500, 4000)
    pages[1234] = (pages[1234] + page_shift) % 2500
    return Trace.from_arrays(pages, cpu_ns=1000, tablespaces=TS, chunk_size=1000)


CFG = mysql56(pool_pages=1024, cost=FREE, device=DeviceModel.instant())


def _same(a, b):
    pd.testing.assert_frame_equal(a.stats, b.stats)
    pd.testing.assert_series_equal(a.totals, b.totals)
    pd.testing.assert_frame_equal(a.streams, b.streams)
    pd.testing.assert_frame_equal(a.contents, b.contents)
    pd.testing.assert_frame_equal(a.timeline, b.timeline)
    assert a.config == b.config


def test_second_replay_is_served_and_equal(on):
    first = replay(_trace(), CFG, sample_every_ns=500_000)
    assert cache.stats() == {"hits": 0, "misses": 1, "stores": 1}
    second = replay(_trace(), CFG, sample_every_ns=500_000)
    assert cache.stats()["hits"] == 1
    _same(first, second)
    assert len(list(on.glob("*/*.pkl"))) == 1 and not list(on.glob("*/.tmp-*"))


@pytest.mark.parametrize("change", [
    "one event", "config field", "override", "start_ns", "sample_every_ns",
    "old_blocks_time_ms_at", "source hash", "stream name"])
def test_a_stale_entry_is_never_served(on, monkeypatch, change):
    """Each input of a replay is in its key: change one and the stored entry is not
    served; the fresh result is what a replay without the cache gives."""
    base = dict(sample_every_ns=None, start_ns=None, old_blocks_time_ms_at=None)
    replay(_trace(), CFG, **base)
    assert cache.stats()["misses"] == 1
    trace, cfg, kw, over = _trace(), CFG, dict(base), {}
    if change == "one event":
        trace = _trace(page_shift=7)
    elif change == "config field":
        cfg = CFG.replace(old_blocks_pct=20)
    elif change == "override":
        over = {"old_blocks_time_ms": 0}
    elif change == "start_ns":
        kw["start_ns"] = [5]
    elif change == "sample_every_ns":
        kw["sample_every_ns"] = 10**9
    elif change == "old_blocks_time_ms_at":
        kw["old_blocks_time_ms_at"] = [(1_000_000, 0)]
    elif change == "source hash":
        real = cache.package_hash()
        monkeypatch.setattr(cache, "package_hash", lambda: real[::-1])
    elif change == "stream name":
        trace.name = "other"
    got = replay(trace, cfg, **kw, **over)
    assert cache.stats() == {"hits": 0, "misses": 2, "stores": 2}, change
    monkeypatch.setenv(cache.OFF_ENV_VAR, "1")
    _same(got, replay(trace, cfg, **kw, **over))


def test_package_hash_covers_every_source_file(tmp_path):
    pkg = tmp_path / "bufsim"
    shutil.copytree(Path(bufsim.__file__).parent, pkg,
                    ignore=shutil.ignore_patterns("__pycache__"))
    before = cache.package_hash(pkg)
    assert before == cache.package_hash(pkg) and len(before) == 64
    # a module with no numba in it (numba's cache folder ignores it; this key must not)
    target = pkg / "results.py"
    assert b"numba" not in target.read_bytes()
    target.write_text(target.read_text() + "\n# edited\n")
    cache.package_hash.cache_clear()
    assert cache.package_hash(pkg) != before


def test_keys_tell_types_and_values_apart():
    d = cache.digest
    keys = {d("n", 1), d("n", 1.0), d("n", "1"), d("n", np.int32(1)), d("n", True),
            d("n", np.array([1], np.int64)), d("n", np.array([1], np.int32)), d("n", (1,)),
            d("n", [1]), d("m", 1), d("n", None), d("n", range(1))}
    assert len(keys) == 12
    assert d("n", {"a": 1, "b": 2}) == d("n", {"b": 2, "a": 1})
    assert d("n", CFG) == d("n", mysql56(pool_pages=1024, cost=FREE, device=DeviceModel.instant()))
    assert d("n", CFG) != d("n", CFG.replace(old_blocks_time_ms=999))
    assert d("n", TS) != d("n", Tablespaces.single(3001))
    with pytest.raises(cache.Uncacheable):
        d("n", object())


def test_generated_trace_without_a_key_is_replayed_not_cached(on):
    src = _trace()
    lazy = Trace(lambda: iter(src), TS)
    _same(replay(lazy, CFG), replay(lazy, CFG))
    assert cache.stats() == {"hits": 0, "misses": 0, "stores": 0}
    lazy.cache_key = ("test", 1)
    replay(lazy, CFG)
    replay(lazy, CFG)
    assert cache.stats() == {"hits": 1, "misses": 1, "stores": 1}
    lazy.cache_key = ("test", 2)        # other generator parameters: another entry
    replay(lazy, CFG)
    assert cache.stats()["misses"] == 2


def test_off_reads_and_writes_nothing(on, monkeypatch):
    monkeypatch.setenv(cache.OFF_ENV_VAR, "1")
    replay(_trace(), CFG)
    assert cache.cached(cache.digest("x", 1), lambda: 5) == 5
    assert not on.exists() and cache.stats() == {"hits": 0, "misses": 0, "stores": 0}


def test_folder_is_bounded_least_recently_used_first(on, monkeypatch):
    payload = b"x" * 10_000
    keys = [cache.digest("bound", k) for k in range(5)]
    for j, k in enumerate(keys):
        cache.store(k, payload)
        os.utime(cache._entry(k), (1_000_000 + j, 1_000_000 + j))
    assert cache.load(keys[0]) == payload            # a hit: keys[0] is now the newest
    size = cache._entry(keys[0]).stat().st_size
    monkeypatch.setenv(cache.BYTES_ENV_VAR, str(3 * size))
    cache.prune()
    left = {k for k in keys if cache._entry(k).exists()}
    assert left == {keys[0], keys[3], keys[4]}
    monkeypatch.setenv(cache.BYTES_ENV_VAR, "-1")
    with pytest.raises(ValueError, match="BUFSIM_CACHE_BYTES"):
        cache.max_bytes()
    assert cache.clear() == 3 and not list(on.glob("*/*.pkl"))


def test_a_store_prunes_once_the_bound_would_be_passed_without_listing_each_time(on, monkeypatch):
    """store() keeps the folder within the bound: it lists the folder at its first store and
    when the total it knows of would pass the bound (or every SCAN_EVERY stores), not at
    every store (a listing per store made a notebook's stores quadratic)."""
    payload = b"y" * 10_000
    keys = [cache.digest("scan", k) for k in range(6)]
    cache.store(keys[0], payload)
    size = cache._entry(keys[0]).stat().st_size
    monkeypatch.setenv(cache.BYTES_ENV_VAR, str(3 * size))
    scans = []
    real = cache._entries
    monkeypatch.setattr(cache, "_entries", lambda: scans.append(1) or real())
    for j, k in enumerate(keys[1:], start=1):
        cache.store(k, payload)
        os.utime(cache._entry(k), (2_000_000 + j, 2_000_000 + j))
    left = [k for k in keys if cache._entry(k).exists()]
    assert len(left) <= 3 and keys[-1] in left          # bounded, the newest kept
    assert 0 < len(scans) < len(keys) - 1, scans         # scanned, but not at every store


def test_an_unreadable_entry_is_a_miss(on):
    k = cache.digest("broken", 1)
    cache.store(k, 1)
    cache._entry(k).write_bytes(b"not a pickle")
    assert cache.cached(k, lambda: 2) == 2
    assert cache.load(k) == 2


def test_cli_no_cache_sets_the_switch_for_the_kernels(monkeypatch):
    from bufsim import cli
    monkeypatch.delenv(cache.OFF_ENV_VAR, raising=False)
    with cli._cache_switch(True):
        assert os.environ[cache.OFF_ENV_VAR] == "1" and not cache.enabled()
    assert cache.OFF_ENV_VAR not in os.environ and cache.enabled()
    with cli._cache_switch(False):
        assert cache.enabled()


def test_run_ssb_replays_only_the_configurations_it_has_not_seen(on, monkeypatch):
    """notebook 01's driver: one entry per configuration; a rerun with one configuration
    changed replays that one alone, and every frame equals a run without the cache."""
    from bufsim.experiments import ssb as X
    from bufsim.workloads.ssb import SSB

    ssb = SSB(0.01, seed=1)
    calib = X.Calibration()
    cfg = {f"t={t}": X.pool_config(X.CONFIGS[1], calib, scale=0.01, old_blocks_time_ms=t)
           for t in (0, 1000)}
    kw = dict(runs=("a", "b"), queries=("Q1.1", "Q2.1"))
    monkeypatch.setenv(cache.OFF_ENV_VAR, "1")
    plain = X.run_ssb(ssb, cfg, calib, **kw)
    monkeypatch.delenv(cache.OFF_ENV_VAR)
    first = X.run_ssb(ssb, cfg, calib, **kw)
    pd.testing.assert_frame_equal(first, plain)
    # two runs: each configuration's entry, and the entry of its first run alone
    assert cache.stats() == {"hits": 0, "misses": 2, "stores": 4}
    fed = []
    real_feed = bufsim.Pool.feed
    monkeypatch.setattr(bufsim.Pool, "feed", lambda self, c: fed.append(self) or real_feed(self, c))
    changed = {"t=0": cfg["t=0"], "t=5": cfg["t=0"].replace(old_blocks_time_ms=5),
               "t=1000": cfg["t=1000"]}
    second = X.run_ssb(ssb, changed, calib, **kw)
    assert cache.stats() == {"hits": 2, "misses": 3, "stores": 6}
    assert len({id(p) for p in fed}) == 1          # one pool replayed: t=5's
    monkeypatch.setenv(cache.OFF_ENV_VAR, "1")
    pd.testing.assert_frame_equal(second, X.run_ssb(ssb, changed, calib, **kw))
    # one run under another label: the first run of the two-run entries, relabelled;
    # a configuration given twice in one call replays once
    one = dict(runs=("pass",), queries=kw["queries"])
    alone = {"t=0": cfg["t=0"], "again": cfg["t=0"], "t=7": cfg["t=0"].replace(old_blocks_time_ms=7)}
    plain1 = X.run_ssb(ssb, alone, calib, **one)
    monkeypatch.delenv(cache.OFF_ENV_VAR)
    fed.clear()
    pd.testing.assert_frame_equal(X.run_ssb(ssb, alone, calib, **one), plain1)
    assert cache.stats() == {"hits": 3, "misses": 4, "stores": 7}
    assert len({id(p) for p in fed}) == 1          # t=7's pool alone
    assert list(plain1["run"].unique()) == ["pass"]
    # another seed is another trace: nothing served
    X.run_ssb(SSB(0.01, seed=2), {"t=0": cfg["t=0"]}, calib, **kw)
    assert cache.stats()["hits"] == 3


def test_q11_run_is_served_only_for_the_same_inputs(on):
    from bufsim.experiments import ssb as X
    from bufsim.workloads.ssb import SSB

    ssb = SSB(0.01, seed=1)
    calib = X.Calibration()
    a = X.q11_run(ssb, "scan", 1000, calib, pool_pages=2000)
    assert X.q11_run(ssb, "scan", 1000, calib, pool_pages=2000) == a
    assert cache.stats()["hits"] == 1
    X.q11_run(ssb, "scan", 1000, X.Calibration(get_ns=1001), pool_pages=2000)
    X.q11_run(ssb, "scan", 999, calib, pool_pages=2000)
    X.q11_run(ssb, "scan", 1000, calib, pool_pages=2001)
    assert cache.stats() == {"hits": 1, "misses": 4, "stores": 4}


def test_synthetic_traces_are_keyed_by_every_generator_argument(on):
    """A replay of a generated synthetic trace is served the second time; any other
    generator argument is another entry (and the served result is the replayed one)."""
    from bufsim import synthetic
    cfg = mysql56(pool_pages=400, cost=FREE, device=DeviceModel.instant())

    def make(**kw):
        base = dict(n_gets_hot=3000, hot_pages=600, alpha=0.9, scan_pages=900, scan_every=1000,
                    seed=5, cpu_ns=100)
        return synthetic.hot_and_scan_trace(**{**base, **kw})
    first = replay(make(), cfg)
    assert cache.stats() == {"hits": 0, "misses": 1, "stores": 1}
    _same(first, replay(make(), cfg))
    assert cache.stats()["hits"] == 1
    for kw in ({"seed": 6}, {"alpha": 0.8}, {"scan_every": 999}, {"cpu_ns": 101},
               {"scan_cpu_ns": 7}, {"scan_gets_per_page": 2}, {"scan_stream": 1},
               {"shuffle_ranks": False}):
        other = replay(make(**kw), cfg)
        assert cache.stats()["hits"] == 1, kw
    # the last one (ranks not shuffled) replayed, not served: its counters differ
    assert other.totals["NUMBER_PAGES_READ"] != first.totals["NUMBER_PAGES_READ"]
    z = [synthetic.zipf_trace(2000, 500, 0.9, seed=s) for s in (1, 1, 2)]
    u = synthetic.uniform_trace(2000, 500, seed=1)
    sc = [synthetic.scan_trace(700, first_page=f, tablespaces=Tablespaces.single(900))
          for f in (0, 0, 1)]
    hits = cache.stats()["hits"]
    got = [replay(t, cfg).totals for t in (*z, u, *sc)]
    assert cache.stats()["hits"] == hits + 2          # z[1] and sc[1] only
    assert got[0].equals(got[1]) and not got[0].equals(got[2]) and not got[0].equals(got[3])


def test_side_load_runs_are_served_for_the_same_arguments_only(on):
    """Notebook 02's replays (SideLoad.run and the sysbench-alone rate) go through the
    cache, keyed by the SideLoad and every argument."""
    from bufsim.experiments.side_load import SideLoad
    side = SideLoad(scale=64)        # a 512-page pool
    # 2 virtual seconds of sysbench, the dump from 1 s, the setting from the start: 0.8 s of
    # CPU a run (5.2 s with the defaults' 18.75 s of sysbench); these are arguments of the key too
    kw = dict(query_ns=3_000_000, device=DeviceModel.hdd7200(), sysbench_s=2.0, dump_at_s=1.0,
              switch_at_s=0.0)
    first = side.run(1000, **kw)
    assert cache.stats() == {"hits": 0, "misses": 1, "stores": 1}
    again = side.run(1000, **kw)
    assert cache.stats()["hits"] == 1
    assert again.dump_seconds == first.dump_seconds
    _same(first.result, again.result)
    other = side.run(0, **kw)      # another old_blocks_time
    slower = side.run(1000, **kw, dump_row_ns=20_000)
    longer = side.run(1000, **{**kw, "sysbench_s": 3.0})
    assert cache.stats()["hits"] == 1
    # replayed, not served: "not made young" is counted only while old_blocks_time > 0
    assert other.result.totals["PAGES_NOT_MADE_YOUNG"] == 0
    assert first.result.totals["PAGES_NOT_MADE_YOUNG"] > 0
    assert slower.dump_seconds > first.dump_seconds
    assert longer.result.totals["NUMBER_PAGES_GET"] > first.result.totals["NUMBER_PAGES_GET"]
    assert SideLoad(scale=64, seed=2).run(1000, **kw) is not None
    assert cache.stats()["hits"] == 1
    rate = side.sysbench_alone_rate(3_000_000)
    assert side.sysbench_alone_rate(3_000_000) == rate and cache.stats()["hits"] == 2


def test_log_names_each_hit_miss_and_store_with_its_namespace(on, tmp_path, monkeypatch):
    log = tmp_path / "cache.log"
    monkeypatch.setenv(cache.LOG_ENV_VAR, str(log))
    replay(_trace(), CFG)
    replay(_trace(), CFG)
    cache.cached(cache.digest("test.ns", 1), lambda: 2)
    lines = [tuple(x.split("\t")) for x in log.read_text().splitlines()]
    pid = str(os.getpid())
    assert lines == [("miss", "replay", pid), ("store", "replay", pid), ("hit", "replay", pid),
                     ("miss", "test.ns", pid), ("store", "test.ns", pid)]
    monkeypatch.delenv(cache.LOG_ENV_VAR)
    replay(_trace(), CFG)                   # not set: nothing appended
    assert len(log.read_text().splitlines()) == 5
