"""The jitted comparison policies against their pure-Python twins, event by event.

For LRU, FIFO, CLOCK, 2Q and ARC, a tiny harness drives ``hit``/``miss`` over
the array state exactly as the engine does (hit when the page is in list 1 or
2, miss otherwise) and, after every access, compares hit/miss, the victim and
all four lists (head to tail) with the twin.  Hypothesis supplies 200 random
traces per policy; hand-computed goldens pin the algorithms themselves.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples

from bufsim.policies import _state, arc, clock, fifo, lru, two_q
from bufsim.policies._state import I_CAP, I_K1, I_K2, I_P, P_REF, P_WHERE, walk

POLICIES = {
    "lru": (lru, lru.LRUTwin),
    "fifo": (fifo, fifo.FIFOTwin),
    "clock": (clock, clock.ClockTwin),
    "two_q": (two_q, two_q.TwoQTwin),
    "arc": (arc, arc.ARCTwin),
}


class Harness:
    """One instance of a policy's kernels over fresh array state."""

    def __init__(self, mod, capacity, n_pages):
        self.mod = mod
        self.pst = _state.new_page_state(n_pages)
        self.ist = np.zeros((1, _state.N_I), np.int64)
        for l in range(4):
            self.ist[0, 3 * l] = -1
            self.ist[0, 3 * l + 1] = -1
        mod.init(self.ist, 0, capacity)

    def access(self, p):
        if self.pst[P_WHERE][p] in (1, 2):
            self.mod.hit(self.pst, self.ist, 0, p)
            return True, -1
        return False, int(self.mod.miss(self.pst, self.ist, 0, p))

    def lists(self):
        return [walk(self.pst, self.ist, 0, l) for l in (1, 2, 3, 4)]

    def check_structure(self):
        """List lengths, tails, back links and P_WHERE agree with the walks."""
        pst, ist = self.pst, self.ist
        listed = {}
        for l, pages in zip((1, 2, 3, 4), self.lists()):
            assert ist[0, 3 * (l - 1) + 2] == len(pages)
            assert ist[0, 3 * (l - 1) + 1] == (pages[-1] if pages else -1)
            prev = -1
            for p in pages:
                assert pst[P_WHERE][p] == l and pst[_state.P_PREV][p] == prev
                prev = p
                listed[p] = l
        for p in np.flatnonzero(pst[P_WHERE][:]):
            assert int(p) in listed
        assert ist[0, 2] + ist[0, 5] <= ist[0, I_CAP]


def replay(name, capacity, trace, n_pages=None):
    """Run kernel and twin side by side; return the harness, the twin and the events."""
    mod, twin_cls = POLICIES[name]
    n_pages = n_pages or max(trace) + 1
    h, twin = Harness(mod, capacity, n_pages), twin_cls(capacity)
    events = []
    for t, p in enumerate(trace):
        got, want = h.access(p), twin.access(p)
        assert got == want, (name, capacity, t, p, got, want)
        assert h.lists() == twin.lists(), (name, capacity, t, p)
        h.check_structure()
        extra_checks(name, h, twin)
        events.append(got)
    return h, twin, events


def extra_checks(name, h, twin):
    ist, c = h.ist[0], h.ist[0, I_CAP]
    if name == "clock":
        for p, bit in twin.refs().items():
            assert h.pst[P_REF][p] == bit
    elif name == "two_q":
        assert ist[8] <= ist[I_K2] and ist[11] == 0
    elif name == "arc":
        assert ist[I_P] == twin.p and 0 <= ist[I_P] <= c
        assert ist[2] + ist[8] <= c                      # |T1| + |B1| <= c
        assert ist[2] + ist[5] + ist[8] + ist[11] <= 2 * c
    if name in ("lru", "fifo", "clock"):
        assert ist[5] == ist[8] == ist[11] == 0


@st.composite
def cases(draw):
    capacity = draw(st.integers(1, 20))
    n_pages = draw(st.integers(1, 60))
    hot = draw(st.integers(1, n_pages))
    # one byte string per trace keeps generation cheap (drawing 300 separate
    # integers dominates the run time); bytes below 160 fall in a hot subset,
    # which makes hits and ghost hits frequent enough to matter
    length = draw(st.integers(0, 300))
    raw = draw(st.binary(min_size=length, max_size=length))
    trace = [b % hot if b < 160 else b % n_pages for b in raw]
    return capacity, n_pages, trace


@pytest.mark.parametrize("name", list(POLICIES))
@settings(max_examples=examples(200), deadline=None)
@given(case=cases())
def test_kernel_matches_twin(name, case):
    capacity, n_pages, trace = case
    replay(name, capacity, trace, n_pages)


# ---- goldens ------------------------------------------------------------------------------------
BELADY = [1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5]


def misses(events):
    return sum(not hit for hit, _ in events)


