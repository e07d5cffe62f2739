"""Units and the small InnoDB formulas that several layers share, written once.

The analytic models, the contention models, the configuration, the page map and
the jitted kernels (through ``policies/_state.py``) all import from here: the
instance fold is one jitted function, called by the kernels per page and by
:func:`instance_fold` over arrays.
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["PAGE_SIZE", "NS_PER_S", "NS_PER_MS", "MAX_INSTANCES", "fold_instance", "instance_fold",
           "old_ratio"]

#: UNIV_PAGE_SIZE with the default innodb_page_size (16 KiB), include/univ.i.
PAGE_SIZE = 16384
#: Nanoseconds per second and per millisecond (the engine's clocks are int64 ns).
NS_PER_S = 1_000_000_000
NS_PER_MS = 1_000_000
#: MAX_BUFFER_POOLS in include/buf0buf.h: the largest innodb_buffer_pool_instances.
MAX_INSTANCES = 64

@njit(_nrt=False, cache=True)
def fold_instance(space_id, page_no, n_inst, page_shift=6):
    """``buf_pool_get``'s instance of one page: ``fold(space, page_no >> 6) mod n_inst``
    with ``fold(a, b) = (a << 20) + a + b`` in unsigned 64-bit arithmetic (wrapping like
    ``ulint``), buf0buf.ic / ut0rnd.ic ``ut_fold_ulint_pair``.  Jitted: the kernels call
    it when they register a page."""
    s = np.uint64(space_id)
    x = np.uint64(page_no) >> np.uint64(page_shift)
    f = (s << np.uint64(20)) + s + x
    return np.int64(f % np.uint64(n_inst))


@njit(_nrt=False, cache=True)
def _fold_all(space_id, page_no, n_inst, page_shift, out):
    for i in range(out.size):
        out[i] = fold_instance(space_id[i], page_no[i], n_inst, page_shift)


def instance_fold(space_id, page_no, n_instances: int, page_shift: int = 6) -> np.ndarray:
    """:func:`fold_instance` over arrays (broadcast against each other): the instance of
    each page.

    ``page_shift`` other than 6 is a what-if (0: every page hashed on its own).  The
    caller checks ``n_instances`` (1..:data:`MAX_INSTANCES`).

    >>> instance_fold([1, 1, 1], [0, 64, 128], 4).tolist()
    [1, 2, 3]
    """
    s, p = np.broadcast_arrays(np.asarray(space_id, dtype=np.int64), np.asarray(page_no, dtype=np.int64))
    out = np.empty(s.shape, dtype=np.int64)
    _fold_all(np.ascontiguousarray(s).ravel(), np.ascontiguousarray(p).ravel(), int(n_instances),
              int(page_shift), out.reshape(-1))
    return out


def old_ratio(old_blocks_pct: int) -> int:
    """LRU_old_ratio: ``pct * 1024 // 100`` clamped to 51..1024
    (``buf_LRU_old_ratio_update_instance``, BUF_LRU_OLD_RATIO_MIN/MAX in buf0lru.h).

    >>> old_ratio(37), old_ratio(5), old_ratio(95)
    (378, 51, 972)
    """
    return min(max(old_blocks_pct * 1024 // 100, 51), 1024)
