"""The named steps of the InnoDB fast loop (:mod:`bufsim.policies.innodb.fast`), each
the one of InnoDB's functions it is named after, over the loop's locals (list ends, old
pointer and length, free count, freed_page_clock, device queue) passed in and returned:
buf_LRU_get_free_block (with buf_LRU_free_tail_young and buf_LRU_remove_tail),
buf_LRU_add_block, buf_page_peek_if_too_old, buf_page_make_young and
buf_read_ahead_linear with its buf_read_page_low, plus the plain get of a resident page
(:func:`hit_kind`, :func:`buf_page_get_young`, with or without a move), an event's paths
from its flags, the prefetch hints, and the write-back of the locals and the counts.
Every step is compiled into the loop (``inline="always"``) but the flush list's note of a
modification (:func:`buf_flush_note_modification`), which is a call, so that its code
stays out of the loop's.  buf_read_ahead_linear is inlined too: as a call it took the
loop's state arrays as some 200 pushed words, at every area edge page's first access
(zipf 0.9/8192, t=0, paired on 2026-11-29: 0.295 -> 0.276 s per 10M gets inlined, for
20 s more of the kernel's first compile, 83 -> 103 s)."""
import numpy as np
from numba import njit

from .._state import (
    C_EVICT, C_GETS, C_NOT_YOUNG, C_RA, C_RA_EVICTED, C_READ, C_YOUNG, FLAG_AHI,
    FLAG_MODIFY, FLAG_RELATCH, FLAG_SHORTCUT, G_DEVBUSY, G_DEVFREE, G_DEVLAST, G_FIXED, G_FTOP,
    I_AREA, I_CLOCK, I_FREE, I_OLD, I_OLDLEN, K_COST_EVICT, K_DEV_RAND, K_DEV_SEQ,
    K_FREE_UNUSED, K_NINST, K_RATIO, L1_HEAD, L1_LEN, L1_TAIL, NS_PER_MS, PM_FFREE, PM_FMAP,
    PM_UNUSED, P_ACCESS, P_DIRTY, P_NEXT, P_OLD, P_PAGE, P_PREV, P_READY, P_STAMP, P_WHERE,
    STAMP_MASK, T_CLOCK, T_CPU, T_EVENTS, T_GETS, T_IOWAIT, T_MISSES, T_POS, T_RA, hash_add, ix,
    prefetch,
)
from ..flush import note_modification
from ..loop import ONLY, fifo_read
from .lists import old_adjust, old_bounds, old_clamp, old_walk
from .read import is_ibuf_bitmap, linear_target, read_page_low


@njit(_nrt=False, cache=True)
def buf_flush_note_modification(pst, ist, cnt, glob, f):
    """:func:`~bufsim.policies.flush.note_modification` of frame ``f`` of the one
    instance, as a call (not inlined: a modification is off the gets' common path, so its
    code stays out of the loop's)."""
    note_modification(pst, ist, cnt, glob, 0, f)


@njit(_nrt=False, cache=True, inline="always")
def unpin_old(f, prv, isold, old, oldlen):
    """remove_block's first step for frame f about to leave the LRU: if f is LRU_old, the
    pointer moves to f's predecessor, which becomes old; the new (old, oldlen)."""
    if f == old:
        old = prv[ix(f)]
        isold[ix(old)] = 1
        oldlen += 1
    return old, oldlen


#: On a pool of at least DEEP_FRAMES frames (whose per-frame arrays outgrow the CPU's
#: L2 cache) the fast loop also prefetches, FRAME_AHEAD events ahead, the fields a plain
#: hit reads of the frame that event will get (its frame-map entry was prefetched
#: PREFETCH_AHEAD events ahead, so it is likely in cache by then).
FRAME_AHEAD = 8
DEEP_FRAMES = 65536


