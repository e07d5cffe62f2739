"""bufsim.contention.instances: instance maps, costs, maxima, wait shares, fitting."""
import numpy as np
import pytest

from bufsim import Tablespaces
from bufsim.contention import (
    Costs, PageCounts, fit_costs, instance_demand, instance_map, instances_for_fraction,
    max_throughput,
    wait_shares, workload_demand, workload_network,
)
from bufsim.workloads.txn import PageFrequency


def _two_spaces():
    return Tablespaces.from_sizes([1, 2], [256, 128])


@pytest.mark.parametrize("n", [1, 3, 4, 16, 64])
def test_instance_map_default_is_innodb(n):
    ts = _two_spaces()
    assert np.array_equal(instance_map(ts, n), ts.instance_of(n))


def test_instance_map_page_shift_and_moved_space():
    ts = _two_spaces()
    per_page = instance_map(ts, 4, page_shift=0)
    # every page hashes on its own: space 1's pages 0..3 land on 4 instances
    assert sorted(per_page[:4].tolist()) == [0, 1, 2, 3]
    # space 2 moved to id 5 (5 = 1 mod 4): its first area joins space 1's first area
    moved = instance_map(ts, 4, space_ids={ts.space_names[1]: 5})
    assert moved[256] == moved[0] == 1
    assert ts.instance_of(4)[256] == 2


@pytest.mark.parametrize("kw, msg", [
    (dict(page_shift=21), "page_shift"),
    (dict(space_ids={"nope": 3}), "nope"),
    (dict(n_instances=65), "n_instances"),
])
def test_instance_map_rejects(kw, msg):
    args = dict(n_instances=4)
    args.update(kw)
    with pytest.raises(ValueError, match=msg):
        instance_map(_two_spaces(), **args)


def test_instance_demand_with_custom_map_and_bad_map():
    ts = Tablespaces.single(128, space_id=0)
    gets = np.ones(128, dtype=np.int64)
    d = instance_demand(gets, ts, 2, version="5.5", instance_map=np.r_[np.zeros(100, int),
                                                                        np.ones(28, int)])
    assert d.gets.tolist() == [100, 28]
    with pytest.raises(ValueError, match="instance_map row 0 = 2"):
        instance_demand(gets, ts, 2, version="5.5", instance_map=np.full(128, 2))


def test_partitioned_ahi_under_55_rules():
    ts = Tablespaces.from_sizes([1, 2], [64, 64])
    gets = np.ones(128, dtype=np.int64)
    d1 = instance_demand(gets, ts, 1, version="5.5", ahi_lookups=gets)
    d2 = instance_demand(gets, ts, 1, version="5.5", ahi_lookups=gets, ahi_parts=2)
    assert d1.latch_names == ("ahi", "kernel")
    assert d2.latch_names == ("ahi[0]", "ahi[1]", "kernel")
    assert d2.latch_acquisitions[:2].sum() == d1.latch_acquisitions[0] == 128


def test_costs_hold_and_validation():
    c = Costs(kernel_ns=10.0, get_cpu_ns=2.0, stmt_cpu_ns=100.0)
    h = c.hold(gets_per_txn=5.0, statements=2)
    assert h.kernel_ns == 20.0 and h.cpu_ns == 2 * 100 + 5 * 2
    with pytest.raises(ValueError, match="Costs.get_ns"):
        Costs(get_ns=-1)
    with pytest.raises(ValueError, match="statements"):
        c.hold(1.0, statements=0)


def _freq_one_hot_page():
    ts = Tablespaces.single(256, space_id=0)
    g = np.full(256, 1.0 / 256)
    g[0] += 3.0                       # one page with 3 gets per transaction
    return PageFrequency(g, np.zeros(256), ts, "hot root")


def test_max_throughput_is_the_bottleneck_bound():
    f = _freq_one_hot_page()
    c = Costs(get_ns=10_000, kernel_ns=0, get_cpu_ns=0, stmt_cpu_ns=1_000)
    for n in (1, 4, 64):
        net = workload_network(f, n, c, cores=32, adaptive_hash_index=False)
        x, _ = max_throughput(net, 256)
        # the hot page's instance: (3 + its area's share) gets of 10 us
        d_hot = (3 + 64 / 256 if n > 1 else 4.0) * 1e-5
        assert x == pytest.approx(1 / d_hot, rel=0.02)
        assert x <= 1 / d_hot * (1 + 1e-4)   # never above the bound (counts rounded to 1e-6)
    # more instances cannot help beyond the one hot page
    x4 = max_throughput(workload_network(f, 4, c, cores=32, adaptive_hash_index=False))[0]
    x64 = max_throughput(workload_network(f, 64, c, cores=32, adaptive_hash_index=False))[0]
    assert abs(x64 / x4 - 1) < 0.05


