"""2Q, the full version: a FIFO probation queue, an LRU main queue, a ghost FIFO.

    T. Johnson and D. Shasha, "2Q: A low overhead high performance buffer
    management replacement algorithm", *Proc. 20th VLDB*, pp. 439-450, 1994
    (Fig. "Full 2Q").

Lists (the array state of :mod:`bufsim.policies._state`):

==========  =======  ==============================================================
list 1      A1in     resident FIFO of pages seen once recently, newest at the head
list 2      Am       resident LRU of pages re-referenced after leaving A1in
list 3      A1out    ghost FIFO (page ids only) of pages evicted from A1in
==========  =======  ==============================================================

Parameters, set by :func:`init` for a pool of ``c`` pages, with the paper's
recommended ratios (also libCacheSim's defaults ``Ain-size-ratio=0.25``,
``Aout-size-ratio=0.5``):

* ``ist[i, I_K1] = Kin = floor(c / 4)`` (libCacheSim: ``(int64_t)(c * 0.25)``)
* ``ist[i, I_K2] = Kout = floor(c / 2)`` (libCacheSim: ``(int64_t)(c * 0.5)``)

Access to page X (the paper's pseudo-code):

* X in Am: move X to the head of Am.   X in A1in: do nothing.
* X in A1out: remove X from A1out, *reclaimfor(X)*, put X at the head of
  Am (a ghost hit never enters A1in; the paper leaves the removal implicit,
  libCacheSim does it, and a page is in one list at a time here).   X nowhere: *reclaimfor(X)*, put X at the head of A1in.
* *reclaimfor*: if the pool has a free frame, use it; else if
  ``|A1in| > Kin`` evict the A1in tail and push its id on A1out (dropping the
  A1out tail when ``|A1out| = Kout``); else evict the Am tail (not remembered).

A1in is therefore allowed to grow beyond Kin while the pool fills, and shrinks
back to Kin only as pages are promoted to Am.

libCacheSim (``libCacheSim/cache/eviction/TwoQ.c``) implements exactly this for
``c >= 4`` and the tests check hit-for-hit agreement.  Its Am is a sub-LRU of
``c - Kin`` objects that could evict on its own, but that never fires: A1in
never shrinks below Kin once it has reached it, and Am only gets pages after
that, so ``|Am| <= c - Kin`` always, with equality only when the pool is full,
in which case *reclaimfor* already evicted from Am.  **Difference:** for
``c < 4`` libCacheSim's ``TwoQ_can_insert`` requires ``obj_size <= Kin = 0``,
so it never admits anything and every access misses; here 2Q runs as the paper
describes with ``Kin = 0`` (every eviction takes the A1in tail whenever A1in is
not empty), and ``Kout = 0`` at ``c = 1`` keeps no ghosts.
"""
from collections import OrderedDict

from numba import njit

from ._state import I_CAP, I_K1, I_K2, P_WHERE, drop, move_to_head, push_head, unlink
from ._state import L1_LEN, L1_TAIL, L2_LEN, L2_TAIL, L3_LEN, L3_TAIL


def init(ist, i, capacity):
    """Set the capacity, ``Kin = capacity // 4`` and ``Kout = capacity // 2``."""
    ist[i, I_CAP] = capacity
    ist[i, I_K1] = capacity // 4
    ist[i, I_K2] = capacity // 2


@njit(_nrt=False, cache=True, inline="always")
def hit(pst, ist, i, p):
    """A hit in Am (list 2) moves ``p`` to the head; a hit in A1in does nothing."""
    if pst[P_WHERE][p] == 2:
        move_to_head(pst, ist, i, p)


@njit(_nrt=False, cache=True, inline="always")
def miss(pst, ist, i, p):
    """Reclaim a frame if the pool is full, then insert ``p`` into A1in or Am.

    Returns
    -------
    int
        The page that stopped being resident (the A1in tail, now a ghost in
        A1out, or the Am tail), or -1.
    """
    ghost = pst[P_WHERE][p] == 3
    if ghost:
        unlink(pst, ist, i, p)
    victim = -1
    if ist[i, L1_LEN] + ist[i, L2_LEN] >= ist[i, I_CAP]:
        if ist[i, L1_LEN] > ist[i, I_K1]:
            victim = ist[i, L1_TAIL]
            unlink(pst, ist, i, victim)
            kout = ist[i, I_K2]
            if kout > 0:
                if ist[i, L3_LEN] >= kout:
                    drop(pst, ist, i, ist[i, L3_TAIL])
                push_head(pst, ist, i, 3, victim)
        else:
            victim = ist[i, L2_TAIL]
            unlink(pst, ist, i, victim)
    if ghost:
        push_head(pst, ist, i, 2, p)
    else:
        push_head(pst, ist, i, 1, p)
    return victim


class TwoQTwin:
    """Reference 2Q, written from the paper's pseudo-code.

    ``a1in``, ``am`` and ``a1out`` are OrderedDicts whose *last* key is the
    newest (A1in, A1out) or most recently used (Am) page.
    """

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.kin = int(capacity * 0.25)
        self.kout = int(capacity * 0.5)
        self.a1in: OrderedDict[int, None] = OrderedDict()
        self.am: OrderedDict[int, None] = OrderedDict()
        self.a1out: OrderedDict[int, None] = OrderedDict()

    def _reclaimfor(self) -> int:
        if len(self.a1in) + len(self.am) < self.capacity:
            return -1                                    # a free frame
        if len(self.a1in) > self.kin:
            y, _ = self.a1in.popitem(last=False)         # page out the A1in tail
            if self.kout > 0:
                if len(self.a1out) >= self.kout:
                    self.a1out.popitem(last=False)       # forget the oldest ghost
                self.a1out[y] = None
            return y
        y, _ = self.am.popitem(last=False)               # page out the Am tail
        return y

    def access(self, p: int) -> tuple[bool, int]:
        """Returns (hit, evicted page or -1)."""
        if p in self.am:
            self.am.move_to_end(p)
            return True, -1
        if p in self.a1in:
            return True, -1
        if p in self.a1out:
            del self.a1out[p]
            victim = self._reclaimfor()
            self.am[p] = None
            return False, victim
        victim = self._reclaimfor()
        self.a1in[p] = None
        return False, victim

    def lists(self) -> list[list[int]]:
        """A1in, Am, A1out from head (newest) to tail, and an empty list 4."""
        return [list(reversed(self.a1in)), list(reversed(self.am)),
                list(reversed(self.a1out)), []]
