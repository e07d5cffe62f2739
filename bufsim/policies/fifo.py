"""FIFO: a hit changes nothing, a miss evicts the page inserted longest ago.

The oldest replacement discipline there is; its non-monotone miss count (more
frames, more misses on ``1 2 3 4 1 2 5 1 2 3 4 5``) is Belady's anomaly:

    L. A. Belady, R. A. Nelson and G. S. Shedler, "An anomaly in space-time
    characteristics of certain programs running in a paging machine",
    *Communications of the ACM* 12(6):349-353, 1969.

List 1 holds the resident pages, newest at the head.  The kernels follow the
interface documented in :mod:`bufsim.policies.lru`; :class:`FIFOTwin` is the
pure-Python reference.  Matches libCacheSim's ``FIFO`` exactly (unit sizes).
"""
from collections import deque

from numba import njit

from . import lru
from ._state import I_CAP


def init(ist, i, capacity):
    """Set the capacity (in pages) of instance ``i``."""
    ist[i, I_CAP] = capacity


@njit(_nrt=False, cache=True, inline="always")
def hit(pst, ist, i, p):
    """A FIFO hit leaves the queue untouched."""
    return


# A miss evicts the tail and inserts at the head exactly as in LRU; the two policies
# differ only in what a hit does.
miss = lru.miss


class FIFOTwin:
    """Reference FIFO: a deque whose left end is the newest page."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.queue: deque[int] = deque()
        self.resident: set[int] = set()

    def access(self, p: int) -> tuple[bool, int]:
        """Returns (hit, evicted page or -1)."""
        if p in self.resident:
            return True, -1
        victim = -1
        if len(self.queue) >= self.capacity:
            victim = self.queue.pop()
            self.resident.discard(victim)
        self.queue.appendleft(p)
        self.resident.add(p)
        return False, victim

    def lists(self) -> list[list[int]]:
        """The queue from newest to oldest, as the kernel's lists 1..4."""
        return [list(self.queue), [], [], []]
