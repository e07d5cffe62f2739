"""bufsim.experiments.ssb_cpu: operator counts, the two-lane cost fit, out-of-sample checks."""
import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples

from bufsim import paths, results
from bufsim.experiments import ssb as X
from bufsim.experiments import ssb_cpu as C
from bufsim.workloads.ssb import QUERIES, SSB


@pytest.fixture(scope="module")
def ssb():
    return SSB(0.02)


def test_operator_counts_add_up_to_the_rows_read(ssb):
    for q in QUERIES:
        c = C.operator_counts(ssb, q)
        assert c["scan_rows"] + c["eq_ref"] == ssb.expected_rows(q) == ssb.query(q).rows
        assert 0 <= c["group_rows"] <= c["scan_rows"] and c["ref_rows"] == 0
    # Q1.1's aggregated rows, from the data directly: discount 1-3, quantity < 25, year 1993
    d = ssb.data
    year = 1992 + (d.orderdate >= 366) + (d.orderdate >= 731) + (d.orderdate >= 1096)
    want = int(((d.discount >= 1) & (d.discount <= 3) & (d.quantity < 25) & (year == 1993)).sum())
    assert C.operator_counts(ssb, "Q1.1")["group_rows"] == want > 0
    d = C.operator_counts(ssb, "Q1.1", "date_first")
    assert d["scan_rows"] + d["ref_rows"] == ssb.expected_rows("Q1.1", "date_first")
    # the same rows pass every predicate whichever plan reads them
    assert d["group_rows"] == C.operator_counts(ssb, "Q1.1")["group_rows"]
    with pytest.raises(ValueError, match="plan"):
        C.operator_counts(ssb, "Q2.1", "date_first")
    with pytest.raises(ValueError, match="query"):
        C.operator_counts(ssb, "Q9.9")


