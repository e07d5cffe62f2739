"""InnoDB's buffer pool: midpoint-insertion LRU, make-young rules, free blocks,
page cleaner and linear read-ahead, as jitted functions over the array state of
:mod:`bufsim.policies._state`.

Each function cites the InnoDB function it follows; the semantics are those of
``docs/semantics.md`` (MySQL 5.5/5.6/5.7, MariaDB 10.5).  The
pure-Python twin is :class:`bufsim.reference.InnoDBInstance`; tests compare the
two event by event.

Simplifications, all documented in the README:

* dirty pages, the flush list and flush-list flushing are in
  :mod:`bufsim.policies.flush` (its docstring lists what of InnoDB's flushing is
  left out); a page under write is not I/O-fixed;
* the pending-read limit of read-ahead (``n_pend_reads > curr_size / 2``), random
  read-ahead, compressed pages (unzip_LRU) and 5.7's remembered LRU scan
  position are not modelled;
* ``NUMBER_PAGES_READ`` counts a read when it is issued, not when it completes.

State layout (see :mod:`bufsim.engine`): the lists link *frames* (rows of ``pst``,
one per buffer block, like ``buf_block_t``); a page is named by its id (its dense
page index, or a local id where the numbering is too large: "page ids" in
:mod:`bufsim.policies._state`), ``fmap[page]`` is its frame or -1 (InnoDB's
``page_hash``), ``pst[P_PAGE][frame]`` its page.  Free frames are a stack
``ffree[:glob[G_FTOP]]``.  A page's facts (space, page number, leaf links) come from
``dense_of``, ``page_no``, ``space_pos`` and ``leaf_links``.
"""
from numba import njit

from ._state import (
    L1_HEAD, L1_LEN, L1_TAIL,
    C_AHI, C_EVICT, C_GETS, C_NOT_YOUNG, C_RA, C_RA_EVICTED, C_READ, C_READS,
    C_WAIT_FREE, C_YOUNG, G_ACTIVE,
    G_FIXED, G_NEXT_TICK, G_TICKS, I_AREA, I_CLOCK, I_FREE, I_OLD, I_OLDLEN, I_SIZE, I_W,
    K_ACTIVITY, K_AHI, K_CLEANER, K_COST_CLOCK, K_NINST, K_COST_EVICT, K_COST_MISS, K_COST_YOUNG,
    K_OLDTIME, K_RATHRESH, K_RATIO, K_SCANDEPTH, K_FREE_SCAN, K_BATCH_UNBOUNDED,
    K_FREE_UNUSED, K_LRU_FLOOR_SMALL, K_RA_FAIL_EARLY, K_RA_NEXT_AREA, K_RA_ZERO_OFF,
    K_REFILL_DEMAND, K_TEMP_UNLOGGED, SCAN_DEPTH, SCAN_TENTH,
    LRU_MIN_LEN, NON_OLD_MIN_LEN, NS_PER_MS, NS_PER_S, OLD_MIN_LEN, OLD_TOLERANCE, P_ACCESS,
    P_DIRTY, P_NEXT, P_OLD, P_PAGE, P_PREV, P_READY, P_STAMP, P_WHERE, RATIO_DIV,
    S_INST, STAMP_MASK, T_CPU, T_IOWAIT, T_RA,
    T_MISSES, G_FTOP, FLAG_AHI, FLAG_MODIFY, FLAG_RELATCH,
    FLAG_SHORTCUT, FLAG_TEMP, TEMP_DIRTY, TEMP_WRITTEN,
    PM_BASE, PM_FFREE, PM_FMAP, PM_SIZE, PM_SMISS, PM_UNUSED, dense_of, hash_add, is_edge, leaf_links,
    local_of, insert_after, ix, page_no, push_head, space_pos, unlink,
)
import numpy as np

from .device import device_read
from .flush import flush_pass, note_modification, note_temp_modification, write_page, \
    write_temp_page

IBUF_BITMAP_PERIOD = 16384  # an ibuf bitmap page every 16384 pages (16 KiB pages), at offset 1


@njit(_nrt=False, cache=True, inline="always")
def now_ms(t_ns):
    """ut_time_ms() of a virtual time.  +1 so that no access is stamped 0 (0 = never)."""
    return t_ns // NS_PER_MS + 1


@njit(_nrt=False, cache=True, inline="always")
def instance_of(stat, cfg, p):
    """The instance of page p (read from the tablespace map only if there are several:
    one cold cache line less per miss)."""
    return 0 if cfg[K_NINST] == 1 else stat[p, S_INST]


