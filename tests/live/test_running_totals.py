"""bufsim.live.validation._running_totals: the counters after each phase of one pool's
replay equal those of replaying each prefix on its own (07's rows used three replays per
run; they now take one pass).  Offline: no server needed."""
import numpy as np
import pytest

from bufsim import Trace, mariadb1011
from bufsim.live import validation as V
from bufsim.pages import SpaceSpec, Tablespaces


@pytest.mark.parametrize("pool_pages,depth,read_ahead", [(630, 100, 56), (1265, 1536, 56),
                                                          (379, 1024, 0)])
def test_running_totals_are_the_prefix_replays(pool_pages, depth, read_ahead):
    ts0 = Tablespaces([SpaceSpec(5, 900, "t")])
    ts = V._with_system_space(ts0)
    boot = V._startup_trace(ts, 280, 131)       # the server's startup pages, 131 temporary
    scan = V._rebase(Trace.from_arrays(np.arange(700), count=3, cpu_ns=1000, tablespaces=ts0), ts)
    cfg = mariadb1011(pool_pages=pool_pages, lru_scan_depth=depth,
                      read_ahead_threshold=read_ahead, device="ssd")
    parts = [boot, scan, scan]
    running = V._running_totals(parts, cfg)
    for i, got in enumerate(running):
        want = V._totals(parts[:i + 1], cfg)
        for k in got.index:
            assert int(got[k]) == int(want[k]), (i, k)
    # the phases differ (a test of equal numbers that could not differ would prove nothing)
    assert running[2]["NUMBER_PAGES_GET"] == running[1]["NUMBER_PAGES_GET"] + 2100
    assert running[1]["NUMBER_PAGES_READ"] > 0 and running[2]["evictions"] > 0
