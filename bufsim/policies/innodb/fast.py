"""The InnoDB kernel's fast loop: the common case of :func:`run_general` (one stream,
one instance, a FIFO device) with the instance's list ends, old pointer, free count,
clock, counters, device queue and stream clock in locals; every step is the one of the
modules beside it (lists, free, read, get) named in its comment."""
import numpy as np
from numba import njit

from ..flush import note_modification
from .._state import (
    C_AHI, C_EVICT, C_GETS, C_NOT_YOUNG, C_RA_EVICTED, C_READ, C_READS, C_YOUNG, FLAG_ACTIVITY,
    FLAG_AHI, FLAG_MODIFY, FLAG_RELATCH, FLAG_SHORTCUT, G_ACTIVE, G_DEVBUSY, G_DEVFREE, G_DEVLAST,
    G_FIXED, G_FTOP, G_LEFT, G_MID, G_NEXT_TICK, G_NLOCAL, I_CAP, I_CLOCK, I_FREE, I_OLD, I_OLDLEN,
    I_W, K_ACTIVITY, K_AHI, K_CLEANER, K_COST_CLOCK, K_COST_EVICT, K_COST_MISS, K_COST_YOUNG,
    K_DEV_RAND, K_DEV_SEQ, K_FLUSH, K_OLDTIME, K_RATIO, L1_HEAD, L1_LEN, L1_TAIL, NS_PER_MS,
    OLD_MIN_LEN, PM_FFREE, PM_FMAP, PM_SMISS, PREFETCH_AHEAD, P_ACCESS, P_DIRTY, P_NEXT, P_OLD,
    P_PAGE, P_PREV, P_READY, P_STAMP, P_WHERE, STAMP_MASK, T_CLOCK, T_CPU, T_END, T_EVENTS, T_GETS,
    T_IOWAIT, T_MISSES, T_POS, is_edge, ix, prefetch, space_pos,
)
from ..loop import CLOCK_OVERFLOW, DONE, FALLBACK, ONLY, STOP_TIME, YIELD, fifo_read
from .lists import old_adjust, old_bounds, old_clamp, old_walk
from .read import read_ahead_linear


@njit(_nrt=False, cache=True, inline="always")
def unpin_old(f, prv, isold, old, oldlen):
    """remove_block's first step for frame f about to leave the LRU: if f is LRU_old, the
    pointer moves to f's predecessor, which becomes old; the new (old, oldlen)."""
    if f == old:
        old = prv[ix(f)]
        isold[ix(old)] = 1
        oldlen += 1
    return old, oldlen


@njit(_nrt=False, cache=True, inline="always")
def stays_put(f, where, access, ready, isold, stamp, t, clock, oldtime, window):
    """Whether a plain get of frame ``f`` (< 0: none) at time ``t`` is one that every step
    of :func:`bufsim.policies.innodb.get` would only count, the old sublist being set: the
    page is resident, accessed and landed, and needs no old_blocks_time check and is still
    in the young window (or nothing has been evicted yet)."""
    return f >= 0 and where[ix(f)] == 1 and access[ix(f)] != 0 and ready[ix(f)] <= t and \
        (clock == 0 or ((oldtime == 0 or isold[ix(f)] == 0) and
                        (clock & STAMP_MASK) < stamp[ix(f)] + window))


#: On a pool of at least DEEP_FRAMES frames (whose per-frame arrays outgrow the CPU's
#: L2 cache) the fast loop also prefetches, FRAME_AHEAD events ahead, the fields a plain
#: hit reads of the frame that event will get (its frame-map entry was prefetched
#: PREFETCH_AHEAD events ahead, so it is likely in cache by then).
FRAME_AHEAD = 8
DEEP_FRAMES = 65536


@njit(_nrt=False, cache=True, inline="always")
def prefetch_frame(f, where, access, ready, stamp, prv, nxt, isold):
    """Prefetch what :func:`stays_put` reads of frame f, and its list links and old flag
    (a move or an eviction reads them); nothing if f < 0."""
    if f >= 0:
        prefetch(where, ix(f))
        prefetch(access, ix(f))
        prefetch(ready, ix(f))
        prefetch(stamp, ix(f))
        prefetch(prv, ix(f))
        prefetch(nxt, ix(f))
        prefetch(isold, ix(f))