def test_workload_demand_counts_per_transaction():
    f = _freq_one_hot_page()
    d = workload_demand(f, 4, Costs(), adaptive_hash_index=False)
    # counts are integers for 1e6 transactions: 1/256 per page rounds to 3906e-6
    assert d.acquisitions.sum() / d.n_transactions == pytest.approx(4.0, abs=1e-4)
    assert d.acquisitions.sum() / d.n_transactions != pytest.approx(3.0, abs=0.5)


def test_wait_shares_and_instances_for_fraction():
    s = wait_shares([5, 0, 90, 5])
    assert s["hottest_share"] == 0.9 and s["n_for_fraction"] == 1
    assert wait_shares([30, 30, 30, 10])["n_for_fraction"] == 3
    assert wait_shares([0, 0])["n_for_fraction"] == 0
    with pytest.raises(ValueError, match="waits"):
        wait_shares([-1, 2])
    assert instances_for_fraction({1: 10.0, 4: 29.0, 16: 31.0, 64: 31.5}) == 16
    assert instances_for_fraction({1: 10.0, 4: 30.0, 16: 31.0, 64: 31.5}) == 4
    assert instances_for_fraction({1: 10.0, 4: 30.0}, fraction=0.5) == 4
    with pytest.raises(ValueError, match="fraction"):
        instances_for_fraction({1: 1.0}, fraction=0)


def test_fit_costs_recovers_a_constant():
    f = _freq_one_hot_page()
    truth = Costs(get_ns=7_000, kernel_ns=0, get_cpu_ns=0, stmt_cpu_ns=1_000)
    x = max_throughput(workload_network(f, 16, truth, cores=32, adaptive_hash_index=False))[0]
    fitted = fit_costs([("get_ns", f, 1, False, x)], Costs(get_ns=100, kernel_ns=0,
                                                         get_cpu_ns=0, stmt_cpu_ns=1_000),
                       n_instances=16, cores=32, rounds=1)
    assert fitted.get_ns == pytest.approx(7_000, rel=1e-3)
    with pytest.raises(ValueError, match="not a Costs field"):
        fit_costs([("nope", f, 1, False, x)], truth)


def _assert_same_demand(a, b):
    for name in a.__dataclass_fields__:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), name
        else:
            assert x == y, name


@pytest.mark.parametrize("version", ["5.5", "5.6", "5.7"])
def test_page_counts_give_the_demand_of_the_vectors(version):
    """workload_demand from a PageCounts (kept per-instance sums) equals the demand
    counted from the vectors, field by field, at every instance count, AHI setting,
    cost and flush-list load; a mapping or per-page misses take the vectors' path."""
    ts = Tablespaces.from_sizes([1, 2, 7], [300, 500, 130])
    rng = np.random.default_rng(3)
    gets = rng.exponential(0.01, ts.n_pages) * (rng.random(ts.n_pages) < 0.6)
    ahi = gets * rng.random(ts.n_pages) * 0.5
    f = PageFrequency(gets, ahi, ts, "mix", optimistic=(gets - ahi) * 0.2)
    pc = PageCounts(f, 1_000_000)
    seen = set()
    for n in (1, 3, 16, 64):
        for ahi_on in (True, False):
            for costs in (Costs(), Costs(get_ns=2_000, kernel_ns=0.0)):
                fl = (rng.random(n) * 0.3, rng.random(n) * 0.1) if n == 3 else None
                kw = dict(version=version, adaptive_hash_index=ahi_on, statements=2,
                          flush_per_instance=fl)
                a = workload_demand(f, n, costs, counts=pc, **kw)
                _assert_same_demand(a, workload_demand(f, n, costs, **kw))
                _assert_same_demand(a, workload_demand(f, n, costs, counts=f.counts(1_000_000),
                                                       **kw))
                seen.add((n, tuple(a.pool_demand), tuple(a.latch_demand)))
    assert len(seen) == 16                    # the cases differ: the test can fail
    m = instance_map(ts, 4, page_shift=0)
    _assert_same_demand(workload_demand(f, 4, Costs(), counts=pc, mapping=m, version=version),
                        workload_demand(f, 4, Costs(), mapping=m, version=version))
    miss = np.full(ts.n_pages, 0.001)
    _assert_same_demand(workload_demand(f, 4, Costs(), counts=pc, misses=miss, version=version),
                        workload_demand(f, 4, Costs(), misses=miss, version=version))
    with pytest.raises(ValueError, match="another frequency or scale"):
        workload_demand(f, 4, Costs(), counts=pc, scale=1_000)
