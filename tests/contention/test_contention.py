"""Per-instance mutex demand: hand-computed counts, version rules, validation, networks."""
import numpy as np
import pandas as pd
import pytest

from bufsim import FLAG_AHI, SpaceSpec, Tablespaces, Trace, replay
from bufsim.contention import (
    ContentionDemand, HoldTimes, Network, instance_demand, network,
)

# space 0: 256 pages = areas 0..3; space 5: 128 pages = areas 0..1 (dense 256..383)
# instance = fold(space, page_no >> 6) mod N, fold(s, x) = (s << 20) + s + x:
#   space 0: x mod N;  space 5: (5 * 2**20 + 5 + x) mod N = (5 + x) mod N for N | 2**20
TS = Tablespaces([SpaceSpec(0, 256, "a"), SpaceSpec(5, 128, "b")])
PAGES = [3, 70, 200, 256 + 5, 256 + 100]       # areas: (0,0) (0,1) (0,3) (5,0) (5,1)
GETS = [10, 4, 2, 7, 1]
AHI = [6, 0, 0, 0, 0]
MISSES = [1, 0, 0, 2, 0]
MOVES = [0, 3, 1, 0, 0]
HOLD = HoldTimes(get_ns=100, move_ns=200, miss_ns=1000, ahi_ns=50, kernel_ns=1000,
                 cpu_ns=20_000)


def vec(values):
    v = np.zeros(TS.n_pages, dtype=np.int64)
    v[PAGES] = values
    return v


# per instance, by hand from the table above: gets, then (acquisitions, hold ns) by version
EXPECTED = {
    1: dict(gets=[24],
            v55=([25], [5600]),                 # (24-6) gets + 4 moves + 3 misses
            v56=([7], [3800])),                 # 4 moves + 3 misses
    4: dict(gets=[10, 11, 1, 2],                # page 70 and (5, area 0) share instance 1
            v55=([5, 16, 1, 3], [1400, 3700, 100, 400]),
            v56=([1, 5, 0, 1], [1000, 2600, 0, 200])),
    16: dict(gets=[10, 4, 0, 2, 0, 7, 1] + [0] * 9,
             v55=([5, 7, 0, 3, 0, 9, 1] + [0] * 9, [1400, 1000, 0, 400, 0, 2700, 100] + [0] * 9),
             v56=([1, 3, 0, 1, 0, 2, 0] + [0] * 9, [1000, 600, 0, 200, 0, 2000, 0] + [0] * 9)),
}


@pytest.mark.parametrize("n", [1, 4, 16])
@pytest.mark.parametrize("version", ["5.5", "5.6", "5.7"])
def test_hand_computed_counts(n, version):
    d = instance_demand(vec(GETS), TS, n, version=version, hold=HOLD, n_transactions=2,
                        misses=vec(MISSES), moves=vec(MOVES), ahi_lookups=vec(AHI))
    exp = EXPECTED[n]
    acq, hold_ns = exp["v55"] if version == "5.5" else exp["v56"]
    assert d.gets.tolist() == exp["gets"]
    assert d.acquisitions.tolist() == acq
    np.testing.assert_allclose(d.pool_demand, np.array(hold_ns) / 2 / 1e9, rtol=1e-12)
    assert d.misses.sum() == 3 and d.moves.sum() == 4 and d.ahi_lookups.sum() == 6
    assert d.hottest == int(np.argmax(hold_ns))
    # global latches: AHI 6 lookups x 50 ns over 2 transactions; kernel 1000 ns per transaction
    ahi = d.latch_demand[:-1]
    assert ahi.sum() == pytest.approx(6 * 50 / 2 / 1e9)
    assert d.latch_demand[-1] == pytest.approx(1e-6) and d.latch_names[-1] == "kernel"
    assert d.cpu_demand == pytest.approx(2e-5)
    if version == "5.7":                        # 8 parts; space "a" is group 0 -> part 0
        assert d.latch_names[:-1] == tuple(f"ahi[{p}]" for p in range(8))
        assert d.latch_acquisitions[:-1].tolist() == [6, 0, 0, 0, 0, 0, 0, 0]
    else:
        assert d.latch_names == ("ahi", "kernel") and d.latch_acquisitions.tolist() == [6, 2]


