"""ARC, the Adaptive Replacement Cache.

    N. Megiddo and D. S. Modha, "ARC: A self-tuning, low overhead replacement
    cache", *Proc. 2nd USENIX Conference on File and Storage Technologies
    (FAST '03)*, pp. 115-130, 2003 (Fig. 4, "ARC(c)").

Lists (the array state of :mod:`bufsim.policies._state`), each an LRU list
with its most recent page at the head:

======  ====  ================================================================
list 1  T1    resident pages seen exactly once recently
list 2  T2    resident pages seen at least twice recently
list 3  B1    ghosts (ids only) of pages evicted from T1
list 4  B2    ghosts of pages evicted from T2
======  ====  ================================================================

``ist[i, I_P]`` is the adaptive target size ``p`` of T1, an integer in
``[0, c]``, starting at 0.  Access to page x (Fig. 4):

* I   x in T1 or T2: move x to the head of T2.
* II  x in B1: ``p = min(p + d1, c)`` with ``d1 = max(1, |B2| // |B1|)``;
  REPLACE(x, p); move x to the head of T2.
* III x in B2: ``p = max(p - d2, 0)`` with ``d2 = max(1, |B1| // |B2|)``;
  REPLACE(x, p); move x to the head of T2.
* IV  x nowhere: (A) if ``|T1| + |B1| = c``: if ``|T1| < c`` drop the B1 tail
  and REPLACE, else evict the T1 tail without remembering it; (B) else, if
  ``|T1| + |T2| + |B1| + |B2| >= c``: drop the B2 tail when the total is
  ``2c``, and REPLACE.  Put x at the head of T1.
* REPLACE(x, p): if ``|T1| >= 1`` and (``|T1| > p`` or (x in B2 and
  ``|T1| = p``)) move the T1 tail to the head of B1, else move the T2 tail to
  the head of B2.

The kernel evicts only when the pool is full (``|T1| + |T2| = c``), as
libCacheSim does; by the paper's invariants (``|T1| + |B1| <= c``, total
``<= 2c``, ghosts exist only once the pool has filled) that is the same
algorithm, which the twin tests check against :class:`ARCTwin`, a literal
transcription of Fig. 4.

**Difference from libCacheSim.**  libCacheSim's ``ARC``
(``libCacheSim/cache/eviction/ARC.c``) keeps ``p`` and the deltas as
``double`` (``delta = MAX((double)|B2| / |B1|, 1)``; its source notes it
switched from int to float to agree with another implementation), whereas
here ``p`` is an integer and the deltas are floored.  The paper does not fix
the type; integer ``p`` keeps the state in int64.  Everything else agrees, so
``ARCTwin(c, real_p=True)``, which uses Python floats (IEEE doubles, same
operations in the same order), reproduces libCacheSim hit for hit, while the
integer version's hit count differs from it by at most 34 of 20,000 gets
(0.17%; either sign) on the traces of ``tests/policies/test_libcachesim.py``, which
asserts a bound of 0.5% of the gets.  libCacheSim also falls
back to T1 in REPLACE when T2 is empty; with unit-size pages that case cannot
arise, and the kernel keeps the guard only as a safety net.
"""
from collections import OrderedDict

from numba import njit

from ._state import I_CAP, I_P, P_WHERE, drop, move_to_head, push_head, unlink
from ._state import L1_LEN, L1_TAIL, L2_LEN, L2_TAIL, L3_LEN, L3_TAIL, L4_LEN, L4_TAIL


def init(ist, i, capacity):
    """Set the capacity of instance ``i`` and the target ``p = 0``."""
    ist[i, I_CAP] = capacity
    ist[i, I_P] = 0


@njit(_nrt=False, cache=True, inline="always")
def hit(pst, ist, i, p):
    """Case I: move ``p`` from T1 or within T2 to the head of T2."""
    if pst[P_WHERE][p] == 1:
        unlink(pst, ist, i, p)
        push_head(pst, ist, i, 2, p)
    else:
        move_to_head(pst, ist, i, p)


@njit(_nrt=False, cache=True, inline="always")
def _replace(pst, ist, i, in_b2):
    """REPLACE(x, p): demote the T1 or the T2 tail to its ghost list; return it."""
    t1 = ist[i, L1_LEN]
    target = ist[i, I_P]
    if (t1 >= 1 and (t1 > target or (in_b2 and t1 == target))) or ist[i, L2_LEN] == 0:
        v = ist[i, L1_TAIL]
        unlink(pst, ist, i, v)
        push_head(pst, ist, i, 3, v)
    else:
        v = ist[i, L2_TAIL]
        unlink(pst, ist, i, v)
        push_head(pst, ist, i, 4, v)
    return v


