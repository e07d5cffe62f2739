"""bufsim: a modelling suite for database buffer pools.

Replay page-access traces through InnoDB's midpoint-insertion LRU (and plain LRU,
FIFO, CLOCK, 2Q, ARC) under a virtual clock, a cost model and a device model::

    import bufsim
    trace = bufsim.synthetic.zipf_trace(1_000_000, 100_000, 0.9, seed=1)
    result = bufsim.replay(trace, bufsim.mysql56(pool_pages=8192))
    result.totals["PAGES_MADE_YOUNG"], result.hit_ratio
"""
import os as _os

if "NUMBA_CACHE_DIR" not in _os.environ:
    # Outside the Makefile (JupyterLab, scripts, bare pytest): cache compiled kernels per
    # version of the kernel sources, for the same reason as the Makefile (numba cannot see that a
    # kernel inlined code from a module that changed).  numba reads the folder when it
    # saves or loads a function, so this holds even if numba was imported first (pytest
    # imports it to resolve the NumbaWarning filter).
    import hashlib as _hashlib
    import sys as _sys
    from pathlib import Path as _Path

    _h = _hashlib.sha1()
    for _f in sorted(_Path(__file__).parent.rglob("*.py")):
        _src = _f.read_bytes()
        if b"numba" in _src:              # the modules that hold (or inline) kernels
            _h.update(_src)
    _os.environ["NUMBA_CACHE_DIR"] = str(_Path.home() / ".cache" / "bufsim" / "numba"
                                         / _h.hexdigest()[:12])
    if "numba" in _sys.modules:
        _sys.modules["numba"].config.CACHE_DIR = _os.environ["NUMBA_CACHE_DIR"]

from . import synthetic  # noqa: E402
from .config import (
    CostModel, DeviceModel, PoolConfig, mariadb105, mysql55, mysql56, mysql57,
    pages_from_bytes, preset,
)
from .engine import PoolState, ReplayResult, replay
from .pool import Pool, PoolSnapshot
from .pages import IndexSpec, SpaceSpec, Tablespaces
from .trace import FLAG_AHI, FLAG_MODIFY, FLAG_RELATCH, FLAG_SHORTCUT, FLAG_STMT_END, Chunk, Trace, read_trace

__version__ = "0.1.0"


def __getattr__(name):
    # bufsim.analytic pulls in scipy.optimize (about 1 s): imported on first use, as are
    # the workloads
    if name in ("analytic", "contention", "workloads"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'bufsim' has no attribute {name!r}")

__all__ = [
    "CostModel", "DeviceModel", "PoolConfig", "mysql55", "mysql56", "mysql57", "mariadb105",
    "pages_from_bytes", "preset", "PoolState", "Pool", "PoolSnapshot", "ReplayResult", "replay", "IndexSpec",
    "SpaceSpec", "Tablespaces", "FLAG_AHI", "FLAG_MODIFY", "FLAG_SHORTCUT", "FLAG_STMT_END", "FLAG_RELATCH", "Chunk", "Trace", "read_trace",
    "synthetic", "analytic", "contention", "workloads",
]