def test_optimistic_gets_take_no_pool_mutex_in_55():
    """buf_page_optimistic_get (a cursor restore) takes the block mutex only: in 5.5 the
    optimistic gets leave the pool mutex's count, AHI on or off; 5.6 is unchanged."""
    opt = vec([2, 3, 0, 7, 0])       # page 3: 10 gets, 6 AHI, 2 optimistic; page 70: 3 of 4
    kw = dict(hold=HOLD, misses=vec(MISSES), moves=vec(MOVES), ahi_lookups=vec(AHI))
    base = instance_demand(vec(GETS), TS, 4, version="5.5", **kw)
    d = instance_demand(vec(GETS), TS, 4, version="5.5", optimistic=opt, **kw)
    # instance 0: page 3 (-2); instance 1: page 70 (-3) and dense 261 (-7)
    assert (base.acquisitions - d.acquisitions).tolist() == [2, 10, 0, 0]
    np.testing.assert_allclose(base.pool_demand - d.pool_demand,
                               np.array([2, 10, 0, 0]) * 100 / 1e9)
    assert d.gets.tolist() == base.gets.tolist()          # still page gets
    off = instance_demand(vec(GETS), TS, 4, version="5.5", optimistic=opt,
                          adaptive_hash_index=False, **kw)
    assert off.acquisitions[0] - d.acquisitions[0] == 6   # the AHI lookups, not the restores
    v56 = [instance_demand(vec(GETS), TS, 4, version="5.6", optimistic=o, **kw).acquisitions
           for o in (None, opt)]
    assert v56[0].tolist() == v56[1].tolist()


def test_optimistic_gets_are_checked():
    with pytest.raises(ValueError, match=r"optimistic row 3 = 5 is out of range; allowed: 0\.\.4"):
        instance_demand(vec(GETS), TS, 4, version="5.5", ahi_lookups=vec(AHI),
                        optimistic=vec([5, 0, 0, 0, 0]))
    trace = Trace.from_arrays(np.array([3, 70]), tablespaces=TS)
    with pytest.raises(ValueError, match="a Trace does not mark optimistic gets"):
        instance_demand(trace, n_instances=4, optimistic=vec(GETS))


def test_ahi_off_sends_every_get_through_the_pool_mutex_in_55():
    on = instance_demand(vec(GETS), TS, 4, version="5.5", hold=HOLD, ahi_lookups=vec(AHI))
    off = instance_demand(vec(GETS), TS, 4, version="5.5", hold=HOLD, ahi_lookups=vec(AHI),
                          adaptive_hash_index=False)
    assert off.acquisitions[0] - on.acquisitions[0] == 6
    assert off.latch_acquisitions[0] == 0 and off.ahi_lookups.sum() == 0


def test_hot_first_extent_lands_on_one_instance():
    # index roots and upper levels live in the first 64 pages: instance space_id mod N
    ts = Tablespaces([SpaceSpec(s, 4096) for s in (1, 2, 3, 7)])
    f = np.ones(ts.n_pages, dtype=np.int64)
    f[ts.dense(7, np.arange(64))] += 1000
    for n in (4, 16, 64):
        d = instance_demand(f, ts, n, version="5.5")
        assert d.hottest == 7 % n
        assert d.frame()["share"].max() > 0.5


def _trace(chunk_size):
    """The frequency table as events: runs, AHI flags on 6 gets of page 3, several chunks."""
    page = [3, 70, 3, 261, 200, 3, 356, 261, 70]
    count = [2, 4, 6, 3, 2, 2, 1, 4, 0 + 0 + 0]
    flags = [0, 0, FLAG_AHI, 0, 0, 0, 0, 0, 0]
    page, count, flags = page[:-1], count[:-1], flags[:-1]
    return Trace.from_arrays(page, count, flags=flags, tablespaces=TS, chunk_size=chunk_size)