@njit(_nrt=False, cache=True, inline="always")
def prefetch_frame(f, where, access, ready, stamp, prv, nxt, isold):
    """Prefetch what :func:`hit_kind` reads of frame f, and its list links and old flag
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
    page id, first access, modification and read times, predecessor and old flag.  The
    tail is a frame no get has touched for a long time, so without it each miss waits
    for these loads: from L2 or memory on a large pool (zipf 0.9/262,144, t=0, paired on
    2026-11-27: 638-700 against 753-934 ms of kernel time), from L2 on a small one
    (zipf 0.9/8,192, t=0, paired on 2026-11-29: 0.288 -> 0.250 s per 10M gets, t=1000
    0.275 -> 0.243 s; scan+hot/8,192 0.133 -> 0.134 s).  So the fast loop issues it on
    every pool size.  (midpoint_ra_floor and midpoint_duty_floor issue it from
    DEEP_FRAMES frames only, their faster choice: with it at 8,192 frames the ra floor
    ran 0.177 -> 0.199 s in the same pairing.)"""
    if tail >= 0:
        prefetch(prv, ix(tail))
        prefetch(page, ix(tail))
        prefetch(access, ix(tail))
        prefetch(dirty, ix(tail))
        prefetch(ready, ix(tail))
        prefetch(isold, ix(tail))


@njit(_nrt=False, cache=True, inline="always")
def hit_kind(f, where, access, ready, isold, stamp, t, clock, oldtime, window):
    """What a plain get of frame ``f`` (< 0: none) at time ``t`` is, the old sublist being
    set: 0 unless the page is resident, accessed and landed (buf_page_get_gen's whole
    path), else what buf_page_peek_if_too_old says: 1 if every step would only count it
    (nothing evicted yet, or the page needs no old_blocks_time check and is still in the
    young window), 2 if the page is old and the old_blocks_time check leaves it where it
    is (the get counts a page not made young and pays the check), 3 if the page left the
    young window (it is made young), 4 if the page is old and old enough to be made
    young after the check."""
    if f < 0 or where[ix(f)] != 1 or access[ix(f)] == 0 or ready[ix(f)] > t:
        return 0
    if clock == 0:
        return 1
    if oldtime != 0 and isold[ix(f)]:
        return 2 if t // NS_PER_MS + 1 - access[ix(f)] < oldtime else 4
    return 1 if (clock & STAMP_MASK) < stamp[ix(f)] + window else 3


@njit(_nrt=False, cache=True, inline="always")
def buf_page_get_young(cnt, kind, fl, cpu, t, counted, cost_clock, cost_young, f, head, tail,
                       prv, nxt, isold, stamp, old, oldlen, length, ratio, clock):
    """buf_page_get_gen of a plain get (flags ``fl``, no AHI path, no modification) of
    frame ``f`` that :func:`hit_kind` says is ``kind`` 1 to 4: buf_page_make_young_if_needed
    finds the page young (1), old and not old enough to move (2: PAGES_NOT_MADE_YOUNG and
    the check's ``cost_clock``), or to be made young (3; 4 after the check's
    ``cost_clock``: :func:`buf_page_make_young`, PAGES_MADE_YOUNG if it was old, and
    ``cost_young``).  Returns ``(t, counted, head, tail, old, oldlen)``: the clock after
    the get (its CPU), the not re-latched gets with it and the list's locals; the pages
    made or not made young are added to ``cnt``."""
    if (fl & FLAG_RELATCH) == 0:
        counted += 1
    t += cpu
    if kind == 2:
        cnt[ONLY, C_NOT_YOUNG] += 1
        t += cost_clock
    elif kind >= 3:
        if kind == 4:
            t += cost_clock
        head, tail, old, oldlen, made = buf_page_make_young(
            f, head, tail, prv, nxt, isold, stamp, old, oldlen, length, ratio, clock)
        cnt[ONLY, C_YOUNG] += made
        t += cost_young
    return t, counted, head, tail, old, oldlen


