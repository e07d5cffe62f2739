"""The InnoDB kernel's fast loop: the common case of :func:`run_general` (one stream,
one instance, a FIFO device) with the instance's list ends, old pointer, free count,
clock, counters, device queue and stream clock in locals; its steps are the named ones of
:mod:`bufsim.policies.innodb.fast_steps`, each the fast form of the step of the modules
beside it (lists, free, read, get) that it is named after."""
import numpy as np
from numba import njit

from ..flush import note_modification
from .._state import (
    FLAG_ACTIVITY, FLAG_AHI, FLAG_MODIFY, FLAG_RELATCH, FLAG_SHORTCUT, G_ACTIVE, G_DEVBUSY,
    G_DEVFREE, G_DEVLAST, G_FTOP, G_LEFT, G_MID, G_NEXT_TICK, G_NLOCAL, I_CAP, I_CLOCK, I_FREE,
    I_OLD, I_OLDLEN, I_W, K_ACTIVITY, K_AHI, K_CLEANER, K_COST_CLOCK, K_COST_EVICT, K_COST_MISS,
    K_COST_YOUNG, K_DEV_RAND, K_DEV_SEQ, K_FLUSH, K_OLDTIME, K_RATIO, L1_HEAD, L1_LEN, L1_TAIL,
    NS_PER_MS, OLD_MIN_LEN, PM_FFREE, PM_FMAP, PM_SMISS, PREFETCH_AHEAD, P_ACCESS, P_DIRTY, P_NEXT,
    P_OLD, P_PAGE, P_PREV, P_READY, P_STAMP, P_WHERE, T_CLOCK, T_END, T_POS, is_edge, ix, prefetch,
    space_pos,
)
from ..loop import CLOCK_OVERFLOW, DONE, FALLBACK, ONLY, STOP_TIME, YIELD, fifo_read


from .fast_steps import (
    DEEP_FRAMES, FRAME_AHEAD, add_counts, buf_LRU_add_block, buf_LRU_get_free_block, buf_page_make_young,
    buf_page_peek_if_too_old, buf_read_ahead_linear, plain_hit_run, prefetch_frame,
    prefetch_tail, stays_put, write_back,
)


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
            e, t, run_cpu, run_counted, run_active = plain_hit_run(
                pages, counts, cpus, flags, e, lim, end, t, stop_ns, cleaner, tick, fmap, where,
                access, ready, isold, stamp, prv, nxt, clock, oldtime, window, deep, ahi_pool,
                stmt_active)
            cpu_sum += run_cpu
            d_counted += run_counted
            active = active or run_active
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
                (f, young_now, evicted, raev, tail, length, old, oldlen, free, top, clock, blen,
                 lo0, hi0, lo1, hi1) = buf_LRU_get_free_block(
                    ffree, fmap, page, prv, nxt, isold, access, tail, length, old, oldlen, free,
                    top, clock, ratio, oldtime, window, blen, lo0, hi0, lo1, hi1)
                if evicted:
                    d_evict += 1
                    if raev:
                        d_raev += 1
                    if young_now:
                        d_young += 1                 # make_block_young of an old page
                    t += cost_evict
                    cpu_sum += cost_evict
                fmap[ix(p)] = f
                page[ix(f)] = p
                access[ix(f)] = 0
                dirty[ix(f)] = 0
                where[ix(f)] = 1
                head, tail, length, old, oldlen = buf_LRU_add_block(
                    f, young_now, head, tail, prv, nxt, isold, stamp, old, oldlen, length, ratio,
                    clock)
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
                move, checked = buf_page_peek_if_too_old(f, isold, access, stamp, t, clock,
                                                         oldtime, window)
                if checked:
                    if not move:
                        d_notyoung += 1
                    t += cost_clock
                    cpu_sum += cost_clock
                if move:
                    head, tail, old, oldlen, made = buf_page_make_young(
                        f, head, tail, prv, nxt, isold, stamp, old, oldlen, length, ratio, clock)
                    d_young += made
                    t += cost_young
                    cpu_sum += cost_young
            if ra:
                (t, head, tail, length, old, oldlen, free, clock, top, devfree, devlast,
                 devbusy) = buf_read_ahead_linear(pst, stat, ist, cnt, sst, glob, cfg, pm, p, f,
                                                  t, head, tail, length, old, oldlen, free, clock,
                                                  top, devfree, devlast, devbusy)
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
    write_back(ist, glob, head, tail, length, old, oldlen, free, clock, top, devfree, devlast,
               devbusy)
    if active:
        glob[G_ACTIVE] = 1
    glob[G_MID] = 1 if resume else 0
    if not resume:
        glob[G_LEFT] = 0
    add_counts(cnt, sst, d_counted, d_ahi_gets, d_ahi, d_misses, d_evict, d_raev, d_young,
               d_notyoung, iowait, cpu_sum, n_events, e, t)
    return code, n_gets, max(want, 1)
