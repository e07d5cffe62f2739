"""bufsim.advise: the knee, the target size, the replays and the instance model."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import bufsim
from bufsim.advise import advise, knee, miss_ratio_curve
from bufsim.analytic import exact_mrc
from bufsim.examples import example_trace_frame, example_trace_path


def test_knee_is_the_point_furthest_above_the_chord_on_log_sizes():
    # a concave curve: the chord from (0, 0) to (1, 1) in scaled units
    s = [1, 2, 4, 8, 16]
    assert knee(s, [0.0, 0.8, 0.9, 0.95, 1.0]) == 1
    assert knee(s, [0.0, 0.1, 0.2, 0.9, 1.0]) == 3
    assert knee(s, [0.5] * 5) == 0                      # flat: the smallest size
    # scaling the hit ratio does not move it; only log(size) matters for the x axis
    h = np.array([0.1, 0.5, 0.7, 0.75, 0.8])
    assert knee(s, h) == knee(s, 0.2 + 0.5 * h) == knee([3, 6, 12, 24, 48], h)


@pytest.fixture(scope="module")
def trace():
    rng = np.random.default_rng(2)
    hot = rng.zipf(1.3, 8000) % 1500
    scan = np.arange(4000) // 2
    return bufsim.Trace.from_arrays(np.concatenate([hot[:4000], 2000 + scan, hot[4000:]]),
                                    name="mix")


def test_report_numbers_follow_their_definitions(trace):
    rep = advise(trace, target_hit=0.73, threads=16, cores=8, preset="mysql55")
    c = rep.curve
    assert (c["size"] % 64 == 0).all() and c["size"].iloc[0] == 320
    # the curve is the exact LRU curve; the ceiling is 1 - distinct pages / gets
    pd.testing.assert_frame_equal(c, exact_mrc(trace, c["size"].to_numpy()))
    distinct = len(np.unique(trace.materialize().page))
    assert rep.ceiling == pytest.approx(1 - distinct / trace.n_gets())
    # the target size is the first evaluated size at or above the target
    ok = c["hit_ratio"] >= 0.73
    assert rep.target_pages == c["size"][ok].iloc[0] == rep.recommended_pages
    assert c["hit_ratio"][~ok].max() < 0.73 and (~ok).sum() > 1
    assert rep.knee_pages == c["size"].iloc[knee(c["size"], c["hit_ratio"])]
    # the old_blocks_time rows are replays at the recommended size
    for _, row in rep.old_blocks_time.iterrows():
        r = bufsim.replay(trace, bufsim.mysql55(pool_pages=rep.recommended_pages, instances=1,
                                                old_blocks_time_ms=int(row["old_blocks_time_ms"]),
                                                device="ssd"))
        assert row["pages_read"] == r.totals["NUMBER_PAGES_READ"]
        assert row["not_made_young"] == r.totals["PAGES_NOT_MADE_YOUNG"]
    # the instance counts keep >= 320 pages each; the choice is within 95% of the best
    inst = rep.instances
    assert (rep.recommended_pages // inst["instances"] >= 320).all()
    best = inst["throughput_tps"].max()
    chosen = inst.set_index("instances").loc[rep.recommended_instances, "throughput_tps"]
    assert chosen >= 0.95 * best
    assert (inst[inst["instances"] < rep.recommended_instances]["throughput_tps"]
            < 0.95 * best).all()
    md = rep.markdown()
    assert "kernel mutex 1000 ns" in md and "a transaction is 100 page gets" in md


def test_unreachable_target_recommends_the_knee(trace):
    rep = advise(trace, target_hit=0.999, threads=4, cores=4)
    assert rep.target_pages is None and rep.recommended_pages == rep.knee_pages
    assert "above the ceiling" in rep.markdown()


def test_bad_arguments(trace):
    for kw, msg in (({"target_hit": 0}, "target_hit=0 is out of range"),
                    ({"threads": 0}, "threads=0 is out of range"),
                    ({"preset": "mariadb105"}, "preset='mariadb105' is not supported")):
        with pytest.raises(ValueError, match=msg):
            advise(trace, **kw)


def test_default_mrc_sizes_double_until_the_footprint_fits(trace):
    df = miss_ratio_curve(trace)
    assert df["size"].tolist() == [320, 640, 1280, 2560, 5120]
    assert df["miss_ratio"].tolist() == pytest.approx((1 - df["hit_ratio"]).tolist())


def test_shipped_example_trace_is_reproducible():
    shipped = example_trace_path().read_bytes()
    fresh = example_trace_frame(1).to_csv(index=False, float_format="%.2f").encode()
    assert shipped == fresh
