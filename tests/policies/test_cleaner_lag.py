"""MariaDB 10.11's page cleaner woken for the LRU, and ``PoolConfig.cleaner_lag``.

A user thread that takes a free block leaving fewer than innodb_lru_scan_depth / 2
(with more than 256 pages in the LRU) wakes the page cleaner (buf_LRU_get_free_block ->
page_cleaner_wakeup); the cleaner's LRU batch then evicts from the tail until
lru_scan_depth blocks are free or the LRU is down to min(pool / 20 - 1, 256) pages.
With lru_scan_depth above the pool's page count the free list never reaches its
target, so each batch empties the LRU to that floor, and the LRU is at its longest at
the wake: below BUF_LRU_OLD_MIN_LEN (512) at 20 MiB, so no old sublist ever exists and
nothing counts as not made young.  The server's cleaner is a thread of its own: its
batch runs when it is scheduled, and the reads of the query go on meanwhile
(``cleaner_lag`` blocks); past 512 an old sublist exists until the batch runs.
"""
import numpy as np
import pytest

from bufsim.config import CostModel, DeviceModel, PoolConfig
from bufsim.pages import SpaceSpec, Tablespaces
from bufsim.policies._state import COUNTER_NAMES
from bufsim.reference import ReferencePool

from tests.test_engine_twin import run_both

#: one table of 1,600 pages (a scan of it passes the pool several times over)
SPACE = Tablespaces([SpaceSpec(1, 1600, "t")])
NOT_YOUNG = COUNTER_NAMES.index("PAGES_NOT_MADE_YOUNG")


def _cfg(lag, *, pool=1265, pct=95, threshold=56, depth=1536):
    # 1,265 pages: the 20 MiB pool of MariaDB 10.11 (notebook 07's POOL_SIZE)
    return PoolConfig(policy="innodb", version="mariadb10.11", pool_pages=pool,
                      old_blocks_pct=pct, old_blocks_time_ms=1000,
                      read_ahead_threshold=threshold, lru_scan_depth=depth,
                      adaptive_hash_index=False, cleaner_lag=lag,
                      cost=CostModel(clock_read_ns=20, make_young_ns=100, miss_cpu_ns=1000,
                                     evict_ns=50),
                      device=DeviceModel("test", 100_000, 20_000, 100_000))


def _scan(n=1600, gets=3):
    """A scan of the table: each page got ``gets`` times in a row (rows of a page)."""
    return [(j, gets, 2_000, 0) for j in range(n)]


def _longest_lru(cfg, events):
    """The twin's replay: the LRU's greatest length after any event, and whether an old
    sublist ever existed."""
    ref = ReferencePool(cfg, SPACE, [events])
    longest, old = 0, False
    while ref.step():
        inst = ref.inst[0]
        longest = max(longest, len(inst.lru))
        old = old or inst.old_len > 0
    return longest, old, ref


def test_cleaner_lag_is_checked():
    with pytest.raises(ValueError, match="cleaner_lag"):
        _cfg(-1)
    assert _cfg(0).cleaner_lag == 0


def test_without_lag_the_lru_never_has_an_old_sublist_when_the_depth_exceeds_the_pool():
    # the batch at the wake: the LRU is at most free + LRU - lru_scan_depth / 2 pages
    # (1,265 - 768 = 497), below 512, so no page is ever old and none is not made young
    # (read-ahead off: one block per event, so the longest LRU is seen between events)
    longest, old, ref = _longest_lru(_cfg(0, threshold=0), _scan())
    assert longest == 1265 - 1536 // 2
    assert not old
    assert ref.counters()[0, NOT_YOUNG] == 0


@pytest.mark.parametrize("lag", [10, 40])
def test_a_lagged_batch_lets_the_lru_grow_by_the_lag(lag):
    # n blocks taken between the wake and the batch: the LRU grows by n past the wake's
    # length; past 512 (lag 40: 537) an old sublist exists, and the repeated gets of
    # the pages read meanwhile (95 % of the LRU old, read less than 1 s ago) count as
    # not made young; at lag 10 (507) neither happens
    longest, old, ref = _longest_lru(_cfg(lag, threshold=0), _scan())
    assert longest == 1265 - 1536 // 2 + lag
    assert old == (longest >= 512)
    assert (ref.counters()[0, NOT_YOUNG] > 0) == (longest >= 512)


@pytest.mark.parametrize("lag", [0, 40, 70])
@pytest.mark.parametrize("threshold", [0, 56])
def test_cleaner_lag_kernel_matches_reference(lag, threshold):
    # event by event (every counter, the lists, the old pages, the free count), with
    # read-ahead on and off; a second pass of the table re-reads what the batches freed
    state, ref = run_both(_cfg(lag, threshold=threshold), SPACE, [_scan() + _scan(800, 2)])
    totals = dict(zip(COUNTER_NAMES, ref.counters().sum(axis=0)))
    assert totals["evictions"] > 1600
    assert (totals["PAGES_NOT_MADE_YOUNG"] > 0) == (lag > 512 - (1265 - 768))


def test_cleaner_lag_is_inert_where_the_free_list_is_not_refilled_on_demand():
    # MariaDB 10.5 has no on-demand refill (ServerVersion.refill_on_demand): no wake, no lag
    a = PoolConfig(policy="innodb", version="mariadb10.5", pool_pages=1265,
                   lru_scan_depth=1536, cleaner_lag=0)
    b = PoolConfig(policy="innodb", version="mariadb10.5", pool_pages=1265,
                   lru_scan_depth=1536, cleaner_lag=40)
    ra = ReferencePool(a, SPACE, [_scan()])
    rb = ReferencePool(b, SPACE, [_scan()])
    while ra.step():
        pass
    while rb.step():
        pass
    np.testing.assert_array_equal(ra.counters(), rb.counters())
