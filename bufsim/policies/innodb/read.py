"""Reading pages in (buf0rea.cc): buf_page_init_for_read, buf_read_page_low and
buf_read_ahead_linear, the last in named parts (its tests on the page and the target
area, its pattern check, the reads) so that the fast loop's read-ahead
(:func:`bufsim.policies.innodb.fast_steps.buf_read_ahead_linear`) makes the same tests
and reads with its own steps."""
import numpy as np
from numba import njit

from ..device import device_read
from .._state import (
    C_RA, C_READ, I_AREA, K_FREE_UNUSED, K_NINST, K_RATHRESH, K_RA_FAIL_EARLY, K_RA_NEXT_AREA,
    K_RA_ZERO_OFF, PM_BASE, PM_FFREE, PM_FMAP, PM_SIZE, PM_UNUSED, P_ACCESS, P_DIRTY, P_READY,
    P_STAMP, P_WHERE, T_RA, G_AREA, dense_of, hash_add, is_edge, leaf_links, local_of, page_no,
    space_pos,
)
from .lists import add_block, instance_of
from .free import evict_page, get_free_block, take_frame


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


IBUF_BITMAP_PERIOD = 16384  # an ibuf bitmap page every 16384 pages (16 KiB pages), at offset 1


@njit(_nrt=False, cache=True, inline="always")
def is_ibuf_bitmap(page_no):
    return page_no % IBUF_BITMAP_PERIOD == 1


@njit(_nrt=False, cache=True, inline="always")
def ra_site(stat, pm, glob, cfg, p):
    """Whether :func:`read_ahead_linear` on page p can get past its first test (a cheap
    filter before the call): MySQL and MariaDB 10.5 start only at an area's first or last
    page; MariaDB 10.11's buf_read_ahead_linear (``descending= page_id != low``) returns at
    once for the first page only and goes on for every other (the last page, and the rare
    middle page whose links point at an area's edge)."""
    if cfg[K_RA_NEXT_AREA] == 0:
        return is_edge(stat, pm, glob, p)
    area = glob[G_AREA]
    return area > 0 and (page_no(stat, pm, p) & (area - 1)) != 0


