"""bufsim.experiments.explorer (notebook 08): the workloads' traces and one replay."""
import numpy as np
import pytest

import bufsim
from bufsim.experiments import explorer as E


def test_explore_reports_the_replay_it_ran():
    row, resident, hit = E.explore("hot set + scans", n_gets=20_000, seed=3, old_blocks_time_ms=1000,
                                   old_blocks_pct=37, pool_pages=1500, instances=2, device="ssd")
    res = bufsim.replay(E.trace("hot set + scans", 20_000, 3),
                        bufsim.mysql56(pool_pages=1500, instances=2, old_blocks_time_ms=1000,
                                       old_blocks_pct=37, device="ssd"))
    r = row.iloc[0]
    for k in E.COUNTERS:
        assert r[k] == int(res.totals[k]), k
    assert r["hit ratio"] == round(res.hit_ratio, 4)
    assert set(resident["index"]) == {"hot", "scan", "pool size"}
    assert (resident[resident["index"] == "pool size"].pages == 1500).all()
    h = hit.hit_ratio.dropna()
    assert len(h) > 0 and ((h >= 0) & (h <= 1)).all()


def test_traces_are_memoised_and_seeded():
    a = E.trace("uniform", 10_000, 1)
    assert E.trace("uniform", 10_000, 1) is a
    pages = [np.concatenate([c.page for c in E.trace("hot set only", 10_000, s)]) for s in (1, 2)]
    assert not np.array_equal(pages[0], pages[1])


def test_unknown_workload_names_the_allowed_ones():
    with pytest.raises(ValueError, match="workload='zipf' is unknown; allowed: hot set"):
        E.trace("zipf", 10_000, 1)
