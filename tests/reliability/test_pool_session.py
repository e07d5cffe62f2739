"""Issue 42: Pool session arguments (a second begin() dropped earlier gets; idle(True)
was one second; set(old_blocks_time=...) on an lru pool was ignored) and pool sizes
given as strings (``'8192'`` read as bytes without saying so, ``'infG'`` OverflowError)."""
import numpy as np
import pytest

import bufsim
from bufsim import Pool
from bufsim.config import PoolConfig, pages_from_bytes
from bufsim.pages import SpaceSpec, Tablespaces
from bufsim.trace import Chunk

SPACES = Tablespaces([SpaceSpec(1, 900, "t1")])


def test_second_begin_is_refused_and_keeps_the_open_run():
    pool = Pool(bufsim.mysql56(pool_pages=512), SPACES)
    pool.begin()
    pool.feed(Chunk.from_arrays(np.arange(100)))
    with pytest.raises(RuntimeError, match=r"Pool.begin: a run is open already .*end\(\)"):
        pool.begin()
    pool.feed(Chunk.from_arrays(np.arange(100, 150)))
    assert int(pool.end()["NUMBER_PAGES_GET"].iloc[0]) == 150  # nothing dropped
    pool.begin()  # a new run once the first ended
    assert int(pool.end()["NUMBER_PAGES_GET"].iloc[0]) == 0


@pytest.mark.parametrize("seconds, match", [
    (True, r"seconds must be a number, got True \(bool\)"),
    ("5", r"seconds must be a number, got '5' \(str\)"),
    (float("inf"), r"seconds=inf is not finite"),
    (-1, r"seconds=-1.0 is out of range; allowed: >= 0"),
])
def test_idle_refuses_what_is_not_seconds(seconds, match):
    pool = Pool(bufsim.mysql56(pool_pages=512), SPACES)
    with pytest.raises(ValueError, match=match):
        pool.idle(seconds)
    assert pool.clock_ns == 0
    pool.idle(2.5)
    assert pool.clock_ns == 2_500_000_000


@pytest.mark.parametrize("policy", ["lru", "fifo", "arc"])
def test_set_on_a_policy_without_old_sublist_is_refused(policy):
    pool = Pool(PoolConfig(policy=policy, pool_pages=512), SPACES)
    with pytest.raises(ValueError, match=rf"old_blocks_time_ms: .*policy 'innodb' only; this "
                                         rf"pool's policy is '{policy}'"):
        pool.set(old_blocks_time_ms=0)
    with pytest.raises(ValueError, match=rf"old_blocks_pct: .*'{policy}'"):
        pool.set(old_blocks_pct=20)
    assert pool.config == PoolConfig(policy=policy, pool_pages=512)
    inno = Pool(bufsim.mysql56(pool_pages=512), SPACES)
    inno.set(old_blocks_time_ms=0)
    assert inno.config.old_blocks_time_ms == 0


def test_pool_size_strings():
    with pytest.raises(ValueError, match=r"pool_pages='8192' is a string without a unit; "
                                         r"allowed: pages as an integer \(pool_pages=8192\)"):
        bufsim.mysql56(pool_pages="8192")
    for bad in ("infG", "nanM", "-1G", "1e4e5G", "G"):
        with pytest.raises(ValueError, match=rf"pool_pages='{bad}' is not a size; allowed: "
                                             r"a finite number >= 0"):
            bufsim.mysql56(pool_pages=bad)
    with pytest.raises(ValueError, match=r"pool size='infT' is not a size"):
        pages_from_bytes("infT")
    assert bufsim.mysql56(pool_pages="128M").pool_pages == 8192
    assert pages_from_bytes("1.5G") == 98304 and pages_from_bytes("8192") == 0  # bytes
    with pytest.raises(ValueError, match=r"pool_pages=\d+ is out of range; allowed: 320\.\."):
        bufsim.mysql56(pool_pages="1e400G")


def test_a_failed_run_leaves_no_run_open():
    from bufsim.trace import Trace
    pool = Pool(bufsim.mysql56(pool_pages=512), SPACES)
    pool.idle(1)
    with pytest.raises(ValueError, match="would overflow the int64 virtual clock"):
        pool.run(Trace.from_arrays([1], cpu_ns=2**63 - 1, tablespaces=SPACES))
    row = pool.run(Trace.from_arrays(np.arange(20), tablespaces=SPACES))  # not refused
    assert int(row["NUMBER_PAGES_GET"].iloc[0]) == 20