@njit(_nrt=False, cache=True, inline="always")
def linear_area(pst, stat, ist, cfg, pm, p):
    """buf_read_ahead_linear's tests before its loop over the area of page p: the
    threshold, p an area's edge (or, MariaDB 10.11, not its first page), not an ibuf
    bitmap page, its area inside the file, p in the page hash, p's own links
    (FIL_PAGE_PREV / FIL_PAGE_NEXT) and the target area they give.  Returns ``(low,
    t_low, asc, sp, base)``: p's area's first page number, the target area's (-1: a
    test failed, nothing to read), the access order the pattern wants (1 ascending, -1
    descending), p's space position and first dense index.  Only reads."""
    space_base = pm[PM_BASE]
    space_size = pm[PM_SIZE]
    none = (np.int64(0), np.int64(-1), np.int64(0), np.int64(0), np.int64(0))
    thr = cfg[K_RATHRESH]
    if thr == 0 and cfg[K_RA_ZERO_OFF] != 0:
        return none  # 5.6+: 0 switches linear read-ahead off (5.5: most aggressive)
    i = instance_of(stat, cfg, p)
    area = ist[i, I_AREA]
    pn = page_no(stat, pm, p)
    sp = space_pos(stat, pm, p)
    dp = dense_of(stat, p)
    base = space_base[sp]
    size = space_size[sp]
    low = (pn // area) * area
    high = low + area
    next_area = cfg[K_RA_NEXT_AREA] != 0
    if next_area:
        # MariaDB 10.11: ``descending= page_id != low; if (!descending && page_id !=
        # high_1) return 0``: the first page never starts one; the others go on
        if pn == low:
            return none
    elif pn != low and pn != high - 1:
        return none
    if is_ibuf_bitmap(pn):
        return none
    if high > size:
        return none
    f = pm[PM_FMAP][p]
    if f < 0 or pst[P_WHERE][f] != 1:
        return none  # p itself not in the page hash: ``if (i == page_id) goto fail``
    prev_leaf, next_leaf = leaf_links(stat, pm, p)
    if next_area:
        # buf_read_ahead_linear of MariaDB 10.11: both links must be set; the last page
        # of an area reads the area of the next page *number* (``++id``), whatever
        # FIL_PAGE_NEXT says; a middle page whose next leaf is the page after it reads
        # the area of its previous leaf (``id.set_page_no(prev)``), if that is an edge
        if prev_leaf < 0 or next_leaf < 0:
            return none
        if pn == high - 1:
            target = dp + 1
        elif next_leaf == dp + 1:
            target = prev_leaf
        else:
            return none
    elif pn == low and next_leaf == dp + 1:
        target = prev_leaf
    elif pn == high - 1 and prev_leaf == dp - 1:
        target = next_leaf
    else:
        return none
    if target < 0:
        return none  # FIL_NULL: the area would lie outside the file
    tpn = target - base
    t_low = (tpn // area) * area
    t_high = t_low + area
    if tpn != t_low and tpn != t_high - 1:
        return none
    if t_high > size:
        return none
    return (np.int64(low), np.int64(t_low), np.int64(-1 if pn == low else 1), np.int64(sp),
            np.int64(base))


@njit(_nrt=False, cache=True, inline="always")
def linear_pattern(pst, cfg, pm, base, low, area, asc):
    """buf_read_ahead_linear's loop over the area of ``area`` pages from page number
    ``low`` (of the space whose first dense index is ``base``): its pages must have been
    accessed, in the order ``asc``, with at most the threshold's failures (MySQL: more
    than ``64 - threshold`` fail; MariaDB 10.11 counts down and fails one earlier).
    Whether the area passes.  Only reads."""
    fmap = pm[PM_FMAP]
    limit = min(64 - cfg[K_RATHRESH], area)
    if cfg[K_RA_FAIL_EARLY] != 0:
        # MariaDB 10.11 counts ``count = min(64 - threshold, area)`` down on every failed
        # page and gives up when it reaches zero: the limit-th failure aborts, where
        # MySQL's ``fail_count > threshold`` aborts at the (limit + 1)-th.  With threshold
        # 64 the count starts at 0 and the first decrement wraps (ulint): never aborts.
        limit = limit - 1 if limit > 0 else area
    fails = 0
    pred = 0
    for j in range(low, low + area):
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
            return False
        if acc > 0:
            pred = acc
    return True


@njit(_nrt=False, cache=True, inline="always")
def linear_target(pst, stat, ist, cfg, pm, p):
    """:func:`linear_area` and :func:`linear_pattern` on page p: ``(t_low, sp, base)``,
    the first page number of the area buf_read_ahead_linear is to read (-1: none), p's
    space position and first dense index.  Only reads: the fast loop calls it on its own
    state (:func:`bufsim.policies.innodb.fast_steps.buf_read_ahead_linear`)."""
    low, t_low, asc, sp, base = linear_area(pst, stat, ist, cfg, pm, p)
    if t_low < 0 or not linear_pattern(pst, cfg, pm, base, low,
                                       ist[instance_of(stat, cfg, p), I_AREA], asc):
        return np.int64(-1), sp, base
    return t_low, sp, base


@njit(_nrt=False, cache=True, inline="always")
def read_page_low(pst, stat, ist, cnt, sst, glob, cfg, pm, q, d, k, t_ns):
    """buf_read_page_low of read-ahead page q (dense index d) for stream k at t_ns:
    buf_page_init_for_read (:func:`read_in`), then the read on the device; MariaDB
    10.11 frees a page that holds no data once its read completes.  Returns the time."""
    fmap = pm[PM_FMAP]
    unused = pm[PM_UNUSED]
    t_ns = read_in(pst, stat, ist, cnt, sst, glob, cfg, fmap, pm[PM_FFREE], q, k, t_ns)
    f = fmap[q]
    pst[P_READY][f] = device_read(stat, pm, sst, glob, cfg, q, k, t_ns)
    if cfg[K_FREE_UNUSED] != 0 and unused.shape[0] > 0:
        u = np.searchsorted(unused, d)
        if u < unused.shape[0] and unused[u] == d:
            # §13: a page that holds no data (FIL_PAGE_TYPE_ALLOCATED) is freed from
            # the pool once its read completes; the eviction advances freed_page_clock
            # and is the pool's own, not a READ_AHEAD_EVICTED one
            evict_page(pst, stat, ist, cnt, glob, cfg, fmap, pm[PM_FFREE],
                       instance_of(stat, cfg, q), f)
    return t_ns


@njit(_nrt=False, cache=True)
def read_ahead_linear(pst, stat, ist, cnt, sst, glob, cfg, pm, p, k, t_ns):
    """buf_read_ahead_linear on page p: after its first access (the ``"get"`` rule and a
    forward leaf step), or before a descent's get of the leaf p (then p may not be
    resident, which fails at once, or resident but not accessed, one failure).  Returns
    the time (later than t_ns only if freeing a block for a read-ahead page had to wait).

    Its parts: :func:`linear_target` (the tests on p, its links and the target area,
    :func:`linear_area`, then the pattern check over p's area, :func:`linear_pattern`),
    then :func:`read_page_low` for each page of the target area not in the pool.  The
    tests on p's own links come before the pattern check over the area; the server
    makes them while its loop passes p, but every test only reads and any failure
    returns, so the order is the same result.

    ``pm`` is the page map (``PM_*`` in :mod:`bufsim.policies._state`); bases and leaf
    links are dense page indices."""
    t_low, sp, base = linear_target(pst, stat, ist, cfg, pm, p)
    if t_low < 0:
        return t_ns
    i = instance_of(stat, cfg, p)
    fmap = pm[PM_FMAP]
    count = 0
    for j in range(t_low, t_low + ist[i, I_AREA]):
        if is_ibuf_bitmap(j):
            continue
        q = hash_add(pm, stat, glob, cfg[K_NINST], base + j, sp, j)
        f = fmap[q]
        if f >= 0 and pst[P_WHERE][f] == 1:
            continue
        t_ns = read_page_low(pst, stat, ist, cnt, sst, glob, cfg, pm, q, base + j, k, t_ns)
        count += 1
    cnt[i, C_RA] += count
    sst[k, T_RA] += count
    return t_ns
