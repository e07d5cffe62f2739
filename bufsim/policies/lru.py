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

The engine does the rest (counters, clock, device), through the registry's
general kernel.  Plain LRU also has its own fast kernel, :func:`run` (one stream,
one instance: the list ends, counters and clock in locals), whose gets are
:func:`get`.  :class:`LRUTwin` is the pure-Python reference.
"""
from collections import OrderedDict

from numba import njit

from ._state import (
    C_EVICT, C_GETS, C_READ, C_READS, FLAG_RELATCH, G_ACTIVE, G_DEVBUSY, G_DEVFREE, G_DEVLAST,
    G_FTOP, G_LEFT, G_MID, I_CAP, I_CLOCK, K_COST_MISS, K_DEV_RAND, K_DEV_SCHED, K_DEV_SEQ,
    K_DEV_SKIP, L1_HEAD, L1_LEN, L1_TAIL, PM_FFREE, PM_FMAP, PM_SMISS, PREFETCH_AHEAD, P_NEXT,
    P_PAGE, P_PREV, P_WHERE, T_CLOCK, T_CPU, T_END, T_EVENTS, T_GETS, T_IOWAIT, T_MISSES, T_POS,
    ix, move_to_head, prefetch, push_head, space_pos, unlink,
)
from .loop import CLOCK_OVERFLOW, DONE, FALLBACK, ONLY, YIELD, fifo_read


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


@njit(_nrt=False, cache=True, inline="always")
def to_head(f, prv, nxt, head, tail):
    """Move resident frame f (not the head) to the head; the new (head, tail)."""
    a = prv[ix(f)]
    b = nxt[ix(f)]
    nxt[ix(a)] = b
    if b >= 0:
        prv[ix(b)] = a
    else:
        tail = a
    prv[ix(f)] = -1
    nxt[ix(f)] = head
    prv[ix(head)] = f
    return f, tail


@njit(_nrt=False, cache=True, inline="always")
def get(p, fmap, ffree, prv, nxt, where, page, stat, pm, head, tail, length, cap, top,
             devfree, devlast, devbusy, t, rnd, seq, miss_cpu):
    """One get of page p by :func:`run` (its locals in, changed locals out, with the
    get's miss, eviction, I/O wait and extra CPU as 0/1 and ns)."""
    n_miss = 0
    n_evict = 0
    iowait = 0
    cpu_sum = 0
    f = fmap[ix(p)]
    if f >= 0:
        if f != head:                      # move to the head
            head, tail = to_head(f, prv, nxt, head, tail)
    else:
        n_miss += 1
        pm[PM_SMISS][space_pos(stat, pm, p)] += 1
        if length >= cap:                  # evict the tail, reuse its frame
            f = tail
            tail = prv[ix(f)]
            if tail >= 0:
                nxt[ix(tail)] = -1
                # the next miss evicts the new tail: its link and page id (a large pool's
                # tail is a frame no get has touched for long)
                prefetch(prv, ix(tail))
                prefetch(page, ix(tail))
            else:
                head = -1
            fmap[ix(page[ix(f)])] = -1
            n_evict += 1
        else:
            top -= 1
            f = ffree[ix(top)]
            length += 1
        fmap[ix(p)] = f
        page[ix(f)] = p
        where[ix(f)] = 1
        prv[ix(f)] = -1
        nxt[ix(f)] = head
        if head >= 0:
            prv[ix(head)] = f
        else:
            tail = f
        head = f
        devfree, devlast, devbusy = fifo_read(stat, pm, p, t, devfree, devlast, devbusy,
                                               rnd, seq)
        iowait += devfree - t
        t = devfree + miss_cpu
        cpu_sum += miss_cpu
    return (head, tail, length, top, devfree, devlast, devbusy, t, n_miss, n_evict, iowait,
            cpu_sum)


@njit(_nrt=False, cache=True, inline="always")
def write_back(ist, cnt, sst, glob, head, tail, length, top, devfree, devlast, devbusy, partial,
               n_gets, n_counted, n_miss, n_evict, iowait, cpu_sum, n_events, e, t):
    """:func:`run`'s locals and counts back into the state arrays (``partial``: 1 if an
    event of stream 0 was cut)."""
    ist[ONLY, L1_HEAD] = head
    ist[ONLY, L1_TAIL] = tail
    ist[ONLY, L1_LEN] = length
    ist[ONLY, I_CLOCK] += n_evict
    glob[G_FTOP] = top
    glob[G_DEVFREE] = devfree
    glob[G_DEVLAST] = devlast
    glob[G_DEVBUSY] = devbusy
    glob[G_ACTIVE] = 1 if n_gets > 0 else glob[G_ACTIVE]
    glob[G_MID] = partial  # 1 + stream 0 if an event was cut
    if partial == 0:
        glob[G_LEFT] = 0
    cnt[ONLY, C_GETS] += n_counted
    sst[ONLY, T_GETS] += n_counted
    cnt[ONLY, C_READS] += n_miss
    cnt[ONLY, C_READ] += n_miss
    cnt[ONLY, C_EVICT] += n_evict
    sst[ONLY, T_MISSES] += n_miss
    sst[ONLY, T_IOWAIT] += iowait
    sst[ONLY, T_CPU] += cpu_sum
    sst[ONLY, T_EVENTS] += n_events
    sst[ONLY, T_POS] = e
    sst[ONLY, T_CLOCK] = t


@njit(_nrt=False, cache=True, nogil=True)
def run(pages, counts, cpus, flags, pst, stat, ist, cnt, sst, glob, cfg, pm,
        exhausted, stop_ns, max_events, budget, room):
    """Plain LRU, one stream, one instance, no stop time or event limit: the fast path.

    The kernel of :mod:`bufsim.policies.loop`'s contract, with the same state and the
    same results as :func:`bufsim.policies.registry.run_generic` with policy ``lru`` (the
    twin tests run both), with the list ends, counters, device queue and clock
    in locals, written back once per call; a miss reuses the evicted page's frame; runs of
    one-get events go through an inner loop with the event bookkeeping summed after the run,
    and within a run each stretch of hits only moves pages: the clock, CPU and counted gets
    of its events are summed after the stretch, before the next miss reads the clock (the
    hit loop carries nothing else, so the CPU overlaps more of its cache misses).
    Other cases (and a device with a scheduler other than FIFO or distance-priced
    skips) return FALLBACK at once, state untouched, and the engine calls
    :func:`bufsim.policies.registry.run_generic` instead (not called from here, so that
    an LRU replay does not compile the general kernel of every comparison policy)."""
    if sst.shape[0] != 1 or ist.shape[0] != 1 or stop_ns >= 0 or max_events >= 0 or \
            cfg[K_DEV_SCHED] != 0 or cfg[K_DEV_SKIP] != 0:
        return FALLBACK
    fmap = pm[PM_FMAP]
    ffree = pm[PM_FFREE]
    prv = pst[P_PREV]
    nxt = pst[P_NEXT]
    where = pst[P_WHERE]
    page = pst[P_PAGE]
    head = ist[ONLY, L1_HEAD]
    tail = ist[ONLY, L1_TAIL]
    length = ist[ONLY, L1_LEN]
    cap = ist[ONLY, I_CAP]
    top = glob[G_FTOP]
    devfree = glob[G_DEVFREE]
    devlast = glob[G_DEVLAST]
    devbusy = glob[G_DEVBUSY]
    rnd = cfg[K_DEV_RAND]
    seq = cfg[K_DEV_SEQ]
    miss_cpu = cfg[K_COST_MISS]
    e = sst[ONLY, T_POS]
    end = sst[ONLY, T_END]
    t = sst[ONLY, T_CLOCK]
    n_gets = 0
    n_counted = 0
    n_miss = 0
    n_evict = 0
    iowait = 0
    cpu_sum = 0
    n_events = 0
    left = budget
    code = DONE
    partial = 0
    resume = glob[G_MID] > 0
    while True:
        if e >= end:
            code = DONE if exhausted[ONLY] != 0 else 1
            break
        if left <= 0:
            code = YIELD
            break
        if not resume:
            # a run of one-get events: one get per iteration, no budget cut inside
            lim = e + left if e + left < end else end
            e0 = e
            neg = t    # < 0 once the clock has wrapped (every partial sum is OR-ed in)
            while True:
                # a stretch of hits: the moves alone, the clock and counters after it
                e1 = e
                while e < lim and counts[ix(e)] == 1:
                    if e + PREFETCH_AHEAD < end:
                        prefetch(fmap, pages[ix(e + PREFETCH_AHEAD)])
                    f = fmap[ix(pages[ix(e)])]
                    if f < 0:
                        break
                    if f != head:
                        head, tail = to_head(f, prv, nxt, head, tail)
                    e += 1
                for i in range(e1, e):
                    t += cpus[i]
                    neg |= t
                    cpu_sum += cpus[i]
                    n_counted += (flags[i] & FLAG_RELATCH) == 0
                if neg < 0 or e >= lim or counts[e] != 1:
                    break
                # a miss (the clock is up to date for its device read)
                head, tail, length, top, devfree, devlast, devbusy, t, m, v, w, x = get(
                    pages[e], fmap, ffree, prv, nxt, where, page, stat, pm, head, tail, length,
                    cap, top, devfree, devlast, devbusy, t, rnd, seq, miss_cpu)
                n_miss += m
                n_evict += v
                iowait += w
                cpu_sum += x
                cpu = cpus[e]
                t += cpu
                neg |= t
                cpu_sum += cpu
                if (flags[e] & FLAG_RELATCH) == 0:
                    n_counted += 1
                e += 1
                if neg < 0:
                    break
            n_gets += e - e0
            n_events += e - e0
            left -= e - e0
            if neg < 0:
                code = CLOCK_OVERFLOW
                break
            if e >= end or left <= 0:
                continue
        p = pages[e]
        if e + PREFETCH_AHEAD < end:
            prefetch(fmap, pages[e + PREFETCH_AHEAD])
        if resume:
            c = glob[G_LEFT]
            resume = False
        else:
            c = counts[e]
        cpu = cpus[e]
        n = c if c <= left else left
        for _ in range(n):
            head, tail, length, top, devfree, devlast, devbusy, t, m, v, w, x = get(
                p, fmap, ffree, prv, nxt, where, page, stat, pm, head, tail, length, cap, top,
                devfree, devlast, devbusy, t, rnd, seq, miss_cpu)
            n_miss += m
            n_evict += v
            iowait += w
            cpu_sum += x
            t += cpu
            if t < 0:
                code = CLOCK_OVERFLOW
                break
        if code == CLOCK_OVERFLOW:
            break
        left -= n
        n_gets += n
        if (flags[e] & FLAG_RELATCH) == 0:
            n_counted += n
        cpu_sum += cpu * n
        if n < c:
            glob[G_LEFT] = c - n
            code = YIELD
            partial = 1
            break
        n_events += 1
        e += 1
    write_back(ist, cnt, sst, glob, head, tail, length, top, devfree, devlast, devbusy, partial,
               n_gets, n_counted, n_miss, n_evict, iowait, cpu_sum, n_events, e, t)
    return code



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