def _synthetic(n, seed, costs, overlap):
    """Observations with random features and times computed from ``costs``."""
    rng = np.random.default_rng(seed)
    cols = list(dict.fromkeys(f for f, _, _ in C.COSTS.values()))
    f = pd.DataFrame({c: rng.uniform(0, 1e6, n) for c in cols})
    # half the observations dominated by each lane, so that both lanes' costs are determined
    f.loc[: n // 2 - 1, ["ahead_reads", "cold_seq_pages"]] *= 1e-3
    f.loc[n // 2:, ["ahead_reads"]] *= 50
    f.insert(0, "config", [f"o{i}" for i in range(n)])
    f.insert(1, "phase", "run1-3")
    f.insert(2, "flight", "1-4")
    f.insert(3, "reported", 1.0)
    f["reported"] = C.predict(costs, f, overlap=overlap)["predicted"].to_numpy()
    return f


@pytest.mark.parametrize("overlap", [True, False])
def test_fit_recovers_known_costs(overlap):
    costs = dict(scan_row=80.0, eq_ref=300.0, ref_row=900.0, group_row=150.0, get=120.0,
                 check=4000.0, sync_read=60_000.0, ahead_read=250_000.0, cold_page=3_000_000.0)
    obs = _synthetic(40, 1, costs, overlap)
    f = C.fit(obs, overlap=overlap)
    for k, v in costs.items():
        assert f.costs[k] == pytest.approx(v, rel=1e-4), k
    assert np.allclose(f.in_sample.ratio, 1.0, rtol=1e-6)
    assert set(f.table().fit_set) == {", ".join(obs.config)}


def test_costs_are_non_negative_and_unfed_costs_zero():
    costs = dict(scan_row=0.0, eq_ref=300.0, ref_row=0.0, group_row=0.0, get=120.0,
                 check=4000.0, sync_read=0.0, ahead_read=250_000.0, cold_page=0.0)
    obs = _synthetic(30, 2, costs, True)
    obs["ref_rows"] = 0.0                     # nothing determines ref_row
    rng = np.random.default_rng(3)
    obs["reported"] *= rng.uniform(0.7, 1.3, len(obs))    # noise: costs may not go negative
    f = C.fit(obs)
    assert all(v >= 0 for v in f.costs.values())
    assert f.costs["ref_row"] == 0


def test_held_out_times_do_not_move_their_prediction():
    costs = dict(scan_row=80.0, eq_ref=300.0, ref_row=900.0, group_row=150.0, get=120.0,
                 check=4000.0, sync_read=60_000.0, ahead_read=250_000.0, cold_page=3_000_000.0)
    obs = _synthetic(24, 4, costs, True)
    obs["reported"] *= np.random.default_rng(5).uniform(0.8, 1.2, len(obs))
    groups = {"A": ["o0", "o13"], "B": ["o5"]}
    a = C.leave_one_out(obs, groups)
    # a group's own times never reach its prediction (another group's held-out times are
    # in its fit set and may)
    moved = obs.copy()
    moved.loc[moved.config.isin(["o0", "o13"]), "reported"] *= 3.0
    b = C.leave_one_out(moved, groups)
    assert np.allclose(a[a.held_out == "A"].predicted, b[b.held_out == "A"].predicted)
    assert np.allclose(b.ratio * b.reported, b.predicted)
    # the others' times do move it
    other = obs.copy()
    other.loc[~other.config.isin(["o0", "o13", "o5"]), "reported"] *= 1.5
    c = C.leave_one_out(other, groups)
    assert not np.allclose(a.predicted, c.predicted)
    assert set(a.held_out) == {"A", "B"} and (a.fit_observations == [22, 22, 23]).all()


def test_bad_input_is_named():
    costs = dict(scan_row=1.0, eq_ref=1.0, ref_row=1.0, group_row=1.0, get=1.0, check=1.0,
                 sync_read=1.0, ahead_read=1.0, cold_page=1.0)
    obs = _synthetic(12, 6, costs, True)
    with pytest.raises(ValueError, match="fit_set"):
        C.fit(obs, ["nope"])
    with pytest.raises(ValueError, match="costs"):
        C.predict({**costs, "get": -1.0}, obs)
    with pytest.raises(ValueError, match="costs lack"):
        C.predict({"get": 1.0}, obs)
    with pytest.raises(ValueError, match="held-out"):
        C.leave_one_out(obs, {"x": ["nope"]})
    with pytest.raises(ValueError, match="run"):
        C.phase_of("Run4")
    with pytest.raises(ValueError, match="max_iter"):
        C.fit(obs, max_iter=0)


def test_observations_from_a_replay_and_the_results_csv(ssb, tmp_path, monkeypatch):
    calib = X.Calibration(row_ns=1, get_ns=1_000, clock_read_ns=4_000, read_ns=30_000)
    cfgs = {c.label: X.pool_config(c, calib, scale=0.02) for c in X.CONFIGS}
    per_query = X.run_ssb(ssb, cfgs, calib, queries=("Q1.1", "Q2.1"), idle_ns=0)
    cold = X.cold_extra_ns(ssb, X.DeviceModel.hdd7200(), calib.read_ns, queries=("Q1.1", "Q2.1"))
    times = pd.read_csv("data/ssb_response_times.csv")
    obs = C.observations(ssb, per_query, times, cold)
    assert len(obs) == 10 and set(obs.phase) == {"cold", "run1-3"}
    r13 = obs[obs.phase == "run1-3"].set_index("config")
    runs = per_query[per_query.run.isin(["Run1", "Run2", "Run3"])]
    g = runs.groupby(["config", "run"]).gets.sum().groupby(level=0).mean()
    assert np.allclose(r13.loc[g.index, "gets"], g)
    assert (obs[obs.phase == "cold"].cold_seq_pages == cold["seq_pages"]).all()
    assert (r13.cold_seq_pages == 0).all()
    c = C.operator_counts(ssb, "Q1.1")["scan_rows"] + C.operator_counts(ssb, "Q2.1")["scan_rows"]
    assert (obs.scan_rows == c).all()
    rep = times[(times.version == "5.5.30") & (times.buffer_pool == "4G") & (times.run != "Cold")]
    assert r13.loc["5.5.30 4G t=0", "reported"] == pytest.approx(rep.seconds.mean())
    twice = C.observations(ssb, per_query, times, cold, table_scale=2.0)
    assert np.allclose(twice.gets, 2 * obs.gets) and (twice.reported == obs.reported).all()
    with pytest.raises(ValueError, match="table_scale"):
        C.observations(ssb, per_query, times, cold, table_scale=0)
    # per statement: the same totals, the cold pages on the statement that reads them first
    stm = C.observations(ssb, per_query, times, cold, statements=True)
    assert len(stm) == 20 and set(stm.statement) == {"Q1.1", "Q2.1"}
    tot = C.totals(stm).set_index(["config", "phase"])
    o = obs.set_index(["config", "phase"])
    cols = [c for c in o.columns if c not in ("flight", "reported")]
    assert np.allclose(tot.loc[o.index, cols].to_numpy(float), o[cols].to_numpy(float))
    c21 = stm[(stm.statement == "Q2.1") & (stm.phase == "cold")]
    assert (c21.cold_seq_pages == cold["by_query"]["Q2.1"][0]).all()
    with pytest.raises(ValueError, match="by_query"):
        C.observations(ssb, per_query, times, {"seq_pages": 1, "random_pages": 1}, statements=True)
    loo = C.leave_one_out(obs, {c.label: [c.label] for c in X.CONFIGS})
    rows = C.out_of_sample_rows(loo, "SSB 13-query total, out of sample")
    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path))
    path = results.write_results("01_ssb_table_out_of_sample", rows)
    out = pd.read_csv(path)
    assert tuple(out.columns) == results.COLUMNS + ("holds",)
    assert len(out) == 10 and not out.fitted.any()
    assert set(out.metric) == {"cold", "run1-3"}
    assert set(out.config) == {c.label for c in X.CONFIGS}


