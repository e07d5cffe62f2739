"""The flush-list mutex in the contention model: acquisitions, demand, stations."""
import numpy as np
import pytest

from bufsim import replay
from bufsim.config import PoolConfig
from bufsim.contention import Costs, HoldTimes, instance_demand, max_throughput, workload_network
from bufsim.pages import SpaceSpec, Tablespaces
from bufsim.policies._state import FLAG_MODIFY
from bufsim.trace import Trace
from bufsim.workloads.txn import PageFrequency

TS = Tablespaces.single(256, space_id=0)          # instance = (page >> 6) mod N


def test_acquisitions_and_demand_per_instance():
    dirtied = np.zeros(256, dtype=int)
    flushed = np.zeros(256, dtype=int)
    dirtied[:64] = 3          # all in area 0
    flushed[64:128] = 1       # area 1
    d = instance_demand(np.ones(256, dtype=int), TS, 4, version="5.5",
                        hold=HoldTimes(flush_ns=200.0), n_transactions=10,
                        dirtied=dirtied, flushed=flushed)
    assert d.dirtied.tolist() == [192, 0, 0, 0] and d.flushed.tolist() == [0, 64, 0, 0]
    assert d.flush_acquisitions.tolist() == [192, 64, 0, 0]
    np.testing.assert_allclose(d.flush_demand, np.array([192, 64, 0, 0]) * 200e-9 / 10)
    f = d.frame()
    assert f.flush_acquisitions_per_txn.tolist() == [19.2, 6.4, 0.0, 0.0]
    net = d.network(8)
    assert net.names[5:9] == tuple(f"flush_list[{i}]" for i in range(4))
    np.testing.assert_allclose(net.visits[5:9], [19.2, 6.4, 0, 0])
    dropped = d.network(8, drop_idle=True)
    assert "flush_list[0]" in dropped.names and "flush_list[2]" not in dropped.names


def test_no_modification_no_flush_list_station():
    d = instance_demand(np.ones(256, dtype=int), TS, 4, version="5.6")
    assert not d.has_flush_list
    assert not any(n.startswith("flush_list") for n in d.network(8).names)


def test_the_flush_list_mutex_caps_throughput_and_instances_divide_it():
    # one hot area: every transaction first-dirties 2 pages of area 0 (after a write)
    freq_gets = np.zeros(256)
    freq_gets[:64] = 1 / 64
    freq_gets[128:192] = 1 / 64
    dirtied = freq_gets * 2
    costs = Costs(get_ns=0.0, move_ns=0.0, miss_ns=0.0, ahi_ns=0.0, kernel_ns=0.0,
                  flush_ns=1_000.0, get_cpu_ns=0.0, stmt_cpu_ns=1_000.0)

    F = PageFrequency(freq_gets, np.zeros(256), TS)  # as the workloads give it

    x1 = max_throughput(workload_network(F, 1, costs, cores=64, dirtied=dirtied))[0]
    x2 = max_throughput(workload_network(F, 2, costs, cores=64, dirtied=dirtied))[0]
    x4 = max_throughput(workload_network(F, 4, costs, cores=64, dirtied=dirtied))[0]
    # 4 acquisitions of 1 us per transaction on one mutex: 250,000/s; areas 0 and 2 stay
    # together with 2 instances (both even), split with 4: 500,000/s (MVA at 256 users
    # is within 1% of the bound)
    assert x1 == pytest.approx(250_000, rel=1e-2)
    assert x2 == pytest.approx(250_000, rel=1e-2)
    assert x4 == pytest.approx(500_000, rel=1e-2) and x4 > 1.9 * x2