# ---- the old sublist ---------------------------------------------------------------------
@njit(_nrt=False, cache=True, inline="always")
def set_old(pst, p, v):
    pst[P_OLD][p] = v


@njit(_nrt=False, cache=True, inline="always")
def old_adjust_len(pst, stat, ist, cfg, i):
    """buf_LRU_old_adjust_len: keep LRU_old_len within +-20 of the target."""
    ist[i, I_OLD], ist[i, I_OLDLEN] = old_adjust(pst[P_PREV], pst[P_NEXT], pst[P_OLD],
                                                 ist[i, L1_LEN], cfg[K_RATIO],
                                                 ist[i, I_OLD], ist[i, I_OLDLEN])


@njit(_nrt=False, cache=True, inline="always")
def old_adjust(prv, nxt, isold, length, ratio, old, oldlen):
    """buf_LRU_old_adjust_len's rule on an LRU of ``length`` pages with the old pointer
    ``old`` and old length ``oldlen`` (the engine's fast loop holds them in locals):
    moves the pointer one page at a time until the old length is within
    OLD_TOLERANCE of its target, and returns the new pointer and length."""
    new_len = min(length * ratio // RATIO_DIV, length - (OLD_TOLERANCE + NON_OLD_MIN_LEN))
    while True:
        if oldlen + OLD_TOLERANCE < new_len:
            old = prv[ix(old)]
            oldlen += 1
            isold[ix(old)] = 1
        elif oldlen > new_len + OLD_TOLERANCE:
            isold[ix(old)] = 0
            old = nxt[ix(old)]
            oldlen -= 1
        else:
            return old, oldlen


# buf_LRU_old_adjust_len as arithmetic.  While the LRU is at least OLD_MIN_LEN long its
# old pages are the list's last LRU_old_len pages (LRU_old is the first of them), so the
# rule above only moves that boundary: the old length it leaves is its argument clamped to
# [target - OLD_TOLERANCE, target + OLD_TOLERANCE].  A get that changes the list several
# times (evict the tail, add after LRU_old, make it young) can therefore count the old
# length through each step's clamp and move the pointer once, at the end, by the net
# difference (old_walk): the same pages are old and the same page is LRU_old as after
# the step-by-step calls.  The engine's fast loop does this for a read that old_blocks_time
# 0 makes young at its first access (benchmarks/midpoint_floor.py's one-step kernel does
# it for every get); the twin tests hold it to the step-by-step kernel on every state array.

@njit(_nrt=False, cache=True, inline="always")
def old_bounds(length, ratio):
    """The old lengths buf_LRU_old_adjust_len leaves alone on an LRU of ``length`` pages:
    ``(low, high)``, the target -+ OLD_TOLERANCE."""
    new_len = min(length * ratio // RATIO_DIV, length - (OLD_TOLERANCE + NON_OLD_MIN_LEN))
    return new_len - OLD_TOLERANCE, new_len + OLD_TOLERANCE


@njit(_nrt=False, cache=True, inline="always")
def old_clamp(oldlen, low, high):
    """The old length buf_LRU_old_adjust_len leaves (bounds from :func:`old_bounds`)."""
    if oldlen < low:
        return low
    if oldlen > high:
        return high
    return oldlen


@njit(_nrt=False, cache=True, inline="always")
def old_walk(prv, nxt, isold, old, steps):
    """Move the LRU_old pointer ``steps`` pages towards the head (negative: towards the
    tail), marking the pages it takes in old and those it leaves not old, as
    buf_LRU_old_adjust_len's steps do; returns the new pointer."""
    while steps > 0:
        old = prv[ix(old)]
        isold[ix(old)] = 1
        steps -= 1
    while steps < 0:
        isold[ix(old)] = 0
        old = nxt[ix(old)]
        steps += 1
    return old


@njit(_nrt=False, cache=True)
def old_init(pst, stat, ist, cfg, i):
    """buf_LRU_old_init: mark every page old, LRU_old = head, then adjust."""
    p = ist[i, L1_HEAD]
    while p >= 0:
        set_old(pst, p, 1)
        p = pst[P_NEXT][p]
    ist[i, I_OLD] = ist[i, L1_HEAD]
    ist[i, I_OLDLEN] = ist[i, L1_LEN]
    old_adjust_len(pst, stat, ist, cfg, i)


@njit(_nrt=False, cache=True, inline="always")
def add_block(pst, stat, ist, cfg, i, p, old):
    """buf_LRU_add_block_low: at the head (stamping freed_page_clock) unless this is a
    read and the list has 512 pages, then right after LRU_old (no stamp)."""
    if (not old) or ist[i, L1_LEN] < OLD_MIN_LEN:
        push_head(pst, ist, i, 1, p)
        pst[P_STAMP][p] = ist[i, I_CLOCK] & STAMP_MASK
    else:
        insert_after(pst, ist, i, 1, ist[i, I_OLD], p)
        ist[i, I_OLDLEN] += 1
    L = ist[i, L1_LEN]
    if L > OLD_MIN_LEN:
        set_old(pst, p, 1 if old else 0)
        old_adjust_len(pst, stat, ist, cfg, i)
    elif L == OLD_MIN_LEN:
        old_init(pst, stat, ist, cfg, i)
    else:
        set_old(pst, p, 1 if ist[i, I_OLD] >= 0 else 0)


@njit(_nrt=False, cache=True, inline="always")
def remove_block(pst, stat, ist, cfg, i, p):
    """buf_LRU_remove_block.  The page's old flag is cleared afterwards (it has left
    the list; every insertion sets the flag again)."""
    if p == ist[i, I_OLD]:
        prev = pst[P_PREV][p]
        ist[i, I_OLD] = prev
        set_old(pst, prev, 1)
        ist[i, I_OLDLEN] += 1
    unlink(pst, ist, i, p)
    if ist[i, L1_LEN] < OLD_MIN_LEN:
        q = ist[i, L1_HEAD]
        while q >= 0:
            set_old(pst, q, 0)
            q = pst[P_NEXT][q]
        ist[i, I_OLD] = -1
        ist[i, I_OLDLEN] = 0
        set_old(pst, p, 0)
        return
    if pst[P_OLD][p]:
        ist[i, I_OLDLEN] -= 1
    set_old(pst, p, 0)
    old_adjust_len(pst, stat, ist, cfg, i)


@njit(_nrt=False, cache=True, inline="always")
def make_block_young(pst, stat, ist, cnt, cfg, i, p):
    """buf_LRU_make_block_young: counted in PAGES_MADE_YOUNG only if the page was old."""
    if pst[P_OLD][p]:
        cnt[i, C_YOUNG] += 1
    remove_block(pst, stat, ist, cfg, i, p)
    add_block(pst, stat, ist, cfg, i, p, False)


@njit(_nrt=False, cache=True, inline="always")
def peek_if_too_old(pst, ist, cnt, cfg, i, p, t_ns):
    """buf_page_peek_if_too_old.  Returns bit 0: move the page; bit 1: the clock was read."""
    if ist[i, I_CLOCK] == 0:
        return 0  # warm-up: nothing evicted from this instance yet
    if cfg[K_OLDTIME] != 0 and pst[P_OLD][p]:
        acc = pst[P_ACCESS][p]
        if acc > 0:
            if now_ms(t_ns) - acc >= cfg[K_OLDTIME]:
                return 3
            cnt[i, C_NOT_YOUNG] += 1
            return 2
        cnt[i, C_NOT_YOUNG] += 1
        return 0
    # buf_page_peek_if_young: (clock mod 2^31) < stamp + W
    young = (ist[i, I_CLOCK] & STAMP_MASK) < pst[P_STAMP][p] + ist[i, I_W]
    return 0 if young else 1


# ---- the device: bufsim.policies.device (device_read, device_write) -------------------------


# ---- freeing blocks ------------------------------------------------------------------------
@njit(_nrt=False, cache=True, inline="always")
def release_frame(pst, glob, fmap, ffree, f):
    """The page of frame f leaves the pool: clear its page_hash entry and put the
    frame on the stack of free frames.  The frame's fields are left as they are:
    whoever takes the frame sets every field it reads (init_for_read, the policies'
    miss), so a free frame costs no writes."""
    fmap[pst[P_PAGE][f]] = -1
    top = glob[G_FTOP]
    ffree[top] = f
    glob[G_FTOP] = top + 1


@njit(_nrt=False, cache=True, inline="always")
def take_frame(pst, glob, fmap, ffree, p):
    """Give page p a frame from the free stack; returns the frame."""
    top = glob[G_FTOP] - 1
    glob[G_FTOP] = top
    f = ffree[top]
    fmap[p] = f
    pst[P_PAGE][f] = p
    return f


@njit(_nrt=False, cache=True, inline="always")
def evict_page(pst, stat, ist, cnt, glob, cfg, fmap, ffree, i, p):
    """buf_LRU_free_page + buf_LRU_block_remove_hashed: the block (frame p) goes to
    the free list and freed_page_clock advances."""
    remove_block(pst, stat, ist, cfg, i, p)
    release_frame(pst, glob, fmap, ffree, p)
    ist[i, I_CLOCK] += 1
    ist[i, I_FREE] += 1
    cnt[i, C_EVICT] += 1


@njit(_nrt=False, cache=True, inline="always")
def replaceable(pst, glob, p, t_ns):
    """buf_flush_ready_for_replace: clean, not I/O-fixed, not buffer-fixed."""
    return pst[P_DIRTY][p] == 0 and pst[P_READY][p] <= t_ns and p != glob[G_FIXED]


@njit(_nrt=False, cache=True, inline="always")
def free_from_common_lru(pst, stat, ist, cnt, glob, cfg, fmap, ffree, i, limit, t_ns):
    """buf_LRU_free_from_common_LRU_list: scan at most ``limit`` pages from the tail
    (all if limit < 0) and free the first replaceable one; a freed page that was
    never accessed counts in NUMBER_READ_AHEAD_EVICTED."""
    p = ist[i, L1_TAIL]
    scanned = 0
    while p >= 0 and (limit < 0 or scanned < limit):
        prev = pst[P_PREV][p]
        if replaceable(pst, glob, p, t_ns):
            if pst[P_ACCESS][p] == 0:
                cnt[i, C_RA_EVICTED] += 1
            evict_page(pst, stat, ist, cnt, glob, cfg, fmap, ffree, i, p)
            return True
        scanned += 1
        p = prev
    return False


@njit(_nrt=False, cache=True, inline="always")
def batch_lru_min(ist, cfg, i):
    """The LRU length at or below which the page cleaner's LRU batch stops: BUF_LRU_MIN_LEN
    (256); MariaDB 10.11 lowers it for small pools to one page less than 5 % of the pool
    (10.11.18 ``buf/buf0flu.cc`` buf_flush_LRU_list_batch: ``buf_lru_min_len =
    std::min(buf_pool.usable_size() / 20 - 1, size_t{BUF_LRU_MIN_LEN})``; 17 pages at
    6 MiB, 30 at 10 MiB, 62 at 20 MiB; ServerVersion.small_pool_lru_floor)."""
    if cfg[K_LRU_FLOOR_SMALL] != 0:
        return min(ist[i, I_SIZE] // 20 - 1, LRU_MIN_LEN)
    return LRU_MIN_LEN


@njit(_nrt=False, cache=True)
def cleaner_lru_batch(pst, stat, ist, cnt, glob, cfg, fmap, ffree, i, t_ns):
    """The page cleaner's LRU batch on instance i (buf_flush_LRU_tail /
    buf_flush_LRU_list_batch): walk from the tail, freeing clean pages (an eviction
    by the cleaner: no read_ahead_evicted count) and writing dirty ones, until the free
    list holds lru_scan_depth blocks or the LRU is down to :func:`batch_lru_min` pages.

    5.6/5.7 (and MariaDB 10.5) scan at most min(lru_scan_depth, LRU length) pages
    (5.6 buf_flush_LRU_tail's chunks).  MariaDB 10.11 has no scan quota: its loop
    (10.11.18 buf_flush_LRU_list_batch) runs while ``UT_LIST_GET_LEN(buf_pool.LRU) >
    buf_lru_min_len && UT_LIST_GET_LEN(buf_pool.free) < free_limit`` (free_limit =
    LRU_scan_depth); its ``max`` bounds the pages *flushed* only (``n->flushed >= max``
    before a write; innodb_io_capacity_max, 2000 by default, from the page cleaner:
    not modelled, a replay's batch writes fewer).

    A temporary-tablespace page (TEMP_DIRTY, MariaDB 10.11) is written like a dirty one
    ("LRU flushing will always evict pages of the temporary tablespace, in
    buf_page_write_complete()", 10.11.18 buf_flush_LRU_list_batch) and freed when its
    write completes (buf_page_write_complete: ``if (!persistent) buf_LRU_free_page``),
    which is after the batch's stop test: the model frees the batch's written temporary
    pages when the batch ends, so the free list passes its target by them (and the LRU
    falls below the floor by them)."""
    depth = cfg[K_SCANDEPTH]
    unbounded = cfg[K_BATCH_UNBOUNDED] != 0   # ServerVersion.cleaner_batch_unbounded
    quota = min(depth, ist[i, L1_LEN])
    lru_min = batch_lru_min(ist, cfg, i)
    p = ist[i, L1_TAIL]
    scanned = 0
    temp = 0
    while p >= 0 and (unbounded or scanned < quota) and ist[i, I_FREE] < depth and \
            ist[i, L1_LEN] > lru_min:
        prev = pst[P_PREV][p]
        if replaceable(pst, glob, p, t_ns):
            evict_page(pst, stat, ist, cnt, glob, cfg, fmap, ffree, i, p)
        elif pst[P_DIRTY][p] == TEMP_DIRTY and pst[P_READY][p] <= t_ns and p != glob[G_FIXED]:
            write_temp_page(pst, cnt, glob, cfg, i, p, t_ns)
            temp += 1
        elif pst[P_DIRTY][p] > 0 and pst[P_READY][p] <= t_ns and p != glob[G_FIXED]:
            write_page(pst, ist, cnt, glob, cfg, i, p, t_ns)
        scanned += 1
        p = prev
    # the written temporary pages' writes complete: each is freed (they lie between the
    # tail and the page the batch stopped at, p)
    q = ist[i, L1_TAIL]
    while temp > 0 and q >= 0 and q != p:
        prev = pst[P_PREV][q]
        if pst[P_DIRTY][q] == TEMP_WRITTEN:
            pst[P_DIRTY][q] = 0
            evict_page(pst, stat, ist, cnt, glob, cfg, fmap, ffree, i, q)
            temp -= 1
        q = prev


@njit(_nrt=False, cache=True)
def flush_single_page(pst, stat, ist, cnt, sst, glob, cfg, fmap, ffree, i, k, t_ns):
    """Nothing clean in instance i's LRU: flush one dirty page from the tail and wait
    for the write (buf_flush_single_page_from_LRU / 5.5's buf_flush_free_margin), or
    wait for the first read in progress to land.  Returns the time.  (Not inlined:
    rare, and inlining it into every caller of get_free_block costs compile time.)"""
    cnt[i, C_WAIT_FREE] += 1
    p = ist[i, L1_TAIL]
    earliest = -1
    while p >= 0:
        if pst[P_DIRTY][p] and pst[P_READY][p] <= t_ns and p != glob[G_FIXED]:
            break
        if pst[P_READY][p] > t_ns and (earliest < 0 or pst[P_READY][p] < earliest):
            earliest = pst[P_READY][p]
        p = pst[P_PREV][p]
    if p >= 0 and pst[P_DIRTY][p] == TEMP_DIRTY:
        # a temporary-tablespace page is freed when its write completes
        done = write_temp_page(pst, cnt, glob, cfg, i, p, t_ns)
        sst[k, T_IOWAIT] += done - t_ns
        t_ns = done
        pst[P_DIRTY][p] = 0
        evict_page(pst, stat, ist, cnt, glob, cfg, fmap, ffree, i, p)
    elif p >= 0:
        done = write_page(pst, ist, cnt, glob, cfg, i, p, t_ns)
        sst[k, T_IOWAIT] += done - t_ns
        t_ns = done
    elif earliest >= 0:
        # every candidate is being read: wait for the first read to land
        sst[k, T_IOWAIT] += earliest - t_ns
        t_ns = earliest
    else:
        raise RuntimeError("no block can be freed: the pool is too small for the streams")
    return t_ns


@njit(_nrt=False, cache=True, inline="always")
def get_free_block(pst, stat, ist, cnt, sst, glob, cfg, fmap, ffree, i, k, t_ns):
    """buf_LRU_get_free_block for a user thread of stream k at time t_ns.  Returns the
    time at which the block is had (later than t_ns if a page had to be flushed)."""
    while True:
        if ist[i, I_FREE] > 0:
            ist[i, I_FREE] -= 1
            if cfg[K_REFILL_DEMAND] != 0 and ist[i, I_FREE] < cfg[K_SCANDEPTH] // 2 and \
                    ist[i, L1_LEN] > LRU_MIN_LEN:
                # MariaDB 10.11 (§13): a thread that takes a free block with fewer than
                # innodb_lru_scan_depth / 2 left wakes the page cleaner
                # (buf_LRU_get_free_block: ``available < scan_depth`` with ``scan_depth =
                # LRU_scan_depth / 2``, -> page_cleaner_wakeup), whose LRU batch
                # (buf_flush_LRU_list_batch) evicts from the tail until lru_scan_depth
                # blocks are free or the LRU is down to batch_lru_min: modelled as done
                # at once.  The live server chose the half against "below the target"
                # (notebook 07: every counter holds on more rows).
                cleaner_lru_batch(pst, stat, ist, cnt, glob, cfg, fmap, ffree, i, t_ns)
            return t_ns
        scan = cfg[K_FREE_SCAN]   # ServerVersion.free_scan
        if scan == SCAN_TENTH:
            first = 100 + ist[i, I_SIZE] // 10
        elif scan == SCAN_DEPTH:
            first = cfg[K_SCANDEPTH]
        else:
            first = 100  # BUF_LRU_SEARCH_SCAN_THRESHOLD (5.7, MariaDB)
        # the first scan looks at ``first`` blocks, the second at the whole LRU (one call
        # site, inlined once)
        freed = False
        limit = first
        for _ in range(2):
            if free_from_common_lru(pst, stat, ist, cnt, glob, cfg, fmap, ffree, i, limit, t_ns):
                freed = True
                break
            limit = -1
        if freed:
            t_ns += cfg[K_COST_EVICT]
            sst[k, T_CPU] += cfg[K_COST_EVICT]
            continue
        # Nothing clean: flush one dirty page from the tail and wait for the write
        t_ns = flush_single_page(pst, stat, ist, cnt, sst, glob, cfg, fmap, ffree, i, k, t_ns)


@njit(_nrt=False, cache=True)
def page_cleaner(pst, stat, ist, cnt, glob, cfg, fmap, ffree, n_inst, t_ns):
    """One pass of the 5.6+ page cleaner: its LRU batch on every instance."""
    for i in range(n_inst):
        cleaner_lru_batch(pst, stat, ist, cnt, glob, cfg, fmap, ffree, i, t_ns)


@njit(_nrt=False, cache=True)
def background(pst, stat, ist, cnt, glob, cfg, fmap, ffree, t_ns):
    """Run the background pass due by t_ns: at the first whole virtual second not
    yet handled, if there was a get since the previous pass.  Later seconds up to
    t_ns saw no get (this is called before every event), so they are skipped.

    The pass is the 5.6+ page cleaner's LRU batch (buf_flush_LRU_tail, counted in
    ``glob[G_TICKS]``) and then the flush-list flushing of the version
    (:func:`bufsim.policies.flush.flush_pass`: 5.5's srv_master_thread, 5.6+'s
    page_cleaner_flush_pages_if_needed).

    (Written without a loop over the seconds: LLVM turns such a loop into a 128-bit
    division that numba cannot link.)"""
    tick = glob[G_NEXT_TICK]
    if tick > t_ns:
        return
    if glob[G_ACTIVE] != 0:
        if cfg[K_CLEANER] != 0:
            page_cleaner(pst, stat, ist, cnt, glob, cfg, fmap, ffree, ist.shape[0], tick)
            glob[G_TICKS] += 1
        flush_pass(pst, ist, cnt, glob, cfg, tick)
        glob[G_ACTIVE] = 0
    glob[G_NEXT_TICK] = (t_ns // NS_PER_S + 1) * NS_PER_S


# ---- reads -----------------------------------------------------------------------------------
@njit(_nrt=False, cache=True, inline="always")
def init_for_read(pst, stat, ist, cnt, sst, glob, cfg, fmap, ffree, p, k, t_ns):
    """buf_page_init_for_read: take a free block (possibly evicting), put page p in
    the LRU as a read (old = true), unaccessed and unstamped.  Returns the time;
    the page's frame is ``fmap[p]`` afterwards."""
    i = instance_of(stat, cfg, p)
    t_ns = get_free_block(pst, stat, ist, cnt, sst, glob, cfg, fmap, ffree, i, k, t_ns)
    f = take_frame(pst, glob, fmap, ffree, p)
    pst[P_ACCESS][f] = 0
    pst[P_STAMP][f] = 0
    pst[P_DIRTY][f] = 0
    add_block(pst, stat, ist, cfg, i, f, True)
    cnt[i, C_READ] += 1
    return t_ns


@njit(_nrt=False, cache=True)
def read_in(pst, stat, ist, cnt, sst, glob, cfg, fmap, ffree, p, k, t_ns):
    """:func:`init_for_read` as a call, for read-ahead: its pages are read in batches
    of up to an area, where a call costs nothing next to the read, and inlining the
    free-block search into :func:`read_ahead_linear` too would double its compile time."""
    return init_for_read(pst, stat, ist, cnt, sst, glob, cfg, fmap, ffree, p, k, t_ns)


@njit(_nrt=False, cache=True, inline="always")
def is_ibuf_bitmap(page_no):
    return page_no % IBUF_BITMAP_PERIOD == 1


@njit(_nrt=False, cache=True)
def read_ahead_linear(pst, stat, ist, cnt, sst, glob, cfg, pm, p, k, t_ns):
    """buf_read_ahead_linear, called on the first access to page p.  Returns the time
    (later than t_ns only if freeing a block for a read-ahead page had to wait).

    ``pm`` is the page map (``PM_*`` in :mod:`bufsim.policies._state`); bases and leaf
    links are dense page indices."""
    fmap = pm[PM_FMAP]
    ffree = pm[PM_FFREE]
    space_base = pm[PM_BASE]
    space_size = pm[PM_SIZE]
    unused = pm[PM_UNUSED]
    thr = cfg[K_RATHRESH]
    if thr == 0 and cfg[K_RA_ZERO_OFF] != 0:
        return t_ns  # 5.6+: 0 switches linear read-ahead off (5.5: most aggressive)
    i = instance_of(stat, cfg, p)
    area = ist[i, I_AREA]
    pn = page_no(stat, pm, p)
    sp = space_pos(stat, pm, p)
    dp = dense_of(stat, p)
    base = space_base[sp]
    size = space_size[sp]
    low = (pn // area) * area
    high = low + area
    if pn != low and pn != high - 1:
        return t_ns
    if is_ibuf_bitmap(pn):
        return t_ns
    if high > size:
        return t_ns
    asc = 1
    if pn == low:
        asc = -1
    limit = min(64 - thr, area)
    if cfg[K_RA_FAIL_EARLY] != 0:
        # MariaDB 10.11 counts ``count = min(64 - threshold, area)`` down on every failed
        # page and gives up when it reaches zero: the limit-th failure aborts, where
        # MySQL's ``fail_count > threshold`` aborts at the (limit + 1)-th.  With threshold
        # 64 the count starts at 0 and the first decrement wraps (ulint): never aborts.
        limit = limit - 1 if limit > 0 else area
    fails = 0
    pred = 0
    for j in range(low, high):
        acc = 0
        lq = local_of(pm, base + j)
        if lq >= 0:
            f = fmap[lq]
            if f >= 0 and pst[P_WHERE][f] == 1:
                acc = pst[P_ACCESS][f]
        if acc == 0:
            fails += 1
        elif pred > 0:
            res = 0
            if acc > pred:
                res = 1
            elif acc < pred:
                res = -1
            if res != 0 and res != asc:
                fails += 1
        if fails > limit:
            return t_ns
        if acc > 0:
            pred = acc
    prev_leaf, next_leaf = leaf_links(stat, pm, p)
    if cfg[K_RA_NEXT_AREA] != 0:
        # buf_read_ahead_linear of MariaDB 10.11: both links must be set; the last page
        # of an area reads the area of the next page *number* (``++id``), whatever
        # FIL_PAGE_NEXT says; the first page reads the area of its next leaf if its
        # previous leaf is the page before it
        if prev_leaf < 0 or next_leaf < 0:
            return t_ns
        if pn == high - 1:
            target = dp + 1
        elif prev_leaf == dp - 1:
            target = next_leaf
        else:
            return t_ns
    elif pn == low and next_leaf == dp + 1:
        target = prev_leaf
    elif pn == high - 1 and prev_leaf == dp - 1:
        target = next_leaf
    else:
        return t_ns
    if target < 0:
        return t_ns  # FIL_NULL: the area would lie outside the file
    tpn = target - base
    low = (tpn // area) * area
    high = low + area
    if tpn != low and tpn != high - 1:
        return t_ns
    if high > size:
        return t_ns
    count = 0
    for j in range(low, high):
        if is_ibuf_bitmap(j):
            continue
        q = hash_add(pm, stat, glob, cfg[K_NINST], base + j, sp, j)
        f = fmap[q]
        if f >= 0 and pst[P_WHERE][f] == 1:
            continue
        t_ns = read_in(pst, stat, ist, cnt, sst, glob, cfg, fmap, ffree, q, k, t_ns)
        f = fmap[q]
        pst[P_READY][f] = device_read(stat, pm, sst, glob, cfg, q, k, t_ns)
        count += 1
        if cfg[K_FREE_UNUSED] != 0 and unused.shape[0] > 0:
            d = base + j
            u = np.searchsorted(unused, d)
            if u < unused.shape[0] and unused[u] == d:
                # §13: a page that holds no data (FIL_PAGE_TYPE_ALLOCATED) is freed from
                # the pool once its read completes; the eviction advances freed_page_clock
                # and is the pool's own, not a READ_AHEAD_EVICTED one
                evict_page(pst, stat, ist, cnt, glob, cfg, fmap, ffree,
                           instance_of(stat, cfg, q), f)
    cnt[i, C_RA] += count
    sst[k, T_RA] += count
    return t_ns


@njit(_nrt=False, cache=True, inline="always")
def modify(pst, ist, cnt, glob, cfg, i, f, flags):
    """A modifying get (FLAG_MODIFY) of frame f: a temporary-tablespace page (FLAG_TEMP)
    under MariaDB 10.11 is marked TEMP_DIRTY (no redo, not in the flush list); any other
    goes through buf_flush_note_modification."""
    if (flags & FLAG_TEMP) != 0 and cfg[K_TEMP_UNLOGGED] != 0:
        note_temp_modification(pst, f)
    else:
        note_modification(pst, ist, cnt, glob, i, f)


@njit(_nrt=False, cache=True, inline="always")
def get(pst, stat, ist, cnt, sst, glob, cfg, pm, p, flags, k, t_ns):
    """One page get (buf_page_get_gen / optimistic get / AHI hit / AHI shortcut) of
    page p (a local id) by stream k at t_ns.  Returns the time when the page is
    latched and checked, before the get's own CPU.

    FLAG_RELATCH (16): a cursor re-latch of a remembered position goes through
    every step but is not counted in NUMBER_PAGES_GET."""
    fmap = pm[PM_FMAP]
    ffree = pm[PM_FFREE]
    i = instance_of(stat, cfg, p)
    if cfg[K_ACTIVITY] == 0:
        glob[G_ACTIVE] = 1  # cleaner_activity='get'; 'statement' marks it in the engine
    counted = 0 if (flags & FLAG_RELATCH) != 0 else 1
    f = fmap[p]
    resident = f >= 0 and pst[P_WHERE][f] == 1
    hashed = cfg[K_AHI] != 0 and resident and pst[P_ACCESS][f] > 0
    if (flags & FLAG_SHORTCUT) != 0 and hashed:
        # AHI shortcut under the held search latch: one get, no stamp, no check
        cnt[i, C_GETS] += counted
        cnt[i, C_AHI] += 1
        if pst[P_READY][f] > t_ns:
            sst[k, T_IOWAIT] += pst[P_READY][f] - t_ns
            t_ns = pst[P_READY][f]
        if flags & FLAG_MODIFY:
            modify(pst, ist, cnt, glob, cfg, i, f, flags)
        return t_ns
    ahi = (flags & FLAG_AHI) != 0 and hashed
    if ahi:
        cnt[i, C_GETS] += 2 * counted
        cnt[i, C_AHI] += 1
    else:
        cnt[i, C_GETS] += counted
    glob[G_FIXED] = f
    if not resident:
        sst[k, T_MISSES] += 1
        pm[PM_SMISS][space_pos(stat, pm, p)] += 1
        cnt[i, C_READS] += 1
        t_ns = init_for_read(pst, stat, ist, cnt, sst, glob, cfg, fmap, ffree, p, k, t_ns)
        f = fmap[p]
        glob[G_FIXED] = f
        done = device_read(stat, pm, sst, glob, cfg, p, k, t_ns)
        pst[P_READY][f] = done
        sst[k, T_IOWAIT] += done - t_ns
        t_ns = done + cfg[K_COST_MISS]
        sst[k, T_CPU] += cfg[K_COST_MISS]
    elif pst[P_READY][f] > t_ns:
        sst[k, T_IOWAIT] += pst[P_READY][f] - t_ns
        t_ns = pst[P_READY][f]
    first = pst[P_ACCESS][f] == 0
    if first:
        pst[P_ACCESS][f] = now_ms(t_ns)
        t_ns += cfg[K_COST_CLOCK]
        sst[k, T_CPU] += cfg[K_COST_CLOCK]
    for _ in range(2 if ahi else 1):
        r = peek_if_too_old(pst, ist, cnt, cfg, i, f, t_ns)
        if r & 2:
            t_ns += cfg[K_COST_CLOCK]
            sst[k, T_CPU] += cfg[K_COST_CLOCK]
        if r & 1:
            make_block_young(pst, stat, ist, cnt, cfg, i, f)
            t_ns += cfg[K_COST_YOUNG]
            sst[k, T_CPU] += cfg[K_COST_YOUNG]
    if first and not ahi and is_edge(stat, pm, glob, p):  # only an area's edge pages
        t_ns = read_ahead_linear(pst, stat, ist, cnt, sst, glob, cfg, pm, p, k, t_ns)
    if flags & FLAG_MODIFY:
        modify(pst, ist, cnt, glob, cfg, i, f, flags)
    glob[G_FIXED] = -1
    return t_ns
