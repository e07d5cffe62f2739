"""The minimal kernels that ``make bench`` measures bufsim against.

benchmarks/midpoint_floor.py's one-step kernel (each get's list changes at once, the
old-sublist adjustments as clamps of the old length) must end every trace in the state
of the step-by-step one: same hits, same list order, same old flags, same LRU_old.  And
floor_lru must hit exactly as bufsim's ``lru``.

Slow tier, marked ``ci``: these check benchmarks/ (what ``make bench`` measures), not the
package, and compile their own kernels (tens of seconds); ``.ci/run`` and ``make test-slow``
run them."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tests._hypothesis import examples
from tests._bench import load_benchmark

import bufsim
from bufsim import CostModel, DeviceModel, PoolConfig
from bufsim.policies._state import FLAG_MODIFY

pytestmark = [pytest.mark.slow, pytest.mark.ci]

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


@settings(max_examples=examples(40), deadline=None)
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


# ---- benchmarks/midpoint_ra.py: InnoDB's t=0 rules with read-ahead, and nothing else ------
ra = load_benchmark("midpoint_ra")
NO_COST = CostModel(0, 0, 0, 0)


def _innodb_t0(trace, cap, device=None):
    """bufsim innodb_t0 as make bench runs it: (hits, read-ahead pages, result)."""
    cfg = bufsim.mysql56(pool_pages=cap, instances=1, old_blocks_time_ms=0, cost=NO_COST,
                         device=device or DeviceModel.instant())
    res = bufsim.replay(trace, cfg)
    hits = int(res.streams["gets"].sum() - res.streams["misses"].sum())
    return hits, int(res.totals["NUMBER_PAGES_READ_AHEAD"]), res


def _kernel_args(trace):
    ch = trace.materialize()
    base, size = ra.spaces(trace.tablespaces)
    return (np.ascontiguousarray(ch.page, dtype=np.int64),
            np.ascontiguousarray(ch.count, dtype=np.int64), trace.tablespaces.n_pages, base, size)


def _scans_and_hot(n_hot, hot_pages, scan_pages, scan_every, seed):
    t = bufsim.synthetic.hot_and_scan_trace(n_gets_hot=n_hot, hot_pages=hot_pages, alpha=0.8,
                                            scan_pages=scan_pages, scan_every=scan_every,
                                            seed=seed)
    return bufsim.Trace(list(t), t.tablespaces)


def test_midpoint_ra_hits_and_reads_ahead_as_bufsim_innodb_t0():
    """The bench's reference for the InnoDB rows does InnoDB's work: on a trace whose
    scans set off linear read-ahead and on a Zipf one where none does, its hits and
    read-ahead pages (timed at zero cost, and untimed) are bufsim's, page for page."""
    scan = _scans_and_hot(60_000, 3_000, 20_000, 12_000, 3)
    zipf = bufsim.synthetic.zipf_trace(60_000, 20_000, 0.9, seed=4)
    for trace, cap, reads in ((scan, 1024, True), (scan, 2048, True), (zipf, 1024, False)):
        pages, counts, n, base, size = _kernel_args(trace)
        hits, n_ra, _ = _innodb_t0(trace, cap)
        assert (n_ra > 1000) == reads
        assert ra.midpoint_ra_timed(pages, counts, n, cap, base, size, 0, 0) == (hits, n_ra)
        assert ra.midpoint_ra(pages, counts, n, cap, base, size, 0, 0) == (hits, n_ra)
        if not reads:
            assert ra.midpoint_no_ra(pages, counts, n, cap, base, size, 0, 0) == (hits, 0)
        else:                                   # read-ahead makes the scans hit
            assert ra.midpoint_no_ra(pages, counts, n, cap, base, size, 0, 0)[0] < hits - 1000


