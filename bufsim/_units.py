"""Units and the small InnoDB formulas that several layers share, written once.

Pure numbers and NumPy: the analytic models, the contention models, the
configuration and the page map all import from here (the jitted kernels keep
their own copies in ``policies/_state.py``, compiled into the kernels).
"""
from __future__ import annotations

import numpy as np

__all__ = ["PAGE_SIZE", "NS_PER_S", "NS_PER_MS", "MAX_INSTANCES", "instance_fold", "old_ratio"]

#: UNIV_PAGE_SIZE with the default innodb_page_size (16 KiB), include/univ.i.
PAGE_SIZE = 16384
#: Nanoseconds per second and per millisecond (the engine's clocks are int64 ns).
NS_PER_S = 1_000_000_000
NS_PER_MS = 1_000_000
#: MAX_BUFFER_POOLS in include/buf0buf.h: the largest innodb_buffer_pool_instances.
MAX_INSTANCES = 64

_U64 = np.uint64


def instance_fold(space_id, page_no, n_instances: int, page_shift: int = 6) -> np.ndarray:
    """``buf_pool_get``'s instance of pages: ``fold(space, page_no >> 6) mod n`` with
    ``fold(a, b) = (a << 20) + a + b`` in unsigned 64-bit arithmetic (wrapping like
    ``ulint``), buf0buf.ic / ut0rnd.ic ``ut_fold_ulint_pair``.

    ``page_shift`` other than 6 is a what-if (0: every page hashed on its own).  The
    caller checks ``n_instances`` (1..:data:`MAX_INSTANCES`).

    >>> instance_fold([1, 1, 1], [0, 64, 128], 4).tolist()
    [1, 2, 3]
    """
    s = np.asarray(space_id).astype(_U64)
    x = np.asarray(page_no).astype(_U64) >> _U64(page_shift)
    fold = (s << _U64(20)) + s + x
    return (fold % _U64(n_instances)).astype(np.int64)


def old_ratio(old_blocks_pct: int) -> int:
    """LRU_old_ratio: ``pct * 1024 // 100`` clamped to 51..1024
    (``buf_LRU_old_ratio_update_instance``, BUF_LRU_OLD_RATIO_MIN/MAX in buf0lru.h).

    >>> old_ratio(37), old_ratio(5), old_ratio(95)
    (378, 51, 972)
    """
    return min(max(old_blocks_pct * 1024 // 100, 51), 1024)