@njit(_nrt=False, cache=True, inline="always")
def event_paths(fl, ahi_pool):
    """An event's paths from its flags ``fl``: ``(counted, plain, sc, ah, modify)``, 1 if
    its gets are counted (not re-latched), whether none of the next three holds, the
    adaptive hash index's shortcut and hit (a pool with the AHI only, ``ahi_pool``), and
    whether it modifies the page."""
    sc = ahi_pool and (fl & FLAG_SHORTCUT) != 0
    ah = ahi_pool and (fl & FLAG_AHI) != 0
    modify = (fl & FLAG_MODIFY) != 0
    return (1 if (fl & FLAG_RELATCH) == 0 else 0), not (sc or ah or modify), sc, ah, modify


@njit(_nrt=False, cache=True, inline="always")
def buf_LRU_free_tail_young(f, prv, nxt, isold, old, oldlen, length, ratio, blen, lo0, hi0,
                            lo1, hi1):
    """buf_LRU_free_from_common_LRU_list of the tail ``f`` when the page read into its
    frame is made young at its first access (old_blocks_time 0, freed_page_clock past
    the window: the caller checks): evict the tail, add the new page after LRU_old and
    make it young, in one step.  The old length through the four adjustments
    (old_bounds): remove_block(tail) (the tail is old), add_block(f, old) right below
    LRU_old (old_bounds never falls as the list grows, so k2 >= k1: f stays old, and is
    LRU_old if k2 == k1), remove_block(f), add_block(f) at the head.  Then LRU_old moves
    once by the net difference (in the list without its tail every place is one less).
    ``blen``, ``lo0``, ``hi0``, ``lo1``, ``hi1`` cache old_bounds at ``length`` and
    ``length - 1``.  Returns ``(tail, old, oldlen, blen, lo0, hi0, lo1, hi1)``; the
    length is unchanged (f comes back at the head: :func:`buf_LRU_add_block`)."""
    if length != blen:
        blen = length
        lo0, hi0 = old_bounds(length, ratio)
        lo1, hi1 = old_bounds(length - 1, ratio)
    k1 = old_clamp(oldlen - 1, lo1, hi1)
    k2 = old_clamp(k1 + 1, lo0, hi0)
    k3 = k2 - 1 if k2 > k1 else k2   # remove_block(f): old, not LRU_old
    k5 = old_clamp(old_clamp(k3, lo1, hi1), lo0, hi0)
    a = prv[ix(f)]
    nxt[ix(a)] = -1
    old = old_walk(prv, nxt, isold, old, k5 + 1 - oldlen)
    isold[ix(f)] = 0
    return a, old, k5, blen, lo0, hi0, lo1, hi1


@njit(_nrt=False, cache=True, inline="always")
def buf_LRU_remove_tail(f, prv, nxt, isold, old, oldlen, length, ratio):
    """buf_LRU_remove_block of the LRU's tail ``f`` (then buf_LRU_old_adjust_len):
    ``(tail, length, old, oldlen)`` after it."""
    old, oldlen = unpin_old(f, prv, isold, old, oldlen)
    a = prv[ix(f)]
    nxt[ix(a)] = -1
    length -= 1
    if isold[ix(f)]:
        oldlen -= 1
    isold[ix(f)] = 0
    old, oldlen = old_adjust(prv, nxt, isold, length, ratio, old, oldlen)
    return a, length, old, oldlen


@njit(_nrt=False, cache=True, inline="always")
def buf_page_init(fmap, page, access, dirty, where, p, f):
    """buf_page_init_for_read's buf_page_init of page ``p`` in frame ``f``: the page in
    the page hash (``fmap``) and the frame, unaccessed, clean, in the LRU (list 1)."""
    fmap[ix(p)] = f
    page[ix(f)] = p
    access[ix(f)] = 0
    dirty[ix(f)] = 0
    where[ix(f)] = 1


@njit(_nrt=False, cache=True, inline="always")
def buf_LRU_add_block(f, young_now, head, tail, prv, nxt, isold, stamp, old, oldlen, length,
                      ratio, clock):
    """Add the frame ``f`` just read into to the LRU: at the head if it was made young
    with its eviction (:func:`buf_LRU_free_tail_young`, which kept the length), else
    after LRU_old (buf_LRU_add_block(f, old=TRUE)) with buf_LRU_old_adjust_len.
    Returns ``(head, tail, length, old, oldlen)``."""
    if young_now:
        prv[ix(f)] = -1                              # push_head
        nxt[ix(f)] = head
        prv[ix(head)] = f
        head = f
        stamp[ix(f)] = clock & STAMP_MASK
    else:
        stamp[ix(f)] = 0
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
    return head, tail, length, old, oldlen


