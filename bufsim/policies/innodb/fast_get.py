"""The get of the InnoDB fast loop (:mod:`bufsim.policies.innodb.fast`): one get of a page
that is not a plain get of a resident page, :func:`buf_page_get_gen`, and the steps of a
get it calls that are longer than a line, :func:`buf_read_page` (a miss) and
:func:`buf_page_make_young_if_needed`, each named after the InnoDB function it follows,
over the loop's locals passed in and returned.  The list steps they call are those of
:mod:`bufsim.policies.innodb.fast_steps`.  Every step is compiled into the loop
(``inline="always"``); the rarer counts are added to ``cnt`` where they happen (see
:func:`~bufsim.policies.innodb.fast.fast_loop`)."""
import numpy as np
from numba import njit

from .._state import (
    C_AHI, C_GETS, C_NOT_YOUNG, C_RA_EVICTED, C_READS, C_YOUNG, G_AREA, G_NLOCAL, I_W,
    K_COST_CLOCK, K_COST_EVICT, K_COST_MISS, K_DEV_RAND, K_DEV_SEQ, K_OLDTIME, K_RATIO, NS_PER_MS,
    OLD_MIN_LEN, PM_BASE, PM_EDGE, PM_SMISS, S_SPACE, dense_keys, edge_rule, ix,
)
from ..loop import ONLY, fifo_read
from .fast_steps import (
    buf_flush_note_modification, buf_LRU_add_block, buf_LRU_get_free_block, buf_page_init,
    buf_page_make_young, buf_page_peek_if_too_old, buf_read_ahead_linear, event_paths,
    prefetch_tail,
)


#: the names of the tuples :func:`buf_page_get_gen` takes, in their order: the loop's
#: per-frame columns, its parameters, the event, its locals and its counts
COLUMNS = ("fmap", "ffree", "where", "access", "ready", "isold", "stamp", "prv", "nxt",
           "dirty", "page")
PARAMS = ("ratio", "oldtime", "window", "cost_clock", "cost_young", "room", "ahi_pool")
EVENT = ("p", "cpu", "fl")
LOCALS = ("head", "tail", "length", "old", "oldlen", "free", "clock", "top", "devfree",
          "devlast", "devbusy", "t", "blen", "lo0", "hi0", "lo1", "hi1")
COUNTS = ("d_counted", "iowait", "ra_wait")

#: :func:`buf_page_get_gen`'s outcomes: the get done; not done (a miss whose LRU tail
#: cannot be freed as it is); done, but its read-ahead registered pages past the room
#: or left the LRU off the main path (the next get is the general kernel's)
GOT, CUT_TAIL, CUT_ROOM, CUT_LIST = 0, 1, 2, 3


#: with dense keys and at most this many tablespaces, :func:`space_of` searches the
#: spaces' first pages one by one (a trace of a few spaces: one or two comparisons)
FEW_SPACES = 8


@njit(_nrt=False, cache=True, inline="always")
def space_of(stat, pm, p):
    """:func:`~bufsim.policies._state.space_pos` of page ``p`` for the fast loop, which
    needs it twice per miss (the read-ahead area's edge and the space's miss count)
    and so looks it up once: with dense keys and at most :data:`FEW_SPACES` spaces a
    linear search (numba's binary search costs a call-like loop per lookup)."""
    if not dense_keys(stat):
        return stat[p, S_SPACE]
    base = pm[PM_BASE]
    n = base.shape[0]
    if n > FEW_SPACES:
        return np.int64(np.searchsorted(base, p, side="right") - 1)
    sp = np.int64(0)
    while sp + 1 < n and p >= base[sp + 1]:
        sp += 1
    return sp


@njit(_nrt=False, cache=True, inline="always")
def area_edge(stat, pm, glob, p, sp):
    """:func:`~bufsim.policies._state.is_edge` of page ``p`` of space position ``sp``
    (:func:`space_of`): the first or last page of its read-ahead area of
    ``glob[G_AREA]`` pages (a power of two: a mask)."""
    if not dense_keys(stat):
        return pm[PM_EDGE][p] != 0
    return edge_rule(p - pm[PM_BASE][sp], glob[G_AREA])


