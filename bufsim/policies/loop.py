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

from ._state import T_CLOCK, T_END, T_POS, dense_of, space_pos

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
