"""Issue 42, item 1: a snapshot carries the configuration and tablespaces of its pool;
Pool.restore refuses one of another pool (an lru snapshot restored into an innodb pool
crashed the next run; a 5.6 snapshot silently turned a 5.5 pool into 5.6)."""
import numpy as np
import pytest

import bufsim
from bufsim import Pool
from bufsim.config import PoolConfig
from bufsim.pages import SpaceSpec, Tablespaces

SPACES = Tablespaces([SpaceSpec(1, 900, "t1")])


@pytest.mark.parametrize("taken, into, field", [
    (PoolConfig(policy="lru", pool_pages=512), PoolConfig(policy="innodb", pool_pages=512),
     "policy='lru' (this pool: 'innodb')"),
    (PoolConfig(policy="fifo", pool_pages=512), PoolConfig(policy="innodb", pool_pages=512),
     "policy='fifo'"),
    (bufsim.mysql56(pool_pages=512), bufsim.mysql55(pool_pages=512), "version='5.6'"),
    (bufsim.mysql56(pool_pages=512, device="ssd"), bufsim.mysql56(pool_pages=512), "device="),
    (bufsim.mysql56(pool_pages=512, old_blocks_pct=20),
     bufsim.mysql56(pool_pages=512, old_blocks_pct=50), "old_blocks_pct=20 (this pool: 50)"),
])
def test_restore_refuses_another_configuration(taken, into, field):
    snap = Pool(taken, SPACES).snapshot()
    pool = Pool(into, SPACES)
    before = pool._state.copy_arrays()
    with pytest.raises(ValueError, match="another configuration") as e:
        pool.restore(snap)
    assert field in str(e.value)
    assert pool.config == into  # unchanged: the pool did not take the snapshot's settings
    for k, v in before.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(getattr(pool._state, k), v, err_msg=k)


def test_restore_refuses_other_tablespaces():
    other = Tablespaces([SpaceSpec(1, 900, "t1"), SpaceSpec(2, 100, "t2")])
    snap = Pool("mysql56", SPACES).snapshot()
    with pytest.raises(ValueError, match="other tablespaces"):
        Pool("mysql56", other).restore(snap)


def test_restore_keeps_set_values_and_accepts_a_twin_pool():
    pool = Pool(bufsim.mysql56(pool_pages=512), SPACES)
    pool.set(old_blocks_time_ms=0, old_blocks_pct=60)
    snap = pool.snapshot()
    pool.set(old_blocks_time_ms=5, old_blocks_pct=20)
    pool.restore(snap)  # SET GLOBAL values come back with the snapshot
    assert (pool.config.old_blocks_time_ms, pool.config.old_blocks_pct) == (0, 60)
    twin = Pool(bufsim.mysql56(pool_pages=512), Tablespaces([SpaceSpec(1, 900, "t1")]))
    twin.restore(snap)  # another pool created with the same configuration, equal tablespaces
    assert twin.config.old_blocks_pct == 60
    assert int(twin._state.cfg[bufsim.policies._state.K_OLDTIME]) == 0
