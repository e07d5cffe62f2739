"""The InnoDB t=0 replay with nothing but its rules: minimal Numba kernels of MySQL
5.6's LRU with ``innodb_old_blocks_time`` = 0 *and* linear read-ahead, whose hits and
read-ahead pages equal bufsim ``innodb_t0``'s (one instance, one stream, no page
cleaner pass).  ``make bench`` times the timed one beside ``floor_lru`` as its
``midpoint_ra_floor`` row: what InnoDB's rules cost on a virtual clock when nothing
else is done.

What they do, each as the step of :mod:`bufsim.policies.innodb` it names:

- the free list while the pool fills (frames taken in order), buf_LRU_add_block's
  512-page rule and buf_LRU_old_init;
- freed_page_clock and the young window of buf_page_peek_if_young (a page moves to
  the head only once the clock has passed its stamp by the window, so nothing moves
  before the first ``window`` evictions);
- a hit that moves and a miss that the window makes young at once in one step (the
  old length through buf_LRU_old_adjust_len's clamps, LRU_old moved once, as
  benchmarks/midpoint_floor.py's one-step kernel and bufsim's fast loop do); a
  read-ahead page's eviction and insertion after LRU_old through the two clamps;
  anything else (the warm-up, the first ``window`` misses) step by step;
- buf_read_ahead_linear on an area edge page's first access (BUF_READ_AHEAD_AREA of
  the pool's size): at most ``64 - threshold`` area pages unaccessed or accessed out
  of order, the default leaf links (page number -+ 1), the neighbouring area read
  page by page through buf_page_init_for_read, change-buffer bitmap pages skipped;
  the freed page the last that is clean, has landed and is not the page being got.

``midpoint_ra_timed`` (the bench's row) runs on a nanosecond clock: ``cpu_ns`` per
get, a FIFO device of ``read_ns`` per read, waits for reads, access times in
milliseconds, per-frame read completion and modification (int64).  ``midpoint_ra``
keeps no time at all (an accessed flag for the access time): exact only where every
access falls in the same millisecond, as at the bench's zero costs and instant device.
``midpoint_no_ra`` is ``midpoint_ra`` without read-ahead (not InnoDB: for the table
below).  None has dirty pages, the page cleaner, the adaptive hash index, several
instances or streams, or counters other than hits and read-ahead pages.

Run from the repo root to time them beside floor_lru and bufsim on the bench's traces
(best of ``--repeat`` interleaved rounds; hits and read-ahead checked against bufsim)::

    .venv/bin/python -P benchmarks/midpoint_ra.py [--gets N] [--repeat R]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from midpoint_floor import _adjust  # noqa: E402
from bufsim.policies._state import OLD_MIN_LEN, PREFETCH_AHEAD, ix, prefetch  # noqa: E402
from bufsim.policies.innodb import IBUF_BITMAP_PERIOD, old_bounds, old_clamp, old_walk  # noqa: E402

RATIO, DIV = 378, 1024         # innodb_old_blocks_pct = 37
THRESHOLD = 56                 # innodb_read_ahead_threshold (5.6's default)
# from this many frames, prefetch the frame fields of the event FRAME_AHEAD ahead and the
# new tail after an eviction (fast_steps.DEEP_FRAMES, FRAME_AHEAD).  bufsim's fast loop
# prefetches the tail on every pool size; this kernel does not below DEEP, its faster
# choice (zipf 0.9/8,192, paired on 2026-11-29: 0.177 s per 10M gets without, 0.199 s
# with; fast_steps.prefetch_tail)
DEEP, FRAME_AHEAD = 65536, 8

NS_PER_MS = 1_000_000

# the scalar state the cold paths (step-by-step changes, read-ahead) share with the loop
S_HEAD, S_TAIL, S_LEN, S_OLD, S_OLDLEN, S_CLOCK, S_USED, S_RA, S_T, S_DEV, S_READ = range(11)


@njit(cache=True, inline="always")
def _unlink(f, prv, nxt, s):
    a, b = prv[ix(f)], nxt[ix(f)]
    if a >= 0:
        nxt[ix(a)] = b
    else:
        s[S_HEAD] = b
    if b >= 0:
        prv[ix(b)] = a
    else:
        s[S_TAIL] = a


@njit(cache=True, inline="always")
def _push_head(f, prv, nxt, s):
    h = s[S_HEAD]
    prv[ix(f)] = -1
    nxt[ix(f)] = h
    if h >= 0:
        prv[ix(h)] = f
    else:
        s[S_TAIL] = f
    s[S_HEAD] = f


@njit(cache=True, inline="always")
def _to_head(f, prv, nxt, head):
    """Link frame f at the head of a non-empty list; the new head."""
    prv[ix(f)] = -1
    nxt[ix(f)] = head
    prv[ix(head)] = f
    return f


@njit(cache=True, inline="always")
def _put(s, head, tail, old, oldlen, clock, t, devfree):
    """Hand the loop's list ends, LRU_old, clock, time and device to the cold paths."""
    s[S_HEAD], s[S_TAIL], s[S_OLD], s[S_OLDLEN], s[S_CLOCK] = head, tail, old, oldlen, clock
    s[S_T], s[S_DEV] = t, devfree


