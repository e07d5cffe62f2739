"""bufsim: a modelling suite for database buffer pools.

Replay page-access traces through InnoDB's midpoint-insertion LRU (and plain LRU,
FIFO, CLOCK, 2Q, ARC) under a virtual clock, a cost model and a device model::

    import bufsim
    trace = bufsim.synthetic.zipf_trace(1_000_000, 100_000, 0.9, seed=1)
    result = bufsim.replay(trace, bufsim.mysql56(pool_pages=8192))
    result.totals["PAGES_MADE_YOUNG"], result.hit_ratio
"""
from . import _numba_cache

_numba_cache.install()  # one cache folder for make, JupyterLab and papermill

from . import synthetic, versions  # noqa: E402
from ._validation import TraceError  # noqa: E402
from .config import (
    PRESETS, CostModel, DeviceModel, PoolConfig, mariadb105, mariadb1011, mariadb114, mysql55,
    mysql56, mysql57, mysql80, mysql84, pages_from_bytes, preset,
)
from .engine import ReplayResult, replay
from .pool import Pool, PoolSnapshot
from .pages import IndexSpec, SpaceSpec, Tablespaces
from .trace import (FLAG_AHI, FLAG_MODIFY, FLAG_RELATCH, FLAG_SHORTCUT, FLAG_STMT_END, FLAG_TEMP,
                    Chunk, Trace)
from .trace import FLAG_DESCENT, FLAG_NO_RA, FLAG_STEP
from .trace_import import read_trace
from .sweeps import sweep  # noqa: E402

__version__ = "0.1.0"


def __getattr__(name):
    # bufsim.analytic pulls in scipy.optimize (about 1 s): imported on first use, as are
    # the workloads and the live-server tier
    if name in ("analytic", "contention", "workloads", "live"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'bufsim' has no attribute {name!r}")

__all__ = [
    "CostModel", "DeviceModel", "PoolConfig", "mysql55", "mysql56", "mysql57", "mysql80", "mysql84",
    "mariadb105", "mariadb1011", "mariadb114", "PRESETS", "versions", "pages_from_bytes", "preset", "TraceError", "Pool", "PoolSnapshot", "ReplayResult",
    "replay", "IndexSpec", "SpaceSpec", "Tablespaces", "FLAG_AHI", "FLAG_MODIFY", "FLAG_SHORTCUT",
    "FLAG_STMT_END", "FLAG_RELATCH", "FLAG_TEMP", "FLAG_STEP", "FLAG_DESCENT", "FLAG_NO_RA",
    "Chunk", "Trace", "read_trace",
    "synthetic", "analytic", "contention", "workloads", "live", "sweep",
]
