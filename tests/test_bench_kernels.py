"""The minimal kernels that ``make bench`` measures bufsim against.

benchmarks/midpoint_floor.py's one-step kernel (each get's list changes at once, the
old-sublist adjustments as clamps of the old length) must end every trace in the state
of the step-by-step one: same hits, same list order, same old flags, same LRU_old.  And
floor_lru must hit exactly as bufsim's ``lru``."""
import numpy as np
from hypothesis import given, settings, strategies as st
from tests._bench import load_benchmark

import bufsim
from bufsim import CostModel, DeviceModel, PoolConfig

mid = load_benchmark("midpoint_floor")
floor = load_benchmark("floor_lru")


def _events(n_gets, n_pages, alpha, seed):
    ch = bufsim.synthetic.zipf_trace(n_gets, n_pages, alpha, seed=seed).materialize()
    return (np.ascontiguousarray(ch.page, dtype=np.int64),
            np.ascontiguousarray(ch.count, dtype=np.int64))


def _both(pages, counts, n_pages, cap):
    a = mid.final_state(pages, counts, n_pages, cap, False)
    b = mid.final_state(pages, counts, n_pages, cap, True)
    return a, b


def test_one_step_rules_end_where_the_step_by_step_ones_do():
    pages, counts = _events(200_000, 20_000, 0.9, 5)
    for cap in (512, 4096):
        a, b = _both(pages, counts, 20_000, cap)
        assert a[0] == b[0] and a[1] == b[1] and a[2] == b[2]
        assert np.array_equal(a[3], b[3])
        assert len(a[3]) == cap                    # the list is full
        flags = a[3] & 1
        # the old pages are the list's last oldlen, LRU_old the first of them
        assert flags[: cap - a[2]].sum() == 0 and flags[cap - a[2]:].all()
        assert a[3][cap - a[2]] >> 1 == a[1]
        assert 0 < a[0] < len(pages)               # some hits, some misses


@settings(max_examples=40, deadline=None)
@given(n_pages=st.integers(100, 3000), cap=st.integers(64, 1500),
       alpha=st.floats(0.3, 1.3), seed=st.integers(0, 2**31 - 1),
       n_gets=st.integers(1, 20_000))
def test_one_step_rules_property(n_pages, cap, alpha, seed, n_gets):
    pages, counts = _events(n_gets, n_pages, alpha, seed)
    a, b = _both(pages, counts, n_pages, cap)
    assert (a[0], a[1], a[2]) == (b[0], b[1], b[2])
    assert np.array_equal(a[3], b[3])


def test_timed_kernels_hit_as_the_untimed_ones():
    pages, counts = _events(100_000, 10_000, 0.9, 9)
    hits = mid.final_state(pages, counts, 10_000, 1024, False)[0]
    assert mid.ONE(pages, counts, 10_000, 1024) == hits
    assert mid.ONE_TIMED_PF(pages, counts, 10_000, 1024) == hits
    assert mid.TIMED_PF(pages, counts, 10_000, 1024) == hits


def test_floor_lru_hits_as_bufsim_lru():
    tr = bufsim.synthetic.zipf_trace(50_000, 5_000, 0.9, seed=3)
    pages, counts = _events(50_000, 5_000, 0.9, 3)
    cfg = PoolConfig(policy="lru", pool_pages=700, cost=CostModel(0, 0, 0, 0),
                     device=DeviceModel.instant())
    res = bufsim.replay(tr, cfg)
    hits = int(res.streams["gets"].sum() - res.streams["misses"].sum())
    cap = cfg.instance_pages - cfg.misc_pages
    assert floor.floor_lru(pages, counts, 5_000, cap) == hits
    assert floor.floor_lru_prefetch(pages, counts, 5_000, cap) == hits
    assert floor.floor_lru_unsigned(pages, counts, 5_000, cap) == hits
