"""The floor: a from-scratch minimal array LRU in Numba, to measure bufsim against.

A page->frame ``int32`` map over the page numbers and pool-sized prev/next/page
arrays; no clock, no device, no counters but hits.  ``make bench`` replays the same
traces through it and through bufsim, in the same process, and reports bufsim's
rates as ratios of this one; its hits must equal bufsim ``lru``'s.
"""
import numpy as np
from numba import njit

from bufsim.policies._state import PREFETCH_AHEAD, ix, prefetch


@njit(cache=True, inline="always")
def _signed(i):
    return i


def _make(pf, unsigned=False):
    """The floor; with ``pf`` (a compile-time constant) it also prefetches the map entry of
    the event PREFETCH_AHEAD ahead, as bufsim's fast loops do; with ``unsigned`` its array
    indices are typed unsigned (``bufsim.policies._state.ix``), so that numba leaves out
    its negative-index fix-up, as bufsim's fast loops do since 2026-11-27."""
    u = ix if unsigned else _signed

    def floor(pages, counts, n_pages, capacity):
        """Hits of an LRU of ``capacity`` frames over events (page, count)."""
        fmap = np.full(n_pages, -1, dtype=np.int32)
        prev = np.full(capacity, -1, dtype=np.int32)
        nxt = np.full(capacity, -1, dtype=np.int32)
        page = np.zeros(capacity, dtype=np.int64)
        head, tail, used, hits = -1, -1, 0, 0
        n = pages.shape[0]
        for e in range(n):
            p = pages[u(e)]
            if pf and e + PREFETCH_AHEAD < n:
                prefetch(fmap, pages[u(e + PREFETCH_AHEAD)])
            for _ in range(counts[u(e)]):
                f = fmap[u(p)]
                if f >= 0:
                    hits += 1
                    if f == head:
                        continue
                    a, b = prev[u(f)], nxt[u(f)]    # unlink f (not the head)
                    nxt[u(a)] = b
                    if b >= 0:
                        prev[u(b)] = a
                    else:
                        tail = a
                elif used < capacity:
                    f = used
                    used += 1
                    page[u(f)] = p
                    fmap[u(p)] = f
                    if tail < 0:
                        tail = f
                else:
                    f = tail                        # evict the tail
                    tail = prev[u(f)]
                    nxt[u(tail)] = -1
                    fmap[u(page[u(f)])] = -1
                    page[u(f)] = p
                    fmap[u(p)] = f
                prev[u(f)] = -1                     # push f at the head
                nxt[u(f)] = head
                if head >= 0:
                    prev[u(head)] = f
                head = f
        return hits
    return floor


#: the floor of ``make bench``
floor_lru = njit(cache=True)(_make(False))
#: the floor with the fast loops' prefetch (benchmarks/midpoint_floor.py times it)
floor_lru_prefetch = njit(cache=True)(_make(True))
#: the floor with unsigned indices: informational (make bench's ``floor_lru_unsigned`` row);
#: issue 14's ratios stay against :data:`floor_lru`, the kernel the issue describes
floor_lru_unsigned = njit(cache=True)(_make(False, unsigned=True))
