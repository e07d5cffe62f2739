"""replay(old_blocks_time_ms_at=...): SET GLOBAL innodb_old_blocks_time at a virtual time."""
import numpy as np
import pytest

from bufsim import Trace, mysql55, replay
from bufsim.pages import SpaceSpec, Tablespaces

COUNTERS = ["PAGES_MADE_YOUNG", "PAGES_NOT_MADE_YOUNG", "NUMBER_PAGES_READ", "NUMBER_PAGES_GET"]


def _streams():
    ts = Tablespaces([SpaceSpec(1, 400, "hot"), SpaceSpec(2, 8000, "scan")])
    rng = np.random.default_rng(0)
    hot = Trace.from_arrays(rng.integers(0, 400, 30_000), cpu_ns=200_000, tablespaces=ts)
    scan = Trace.from_arrays(400 + np.arange(8000), count=20, cpu_ns=2_000, tablespaces=ts)
    return [hot, scan]


def _run(t, switch=None, sample=20_000_000):
    return replay(_streams(), mysql55(pool_pages=1000, old_blocks_time_ms=t, device="ssd"),
                  start_ns=[0, 2_000_000_000], sample_every_ns=sample, old_blocks_time_ms_at=switch)


def test_switch_at_time_zero_equals_the_setting_from_the_start():
    a, b = _run(1000), _run(0, [(0, 1000)])
    assert (a.totals[COUNTERS] == b.totals[COUNTERS]).all()
    assert a.totals["PAGES_NOT_MADE_YOUNG"] > 0


def test_switch_later_follows_the_old_value_until_then_and_the_new_one_after():
    """Switched from 0 to 1000 ms at 1.5 s (before the scan begins at 2 s): the
    samples up to 1.5 s equal the run at 0, and the scan is then resisted as with
    1000 from the start (the hot set fits, so nothing depends on the value before)."""
    zero, thousand = _run(0), _run(0, [(1_500_000_000, 1000)])
    full = _run(1000)
    cols = ["time_ns"] + COUNTERS
    def early(r):
        return r.timeline[r.timeline.time_ns <= 1_500_000_000][cols].reset_index(drop=True)
    def low(r):
        return r.timeline[r.timeline.time_ns >= 2_000_000_000]["pages:hot"].min()
    assert early(zero).equals(early(thousand))
    assert low(thousand) == low(full)
    assert low(thousand) > 3 * low(zero)
    assert thousand.config.old_blocks_time_ms == 0       # the starting value is kept


def test_switch_without_sampling_and_back_to_zero():
    a = _run(1000, [(1_000_000_000, 0)], sample=None)
    b = _run(0)
    assert a.totals["PAGES_NOT_MADE_YOUNG"] == b.totals["PAGES_NOT_MADE_YOUNG"] == 0
    assert a.totals["PAGES_MADE_YOUNG"] == b.totals["PAGES_MADE_YOUNG"]


@pytest.mark.parametrize("bad", [[(-1, 10)], [(0, -5)], [(0, 2**32)]])
def test_bad_switch_raises(bad):
    with pytest.raises(ValueError, match="old_blocks_time_ms_at"):
        _run(0, bad)


def test_the_old_keyword_names_still_work_and_warn():
    """One name for the setting everywhere (the field's, old_blocks_time_ms): replay's
    old_blocks_time_at= and Pool.set(old_blocks_time=) are deprecated aliases."""
    a = _run(0, [(1_000_000_000, 1000)], sample=None)
    with pytest.warns(DeprecationWarning, match="old_blocks_time_at= is deprecated; "
                                                "use old_blocks_time_ms_at="):
        b = replay(_streams(), mysql55(pool_pages=1000, old_blocks_time_ms=0, device="ssd"),
                   start_ns=[0, 2_000_000_000], old_blocks_time_at=[(1_000_000_000, 1000)])
    assert a.totals.equals(b.totals)
    with pytest.raises(ValueError, match="give old_blocks_time_ms_at= only"):
        replay(_streams(), mysql55(pool_pages=1000), old_blocks_time_at=[(0, 1)],
               old_blocks_time_ms_at=[(0, 1)])
    from bufsim import Pool
    pool = Pool(mysql55(pool_pages=1000), _streams()[0].tablespaces)
    with pytest.warns(DeprecationWarning, match="old_blocks_time= is deprecated"):
        pool.set(old_blocks_time=7)
    assert pool.config.old_blocks_time_ms == 7
    pool.set(old_blocks_time_ms=9)
    assert pool.config.old_blocks_time_ms == 9
    with pytest.raises(ValueError, match="give old_blocks_time_ms= only"):
        pool.set(old_blocks_time=1, old_blocks_time_ms=2)