@njit(_nrt=False, cache=True, inline="always")
def buf_page_peek_if_too_old(f, isold, access, stamp, t, clock, oldtime, window):
    """buf_page_peek_if_too_old of frame ``f`` at time ``t``: ``(move, checked)``, whether
    the page is to be made young, and whether the old_blocks_time check ran (an old
    page under a non-zero old_blocks_time: it reads the clock, and counts a page not
    made young when it says no)."""
    if clock == 0:
        return False, False
    if oldtime != 0 and isold[ix(f)]:
        return t // NS_PER_MS + 1 - access[ix(f)] >= oldtime, True
    return (clock & STAMP_MASK) >= stamp[ix(f)] + window, False


@njit(_nrt=False, cache=True, inline="always")
def buf_page_make_young(f, head, tail, prv, nxt, isold, stamp, old, oldlen, length, ratio,
                        clock):
    """buf_page_make_young of resident frame ``f``: buf_LRU_remove_block, then
    buf_LRU_add_block(f, old=FALSE) at the head, each with its old-length adjustment
    (``length - 1 >= OLD_MIN_LEN``: remove_block's adjustment runs, then add_block's at
    the same length).  Returns ``(head, tail, old, oldlen, made_young)``, the last 1 if
    f was old (PAGES_MADE_YOUNG)."""
    made = 1 if isold[ix(f)] else 0
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
    isold[ix(f)] = 0
    old, oldlen = old_adjust(prv, nxt, isold, length - 1, ratio, old, oldlen)
    prv[ix(f)] = -1                              # push_head
    nxt[ix(f)] = head
    prv[ix(head)] = f
    head = f
    stamp[ix(f)] = clock & STAMP_MASK
    old, oldlen = old_adjust(prv, nxt, isold, length, ratio, old, oldlen)
    return head, tail, old, oldlen, made


@njit(_nrt=False, cache=True, inline="always")
def buf_read_page_low(stat, pm, cnt, sst, cfg, q, cols, head, tail, length, old, oldlen, free,
                      top, clock, t, devfree, devlast, devbusy):
    """buf_read_page_low of read-ahead page ``q`` on the fast loop's main path (the
    general :func:`~bufsim.policies.innodb.read.read_page_low`): buf_page_init_for_read
    with a block of the free list, else the LRU's tail, which the caller has found
    clean, landed and not buffer-fixed (buf_LRU_free_from_common_LRU_list: evicted,
    counted in NUMBER_READ_AHEAD_EVICTED if never accessed, its CPU charged; the
    stack's slot holds the frame handed back, as in :func:`buf_LRU_get_free_block`), the
    page added after LRU_old (:func:`buf_LRU_add_block`), then its read on the FIFO
    device.  ``cols`` is fast_get.COLUMNS.  Returns ``(head, tail, length, old, oldlen,
    free, top, clock, t, devfree, devlast, devbusy)``."""
    fmap, ffree, where, access, ready, isold, stamp, prv, nxt, dirty, page = cols
    ratio = cfg[K_RATIO]
    if free > 0:
        top -= 1
        g = ffree[ix(top)]                   # take_frame
        free -= 1
    else:
        g = tail
        if access[ix(g)] == 0:
            cnt[ONLY, C_RA_EVICTED] += 1
        tail, length, old, oldlen = buf_LRU_remove_tail(g, prv, nxt, isold, old, oldlen, length,
                                                        ratio)
        fmap[ix(page[ix(g)])] = -1           # release_frame
        ffree[ix(top)] = g   # pushed and taken back: the stack's slot holds it
        clock += 1
        cnt[ONLY, C_EVICT] += 1              # (read-ahead counts its own evictions)
        t += cfg[K_COST_EVICT]
        sst[ONLY, T_CPU] += cfg[K_COST_EVICT]
    buf_page_init(fmap, page, access, dirty, where, q, g)
    head, tail, length, old, oldlen = buf_LRU_add_block(
        g, False, head, tail, prv, nxt, isold, stamp, old, oldlen, length, ratio, clock)
    cnt[ONLY, C_READ] += 1
    devfree, devlast, devbusy = fifo_read(stat, pm, q, t, devfree, devlast, devbusy,
                                          cfg[K_DEV_RAND], cfg[K_DEV_SEQ])
    ready[ix(g)] = devfree
    return head, tail, length, old, oldlen, free, top, clock, t, devfree, devlast, devbusy