def test_q11_runs_become_flight_1_observations(ssb):
    per_query = pd.DataFrame([dict(config=c.label, run=r, query="Q1.1", gets=100, pages_read=10,
                                   read_ahead=8, clock_reads=5.0)
                              for c in X.CONFIGS for r in ("Cold", "Run1", "Run2", "Run3")])
    q11 = pd.DataFrame([dict(plan="scan", old_blocks_time_ms=1000, gets=7, pages_read=3,
                             read_ahead=1, clock_reads=2.0, reported_seconds=33.94),
                        dict(plan="date_first", old_blocks_time_ms=0, gets=9, pages_read=4,
                             read_ahead=0, clock_reads=4.0, reported_seconds=12.36)])
    times = pd.read_csv("data/ssb_response_times.csv")
    cold = dict(seq_pages=50, random_pages=7)
    obs = C.observations(ssb, per_query, times, cold, q11_runs=q11, table_scale=3.0)
    f1 = obs[obs.flight == "1"].set_index("config")
    assert list(f1.index) == ["Q1.1 scan t=1000", "Q1.1 date_first t=0"]
    assert (f1.phase == "q11").all() and list(f1.reported) == [33.94, 12.36]
    # Q1.1's counts are not scaled; the table's are
    assert f1.loc["Q1.1 scan t=1000", "sync_reads"] == 2 and f1.loc["Q1.1 scan t=1000", "gets"] == 7
    assert f1.loc["Q1.1 date_first t=0", "ref_rows"] == C.operator_counts(ssb, "Q1.1", "date_first")["ref_rows"]
    tab = obs[obs.flight == "1-4"]
    assert (tab.gets == 300).all() and (tab.ahead_reads == 24).all()
    assert (tab[tab.phase == "cold"].cold_seq_pages == 150).all()


def _statements(n_obs, per, seed, costs, overlap):
    """Per-statement observations: ``per`` statements each, alternately query-bound and
    read-ahead-bound, and each observation's time from ``costs``."""
    f = _synthetic(n_obs * per, seed, costs, overlap)
    f["config"] = [f"o{i // per}" for i in range(len(f))]
    f.insert(4, "statement", [f"s{i % per}" for i in range(len(f))])
    p = C.predict(costs, f, overlap=overlap).set_index("config")["predicted"]
    f["reported"] = p.loc[f.config].to_numpy()
    return f


@pytest.mark.parametrize("overlap", [True, False])
def test_per_statement_lanes_fit_and_predict(overlap):
    costs = dict(scan_row=80.0, eq_ref=300.0, ref_row=900.0, group_row=150.0, get=120.0,
                 check=4000.0, sync_read=60_000.0, ahead_read=250_000.0, cold_page=3_000_000.0)
    obs = _statements(30, 3, 7, costs, overlap)
    p = C.predict(costs, obs, overlap=overlap)
    assert len(p) == 30 and list(p.config) == [f"o{i}" for i in range(30)]
    # the max is per statement: the sum of the statements' maxima, not the max of the sums
    mats = C.lane_matrices(obs)
    x = np.array([costs[k] for k in C.FITTED])
    q, a = mats["query"] @ x, mats["ahead"] @ x
    per = (np.maximum(q, a) if overlap else q + a).reshape(30, 3).sum(axis=1)
    assert np.allclose(p.predicted, per)
    if overlap:
        assert (p.predicted > np.maximum(p.query_s, p.ahead_s) + 1e-9).any()
    f = C.fit(obs, overlap=overlap)
    for k, v in costs.items():
        assert f.costs[k] == pytest.approx(v, rel=1e-4), k
    assert len(f.in_sample) == 30 and np.allclose(f.in_sample.ratio, 1.0, rtol=1e-6)
    t = C.totals(obs)
    assert len(t) == 30 and np.allclose(t.gets, obs.groupby("config", sort=False).gets.sum())
    loo = C.leave_one_out(obs, {"A": ["o0", "o1"]}, overlap=overlap)
    assert len(loo) == 2 and (loo.fit_observations == 28).all()
    assert np.allclose(loo.ratio, 1.0, rtol=1e-6)


def _one_feature(x, y):
    """Observations with one non-zero feature (``gets``): only the get cost is fitted."""
    cols = list(dict.fromkeys(f for f, _, _ in C.COSTS.values()))
    f = pd.DataFrame({c: np.zeros(len(x)) for c in cols})
    f["gets"] = np.asarray(x, float)
    f.insert(0, "config", [f"o{i}" for i in range(len(x))])
    f.insert(1, "phase", "run1-3")
    f.insert(2, "flight", "1-4")
    f.insert(3, "reported", np.asarray(y, float))
    return f


