"""The InnoDB kernel's fast loop, :func:`fast_loop`: the common case of :func:`run_general`
with the instance's list ends, old pointer, free count, clock, commonest counters, device
queue and stream clock in locals.  It runs for one stream, one instance, no event limit, a
FIFO device with adjacent-priced skips, not MariaDB 10.11 (the caller,
:func:`bufsim.policies.innodb.kernel.run`, checks these).

It does the gets whose every step is on the main path: a hit (with or without a move to
the head; through the adaptive hash index's shortcut or lookup too), or a miss that takes
a free block or evicts a clean, ready LRU tail; the LRU at least OLD_MIN_LEN + 1 long
with its old sublist set; no page-cleaner pass due.  An area edge page's first access
runs :func:`~bufsim.policies.innodb.fast_steps.buf_read_ahead_linear` (the general
check, then the reads with the loop's steps on its locals).  The loop runs over gets,
not events (one loop, so that the compiled code carries its values through one set of
phi nodes): the current event's gets not yet done are a count, and its page, CPU and
flags are loaded when it starts (or, for an event the previous call or the general
kernel left begun, when the call starts).  A plain get of a resident, accessed, landed
page (:func:`~bufsim.policies.innodb.fast_steps.hit_kind`) is
:func:`~bufsim.policies.innodb.fast_steps.buf_page_get_young` (counted, and made young
if buf_page_peek_if_too_old says so); every other get is
:func:`~bufsim.policies.innodb.fast_get.buf_page_get_gen`.  The loop keeps few
values live per get (the list's length condition is checked once per call and after a
read-ahead, stop_ns and the cleaner's tick are one comparison per event).  Before any
other get it writes its state back and returns FALLBACK (an event is cut there, as a
budget cut would, so the general kernel resumes it exactly); otherwise the codes of
:func:`run_general`.

Its steps are the named ones of :mod:`bufsim.policies.innodb.fast_get` (a get,
buf_page_get_gen, and its parts) and :mod:`bufsim.policies.innodb.fast_steps` (the list
steps), each the fast form of the step of the modules beside it (lists, free, read, get)
that it is named after.  The twin tests hold both kernels to the pure-Python reference,
and a test holds this one to the general kernel on every state array.
"""
import numpy as np
from numba import njit

from .._state import (
    C_EVICT, C_READS, FLAG_ACTIVITY, FLAG_AHI, FLAG_MODIFY, FLAG_SHORTCUT, G_ACTIVE, G_LEFT,
    G_MID, G_NEXT_TICK, G_NLOCAL, I_CAP, I_W, K_ACTIVITY, K_AHI, K_CLEANER, K_COST_CLOCK,
    K_COST_YOUNG, K_FLUSH, K_OLDTIME, K_RATIO, OLD_MIN_LEN, PREFETCH_AHEAD, T_CLOCK, T_END,
    T_POS, ix, prefetch,
)
from ..loop import CLOCK_OVERFLOW, DONE, FALLBACK, ONLY, STOP_TIME, YIELD
from .fast_get import CUT_LIST, CUT_TAIL, GOT, buf_page_get_gen
from .fast_steps import (
    DEEP_FRAMES, FRAME_AHEAD, add_counts, buf_page_get_young, frame_columns, hit_kind,
    prefetch_frame, read_locals, write_back,
)

#: no clock limit (the int64 clock's largest value)
MAX_T = np.int64(2**63 - 1)


