"""Synthetic generators: distributions, determinism, structure, validation."""
import numpy as np
import pytest
from scipy import stats

from bufsim.synthetic import (
    BLOCK, hot_and_scan_trace, scan_trace, uniform_trace, zipf_probabilities, zipf_trace,
)


@pytest.mark.parametrize("alpha", [0.0, 0.8, 1.2])
def test_zipf_frequencies_match_probabilities(alpha):
    n_pages, n_gets = 200, 400_000
    t = zipf_trace(n_gets, n_pages, alpha, seed=11, chunk_size=100_000)
    freq = np.bincount(t.materialize().page, minlength=n_pages)
    p = zipf_probabilities(n_pages, alpha, seed=11)
    assert p.shape == (n_pages,) and np.isclose(p.sum(), 1.0)
    # every page within 5 binomial standard deviations, and a chi-square test
    sd = np.sqrt(n_gets * p * (1 - p))
    assert (np.abs(freq - n_gets * p) <= 5 * sd + 1).all()
    assert stats.chisquare(freq, n_gets * p).pvalue > 1e-4


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0, 2.5])
def test_guide_table_equals_searchsorted(alpha):
    from bufsim.synthetic import _Zipf
    z = _Zipf(10_000, alpha, 1, True)
    u = np.random.default_rng(0).random(50_000)
    u[:4] = [0.0, np.nextafter(1.0, 0.0), z.cdf[3], np.nextafter(z.cdf[3], 0.0)]
    assert np.array_equal(z.ranks(u), np.searchsorted(z.cdf, u, side="right"))


def test_zipf_probabilities_closed_form_and_permutation():
    p = zipf_probabilities(5, 1.0, shuffle_ranks=False)
    h = sum(1 / k for k in range(1, 6))
    assert np.allclose(p, [1 / (k * h) for k in range(1, 6)])
    q = zipf_probabilities(5, 1.0, seed=3)
    assert np.allclose(np.sort(q), np.sort(p)) and not np.allclose(q, p)
    assert np.allclose(zipf_probabilities(7, 0.0, seed=1), 1 / 7)
    with pytest.raises(ValueError, match="seed is required"):
        zipf_probabilities(5, 1.0)


def test_unshuffled_ranks_are_pages():
    t = zipf_trace(50_000, 100, 1.0, seed=2, shuffle_ranks=False)
    freq = np.bincount(t.materialize().page, minlength=100)
    assert freq[0] == freq.max() and freq[0] > 5 * freq[50]


def test_determinism_independent_of_chunk_size():
    n = 2 * BLOCK + 123
    ref = zipf_trace(n, 1000, 0.9, seed=5).materialize()
    for cs in (1000, BLOCK, 3 * BLOCK):
        t = zipf_trace(n, 1000, 0.9, seed=5, chunk_size=cs)
        assert all(len(c) <= cs for c in t)
        assert t.materialize() == ref
    assert zipf_trace(n, 1000, 0.9, seed=5).materialize() == ref  # re-run, re-iterate
    assert zipf_trace(n, 1000, 0.9, seed=6).materialize() != ref
    # a shorter trace is a prefix of a longer one
    short = zipf_trace(BLOCK + 7, 1000, 0.9, seed=5).materialize()
    assert np.array_equal(short.page, ref.page[:BLOCK + 7])


def test_trace_fields():
    t = zipf_trace(10, 50, 1.0, seed=1, cpu_ns=300, stream=2, chunk_size=4)
    assert [len(c) for c in t] == [4, 4, 2] and not t.is_materialized
    c = t.materialize()
    assert c.count.tolist() == [1] * 10 and c.cpu_ns.tolist() == [300] * 10
    assert c.stream.tolist() == [2] * 10 and c.flags.tolist() == [0] * 10
    assert t.tablespaces.n_pages == 50 and t.tablespaces.space_names == ["synthetic"]
    assert zipf_trace(0, 5, 1.0, seed=1).n_events() == 0


