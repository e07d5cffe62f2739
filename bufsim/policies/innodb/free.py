"""Free blocks and eviction (buf0lru.cc, buf0flu.cc): taking and releasing frames,
buf_LRU_free_page (evict_page), buf_LRU_free_from_common_LRU_list,
buf_LRU_get_free_block with its single-page flush, and the page cleaner's LRU batch
and pass (buf_flush_LRU_list_batch, buf_flush_page_cleaner)."""
from numba import njit

from ..flush import flush_pass, write_page, write_temp_page
from .._state import (
    C_EVICT, C_RA_EVICTED, C_WAIT_FREE, G_ACTIVE, G_CLEANER_PEND, G_FIXED, G_FTOP, G_NEXT_TICK,
    G_TICKS, I_CLOCK, I_FREE, I_SIZE, K_BATCH_UNBOUNDED, K_CLEANER, K_CLEANER_LAG, K_COST_EVICT,
    K_FREE_SCAN, K_LRU_FLOOR_SMALL, K_REFILL_DEMAND, K_SCANDEPTH, L1_LEN, L1_TAIL, LRU_MIN_LEN,
    NS_PER_S, P_ACCESS, P_DIRTY, P_PAGE, P_PREV, P_READY, SCAN_DEPTH, SCAN_TENTH, TEMP_DIRTY,
    TEMP_WRITTEN, T_CPU, T_IOWAIT,
)
from .lists import remove_block


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
def need_lru_eviction(ist, cfg, i):
    """MariaDB 10.11's test for an LRU batch (buf_pool_t::need_LRU_eviction, 10.11
    ``buf/buf0flu.cc``, and the same test in buf_LRU_get_free_block): more than
    BUF_LRU_MIN_LEN (256) pages in the LRU and fewer than innodb_lru_scan_depth / 2
    free blocks."""
    return ist[i, L1_LEN] > LRU_MIN_LEN and ist[i, I_FREE] < cfg[K_SCANDEPTH] // 2


@njit(_nrt=False, cache=True)
def refill_on_demand(pst, stat, ist, cnt, glob, cfg, fmap, ffree, i, t_ns):
    """MariaDB 10.11 (§13, ServerVersion.refill_on_demand), after a user thread took a
    free block of instance i: a take that leaves :func:`need_lru_eviction` true wakes
    the page cleaner (buf_LRU_get_free_block: ``available < scan_depth`` with
    ``scan_depth = LRU_scan_depth / 2`` and ``LRU_size > BUF_LRU_MIN_LEN``, ->
    page_cleaner_wakeup), whose LRU batch (:func:`cleaner_lru_batch`) evicts from the
    tail until lru_scan_depth blocks are free or the LRU is down to batch_lru_min.
    The live server chose the half against "below the target" (notebook 07: every
    counter holds on more rows).

    ``PoolConfig.cleaner_lag`` (K_CLEANER_LAG) = 0: the batch runs at the wake.  n > 0:
    the cleaner is a thread of its own, and user threads take n more blocks before
    its batch runs; meanwhile no take wakes it again (the wake is skipped while
    ``buf_pool.page_cleaner_active()``).  When it runs, the cleaner tests
    need_LRU_eviction again (buf_flush_page_cleaner: ``else if
    (buf_pool.need_LRU_eviction())`` before buf_flush_LRU).  Not inlined: one call
    site per caller of get_free_block, outside its hot path."""
    pend = glob[G_CLEANER_PEND]
    if pend > 0:
        # the woken cleaner has not run yet: one more block taken
        glob[G_CLEANER_PEND] = pend - 1
        if pend == 1 and need_lru_eviction(ist, cfg, i):
            cleaner_lru_batch(pst, stat, ist, cnt, glob, cfg, fmap, ffree, i, t_ns)
    elif need_lru_eviction(ist, cfg, i):
        if cfg[K_CLEANER_LAG] == 0:
            cleaner_lru_batch(pst, stat, ist, cnt, glob, cfg, fmap, ffree, i, t_ns)
        else:
            glob[G_CLEANER_PEND] = cfg[K_CLEANER_LAG]


@njit(_nrt=False, cache=True, inline="always")
def get_free_block(pst, stat, ist, cnt, sst, glob, cfg, fmap, ffree, i, k, t_ns):
    """buf_LRU_get_free_block for a user thread of stream k at time t_ns.  Returns the
    time at which the block is had (later than t_ns if a page had to be flushed)."""
    while True:
        if ist[i, I_FREE] > 0:
            ist[i, I_FREE] -= 1
            if cfg[K_REFILL_DEMAND] != 0:
                refill_on_demand(pst, stat, ist, cnt, glob, cfg, fmap, ffree, i, t_ns)
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
    """One pass of the 5.6+ page cleaner: its LRU batch on every instance (a wake
    pending under ``cleaner_lag`` is consumed: the cleaner ran)."""
    glob[G_CLEANER_PEND] = 0
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
