"""The replay engine: streams interleaved in virtual time over one pool and one device.

:func:`replay` is the public entry point.  It validates everything, allocates the
array state (:class:`PoolState`), then feeds trace chunks to one jitted kernel,
:func:`_run`, which keeps its state between chunks so a trace of billions of gets
replays in bounded memory.

Virtual time
    Each stream has a nanosecond clock.  The kernel always advances the stream
    whose clock is smallest (ties: the lowest stream id), so streams interleave in
    virtual-time order.  One event (a run of ``count`` gets of one page) is
    processed at once.  Each get costs the event's ``cpu_ns`` plus the cost model's
    extras; a miss waits for the device.  The device serves one request at a time,
    shared by every stream, in issue order or as its I/O scheduler decides
    (:mod:`bufsim.policies.device`); a read's completion time is fixed when it is
    issued; read-ahead is asynchronous and a get of a page whose read is in flight
    waits for it to land.
Page cleaner (5.6+)
    At every whole virtual second, if the server was active since the previous
    pass, the page cleaner refills each instance's free list (see
    :func:`bufsim.policies.innodb.page_cleaner`).  Active means: any get
    (``cleaner_activity='get'``), or an event flagged FLAG_STMT_END or
    FLAG_MODIFY (``'statement'``), marked once the event is done.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd
from numba import njit

from . import cache as _cache
from ._validation import MAX_NS, check_int, check_ns, describe, renamed, span
from .config import PoolConfig, preset
from .pages import Tablespaces
from .policies import registry
from .policies.innodb import (
    background, device_read, get as innodb_get, instance_of, old_adjust, old_adjust_len, old_bounds,
    old_clamp, old_init, old_walk,
    read_ahead_linear, release_frame, take_frame,
)
from .policies.registry import policy_hit, policy_miss
from .policies._state import (
    L1_HEAD, L1_LEN, L1_TAIL, L2_LEN,
    C_EVICT, C_GETS, C_READ, C_READS, COUNTER_NAMES, G_ACTIVE, G_DEVBUSY, G_DEVLAST, G_FIXED,
    G_NEXT_TICK, G_TICKS, I_AREA, I_CAP, I_CLOCK, I_FREE, I_OLD, I_OLDLEN, I_SIZE, I_W,
    K_ACTIVITY, K_AHI, K_CLEANER, K_COST_CLOCK, K_COST_EVICT, K_COST_MISS, K_COST_YOUNG,
    K_DEV_RAND, K_DEV_SEQ, K_DEV_WRITE, K_NINST, K_OLDTIME, K_POLICY, K_RATHRESH,
    K_RATIO, K_SCANDEPTH, K_FREE_SCAN, N_C, N_G, N_I, N_K, N_S, N_T, NS_PER_S, P_OLD, P_WHERE,
    S_DENSE, T_CLOCK, T_RA,
    T_CPU, T_END, T_EVENTS, T_GETS, T_IOWAIT, T_MISSES, T_POS,
    G_AREA, G_DEVFREE, G_FTOP, G_LEFT, G_MID, G_NLOCAL, I_DROP, P_NEXT, P_PAGE, P_PREV, hash_slot,
    dense_of, is_edge, local_of, register, space_pos,
    FLAG_ACTIVITY, FLAG_RELATCH, NS_PER_MS, P_ACCESS, P_DIRTY, push_head,
    new_page_state, walk, walk_flush, copy_page_state, page_state_nbytes, FrameState,
    K_DEV_EXPIRE, K_DEV_IDLE, K_DEV_SCHED, K_DEV_SKIP, K_DEV_SLICE, SCHED_CODES, SKIP_CODES,
    C_DIRTIED, C_WRITE_REQ, K_DIRTY_LWM, K_FLUSH, K_IO_CAPACITY, K_MAX_DIRTY, LF_HEAD, LF_LEN, LF_TAIL,
    C_AHI, C_NOT_YOUNG, C_RA_EVICTED, C_YOUNG, FLAG_AHI, FLAG_MODIFY, FLAG_SHORTCUT,
    OLD_MIN_LEN, P_READY, P_STAMP, PM_FFREE, PM_FMAP, PM_SMISS,
    STAMP_MASK, PREFETCH_AHEAD, K_MASTER_FLUSH, K_RA_ZERO_OFF, K_RA_NEXT_AREA,
    K_RA_FAIL_EARLY, K_FREE_UNUSED, K_REFILL_DEMAND, K_BATCH_UNBOUNDED, K_LRU_FLOOR_SMALL,
    K_TEMP_UNLOGGED, prefetch, ix,
)
from .policies.flush import note_modification
from ._memory import check_pool_memory
from .policies._state import P_DTYPES

__all__ = ["replay", "ReplayResult", "PoolState", "compiled", "compile_notice"]



# return codes of the kernels (> 0: 1 + the stream that needs its next chunk)
DONE, STOP_TIME, STOP_EVENTS, NEED_ROOM, YIELD, CLOCK_OVERFLOW = 0, -1, -2, -3, -4, -5
#: gets done per kernel call at most, so that Python sees Ctrl-C often enough
GETS_PER_CALL = 2_000_000
#: new pages one get can register (a read-ahead area; a trace's own pages are registered
#: by the translation before the kernel runs)
ROOM_PER_GET = 64
#: tablespace maps up to this many pages use dense keys (an int32 frame per page
#: number, 64 MiB at most; a third as many with several instances, whose per-page
#: instance takes 8 bytes more); larger ones local ids and an open-addressing hash
DENSE_MAP_MAX_PAGES = 1 << 24


@njit(_nrt=False, cache=True, inline="always")
def _generic_get(pst, stat, ist, cnt, sst, glob, cfg, pm, code, p, fl, k, t_ns):
    """A get of page p (local id) under a comparison policy: the policy decides the
    lists (over frames), the engine counts, hands out and takes back frames, and
    charges the miss."""
    fmap = pm[PM_FMAP]
    ffree = pm[PM_FFREE]
    i = instance_of(stat, cfg, p)
    if (fl & FLAG_RELATCH) == 0:
        cnt[i, C_GETS] += 1
    glob[G_ACTIVE] = 1
    f = fmap[p]
    if f >= 0:
        w = pst[P_WHERE][f]
        if w == 1 or w == 2:
            policy_hit(code, pst, ist, i, f)
            return t_ns
    else:
        f = take_frame(pst, glob, fmap, ffree, p)
    sst[k, T_MISSES] += 1
    pm[PM_SMISS][space_pos(stat, pm, p)] += 1
    cnt[i, C_READS] += 1
    cnt[i, C_READ] += 1
    ist[i, I_DROP] = -1
    victim = policy_miss(code, pst, ist, i, f)
    if victim >= 0:
        cnt[i, C_EVICT] += 1
        ist[i, I_CLOCK] += 1
        if pst[P_WHERE][victim] == 0:
            release_frame(pst, glob, fmap, ffree, victim)
    d = ist[i, I_DROP]
    if d >= 0:
        release_frame(pst, glob, fmap, ffree, d)
    done = device_read(stat, pm, sst, glob, cfg, p, k, t_ns)
    sst[k, T_IOWAIT] += done - t_ns
    sst[k, T_CPU] += cfg[K_COST_MISS]
    return done + cfg[K_COST_MISS]


@njit(_nrt=False, cache=True, inline="always")
def _next_stream(sst, exhausted):
    """The stream whose clock is smallest among those with buffered events (ties: the
    lowest id); -1 if none has any; -(2 + s) if stream s needs its next chunk first."""
    K = sst.shape[0]
    if K == 1:
        if sst[0, T_POS] < sst[0, T_END]:
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


@njit(_nrt=False, cache=True)
def _run_innodb_general(pages, counts, cpus, flags, pst, stat, ist, cnt, sst, glob, cfg, pm,
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
        mid = glob[G_MID]
        if mid > 0:
            best = mid - 1
        else:
            best = _next_stream(sst, exhausted)
            if best == -1:
                return DONE
            if best < -1:
                return -best - 1
            t = sst[best, T_CLOCK]
            if stop_ns >= 0 and t >= stop_ns:
                return STOP_TIME
            if max_events >= 0 and n_done >= max_events:
                return STOP_EVENTS
            if glob[G_NLOCAL] > room:
                return NEED_ROOM
            # a page-cleaner pass may be due (tested here: a call per event costs)
            if cleaner and glob[G_NEXT_TICK] <= t:
                background(pst, stat, ist, cnt, glob, cfg, fmap, ffree, t)
        t = sst[best, T_CLOCK]
        e = sst[best, T_POS]
        p = pages[e]
        c = glob[G_LEFT] if mid > 0 else counts[e]
        cpu = cpus[e]
        fl = np.int64(flags[e])
        n = 0
        while n < c:
            if n >= left or glob[G_NLOCAL] > room:
                break
            t = innodb_get(pst, stat, ist, cnt, sst, glob, cfg, pm, p, fl, best, t)
            t += cpu
            n += 1
            if t < 0:
                sst[best, T_CLOCK] = t
                return CLOCK_OVERFLOW
        left -= n
        sst[best, T_CPU] += cpu * n
        if (fl & FLAG_RELATCH) == 0:
            sst[best, T_GETS] += n
        sst[best, T_CLOCK] = t
        if n < c:
            glob[G_LEFT] = c - n
            glob[G_MID] = best + 1
            if glob[G_NLOCAL] > room:
                return NEED_ROOM
            return YIELD
        glob[G_MID] = 0
        glob[G_LEFT] = 0  # no event is cut: 0, whichever kernel ran
        if (fl & FLAG_ACTIVITY) != 0 and activity:
            glob[G_ACTIVE] = 1  # FLAG_STMT_END | FLAG_MODIFY: the activity count moved
        sst[best, T_EVENTS] += 1
        sst[best, T_POS] = e + 1
        n_done += 1


#: a code of :func:`_innodb_fast` and :func:`_run_lru` only: the next get needs the general
#: kernel
FALLBACK = -6


@njit(_nrt=False, cache=True, inline="always")
def _fifo_read(stat, pm, p, t, devfree, devlast, devbusy, rnd, seq):
    """device_read of page p asked for at time t, on a FIFO device whose skips are priced as
    adjacent (``seq``) or random (``rnd``), as both fast loops have it: the device's new
    (free time, last page, busy time); the read lands at the free time."""
    if seq != rnd and devlast >= 0 and dense_of(stat, p) == dense_of(stat, devlast) + 1 and \
            space_pos(stat, pm, p) == space_pos(stat, pm, devlast):
        svc = seq
    else:
        svc = rnd
    start = t if t > devfree else devfree
    return start + svc, p, devbusy + svc


@njit(_nrt=False, cache=True, inline="always")
def _unpin_old(f, prv, isold, old, oldlen):
    """remove_block's first step for frame f about to leave the LRU: if f is LRU_old, the
    pointer moves to f's predecessor, which becomes old; the new (old, oldlen)."""
    if f == old:
        old = prv[ix(f)]
        isold[ix(old)] = 1
        oldlen += 1
    return old, oldlen