@njit(_nrt=False, cache=True, inline="always")
def buf_read_page(stat, pm, cfg, ist, p, sp, cols, head, tail, length, old, oldlen, free, top,
                  clock, blen, lo0, hi0, lo1, hi1, t, devfree, devlast, devbusy):
    """buf_read_page of page ``p`` (of space position ``sp``: :func:`space_of`), not
    resident, on the fast loop's main path: a synchronous read miss (counted per
    tablespace here, in C_READS by the caller), buf_page_init_for_read (a block from
    :func:`buf_LRU_get_free_block`, the page in it, :func:`buf_LRU_add_block`), then the
    read on the FIFO device (buf_read_page_low), which the get waits for.  Returns ``(f,
    young_now, evicted, read_ahead_evicted, head, tail, length, old, oldlen, free, top,
    clock, blen, lo0, hi0, lo1, hi1, t, devfree, devlast, devbusy, iowait)``: the
    frame, whether the page was made young with the tail's eviction, whether a page was
    evicted and whether it had been read ahead unaccessed, the loop's locals after it
    (the clock past the miss's CPU and I/O wait), and the I/O wait.  ``cols`` is the
    loop's :data:`COLUMNS` (a call takes at most 30 arguments: Python passes more as
    ``*args``, which numba cannot inline).  The parameters it needs are read from ``cfg``
    and ``ist`` where used, not carried in the loop."""
    fmap, ffree, where, access, ready, isold, stamp, prv, nxt, dirty, page = cols
    ratio = cfg[K_RATIO]
    pm[PM_SMISS][sp] += 1
    # init_for_read -> get_free_block
    (f, young_now, evicted, raev, tail, length, old, oldlen, free, top, clock, blen,
     lo0, hi0, lo1, hi1) = buf_LRU_get_free_block(
        ffree, fmap, page, prv, nxt, isold, access, tail, length, old, oldlen, free,
        top, clock, ratio, cfg[K_OLDTIME], ist[ONLY, I_W], blen, lo0, hi0, lo1, hi1)
    if evicted:
        t += cfg[K_COST_EVICT]
    buf_page_init(fmap, page, access, dirty, where, p, f)
    head, tail, length, old, oldlen = buf_LRU_add_block(
        f, young_now, head, tail, prv, nxt, isold, stamp, old, oldlen, length, ratio, clock)
    # the next miss evicts the new tail (a miss that took a free block leaves the tail as
    # it was): on every pool size (prefetch_tail)
    prefetch_tail(tail, prv, page, access, dirty, ready, isold)
    devfree, devlast, devbusy = fifo_read(stat, pm, p, t, devfree, devlast, devbusy,
                                          cfg[K_DEV_RAND], cfg[K_DEV_SEQ])
    ready[ix(f)] = devfree
    iowait = devfree - t
    t = devfree + cfg[K_COST_MISS]
    return (f, young_now, evicted, raev, head, tail, length, old, oldlen, free, top, clock,
            blen, lo0, hi0, lo1, hi1, t, devfree, devlast, devbusy, iowait)


@njit(_nrt=False, cache=True, inline="always")
def buf_page_make_young_if_needed(cnt, f, young_now, twice, head, tail, prv, nxt, isold,
                                  access, stamp, old, oldlen, length, ratio, clock, oldtime,
                                  window, t, cost_clock, cost_young):
    """buf_page_make_young_if_needed of frame ``f`` after its get's first-access stamp: a
    page made young with the tail's eviction (``young_now``) is charged that move;
    otherwise :func:`buf_page_peek_if_too_old`, once (twice for an adaptive hash index
    hit, ``twice``), with :func:`buf_page_make_young` where it says so.  Returns
    ``(head, tail, old, oldlen, t)``, the loop's locals after it (the clock past its CPU);
    it adds the PAGES_MADE_YOUNG and PAGES_NOT_MADE_YOUNG it counts to ``cnt`` (the move
    made with an eviction is counted by the caller)."""
    if young_now:
        t += cost_young                          # (made young with the eviction)
    for _ in range(0 if young_now else (2 if twice else 1)):
        move, checked = buf_page_peek_if_too_old(f, isold, access, stamp, t, clock, oldtime,
                                                 window)
        if checked:
            if not move:
                cnt[ONLY, C_NOT_YOUNG] += 1
            t += cost_clock
        if move:
            head, tail, old, oldlen, made = buf_page_make_young(
                f, head, tail, prv, nxt, isold, stamp, old, oldlen, length, ratio, clock)
            cnt[ONLY, C_YOUNG] += made
            t += cost_young
    return head, tail, old, oldlen, t


