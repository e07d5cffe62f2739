"""bufsim.experiments.ssb_claims: notebook 01's claims, held or excluded by the document."""
import numpy as np
import pandas as pd
import pytest

from bufsim import paths, results
from bufsim.experiments import ssb_claims as K
from bufsim.experiments import ssb_cpu as C
from bufsim.notebooks import claims_counts


def _one_cost(seed, n, spread):
    """``n`` configurations of 150 ns per get (one feature), each missed by a factor in
    ``spread``; the gets, the times and the observations (as in test_ssb_cpu_model)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(1e6, 1e8, n)
    y = x * 150e-9 * rng.uniform(*spread, n)
    cols = list(dict.fromkeys(f for f, _, _ in C.COSTS.values()))
    f = pd.DataFrame({c: np.zeros(n) for c in cols})
    f["gets"] = x
    f.insert(0, "config", [f"o{i}" for i in range(n)])
    f.insert(1, "phase", "run1-3")
    f.insert(2, "flight", "1-4")
    f.insert(3, "reported", y)
    return x, y, f


def test_verdict_on_the_documents_figures():
    # the full run's figures (5.5.30 128M t=0 Run1, 5.6.10 128M t=1000 Run1): the prediction
    # of costs fitted on the others misses the first, whose figure lies above every prediction
    # that costs fitting the others within their limits give; the second is within 25%
    assert K.time_verdict(189.29, 130.24, 134.09, 145.82, 0.25) == (False, True)
    assert K.time_verdict(324.25, 269.18, 255.01, 268.07, 0.25) == (True, False)
    # the figure inside the range while the named estimator misses: neither
    assert K.time_verdict(140.0, 100.0, 90.0, 150.0, 0.25) == (False, False)
    # just beyond the limit (0.7499) it does not hold; the range decides the exclusion
    assert K.time_verdict(100.0, 74.99, 70.0, 80.0, 0.25) == (False, True)
    assert K.time_verdict(100.0, 75.0, 70.0, 80.0, 0.25) == (True, False)
    # a range not over the limits (the rest has no costs within them) excludes nothing
    assert K.time_verdict(189.29, 130.24, 134.09, 145.82, 0.25, over_limits=False) == (False, False)
    for bad in (dict(reported=0.0), dict(predicted=float("nan")), dict(limit=-0.1),
                dict(low=3.0, high=2.0)):
        kw = dict(reported=1.0, predicted=1.0, low=0.5, high=2.0, limit=0.25) | bad
        with pytest.raises(ValueError, match=next(iter(bad)) if "low" not in bad else "range"):
            K.time_verdict(**kw)


def test_time_claims_from_a_leave_one_out_and_its_range(tmp_path, monkeypatch):
    # one cost (ns per get): the range of o0's prediction over costs keeping the rest
    # within 25% is x0 * [0.75 max r_i, 1.25 min r_i] (r_i = y_i / x_i, i > 0)
    x, y, obs = _one_cost(3, 8, (0.9, 1.1))
    loo = C.leave_one_out(obs, {c: [c] for c in obs.config})
    ranges = C.held_out_ranges(obs, ["o0", "o1"])
    r = y[1:] / x[1:]
    lo, hi = x[0] * 0.75 * r.max(), x[0] * 1.25 * r.min()
    p0 = float(loo.set_index("config").predicted["o0"])
    table = pd.DataFrame(dict(config=["o0", "o0", "o1"], run=["Run1", "Run2", "Run3"],
                              reported=[p0 / 1.1, hi * 1.5, y[1]]))
    t = K.time_claims(table, loo, ranges)
    assert list(t.columns) == list(K.CLAIM_COLUMNS) and not t.fitted.any()
    assert t.computed_low.iloc[0] == pytest.approx(lo, rel=1e-6)
    assert t.computed_high.iloc[0] == pytest.approx(hi, rel=1e-6)
    assert list(t.holds) == [True, False, True]
    assert list(t.document_excludes) == [False, True, False]
    assert "lies above it" in t.computed_range.iloc[1] and "no such costs come within 25%" in t.computed_range.iloc[1]
    assert t.simulated.iloc[1] == pytest.approx(p0)
    # written through write_claims and counted as one held-or-excluded table
    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path))
    path = results.write_claims("01_x", t)
    assert path.parent == tmp_path / "results"
    back = pd.read_csv(path)
    assert claims_counts(back) == dict(held=2, excluded=1, failed=0, total=3)
    with pytest.raises(ValueError, match="no out-of-sample prediction"):
        K.time_claims(table.assign(run="Cold"), loo, ranges)


def test_counter_claims_exclude_only_outside_the_given_range():
    q11 = pd.DataFrame(dict(plan=["scan", "date_first", "date_first"], old_blocks_time_ms=[0, 1000, 1000],
                            metric=["NUMBER_PAGES_READ", "PAGES_NOT_MADE_YOUNG", "PAGES_MADE_YOUNG"],
                            reported=[39009.0, 2054952.0, 62.0], simulated=[38846.0, 2856272.0, 3.0],
                            within_10pct=[True, False, None]))
    t = K.counter_claims(q11)
    assert len(t) == 2 and list(t.holds) == [True, False] and not t.document_excludes.any()
    key = ("date_first", 1000, "PAGES_NOT_MADE_YOUNG")
    out = K.counter_claims(q11, {key: (2.2e6, 3.0e6, "bound")})
    assert out.document_excludes.iloc[1] and out.computed_low.iloc[1] == 2.2e6
    inside = K.counter_claims(q11, {key: (1.5e6, 3.0e6, "bound")})
    assert not inside.document_excludes.iloc[1]
    # the replay of the document's procedure judges the row in place of the empty pool's
    rep = K.counter_claims(q11, {key: (1.5e6, 3.0e6, "bound")}, {key: (1.9e6, "after its restart")})
    assert list(rep.holds) == [True, True] and rep.simulated.iloc[1] == 1.9e6
    assert rep.claim.iloc[1].endswith("within 10% (after its restart)")
    assert rep.claim.iloc[0] == t.claim.iloc[0]
    miss = K.counter_claims(q11, {key: (2.2e6, 3.0e6, "bound")}, {key: (1.8e6, "after its restart")})
    assert not miss.holds.iloc[1] and miss.document_excludes.iloc[1]     # 0.876; figure outside
    with pytest.raises(ValueError, match="replays"):
        K.counter_claims(q11, None, {key: (float("nan"), "x")})


def test_table_open_pages_are_the_statistics_descents():
    from bufsim.experiments import ssb as X
    from bufsim.workloads.ssb import SSB
    ssb = SSB(0.01)
    db = ssb.db
    p = X.table_open_pages(ssb, ("lineorder",), seed=3)
    ixs = db.table("lineorder").indexes
    assert len(ixs) == 7                       # GEN_CLUST_INDEX and six secondary indexes
    assert p.size == sum(X.STATS_SAMPLE_PAGES * ix.height for ix in ixs)
    # each index: 8 descents from its root to a leaf of that index, clustered first
    first = p[: X.STATS_SAMPLE_PAGES * ixs[0].height].reshape(X.STATS_SAMPLE_PAGES, -1)
    root = db.dense("lineorder", ixs[0].paths(np.array([0])))[0, 0]
    assert (first[:, 0] == root).all()
    assert set(first[:, -1]) <= set(db.dense("lineorder", ixs[0].leaves).tolist())
    assert np.array_equal(p, X.table_open_pages(ssb, ("lineorder",), seed=3))
    assert not np.array_equal(p, X.table_open_pages(ssb, ("lineorder",), seed=4))
    both = X.table_open_pages(ssb, seed=3)      # dim_date first, then lineorder
    assert both.size == p.size + X.STATS_SAMPLE_PAGES * db.table("dim_date").indexes[0].height
    with pytest.raises(ValueError, match="sample_pages"):
        X.table_open_pages(ssb, sample_pages=0)
    calib = X.Calibration(row_ns=1, get_ns=1171, clock_read_ns=4710, read_ns=34513)
    with pytest.raises(ValueError, match="earlier_pages"):
        X.q11_after_restart(ssb, "date_first", 1000, calib, earlier_pages=10**6)
    with pytest.raises(ValueError, match="idle_ns"):
        X.q11_after_restart(ssb, "date_first", 1000, calib, earlier_pages=0, idle_ns=-1)


@pytest.mark.slow
def test_a_restart_history_keeps_the_root_young_at_sf1():
    """Q1.1 date_first, old_blocks_time 1000, SF1 (the document's scale): from an empty pool
    the clustered root cycles through the old sublist and each of its gets is a check;
    after a restart's history (pages read before, the tables' statistics, a 2 s gap) the
    root is young and the count falls by most of the root's gets (one per row)."""
    from bufsim.experiments import ssb as X
    from bufsim.workloads.ssb import SSB
    ssb = SSB(1.0)
    calib = X.Calibration(row_ns=1, get_ns=1171, clock_read_ns=4710, read_ns=34513)
    empty = X.q11_run(ssb, "date_first", 1000, calib)
    after = X.q11_after_restart(ssb, "date_first", 1000, calib, earlier_pages=600, seed=0)
    rows = ssb.expected_rows("Q1.1", "date_first")
    assert after["gets"] == empty["gets"]
    assert after["not_made_young"] < empty["not_made_young"] - 0.5 * rows
    assert abs(after["pages_read"] / empty["pages_read"] - 1) < 0.03