@njit(_nrt=False, cache=True, inline="always")
def miss(pst, ist, i, p):
    """Cases II-IV: adapt ``p`` on a ghost hit, make room, insert ``p``.

    Returns
    -------
    int
        The page that stopped being resident (now a ghost in B1 or B2, or
        forgotten in case IV-A), or -1.
    """
    c = ist[i, I_CAP]
    where = pst[P_WHERE][p]
    full = ist[i, L1_LEN] + ist[i, L2_LEN] >= c
    victim = -1
    if where == 3 or where == 4:
        b1 = ist[i, L3_LEN]
        b2 = ist[i, L4_LEN]
        if where == 3:                                   # case II
            d = b2 // b1
            if d < 1:
                d = 1
            ist[i, I_P] = min(ist[i, I_P] + d, c)
        else:                                            # case III
            d = b1 // b2
            if d < 1:
                d = 1
            ist[i, I_P] = max(ist[i, I_P] - d, 0)
        unlink(pst, ist, i, p)
        if full:
            victim = _replace(pst, ist, i, where == 4)
        push_head(pst, ist, i, 2, p)
        return victim
    if full:                                             # case IV
        if ist[i, L1_LEN] + ist[i, L3_LEN] >= c:                   # (A) |L1| = c
            if ist[i, L3_LEN] > 0:
                drop(pst, ist, i, ist[i, L3_TAIL])
                victim = _replace(pst, ist, i, False)
            else:
                victim = ist[i, L1_TAIL]
                unlink(pst, ist, i, victim)
        else:                                            # (B) |L1| < c
            if ist[i, L1_LEN] + ist[i, L2_LEN] + ist[i, L3_LEN] + ist[i, L4_LEN] >= 2 * c and ist[i, L4_LEN] > 0:
                drop(pst, ist, i, ist[i, L4_TAIL])
            victim = _replace(pst, ist, i, False)
    push_head(pst, ist, i, 1, p)
    return victim


class ARCTwin:
    """Reference ARC, a literal transcription of Fig. 4 of the paper.

    T1, T2, B1, B2 are OrderedDicts whose *last* key is the most recent page.
    With ``real_p=True`` the target ``p`` and the deltas are floats, as in
    libCacheSim; by default they are integers, as in the kernel.
    """

    def __init__(self, capacity: int, real_p: bool = False):
        self.c = capacity
        self.real_p = real_p
        self.p = 0.0 if real_p else 0
        self.t1: OrderedDict[int, None] = OrderedDict()
        self.t2: OrderedDict[int, None] = OrderedDict()
        self.b1: OrderedDict[int, None] = OrderedDict()
        self.b2: OrderedDict[int, None] = OrderedDict()

    def _ratio(self, a: int, b: int):
        return max(a / b, 1) if self.real_p else max(a // b, 1)

    def _replace(self, x_in_b2: bool) -> int:
        n1 = len(self.t1)
        if n1 >= 1 and (n1 > self.p or (x_in_b2 and n1 == self.p)):
            y, _ = self.t1.popitem(last=False)
            self.b1[y] = None
        else:
            y, _ = self.t2.popitem(last=False)
            self.b2[y] = None
        return y

    def access(self, x: int) -> tuple[bool, int]:
        """Returns (hit, evicted page or -1)."""
        c = self.c
        if x in self.t1 or x in self.t2:                         # case I
            self.t1.pop(x, None)
            self.t2.pop(x, None)
            self.t2[x] = None
            return True, -1
        if x in self.b1:                                         # case II
            self.p = min(self.p + self._ratio(len(self.b2), len(self.b1)), c)
            y = self._replace(False)
            del self.b1[x]
            self.t2[x] = None
            return False, y
        if x in self.b2:                                         # case III
            self.p = max(self.p - self._ratio(len(self.b1), len(self.b2)), 0)
            y = self._replace(True)
            del self.b2[x]
            self.t2[x] = None
            return False, y
        y = -1                                                   # case IV
        l1 = len(self.t1) + len(self.b1)
        total = l1 + len(self.t2) + len(self.b2)
        if l1 == c:                                              # (A)
            if len(self.t1) < c:
                self.b1.popitem(last=False)
                y = self._replace(False)
            else:
                y, _ = self.t1.popitem(last=False)
        elif total >= c:                                         # (B)
            if total == 2 * c:
                self.b2.popitem(last=False)
            y = self._replace(False)
        self.t1[x] = None
        return False, y

    def lists(self) -> list[list[int]]:
        """T1, T2, B1, B2 from head (most recent) to tail."""
        return [list(reversed(d)) for d in (self.t1, self.t2, self.b1, self.b2)]