@njit(_nrt=False, cache=True, inline="always")
def _stays_put(f, where, access, ready, isold, stamp, t, clock, oldtime, window):
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
def _prefetch_frame(f, where, access, ready, stamp, prv, nxt, isold):
    """Prefetch what :func:`_stays_put` reads of frame f, and its list links and old flag
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
def _prefetch_tail(tail, prv, page, access, dirty, ready, isold):
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
def _innodb_fast(pages, counts, cpus, flags, pst, stat, ist, cnt, sst, glob, cfg, pm,
                 exhausted, stop_ns, budget, room):
    """The common case of :func:`_run_innodb_general` with the instance's list ends, old
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
    codes of :func:`_run_innodb_general`.  Every step is the one of
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
    k0 = np.int64(0)   # the one stream's id, typed int64 (see read_ahead_linear below)
    head = ist[0, L1_HEAD]
    tail = ist[0, L1_TAIL]
    length = ist[0, L1_LEN]
    old = ist[0, I_OLD]
    oldlen = ist[0, I_OLDLEN]
    free = ist[0, I_FREE]
    clock = ist[0, I_CLOCK]
    window = ist[0, I_W]
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
    deep = ist[0, I_CAP] >= DEEP_FRAMES
    e = sst[0, T_POS]
    end = sst[0, T_END]
    t = sst[0, T_CLOCK]
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
            code = DONE if exhausted[0] != 0 else 1
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
                        _prefetch_frame(fmap[ix(pages[ix(e + FRAME_AHEAD)])], where, access,
                                        ready, stamp, prv, nxt, isold)
                fl = np.int64(flags[ix(e)])
                if (fl & FLAG_MODIFY) != 0 or \
                        (ahi_pool and (fl & (FLAG_SHORTCUT | FLAG_AHI)) != 0):
                    break
                if not _stays_put(fmap[ix(pages[ix(e)])], where, access, ready, isold, stamp,
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
                _prefetch_frame(fmap[ix(pages[ix(e + FRAME_AHEAD)])], where, access, ready,
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
                    _stays_put(f, where, access, ready, isold, stamp, t, clock, oldtime, window):
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
                        old, oldlen = _unpin_old(f, prv, isold, old, oldlen)
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
                    _prefetch_tail(tail, prv, page, access, dirty, ready, isold)
                devfree, devlast, devbusy = _fifo_read(stat, pm, p, t, devfree, devlast,
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
                    old, oldlen = _unpin_old(f, prv, isold, old, oldlen)
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
                ist[0, L1_HEAD] = head
                ist[0, L1_TAIL] = tail
                ist[0, L1_LEN] = length
                ist[0, I_OLD] = old
                ist[0, I_OLDLEN] = oldlen
                ist[0, I_FREE] = free
                ist[0, I_CLOCK] = clock
                glob[G_FTOP] = top
                glob[G_DEVFREE] = devfree
                glob[G_DEVLAST] = devlast
                glob[G_DEVBUSY] = devbusy
                glob[G_FIXED] = f
                # stream 0 as an int64, not the constant 0: numba would type that as
                # Literal[int](0) and compile read-ahead and its callees a second time
                t = read_ahead_linear(pst, stat, ist, cnt, sst, glob, cfg, pm, p, k0, t)
                glob[G_FIXED] = -1
                head = ist[0, L1_HEAD]
                tail = ist[0, L1_TAIL]
                length = ist[0, L1_LEN]
                old = ist[0, I_OLD]
                oldlen = ist[0, I_OLDLEN]
                free = ist[0, I_FREE]
                clock = ist[0, I_CLOCK]
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
    ist[0, L1_HEAD] = head
    ist[0, L1_TAIL] = tail
    ist[0, L1_LEN] = length
    ist[0, I_OLD] = old
    ist[0, I_OLDLEN] = oldlen
    ist[0, I_FREE] = free
    ist[0, I_CLOCK] = clock
    glob[G_FTOP] = top
    glob[G_DEVFREE] = devfree
    glob[G_DEVLAST] = devlast
    glob[G_DEVBUSY] = devbusy
    if active:
        glob[G_ACTIVE] = 1
    glob[G_MID] = 1 if resume else 0
    if not resume:
        glob[G_LEFT] = 0
    cnt[0, C_GETS] += d_counted + d_ahi_gets
    cnt[0, C_AHI] += d_ahi
    cnt[0, C_READS] += d_misses
    cnt[0, C_READ] += d_misses
    cnt[0, C_EVICT] += d_evict
    cnt[0, C_RA_EVICTED] += d_raev
    cnt[0, C_YOUNG] += d_young
    cnt[0, C_NOT_YOUNG] += d_notyoung
    sst[0, T_GETS] += d_counted
    sst[0, T_MISSES] += d_misses
    sst[0, T_IOWAIT] += iowait
    sst[0, T_CPU] += cpu_sum
    sst[0, T_EVENTS] += n_events
    sst[0, T_POS] = e
    sst[0, T_CLOCK] = t
    return code, n_gets, max(want, 1)


@njit(_nrt=False, cache=True, nogil=True)
def _run_innodb(pages, counts, cpus, flags, pst, stat, ist, cnt, sst, glob, cfg, pm,
                exhausted, stop_ns, max_events, budget, room):
    """The InnoDB kernel (the contract of :func:`_run_innodb_general`): the fast loop
    :func:`_innodb_fast` where it applies, the general one for the gets it leaves."""
    if sst.shape[0] != 1 or ist.shape[0] != 1 or max_events >= 0 or \
            cfg[K_DEV_SCHED] != 0 or cfg[K_DEV_SKIP] != 0 or cfg[K_REFILL_DEMAND] != 0 \
            or cfg[K_TEMP_UNLOGGED] != 0 or ist[0, I_SIZE] <= OLD_MIN_LEN:
        # (the fast loop has neither the on-demand refill nor unlogged temporary pages)
        return _run_innodb_general(pages, counts, cpus, flags, pst, stat, ist, cnt, sst, glob,
                                   cfg, pm, exhausted, stop_ns, max_events, budget, room)
    left = budget
    while True:
        code, n, want = _innodb_fast(pages, counts, cpus, flags, pst, stat, ist, cnt, sst,
                                     glob, cfg, pm, exhausted, stop_ns, left, room)
        left -= n
        if code != FALLBACK:
            return code
        # max_events (< 0 here: no limit) rather than the constant -1, which numba would
        # type as Literal[int](-1) and compile the general kernel a second time for
        code = _run_innodb_general(pages, counts, cpus, flags, pst, stat, ist, cnt, sst, glob,
                                   cfg, pm, exhausted, stop_ns, max_events, want, room)
        left -= want
        if code != YIELD:
            return code
        if left <= 0:
            return YIELD


@njit(_nrt=False, cache=True, nogil=True)
def _run_generic(pages, counts, cpus, flags, pst, stat, ist, cnt, sst, glob, cfg, pm,
                 exhausted, stop_ns, max_events, budget, room):
    """The kernel of the comparison policies (same contract as :func:`_run_innodb_general`;
    they register no pages, so never NEED_ROOM)."""
    code = cfg[K_POLICY]
    n_done = 0
    left = budget
    while True:
        if left <= 0:
            return YIELD
        mid = glob[G_MID]
        if mid > 0:
            best = mid - 1
        else:
            best = _next_stream(sst, exhausted)
            if best == -1:
                return DONE
            if best < -1:
                return -best - 1
            t = sst[best, T_CLOCK]
            if stop_ns >= 0 and t >= stop_ns:
                return STOP_TIME
            if max_events >= 0 and n_done >= max_events:
                return STOP_EVENTS
        t = sst[best, T_CLOCK]
        e = sst[best, T_POS]
        p = pages[e]
        c = glob[G_LEFT] if mid > 0 else counts[e]
        cpu = cpus[e]
        fl = flags[e]
        n = c if c <= left else left
        for _ in range(n):
            t = _generic_get(pst, stat, ist, cnt, sst, glob, cfg, pm, code, p, fl, best, t)
            t += cpu
            if t < 0:
                sst[best, T_CLOCK] = t
                return CLOCK_OVERFLOW
        left -= n
        sst[best, T_CPU] += cpu * n
        if (fl & FLAG_RELATCH) == 0:
            sst[best, T_GETS] += n
        sst[best, T_CLOCK] = t
        if n < c:
            glob[G_LEFT] = c - n
            glob[G_MID] = best + 1
            return YIELD
        glob[G_MID] = 0
        glob[G_LEFT] = 0  # no event is cut: 0, whichever kernel ran
        sst[best, T_EVENTS] += 1
        sst[best, T_POS] = e + 1
        n_done += 1


def _kernel_of(policy: str):
    """The kernel that replays ``policy``."""
    return {"innodb": _run_innodb, "lru": _run_lru}.get(policy, _run_generic)


def compiled(config: PoolConfig | str) -> bool | None:
    """Whether the kernel a replay of ``config`` (or of a policy name) runs is compiled
    already, in this process or in numba's cache folder (``NUMBA_CACHE_DIR``, see
    :mod:`bufsim._numba_cache`).  False: the first replay compiles it, which takes
    about a minute on two cores for InnoDB (once per install or update of bufsim:
    :func:`compile_notice` says so).  None where numba's cache cannot tell.

    >>> from bufsim import mysql56
    >>> compiled(mysql56(pool_pages=1024)) in (True, False)
    True
    """
    kernel = _kernel_of(config if isinstance(config, str) else config.policy)
    if kernel.signatures:
        return True
    try:
        index = kernel._cache._cache_file._index_path   # numba's index of the cached kernel
    except AttributeError:
        return None
    return os.path.isfile(index)


class _first_call:
    """Around a kernel's call: the first one in this process (it compiles the kernel, or
    loads it from numba's cache folder) holds a lock file in that folder, so that two
    processes starting at once (notebooks side by side, pytest-xdist workers) do not
    both spend a minute compiling the same kernel: the second waits, then loads what
    the first saved. Later calls, and machines without ``fcntl``, take no lock."""

    __slots__ = ("kernel", "fh")

    def __init__(self, kernel):
        self.kernel, self.fh = kernel, None

    def __enter__(self):
        folder = os.environ.get("NUMBA_CACHE_DIR", "")
        # (a plain function under NUMBA_DISABLE_JIT has no signatures: nothing to compile)
        if getattr(self.kernel, "signatures", True) or not folder:
            return self
        try:
            import fcntl
            os.makedirs(folder, exist_ok=True)
            self.fh = open(os.path.join(folder, f".compile-{self.kernel.__name__}.lock"), "a")
            fcntl.flock(self.fh, fcntl.LOCK_EX)
        except (ImportError, OSError):      # no lock: at worst both processes compile
            if self.fh is not None:
                self.fh.close()
            self.fh = None
        return self

    def __exit__(self, *exc):
        if self.fh is not None:
            self.fh.close()                 # closing the file releases the lock
            self.fh = None
        return False


def compile_notice(configs) -> str | None:
    """The line the command line and a notebook's setup show before a replay whose
    kernel is not compiled yet (a minute of silence otherwise), naming the policies of
    ``configs`` (PoolConfigs or policy names) it concerns; None when none is."""
    todo = sorted({c if isinstance(c, str) else c.policy for c in configs
                   if compiled(c) is False})
    if not todo:
        return None
    return (f"bufsim: the {', '.join(todo)} replay kernel{'s are' if len(todo) > 1 else ' is'} "
            "not compiled yet: the first replay compiles "
            f"{'them' if len(todo) > 1 else 'it'} (once after installing or updating bufsim: "
            f"about a minute; kept in {os.environ.get('NUMBA_CACHE_DIR', '?')})")


@njit(_nrt=False, cache=True, inline="always")
def _lru_to_head(f, prv, nxt, head, tail):
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
def _lru_get(p, fmap, ffree, prv, nxt, where, page, stat, pm, head, tail, length, cap, top,
             devfree, devlast, devbusy, t, rnd, seq, miss_cpu):
    """One get of page p by :func:`_run_lru` (its locals in, changed locals out, with the
    get's miss, eviction, I/O wait and extra CPU as 0/1 and ns)."""
    n_miss = 0
    n_evict = 0
    iowait = 0
    cpu_sum = 0
    f = fmap[ix(p)]
    if f >= 0:
        if f != head:                      # move to the head
            head, tail = _lru_to_head(f, prv, nxt, head, tail)
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
        devfree, devlast, devbusy = _fifo_read(stat, pm, p, t, devfree, devlast, devbusy,
                                               rnd, seq)
        iowait += devfree - t
        t = devfree + miss_cpu
        cpu_sum += miss_cpu
    return (head, tail, length, top, devfree, devlast, devbusy, t, n_miss, n_evict, iowait,
            cpu_sum)


@njit(_nrt=False, cache=True, nogil=True)
def _run_lru(pages, counts, cpus, flags, pst, stat, ist, cnt, sst, glob, cfg, pm,
             exhausted, stop_ns, max_events, budget, room):
    """Plain LRU, one stream, one instance, no stop time or event limit: the fast path.

    The same state and the same results as :func:`_run_generic` with policy ``lru``
    (the twin tests run both), with the list ends, counters, device queue and clock
    in locals, written back once per call; a miss reuses the evicted page's frame; runs of
    one-get events go through an inner loop with the event bookkeeping summed after the run,
    and within a run each stretch of hits only moves pages: the clock, CPU and counted gets
    of its events are summed after the stretch, before the next miss reads the clock (the
    hit loop carries nothing else, so the CPU overlaps more of its cache misses).
    Other cases (and a device with a scheduler other than FIFO or distance-priced
    skips) return FALLBACK at once, state untouched, and :meth:`PoolState.run` calls
    :func:`_run_generic` instead (not called from here, so that an LRU replay does not
    compile the general kernel of every comparison policy)."""
    if sst.shape[0] != 1 or ist.shape[0] != 1 or stop_ns >= 0 or max_events >= 0 or \
            cfg[K_DEV_SCHED] != 0 or cfg[K_DEV_SKIP] != 0:
        return FALLBACK
    fmap = pm[PM_FMAP]
    ffree = pm[PM_FFREE]
    prv = pst[P_PREV]
    nxt = pst[P_NEXT]
    where = pst[P_WHERE]
    page = pst[P_PAGE]
    head = ist[0, L1_HEAD]
    tail = ist[0, L1_TAIL]
    length = ist[0, L1_LEN]
    cap = ist[0, I_CAP]
    top = glob[G_FTOP]
    devfree = glob[G_DEVFREE]
    devlast = glob[G_DEVLAST]
    devbusy = glob[G_DEVBUSY]
    rnd = cfg[K_DEV_RAND]
    seq = cfg[K_DEV_SEQ]
    miss_cpu = cfg[K_COST_MISS]
    e = sst[0, T_POS]
    end = sst[0, T_END]
    t = sst[0, T_CLOCK]
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
            code = DONE if exhausted[0] != 0 else 1
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
                        head, tail = _lru_to_head(f, prv, nxt, head, tail)
                    e += 1
                for i in range(e1, e):
                    t += cpus[i]
                    neg |= t
                    cpu_sum += cpus[i]
                    n_counted += (flags[i] & FLAG_RELATCH) == 0
                if neg < 0 or e >= lim or counts[e] != 1:
                    break
                # a miss (the clock is up to date for its device read)
                head, tail, length, top, devfree, devlast, devbusy, t, m, v, w, x = _lru_get(
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
            head, tail, length, top, devfree, devlast, devbusy, t, m, v, w, x = _lru_get(
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
    # write back
    ist[0, L1_HEAD] = head
    ist[0, L1_TAIL] = tail
    ist[0, L1_LEN] = length
    ist[0, I_CLOCK] += n_evict
    glob[G_FTOP] = top
    glob[G_DEVFREE] = devfree
    glob[G_DEVLAST] = devlast
    glob[G_DEVBUSY] = devbusy
    glob[G_ACTIVE] = 1 if n_gets > 0 else glob[G_ACTIVE]
    glob[G_MID] = partial  # 1 + stream 0 if an event was cut
    if partial == 0:
        glob[G_LEFT] = 0
    cnt[0, C_GETS] += n_counted
    sst[0, T_GETS] += n_counted
    cnt[0, C_READS] += n_miss
    cnt[0, C_READ] += n_miss
    cnt[0, C_EVICT] += n_evict
    sst[0, T_MISSES] += n_miss
    sst[0, T_IOWAIT] += iowait
    sst[0, T_CPU] += cpu_sum
    sst[0, T_EVENTS] += n_events
    sst[0, T_POS] = e
    sst[0, T_CLOCK] = t
    return code


@njit(_nrt=False, cache=True)
def _translate(dense, out, pm, stat, glob, n_inst, start, room):
    """Local ids of dense pages ``dense[start:]`` into ``out``, registering new pages,
    until fewer than ``room`` could still be registered (local ids only: with dense
    keys a page's id is its dense index).  Returns the index reached."""
    n = dense.shape[0]
    j = start
    while j < n:
        if glob[G_NLOCAL] >= room:
            break
        p = local_of(pm, dense[j])
        if p < 0:
            p = register(pm, stat, glob, n_inst, dense[j])
        out[j] = p
        j += 1
    return j


@njit(_nrt=False, cache=True)
def _rehash(hk, hv, stat, n_local):
    """Fill an empty hash (keys -1) with the local ids 0..n_local-1."""
    for p in range(n_local):
        d = stat[p, S_DENSE]
        h = hash_slot(hk, d)
        hk[h] = d
        hv[h] = p


def _config_array(cfg: PoolConfig) -> np.ndarray:
    a = np.zeros(N_K, dtype=np.int64)
    a[K_POLICY] = registry.CODES[cfg.policy]
    rules = cfg.server  # the version's record (bufsim.versions)
    a[K_FREE_SCAN] = rules.free_scan_code
    a[K_MASTER_FLUSH] = int(rules.master_thread_flushing)
    a[K_RA_ZERO_OFF] = int(rules.read_ahead_zero_off)
    a[K_RA_NEXT_AREA] = int(rules.read_ahead_next_page_area)
    a[K_RA_FAIL_EARLY] = int(rules.read_ahead_fail_early)
    a[K_FREE_UNUSED] = int(rules.free_unused_after_read_ahead)
    a[K_REFILL_DEMAND] = int(rules.refill_on_demand)
    a[K_BATCH_UNBOUNDED] = int(rules.cleaner_batch_unbounded)
    a[K_LRU_FLOOR_SMALL] = int(rules.small_pool_lru_floor)
    a[K_TEMP_UNLOGGED] = int(rules.temp_pages_unlogged)
    a[K_OLDTIME] = cfg.old_blocks_time_ms
    a[K_RATIO] = cfg.old_ratio
    a[K_RATHRESH] = cfg.read_ahead_threshold
    a[K_SCANDEPTH] = cfg.lru_scan_depth
    a[K_AHI] = int(cfg.adaptive_hash_index)
    a[K_CLEANER] = int(cfg.page_cleaner)
    a[K_COST_CLOCK] = cfg.cost.clock_read_ns
    a[K_COST_YOUNG] = cfg.cost.make_young_ns
    a[K_COST_MISS] = cfg.cost.miss_cpu_ns
    a[K_COST_EVICT] = cfg.cost.evict_ns
    a[K_DEV_RAND] = cfg.device.random_read_ns
    a[K_DEV_SEQ] = cfg.device.seq_read_ns
    a[K_DEV_WRITE] = cfg.device.write_ns
    a[K_DEV_SCHED] = SCHED_CODES[cfg.device.scheduler]
    a[K_DEV_SKIP] = SKIP_CODES[cfg.device.skip_pricing]
    a[K_DEV_SLICE] = cfg.device.slice_sync_ns
    a[K_DEV_IDLE] = cfg.device.slice_idle_ns
    a[K_DEV_EXPIRE] = cfg.device.read_expire_ns
    a[K_NINST] = cfg.instances
    a[K_ACTIVITY] = int(cfg.cleaner_activity == "statement")
    a[K_IO_CAPACITY] = cfg.io_capacity
    a[K_MAX_DIRTY] = cfg.max_dirty_pages_pct
    a[K_DIRTY_LWM] = cfg.max_dirty_pages_pct_lwm
    a[K_FLUSH] = int(cfg.policy == "innodb" and cfg.flush_list_flushing)
    return a


def _frames_needed(config: PoolConfig) -> int:
    """Frames (rows of the per-frame state) a pool needs: one per block, plus room for
    the ghost lists of 2Q and ARC and the page being read while its victim leaves."""
    cap = config.data_pages
    ghosts = {"two_q": cap // 2 + 1, "arc": cap + 1}.get(config.policy, 0)
    return config.instances * (cap + ghosts + 1)


def check_memory(config: PoolConfig, tablespaces: Tablespaces | None = None) -> int:
    """Bytes of engine state a pool of ``config`` (over ``tablespaces``: its dense page
    map too) allocates up front; raises :class:`bufsim._memory.PoolMemoryError` (a
    ValueError naming that figure and the memory available) if it cannot fit.
    :class:`PoolState` calls it before allocating anything; the command line calls it
    before reading a trace."""
    pm = 0
    if tablespaces is not None and \
            tablespaces.n_pages * (1 if config.instances == 1 else 3) <= DENSE_MAP_MAX_PAGES:
        pm = tablespaces.n_pages * (4 if config.instances == 1 else 12)
    return check_pool_memory(config, _frames_needed(config), P_DTYPES, pm)


class PoolState:
    """The complete array state of one replay, between calls of the kernel.

    Most users call :func:`replay` or :class:`bufsim.Pool` (the notebooks do); tests
    that need to look inside (step one event at a time, read the LRU order) use this
    class directly.

    Layout (frame-major, like InnoDB's ``buf_block_t`` array and ``page_hash``):

    ``pst[P_*][frame]``
        one entry per buffer frame (the pool's size, plus ghost entries for 2Q/ARC)
        in one array per field (:class:`~bufsim.policies._state.FrameState`): list
        links and the page as int32, list id, old flag and CLOCK's reference bit as
        uint8, stamp int32, flush-list links int32, access time, read completion and
        oldest modification int64 (51 bytes a frame; with the free list ``ffree``,
        int32, 55: :meth:`nbytes`).
    ``fmap[page]``
        the page's frame: -1 if not resident, -2 if it never had one.
    Page ids (``page`` above; "page ids" in :mod:`bufsim.policies._state`)
        With at most :data:`DENSE_MAP_MAX_PAGES` pages in the tablespaces (a third
        as many with several instances), a page's id
        is its dense index (*dense keys*): ``fmap`` has 4 bytes per page number, a
        trace's pages go to the kernel as they are, the page facts are computed from
        the space arrays, and ``stat`` holds only each page's instance (8 bytes per
        page number, with several instances).  Beyond that, local ids given in order of
        first appearance: ``stat[page, S_*]`` holds each *distinct page met*'s dense
        index, space, page number, instance and B-tree leaf links, and ``hk``/``hv`` is
        an open-addressing hash from dense page index to local id.

    Memory therefore follows the pool size and the pages a trace touches (or, with
    dense keys, 4 bytes per page number below 2**24 pages), not the largest page
    number.
    """

    def __init__(self, config: PoolConfig, tablespaces: Tablespaces, n_streams: int = 1,
                 start_ns: Sequence[int] | None = None, stream_names: Sequence[str] | None = None):
        if n_streams < 1:
            raise ValueError(f"n_streams={n_streams} is out of range; allowed: >= 1")
        if start_ns is None:
            self.start_ns = np.zeros(n_streams, dtype=np.int64)
        else:
            vals = list(start_ns) if np.ndim(start_ns) else [start_ns]
            self.start_ns = np.asarray([check_ns(f"start_ns[{s}]", x) for s, x in enumerate(vals)],
                                       dtype=np.int64)
        if self.start_ns.shape != (n_streams,) or (self.start_ns < 0).any():
            raise ValueError(f"start_ns must hold {n_streams} times >= 0, got {start_ns!r}")
        self.stream_names = [str(s) for s in range(n_streams)] if stream_names is None \
            else [str(x) for x in stream_names]
        self.config = config
        self.tablespaces = tablespaces
        check_memory(config, tablespaces)  # refuse before allocating
        nf = _frames_needed(config)
        self.pst = new_page_state(nf)
        self.ffree = np.arange(nf - 1, -1, -1, dtype=np.int32)  # a stack: frame 0 on top
        self._space_ids = np.array(tablespaces.space_ids, dtype=np.int64)
        self.space_base = np.array(tablespaces.space_base, dtype=np.int64)
        self.space_size = np.array(tablespaces.space_size, dtype=np.int64)
        # per tablespace: synchronous reads (the kernels') and gets (counted as fed)
        self.space_misses = np.zeros(len(self.space_base), dtype=np.int64)
        self.space_gets = np.zeros(len(self.space_base), dtype=np.int64)
        # pages that hold no data, freed after a MariaDB 10.11 read-ahead reads them (§13)
        self._unused = np.array(tablespaces.unused_dense, dtype=np.int64)
        self._links = tuple(np.array(a, dtype=np.int64) for a in tablespaces.leaf_link_table)
        self.dense_keys = tablespaces.n_pages * (1 if config.instances == 1 else 3) \
            <= DENSE_MAP_MAX_PAGES
        self._alloc_pages(1 << 14)
        ni = config.instances
        ist = np.zeros((ni, N_I), dtype=np.int64)
        ist[:, 0:12:3] = -1
        ist[:, 1:12:3] = -1
        ist[:, I_OLD] = -1
        ist[:, I_DROP] = -1
        ist[:, LF_HEAD] = -1
        ist[:, LF_TAIL] = -1
        size = config.instance_pages
        cap = config.data_pages
        ist[:, I_SIZE] = size
        ist[:, I_FREE] = cap
        ist[:, I_W] = config.young_window
        ist[:, I_AREA] = config.read_ahead_area
        module = registry.module(config.policy)
        for i in range(ni):
            if module is not None:
                module.init(ist, i, cap)
            else:
                ist[i, I_CAP] = cap
        self.ist = ist
        self.cnt = np.zeros((ni, N_C), dtype=np.int64)
        self.sst = np.zeros((n_streams, N_T), dtype=np.int64)
        self.sst[:, T_CLOCK] = self.start_ns
        self.glob = np.zeros(N_G, dtype=np.int64)
        self.glob[G_DEVLAST] = -1
        self.glob[G_FIXED] = -1
        self.glob[G_NEXT_TICK] = NS_PER_S
        self.glob[G_FTOP] = nf
        self.glob[G_AREA] = config.read_ahead_area if config.policy == "innodb" else 0
        self.cfg = _config_array(config)
        self.exhausted = np.zeros(n_streams, dtype=np.int64)
        self._kernel = _kernel_of(config.policy)
        self._buf = [_empty_events() for _ in range(n_streams)]
        self._arrays = _empty_events()

    # ---- the page map ------------------------------------------------------------------
    def _alloc_pages(self, rows: int) -> None:
        """(Re)allocate the per-page arrays for ``rows`` distinct pages, keeping the
        pages met so far, and rebuild the hash at a load factor <= 1/2 (with dense
        keys: the arrays for every page number, once)."""
        if self.dense_keys:
            if hasattr(self, "fmap"):
                return  # sized for every page number already: nothing to grow
            n, ni = self.tablespaces.n_pages, self.config.instances
            self.fmap = np.full(n, -2, dtype=np.int32)
            self.stat = np.zeros((0, 1), dtype=np.int64) if ni == 1 else \
                np.array(self.tablespaces.instance_of(ni), dtype=np.int64).reshape(-1, 1)
            self.edge = np.zeros(0, dtype=np.uint8)
            self.hk = np.zeros(0, dtype=np.int64)
            self.hv = np.zeros(0, dtype=np.int32)
            return
        old = getattr(self, "stat", None)
        n = int(self.glob[G_NLOCAL]) if old is not None else 0
        stat = np.zeros((rows, N_S), dtype=np.int64)
        fmap = np.full(rows, -1, dtype=np.int32)
        edge = np.zeros(rows, dtype=np.uint8)
        if old is not None:
            stat[:n] = old[:n]
            fmap[:n] = self.fmap[:n]
            edge[:n] = self.edge[:n]
        self.edge = edge
        hsize = 1 << max(4, int(2 * rows - 1).bit_length())
        hk = np.full(hsize, -1, dtype=np.int64)
        hv = np.zeros(hsize, dtype=np.int32)
        _rehash(hk, hv, stat, n)
        self.stat, self.fmap, self.hk, self.hv = stat, fmap, hk, hv

    def _grow(self) -> None:
        self._alloc_pages(2 * self.stat.shape[0])

    @property
    def _pm(self):
        """The page map tuple of the kernels (``PM_*`` in :mod:`bufsim.policies._state`)."""
        return (self.fmap, self.ffree, self.hk, self.hv, self.space_base,
                self.space_size, self._space_ids, self._unused) + self._links + \
            (self.edge, self.space_misses)

    def local_ids(self, dense) -> np.ndarray:
        """The kernels' ids of dense pages: the pages themselves with dense keys,
        otherwise their local ids, registering the new ones (with their leaf links)."""
        dense = np.ascontiguousarray(dense, dtype=np.int64)
        if self.dense_keys:
            return dense
        out = np.empty(len(dense), dtype=np.int64)
        j = 0
        while True:
            j = _translate(dense, out, self._pm, self.stat, self.glob, self.config.instances, j,
                           self._room())
            if j >= len(dense):
                return out
            self._grow()

    def _frame_of(self, page: int) -> int:
        """Frame of dense page ``page``, -1 if it has none."""
        lp = local_of(self._pm, int(page))
        return -1 if lp < 0 else max(int(self.fmap[lp]), -1)

    def page_field(self, page: int, field: int) -> int:
        """Column ``field`` (a ``P_*`` constant) of dense page ``page``'s frame; 0 for a
        page that has no frame (not resident, not a ghost), as every field of such a
        page was in the page-major engine."""
        f = self._frame_of(page)
        return 0 if f < 0 else int(self.pst[field][f])

    def _dense_of_frames(self, frames) -> np.ndarray:
        fr = np.asarray(frames, dtype=np.int64)
        ids = self.pst[P_PAGE][fr].astype(np.int64)
        return ids if self.dense_keys else self.stat[ids, S_DENSE]

    def _room(self) -> int:
        """The kernels' ``room``: local ids they may register before NEED_ROOM."""
        return 2**62 if self.dense_keys else self.stat.shape[0] - ROOM_PER_GET

    @property
    def n_streams(self) -> int:
        return self.sst.shape[0]

    @property
    def distinct_pages(self) -> int:
        """Distinct pages the replay has met (trace pages and read-ahead pages)."""
        if self.dense_keys:
            return int(np.count_nonzero(self.fmap != -2))
        return int(self.glob[G_NLOCAL])

    def nbytes(self) -> dict:
        """Bytes of state: ``per_frame`` (pool-sized arrays), ``per_page`` (arrays
        sized by the distinct pages met, at their current capacity) and the counts."""
        frame = page_state_nbytes(self.pst) + self.ffree.nbytes
        page = self.stat.nbytes + self.fmap.nbytes + self.hk.nbytes + self.hv.nbytes + \
            self.edge.nbytes
        nf = len(self.ffree)
        return {"frames": nf, "frame_bytes": frame, "bytes_per_frame": frame / nf,
                "distinct_pages": self.distinct_pages, "page_bytes": page,
                "bytes_per_distinct_page": page / max(self.distinct_pages, 1)}

    # ---- feeding events ---------------------------------------------------------------
    def feed(self, stream: int, chunk) -> None:
        """Append a chunk's events to a stream's buffer."""
        n = self.tablespaces.n_pages
        # a Chunk's pages are >= 0, its counts >= 1 and its cpu_ns >= 0 (Chunk checks them)
        page = _kernel_array(chunk.page, np.int64)
        lo, hi = span(page) if len(chunk) else (0, 0)
        if lo < 0 or hi >= n:
            bad = int(np.flatnonzero((page < 0) | (page >= n))[0])
            raise ValueError(f"trace column 'page' row {bad}: page index {int(page[bad])} "
                             f"is outside the tablespaces (allowed 0..{n - 1})")
        cpu = _kernel_array(chunk.cpu_ns, np.int64)
        if len(chunk) and (span(cpu)[1] > 2**63 - 1 - int(self.sst[stream, T_CLOCK])):
            bad = int(np.flatnonzero(cpu > 2**63 - 1 - int(self.sst[stream, T_CLOCK]))[0])
            raise ValueError(f"trace column 'cpu_ns' row {bad} = {int(cpu[bad])} would overflow "
                             "the int64 virtual clock (start_ns + cpu_ns must stay below 2**63)")
        # the kernels read the chunk's own counts, cpu_ns and flags and never write them
        # (a cut event's remaining count is glob[G_LEFT]); pages become the kernels' ids
        new = (self.local_ids(page), _kernel_array(chunk.count, np.int64), cpu,
               _kernel_array(chunk.flags, np.uint8))
        if len(page):   # gets per tablespace, as NUMBER_PAGES_GET counts them (no re-latch)
            self.space_gets += self._chunk_space_gets(chunk, page, new[1], new[3])
        if self.n_streams == 1 and self.sst[0, T_POS] >= self.sst[0, T_END]:
            # one stream, its buffer used up: the chunk's arrays are the kernel's
            self._arrays = new
            self.sst[0, T_POS] = 0
            self.sst[0, T_END] = len(page)
            self._buf[0] = new
            return
        rest = self._remaining(stream)
        self._buf[stream] = tuple(np.concatenate([r, a]) for r, a in zip(rest, new))
        self._layout()

    def _chunk_space_gets(self, chunk, page, count, flags) -> np.ndarray:
        """A chunk's gets per tablespace; kept on the chunk for the next pool over the same
        tablespaces that it is fed to (run_ssb feeds every chunk to many pools)."""
        memo = getattr(chunk, "__dict__", {}).get("_space_gets")
        if memo is not None and memo[0] is self.tablespaces:
            return memo[1]
        w = np.where((flags & FLAG_RELATCH) == 0, count, 0)
        sp = np.searchsorted(self.space_base, page, side="right") - 1
        gets = np.bincount(sp, weights=w, minlength=len(self.space_gets)).astype(np.int64)
        if hasattr(chunk, "__dict__"):
            object.__setattr__(chunk, "_space_gets", (self.tablespaces, gets))
        return gets

    def _remaining(self, s):
        a, b = self.sst[s, T_POS], self.sst[s, T_END]
        return tuple(x[a:b] for x in self._arrays) if b > a else _empty_events()

    def _layout(self):
        """Lay the streams' buffers end to end in one set of arrays for the kernel."""
        bufs = [self._buf[s] for s in range(self.n_streams)]
        off = 0
        for s, b in enumerate(bufs):
            self.sst[s, T_POS] = off
            off += len(b[0])
            self.sst[s, T_END] = off
        self._arrays = tuple(np.ascontiguousarray(np.concatenate([b[j] for b in bufs]))
                             for j in range(4))
        for s in range(self.n_streams):
            self._buf[s] = self._remaining(s)

    def close(self, stream: int) -> None:
        """Mark a stream's source as exhausted."""
        self.exhausted[stream] = 1

    def run(self, stop_ns: int = -1, max_events: int = -1) -> int:
        """Run the kernel on the buffered events.

        Returns 0 when every stream is exhausted, ``1 + s`` when stream s needs its
        next chunk, -1 when a stream reached ``stop_ns``, -2 after ``max_events``
        events.  The kernel returns to Python every few million gets (a long event
        is split and resumed exactly), so Ctrl-C stops a replay within a second.

        Raises
        ------
        ValueError
            If the int64 virtual clock would overflow (``start_ns`` plus the
            trace's ``cpu_ns`` and waits reach 2**63).
        """
        pages, counts, cpus, flags = self._arrays
        kernel = self._kernel
        done = 0
        while True:
            left = -1 if max_events < 0 else max(int(max_events) - done, 0)
            ev0 = int(self.sst[:, T_EVENTS].sum())
            with _first_call(kernel):
                code = kernel(pages, counts, cpus, flags, self.pst, self.stat, self.ist,
                              self.cnt, self.sst, self.glob, self.cfg, self._pm,
                              self.exhausted, int(stop_ns), left, GETS_PER_CALL, self._room())
            done += int(self.sst[:, T_EVENTS].sum()) - ev0
            if code == FALLBACK:  # the LRU fast path does not apply: nothing was done
                kernel = _run_generic
                continue
            if code == NEED_ROOM:
                self._grow()
                continue
            if code == YIELD:
                continue
            if code == CLOCK_OVERFLOW:
                s = int(np.argmin(self.sst[:, T_CLOCK]))
                raise ValueError(
                    f"the virtual clock of stream {s} overflowed int64: start_ns "
                    f"({int(self.start_ns[s])}) plus the trace's cpu_ns and waits reached "
                    "2**63 ns; allowed: start_ns + total time < 2**63 - 1")
            break
        for s in range(self.n_streams):
            self._buf[s] = self._remaining(s)
        return int(code)

    def reopen(self, stream: int) -> None:
        """Let a closed stream take chunks again (a new statement on the same pool)."""
        self.exhausted[stream] = 0

    def set_settings(self, config: PoolConfig) -> None:
        """``SET GLOBAL``: make ``config``'s old_blocks_time and old_blocks_pct the ones in
        effect.  A new percentage re-adjusts each instance's old sublist at once, as
        buf_LRU_old_ratio_update does; the time applies to every later check."""
        self.config = config
        self.cfg[K_OLDTIME] = config.old_blocks_time_ms
        if self.cfg[K_RATIO] != config.old_ratio:
            self.cfg[K_RATIO] = config.old_ratio
            if config.policy == "innodb":
                for i in range(config.instances):
                    if self.ist[i, I_OLD] >= 0:
                        old_adjust_len(self.pst, self.stat, self.ist, self.cfg, i)

    def counter_totals(self) -> np.ndarray:
        """The cumulative counters (:data:`~bufsim.policies._state.COUNTER_NAMES`), summed
        over instances."""
        return self.cnt.sum(axis=0).astype(np.int64)

    def stream_totals(self, stream: int = 0) -> dict:
        """A stream's cumulative ``clock_ns``, ``cpu_ns``, ``io_wait_ns``, ``gets``,
        ``misses``, ``events`` and ``read_ahead`` (pages its gets made linear read-ahead
        bring in), and the device's ``busy_ns`` (all streams)."""
        s = self.sst[stream]
        return dict(clock_ns=int(s[T_CLOCK]), cpu_ns=int(s[T_CPU]), io_wait_ns=int(s[T_IOWAIT]),
                    gets=int(s[T_GETS]), misses=int(s[T_MISSES]), events=int(s[T_EVENTS]),
                    read_ahead=int(s[T_RA]), busy_ns=int(self.glob[G_DEVBUSY]))

    #: the arrays that hold the whole mutable state (:meth:`copy_arrays`)
    STATE_ARRAYS = ("pst", "ffree", "stat", "fmap", "edge", "hk", "hv", "ist", "cnt",
                    "sst", "glob", "cfg", "exhausted", "space_misses", "space_gets")

    def copy_arrays(self) -> dict:
        """A copy of every state array (lists, flags, counters, clocks, device, settings)."""
        return {k: _copy(getattr(self, k)) for k in self.STATE_ARRAYS}

    def restore_arrays(self, arrays: dict, config: PoolConfig) -> None:
        """Return to :meth:`copy_arrays`' state, with no buffered events."""
        for k, v in arrays.items():
            setattr(self, k, _copy(v))
        self.config = config
        self._buf = [_empty_events() for _ in range(self.n_streams)]
        self._arrays = self._buf[0]
        self.sst[:, T_POS] = self.sst[:, T_END] = 0

    def load_content(self, local: np.ndarray, inst: np.ndarray, old: np.ndarray | None,
                     dirty: np.ndarray) -> None:
        """Put pages (local ids, LRU order, head first) into an empty pool: see
        :meth:`bufsim.Pool.load`, which checks the arguments.  ``old`` None: InnoDB's own
        split (buf_LRU_old_init from 512 pages)."""
        cfg = self.config
        access = self.sst[0, T_CLOCK] // NS_PER_MS + 1
        for i in range(cfg.instances):
            sel = np.flatnonzero(inst == i)
            for j in sel[::-1]:  # tail first: each push goes to the head
                f = take_frame(self.pst, self.glob, self.fmap, self.ffree, local[j])
                push_head(self.pst, self.ist, i, 1, f)
                self.pst[P_ACCESS][f] = access
                self.pst[P_DIRTY][f] = 0
                if dirty[j] and cfg.policy == "innodb":
                    # a dirty page enters the flush list too (loaded tail first: the
                    # tail's page is the oldest); the counters start at 0
                    note_modification(self.pst, self.ist, self.cnt, self.glob, i, f)
                    self.cnt[i, C_WRITE_REQ] -= 1
                    self.cnt[i, C_DIRTIED] -= 1
                elif dirty[j]:
                    self.pst[P_DIRTY][f] = 1
                self.pst[P_OLD][f] = 0
            if cfg.policy != "innodb":
                continue
            self.ist[i, I_FREE] -= len(sel)
            o = None if old is None else old[sel]
            if o is not None and o.any():
                first = sel[int(np.argmax(o))]
                for j in sel:
                    self.pst[P_OLD][self.fmap[local[j]]] = int(old[j])
                self.ist[i, I_OLD] = self.fmap[local[first]]
                self.ist[i, I_OLDLEN] = int(o.sum())
            elif len(sel) >= 512:
                old_init(self.pst, self.stat, self.ist, self.cfg, i)

    def set_old_blocks_time(self, ms: int) -> None:
        """``SET GLOBAL innodb_old_blocks_time = ms``: applies to every later make-young
        check (``config`` keeps the starting value; :class:`bufsim.Pool` updates it)."""
        self.cfg[K_OLDTIME] = check_int("old_blocks_time_ms", ms, 0, 2**32 - 1)

    def idle_until(self, t_ns: int) -> None:
        """Advance every stream's clock to ``t_ns`` (if behind) with no gets: the page
        cleaner (5.6+) and the flush-list flushing make the pass due at the first whole
        second after activity."""
        t_ns = int(t_ns)
        if self.config.policy == "innodb" and (self.config.page_cleaner
                                               or self.config.flush_list_flushing):
            background(self.pst, self.stat, self.ist, self.cnt, self.glob, self.cfg,
                       self.fmap, self.ffree, t_ns)
        self.sst[:, T_CLOCK] = np.maximum(self.sst[:, T_CLOCK], t_ns)

    # ---- reading the state ---------------------------------------------------------------
    def lru(self, instance: int = 0, l: int = 1) -> list[int]:
        """Dense pages of list ``l`` of an instance, head (most recent) first."""
        frames = walk(self.pst, self.ist, instance, l)
        return [int(x) for x in self._dense_of_frames(frames)] if frames else []

    def flush_list(self, instance: int = 0) -> list[int]:
        """Dense pages of an instance's flush list, head (newest oldest_modification)
        first; the tail is flushed first."""
        frames = walk_flush(self.pst, self.ist, instance)
        return [int(x) for x in self._dense_of_frames(frames)] if frames else []

    def stats(self) -> pd.DataFrame:
        """One row per instance, columns as INFORMATION_SCHEMA.INNODB_BUFFER_POOL_STATS."""
        ist, cnt = self.ist, self.cnt
        df = pd.DataFrame(cnt, columns=list(COUNTER_NAMES))
        resident = ist[:, L1_LEN] + ist[:, L2_LEN]
        df.insert(0, "POOL_ID", np.arange(len(ist)))
        df.insert(1, "POOL_SIZE", ist[:, I_SIZE])
        free = ist[:, I_FREE] if self.config.policy == "innodb" else ist[:, I_CAP] - resident
        df.insert(2, "FREE_BUFFERS", free)
        df.insert(3, "DATABASE_PAGES", resident)
        df.insert(4, "OLD_DATABASE_PAGES", ist[:, I_OLDLEN])
        df.insert(5, "MODIFIED_DATABASE_PAGES", ist[:, LF_LEN])
        df["HIT_RATE"] = [hit_rate(r, g) for r, g in zip(cnt[:, C_READ], cnt[:, C_GETS])]
        return df

    def streams(self) -> pd.DataFrame:
        s = self.sst
        return pd.DataFrame({
            "stream": np.arange(len(s)), "name": self.stream_names, "start_ns": self.start_ns,
            "end_ns": s[:, T_CLOCK], "elapsed_ns": s[:, T_CLOCK] - self.start_ns, "cpu_ns": s[:, T_CPU],
            "io_wait_ns": s[:, T_IOWAIT], "gets": s[:, T_GETS], "misses": s[:, T_MISSES],
            "events": s[:, T_EVENTS], "read_ahead": s[:, T_RA],
            "hit_ratio": np.where(s[:, T_GETS] > 0,
                                  1 - s[:, T_MISSES] / np.maximum(s[:, T_GETS], 1), np.nan)})

    def spaces(self) -> pd.DataFrame:
        """Per tablespace: ``space_id``, ``name``, ``gets`` (as NUMBER_PAGES_GET counts
        them, AHI lookups once), ``misses`` (synchronous reads), ``hit_ratio`` (1 - misses
        / gets) and ``pages`` resident now."""
        ts = self.tablespaces
        pages, _ = self.group_counts()
        res = np.bincount(np.asarray(ts.group_space, dtype=np.int64), weights=pages,
                          minlength=ts.n_spaces).astype(np.int64)
        g, m = self.space_gets, self.space_misses
        return pd.DataFrame({
            "space_id": np.asarray(ts.space_ids), "name": list(ts.space_names), "gets": g.copy(),
            "misses": m.copy(), "hit_ratio": np.where(g > 0, 1 - m / np.maximum(g, 1), np.nan),
            "pages": res})

    def group_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Resident and old pages per group (index), counted from the frames."""
        where = self.pst[P_WHERE][:]
        resident = (where == 1) | (where == 2)
        n = self.tablespaces.n_groups
        frames = np.flatnonzero(resident)
        g = self.tablespaces.group_of(self._dense_of_frames(frames)) if len(frames) else \
            np.zeros(0, dtype=np.int64)
        old = (self.pst[P_OLD][frames] != 0) if self.config.policy == "innodb" else \
            np.zeros(len(frames), dtype=bool)
        return (np.bincount(g, minlength=n), np.bincount(g[old], minlength=n))

    def contents(self) -> pd.DataFrame:
        """Resident pages per index (group), like INNODB_BUFFER_PAGE_LRU grouped;
        ``old_pages`` are pages in InnoDB's old sublist (0 for other policies)."""
        ts = self.tablespaces
        gs = np.asarray(ts.group_space)
        pages, old = self.group_counts()
        return pd.DataFrame({
            "space_id": np.asarray(ts.space_ids)[gs], "index": list(ts.group_names),
            "pages": pages, "old_pages": old, "young_pages": pages - old})


def _kernel_array(a, dtype) -> np.ndarray:
    """``a`` as the kernels take it: C-contiguous, ``dtype`` and writable.  Numba compiles
    a separate specialisation for read-only arrays (those pyarrow hands out for a
    Parquet trace), so a read-only one is copied: one compiled kernel serves every
    source of chunks."""
    a = np.ascontiguousarray(a, dtype=dtype)
    return a if a.flags.writeable else a.copy()


def _copy(a):
    """A copy of one state array, or of each array of the per-frame state."""
    return copy_page_state(a) if isinstance(a, FrameState) else a.copy()


def hit_rate(reads: int, gets: int) -> int:
    """HIT_RATE of buf_stats_get_pool_info: 1000 - 1000 * reads / gets in unsigned
    64-bit arithmetic (it wraps when read-ahead makes reads exceed gets), 0 if no gets."""
    if gets == 0:
        return 0
    return (1000 - (1000 * int(reads)) // int(gets)) % (1 << 64)


def _empty_events():
    """No events: (dense pages, counts, cpu_ns, flags)."""
    z = np.zeros(0, dtype=np.int64)
    return z, z.copy(), z.copy(), np.zeros(0, dtype=np.uint8)


@dataclass
class ReplayResult:
    """What a replay leaves behind.

    Attributes
    ----------
    config
        The effective configuration.
    stats
        Per instance, INNODB_BUFFER_POOL_STATS columns plus
        Innodb_buffer_pool_reads, evictions, wait_free, write requests, AHI hits.
    totals
        The same summed over instances (the global status variables), HIT_RATE
        recomputed from the sums.
    streams
        Per stream: name, start and end of its virtual time, elapsed time, CPU,
        I/O wait, gets, misses (synchronous reads: gets that waited for their page),
        events, ``read_ahead`` (pages linear read-ahead brought in because of this
        stream's gets) and ``hit_ratio`` (1 - misses / gets).
    contents
        Resident, old and young pages per index at the end.
    spaces
        Per tablespace: gets, synchronous reads (misses), hit ratio and resident pages
        at the end (:meth:`PoolState.spaces`).
    timeline
        One row per sample (``sample_every_ns``): time, per-index resident (and
        old) pages, the cumulative counters, and per stream ``s`` the cumulative
        ``gets:s``, ``misses:s`` and ``io_wait_ns:s``; empty without sampling.
    device_busy_ns, cleaner_passes
        Total device service time and page-cleaner passes.
    memory
        Bytes of engine state: per frame (pool-sized arrays) and per distinct page
        met (the page map and static facts), see :meth:`PoolState.nbytes`.
    """

    config: PoolConfig
    stats: pd.DataFrame
    totals: pd.Series
    streams: pd.DataFrame
    contents: pd.DataFrame
    timeline: pd.DataFrame = field(default_factory=pd.DataFrame)
    device_busy_ns: int = 0
    cleaner_passes: int = 0
    memory: dict = field(default_factory=dict)
    spaces: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def hit_ratio(self) -> float:
        """1 - synchronous misses / gets over all streams (read-ahead not counted as a miss)."""
        g = self.streams["gets"].sum()
        return float(1 - self.streams["misses"].sum() / g) if g else float("nan")


def trace_sources(trace) -> tuple[list, list[int], list[str]]:
    """One source of chunks per stream, with its start time and name."""
    from .trace import Trace
    if isinstance(trace, (list, tuple)):
        if not trace:
            raise ValueError("trace: an empty list of traces; give at least one")
        for j, t in enumerate(trace):
            if not isinstance(t, Trace):
                raise ValueError(f"trace[{j}] must be a bufsim.Trace, got {describe(t)}")
        ts = trace[0].tablespaces
        for j, t in enumerate(trace[1:], 1):
            if t.tablespaces is not ts and t.tablespaces != ts:
                raise ValueError(f"trace[{j}] has other tablespaces than trace[0]; "
                                 "every stream must share one tablespace map")
        return list(trace), [0] * len(trace), [t.name or str(j) for j, t in enumerate(trace)]
    if not isinstance(trace, Trace):
        raise ValueError(f"trace must be a bufsim.Trace or a list of them (one per stream), "
                         f"got {describe(trace)}")
    if trace._by_stream is not None:   # already split (read_trace of several threads)
        starts, names = trace.stream_start_ns, trace.stream_names
        return (list(trace._by_stream),
                [int(starts[s]) if starts is not None else 0 for s in range(len(trace._by_stream))],
                [names[s] if names else str(s) for s in range(len(trace._by_stream))])
    if trace.is_materialized:
        ids = trace.streams()
        if len(ids) > 1:
            starts = trace.stream_start_ns
            names = trace.stream_names
            return (trace.split_streams(),
                    [int(starts[s]) if starts is not None else 0 for s in ids],
                    [names[s] if names else str(s) for s in ids])
        if len(ids) == 1 and trace.stream_start_ns is not None:
            s = int(ids[0])
            name = trace.stream_names[s] if trace.stream_names else trace.name or "0"
            return [trace], [int(trace.stream_start_ns[s])], [name]
    return [trace], [0], [trace.name or "0"]


def replay(trace, config: PoolConfig | str | None = None, *, sample_every_ns: int | None = None,
           start_ns: Sequence[int] | None = None, progress: bool = False,
           old_blocks_time_ms_at: Sequence[tuple[int, int]] | None = None,
           old_blocks_time_at: Sequence[tuple[int, int]] | None = None,
           **overrides) -> ReplayResult:
    """Replay a trace through a buffer pool under the virtual clock.

    Parameters
    ----------
    trace
        A :class:`bufsim.Trace`, or a list of traces, one per stream (for example
        a sysbench thread and a mysqldump scan).  An in-memory trace whose events
        carry several stream ids (e.g. the threads of :func:`bufsim.read_trace`) is
        split by stream, each stream starting at its ``stream_start_ns``; a lazily
        generated trace is one stream.  Every trace must share one
        :class:`bufsim.Tablespaces`.
    config
        A :class:`PoolConfig`, a preset name (``'mysql56'``...) or None for
        ``PoolConfig()`` (a 5.6 InnoDB pool of 8192 pages).
    sample_every_ns
        If given, record the pool contents and counters every that many
        nanoseconds of virtual time into ``result.timeline``.
    start_ns
        Virtual time at which each stream starts (one value per stream, >= 0),
        e.g. a scan that begins once the pool is warm.  Default: the traces'
        own ``stream_start_ns``, else 0.
    progress
        Show a progress bar over chunks.
    old_blocks_time_ms_at
        ``[(time_ns, ms), ...]``: ``SET GLOBAL innodb_old_blocks_time = ms`` when the
        virtual clock reaches ``time_ns`` (the variable is dynamic; the new value
        applies to every later make-young check).  ``result.config`` keeps the
        starting value.  ``old_blocks_time_at`` is its deprecated name.
    **overrides
        Fields of the configuration to change, e.g. ``old_blocks_time_ms=0``.

    Returns
    -------
    ReplayResult
    """
    old_blocks_time_ms_at = renamed("old_blocks_time_ms_at", old_blocks_time_ms_at,
                                    "old_blocks_time_at", old_blocks_time_at)
    if config is None:
        config = PoolConfig(**overrides) if overrides else PoolConfig()
    elif isinstance(config, str):
        config = preset(config, **overrides)
    elif isinstance(config, PoolConfig):
        config = config.replace(**overrides) if overrides else config
    else:
        raise ValueError(f"config must be a PoolConfig, a preset name or None, got {type(config).__name__}")
    if sample_every_ns is not None:
        check_ns("sample_every_ns", sample_every_ns, 1)
    sources, starts, names = trace_sources(trace)
    if start_ns is not None:
        if isinstance(start_ns, (str, bytes)) or np.ndim(start_ns) != 1:
            raise ValueError(f"start_ns must be a sequence of one integer >= 0 per stream "
                             f"({len(sources)} streams), got {describe(start_ns)}")
        starts = [check_ns(f"start_ns[{j}]", x) for j, x in enumerate(start_ns)]
        if len(starts) != len(sources):
            raise ValueError(f"start_ns holds {len(starts)} times for {len(sources)} streams; "
                             "give one integer >= 0 per stream")
    key = _cache.replay_key(sources, starts, names, config, sample_every_ns, old_blocks_time_ms_at)
    if key is not None and (hit := _cache.load(key)) is not _cache.MISSING:
        return hit      # the same events, configuration and package source (bufsim.cache)
    state = PoolState(config, sources[0].tablespaces, len(sources), start_ns=starts,
                      stream_names=names)
    iters = [iter(s) for s in sources]
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(desc="replay", unit="chunk")

    samples = []
    # samples every sample_every_ns from the first stream's start (none past the clock's end)
    next_sample = _after(min(int(x) for x in starts), sample_every_ns) if sample_every_ns else -1
    switches = sorted(_switch(j, e) for j, e in enumerate(old_blocks_time_ms_at or ()))
    for t, v in switches:
        if config.policy != "innodb":
            raise ValueError(f"old_blocks_time_ms_at entry ({t}, {v}): needs policy 'innodb', "
                             f"got {config.policy!r}")

    def refill(s):
        for chunk in iters[s]:
            if len(chunk):
                state.feed(s, chunk)
                if bar is not None:
                    bar.update(1)
                return
        state.close(s)

    for s in range(len(sources)):
        refill(s)
    try:
        while True:
            stop = next_sample
            if switches and (stop < 0 or switches[0][0] < stop):
                stop = switches[0][0]
            code = state.run(stop_ns=stop)
            if code > 0:
                refill(code - 1)
            elif code == STOP_TIME:
                if switches and stop == switches[0][0]:
                    state.set_old_blocks_time(switches.pop(0)[1])
                    if stop != next_sample:
                        continue
                samples.append(_sample(state, next_sample))
                next_sample = _after(next_sample, sample_every_ns)
            else:
                break
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        gets = int(state.sst[:, T_GETS].sum())
        raise KeyboardInterrupt(
            f"replay interrupted after {gets:,} gets, at virtual time "
            f"{int(state.sst[:, T_CLOCK].max()):,} ns; no result was produced") from None
    if bar is not None:
        bar.close()
    if sample_every_ns:
        samples.append(_sample(state, int(state.sst[:, T_CLOCK].max())))
    stats = state.stats()
    sums = {k: int(v) for k, v in stats.drop(columns=["POOL_ID", "HIT_RATE"]).sum().items()}
    sums["HIT_RATE"] = hit_rate(sums["NUMBER_PAGES_READ"], sums["NUMBER_PAGES_GET"])
    totals = pd.Series(sums)
    result = ReplayResult(config=config, stats=stats, totals=totals, streams=state.streams(),
                          contents=state.contents(),
                          timeline=pd.DataFrame(samples) if samples else pd.DataFrame(),
                          device_busy_ns=int(state.glob[G_DEVBUSY]),
                          cleaner_passes=int(state.glob[G_TICKS]), memory=state.nbytes(),
                          spaces=state.spaces())
    if key is not None:
        _cache.store(key, result)
    return result


def _after(t_ns: int, step_ns: int) -> int:
    """``t_ns + step_ns``, or -1 (no stop) where the int64 clock cannot reach it."""
    t = t_ns + step_ns
    return t if t <= MAX_NS else -1


def _switch(j: int, entry) -> tuple[int, int]:
    """One ``old_blocks_time_ms_at`` entry as ``(time_ns, ms)``, checked (no truncation)."""
    if isinstance(entry, (str, bytes)) or not hasattr(entry, "__len__") or len(entry) != 2:
        raise ValueError(f"old_blocks_time_ms_at[{j}] must be a pair (time_ns, ms), got {entry!r}")
    return (check_ns(f"old_blocks_time_ms_at[{j}] time_ns", entry[0]),
            check_int(f"old_blocks_time_ms_at[{j}] ms", entry[1], 0, 2**32 - 1))


def _sample(state: PoolState, t_ns: int) -> dict:
    row = {"time_ns": t_ns}
    pages_by_group, old_by_group = state.group_counts()
    for name, pages, old in zip(state.tablespaces.group_names, pages_by_group, old_by_group):
        row[f"pages:{name}"] = int(pages)
        row[f"old:{name}"] = int(old)
    tot = state.cnt.sum(axis=0)
    for name, v in zip(COUNTER_NAMES, tot):
        row[name] = int(v)
    for s in range(state.n_streams):
        row[f"gets:{s}"] = int(state.sst[s, T_GETS])
        row[f"misses:{s}"] = int(state.sst[s, T_MISSES])
        row[f"io_wait_ns:{s}"] = int(state.sst[s, T_IOWAIT])
    return row