@njit(_nrt=False, cache=True, inline="always")
def buf_page_get_gen(pst, stat, ist, cnt, sst, glob, cfg, pm, cols, prm, ev, loc, acc):
    """One get of page ``p`` (flags ``fl``, followed by its ``cpu``) on the fast loop's main
    path that is not a plain get of a resident, accessed, landed page
    (:func:`~bufsim.policies.innodb.fast_steps.hit_kind`: the loop's own step),
    buf_page_get_gen: the adaptive hash index's shortcut
    and hit, a miss (:func:`buf_read_page`), the first access's stamp,
    :func:`buf_page_make_young_if_needed`, buf_read_ahead_linear at an area's edge page and
    the modification's flush-list state.  The LRU is at least OLD_MIN_LEN + 1 long with
    its old sublist set (the loop checks it after every read-ahead, the one step that
    could shorten it).

    The loop's values come in tuples (a call takes at most 30 arguments: Python passes
    more as ``*args``, which numba cannot inline): ``cols`` its :data:`COLUMNS`, ``prm``
    its :data:`PARAMS`, ``ev`` the event's :data:`EVENT`, ``loc`` its :data:`LOCALS` and
    ``acc`` its :data:`COUNTS`.  Returns ``(cut, loc, acc)``: :data:`GOT` (the get is
    done), :data:`CUT_TAIL` (not done: a miss whose tail cannot be freed as it is),
    :data:`CUT_ROOM` (done; its read-ahead registered pages past ``room``, so the next
    get may not) or :data:`CUT_LIST` (done; its read-ahead left the LRU too short or its
    old sublist unset), and the locals and counts after it."""
    fmap, ffree, where, access, ready, isold, stamp, prv, nxt, dirty, page = cols
    ratio, oldtime, window, cost_clock, cost_young, room, ahi_pool = prm
    p, cpu, fl = ev
    (head, tail, length, old, oldlen, free, clock, top, devfree, devlast, devbusy, t, blen,
     lo0, hi0, lo1, hi1) = loc
    d_counted, iowait, ra_wait = acc
    counted, _, sc, ah, modify = event_paths(fl, ahi_pool)
    f = fmap[ix(p)]
    resident = f >= 0 and where[ix(f)] == 1
    # an area's edge page on its first access: read_ahead_linear after the get
    sp = np.int64(0)
    ra = False
    if not resident or access[ix(f)] == 0:
        sp = space_of(stat, pm, p)
        ra = area_edge(stat, pm, glob, p, sp)
    cut = GOT
    if not resident and free == 0 and (dirty[ix(tail)] != 0 or ready[ix(tail)] > t):
        cut = CUT_TAIL                       # the tail cannot be freed as it is
    elif sc and resident and access[ix(f)] > 0:
        # the AHI shortcut under the held search latch: one get, no stamp, no check
        d_counted += counted
        cnt[ONLY, C_AHI] += 1
        if ready[ix(f)] > t:
            iowait += ready[ix(f)] - t
            t = ready[ix(f)]
        if modify:
            buf_flush_note_modification(pst, ist, cnt, glob, f)
        t += cpu
    else:
        # an AHI hit: buf_page_get_gen's get and check twice
        twice = ah and resident and access[ix(f)] > 0
        d_counted += counted
        if twice:
            cnt[ONLY, C_AHI] += 1
            cnt[ONLY, C_GETS] += counted     # (its second get)
        young_now = False   # a read made young at its first access, in one step
        if not resident:
            cnt[ONLY, C_READS] += 1
            (f, young_now, evicted, raev, head, tail, length, old, oldlen, free, top, clock,
             blen, lo0, hi0, lo1, hi1, t, devfree, devlast, devbusy, io) = buf_read_page(
                stat, pm, cfg, ist, p, sp, cols, head, tail, length, old, oldlen, free, top,
                clock, blen, lo0, hi0, lo1, hi1, t, devfree, devlast, devbusy)
            # (an eviction is counted by the clock's advance: fast_loop)
            if raev:
                cnt[ONLY, C_RA_EVICTED] += 1     # (evicted: only an eviction sets it)
            if young_now:
                cnt[ONLY, C_YOUNG] += 1          # make_block_young of an old page (evicted)
            iowait += io
            access[ix(f)] = t // NS_PER_MS + 1   # the first access (the page just read)
            t += cfg[K_COST_CLOCK]
        else:
            if ready[ix(f)] > t:
                iowait += ready[ix(f)] - t
                t = ready[ix(f)]
            if access[ix(f)] == 0:                       # the first access
                access[ix(f)] = t // NS_PER_MS + 1
                t += cost_clock
        head, tail, old, oldlen, t = buf_page_make_young_if_needed(
            cnt, f, young_now, twice, head, tail, prv, nxt, isold, access, stamp, old, oldlen,
            length, ratio, clock, oldtime, window, t, cost_clock, cost_young)
        if ra:
            t_get = t
            (t, head, tail, length, old, oldlen, free, clock, top, devfree, devlast,
             devbusy) = buf_read_ahead_linear(pst, stat, ist, cnt, sst, glob, cfg, pm, p, f,
                                              t, head, tail, length, old, oldlen, free, clock,
                                              top, devfree, devlast, devbusy)
            ra_wait += t - t_get   # (a wait for a free block: neither CPU nor I/O wait)
            if glob[G_NLOCAL] > room:
                cut = CUT_ROOM     # it registered pages: the next get may not
            elif length <= OLD_MIN_LEN or old < 0:
                cut = CUT_LIST     # (the next get is off the main path)
        if modify:
            buf_flush_note_modification(pst, ist, cnt, glob, f)  # the flush list's state
        t += cpu
    return (cut,
            (head, tail, length, old, oldlen, free, clock, top, devfree, devlast, devbusy, t,
             blen, lo0, hi0, lo1, hi1),
            (d_counted, iowait, ra_wait))