def _one_cost(seed, n, spread):
    """``n`` observations of 150 ns per get, each missed by a factor in ``spread``: the
    gets ``x``, the times ``y``, the observations and the ns per get each implies."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(1e6, 1e8, n)
    y = x * 150e-9 * rng.uniform(*spread, n)
    return x, y, _one_feature(x, y), y / x * 1e9


def test_minimax_fit_is_the_closed_form_on_one_cost():
    # t_i = x_i * c against y_i: the largest |c / r_i - 1| (r_i = y_i / x_i) is smallest
    # where the two extreme ratios miss by as much: c = 2 / (1 / r_min + 1 / r_max)
    x, y, obs, r = _one_cost(11, 9, (0.6, 1.5))
    c = 2 / (1 / r.min() + 1 / r.max())
    f = C.fit(obs, objective="minimax")
    assert f.objective == "minimax"
    assert f.costs["get"] == pytest.approx(c, rel=1e-6)
    assert f.residual == pytest.approx(c / r.min() - 1, rel=1e-5)
    assert f.residual == pytest.approx(np.abs(f.in_sample.ratio - 1).max(), rel=1e-9)
    assert all(f.costs[k] == 0 for k in C.FITTED if k != "get")
    lsq = C.fit(obs)
    assert np.abs(lsq.in_sample.ratio - 1).max() > f.residual + 1e-6


@pytest.mark.parametrize("overlap", [True, False])
def test_minimax_fit_is_never_worse_than_least_squares(overlap):
    costs = dict(scan_row=80.0, eq_ref=300.0, ref_row=900.0, group_row=150.0, get=120.0,
                 check=4000.0, sync_read=60_000.0, ahead_read=250_000.0, cold_page=3_000_000.0)
    exact = _statements(12, 3, 8, costs, overlap)
    f = C.fit(exact, overlap=overlap, objective="minimax")
    assert f.residual < 1e-6 and np.allclose(f.in_sample.ratio, 1.0, atol=1e-6)
    noisy = exact.copy()
    noisy["reported"] *= noisy.config.map(
        dict(zip(noisy.config.unique(), np.random.default_rng(9).uniform(0.7, 1.3, 12))))
    m = C.fit(noisy, overlap=overlap, objective="minimax")
    lsq = C.fit(noisy, overlap=overlap)
    worst = np.abs(m.in_sample.ratio - 1).max()
    assert worst == pytest.approx(m.residual, rel=1e-6)
    assert worst <= np.abs(lsq.in_sample.ratio - 1).max() + 1e-9
    assert all(v >= 0 for v in m.costs.values())
    # deterministic
    assert C.fit(noisy, overlap=overlap, objective="minimax").costs == m.costs
    loo = C.leave_one_out(noisy, {"A": ["o0"]}, overlap=overlap, objective="minimax")
    assert len(loo) == 1 and loo.fit_max_error.iloc[0] <= m.residual + 1e-9


def test_prediction_range_is_the_closed_form_on_one_cost():
    # costs keeping every other observation within its limit l: c in
    # [max (1 - l) r_i, min (1 + l) r_i]; the held-out one is predicted at x_k * c
    x, y, obs, r = _one_cost(12, 7, (0.9, 1.1))
    rest = r[1:]
    lo, hi = (1 - 0.25) * rest.max(), (1 + 0.25) * rest.min()
    out = C.prediction_range(obs, ["o0"])
    assert len(out) == 1 and out.config.iloc[0] == "o0" and not out.capped.iloc[0]
    assert out.low.iloc[0] == pytest.approx(x[0] * lo * 1e-9, rel=1e-6)
    assert out.high.iloc[0] == pytest.approx(x[0] * hi * 1e-9, rel=1e-6)
    assert out.ratio_low.iloc[0] == pytest.approx(out.low.iloc[0] / y[0])
    # tighter limits, narrower range; the reported time of the held-out row does not matter
    tight = C.prediction_range(obs, ["o0"], limits={"run1-3": 0.12})
    assert out.low.iloc[0] < tight.low.iloc[0] <= tight.high.iloc[0] < out.high.iloc[0]
    moved = obs.copy()
    moved.loc[0, "reported"] *= 5
    m = C.prediction_range(moved, ["o0"])
    assert m.low.iloc[0] == pytest.approx(out.low.iloc[0]) and m.high.iloc[0] == pytest.approx(out.high.iloc[0])
    # a feature only the held-out row has leaves its cost free: the range reaches the ceiling
    free = obs.copy()
    free["clock_reads"] = 0.0
    free.loc[0, "clock_reads"] = 1e6
    c = C.prediction_range(free, ["o0"], ceiling=4.0)
    assert c.capped.iloc[0] and c.ratio_high.iloc[0] == pytest.approx(4.0, rel=1e-6)


def test_prediction_range_of_a_two_lane_model_holds_the_true_costs():
    costs = dict(scan_row=80.0, eq_ref=300.0, ref_row=900.0, group_row=150.0, get=120.0,
                 check=4000.0, sync_read=60_000.0, ahead_read=250_000.0, cold_page=3_000_000.0)
    obs = _statements(10, 3, 13, costs, True)
    obs["reported"] *= obs.config.map(
        dict(zip(obs.config.unique(), np.random.default_rng(14).uniform(0.9, 1.1, 10))))
    out = C.prediction_range(obs, ["o0", "o1"])
    truth = C.predict(costs, obs[obs.config.isin(["o0", "o1"])]).set_index("config").predicted
    assert list(out.config) == ["o0", "o1"]
    assert (out.low.to_numpy() <= truth.loc[out.config].to_numpy() + 1e-9).all()
    assert (truth.loc[out.config].to_numpy() <= out.high.to_numpy() + 1e-9).all()
    assert (out.low < out.high).all()


def test_minimax_and_range_bad_input_is_named():
    obs = _one_feature([1e6, 2e6, 3e6], [0.1, 0.2, 0.4])
    with pytest.raises(ValueError, match="objective"):
        C.fit(obs, objective="l1")
    with pytest.raises(ValueError, match="held"):
        C.prediction_range(obs, ["nope"])
    with pytest.raises(ValueError, match="held"):
        C.prediction_range(obs, ["o0", "o1", "o2"])
    with pytest.raises(ValueError, match="limits"):
        C.prediction_range(obs, ["o0"], limits={"run1-3": -0.5})
    with pytest.raises(ValueError, match="limits lack"):
        C.prediction_range(obs, ["o0"], limits={"cold": 0.3})
    with pytest.raises(ValueError, match="ceiling"):
        C.prediction_range(obs, ["o0"], ceiling=1)
    # o1 and o2 need 100 and 133 ns per get: no cost puts both within 10%
    with pytest.raises(ValueError, match="no costs"):
        C.prediction_range(obs, ["o0"], limits={"run1-3": 0.1})


@settings(max_examples=examples(20), deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_no_costs_beat_the_floor_or_leave_the_range(seed):
    """Exactness, sampled: random cost vectors never beat the minimax floor, and every one
    that keeps the fit set within the limits predicts the held-out row inside its range."""
    rng = np.random.default_rng(seed)
    costs = dict(scan_row=80.0, eq_ref=300.0, ref_row=900.0, group_row=150.0, get=120.0,
                 check=4000.0, sync_read=60_000.0, ahead_read=250_000.0, cold_page=3_000_000.0)
    obs = _statements(7, 2, int(rng.integers(1 << 30)), costs, True)
    obs["reported"] *= obs.config.map(dict(zip(obs.config.unique(), rng.uniform(0.75, 1.25, 7))))
    floor = C.fit(obs, objective="minimax").residual
    rng_ = C.prediction_range(obs, ["o0"], limits={"run1-3": 0.4})
    low, high = float(rng_.low.iloc[0]), float(rng_.high.iloc[0])
    # the 200 cost vectors' predictions at once: C.predict's sum over each observation's
    # statements of the larger lane (test_per_statement_lanes_fit_and_predict checks that
    # formula), and C.predict itself for the first vector
    names = list(costs)
    x = np.array([[v * float(np.exp(rng.normal(0, 0.5))) for v in costs.values()]
                  for _ in range(200)]).T                                   # costs x vectors
    cols = [C.FITTED.index(k) for k in names]
    mats = C.lane_matrices(obs)
    keys, g = C.obs_groups(obs)
    pred = g @ np.maximum(mats["query"][:, cols] @ x, mats["ahead"][:, cols] @ x)
    one = C.predict(dict(zip(names, x[:, 0])), obs)
    assert [tuple(k) for k in zip(one.config, one.phase)] == keys
    assert np.allclose(one.predicted, pred[:, 0], rtol=1e-12)
    err = np.abs(pred / one.reported.to_numpy()[:, None] - 1)              # observations x vectors
    assert (err.max(axis=0) >= floor - 1e-6).all()
    held = np.array([k[0] == "o0" for k in keys])
    kept = (err[~held] <= 0.4).all(axis=0)
    t = pred[held][0, kept]
    assert ((low * (1 - 1e-6) <= t) & (t <= high * (1 + 1e-6))).all()
    assert low <= high and kept.any()


def test_held_out_ranges_table_and_its_results_rows():
    x, y, obs, r = _one_cost(15, 6, (0.9, 1.1))
    loo = C.leave_one_out(obs, {c: [c] for c in obs.config})
    t = C.held_out_ranges(obs, ["o0", "o3"], {"least squares": loo})
    assert list(t.config) == ["o0", "o3"] and (t.range_limit == "limits").all()
    one = C.prediction_range(obs, ["o3"])
    assert t.ratio_low.iloc[1] == pytest.approx(one.ratio_low.iloc[0])
    assert t["least squares"].iloc[0] == pytest.approx(loo.set_index("config").ratio["o0"])
    band = (t.ratio_low <= 1.25) & (t.ratio_high >= 0.75)
    assert (t.reachable == band).all() and t["holds (least squares)"].dtype == bool
    rows = C.range_rows(t, "x")
    assert [r["metric"] for r in rows] == ["run1-3 low", "run1-3 high"] * 2
    assert rows[1]["simulated"] == pytest.approx(t.ratio_high.iloc[0] * y[0])
    # one of the rest twice as slow: no costs keep it within 25%, so the range is over its floor
    wide = obs.copy()
    wide.loc[1, "reported"] *= 2.0
    w = C.held_out_ranges(wide, ["o0"])
    floor = C.fit(wide, list(wide.config[1:]), objective="minimax").residual
    assert floor > 0.25 and w.range_limit.iloc[0] == f"floor {floor + 1e-3:.3f}"
    assert w.ratio_low.iloc[0] <= w.ratio_high.iloc[0]


def test_band_floor_is_the_closed_form_on_one_cost():
    # t_i = x_i * c: the rest's floor is at c* = 2 / (1 / r_min + 1 / r_max); the held-out
    # o0 is within l only for c in [(1 - l) r_0, (1 + l) r_0], so the floor in band is the
    # rest's largest error at c*, or at the end of that interval nearest to c*
    x, y, obs, r = _one_cost(21, 8, (0.8, 1.2))
    rest = r[1:]

    def worst(c):
        return max(c / rest.min() - 1, 1 - c / rest.max())

    c_star = 2 / (1 / rest.min() + 1 / rest.max())
    for r0 in (c_star, 0.5 * c_star, 1.6 * c_star):         # o0 agrees with the rest, or not
        moved = obs.copy()
        moved.loc[0, "reported"] = x[0] * r0 * 1e-9
        floor, in_band = C.band_floor(moved, ["o0"])
        assert floor == pytest.approx(worst(c_star), rel=1e-6)
        c_end = min(max(c_star, 0.75 * r0), 1.25 * r0)
        assert in_band == pytest.approx(worst(c_end), rel=1e-5)
        assert (in_band == pytest.approx(floor, rel=1e-6)) == (0.75 * r0 <= c_star <= 1.25 * r0)
    # a held-out row no cost can move (no features, a time > 0) cannot be met: nan
    none = obs.copy()
    none.loc[0, "gets"] = 0.0
    floor, in_band = C.band_floor(none, ["o0"])
    assert floor == pytest.approx(worst(c_star), rel=1e-6) and np.isnan(in_band)
    with pytest.raises(ValueError, match="held"):
        C.band_floor(obs, ["nope"])
    with pytest.raises(ValueError, match="limits lack"):
        C.band_floor(obs, ["o0"], limits={"cold": 0.3})


def test_twins_bound_every_cost_vector():
    costs = dict(scan_row=80.0, eq_ref=300.0, ref_row=900.0, group_row=150.0, get=120.0,
                 check=4000.0, sync_read=60_000.0, ahead_read=250_000.0, cold_page=3_000_000.0)
    obs = _statements(4, 3, 17, costs, True)
    assert C.twins(obs).empty                               # random features: nobody's twin
    same = obs[obs.config == "o1"].assign(config="t1", reported=lambda d: d.reported * 1.4)
    near = obs[obs.config == "o2"].assign(config="t2")
    near.loc[near.index[1], "gets"] *= 1.015                 # one feature of one statement 1.5% more
    gone = obs[obs.config == "o3"].assign(config="t3")
    gone.loc[gone.index[0], "clock_reads"] = 0.0             # a feature only one of them has
    both = pd.concat([obs, same, near, gone], ignore_index=True)
    t = C.twins(both).set_index("config")
    assert sorted(t.index) == ["o1", "o2"] and list(t.twin) == ["t1", "t2"]
    assert t.separation["o1"] == 0 and t.reported_ratio["o1"] == pytest.approx(1 / 1.4)
    assert t.separation["o2"] == pytest.approx(0.015)
    assert C.twins(both, tol=0.01).config.tolist() == ["o1"]
    w = C.twins(both, both_ways=True).set_index("config")
    assert sorted(w.index) == ["o1", "o2", "t1", "t2"] and w.twin["t1"] == "o1"
    assert w.reported_ratio["t1"] == pytest.approx(1.4) and w.reported["t1"] == w.twin_reported["o1"]
    # the bound holds for every cost vector, and is reached
    rng = np.random.default_rng(18)
    ratios = []
    for _ in range(100):
        c = {k: v * float(np.exp(rng.normal(0, 1.5))) for k, v in costs.items()}
        p = C.predict(c, both).set_index("config").predicted
        assert p["o1"] == pytest.approx(p["t1"], rel=1e-12)
        ratios.append(p["t2"] / p["o2"])
    assert 1 <= min(ratios) and max(ratios) <= 1.015 + 1e-12
    only_gets = {k: (1.0 if k == "get" else 0.0) for k in costs}
    sep = C.predict(only_gets, both[both.statement == "s1"]).set_index("config").predicted
    assert sep["t2"] / sep["o2"] == pytest.approx(1.015)
    with pytest.raises(ValueError, match="tol"):
        C.twins(obs, tol=-1)


def test_twin_requirement_is_necessary_whatever_the_costs():
    costs = dict(scan_row=80.0, eq_ref=300.0, ref_row=900.0, group_row=150.0, get=120.0,
                 check=4000.0, sync_read=60_000.0, ahead_read=250_000.0, cold_page=3_000_000.0)
    obs = _statements(5, 3, 23, costs, True)
    same = obs[obs.config == "o1"].assign(config="t1", reported=lambda d: d.reported * 1.4)
    near = obs[obs.config == "o2"].assign(config="t2", reported=lambda d: d.reported * 0.9)
    near.loc[near.index[1], "gets"] *= 1.015
    both = pd.concat([obs, same, near], ignore_index=True)
    loo = C.leave_one_out(both, {c: [c] for c in dict.fromkeys(both.config)})
    req = C.twin_requirement(both, {"lsq": loo}).set_index("config")
    assert sorted(req.index) == ["o1", "o2", "t1", "t2"]
    assert list(req.twin[["o1", "t1", "o2", "t2"]]) == ["t1", "o1", "t2", "o2"]
    # separation 0: the limit times the reported ratio; 1.5% apart widens both ends by 1.5%
    assert (req.twin_needs_low["t1"], req.twin_needs_high["t1"]) == (pytest.approx(0.75 * 1.4),
                                                                     pytest.approx(1.25 * 1.4))
    assert req.twin_needs_high["o1"] == pytest.approx(1.25 / 1.4)
    assert (req.twin_needs_low["t2"], req.twin_needs_high["t2"]) == (
        pytest.approx(0.75 * 0.9 / 1.015), pytest.approx(1.25 * 0.9 * 1.015))
    # the twin's ratio is what the fold that held the configuration out predicts for it
    fold = loo.set_index("config").loc["t1"]
    o1 = both[both.config == "o1"]
    p = C.predict({k: fold[f"{k}_ns"] for k in C.FITTED}, o1).predicted.iloc[0]
    assert req.twin_fitted["t1"] == pytest.approx(p / o1.reported.iloc[0])
    assert req.ratio["t1"] == pytest.approx(req.twin_fitted["t1"] / 1.4)   # the same counts
    # necessary for every cost vector: no held-out configuration within its limit with its twin outside
    rng = np.random.default_rng(24)
    fits = {}
    for i in range(30):
        c = {k: v * float(np.exp(rng.normal(0, 0.3))) for k, v in costs.items()}
        p = C.predict(c, both[both.config.isin(["o1", "t1", "o2", "t2"])])
        fits[f"r{i}"] = p.assign(held_out=p.config, ratio=p.predicted / p.reported,
                                 **{f"{k}_ns": c[k] for k in C.FITTED})
    r = C.twin_requirement(both, fits)
    assert len(r) == 30 * 4
    assert (r.holds <= r.twin_within).all()
    assert r.holds.any() and (~r.twin_within).any() and (r.twin_within & ~r.holds).any()
    with pytest.raises(ValueError, match="lacks column"):
        C.twin_requirement(both, {"x": loo.drop(columns=["get_ns"])})
    with pytest.raises(ValueError, match="held out alone"):
        C.twin_requirement(both, {"x": loo.assign(held_out="all")})


def test_version_factor_recovers_a_slower_build_out_of_sample():
    # no cold disk (it would dominate the synthetic times and it is the same on either build)
    costs = dict(scan_row=80.0, eq_ref=300.0, ref_row=900.0, group_row=150.0, get=120.0,
                 check=4000.0, sync_read=60_000.0, ahead_read=250_000.0, cold_page=0.0)
    obs = _statements(30, 3, 31, costs, True)
    # every other configuration on the slower build (the first half of the statements is
    # query-bound, the second read-ahead-bound: each build needs both)
    obs["config"] = [("A " if int(c[1:]) % 2 == 0 else "B ") + c for c in obs.config]
    truth = C.scale_version(obs, "B", 1.5)                  # B does the same work 1.5x slower
    b = (truth.config.str.startswith("B")).to_numpy()
    assert (truth.loc[b, "gets"] == 1.5 * obs.loc[b, "gets"]).all()
    assert (truth.loc[b, "clock_reads"] == obs.loc[b, "clock_reads"]).all()     # a system call
    assert (truth.loc[~b, C.BUILD_SCALED].to_numpy() == obs.loc[~b, C.BUILD_SCALED].to_numpy()).all()
    p = C.predict(costs, truth).set_index("config").predicted
    obs["reported"] = p.loc[obs.config].to_numpy()           # measured on the two builds
    v = C.version_factor_loo(obs, ["A o0", "B o21"], "B", ks=[1.0, 1.25, 1.5, 2.0]).set_index("config")
    assert list(v.k) == [1.5, 1.5] and not v.k_at_edge.any()
    assert np.allclose(v.ratio, 1.0, rtol=1e-4) and (v.fit_residual < 1e-6).all()
    # without the factor (k = 1 only) the B configuration is mispredicted
    one = C.version_factor_loo(obs, ["B o21"], "B", ks=[1.0, 1.0001])
    assert abs(one.ratio.iloc[0] - 1) > 0.05
    with pytest.raises(ValueError, match="ks"):
        C.version_factor_loo(obs, ["A o0"], "B", ks=[1.5])
    with pytest.raises(ValueError, match="prefix"):
        C.version_factor_loo(obs, ["A o0"], "C")
    with pytest.raises(ValueError, match="features"):
        C.scale_version(obs, "B", 1.5, features=["rows"])
    with pytest.raises(ValueError, match="k = "):
        C.scale_version(obs, "B", 0)
    with pytest.raises(ValueError, match="configs"):
        C.version_factor_loo(obs, ["nope"], "B")


def test_solver_output_is_kept_out_of_standard_output(capfd):
    os.write(1, b"before\n")
    with C.quiet_fd1():
        os.write(1, b"HighsMipSolverData::transformNewIntegerFeasibleSolution\n")
    os.write(1, b"after\n")
    out = capfd.readouterr().out
    assert out == "before\nafter\n"


def test_version_factor_is_the_fit_of_each_scaled_copy():
    # version_factor_loo fits each k on arrays; the same numbers as fit() on a scaled copy
    costs = dict(scan_row=80.0, eq_ref=300.0, ref_row=900.0, group_row=150.0, get=120.0,
                 check=4000.0, sync_read=60_000.0, ahead_read=250_000.0, cold_page=0.0)
    obs = _statements(12, 3, 5, costs, True)
    obs["config"] = [("A " if int(c[1:]) % 2 == 0 else "B ") + c for c in obs.config]
    rng = np.random.default_rng(6)
    obs["reported"] *= np.repeat(rng.uniform(0.8, 1.3, 12), 3)     # no k fits exactly
    ks = [0.7, 1.1, 1.6, 2.3]
    for overlap in (True, False):
        v = C.version_factor_loo(obs, ["B o1"], "B", ks=ks, overlap=overlap,
                                 features=C.BUILD_SCALED[:5])
        rest = [c for c in dict.fromkeys(obs.config) if c != "B o1"]
        fits = [C.fit(C.scale_version(obs, "B", k, C.BUILD_SCALED[:5]), rest, overlap=overlap)
                for k in ks]
        i = int(np.argmin([f.residual for f in fits]))
        scaled = C.scale_version(obs, "B", ks[i], C.BUILD_SCALED[:5])
        p = C.predict(fits[i].costs, scaled[scaled.config == "B o1"], overlap=overlap)
        assert list(v.k) == [ks[i]] * len(p)
        assert list(v.fit_residual) == [fits[i].residual] * len(p)       # bit for bit
        assert list(v.predicted) == list(p.predicted)


def test_a_program_solved_twice_is_solved_once(monkeypatch):
    import scipy.optimize
    from bufsim.experiments import ssb_cpu_fit as F

    x, y, obs, _ = _one_cost(4, 6, (0.7, 1.4))
    mats = F.lane_matrices(obs)
    keys, g = F.obs_groups(obs)
    pr = F.ExactProgram(mats["query"], mats["ahead"], g, y, True, 10 * y.max())
    cost = np.zeros(pr.nv)
    cost[pr.it] = 1.0
    calls = []
    real = scipy.optimize.milp
    monkeypatch.setattr(scipy.optimize, "milp", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(F, "SOLVED", F.OrderedDict())
    first = pr.solve(cost, 10.0)
    first[:] = -1.0                        # the caller's array, not the remembered one
    again = pr.solve(cost, 10.0)
    assert len(calls) == 1 and (again >= 0).all()
    F.SOLVED.clear()
    assert (pr.solve(cost, 10.0) == again).all() and len(calls) == 2     # HiGHS: the same answer
    pr.ub[pr.it] = again[pr.it] * 2        # another program: solved
    pr.solve(cost, 10.0)
    pr.solve(-cost, 10.0)                  # another objective: solved
    pr.solve(cost, 11.0)                   # another time limit: solved
    assert len(calls) == 5
    monkeypatch.setattr(F, "SOLVED_MAX", 2)
    pr.solve(cost, 12.0)
    assert len(F.SOLVED) == 2              # bounded: the least recently used dropped


def test_repeated_statements_share_one_max():
    # a statement repeated in its observation (and an observation repeating another's
    # statements) is one v in the program; the floor is that of the program where each
    # repeat is one statement with twice the counts (max(2q, 2a) = 2 max(q, a))
    from bufsim.experiments import ssb_cpu_fit as F

    costs = dict(scan_row=80.0, eq_ref=300.0, ref_row=900.0, group_row=150.0, get=120.0,
                 check=4000.0, sync_read=60_000.0, ahead_read=250_000.0, cold_page=3e6)
    obs = _statements(8, 3, 21, costs, True)
    feats = list(C.FEATURES)
    obs.loc[obs.statement == "s2", feats] = obs.loc[obs.statement == "s0", feats].to_numpy()
    twin = obs[obs.config == "o1"].assign(config="o8")          # o1's counts again
    obs = pd.concat([obs, twin], ignore_index=True)
    rng = np.random.default_rng(22)
    obs["reported"] *= np.repeat(rng.uniform(0.8, 1.25, 9), 3)
    once = obs[obs.statement != "s2"].copy()
    s0 = once.statement == "s0"
    once.loc[s0, feats] = 2 * once.loc[s0, feats].to_numpy()
    mats = F.lane_matrices(obs)
    keys, g = F.obs_groups(obs)
    y = obs.groupby(["config", "phase"], sort=False)["reported"].first().to_numpy()
    pr = F.ExactProgram(mats["query"], mats["ahead"], g, y, True, 20 * y.max())
    two = mats["query"].any(axis=1) & mats["ahead"].any(axis=1)
    distinct = len(np.unique(np.hstack([mats["query"], mats["ahead"]])[two], axis=0))
    assert pr.ie - pr.ib == distinct < two.sum()
    assert pr.g.sum() == len(obs) and pr.g.max() == 2
    def floor(o, overlap, merge):
        m = F.lane_matrices(o)
        _, go = F.obs_groups(o)
        yo = o.groupby(["config", "phase"], sort=False)["reported"].first().to_numpy()
        p = F.ExactProgram(m["query"], m["ahead"], go, yo, overlap, 20 * yo.max(), merge=merge)
        cost = np.zeros(p.nv)
        cost[p.it] = 1.0
        x = p.solve(cost, 30.0)
        pred = np.array([p.prediction(k) @ x for k in range(len(yo))])     # over y
        return x[p.it], pred

    for overlap in (True, False):
        merged, p_m = floor(obs, overlap, True)
        apart, _ = floor(obs, overlap, False)
        twice, _ = floor(once, overlap, False)
        assert merged == pytest.approx(apart, rel=1e-6) and merged == pytest.approx(twice, rel=1e-6)
        assert np.abs(p_m - 1).max() == pytest.approx(merged, rel=1e-6)
    f = C.fit(obs, objective="minimax")
    assert f.residual == pytest.approx(floor(obs, True, True)[0], rel=1e-6)