@njit(_nrt=False, cache=True, inline="always")
def buf_read_ahead_linear(pst, stat, ist, cnt, sst, glob, cfg, pm, p, f, t, head, tail, length,
                          old, oldlen, free, clock, top, devfree, devlast, devbusy):
    """buf_read_ahead_linear after the get of page ``p`` (frame ``f``, buffer-fixed) on the
    fast loop's state: the general kernel's tests and pattern check
    (:func:`~bufsim.policies.innodb.read.linear_target`, which only read the arrays),
    then each page of the target area not in the pool read with the loop's own step
    :func:`buf_read_page_low` on its locals; a page whose block the step cannot take
    (no free block and the tail dirty, still being read or ``f``; MariaDB 10.11's
    freeing of unused pages) is read by the general
    :func:`~bufsim.policies.innodb.read.read_page_low`, the locals written back
    around it.  Returns ``(t, head, tail, length, old, oldlen, free, clock, top, devfree,
    devlast, devbusy)``."""
    t_low, sp, base = linear_target(pst, stat, ist, cfg, pm, p)
    if t_low < 0:
        return (t, head, tail, length, old, oldlen, free, clock, top, devfree, devlast,
                devbusy)
    cols = frame_columns(pst, pm)
    fmap, ffree, where, access, ready, isold, stamp, prv, nxt, dirty, page = cols
    general = cfg[K_FREE_UNUSED] != 0 and pm[PM_UNUSED].shape[0] > 0
    n_inst = cfg[K_NINST]
    count = 0
    for j in range(t_low, t_low + ist[ONLY, I_AREA]):
        if is_ibuf_bitmap(j):
            continue
        q = hash_add(pm, stat, glob, n_inst, base + j, sp, j)
        g = fmap[ix(q)]
        if g >= 0 and where[ix(g)] == 1:
            continue
        count += 1
        if general or (free == 0 and (dirty[ix(tail)] != 0 or ready[ix(tail)] > t or
                                      tail == f)):
            write_back(ist, glob, head, tail, length, old, oldlen, free, clock, top, devfree,
                       devlast, devbusy)
            glob[G_FIXED] = f
            # stream 0 as an int64, not the constant 0: numba would type that as
            # Literal[int](0) and compile the read and its callees a second time
            t = read_page_low(pst, stat, ist, cnt, sst, glob, cfg, pm, q, base + j,
                              np.int64(0), t)
            glob[G_FIXED] = -1
            (head, tail, length, old, oldlen, free, clock, top, devfree, devlast,
             devbusy) = read_locals(ist, glob)
            continue
        (head, tail, length, old, oldlen, free, top, clock, t, devfree, devlast,
         devbusy) = buf_read_page_low(stat, pm, cnt, sst, cfg, q, cols, head, tail, length,
                                      old, oldlen, free, top, clock, t, devfree, devlast,
                                      devbusy)
    cnt[ONLY, C_RA] += count
    sst[ONLY, T_RA] += count
    return (t, head, tail, length, old, oldlen, free, clock, top, devfree, devlast, devbusy)