@njit(cache=True, inline="always")
def _get(s, cap):
    """What :func:`_put` handed out, as the cold path left it: (head, tail, old, oldlen,
    clock, device free time, whether the pool of ``cap`` frames is full)."""
    return (s[S_HEAD], s[S_TAIL], s[S_OLD], s[S_OLDLEN], s[S_CLOCK], s[S_DEV],
            s[S_USED] == cap)


@njit(cache=True, inline="always")
def _link_after(o, f, prv, nxt):
    """Link frame f right after frame o; True if f is the new tail."""
    b = nxt[ix(o)]
    prv[ix(f)] = o
    nxt[ix(f)] = b
    nxt[ix(o)] = f
    if b >= 0:
        prv[ix(b)] = f
        return False
    return True


@njit(cache=True, inline="always")
def _adjust_s(prv, nxt, isold, s):
    s[S_OLD], s[S_OLDLEN] = _adjust(prv, nxt, isold, s[S_LEN], s[S_OLD], s[S_OLDLEN])


@njit(cache=True)
def _remove(f, prv, nxt, isold, s):
    """buf_LRU_remove_block of frame f from a list longer than OLD_MIN_LEN."""
    if f == s[S_OLD]:
        o = prv[ix(f)]
        s[S_OLD] = o
        isold[ix(o)] = 1
        s[S_OLDLEN] += 1
    _unlink(f, prv, nxt, s)
    s[S_LEN] -= 1
    if isold[ix(f)]:
        s[S_OLDLEN] -= 1
    isold[ix(f)] = 0
    _adjust_s(prv, nxt, isold, s)


@njit(cache=True)
def _add_read(f, prv, nxt, isold, stamp, s):
    """buf_LRU_add_block(old=TRUE) of a page just read: at the head below 512 pages
    (stamped with the clock), after LRU_old from there on; buf_LRU_old_init at 512."""
    stamp[ix(f)] = 0
    if s[S_LEN] < OLD_MIN_LEN:
        _push_head(f, prv, nxt, s)
        stamp[ix(f)] = s[S_CLOCK]
    else:
        if _link_after(s[S_OLD], f, prv, nxt):
            s[S_TAIL] = f
        s[S_OLDLEN] += 1
    s[S_LEN] += 1
    if s[S_LEN] > OLD_MIN_LEN:
        isold[ix(f)] = 1
        _adjust_s(prv, nxt, isold, s)
    elif s[S_LEN] == OLD_MIN_LEN:              # buf_LRU_old_init
        q = s[S_HEAD]
        while q >= 0:
            isold[ix(q)] = 1
            q = nxt[ix(q)]
        s[S_OLD] = s[S_HEAD]
        s[S_OLDLEN] = s[S_LEN]
        _adjust_s(prv, nxt, isold, s)
    else:
        isold[ix(f)] = 0


@njit(cache=True)
def _make_young(f, prv, nxt, isold, stamp, s):
    """buf_LRU_make_block_young, step by step."""
    _remove(f, prv, nxt, isold, s)
    _push_head(f, prv, nxt, s)
    stamp[ix(f)] = s[S_CLOCK]
    s[S_LEN] += 1
    isold[ix(f)] = 0
    _adjust_s(prv, nxt, isold, s)


@njit(cache=True, inline="always")
def _victim(tail, fixed, prv, ready, dirty, t):
    """buf_LRU_free_from_common_LRU_list's choice: the last page that is clean, has
    landed and is not the buffer-fixed ``fixed`` one (one exists: the caller's pool is
    larger than what a get holds)."""
    f = tail
    while f == fixed or dirty[ix(f)] != 0 or ready[ix(f)] > t:
        f = prv[ix(f)]
    return f


