"""CLOCK (second chance) with a 1-bit reference counter.

A hit sets the page's reference bit.  On a miss with a full pool the hand
inspects the oldest page: if its bit is set, the bit is cleared and the page
goes back to the head (its second chance); the first page found with a clear
bit is evicted.  The new page enters at the head with its bit *clear*.

    F. J. Corbató, "A paging experiment with the Multics system", MIT Project
    MAC report MAC-M-384, 1968 (in *In Honor of P. M. Morse*, MIT Press, 1969).

The circular buffer is modelled, as in libCacheSim, by a queue: list 1, newest
at the head, the hand at the tail; the bit is ``pst[P_REF][p]``.  Matches
libCacheSim's ``Clock`` with its defaults (``n-bit-counter=1``, ``init-freq=0``:
``Clock_insert`` sets ``freq = 0``, ``Clock_find`` increments it up to
``max_freq = 1``, ``Clock_evict`` decrements and reinserts while the tail has
``freq >= 1``) exactly.
"""
from collections import OrderedDict

from numba import njit

from ._state import I_CAP, P_REF, move_to_head, push_head, unlink
from ._state import L1_LEN, L1_TAIL


def init(ist, i, capacity):
    """Set the capacity (in pages) of instance ``i``."""
    ist[i, I_CAP] = capacity


@njit(_nrt=False, cache=True, inline="always")
def hit(pst, ist, i, p):
    """Set the reference bit of page ``p``; the page does not move."""
    pst[P_REF][p] = 1


@njit(_nrt=False, cache=True, inline="always")
def miss(pst, ist, i, p):
    """Advance the hand past referenced pages, evict, insert ``p`` with a clear bit.

    Returns
    -------
    int
        The evicted page, or -1.
    """
    victim = -1
    if ist[i, L1_LEN] >= ist[i, I_CAP]:
        v = ist[i, L1_TAIL]
        while pst[P_REF][v] == 1:
            pst[P_REF][v] = 0
            move_to_head(pst, ist, i, v)
            v = ist[i, L1_TAIL]
        unlink(pst, ist, i, v)
        victim = v
    push_head(pst, ist, i, 1, p)
    pst[P_REF][p] = 0
    return victim


class ClockTwin:
    """Reference CLOCK: an OrderedDict page -> reference bit, first key the newest."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.ring: OrderedDict[int, int] = OrderedDict()

    def access(self, p: int) -> tuple[bool, int]:
        """Returns (hit, evicted page or -1)."""
        if p in self.ring:
            self.ring[p] = 1
            return True, -1
        victim = -1
        if len(self.ring) >= self.capacity:
            while True:
                oldest, bit = next(reversed(self.ring.items()))
                if bit == 0:
                    break
                self.ring[oldest] = 0                    # second chance:
                self.ring.move_to_end(oldest, last=False)  # back to the head
            del self.ring[oldest]
            victim = oldest
        self.ring[p] = 0
        self.ring.move_to_end(p, last=False)
        return False, victim

    def lists(self) -> list[list[int]]:
        """The queue from the head (newest) to the hand, as lists 1..4."""
        return [list(self.ring), [], [], []]

    def refs(self) -> dict[int, int]:
        return dict(self.ring)