@njit(_nrt=False, cache=True, inline="always")
def prefetch_tail(tail, prv, page, access, dirty, ready, isold):
    """Prefetch what the next miss reads of the LRU's tail, the page it will evict: its
    page id, first access, modification and read times, predecessor and old flag.  On a
    large pool the tail is a frame no get has touched for a long time, so without it
    each miss waits for these loads (zipf 0.9/262,144, t=0, paired on 2026-11-27: 638-700
    against 753-934 ms of kernel time)."""
    if tail >= 0:
        prefetch(prv, ix(tail))
        prefetch(page, ix(tail))
        prefetch(access, ix(tail))
        prefetch(dirty, ix(tail))
        prefetch(ready, ix(tail))
        prefetch(isold, ix(tail))


@njit(_nrt=False, cache=True)
def fast_loop(pages, counts, cpus, flags, pst, stat, ist, cnt, sst, glob, cfg, pm,
              exhausted, stop_ns, budget, room):
    """The common case of :func:`run_general` with the instance's list ends, old
    pointer, free count, clock, counters, device queue and stream clock in locals,
    written back once per call. For one stream, one instance, no event limit, a FIFO device with
    adjacent-priced skips, not MariaDB 10.11 (the caller checks these).

    It does the gets whose every step is on the main path: a hit (with or without a
    move to the head; through the adaptive hash index's shortcut or lookup too), or a
    miss that takes a free block or evicts a clean, ready LRU tail; the LRU at least
    OLD_MIN_LEN + 1 long with its old sublist set; no page-cleaner pass due.  An
    area edge page's first access calls :func:`~bufsim.policies.innodb.read_ahead_linear`
    with the locals written back (its check reads the area; it rarely reads).  Runs of one-get
    plain events whose get is a plain hit that moves nothing are counted in an inner loop
    first (tried again after the per-event path counts such a hit).  Before any other get
    it writes its state back and returns FALLBACK (an event is cut there, as a
    budget cut would, so the general kernel resumes it exactly); otherwise the
    codes of :func:`run_general`.  Every step is the one of
    :mod:`bufsim.policies.innodb` named in its comment; the twin tests hold both
    kernels to the pure-Python reference, and a test holds this one to the general
    kernel on every state array.  Returns ``(code, gets done, gets the general kernel is to do next)``."""
    fmap = pm[PM_FMAP]
    ffree = pm[PM_FFREE]
    prv = pst[P_PREV]
    nxt = pst[P_NEXT]
    where = pst[P_WHERE]
    isold = pst[P_OLD]
    access = pst[P_ACCESS]
    stamp = pst[P_STAMP]
    ready = pst[P_READY]
    dirty = pst[P_DIRTY]
    page = pst[P_PAGE]
    head = ist[ONLY, L1_HEAD]
    tail = ist[ONLY, L1_TAIL]
    length = ist[ONLY, L1_LEN]
    old = ist[ONLY, I_OLD]
    oldlen = ist[ONLY, I_OLDLEN]
    free = ist[ONLY, I_FREE]
    clock = ist[ONLY, I_CLOCK]
    window = ist[ONLY, I_W]
    top = glob[G_FTOP]
    devfree = glob[G_DEVFREE]
    devlast = glob[G_DEVLAST]
    devbusy = glob[G_DEVBUSY]
    tick = glob[G_NEXT_TICK]
    ratio = cfg[K_RATIO]
    oldtime = cfg[K_OLDTIME]
    rnd = cfg[K_DEV_RAND]
    seq = cfg[K_DEV_SEQ]
    cost_miss = cfg[K_COST_MISS]
    cost_clock = cfg[K_COST_CLOCK]
    cost_young = cfg[K_COST_YOUNG]
    cost_evict = cfg[K_COST_EVICT]
    ahi_pool = cfg[K_AHI] != 0
    cleaner = cfg[K_CLEANER] != 0 or cfg[K_FLUSH] != 0   # a background pass exists
    get_active = cfg[K_ACTIVITY] == 0
    stmt_active = cfg[K_ACTIVITY] != 0
    deep = ist[ONLY, I_CAP] >= DEEP_FRAMES
    e = sst[ONLY, T_POS]
    end = sst[ONLY, T_END]
    t = sst[ONLY, T_CLOCK]
    n_gets = 0       # gets done (budget)
    d_counted = 0    # C_GETS / T_GETS
    d_misses = 0     # T_MISSES, C_READS, C_READ
    d_evict = 0      # C_EVICT, I_CLOCK (besides clock)
    d_raev = 0
    d_young = 0
    d_notyoung = 0
    d_ahi = 0        # C_AHI
    d_ahi_gets = 0   # C_GETS beyond d_counted (an AHI hit counts two)
    iowait = 0
    cpu_sum = 0
    n_events = 0
    active = False
    left = budget
    resume = glob[G_MID] > 0
    code = DONE
    want = 1         # gets the general kernel is to do after a FALLBACK
    blen = -1        # the LRU length of old_bounds' lo0, hi0 (length) and lo1, hi1 (length - 1)
    lo0 = hi0 = lo1 = hi1 = 0
    short = False    # a read-ahead registered pages past ``room``
    run = True       # try a run of plain hits (see below) at the next event
    if glob[G_NLOCAL] > room:
        code = FALLBACK  # the general kernel returns NEED_ROOM
        left = 0
    while left > 0:
        if e >= end:
            code = DONE if exhausted[ONLY] != 0 else 1
            break
        if run and not resume and length > OLD_MIN_LEN and old >= 0:
            # a run of one-get plain events (no AHI path, no modification) whose get is a
            # plain hit that moves nothing (the first test below): counted here, one event
            # per iteration, the event bookkeeping summed after the run
            lim = e + left if e + left < end else end
            e0 = e
            while e < lim:
                if counts[ix(e)] != 1 or (stop_ns >= 0 and t >= stop_ns) or \
                        (cleaner and tick <= t):
                    break
                if e + PREFETCH_AHEAD < end:
                    prefetch(fmap, pages[ix(e + PREFETCH_AHEAD)])
                    if deep:
                        prefetch_frame(fmap[ix(pages[ix(e + FRAME_AHEAD)])], where, access,
                                       ready, stamp, prv, nxt, isold)
                fl = np.int64(flags[ix(e)])
                if (fl & FLAG_MODIFY) != 0 or \
                        (ahi_pool and (fl & (FLAG_SHORTCUT | FLAG_AHI)) != 0):
                    break
                if not stays_put(fmap[ix(pages[ix(e)])], where, access, ready, isold, stamp,
                                 t, clock, oldtime, window):
                    break
                cpu = cpus[ix(e)]
                if t + cpu < 0:
                    break                                # (the clock's overflow, below)
                t += cpu
                cpu_sum += cpu
                if (fl & FLAG_RELATCH) == 0:
                    d_counted += 1
                if stmt_active and (fl & FLAG_ACTIVITY) != 0:
                    active = True
                e += 1
            if e > e0:
                if get_active:
                    active = True
                n_gets += e - e0
                left -= e - e0
                n_events += e - e0
                continue
            run = False      # until the path below counts a plain hit again
        if resume:
            c = glob[G_LEFT]
        else:
            c = counts[ix(e)]
            if stop_ns >= 0 and t >= stop_ns:
                code = STOP_TIME
                break
            if cleaner and tick <= t:
                code = FALLBACK  # a page-cleaner pass is due (background)
                break
        p = pages[ix(e)]
        if e + PREFETCH_AHEAD < end:
            prefetch(fmap, pages[ix(e + PREFETCH_AHEAD)])
            if deep:
                prefetch_frame(fmap[ix(pages[ix(e + FRAME_AHEAD)])], where, access, ready,
                               stamp, prv, nxt, isold)
        cpu = cpus[ix(e)]
        fl = np.int64(flags[ix(e)])
        # the adaptive hash index's paths (a pool with the AHI only)
        sc = ahi_pool and (fl & FLAG_SHORTCUT) != 0
        ah = ahi_pool and (fl & FLAG_AHI) != 0
        counted = 1 if (fl & FLAG_RELATCH) == 0 else 0
        modify = (fl & FLAG_MODIFY) != 0
        plain = not (sc or ah or modify)
        n = 0
        lim = c if c <= left else left
        while n < lim:
            f = fmap[ix(p)]
            # a plain get of a resident, accessed, landed page that stays where it is (the
            # old sublist set, no time check, still young): every step below would only
            # count it (the first test of each step, in their order)
            if plain and length > OLD_MIN_LEN and old >= 0 and \
                    stays_put(f, where, access, ready, isold, stamp, t, clock, oldtime, window):
                if get_active:
                    active = True
                d_counted += counted
                t += cpu
                n += 1
                run = True
                if t < 0:
                    break
                continue
            resident = f >= 0 and where[ix(f)] == 1
            # the main path only (see the docstring)
            if length <= OLD_MIN_LEN or old < 0:
                want = OLD_MIN_LEN + 1 - length  # gets before the list can be long enough
                break
            # an area's edge page on its first access: read_ahead_linear after the get
            ra = (not resident or access[ix(f)] == 0) and is_edge(stat, pm, glob, p)
            if not resident and free == 0 and (dirty[ix(tail)] != 0 or ready[ix(tail)] > t):
                break                            # the tail cannot be freed as it is
            if get_active:
                active = True
            hashed = (sc or ah) and resident and access[ix(f)] > 0
            if sc and hashed:
                # the AHI shortcut under the held search latch: one get, no stamp, no check
                d_counted += counted
                d_ahi += 1
                if ready[ix(f)] > t:
                    iowait += ready[ix(f)] - t
                    t = ready[ix(f)]
                if modify:
                    note_modification(pst, ist, cnt, glob, 0, f)
                t += cpu
                n += 1
                if t < 0:
                    break
                continue
            twice = ah and hashed   # an AHI hit: buf_page_get_gen's get and check twice
            d_counted += counted
            if twice:
                d_ahi += 1
                d_ahi_gets += counted
            young_now = False   # a read made young at its first access, in one step
            if not resident:
                d_misses += 1
                pm[PM_SMISS][space_pos(stat, pm, p)] += 1
                # init_for_read -> get_free_block
                if free > 0:
                    top -= 1
                    f = ffree[ix(top)]                   # take_frame
                    free -= 1
                else:
                    # free_from_common_lru: the tail is replaceable; evict_page, whose
                    # frame take_frame then hands back (the stack's top is unchanged)
                    f = tail
                    if access[ix(f)] == 0:
                        d_raev += 1
                    # peek_if_too_old at f's first access, below, makes it young when
                    # old_blocks_time is 0 (f is old: see k2) and freed_page_clock is past
                    # f's stamp 0 by the window: evict the tail, add f after LRU_old and
                    # make it young in one step
                    young_now = oldtime == 0 and oldlen >= 2 and \
                        ((clock + 1) & STAMP_MASK) >= window
                    if young_now:
                        # f goes from the tail to the head.  The old length through the
                        # four adjustments (old_bounds): remove_block(tail) (the tail is
                        # old), add_block(f, old) right below LRU_old (old_bounds never
                        # falls as the list grows, so k2 >= k1: f stays old, and is
                        # LRU_old if k2 == k1), remove_block(f), add_block(f) at the head.
                        # Then LRU_old moves once by the net difference (in the list
                        # without its tail every place is one less).
                        if length != blen:
                            blen = length
                            lo0, hi0 = old_bounds(length, ratio)
                            lo1, hi1 = old_bounds(length - 1, ratio)
                        k1 = old_clamp(oldlen - 1, lo1, hi1)
                        k2 = old_clamp(k1 + 1, lo0, hi0)
                        d_young += 1                     # make_block_young of an old page
                        k3 = k2 - 1 if k2 > k1 else k2   # remove_block(f): old, not LRU_old
                        k5 = old_clamp(old_clamp(k3, lo1, hi1), lo0, hi0)
                        a = prv[ix(f)]
                        tail = a
                        nxt[ix(a)] = -1
                        old = old_walk(prv, nxt, isold, old, k5 + 1 - oldlen)
                        oldlen = k5
                        isold[ix(f)] = 0
                    else:
                        # remove_block(f) of the tail
                        old, oldlen = unpin_old(f, prv, isold, old, oldlen)
                        a = prv[ix(f)]
                        tail = a
                        nxt[ix(a)] = -1
                        length -= 1
                        if isold[ix(f)]:
                            oldlen -= 1
                        isold[ix(f)] = 0
                        # old_adjust_len
                        old, oldlen = old_adjust(prv, nxt, isold, length, ratio, old, oldlen)
                    fmap[ix(page[ix(f)])] = -1           # release_frame
                    ffree[ix(top)] = f   # pushed and taken back: the stack's slot holds it
                    clock += 1
                    d_evict += 1
                    t += cost_evict
                    cpu_sum += cost_evict
                fmap[ix(p)] = f
                page[ix(f)] = p
                access[ix(f)] = 0
                dirty[ix(f)] = 0
                where[ix(f)] = 1
                if young_now:
                    prv[ix(f)] = -1                              # push_head
                    nxt[ix(f)] = head
                    prv[ix(head)] = f
                    head = f
                    stamp[ix(f)] = clock & STAMP_MASK
                else:
                    stamp[ix(f)] = 0
                    # add_block(f, old=True): right after LRU_old
                    b = nxt[ix(old)]
                    prv[ix(f)] = old
                    nxt[ix(f)] = b
                    nxt[ix(old)] = f
                    if b >= 0:
                        prv[ix(b)] = f
                    else:
                        tail = f
                    length += 1
                    oldlen += 1
                    isold[ix(f)] = 1
                    old, oldlen = old_adjust(prv, nxt, isold, length, ratio, old, oldlen)
                if deep:
                    # the next miss evicts the new tail (a miss that took a free block
                    # leaves the tail as it was)
                    prefetch_tail(tail, prv, page, access, dirty, ready, isold)
                devfree, devlast, devbusy = fifo_read(stat, pm, p, t, devfree, devlast,
                                                       devbusy, rnd, seq)
                ready[ix(f)] = devfree
                iowait += devfree - t
                t = devfree + cost_miss
                cpu_sum += cost_miss
            elif ready[ix(f)] > t:
                iowait += ready[ix(f)] - t
                t = ready[ix(f)]
            if access[ix(f)] == 0:                           # the first access
                access[ix(f)] = t // NS_PER_MS + 1
                t += cost_clock
                cpu_sum += cost_clock
            if young_now:
                t += cost_young                          # (made young above)
                cpu_sum += cost_young
            for _ in range(0 if young_now else (2 if twice else 1)):
                # peek_if_too_old
                move = False
                if clock != 0:
                    if oldtime != 0 and isold[ix(f)]:
                        if t // NS_PER_MS + 1 - access[ix(f)] >= oldtime:
                            move = True
                        else:
                            d_notyoung += 1
                        t += cost_clock
                        cpu_sum += cost_clock
                    else:
                        move = (clock & STAMP_MASK) >= stamp[ix(f)] + window
                if move:
                    # make_block_young: remove_block(f), then add_block(f, old=False)
                    if isold[ix(f)]:
                        d_young += 1
                    old, oldlen = unpin_old(f, prv, isold, old, oldlen)
                    a = prv[ix(f)]
                    b = nxt[ix(f)]
                    if a >= 0:
                        nxt[ix(a)] = b
                    else:
                        head = b
                    if b >= 0:
                        prv[ix(b)] = a
                    else:
                        tail = a
                    if isold[ix(f)]:
                        oldlen -= 1
                    # (length - 1 >= OLD_MIN_LEN: remove_block's adjustment runs, then
                    # add_block's at the same length, which leaves it where it is)
                    isold[ix(f)] = 0
                    old, oldlen = old_adjust(prv, nxt, isold, length - 1, ratio, old, oldlen)
                    prv[ix(f)] = -1                              # push_head
                    nxt[ix(f)] = head
                    prv[ix(head)] = f
                    head = f
                    stamp[ix(f)] = clock & STAMP_MASK
                    old, oldlen = old_adjust(prv, nxt, isold, length, ratio, old, oldlen)
                    t += cost_young
                    cpu_sum += cost_young
            if ra:
                # buf_read_ahead_linear, as the general kernel's get calls it: the state
                # it reads and changes goes back to the arrays and comes back after
                ist[ONLY, L1_HEAD] = head
                ist[ONLY, L1_TAIL] = tail
                ist[ONLY, L1_LEN] = length
                ist[ONLY, I_OLD] = old
                ist[ONLY, I_OLDLEN] = oldlen
                ist[ONLY, I_FREE] = free
                ist[ONLY, I_CLOCK] = clock
                glob[G_FTOP] = top
                glob[G_DEVFREE] = devfree
                glob[G_DEVLAST] = devlast
                glob[G_DEVBUSY] = devbusy
                glob[G_FIXED] = f
                t = read_ahead_linear(pst, stat, ist, cnt, sst, glob, cfg, pm, p, 0, t)
                glob[G_FIXED] = -1
                head = ist[ONLY, L1_HEAD]
                tail = ist[ONLY, L1_TAIL]
                length = ist[ONLY, L1_LEN]
                old = ist[ONLY, I_OLD]
                oldlen = ist[ONLY, I_OLDLEN]
                free = ist[ONLY, I_FREE]
                clock = ist[ONLY, I_CLOCK]
                top = glob[G_FTOP]
                devfree = glob[G_DEVFREE]
                devlast = glob[G_DEVLAST]
                devbusy = glob[G_DEVBUSY]
                short = glob[G_NLOCAL] > room  # it registered pages: the next get may not
            if modify:
                note_modification(pst, ist, cnt, glob, 0, f)  # the flush list's state
            t += cpu
            n += 1
            if t < 0 or short:
                break
        n_gets += n
        left -= n
        cpu_sum += cpu * n
        if t < 0:
            code = CLOCK_OVERFLOW
            break
        if n < c:
            # cut here (if begun): the general kernel (a fallback) or the next call
            # resumes it
            code = FALLBACK if n < lim or short else YIELD
            if n > 0:
                glob[G_LEFT] = c - n
                resume = True
            break
        resume = False
        if stmt_active and (fl & FLAG_ACTIVITY) != 0:
            active = True
        n_events += 1
        e += 1
        if short:
            code = FALLBACK  # the general kernel returns NEED_ROOM
            break
    if left <= 0 and code == DONE and not resume:
        code = YIELD
    # write back
    ist[ONLY, L1_HEAD] = head
    ist[ONLY, L1_TAIL] = tail
    ist[ONLY, L1_LEN] = length
    ist[ONLY, I_OLD] = old
    ist[ONLY, I_OLDLEN] = oldlen
    ist[ONLY, I_FREE] = free
    ist[ONLY, I_CLOCK] = clock
    glob[G_FTOP] = top
    glob[G_DEVFREE] = devfree
    glob[G_DEVLAST] = devlast
    glob[G_DEVBUSY] = devbusy
    if active:
        glob[G_ACTIVE] = 1
    glob[G_MID] = 1 if resume else 0
    if not resume:
        glob[G_LEFT] = 0
    cnt[ONLY, C_GETS] += d_counted + d_ahi_gets
    cnt[ONLY, C_AHI] += d_ahi
    cnt[ONLY, C_READS] += d_misses
    cnt[ONLY, C_READ] += d_misses
    cnt[ONLY, C_EVICT] += d_evict
    cnt[ONLY, C_RA_EVICTED] += d_raev
    cnt[ONLY, C_YOUNG] += d_young
    cnt[ONLY, C_NOT_YOUNG] += d_notyoung
    sst[ONLY, T_GETS] += d_counted
    sst[ONLY, T_MISSES] += d_misses
    sst[ONLY, T_IOWAIT] += iowait
    sst[ONLY, T_CPU] += cpu_sum
    sst[ONLY, T_EVENTS] += n_events
    sst[ONLY, T_POS] = e
    sst[ONLY, T_CLOCK] = t
    return code, n_gets, max(want, 1)