@njit(cache=True)
def _take(p, fixed, fmap, prv, nxt, page, isold, acc, stamp, ready, dirty, s):
    """buf_page_init_for_read of page p at time ``s[S_T]``: a free frame while the pool
    fills, else the frame of :func:`_victim`, evicted step by step; the page added as
    a read, its read queued on the device.  Returns the frame."""
    if s[S_USED] < page.shape[0]:
        f = s[S_USED]
        s[S_USED] += 1
    else:
        f = _victim(s[S_TAIL], fixed, prv, ready, dirty, s[S_T])
        _remove(f, prv, nxt, isold, s)
        fmap[ix(page[ix(f)])] = -1
        s[S_CLOCK] += 1
    fmap[ix(p)] = f
    page[ix(f)] = p
    acc[ix(f)] = 0
    _add_read(f, prv, nxt, isold, stamp, s)
    ready[ix(f)] = _device(s)
    return f


@njit(cache=True, inline="always")
def _device(s):
    """A read asked for at ``s[S_T]`` on a FIFO device of ``s[S_READ]`` ns per read
    that is free from ``s[S_DEV]``: the time it lands."""
    start = s[S_T] if s[S_T] > s[S_DEV] else s[S_DEV]
    s[S_DEV] = start + s[S_READ]
    return s[S_DEV]


@njit(cache=True, inline="always")
def _space_of(d, base):
    sp = 0
    while sp + 1 < base.shape[0] and d >= base[sp + 1]:
        sp += 1
    return sp


@njit(cache=True, inline="always")
def _edge(d, base, area):
    """Whether dense page d is the first or last page of its read-ahead area."""
    if base.shape[0] == 1:
        r = d & (area - 1)
    else:
        r = (d - base[_space_of(d, base)]) & (area - 1)
    return r == 0 or r == area - 1


@njit(cache=True)
def _ra_area(d, base, size, fmap, acc, area):
    """buf_read_ahead_linear's test for the first access of dense page d, an area edge
    page (:func:`_edge`): the first page number of the area to read (in d's space), or
    -1.  A call: inlined into the loop, it slows every get (zipf 0.9/8,192: 604 against
    247 ms)."""
    sp = _space_of(d, base)
    pn = d - base[sp]
    r = pn & (area - 1)
    low = pn - r
    if pn % IBUF_BITMAP_PERIOD == 1 or low + area > size[sp]:
        return -1
    asc = -1 if r == 0 else 1                   # the order the accesses must go in
    limit = min(64 - THRESHOLD, area)           # at most this many fails
    fails = 0
    pred = 0
    for j in range(base[sp] + low, base[sp] + low + area):
        f = fmap[ix(j)]
        a = 0 if f < 0 else np.int64(acc[ix(f)])
        if a == 0:
            fails += 1
        elif pred > 0 and a != pred and (a > pred) != (asc > 0):
            fails += 1
        if fails > limit:
            return -1
        if a > 0:
            pred = a
    # the default leaf links (page number -+ 1): the first page reads the area before,
    # the last the one after, if there is one and it lies within the file
    if r == 0:
        if pn == 0:
            return -1
        t = pn - area
    else:
        if pn == size[sp] - 1:
            return -1
        t = pn + 1
    if t + area > size[sp]:
        return -1
    return t