def test_from_a_replay_the_counters_are_the_acquisitions():
    ts = Tablespaces([SpaceSpec(5, 2000, "t")])
    rng = np.random.default_rng(3)
    pages = rng.integers(0, 2000, 3000)
    flags = np.where(rng.random(3000) < 0.5, FLAG_MODIFY, 0).astype(np.uint8)
    tr = Trace.from_arrays(pages, 1, 2_000_000, 0, flags, tablespaces=ts)
    cfg = PoolConfig(version="5.6", pool_pages=1200, instances=2, max_dirty_pages_pct=5)
    res = replay(tr, cfg)
    d = instance_demand(tr, None, 2, version="5.6", replay=res, n_transactions=100)
    assert d.dirtied.tolist() == res.stats.flush_list_inserts.tolist()
    assert d.flushed.tolist() == res.stats.NUMBER_PAGES_WRITTEN.tolist()
    assert res.stats.flush_list_flushed.sum() > 0 and d.has_flush_list


@pytest.mark.parametrize("kw, word", [({"dirtied": -np.ones(256, dtype=int)}, "dirtied"),
                                      ({"flushed": np.ones(3, dtype=int)}, "flushed")])
def test_bad_counts_are_named(kw, word):
    with pytest.raises(ValueError, match=word):
        instance_demand(np.ones(256, dtype=int), TS, 4, **kw)


def test_replay_and_counts_are_exclusive_and_hold_is_checked():
    with pytest.raises(ValueError, match="either replay"):
        instance_demand(np.ones(256, dtype=int), TS, 1, replay=object(),
                        dirtied=np.zeros(256, dtype=int))
    with pytest.raises(ValueError, match="flush_ns"):
        HoldTimes(flush_ns=-1.0)


# ---- notebook 04's UPDATE series ------------------------------------------------------------
@pytest.fixture(scope="module")
def rein():
    from bufsim.experiments.instances import Rein
    return Rein(Costs(), cores=8)


def test_update_flush_counts_follow_the_master_thread(rein):
    from bufsim.experiments.instances import update_flush_counts
    # 2,000 UPDATEs a run at 1,000/s: each run is 2 virtual seconds
    fast = update_flush_counts(rein, "uniform", 2, n_updates=2_000, tps=1_000.0)
    assert fast["seconds"] == pytest.approx(2.0, rel=1e-3)
    assert 0.9 < fast["dirtied"].sum() <= 1.0 and fast["flushed"].sum() == 0   # 0% dirty < 75
    # max_dirty_pages_pct 0: once 1% of the 20G pool is dirty (integer percent, as
    # buf_get_modified_ratio_pct) each pass writes io_capacity pages, half per instance
    flush = update_flush_counts(rein, "uniform", 2, n_updates=20_000, tps=10_000.0,
                                max_dirty_pages_pct=0, io_capacity=100)
    per_instance = np.rint(flush["flushed"] * 20_000).astype(int)
    assert per_instance[0] == per_instance[1] and per_instance[0] % 50 == 0
    assert 100 <= per_instance.sum() <= 300            # the passes at 2 (or 3) .. 4 s
    # hot: the first run dirties the hot leaves, the counted run finds them dirty
    hot = update_flush_counts(rein, "hot", 1, n_updates=20_000, tps=80_000.0)
    assert hot["dirtied"].sum() < 0.05 and hot["dirty_pages"] <= 3650
    with pytest.raises(ValueError, match="tps"):
        update_flush_counts(rein, "hot", 1, n_updates=10, tps=0.0)


def test_update_series_rows(rein):
    from bufsim.experiments.instances import update_series
    df = update_series(rein, [1, 2], n_updates=2_000, rounds=1, ahi=False)
    assert list(df.dist) == ["hot", "hot", "uniform", "uniform"] and not df.ahi.any()
    assert (df[df.instances == 1].ratio_vs_1 == 1.0).all()
    assert (df.tps <= df.tps_no_flush * (1 + 1e-9)).all()     # the mutex only adds demand
    u1 = df[(df.dist == "uniform") & (df.instances == 1)].iloc[0]
    assert u1.flush_list_visits_hottest == pytest.approx(u1.dirtied_per_update)
    assert u1.break_even_flush_ns == pytest.approx(rein.costs.kernel_ns / u1.dirtied_per_update)