def test_midpoint_ra_timed_waits_and_orders_as_bufsim():
    """On a virtual clock that moves (CPU per get, a device of 10 us per read), the timed
    kernel's waits and read-ahead order test (access times in different milliseconds)
    give bufsim's hits and read-ahead pages; the run ends before the first page-cleaner
    pass (1 s), which the kernel leaves out."""
    t = bufsim.synthetic.hot_and_scan_trace(n_gets_hot=20_000, hot_pages=2_000, alpha=0.8,
                                            scan_pages=12_000, scan_every=5_000, seed=8,
                                            cpu_ns=5_000)
    trace = bufsim.Trace(list(t), t.tablespaces)
    dev = DeviceModel.instant().replace(random_read_ns=10_000, seq_read_ns=10_000)
    hits, n_ra, res = _innodb_t0(trace, 1024, dev)
    assert res.cleaner_passes == 0 and n_ra > 1000
    assert 10 < res.streams["elapsed_ns"].max() / 1e6 < 1000     # milliseconds
    pages, counts, n, base, size = _kernel_args(trace)
    assert ra.midpoint_ra_timed(pages, counts, n, cap := 1024, base, size, 5_000,
                                10_000) == (hits, n_ra)
    # the untimed kernel cannot see the order: it reads ahead where InnoDB would not
    assert ra.midpoint_ra(pages, counts, n, cap, base, size, 0, 0) != (hits, n_ra)


@settings(max_examples=examples(25), deadline=None)
@given(cap=st.integers(600, 3000), hot=st.integers(500, 6000), scan=st.integers(64, 20_000),
       every=st.integers(500, 20_000), n_hot=st.integers(1, 40_000),
       seed=st.integers(0, 2**31 - 1))
def test_midpoint_ra_property(cap, hot, scan, every, n_hot, seed):
    trace = _scans_and_hot(n_hot, hot, scan, every, seed)
    pages, counts, n, base, size = _kernel_args(trace)
    hits, n_ra, _ = _innodb_t0(trace, cap)
    assert ra.midpoint_ra_timed(pages, counts, n, cap, base, size, 0, 0) == (hits, n_ra)


# ---- benchmarks/midpoint_duty.py: those rules plus a replay's bookkeeping ------------------
duty = load_benchmark("midpoint_duty")


def test_midpoint_duty_counts_as_bufsim_innodb_t0():
    """The bench's rules-plus-bookkeeping kernel does the replay's work: its hits,
    read-ahead pages, counted gets, synchronous misses and events are bufsim
    ``innodb_t0``'s on a scanning trace and a Zipf one; a budget stops it after the event
    that reaches it, and an event off the plain path (a modification) stops it at once."""
    scan = _scans_and_hot(60_000, 3_000, 20_000, 12_000, 3)
    zipf = bufsim.synthetic.zipf_trace(60_000, 20_000, 0.9, seed=4)
    for trace, cap in ((scan, 1024), (zipf, 1024), (scan, 2048)):
        arrs, base, size, n = duty.kernel_inputs(trace)
        hits, n_ra, res = _innodb_t0(trace, cap)
        got = duty.run(*arrs, trace.tablespaces, cap)
        assert (got["hits"], got["read_ahead"]) == (hits, n_ra)
        assert got["gets"] == int(res.streams["gets"].sum())
        assert got["misses"] == int(res.streams["misses"].sum())
        assert got["events"] == int(res.streams["events"].sum()) == len(arrs[0])
    out = duty.midpoint_duty(*arrs, n, cap, base, size, 0, 2**63 - 1, 1000)
    gets = np.cumsum(arrs[1])
    k = int(np.searchsorted(gets, 1000)) + 1      # the event that reaches the budget
    assert out[duty.COUNTS.index("events")] == k
    assert out[duty.COUNTS.index("left")] == 1000 - gets[k - 1] <= 0
    arrs[3][5] = FLAG_MODIFY
    out = duty.midpoint_duty(*arrs, n, cap, base, size, 0, 2**63 - 1, 2**62)
    assert out[duty.COUNTS.index("events")] == -1