@njit(cache=True)
def _read_area(d, low, area, base, fixed, fmap, prv, nxt, page, isold, acc, stamp, ready,
               dirty, s, bounds):
    """Read the pages of the area at page number ``low`` of dense page d's space that
    are not in the pool (change-buffer bitmap pages left out), each through
    buf_page_init_for_read: while the pool is full, evict the page of :func:`_victim`
    and add the new page after LRU_old, its read queued on the device; the old length
    through the two buf_LRU_old_adjust_len clamps (``bounds``: lo0, hi0, lo1, hi1);
    while it fills, :func:`_take` step by step."""
    sp = _space_of(d, base)
    lo0, hi0, lo1, hi1 = bounds[0], bounds[1], bounds[2], bounds[3]
    cap = page.shape[0]
    head, tail, old, oldlen, clock = s[S_HEAD], s[S_TAIL], s[S_OLD], s[S_OLDLEN], s[S_CLOCK]
    n = 0
    for j in range(low, low + area):
        if j % IBUF_BITMAP_PERIOD == 1:
            continue
        q = base[sp] + j
        if fmap[ix(q)] >= 0:
            continue
        n += 1
        if s[S_USED] < cap:
            s[S_HEAD], s[S_TAIL], s[S_OLD], s[S_OLDLEN], s[S_CLOCK] = \
                head, tail, old, oldlen, clock
            _take(q, fixed, fmap, prv, nxt, page, isold, acc, stamp, ready, dirty, s)
            head, tail, old, oldlen, clock = \
                s[S_HEAD], s[S_TAIL], s[S_OLD], s[S_OLDLEN], s[S_CLOCK]
            continue
        f = _victim(tail, fixed, prv, ready, dirty, s[S_T])
        if f == old:                             # buf_LRU_remove_block
            old = prv[ix(f)]
            isold[ix(old)] = 1
            oldlen += 1
        a, b = prv[ix(f)], nxt[ix(f)]
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
        k = old_clamp(oldlen, lo1, hi1)
        old = old_walk(prv, nxt, isold, old, k - oldlen)
        oldlen = k
        fmap[ix(page[ix(f)])] = -1
        clock += 1
        fmap[ix(q)] = f                          # buf_page_init_for_read
        page[ix(f)] = q
        acc[ix(f)] = 0
        stamp[ix(f)] = 0
        if _link_after(old, f, prv, nxt):        # buf_LRU_add_block(old=TRUE)
            tail = f
        isold[ix(f)] = 1
        oldlen += 1
        k = old_clamp(oldlen, lo0, hi0)
        old = old_walk(prv, nxt, isold, old, k - oldlen)
        oldlen = k
        ready[ix(f)] = _device(s)
    s[S_HEAD], s[S_TAIL], s[S_OLD], s[S_OLDLEN], s[S_CLOCK] = head, tail, old, oldlen, clock
    s[S_RA] += n


def _make(ra, timed):
    """The kernel with ``ra`` (linear read-ahead) and ``timed`` compile-time constants.

    ``timed`` adds what a replay on a virtual clock carries: a nanosecond clock that
    each get advances by ``cpu_ns``, access times in milliseconds (int64, read-ahead's
    order test reads them), per-frame read completion and modification (int64), a
    FIFO device of ``read_ns`` per read whose reads a get waits for, and the eviction's
    test that the tail is clean and has landed."""
    acc_dtype = np.int64 if timed else np.uint8

    def kernel(pages, counts, n_pages, cap, base, size, cpu_ns, read_ns):
        acc = np.zeros(cap, dtype=acc_dtype)
        return _body(pages, counts, n_pages, cap, base, size, cpu_ns, read_ns, acc, ra, timed,
                     _area(cap))
    return kernel


@njit(cache=True)
def _area(cap):
    """BUF_READ_AHEAD_AREA of a pool of ``cap`` pages: min(64, the smallest power of two
    >= cap / 32) (buf0rea.h; bufsim's ``PoolConfig.read_ahead_area``)."""
    a = 1
    while a < cap // 32:
        a *= 2
    return min(64, a)


