"""Plain LRU: a hit moves the page to the head, a miss evicts the tail.

Interface shared by the comparison policies (``lru``, ``fifo``, ``clock``,
``two_q``, ``arc``), all jitted over the state of :mod:`bufsim.policies._state`:

``init(ist, i, capacity)``
    plain Python: set the policy's parameters in row ``i`` of ``ist``.
``hit(pst, ist, i, p)``
    page ``p`` is resident (in list 1 or 2): update the lists.
``miss(pst, ist, i, p) -> victim``
    page ``p`` is not resident: make room if the instance holds ``ist[i, I_CAP]``
    resident pages (unlink the victim, or move it to a ghost list), insert ``p``,
    and return the evicted page or -1.

The engine does the rest (counters, clock, device).  :class:`LRUTwin` is the
pure-Python reference.
"""
from collections import OrderedDict

from numba import njit

from ._state import I_CAP, move_to_head, push_head, unlink
from ._state import L1_LEN, L1_TAIL


def init(ist, i, capacity):
    ist[i, I_CAP] = capacity


@njit(_nrt=False, cache=True, inline="always")
def hit(pst, ist, i, p):
    move_to_head(pst, ist, i, p)


@njit(_nrt=False, cache=True, inline="always")
def miss(pst, ist, i, p):
    victim = -1
    if ist[i, L1_LEN] >= ist[i, I_CAP]:
        victim = ist[i, L1_TAIL]
        unlink(pst, ist, i, victim)
    push_head(pst, ist, i, 1, p)
    return victim


class LRUTwin:
    """Reference LRU: an OrderedDict whose first key is the most recent page."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.pages: OrderedDict[int, None] = OrderedDict()

    def access(self, p: int) -> tuple[bool, int]:
        """Returns (hit, evicted page or -1)."""
        if p in self.pages:
            self.pages.move_to_end(p, last=False)
            return True, -1
        victim = -1
        if len(self.pages) >= self.capacity:
            victim, _ = self.pages.popitem(last=True)
        self.pages[p] = None
        self.pages.move_to_end(p, last=False)
        return False, victim

    def lists(self) -> list[list[int]]:
        """Resident lists from head to tail, as the kernel's lists 1..4."""
        return [list(self.pages), [], [], []]