@pytest.mark.parametrize("chunk_size", [1, 3, 100])
@pytest.mark.parametrize("version", ["5.5", "5.6", "5.7"])
def test_trace_and_frequency_vector_agree(chunk_size, version):
    tr = _trace(chunk_size)
    assert tr.n_gets() == sum(GETS)
    a = instance_demand(tr, None, 4, version=version, hold=HOLD, misses=vec(MISSES),
                        moves=vec(MOVES))
    b = instance_demand(vec(GETS), TS, 4, version=version, hold=HOLD, misses=vec(MISSES),
                        moves=vec(MOVES), ahi_lookups=vec(AHI))
    pd.testing.assert_frame_equal(a.frame(), b.frame())
    np.testing.assert_array_equal(a.latch_acquisitions, b.latch_acquisitions)
    np.testing.assert_array_equal(a.latch_demand, b.latch_demand)


def test_lazy_trace_is_read_chunk_by_chunk():
    chunks = list(_trace(2))
    calls = []

    def gen():
        calls.append(1)
        yield from chunks
    lazy = Trace(gen, TS)
    d = instance_demand(lazy, None, 4, version="5.5", hold=HOLD)
    assert calls == [1] and d.gets.tolist() == EXPECTED[4]["gets"]


def test_replay_counters_as_misses_and_moves():
    rng = np.random.default_rng(1)
    ts = Tablespaces.single(2000, space_id=3)
    tr = Trace.from_arrays(rng.integers(0, 2000, 20_000), tablespaces=ts)
    res = replay(tr, "mysql55", pool_pages=1024, instances=4)
    d = instance_demand(tr, None, 4, version="5.6", hold=HOLD, replay=res)
    assert d.misses.tolist() == res.stats["NUMBER_PAGES_READ"].tolist()
    assert d.moves.tolist() == res.stats["PAGES_MADE_YOUNG"].tolist()
    assert d.acquisitions.sum() == res.totals["NUMBER_PAGES_READ"] + res.totals["PAGES_MADE_YOUNG"]
    with pytest.raises(ValueError, match="n_instances=8"):
        instance_demand(tr, None, 8, replay=res)
    with pytest.raises(ValueError, match="either replay or misses"):
        instance_demand(tr, None, 4, replay=res, misses=np.zeros(2000, dtype=int))


# ---- validation -------------------------------------------------------------------------
@pytest.mark.parametrize("field", ["get_ns", "move_ns", "miss_ns", "ahi_ns", "kernel_ns",
                                   "cpu_ns"])
@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), 2e9, True, "100"])
def test_hold_times_validation_names_field_and_range(field, bad):
    with pytest.raises(ValueError, match=rf"HoldTimes\.{field}=.*allowed: .*0\.\.1e\+09"):
        HoldTimes(**{field: bad})


def test_hold_times_accept_ints_and_store_floats():
    h = HoldTimes(get_ns=0, cpu_ns=10**9)
    assert h.get_ns == 0.0 and isinstance(h.cpu_ns, float)