@njit(cache=True, inline="always")
def _body(pages, counts, n_pages, cap, base, size, cpu_ns, read_ns, acc, ra, timed, area):
    """(hits, read-ahead pages) of the t=0 midpoint LRU with linear read-ahead over
    events (dense page, count), on a pool of ``cap`` frames (more than OLD_MIN_LEN + 1)
    whose spaces start at dense pages ``base`` and have ``size`` pages; ``acc`` holds
    the frames' access times (zeros)."""
    fmap = np.full(n_pages, -1, dtype=np.int32)
    prv = np.full(cap, -1, dtype=np.int32)
    nxt = np.full(cap, -1, dtype=np.int32)
    page = np.zeros(cap, dtype=np.int32)
    stamp = np.zeros(cap, dtype=np.int32)
    isold = np.zeros(cap, dtype=np.uint8)
    ready = np.zeros(cap, dtype=np.int64)
    dirty = np.zeros(cap, dtype=np.int64)
    if cap <= OLD_MIN_LEN + 1:
        raise ValueError("midpoint_ra: the pool must have more than OLD_MIN_LEN + 1 frames")
    s = np.zeros(11, dtype=np.int64)
    s[S_HEAD] = s[S_TAIL] = s[S_OLD] = -1
    s[S_READ] = read_ns
    window = cap * (DIV - RATIO) // (DIV * 4)
    lo0, hi0 = old_bounds(cap, RATIO)
    lo1, hi1 = old_bounds(cap - 1, RATIO)
    bounds = np.array([lo0, hi0, lo1, hi1], dtype=np.int64)
    deep = cap >= DEEP
    head = tail = old = np.int64(-1)
    oldlen = clock = np.int64(0)
    t = devfree = np.int64(0)
    full = False
    hits = 0
    n = pages.shape[0]
    for e in range(n):
        p = pages[ix(e)]
        if e + PREFETCH_AHEAD < n:
            prefetch(fmap, pages[ix(e + PREFETCH_AHEAD)])
            if deep:
                g = fmap[ix(pages[ix(e + FRAME_AHEAD)])]
                if g >= 0:
                    prefetch(acc, ix(g))
                    prefetch(stamp, ix(g))
                    prefetch(prv, ix(g))
                    prefetch(nxt, ix(g))
                    prefetch(isold, ix(g))
                    if timed:
                        prefetch(ready, ix(g))
        for _ in range(counts[ix(e)]):
            f = fmap[ix(p)]
            first = False
            if f >= 0:
                hits += 1
                if timed and ready[ix(f)] > t:
                    t = ready[ix(f)]                 # wait for its read
                if acc[ix(f)] == 0:
                    first = True
                    acc[ix(f)] = t // NS_PER_MS + 1 if timed else 1
                if not full or clock == 0 or clock < stamp[ix(f)] + window:
                    if not first:
                        if timed:
                            t += cpu_ns
                        continue
                elif f == head:                  # made young where it is
                    stamp[ix(f)] = clock
                    k5 = old_clamp(old_clamp(oldlen, lo1, hi1), lo0, hi0)
                    old = old_walk(prv, nxt, isold, old, k5 - oldlen)
                    oldlen = k5
                else:                            # one step to the head
                    a, b = prv[ix(f)], nxt[ix(f)]
                    nxt[ix(a)] = b
                    if b >= 0:
                        prv[ix(b)] = a
                    else:
                        tail = a
                    k = oldlen
                    o = old
                    if f == old:
                        o = a
                        isold[ix(o)] = 1
                    elif isold[ix(f)]:
                        k -= 1
                    isold[ix(f)] = 0
                    k5 = old_clamp(old_clamp(k, lo1, hi1), lo0, hi0)
                    old = old_walk(prv, nxt, isold, o, k5 - k)
                    oldlen = k5
                    head = _to_head(f, prv, nxt, head)
                    stamp[ix(f)] = clock
            elif full and oldlen >= 2 and clock + 1 >= window and \
                    (not timed or (dirty[ix(tail)] == 0 and ready[ix(tail)] <= t)):
                # evict the tail, add p after LRU_old and make it young: one step
                first = True
                f = tail
                tail = prv[ix(f)]
                nxt[ix(tail)] = -1
                if deep:                         # what the next miss reads of the tail
                    prefetch(prv, ix(tail))
                    prefetch(page, ix(tail))
                    prefetch(isold, ix(tail))
                    if timed:
                        prefetch(ready, ix(tail))
                        prefetch(dirty, ix(tail))
                k1 = old_clamp(oldlen - 1, lo1, hi1)
                k2 = old_clamp(k1 + 1, lo0, hi0)
                k3 = k2 - 1 if k2 > k1 else k2
                k5 = old_clamp(old_clamp(k3, lo1, hi1), lo0, hi0)
                old = old_walk(prv, nxt, isold, old, k5 + 1 - oldlen)
                oldlen = k5
                isold[ix(f)] = 0
                fmap[ix(page[ix(f)])] = -1
                clock += 1
                page[ix(f)] = p
                fmap[ix(p)] = f
                if timed:
                    start = t if t > devfree else devfree
                    devfree = start + read_ns
                    ready[ix(f)] = devfree
                    t = devfree
                acc[ix(f)] = t // NS_PER_MS + 1 if timed else 1
                head = _to_head(f, prv, nxt, head)
                stamp[ix(f)] = clock
            else:
                # a miss step by step: while the pool fills, before the window, or
                # when the tail cannot be freed as it is
                first = True
                _put(s, head, tail, old, oldlen, clock, t, devfree)
                f = _take(p, -1, fmap, prv, nxt, page, isold, acc, stamp, ready, dirty, s)
                if timed:
                    t = ready[ix(f)]
                acc[ix(f)] = t // NS_PER_MS + 1 if timed else 1
                if s[S_CLOCK] != 0 and s[S_CLOCK] >= stamp[ix(f)] + window:
                    _make_young(f, prv, nxt, isold, stamp, s)
                head, tail, old, oldlen, clock, devfree, full = _get(s, cap)
            if ra and first and _edge(np.int64(p), base, area):
                low = _ra_area(np.int64(p), base, size, fmap, acc, area)
                if low >= 0:
                    _put(s, head, tail, old, oldlen, clock, t, devfree)
                    _read_area(np.int64(p), low, area, base, f, fmap, prv, nxt, page, isold,
                               acc, stamp, ready, dirty, s, bounds)
                    head, tail, old, oldlen, clock, devfree, full = _get(s, cap)
            if timed:
                t += cpu_ns
    return hits, s[S_RA]