@njit(_nrt=False, cache=True, inline="always")
def buf_LRU_get_free_block(ffree, fmap, page, prv, nxt, isold, access, tail, length, old, oldlen,
                           free, top, clock, ratio, oldtime, window, blen, lo0, hi0, lo1, hi1):
    """buf_LRU_get_free_block on the fast loop's main path: a block of the free list
    (take_frame), else the LRU's tail, which the caller has found clean and landed
    (buf_LRU_free_from_common_LRU_list: evict_page, whose frame take_frame then hands
    back; the stack's top is unchanged).  When peek_if_too_old at the new page's first
    access would make it young (old_blocks_time 0, the tail old, freed_page_clock past
    the stamp 0 by the window) the eviction and that move are one step
    (:func:`buf_LRU_free_tail_young`).  Returns ``(f, young_now, evicted, read_ahead_evicted,
    tail, length, old, oldlen, free, top, clock, blen, lo0, hi0, lo1, hi1)``."""
    if free > 0:
        top -= 1
        f = ffree[ix(top)]                   # take_frame
        return (f, False, False, False, tail, length, old, oldlen, free - 1, top, clock, blen,
                lo0, hi0, lo1, hi1)
    f = tail
    raev = access[ix(f)] == 0                # a read-ahead page evicted unaccessed
    young_now = oldtime == 0 and oldlen >= 2 and ((clock + 1) & STAMP_MASK) >= window
    if young_now:
        tail, old, oldlen, blen, lo0, hi0, lo1, hi1 = buf_LRU_free_tail_young(
            f, prv, nxt, isold, old, oldlen, length, ratio, blen, lo0, hi0, lo1, hi1)
    else:
        tail, length, old, oldlen = buf_LRU_remove_tail(f, prv, nxt, isold, old, oldlen, length,
                                                        ratio)
    fmap[ix(page[ix(f)])] = -1               # release_frame
    ffree[ix(top)] = f   # pushed and taken back: the stack's slot holds it
    return (f, young_now, True, raev, tail, length, old, oldlen, free, top, clock + 1, blen, lo0,
            hi0, lo1, hi1)


@njit(_nrt=False, cache=True, inline="always")
def frame_columns(pst, pm):
    """The per-frame columns the fast loop's steps take, in fast_get.COLUMNS's order."""
    return (pm[PM_FMAP], pm[PM_FFREE], pst[P_WHERE], pst[P_ACCESS], pst[P_READY], pst[P_OLD],
            pst[P_STAMP], pst[P_PREV], pst[P_NEXT], pst[P_DIRTY], pst[P_PAGE])


@njit(_nrt=False, cache=True, inline="always")
def read_locals(ist, glob):
    """The fast loop's instance and device locals from the state arrays, in
    :func:`write_back`'s order: ``(head, tail, length, old, oldlen, free, clock, top,
    devfree, devlast, devbusy)``."""
    return (ist[ONLY, L1_HEAD], ist[ONLY, L1_TAIL], ist[ONLY, L1_LEN], ist[ONLY, I_OLD],
            ist[ONLY, I_OLDLEN], ist[ONLY, I_FREE], ist[ONLY, I_CLOCK], glob[G_FTOP],
            glob[G_DEVFREE], glob[G_DEVLAST], glob[G_DEVBUSY])


@njit(_nrt=False, cache=True, inline="always")
def write_back(ist, glob, head, tail, length, old, oldlen, free, clock, top, devfree, devlast,
               devbusy):
    """The fast loop's instance and device locals back into the state arrays."""
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


@njit(_nrt=False, cache=True, inline="always")
def add_counts(cnt, sst, counted, misses, evicted, iowait, cpu, events, e, t):
    """The fast loop's counts that its steps did not add as they went, added to the
    instance's counters (INNODB_BUFFER_POOL_STATS) and the stream's (``misses``: the
    C_READS the steps added), its next event and clock written back."""
    cnt[ONLY, C_GETS] += counted
    cnt[ONLY, C_READ] += misses
    cnt[ONLY, C_EVICT] += evicted
    sst[ONLY, T_GETS] += counted
    sst[ONLY, T_MISSES] += misses
    sst[ONLY, T_IOWAIT] += iowait
    sst[ONLY, T_CPU] += cpu
    sst[ONLY, T_EVENTS] += events
    sst[ONLY, T_POS] = e
    sst[ONLY, T_CLOCK] = t
