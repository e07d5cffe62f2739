"""Che-type (characteristic time) estimates against small pure-Python simulations."""
from collections import OrderedDict, deque

import numpy as np
import pytest

from bufsim.analytic import che

N_PAGES = 2000
N_GETS = 200_000
WARM = 50_000            # gets before hits are counted (the estimates are steady state)
SIZES = [50, 200, 800]


@pytest.fixture(scope="module")
def zipf():
    """Zipf(0.9) IRM trace over 2000 pages: (rates, trace as a Python list)."""
    rng = np.random.default_rng(20240901)
    w = np.arange(1, N_PAGES + 1, dtype=np.float64) ** -0.9
    w /= w.sum()
    return w, rng.choice(N_PAGES, N_GETS, p=w).tolist()


def sim_lru(trace, size):
    cache, hits = OrderedDict(), 0
    for i, p in enumerate(trace):
        if p in cache:
            cache.move_to_end(p)
            hits += i >= WARM
        else:
            cache[p] = None
            if len(cache) > size:
                cache.popitem(last=False)
    return hits / (len(trace) - WARM)


def sim_fifo(trace, size):
    resident, order, hits = set(), deque(), 0
    for i, p in enumerate(trace):
        if p in resident:
            hits += i >= WARM
        else:
            resident.add(p)
            order.append(p)
            if len(order) > size:
                resident.discard(order.popleft())
    return hits / (len(trace) - WARM)


def sim_lists(trace, caps):
    """h-list LRU: a miss enters list 0; a hit in list i moves to the head of
    list min(i + 1, h - 1); a list's overflow goes to the head of the list
    below; list 0's overflow is evicted."""
    lists = [OrderedDict() for _ in caps]      # last key = head
    where, hits = {}, 0
    for i, p in enumerate(trace):
        j = where.get(p)
        if j is None:
            dest = 0
        else:
            hits += i >= WARM
            dest = min(j + 1, len(caps) - 1)
            del lists[j][p]
        lists[dest][p] = None
        where[p] = dest
        for k in range(dest, -1, -1):
            if len(lists[k]) > caps[k]:
                q, _ = lists[k].popitem(last=False)
                if k == 0:
                    del where[q]
                else:
                    lists[k - 1][q] = None
                    where[q] = k - 1
    return hits / (len(trace) - WARM)


@pytest.mark.parametrize("size", SIZES)
def test_che_lru_matches_simulation(zipf, size):
    rates, trace = zipf
    est = che.che_lru(rates, size)
    assert abs(est.hit_ratio - sim_lru(trace, size)) < 0.01
    # the defining equation
    assert np.sum(1 - np.exp(-rates * est.characteristic_time)) == pytest.approx(size, rel=1e-9)
    assert est.hit_ratio == pytest.approx(np.dot(rates, est.per_page_hit))


@pytest.mark.parametrize("size", SIZES)
def test_fifo_matches_simulation(zipf, size):
    rates, trace = zipf
    est = che.fifo_random(rates, size)
    assert abs(est.hit_ratio - sim_fifo(trace, size)) < 0.01
    x = rates * est.characteristic_time
    assert np.sum(x / (1 + x)) == pytest.approx(size, rel=1e-9)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("pct", [37, 63])
def test_innodb_two_lists_match_simulation(zipf, size, pct):
    rates, trace = zipf
    est = che.innodb_midpoint_lru(rates, size, pct)
    old = int(np.floor(size * pct / 100 + 0.5))
    np.testing.assert_allclose(est.list_probability.sum(axis=0), [old, size - old], rtol=1e-8)
    assert abs(est.hit_ratio - sim_lists(trace, [old, size - old])) < 0.01


