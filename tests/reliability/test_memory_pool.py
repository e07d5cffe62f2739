"""Issue 42, item 2: a pool whose state cannot fit in memory is refused before anything
is allocated (a valid ``--pool 16T`` allocated 2**30 frames up front and was OOM-killed)."""
import os
import resource
import subprocess
import sys
import time

import pytest

import bufsim
from bufsim import Pool, _pool_state
from bufsim._memory import PoolMemoryError, memory_available
from bufsim.config import PoolConfig
from bufsim.pages import SpaceSpec, Tablespaces
from bufsim.paths import repo_root

SPACES = Tablespaces([SpaceSpec(1, 900, "t1")])
HUGE = PoolConfig(policy="lru", pool_pages=2**40)  # 55 TiB of frame state: fits nowhere


def test_every_path_refuses_a_pool_that_cannot_fit():
    avail, how = memory_available()
    assert avail is not None and avail > 0 and "MemAvailable" in how
    for make in (lambda: Pool(HUGE, SPACES),
                 lambda: bufsim.replay(bufsim.Trace.from_arrays([1, 2], tablespaces=SPACES), HUGE),
                 lambda: _pool_state.PoolState(HUGE, SPACES)):
        with pytest.raises(PoolMemoryError, match=r"pool_pages=1,099,511,627,776 .* would need "
                                                  r"55\.0 TiB of memory .* available"):
            make()
    assert issubclass(PoolMemoryError, ValueError)


def _limit_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (8_000_000 * 1024, 8_000_000 * 1024))  # ulimit -v


@pytest.mark.parametrize("trace", ["data/traces/example.csv", "no/such/trace.csv"])
def test_cli_refuses_16T_under_8GB_before_reading(trace):
    root = repo_root()
    env = dict(os.environ, BUFSIM_ROOT=str(root))
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "bufsim", "replay", trace, "--pool", "16T"],
                       cwd=root, env=env, capture_output=True, text=True, timeout=120,
                       preexec_fn=_limit_address_space)
    elapsed = time.monotonic() - t0
    assert p.returncode == 2, p.stderr
    # the memory it would need, what is available, and why (the 8 GB limit): before the
    # trace is read, so a missing trace is not even looked at
    assert "would need 55.0 GiB of memory" in p.stderr, p.stderr
    assert "RLIMIT_AS 7.6 GiB" in p.stderr and "no such file" not in p.stderr
    print(f"refused in {elapsed:.2f} s")