@pytest.mark.parametrize("capacity,expected", [(3, 9), (4, 10)])
def test_fifo_belady_anomaly(capacity, expected):
    _, _, events = replay("fifo", capacity, BELADY)
    assert misses(events) == expected


def test_fifo_victims_are_insertion_order():
    _, _, events = replay("fifo", 3, BELADY)
    assert [v for _, v in events if v >= 0] == [1, 2, 3, 4, 1, 2]


@pytest.mark.parametrize("capacity,expected", [(3, 10), (4, 8)])
def test_lru_belady_sequence(capacity, expected):
    _, _, events = replay("lru", capacity, BELADY)
    assert misses(events) == expected


def test_clock_second_chance():
    # 1 is referenced, so at the first eviction the hand clears its bit, moves it to
    # the head and takes 2; later 1 is referenced again and survives once more.
    h, _, events = replay("clock", 3, [1, 2, 3, 1, 4, 2, 1, 3])
    assert [hit for hit, _ in events] == [False, False, False, True, False, False, True, False]
    assert [v for _, v in events] == [-1, -1, -1, -1, 2, 3, -1, 4]
    assert h.lists()[0] == [3, 1, 2]
    assert [int(h.pst[P_REF][p]) for p in (3, 1, 2)] == [0, 0, 0]


def test_clock_belady_sequence():
    # hits on 1 and 2 set their bits, so the miss on 3 spares them and evicts 5
    # (FIFO would evict 1): 10 misses where FIFO has 9.
    _, _, events = replay("clock", 3, BELADY)
    assert misses(events) == 10
    assert [v for _, v in events if v >= 0] == [1, 2, 3, 4, 5, 1, 2]


def test_two_q_parameters():
    ist = np.zeros((1, _state.N_I), np.int64)
    for c, kin, kout in [(1, 0, 0), (3, 0, 1), (4, 1, 2), (10, 2, 5), (1001, 250, 500)]:
        two_q.init(ist, 0, c)
        assert (ist[0, I_K1], ist[0, I_K2]) == (kin, kout)


def test_two_q_golden():
    # capacity 4: Kin = 1, Kout = 2
    trace = [1, 2, 3, 4, 5, 1, 1, 6, 2, 7, 8, 1, 6]
    h, _, events = replay("two_q", 4, trace)
    assert [hit for hit, _ in events] == [False] * 6 + [True] + [False] * 4 + [True, False]
    # A1in stays above Kin and keeps supplying the victims; ghosts 1, 2, 6 go to Am
    assert [v for _, v in events] == [-1, -1, -1, -1, 1, 2, -1, 3, 4, 5, 6, -1, 7]
    assert h.lists() == [[8], [6, 1, 2], [7, 5], []]


def test_arc_ghost_hits_move_p():
    # capacity 2: 1 is promoted to T2, 3 pushes 2 into B1; the B1 hit on 2 raises
    # p to 1 and (|T1| = p) demotes the T2 tail 1 to B2; the B2 hit on 1 lowers p
    # back to 0 and demotes the T1 tail 3 to B1.
    mod, _ = POLICIES["arc"]
    h = Harness(mod, 2, 8)
    script = [
        (1, False, -1, 0, [[1], [], [], []]),
        (1, True, -1, 0, [[], [1], [], []]),
        (2, False, -1, 0, [[2], [1], [], []]),
        (3, False, 2, 0, [[3], [1], [2], []]),
        (2, False, 1, 1, [[3], [2], [], [1]]),
        (1, False, 3, 0, [[], [1, 2], [3], []]),
    ]
    twin = arc.ARCTwin(2)
    for p, hit, victim, target, lists in script:
        assert h.access(p) == twin.access(p) == (hit, victim)
        assert h.ist[0, I_P] == twin.p == target
        assert h.lists() == twin.lists() == lists


def test_arc_delta_is_ghost_ratio():
    # capacity 4, checked by hand against Fig. 4.  The B1 hits on 5 and 7 find
    # |B2| = 0, so p grows by 1; the B1 hit on 3 finds |B1| = 1, |B2| = 2, so p
    # grows by 2 (to c).  On the hit on 7, |T1| = p = 2 and 7 came from B1, so
    # REPLACE takes the T2 tail (4) rather than the T1 tail.
    trace = [4, 4, 5, 3, 7, 1, 5, 6, 7, 2, 3]
    mod, _ = POLICIES["arc"]
    h, targets = Harness(mod, 4, 8), []
    for p in trace:
        h.access(p)
        targets.append(int(h.ist[0, I_P]))
    assert targets == [0, 0, 0, 0, 0, 0, 1, 1, 2, 2, 4]
    assert h.lists() == [[2, 6, 1], [3], [], [7, 5, 4]]
    _, _, events = replay("arc", 4, trace)
    assert [v for _, v in events] == [-1, -1, -1, -1, -1, 5, 3, 7, 4, 5, 7]