def test_document_restart_refuses_what_it_cannot_pin():
    from bufsim.experiments import ssb as X
    from bufsim.workloads.ssb import SSB
    counters = pd.read_csv(paths.data_dir() / "ssb_q11_counters.csv")
    ssb, calib = SSB(0.01), X.Calibration()
    with pytest.raises(ValueError, match="seeds"):
        K.document_restart(ssb, calib, counters, seeds=[])
    # scan t=1000: every rate 0 (nothing since the refresh), so nothing pins its history
    with pytest.raises(ValueError, match="no statistics refresh"):
        K.document_restart(ssb, calib, counters, plan="scan", old_blocks_time_ms=1000)


@pytest.mark.slow
def test_the_documents_restart_brings_date_first_within_10pct_at_sf1():
    """Q1.1 date_first, old_blocks_time 1000, SF1: replayed after the restart the document's
    statistics rates pin (263 pages read before the statement), the pages not made young
    come within 10% of the document's 2,054,952 (seeds 0 and 1: 0.933, 0.912), where the
    empty pool gives 1.39; the gap before the statement does not change the count."""
    from bufsim.experiments import ssb as X
    from bufsim.workloads.ssb import SSB
    counters = pd.read_csv(paths.data_dir() / "ssb_q11_counters.csv")
    ssb = SSB(1.0)
    calib = X.Calibration(row_ns=1, get_ns=1171, clock_read_ns=4710, read_ns=34513)
    r = K.document_restart(ssb, calib, counters, seeds=[0, 1])
    assert (r.earlier_pages == 263).all()
    assert ((r.not_made_young / 2_054_952 - 1).abs() <= 0.10).all(), r.not_made_young.tolist()
    no_gap = K.document_restart(ssb, calib, counters, seeds=[0], idle_ns=0)
    assert no_gap.not_made_young.iloc[0] == r.not_made_young.iloc[0]
