"""The InnoDB kernel's general event loop: every case (several streams and
instances, event limits, every device, the page cleaner), one :func:`get` per page get
(the contract of :mod:`bufsim.policies.loop`)."""
import numpy as np
from numba import njit

from .._state import (
    FLAG_ACTIVITY, G_ACTIVE, G_LEFT, G_MID, G_NEXT_TICK, G_NLOCAL, K_ACTIVITY, K_CLEANER, K_FLUSH,
    PM_FFREE, PM_FMAP, T_CLOCK, T_POS,
)
from ..loop import CLOCK_OVERFLOW, NEED_ROOM, YIELD, end_event, start_event
from .free import background
from .get import get


@njit(_nrt=False, cache=True)
def run_general(pages, counts, cpus, flags, pst, stat, ist, cnt, sst, glob, cfg, pm,
                exhausted, stop_ns, max_events, budget, room):
    """The InnoDB kernel, every case: process events until an input buffer runs dry, a stream
    reaches ``stop_ns`` (if >= 0), ``max_events`` (if >= 0) events are done,
    ``budget`` gets are done (YIELD) or fewer than ``room`` new pages could be
    registered (NEED_ROOM).  An event cut by the last two is resumed, on the same
    stream, by the next call (``glob[G_MID]``), as if it had not been cut.

    Stream s's buffered events are ``[sst[s, T_POS], sst[s, T_END])`` of the event
    arrays (pages as local ids; a cut event's remaining count is ``glob[G_LEFT]``: the
    arrays are never written).  Returns DONE (0) when every stream is exhausted,
    ``1 + s`` when stream s needs its next chunk, STOP_TIME, STOP_EVENTS, NEED_ROOM,
    YIELD or CLOCK_OVERFLOW (the int64 virtual clock would wrap).
    """
    cleaner = cfg[K_CLEANER] != 0 or cfg[K_FLUSH] != 0   # a background pass exists
    fmap = pm[PM_FMAP]
    ffree = pm[PM_FFREE]
    activity = cfg[K_ACTIVITY] != 0
    n_done = 0
    left = budget
    while True:
        if left <= 0:
            return YIELD
        resume = glob[G_MID] > 0
        best, code = start_event(sst, glob, exhausted, stop_ns, max_events, n_done)
        if best < 0:
            return code
        t = sst[best, T_CLOCK]
        if not resume:
            if glob[G_NLOCAL] > room:
                return NEED_ROOM
            # a page-cleaner pass may be due (tested here: a call per event costs)
            if cleaner and glob[G_NEXT_TICK] <= t:
                background(pst, stat, ist, cnt, glob, cfg, fmap, ffree, t)
        e = sst[best, T_POS]
        p = pages[e]
        c = glob[G_LEFT] if resume else counts[e]
        cpu = cpus[e]
        fl = np.int64(flags[e])
        n = 0
        while n < c:
            if n >= left or glob[G_NLOCAL] > room:
                break
            t = get(pst, stat, ist, cnt, sst, glob, cfg, pm, p, fl, best, t)
            t += cpu
            n += 1
            if t < 0:
                sst[best, T_CLOCK] = t
                return CLOCK_OVERFLOW
        left -= n
        if end_event(sst, glob, best, e, n, c, cpu, fl, t):
            if glob[G_NLOCAL] > room:
                return NEED_ROOM
            return YIELD
        if (fl & FLAG_ACTIVITY) != 0 and activity:
            glob[G_ACTIVE] = 1  # FLAG_STMT_END | FLAG_MODIFY: the activity count moved
        n_done += 1
