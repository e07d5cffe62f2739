"""The contract of a policy's replay kernel: its arguments, its return codes, and the
steps every kernel's event loop shares.

A policy's kernel (``run`` of :mod:`bufsim.policies.innodb` and of
:mod:`bufsim.policies.lru`, :func:`bufsim.policies.registry.run_generic` for the other
comparison policies; :func:`bufsim.policies.registry.kernel` names it) is called by the
engine (:class:`bufsim._pool_state.PoolState`) as::

    code = run(pages, counts, cpus, flags, pst, stat, ist, cnt, sst, glob, cfg, pm,
               exhausted, stop_ns, max_events, budget, room)

over the event arrays (pages as the kernels' ids, run-length counts, CPU ns per get,
flag bits; never written) and the state arrays of :mod:`bufsim.policies._state`.  It
processes events, the stream with the smallest clock first (:func:`next_stream`),
until an input buffer runs dry, a stream reaches ``stop_ns`` (if >= 0), ``max_events``
(if >= 0) events are done, ``budget`` gets are done (YIELD) or fewer than ``room`` new
pages could be registered (NEED_ROOM).  An event cut by the last two is resumed, on the
same stream, by the next call (``glob[G_MID]``, ``glob[G_LEFT]``), as if it had not been
cut.  It returns DONE (0) when every stream is exhausted, ``1 + s`` when stream s needs
its next chunk, or one of the negative codes below.
"""
from numba import njit

from ._state import (
    FLAG_RELATCH, G_LEFT, G_MID, T_CLOCK, T_CPU, T_END, T_EVENTS, T_GETS, T_POS, dense_of,
    space_pos,
)

#: the row of the one stream (``sst``) and the one instance (``ist``, ``cnt``) of the fast
#: loops, which run only with one of each
ONLY = 0
#: the kernels' return codes (> 0: 1 + the stream that needs its next chunk)
DONE, STOP_TIME, STOP_EVENTS, NEED_ROOM, YIELD, CLOCK_OVERFLOW = 0, -1, -2, -3, -4, -5
#: a fast loop's code only: the next get needs the policy's general kernel (the LRU's
#: ``run`` returns it, state untouched, when its fast path does not apply, and the
#: engine then calls :func:`bufsim.policies.registry.run_generic`)
FALLBACK = -6


@njit(_nrt=False, cache=True, inline="always")
def next_stream(sst, exhausted):
    """The stream whose clock is smallest among those with buffered events (ties: the
    lowest id); -1 if none has any; -(2 + s) if stream s needs its next chunk first."""
    K = sst.shape[0]
    if K == 1:
        if sst[ONLY, T_POS] < sst[ONLY, T_END]:
            return 0
        return -1 if exhausted[0] != 0 else -2
    best = -1
    for s in range(K):
        if sst[s, T_POS] < sst[s, T_END]:
            if best < 0 or sst[s, T_CLOCK] < sst[best, T_CLOCK]:
                best = s
        elif exhausted[s] == 0:
            return -(2 + s)
    return best


@njit(_nrt=False, cache=True, inline="always")
def start_event(sst, glob, exhausted, stop_ns, max_events, n_done):
    """The scheduling step every general kernel takes before an event: the stream whose
    event runs next (the cut one first, ``glob[G_MID]``; else :func:`next_stream`) and 0,
    or -1 and the code the kernel returns (DONE, ``1 + s``, STOP_TIME, STOP_EVENTS)."""
    mid = glob[G_MID]
    if mid > 0:
        return mid - 1, 0
    best = next_stream(sst, exhausted)
    if best == -1:
        return -1, DONE
    if best < -1:
        return -1, -best - 1
    if stop_ns >= 0 and sst[best, T_CLOCK] >= stop_ns:
        return -1, STOP_TIME
    if max_events >= 0 and n_done >= max_events:
        return -1, STOP_EVENTS
    return best, 0


@njit(_nrt=False, cache=True, inline="always")
def end_event(sst, glob, s, e, n, c, cpu, fl, t):
    """The bookkeeping every general kernel does after n of an event's c gets on stream s
    (event e, CPU ns ``cpu`` per get, flags ``fl``, the stream's clock now ``t``): the
    stream's CPU, gets and clock; an event cut short (``n < c``) is left to be resumed
    (``glob[G_LEFT]``, ``glob[G_MID]``), a whole one counted and passed.  Returns True
    if it was cut."""
    sst[s, T_CPU] += cpu * n
    if (fl & FLAG_RELATCH) == 0:
        sst[s, T_GETS] += n
    sst[s, T_CLOCK] = t
    if n < c:
        glob[G_LEFT] = c - n
        glob[G_MID] = s + 1
        return True
    glob[G_MID] = 0
    glob[G_LEFT] = 0  # no event is cut: 0, whichever kernel ran
    sst[s, T_EVENTS] += 1
    sst[s, T_POS] = e + 1
    return False


@njit(_nrt=False, cache=True, inline="always")
def fifo_read(stat, pm, p, t, devfree, devlast, devbusy, rnd, seq):
    """device_read of page p asked for at time t, on a FIFO device whose skips are priced as
    adjacent (``seq``) or random (``rnd``), as the fast loops have it: the device's new
    (free time, last page, busy time); the read lands at the free time."""
    if seq != rnd and devlast >= 0 and dense_of(stat, p) == dense_of(stat, devlast) + 1 and \
            space_pos(stat, pm, p) == space_pos(stat, pm, devlast):
        svc = seq
    else:
        svc = rnd
    start = t if t > devfree else devfree
    return start + svc, p, devbusy + svc