@njit(_nrt=False, cache=True)
def fast_loop(pages, counts, cpus, flags, pst, stat, ist, cnt, sst, glob, cfg, pm,
              exhausted, stop_ns, budget, room):
    """The common case of :func:`run_general` (see the module's docstring) with the
    instance's list ends, old pointer, free count, clock, commonest counts, device queue
    and stream clock in locals, written back once per call; one loop over the events'
    gets, each :func:`~bufsim.policies.innodb.fast_steps.buf_page_get_young` (a plain
    get of a resident page) or :func:`~bufsim.policies.innodb.fast_get.buf_page_get_gen`.
    Returns ``(code, gets done, gets the general kernel is to do next)``."""
    # the per-frame columns (buf_page_get_gen's tuple: fast_get.COLUMNS)
    cols = frame_columns(pst, pm)
    fmap, ffree, where, access, ready, isold, stamp, prv, nxt, dirty, page = cols
    head, tail, length, old, oldlen, free, clock, top, devfree, devlast, devbusy = \
        read_locals(ist, glob)
    window = ist[ONLY, I_W]
    tick = glob[G_NEXT_TICK]
    ratio = cfg[K_RATIO]
    oldtime = cfg[K_OLDTIME]
    cost_clock = cfg[K_COST_CLOCK]
    cost_young = cfg[K_COST_YOUNG]
    ahi_pool = cfg[K_AHI] != 0
    cleaner = cfg[K_CLEANER] != 0 or cfg[K_FLUSH] != 0   # a background pass exists
    get_active = cfg[K_ACTIVITY] == 0
    stmt_active = cfg[K_ACTIVITY] != 0
    deep = ist[ONLY, I_CAP] >= DEEP_FRAMES
    e = sst[ONLY, T_POS]
    end = sst[ONLY, T_END]
    t = sst[ONLY, T_CLOCK]
    # the counts added once per call (add_counts): C_GETS / T_GETS (gets not re-latched),
    # T_IOWAIT, and the clock's advance in read-ahead (ra_wait); T_CPU is the rest of the
    # clock's advance (every step that charges CPU advances the clock by it, every wait by
    # the I/O wait it counts).  The steps add the rarer counts to ``cnt`` as they happen
    # (C_READS, C_RA_EVICTED, C_YOUNG, C_NOT_YOUNG, C_AHI, an AHI hit's second C_GETS), so
    # the loop carries fewer values; C_READ and T_MISSES are C_READS's advance
    d_counted = iowait = ra_wait = 0
    reads0 = cnt[ONLY, C_READS]
    t0 = t
    # C_EVICT: every eviction (a miss's or a read-ahead's, which counts its own) advances
    # freed_page_clock by one, so the call's evictions are the clock's advance
    clock0, evict0 = clock, cnt[ONLY, C_EVICT]
    active = False
    left, resume, code = budget, glob[G_MID] > 0, DONE
    want = 1         # gets the general kernel is to do after a FALLBACK
    blen = -1        # the LRU length of old_bounds' lo0, hi0 (length) and lo1, hi1 (length - 1)
    lo0 = hi0 = lo1 = hi1 = 0
    # the earliest clock at which an event may not start here: stop_ns (STOP_TIME) or a
    # due page-cleaner pass (FALLBACK), one comparison per event
    t_lim = stop_ns if stop_ns >= 0 else MAX_T
    t_lim = tick if cleaner and tick < t_lim else t_lim
    # the flags that take an event off the plain path (the AHI's only with the AHI)
    special = FLAG_MODIFY | ((FLAG_SHORTCUT | FLAG_AHI) if ahi_pool else 0)
    # buf_page_get_gen's parameters (fast_get.PARAMS)
    prm = (ratio, oldtime, window, cost_clock, cost_young, room, ahi_pool)
    if glob[G_NLOCAL] > room:
        code = FALLBACK  # the general kernel returns NEED_ROOM
        left = 0
    elif length <= OLD_MIN_LEN or old < 0:
        # off the main path until the list is long enough (nothing in this loop shortens
        # it but a read-ahead, after which the get checks again)
        code = FALLBACK
        want = OLD_MIN_LEN + 1 - length
        left = 0
    e0 = e
    left0 = left
    # the current event's gets not yet done (0: the next get starts event e), its page,
    # CPU and flags
    rem = p = cpu = fl = np.int64(0)
    if resume and e < end:
        rem = glob[G_LEFT]
        p, cpu, fl = pages[ix(e)], cpus[ix(e)], np.int64(flags[ix(e)])
    while left > 0:
        if rem == 0:
            if e >= end:
                code = DONE if exhausted[ONLY] != 0 else 1
                break
            if t >= t_lim:
                code = STOP_TIME if stop_ns >= 0 and t >= stop_ns else FALLBACK
                break
            rem = counts[ix(e)]
            p, cpu, fl = pages[ix(e)], cpus[ix(e)], np.int64(flags[ix(e)])
            if e + PREFETCH_AHEAD < end:
                prefetch(fmap, pages[ix(e + PREFETCH_AHEAD)])
                if deep:
                    prefetch_frame(fmap[ix(pages[ix(e + FRAME_AHEAD)])], where, access,
                                   ready, stamp, prv, nxt, isold)
        cut = GOT
        f = fmap[ix(p)]
        kind = 0 if (fl & special) != 0 else hit_kind(
            f, where, access, ready, isold, stamp, t, clock, oldtime, window)
        if kind != 0:
            t, d_counted, head, tail, old, oldlen = buf_page_get_young(
                cnt, kind, fl, cpu, t, d_counted, cost_clock, cost_young, f, head, tail, prv,
                nxt, isold, stamp, old, oldlen, length, ratio, clock)
        else:
            cut, loc, acc = buf_page_get_gen(
                pst, stat, ist, cnt, sst, glob, cfg, pm, cols, prm, (p, cpu, fl),
                (head, tail, length, old, oldlen, free, clock, top, devfree, devlast, devbusy,
                 t, blen, lo0, hi0, lo1, hi1),
                (d_counted, iowait, ra_wait))
            (head, tail, length, old, oldlen, free, clock, top, devfree, devlast, devbusy, t,
             blen, lo0, hi0, lo1, hi1) = loc
            d_counted, iowait, ra_wait = acc
            if cut == CUT_TAIL:
                # cut before this get (if begun): the general kernel resumes it
                code = FALLBACK
                if rem < counts[ix(e)]:
                    resume = True
                if resume:
                    glob[G_LEFT] = rem
                break
        left -= 1
        rem -= 1
        if t < 0:
            code = CLOCK_OVERFLOW
            break
        if rem == 0:
            # the event's last get
            resume = False
            if stmt_active and (fl & FLAG_ACTIVITY) != 0:
                active = True
            e += 1
        if cut != GOT or (left <= 0 and rem > 0):
            # cut after this get: the general kernel (a fallback) or the next call (the
            # budget spent) resumes the event if begun
            code = YIELD if cut == GOT else FALLBACK
            if cut == CUT_LIST:
                want = OLD_MIN_LEN + 1 - length
            if rem > 0:
                glob[G_LEFT] = rem
                resume = True
            break
    n_gets = left0 - left
    n_events = e - e0
    if left <= 0 and code == DONE and not resume:
        code = YIELD
    write_back(ist, glob, head, tail, length, old, oldlen, free, clock, top, devfree, devlast,
               devbusy)
    if active or (get_active and n_gets > 0):   # (under get activity, any get)
        glob[G_ACTIVE] = 1
    glob[G_MID] = 1 if resume else 0
    if not resume:
        glob[G_LEFT] = 0
    d_evict = (clock - clock0) - (cnt[ONLY, C_EVICT] - evict0)  # (not read-ahead's)
    add_counts(cnt, sst, d_counted, cnt[ONLY, C_READS] - reads0, d_evict, iowait,
               (t - t0) - iowait - ra_wait, n_events, e, t)
    return code, n_gets, max(want, 1)