def test_uniform_is_alpha_zero():
    u = uniform_trace(5000, 30, seed=4).materialize()
    assert u == zipf_trace(5000, 30, 0.0, seed=4).materialize()
    assert set(np.unique(u.page)) == set(range(30))


def test_scan_trace():
    t = scan_trace(5, first_page=2, gets_per_page=3, repeat=2, cpu_ns=9, chunk_size=3)
    c = t.materialize()
    assert c.page.tolist() == [2, 3, 4, 5, 6] * 2 and c.count.tolist() == [3] * 10
    assert t.n_gets() == 30 and t.tablespaces.n_pages == 7
    assert all(len(x) <= 3 for x in t)
    with pytest.raises(ValueError, match=r"first_page \+ n_pages = 7 is out of range"):
        scan_trace(5, first_page=2, tablespaces=t.tablespaces.single(6))


def test_hot_and_scan_structure():
    hot, scan, every, n = 40, 25, 30, 100
    t = hot_and_scan_trace(n, hot, 0.9, scan, every, seed=8, scan_gets_per_page=4,
                           scan_cpu_ns=7, scan_stream=1, chunk_size=16)
    ts = t.tablespaces
    assert ts.space_ids.tolist() == [1, 2] and ts.space_names == ["hot", "scan"]
    assert ts.sizes.tolist() == [hot, scan]
    assert all(len(c) <= 16 for c in t)
    c = t.materialize()
    is_scan = c.page >= hot
    # the hot gets are exactly zipf_trace's, with three full scans after gets 30, 60, 90
    assert np.array_equal(c.page[~is_scan], zipf_trace(n, hot, 0.9, seed=8).materialize().page)
    pos = np.flatnonzero(is_scan)
    assert len(pos) == 3 * scan
    starts = pos[np.r_[True, np.diff(pos) > 1]]
    assert starts.tolist() == [30, 30 + scan + 30, 30 + 2 * (scan + 30)]
    assert c.page[is_scan].tolist() == list(range(hot, hot + scan)) * 3
    assert (c.count[is_scan] == 4).all() and (c.cpu_ns[is_scan] == 7).all()
    assert (c.stream[is_scan] == 1).all() and (c.stream[~is_scan] == 0).all()
    # a multiple of scan_every ends with a scan
    c2 = hot_and_scan_trace(60, hot, 0.9, scan, 30, seed=8).materialize()
    assert len(c2) == 60 + 2 * scan and c2.page[-1] == hot + scan - 1


@pytest.mark.parametrize("call, match", [
    (lambda: zipf_trace(-1, 10, 1.0, seed=1), r"n_gets=-1 is out of range; allowed: >= 0"),
    (lambda: zipf_trace(10, 0, 1.0, seed=1), r"n_pages=0 is out of range; allowed: >= 1"),
    (lambda: zipf_trace(10, 10, -0.5, seed=1), r"alpha=-0.5 is out of range; allowed: a finite number >= 0"),
    (lambda: zipf_trace(10, 10, float("nan"), seed=1), r"alpha=nan is out of range"),
    (lambda: zipf_trace(10, 10, 1.0, seed=-1), r"seed=-1 is out of range"),
    (lambda: zipf_trace(10, 10, 1.0, seed=1.5), r"seed must be an integer"),
    (lambda: zipf_trace(10, 10, 1.0, seed=1, chunk_size=0), r"chunk_size=0 is out of range"),
    (lambda: zipf_trace(10, 10, 1.0, seed=1, cpu_ns=-1), r"cpu_ns=-1 is out of range"),
    (lambda: scan_trace(0), r"n_pages=0 is out of range"),
    (lambda: scan_trace(3, gets_per_page=0), r"gets_per_page=0 is out of range"),
    (lambda: hot_and_scan_trace(10, 5, 1.0, 5, 0, seed=1), r"scan_every=0 is out of range; allowed: >= 1"),
    (lambda: hot_and_scan_trace(10, 5, 1.0, 0, 3, seed=1), r"scan_pages=0 is out of range"),
])
def test_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()