def sim_lru_quarter(trace, size, pct):
    """InnoDB with old_blocks_time 0 as buf_page_peek_if_young sees it: every miss puts the
    page at the head stamped with the eviction count; a hit moves it to the head (stamped)
    only once W = size * (1024 - ratio) // 4096 pages were evicted since (none before the
    first eviction)."""
    w = size * (1024 - min(max(pct * 1024 // 100, 51), 1024)) // 4096
    cache, stamp, clock, hits = OrderedDict(), {}, 0, 0
    for i, p in enumerate(trace):
        if p in cache:
            hits += i >= WARM
            if clock > 0 and clock >= stamp[p] + w:
                cache.move_to_end(p)
                stamp[p] = clock
        else:
            if len(cache) == size:
                q, _ = cache.popitem(last=False)
                del stamp[q]
                clock += 1
            cache[p] = None
            stamp[p] = clock
    return hits / (len(trace) - WARM)


@pytest.mark.parametrize("size", [200, 800])
def test_innodb_lru_t0_predicts_the_quarter_rule(zipf, size):
    """On one trace, LRU minus the quarter-rule LRU (paired: little sampling noise) is the
    estimate's Che minus quarter; without the rule the estimate would be Che's (effect 0)."""
    rates, trace = zipf
    est = che.innodb_lru_t0(rates, size, 5)
    lru, quarter = sim_lru(trace, size), sim_lru_quarter(trace, size, 5)
    effect, predicted = lru - quarter, che.che_lru(rates, size).hit_ratio - est.hit_ratio
    assert effect > 0.002
    assert abs(effect - predicted) < 0.001, (effect, predicted)
    assert abs(est.hit_ratio - quarter) < 0.01
    # the defining equations: occupancy C, and the window is W evictions at the miss rate
    assert est.per_page_hit.sum() == pytest.approx(size, rel=1e-9)
    w = size * (1024 - 51) // 4096
    assert est.window == pytest.approx(w / (1 - est.hit_ratio), rel=1e-6)


def test_innodb_lru_t0_limits(zipf):
    rates, _ = zipf
    # W = 0 (a pool too small for a quarter of its young list to hold a page) is Che's LRU
    a, b = che.innodb_lru_t0(rates, 3, 37), che.che_lru(rates, 3)
    assert a.window == 0.0 and a.hit_ratio == pytest.approx(b.hit_ratio, abs=1e-12)
    # between FIFO and LRU, nearer LRU, and the larger window (pct 5) further from it
    lru, fifo = che.che_lru(rates, 400).hit_ratio, che.fifo_random(rates, 400).hit_ratio
    q37, q5 = che.innodb_lru_t0(rates, 400, 37).hit_ratio, che.innodb_lru_t0(rates, 400, 5).hit_ratio
    assert fifo < q5 < q37 < lru
    # scale invariance: rates per second give the same hit ratio, times scaled
    c = che.innodb_lru_t0(rates * 50.0, 400, 37)
    assert c.hit_ratio == pytest.approx(q37, abs=1e-12)

def test_three_lists_match_simulation(zipf):
    rates, trace = zipf
    caps = [100, 100, 200]
    est = che.segmented_lru(rates, caps)
    assert abs(est.hit_ratio - sim_lists(trace, caps)) < 0.01


def test_one_list_is_che_lru(zipf):
    rates, _ = zipf
    a, b = che.segmented_lru(rates, [300]), che.che_lru(rates, 300)
    assert a.characteristic_time[0] == pytest.approx(b.characteristic_time, rel=1e-9)
    np.testing.assert_allclose(a.per_page_hit, b.per_page_hit, atol=1e-12)


@pytest.mark.parametrize("caps", [[37, 63], [5, 95], [30, 30, 40], [1, 1, 1]])
def test_hybr_and_nested_agree(zipf, caps):
    rates, _ = zipf
    a = che.segmented_lru(rates, caps, method="hybr")
    b = che.segmented_lru(rates, caps, method="nested")
    np.testing.assert_allclose(a.characteristic_time, b.characteristic_time, rtol=1e-7)
    assert a.hit_ratio == pytest.approx(b.hit_ratio, abs=1e-10)


def test_segmented_on_many_pages_uses_compressed_start():
    w = np.arange(1, 20_001, dtype=np.float64) ** -1.2
    est = che.segmented_lru(w, [740, 1260])
    np.testing.assert_allclose(est.list_probability.sum(axis=0), [740, 1260], rtol=1e-8)
    assert 0 < est.hit_ratio < 1


def test_uniform_rates_closed_forms():
    n, c = 1000, 250
    lru = che.che_lru(np.ones(n), c)
    assert lru.hit_ratio == pytest.approx(c / n, rel=1e-12)
    # rates 1 per unit time: T in those units (n times that in gets)
    assert lru.characteristic_time == pytest.approx(-np.log1p(-c / n), rel=1e-10)
    fifo = che.fifo_random(np.ones(n), c)
    assert fifo.hit_ratio == pytest.approx(c / n, rel=1e-12)
    # two lists of about 1/4 and 3/4 of the cache: x2 = m2 / m1 per page and
    # x1 (1 + x2) / (1 + x1 (1 + x2)) = c / n
    m1, m2 = c // 4, c - c // 4
    two = che.segmented_lru(np.ones(n), [m1, m2])
    assert two.hit_ratio == pytest.approx(c / n, rel=1e-10)
    assert np.expm1(two.characteristic_time[1]) == pytest.approx(m2 / m1, rel=1e-9)


def test_scale_invariance_and_zero_rates(zipf):
    rates, _ = zipf
    padded = np.concatenate([rates, np.zeros(10)])
    a = che.innodb_midpoint_lru(rates, 300, 37)
    b = che.innodb_midpoint_lru(padded * 1e6, 300, 37)
    assert a.hit_ratio == pytest.approx(b.hit_ratio, rel=1e-9)
    np.testing.assert_allclose(b.characteristic_time * 1e6, a.characteristic_time, rtol=1e-8)
    assert np.all(b.per_page_hit[-10:] == 0)
    lru = che.che_lru(padded, 300)
    assert np.all(lru.per_page_hit[-10:] == 0)


def test_everything_fits():
    r = np.array([1.0, 2.0, 0.0, 0.0])
    for est in (che.che_lru(r, 2), che.fifo_random(r, 3), che.segmented_lru(r, [1, 1])):
        assert est.hit_ratio == 1.0
        assert est.per_page_hit.tolist() == [1.0, 1.0, 0.0, 0.0]
        assert np.all(np.isinf(est.characteristic_time))


def test_rates_from_trace():
    chunks = [(np.array([0, 1, 1]), np.array([3, 1, 1])), (np.array([2]), None)]
    np.testing.assert_allclose(che.rates_from_trace(chunks, 4), [0.5, 2 / 6, 1 / 6, 0])
    np.testing.assert_allclose(che.rates_from_trace(chunks, 3, weight="events"),
                               [0.25, 0.5, 0.25])
    with pytest.raises(ValueError, match=r"allowed: 0\.\.1"):
        che.rates_from_trace(chunks, 2)


@pytest.mark.parametrize("call, match", [
    (lambda: che.che_lru([1.0, -1.0, 2.0], 1), "rates must be finite and >= 0"),
    (lambda: che.che_lru([0.0, 0.0], 1), "positive sum"),
    (lambda: che.che_lru([1.0], 1), "at least 2 pages"),
    (lambda: che.che_lru([1.0, 1.0, 1.0], 3), r"capacity=3 is out of range; allowed: 1\.\.2"),
    (lambda: che.fifo_random([1.0, 1.0, 1.0], 0), "capacity"),
    (lambda: che.segmented_lru([1.0] * 5, [2, 0]), r"capacities\[1\]"),
    (lambda: che.segmented_lru([1.0] * 5, [2, 3]), r"sum\(capacities\)"),
    (lambda: che.segmented_lru([1.0] * 5, [1], method="x"), "method"),
    (lambda: che.innodb_midpoint_lru([1.0] * 50, 10, 2),
     r"old_blocks_pct=2 is out of range; allowed: 5\.\.95"),
    (lambda: che.innodb_midpoint_lru([1.0] * 50, 50, 37),
     r"pool_pages=50 is out of range; allowed: 2\.\.49"),
    (lambda: che.innodb_lru_t0([1.0] * 50, 50, 37),
     r"pool_pages=50 is out of range; allowed: 2\.\.49"),
    (lambda: che.innodb_lru_t0([1.0] * 50, 10, 96),
     r"old_blocks_pct=96 is out of range; allowed: 5\.\.95"),
])
def test_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()