#: the rules with read-ahead, untimed; timed (``make bench``'s ``midpoint_ra_floor``); and
#: the rules alone, untimed (for this script's table)
midpoint_ra = njit(cache=True)(_make(True, False))
midpoint_ra_timed = njit(cache=True)(_make(True, True))
midpoint_no_ra = njit(cache=True)(_make(False, False))


def spaces(tablespaces):
    """(base, size) arrays of a trace's tablespaces, for :func:`midpoint_ra`."""
    return (np.ascontiguousarray(tablespaces.bases, dtype=np.int64),
            np.ascontiguousarray(tablespaces.sizes, dtype=np.int64))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gets", type=int, default=20_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    import bufsim
    from bufsim import CostModel, DeviceModel
    from floor_lru import floor_lru
    traces = {
        "zipf0.9": bufsim.synthetic.zipf_trace(args.gets, 1_000_000, 0.9, seed=42),
        "scan+hot": bufsim.synthetic.hot_and_scan_trace(
            n_gets_hot=args.gets // 2, hot_pages=20_000, alpha=0.8, scan_pages=200_000,
            scan_every=args.gets // 10, seed=7)}
    for name, tr in traces.items():
        tr = bufsim.Trace(list(tr), tr.tablespaces)
        ch = tr.materialize()
        pages = np.ascontiguousarray(ch.page, dtype=np.int64)
        counts = np.ascontiguousarray(ch.count, dtype=np.int64)
        base, size = spaces(tr.tablespaces)
        n = tr.tablespaces.n_pages
        for cap in (8192, 262144):
            cfg = bufsim.mysql56(pool_pages=cap, instances=1, old_blocks_time_ms=0,
                                 cost=CostModel(0, 0, 0, 0), device=DeviceModel.instant())
            runs = {"floor_lru": lambda: (floor_lru(pages, counts, n, cap), None),
                    "no read-ahead": lambda: midpoint_no_ra(pages, counts, n, cap, base, size,
                                                            0, 0),
                    "read-ahead": lambda: midpoint_ra(pages, counts, n, cap, base, size, 0, 0),
                    "read-ahead, timed": lambda: midpoint_ra_timed(pages, counts, n, cap, base,
                                                                   size, 0, 0),
                    "bufsim innodb_t0": lambda: _bufsim(tr, cfg)}
            out = {k: run() for k, run in runs.items()}      # compile, touch the pages
            for k in ("read-ahead", "read-ahead, timed"):
                if out[k] != out["bufsim innodb_t0"]:
                    raise SystemExit(f"{name}/{cap}: {k} gives (hits, read-ahead) {out[k]}, "
                                     f"bufsim {out['bufsim innodb_t0']}")
            best = {}
            for _ in range(args.repeat):           # interleaved: the machine's speed drifts
                for k, run in runs.items():
                    t0 = time.perf_counter()
                    run()
                    best[k] = min(best.get(k, np.inf), time.perf_counter() - t0)
            for k, (hits, n_ra) in out.items():
                print(f"{name:9s} {cap:7d}  {k:18s} hits {hits:9d}  read-ahead "
                      f"{'-' if n_ra is None else n_ra:>7}  {best[k] * 1e3:6.0f} ms  "
                      f"ratio to floor_lru {best['floor_lru'] / best[k]:4.2f}")


def _bufsim(trace, cfg):
    """(hits, read-ahead pages) of a bufsim replay."""
    import bufsim
    res = bufsim.replay(trace, cfg)
    hits = int(res.streams["gets"].sum() - res.streams["misses"].sum())
    return hits, int(res.totals["NUMBER_PAGES_READ_AHEAD"])


if __name__ == "__main__":
    main()
