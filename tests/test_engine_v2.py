"""Engine v2 (issue 14): memory by distinct pages, events split across kernel calls,
Ctrl-C, the int64 clock, FLAG_RELATCH, and the two page maps agreeing."""
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from numba import njit

import bufsim
from bufsim import _pool_state
from bufsim.config import CostModel, DeviceModel, PoolConfig
from bufsim._pool_state import PoolState
from bufsim.pages import SpaceSpec, Tablespaces
from bufsim.policies._state import (
    G_AREA, N_G, T_GETS, dense_of, is_edge, leaf_links, page_no, prefetch, space_pos,
)
from bufsim.policies.innodb import instance_of
from bufsim.reference import ReferencePool
from bufsim.trace import FLAG_AHI, FLAG_MASK, FLAG_MODIFY, FLAG_RELATCH, Chunk, Trace

FREE = CostModel(0, 0, 0, 0)
SPACES = Tablespaces([SpaceSpec(1, 640, "t1"), SpaceSpec(2, 512, "t2"), SpaceSpec(7, 200, "t3")])


def _totals(res):
    return (res.totals.to_dict(), res.streams.drop(columns=["name"]).to_dict("list"),
            res.contents.to_dict("list"), res.device_busy_ns, res.cleaner_passes)


# ---- memory follows the pages a trace touches ---------------------------------------------
def test_sparse_page_numbers_replay_in_little_memory(child_env):
    """Pages {0, 2**31-1} of two spaces with ids 0 and 4_294_967_279: the replay's peak
    RSS grows by less than 200 MB (the page-major engine asked for 144 GiB)."""
    code = textwrap.dedent("""
        import resource, sys
        import bufsim
        from bufsim import Chunk, SpaceSpec, Tablespaces, Trace
        cfg = bufsim.mysql56(pool_pages=8192, device="ssd")
        small = Tablespaces([SpaceSpec(0, 100, "a"), SpaceSpec(4_294_967_279, 100, "b")])
        bufsim.replay(Trace([Chunk.from_arrays([0, 99, 100, 199], 1, 1000, 0, 0)], small), cfg)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        ts = Tablespaces([SpaceSpec(0, 2**31, "a"), SpaceSpec(4_294_967_279, 2**31, "b")])
        page = ts.dense([0, 0, 4_294_967_279, 4_294_967_279, 0],
                        [0, 2**31 - 1, 0, 2**31 - 1, 0])
        res = bufsim.replay(Trace([Chunk.from_arrays(page, 3, 1000, 0, 0)], ts), cfg)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert int(res.totals["NUMBER_PAGES_GET"]) == 15, res.totals
        assert int(res.totals["NUMBER_PAGES_READ"]) == 4, res.totals
        print(before, after)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=child_env, timeout=600)
    assert out.returncode == 0, out.stderr
    before, after = (int(x) for x in out.stdout.split())
    grown_mb = (after - before) / 1024  # ru_maxrss is in KiB on Linux
    print(f"peak RSS {before / 1024:.0f} MB after import and warm-up, {after / 1024:.0f} MB "
          f"after the sparse replay (+{grown_mb:.1f} MB)")
    assert grown_mb < 200


def test_group_of_by_array_equals_the_search(monkeypatch):
    """Small tablespaces: group_of reads the per-page group array; it gives every page the
    group the index-list search gives (the path of tablespaces too large for the array)."""
    import bufsim.pages as P
    ts = Tablespaces([SpaceSpec(3, 500, "a", indexes=(bufsim.IndexSpec("PRIMARY", range(10, 200)),
                                                      bufsim.IndexSpec("k", [499, 0, 250]))),
                      SpaceSpec(7, 40, "b"),
                      SpaceSpec(9, 300, "t", indexes=(bufsim.IndexSpec("PRIMARY", range(0, 100)),))])
    d = np.random.default_rng(1).permutation(ts.n_pages)
    by_array = ts.group_of(d)
    assert "groups" in ts._cache
    monkeypatch.setattr(P, "GROUP_ARRAY_PAGES", 0)
    by_search = ts.group_of(d)
    assert by_array.tolist() == by_search.tolist()
    assert sorted(set(by_array.tolist())) == list(range(ts.n_groups))


def test_tablespaces_lookups_need_no_per_page_arrays():
    ts = Tablespaces([SpaceSpec(0, 2**32, "big", indexes=(bufsim.IndexSpec("k", [2**32 - 1, 7]),)),
                      SpaceSpec(9, 300, "t", indexes=(bufsim.IndexSpec("PRIMARY", range(0, 100)),))])
    d = ts.dense([0, 9, 9, 0], [2**32 - 1, 50, 200, 8])
    assert ts.group_of(d).tolist() == [0, 2, 3, 1]
    assert ts.group_names == ["big.k", "big", "t.PRIMARY", "t"]
    assert ts.group_sizes.tolist() == [2, 2**32 - 2, 100, 200]
    prev, nxt = ts.leaf_links_of(d)
    assert prev.tolist() == [d[0] - 1, d[1] - 1, d[2] - 1, d[3] - 1]
    assert nxt.tolist() == [-1, d[1] + 1, d[2] + 1, d[3] + 1]
    assert "page_group" not in ts._cache and "links" not in ts._cache


# ---- one event split across kernel calls ------------------------------------------------------
def _mixed_trace(seed=3):
    rng = np.random.default_rng(seed)
    n = 400
    page = rng.integers(0, SPACES.n_pages, n)
    page[100:164] = np.arange(64, 128)  # a scan: read-ahead
    count = rng.integers(1, 40, n)
    count[7] = 5000
    cpu = rng.integers(0, 200_000, n)
    flags = rng.choice([0, FLAG_AHI, FLAG_MODIFY, FLAG_RELATCH], n).astype(np.uint8)
    return page, count, cpu, flags


@pytest.mark.parametrize("policy", ["innodb", "lru", "two_q"])
def test_events_split_across_calls_give_the_same_result(monkeypatch, policy):
    page, count, cpu, flags = _mixed_trace()
    half = len(page) // 2
    traces = [Trace([Chunk.from_arrays(page[:half], count[:half], cpu[:half], 0, flags[:half])], SPACES),
              Trace([Chunk.from_arrays(page[half:], count[half:], cpu[half:], 0, flags[half:])], SPACES)]
    cfg = PoolConfig(policy=policy, pool_pages=320, device=DeviceModel.ssd())
    for traces_ in (traces[:1], traces):
        whole = bufsim.replay(traces_, cfg, sample_every_ns=50_000_000)
        monkeypatch.setattr(_pool_state, "GETS_PER_CALL", 7)
        split = bufsim.replay(traces_, cfg, sample_every_ns=50_000_000)
        monkeypatch.setattr(_pool_state, "GETS_PER_CALL", 2_000_000)
        assert _totals(split) == _totals(whole)
        assert split.timeline.equals(whole.timeline)
        assert int(whole.totals["NUMBER_PAGES_GET"]) > 0
    # the kernels never write the trace's arrays (a cut event's rest is kept in glob)
    assert np.array_equal(traces[0].materialize().count, count[:half])
    assert np.array_equal(traces[1].materialize().count, count[half:])


@njit
def _facts(stat, pm, cfg, area, ids):
    """What the kernels read of each page: dense index, space position, page number,
    leaf links, instance and whether it is a read-ahead area's edge."""
    out = np.zeros((ids.shape[0], 7), dtype=np.int64)
    glob = np.zeros(N_G, dtype=np.int64)
    glob[G_AREA] = area
    for j in range(ids.shape[0]):
        p = ids[j]
        out[j, 0] = dense_of(stat, p)
        out[j, 1] = space_pos(stat, pm, p)
        out[j, 2] = page_no(stat, pm, p)
        out[j, 3], out[j, 4] = leaf_links(stat, pm, p)
        out[j, 5] = instance_of(stat, cfg, p)
        out[j, 6] = is_edge(stat, pm, glob, p)
    return out


@pytest.mark.parametrize("dense_keys", [True, False])
def test_pages_carry_the_tablespaces_facts(monkeypatch, dense_keys):
    """Every page the replay met (trace pages and read-ahead pages, registered inside
    the kernel when ids are local) has the space, page number, instance, leaf links
    and area edge that :class:`bufsim.Tablespaces` gives, custom leaf links included,
    whether the kernels read them from ``stat`` (local ids) or compute them (dense
    keys)."""
    if not dense_keys:
        monkeypatch.setattr(_pool_state, "DENSE_MAP_MAX_PAGES", 0)
    n = 256
    order = np.random.default_rng(3).permutation(n)  # a B-tree whose leaves are shuffled
    prev = np.full(n, -1)
    nxt = np.full(n, -1)
    prev[order[1:]] = order[:-1]
    nxt[order[:-1]] = order[1:]
    ts = Tablespaces([SpaceSpec(5, 300, "a"), SpaceSpec(9, n, "b", leaf_links=(prev, nxt))])
    page = np.r_[np.arange(0, 300, 7), 300 + order, 300 + np.arange(n)]
    cfg = bufsim.mysql56(pool_pages=2000, device="ssd", instances=3, read_ahead_threshold=8)
    state = PoolState(cfg, ts)
    assert state.dense_keys == dense_keys
    state.feed(0, Chunk.from_arrays(page, 1, 1000))
    state.close(0)
    assert state.run() == 0
    m = state.distinct_pages
    assert m > len(np.unique(page)) - 1 and int(state.cnt[:, 2].sum()) > 0  # read-ahead met more
    ids = np.flatnonzero(state.fmap != -2) if dense_keys else np.arange(m)
    assert len(ids) == m
    area = int(state.glob[G_AREA])
    assert area == 32  # the read-ahead area of a 666-page instance
    f = _facts(state.stat, state._pm, state.cfg, area, ids)
    d = f[:, 0]
    assert sorted(d.tolist()) == sorted(set(d.tolist()))
    lp, ln = ts.leaf_links_of(d)
    assert np.array_equal(f[:, 3], lp) and np.array_equal(f[:, 4], ln)
    sp = np.searchsorted(ts.space_base, d, side="right") - 1
    assert np.array_equal(f[:, 1], sp)
    pn = d - np.asarray(ts.space_base)[sp]
    assert np.array_equal(f[:, 2], pn)
    assert np.array_equal(f[:, 5], ts.instance_of(3)[d])
    assert np.array_equal(f[:, 6], (pn % area == 0) | (pn % area == area - 1))


def test_hash_page_map_equals_dense_page_map(monkeypatch):
    page, count, cpu, flags = _mixed_trace(5)
    tr = Trace([Chunk.from_arrays(page, count, cpu, 0, flags)], SPACES)
    cfg = bufsim.mysql56(pool_pages=320, device="ssd", instances=1)
    dense = bufsim.replay(tr, cfg)
    monkeypatch.setattr(_pool_state, "DENSE_MAP_MAX_PAGES", 0)
    hashed = bufsim.replay(tr, cfg)
    assert _totals(hashed) == _totals(dense)
    assert int(dense.totals["NUMBER_PAGES_READ_AHEAD"]) > 0


# ---- Ctrl-C ----------------------------------------------------------------------------------
def test_ctrl_c_stops_a_replay(child_env):
    """SIGINT stops a replay of 2e13 gets (the wait is printed, not asserted: no test
    asserts a time, and a loaded CI machine may be slow)."""
    code = textwrap.dedent("""
        import signal
        import bufsim
        from bufsim import Chunk, Trace
        # as in an interactive session, even where the test runner was started with
        # SIGINT ignored (a background job of a non-interactive shell passes SIG_IGN on)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        cfg = bufsim.mysql56(pool_pages=1000)
        ts = bufsim.Tablespaces.single(1000)
        bufsim.replay(Trace([Chunk.from_arrays([1, 2], 10, 10, 0, 0)], ts), cfg)
        print("ready", flush=True)
        bufsim.replay(Trace([Chunk.from_arrays([1, 2], 10**13, 10, 0, 0)], ts), cfg)
        print("finished", flush=True)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=child_env)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        p.wait(timeout=30)
        waited = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
    err = p.stderr.read()
    print(f"exited {waited:.2f} s after SIGINT")
    assert "KeyboardInterrupt: replay interrupted after" in err, err
    assert "finished" not in p.stdout.read()


# ---- the int64 virtual clock ---------------------------------------------------------------
def test_clock_overflow_is_an_error_naming_the_field():
    ts = Tablespaces.single(100)
    tr = Trace([Chunk.from_arrays([1, 2, 3], 1, 1_000, 0, 0)], ts)
    with pytest.raises(ValueError, match="start_ns"):
        bufsim.replay(tr, "mysql56", start_ns=[2**63 - 2_000])
    with pytest.raises(ValueError, match="start_ns"):
        bufsim.replay(tr, "mysql56", start_ns=[2**63])
    big = Trace([Chunk.from_arrays([1, 2, 3], 1, 2**62, 0, 0)], ts)
    with pytest.raises(ValueError, match="cpu_ns|start_ns"):
        bufsim.replay(big, "mysql56", start_ns=[2**62])
    with pytest.raises(ValueError, match="cpu_ns"):
        bufsim.replay(big, PoolConfig(policy="lru"), start_ns=[2**62 + 5])
    # each cpu_ns passes the feed's check and their sum wraps: the kernels' own check, here
    # on the LRU fast path's misses ([1, 2, 3]) and its stretch of hits ([1, 1, 1])
    for pages in ([1, 2, 3], [1, 1, 1]):
        wrap = Trace([Chunk.from_arrays(pages, 1, 2**61, 0, 0)], ts)
        with pytest.raises(ValueError, match="overflowed int64"):
            bufsim.replay(wrap, PoolConfig(policy="lru", pool_pages=64), start_ns=[2**62 - 10])
    # just below the edge is fine
    ok = bufsim.replay(tr, bufsim.mysql56(device="instant", cost=FREE), start_ns=[2**63 - 10_000])
    assert int(ok.streams["end_ns"].iloc[0]) == 2**63 - 10_000 + 3_000


@pytest.mark.parametrize("policy", ["lru", "innodb"])
def test_feed_checks_pages_and_cpu_before_any_work(policy):
    """A Trace checks its chunks against its tablespaces; PoolState.feed checks again
    (with span(), one pass) since the kernels index by page without bounds checks."""
    from bufsim._pool_state import PoolState
    ts = Tablespaces.single(100)
    state = PoolState(PoolConfig(policy=policy, pool_pages=320), ts, start_ns=[2**62])
    with pytest.raises(ValueError, match=r"'page' row 1: page index 100 .*allowed 0\.\.99"):
        state.feed(0, Chunk.from_arrays([4, 100, 5]))
    with pytest.raises(ValueError, match=r"'cpu_ns' row 2 = 4611686018427387904 would overflow"):
        state.feed(0, Chunk.from_arrays([4, 5, 6], cpu_ns=[0, 2**62 - 1, 2**62]))
    from bufsim.policies._state import T_END
    assert int(state.sst[0, T_END]) == 0  # nothing was queued
    state.feed(0, Chunk.from_arrays([4, 99, 5], cpu_ns=[0, 2**62 - 1, 7]))
    assert int(state.sst[0, T_END]) == 3


# ---- FLAG_RELATCH: checked, not counted -------------------------------------------------------
def test_flag_relatch_value_and_mask():
    assert FLAG_RELATCH == 16 and FLAG_MASK & FLAG_RELATCH
    assert bufsim.FLAG_RELATCH == 16


@pytest.mark.parametrize("config", [
    bufsim.mysql56(pool_pages=320, device="ssd", instances=1),
    bufsim.mysql55(pool_pages=640, device="hdd7200", instances=2),
    PoolConfig(policy="lru", pool_pages=200, device=DeviceModel.ssd()),
    PoolConfig(policy="arc", pool_pages=200, device=DeviceModel.ssd()),
])
def test_relatch_against_the_reference(config):
    rng = np.random.default_rng(11)
    n = 300
    ev = [(int(rng.integers(0, SPACES.n_pages)), int(rng.integers(1, 4)),
           int(rng.integers(0, 3_000_000)),
           int(rng.choice([0, FLAG_RELATCH, FLAG_RELATCH | FLAG_AHI, FLAG_MODIFY])))
          for _ in range(n)]
    state = PoolState(config, SPACES, 1)
    page, count, cpu, flags = (np.array(x, dtype=np.int64) for x in zip(*ev))
    state.feed(0, Chunk.from_arrays(page, count, cpu, 0, flags.astype(np.uint8)))
    state.close(0)
    ref = ReferencePool(config, SPACES, [ev])
    k = 0
    while ref.step():
        k += 1
        assert state.run(max_events=1) in (0, -2)
        np.testing.assert_array_equal(state.cnt, ref.counters(), err_msg=f"event {k}")
    relatched = sum(c for _, c, _, f in ev if f & FLAG_RELATCH)
    assert int(state.sst[0, T_GETS]) == sum(c for _, c, _, _ in ev) - relatched
    assert relatched > 0
    for i in range(config.instances):
        assert state.lru(i) == ref.lists(i)[0]


@njit(cache=False)
def _gather_with_prefetch(table, idx):
    total = 0
    for e in range(idx.shape[0]):
        if e + 4 < idx.shape[0]:
            prefetch(table, idx[e + 4])
        total += table[idx[e]]
    return total


def test_prefetch_is_a_hint_only():
    """The fast loops' prefetch emits llvm.prefetch when compiled and changes no value;
    in plain Python (py_func, NUMBA_DISABLE_JIT) it does nothing."""
    table = np.arange(1000, dtype=np.int32) * 3
    idx = np.random.default_rng(0).integers(0, 1000, 500)
    assert _gather_with_prefetch(table, idx) == int(table[idx].sum())
    assert _gather_with_prefetch.py_func(table, idx) == int(table[idx].sum())
    assert prefetch(table, 5) is None
    ir = next(iter(_gather_with_prefetch.inspect_llvm().values()))
    assert "llvm.prefetch" in ir


def test_a_kernels_first_call_holds_the_compile_lock(tmp_path, monkeypatch):
    """The first call of a kernel in a process (the one that compiles it or loads it from
    NUMBA_CACHE_DIR) holds that folder's lock file for the kernel, so that a second
    process waits and loads instead of compiling again; once the kernel has a signature
    in this process, calls take no lock."""
    fcntl = pytest.importorskip("fcntl")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    seen = []

    class Kernel:                      # a dispatcher's two attributes first_call reads
        __name__ = "_run_fake"
        signatures: list = []

        def __call__(self):
            lock = f".compile-{__name__}._run_fake.lock"     # the kernel's module and name
            with open(tmp_path / "numba" / lock, "a") as other:
                try:
                    fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    seen.append("free")
                except BlockingIOError:
                    seen.append("held")
            self.signatures.append("(int64,)")     # compiled now

    k = Kernel()
    for _ in range(2):
        with _pool_state.first_call(k):
            k()
    assert seen == ["held", "free"]
    plain = Kernel.__call__.__get__(Kernel())     # NUMBA_DISABLE_JIT: a plain function
    with _pool_state.first_call(plain):
        plain()
    assert seen == ["held", "free", "free"]


def test_gets_per_tablespace_when_one_chunk_feeds_several_pools(monkeypatch):
    """A chunk fed to several pools (run_ssb) keeps its gets per tablespace for the next
    pool over the same tablespaces; a pool over other tablespaces counts its own."""
    from bufsim.trace import FLAG_RELATCH
    monkeypatch.setenv(bufsim.cache.OFF_ENV_VAR, "1")
    rng = np.random.default_rng(11)
    page = rng.integers(0, 1200, 6000)
    count = rng.integers(1, 4, 6000)
    flags = np.where(rng.random(6000) < 0.2, FLAG_RELATCH, 0).astype(np.uint8)
    chunks = [bufsim.Chunk.from_arrays(page[i:i + 1000], count[i:i + 1000], 100, 0,
                                       flags[i:i + 1000]) for i in range(0, 6000, 1000)]
    ts_a = bufsim.Tablespaces([bufsim.SpaceSpec(1, 400, "a"), bufsim.SpaceSpec(2, 800, "b")])
    ts_b = bufsim.Tablespaces([bufsim.SpaceSpec(1, 1000, "a"), bufsim.SpaceSpec(2, 200, "b")])
    counted = np.where(flags & FLAG_RELATCH, 0, count)
    for ts, cut in ((ts_a, 400), (ts_a, 400), (ts_b, 1000)):   # ts_a's memo, then ts_b
        for pool_pages in (400, 700):
            res = bufsim.replay(bufsim.Trace(chunks, ts), bufsim.mysql56(pool_pages=pool_pages))
            got = res.spaces.set_index("name").gets
            assert got["a"] == counted[page < cut].sum() and got["b"] == counted[page >= cut].sum()