@pytest.mark.parametrize("kwargs, match", [
    (dict(version="8.0"), r"version='8.0'.*allowed: 5\.5, 5\.6, 5\.7"),
    (dict(n_instances=0), r"n_instances=0 is out of range; allowed: 1\.\.64"),
    (dict(n_instances=65), r"n_instances=65 is out of range; allowed: 1\.\.64"),
    (dict(n_transactions=0), r"n_transactions=0 is out of range; allowed: finite > 0"),
    (dict(hold=dict(get_ns=1)), "hold must be a HoldTimes"),
    (dict(misses=np.zeros(3)), r"misses must hold one count per dense page, shape \(384,\)"),
    (dict(moves=-vec(MOVES)), r"moves row 70 = -3 is out of range; allowed: >= 0"),
    (dict(ahi_lookups=vec([11, 0, 0, 0, 0])), r"ahi_lookups row 3 = 11 is out of range; "
                                              r"allowed: 0\.\.10"),
    (dict(version="5.7", ahi_parts=513), r"ahi_parts=513 is out of range; allowed: 1\.\.512"),
    (dict(adaptive_hash_index="yes"), "adaptive_hash_index must be a bool"),
])
def test_instance_demand_validation(kwargs, match):
    kw = dict(n_instances=4)
    kw.update(kwargs)
    with pytest.raises(ValueError, match=match):
        instance_demand(vec(GETS), TS, **kw)


def test_source_validation():
    with pytest.raises(ValueError, match="tablespaces is required"):
        instance_demand(vec(GETS), None, 4)
    with pytest.raises(ValueError, match=r"source must hold one count per dense page"):
        instance_demand(np.ones(10), TS, 4)
    with pytest.raises(ValueError, match="source row 0 = -1"):
        instance_demand(-np.ones(TS.n_pages), TS, 4)
    with pytest.raises(ValueError, match="not an integer"):
        instance_demand(np.full(TS.n_pages, 0.5), TS, 4)
    other = Tablespaces.single(10)
    with pytest.raises(ValueError, match="tablespaces differ"):
        instance_demand(_trace(5), other, 4)


# ---- the network for MVA ----------------------------------------------------------------
def test_network_arrays_feed_exact_mva():
    d = instance_demand(vec(GETS), TS, 4, version="5.5", hold=HOLD, n_transactions=2,
                        misses=vec(MISSES), moves=vec(MOVES), ahi_lookups=vec(AHI))
    net = d.network(cores=8, think_time=0.001)
    assert isinstance(d, ContentionDemand) and isinstance(net, Network)
    assert net.names == ("cpu", "pool[0]", "pool[1]", "pool[2]", "pool[3]", "ahi", "kernel")
    assert net.servers.tolist() == [8, 1, 1, 1, 1, 1, 1]
    np.testing.assert_allclose(net.visits, [1, 2.5, 8, 0.5, 1.5, 3, 1])
    np.testing.assert_allclose(net.demands, [2e-5, 7e-7, 1.85e-6, 5e-8, 2e-7, 1.5e-7, 1e-6])
    np.testing.assert_allclose(net.service * net.visits, net.demands)
    assert net.think_time == 0.001
    res = d.network(cores=8).mva(256)
    # asymptote: the busiest per-server demand is the CPU's 20 us / 8 cores -> 400k tps
    assert res.throughput[31] == pytest.approx(4e5, rel=0.01)
    assert res.throughput[-1] == pytest.approx(4e5, rel=1e-6)
    assert np.all(np.diff(res.throughput) > -1e-9 * res.throughput[1:])
    assert net.frame()["station"].tolist() == list(net.names)
    small = network(d, 8, drop_idle=True)
    assert "pool[2]" in small.names            # visited (0.5 per transaction)
    empty = instance_demand(vec(GETS), TS, 16, version="5.6", hold=HOLD)
    assert network(empty, 2, drop_idle=True).names == ("cpu", "kernel")   # no AHI lookups


def test_network_validation():
    d = instance_demand(vec(GETS), TS, 4, hold=HOLD)
    with pytest.raises(ValueError, match=r"cores=0 is out of range; allowed: >= 1"):
        d.network(0)
    with pytest.raises(ValueError, match=r"think_time=-1 is out of range"):
        d.network(2, -1)
    with pytest.raises(ValueError, match=r"cpu_visits=0 is out of range"):
        d.network(2, cpu_visits=0)
    with pytest.raises(ValueError, match="has a demand but no visits"):
        Network(("a",), np.array([1.0]), np.array([0.0]), np.array([1]), 0.0)
