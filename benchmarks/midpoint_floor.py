"""What InnoDB's midpoint rules cost on this machine, without bufsim: minimal Numba
kernels timed beside :func:`floor_lru` in one process, on the bench's Zipf trace.

``rules``
    The 5.6 LRU at ``old_blocks_time`` = 0 on a free-list-less pool: a miss evicts
    the tail, inserts the page after ``LRU_old`` and (t=0) moves it to the head at
    once; a hit moves a page to the head when it left the young window
    (freed_page_clock); ``buf_LRU_old_adjust_len`` after every list change.
    Per-frame prev/next/page/stamp int32 and the old flag uint8.
``rules+time``
    The same plus what a faithful replay has to carry per frame and per get: the
    list id (uint8), access time, read completion and oldest modification (int64),
    a nanosecond clock, a FIFO device queue, the in-flight and dirty-tail tests.

``...+prefetch``
    The same kernels (and ``floor_lru``) with the prefetch bufsim's fast loops issue:
    the frame-map entry of the event 16 ahead (:func:`bufsim.policies._state.prefetch`).
``one step``, ``one step+time+pf``
    The same rules with a get's list changes done at once (:func:`_body` with ``one_step``):
    while the list is full, the old pages are its last ``oldlen``, so every
    ``buf_LRU_old_adjust_len`` is a clamp of that count and ``LRU_old`` moves once per
    get, by the net difference.  A miss puts the page straight at the head.  Same hits,
    same final list, old flags and ``LRU_old`` as the step-by-step kernels (checked
    here before timing, and by tests/test_bench_kernels.py).

None is InnoDB (no 512-page warm-up, read-ahead, free list, page cleaner or
counters): their hits are near bufsim ``innodb_t0``'s, not equal; and with
old_blocks_time 0 they make a read page young at once, where InnoDB waits until the
freed-page clock has passed the window (the first few thousand evictions).  They
measure what the midpoint rules cost when nothing else is done; the one-step
kernels are the faster by 1.6-2.5x (2026-11-27).  ``make bench`` times
``one step+time+pf`` as its ``midpoint_floor`` row.  Run from the repo root::

    .venv/bin/python -P benchmarks/midpoint_floor.py [--gets N]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from floor_lru import floor_lru, floor_lru_prefetch  # noqa: E402
from bufsim.policies._state import PREFETCH_AHEAD, prefetch  # noqa: E402
from bufsim.policies.innodb import old_bounds, old_clamp, old_walk  # noqa: E402

RATIO, DIV, TOL, NON_OLD_MIN = 378, 1024, 20, 5   # innodb_old_blocks_pct=37; buf0lru.h


@njit(cache=True, inline="always")
def _adjust(prv, nxt, isold, length, old, oldlen):
    """buf_LRU_old_adjust_len."""
    new_len = min(length * RATIO // DIV, length - (TOL + NON_OLD_MIN))
    while True:
        if oldlen + TOL < new_len:
            old = prv[old]
            oldlen += 1
            isold[old] = 1
        elif oldlen > new_len + TOL:
            isold[old] = 0
            old = nxt[old]
            oldlen -= 1
        else:
            return old, oldlen


@njit(cache=True, inline="always")
def _warm_up(p, used, cap, fmap, prv, nxt, page, isold, where, head, tail, old, oldlen):
    """A miss before the pool is full: page p takes the next frame, at the head; the
    last one sets the old sublist (buf_LRU_old_init).  Returns ``(used, head, tail, old,
    oldlen)``; the list is ``used`` long."""
    f = used
    used += 1
    page[f] = p
    fmap[p] = f
    where[f] = 1
    prv[f] = -1
    nxt[f] = head
    if head >= 0:
        prv[head] = f
    else:
        tail = f
    head = f
    if used == cap:                             # buf_LRU_old_init
        q = head
        while q >= 0:
            isold[q] = 1
            q = nxt[q]
        old, oldlen = _adjust(prv, nxt, isold, used, head, used)
    return used, head, tail, old, oldlen


def _midpoint(timed, pf=False, one_step=False):
    """The kernel with ``timed``, ``pf`` and ``one_step`` compile-time constants, so that
    ``rules`` carries none of the time state's work and no prefetch."""
    return njit(cache=True)(_make(timed, pf, one_step))


def _make(timed, pf, one_step):
    def midpoint(pages, counts, n_pages, cap):
        return _body(pages, counts, n_pages, cap, timed, pf, one_step)[0]
    return midpoint


@njit(cache=True, inline="always")
def _final(hits, head, nxt, page, isold, old, oldlen):
    """(hits, LRU_old's page, old length, the list from the head as page * 2 + old flag)."""
    order = np.empty(nxt.shape[0], dtype=np.int64)
    q = head
    i = 0
    while q >= 0:
        order[i] = np.int64(page[q]) * 2 + isold[q]
        i += 1
        q = nxt[q]
    return hits, np.int64(page[old]), oldlen, order[:i]


@njit(cache=True)
def final_state(pages, counts, n_pages, cap, one_step):
    """The untimed kernel's hits and final list (:func:`_final`), for the tests that
    hold the one-step rules to the step-by-step ones."""
    hits, head, nxt, page, isold, old, oldlen = _body(pages, counts, n_pages, cap, False, False,
                                                      one_step)
    return _final(hits, head, nxt, page, isold, old, oldlen)


@njit(cache=True, inline="always")
def _body(pages, counts, n_pages, cap, timed, pf, one_step):
    """Hits and final list of the minimal t=0 midpoint LRU (``timed``: with the time
    state; ``pf``: with the prefetch; ``one_step``: each get's list changes at once).

    Step by step, every list change is followed by ``_adjust``.  In one step: while the
    list is full its old pages are its last ``oldlen``, so each ``_adjust`` is a clamp of
    that count (``old_clamp``) and LRU_old moves once per get by the net difference
    (``old_walk``); a miss after the warm-up (evict the tail, insert after LRU_old, make
    it young) puts the page straight at the head.  Both end in the same state (``main``
    and tests/test_bench_kernels.py check)."""
    fmap = np.full(n_pages, -1, dtype=np.int32)
    prv = np.full(cap, -1, dtype=np.int32)
    nxt = np.full(cap, -1, dtype=np.int32)
    page = np.zeros(cap, dtype=np.int32)
    stamp = np.zeros(cap, dtype=np.int32)
    isold = np.zeros(cap, dtype=np.uint8)
    where = np.zeros(cap, dtype=np.uint8)
    access = np.zeros(cap, dtype=np.int64)
    ready = np.zeros(cap, dtype=np.int64)
    dirty = np.zeros(cap, dtype=np.int64)
    window = cap * (DIV - RATIO) // (DIV * 4)
    head = tail = old = -1
    length = oldlen = used = clock = hits = 0
    t = devfree = 0
    # one step: the clamps' bounds at the full list's length and one less
    lo0, hi0 = old_bounds(cap, RATIO)
    lo1, hi1 = old_bounds(cap - 1, RATIO)
    n = pages.shape[0]
    for e in range(n):
        p = pages[e]
        if pf and e + PREFETCH_AHEAD < n:
            prefetch(fmap, pages[e + PREFETCH_AHEAD])
        for _ in range(counts[e]):
            f = fmap[p]
            if timed:
                t += 1000
            if f >= 0 and (not timed or where[f] == 1):
                hits += 1
                if timed:
                    if ready[f] > t:
                        t = ready[f]
                if clock != 0 and clock >= stamp[f] + window and f != head:
                    a, b = prv[f], nxt[f]       # unlink f (not the head)
                    nxt[a] = b
                    if b >= 0:
                        prv[b] = a
                    else:
                        tail = a
                    if one_step:
                        k = oldlen
                        o = old
                        if f == old:
                            o = a               # the page above takes its place
                            isold[o] = 1
                        elif isold[f]:
                            k -= 1
                        isold[f] = 0
                        k5 = old_clamp(old_clamp(k, lo1, hi1), lo0, hi0)
                        old = old_walk(prv, nxt, isold, o, k5 - k)
                        oldlen = k5
                    else:
                        if f == old:
                            old = a
                            isold[old] = 1
                            oldlen += 1
                        if isold[f]:
                            oldlen -= 1
                        isold[f] = 0
                        old, oldlen = _adjust(prv, nxt, isold, length - 1, old, oldlen)
                    prv[f] = -1                 # push f at the head
                    nxt[f] = head
                    prv[head] = f
                    head = f
                    stamp[f] = clock
                    if not one_step:
                        old, oldlen = _adjust(prv, nxt, isold, length, old, oldlen)
                continue
            if used < cap:                      # warm-up: push at the head
                used, head, tail, old, oldlen = _warm_up(p, used, cap, fmap, prv, nxt, page,
                                                         isold, where, head, tail, old, oldlen)
                length = used
                continue
            if timed and (dirty[tail] != 0 or ready[tail] > t):
                continue                        # (never: nothing is dirty, reads land)
            f = tail                            # evict the tail (old)
            if one_step:                        # f ends at the head
                tail = prv[f]
                nxt[tail] = -1
                k1 = old_clamp(oldlen - 1, lo1, hi1)   # the tail's removal
                k2 = old_clamp(k1 + 1, lo0, hi0)       # f after LRU_old: old, LRU_old if k2 == k1
                k3 = k2 - 1 if k2 > k1 else k2      # f's removal
                k5 = old_clamp(old_clamp(k3, lo1, hi1), lo0, hi0)
                old = old_walk(prv, nxt, isold, old, k5 + 1 - oldlen)  # (places one less)
                oldlen = k5
                isold[f] = 0
            else:
                if f == old:
                    old = prv[f]
                    isold[old] = 1
                    oldlen += 1
                tail = prv[f]
                nxt[tail] = -1
                length -= 1
                if isold[f]:
                    oldlen -= 1
                isold[f] = 0
                old, oldlen = _adjust(prv, nxt, isold, length, old, oldlen)
            fmap[page[f]] = -1
            clock += 1
            page[f] = p
            fmap[p] = f
            if timed:
                access[f] = 0
                dirty[f] = 0
                where[f] = 1
                start = t if t > devfree else devfree
                devfree = start + 100
                ready[f] = devfree
                t = devfree
                access[f] = t // 1_000_000 + 1
            if not one_step:
                stamp[f] = 0
                b = nxt[old]                    # insert after LRU_old
                prv[f] = old
                nxt[f] = b
                nxt[old] = f
                if b >= 0:
                    prv[b] = f
                else:
                    tail = f
                length += 1
                oldlen += 1
                isold[f] = 1
                old, oldlen = _adjust(prv, nxt, isold, length, old, oldlen)
                if f == old:                    # t=0: made young at its first access
                    old = prv[f]
                    isold[old] = 1
                    oldlen += 1
                a, b = prv[f], nxt[f]
                nxt[a] = b
                if b >= 0:
                    prv[b] = a
                else:
                    tail = a
                if isold[f]:
                    oldlen -= 1
                isold[f] = 0
                old, oldlen = _adjust(prv, nxt, isold, length - 1, old, oldlen)
            prv[f] = -1                         # push f at the head
            nxt[f] = head
            prv[head] = f
            head = f
            stamp[f] = clock
            if not one_step:
                old, oldlen = _adjust(prv, nxt, isold, length, old, oldlen)
    return hits, head, nxt, page, isold, old, oldlen


RULES, TIMED = _midpoint(False), _midpoint(True)
RULES_PF, TIMED_PF = _midpoint(False, True), _midpoint(True, True)
#: the same rules, one step per get
ONE, ONE_TIMED_PF = _midpoint(False, one_step=True), _midpoint(True, True, one_step=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gets", type=int, default=20_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    import bufsim
    tr = bufsim.synthetic.zipf_trace(args.gets, 1_000_000, 0.9, seed=42)
    ch = bufsim.Trace(list(tr), tr.tablespaces).materialize()
    pages = np.ascontiguousarray(ch.page, dtype=np.int64)
    counts = np.ascontiguousarray(ch.count, dtype=np.int64)
    n = tr.tablespaces.n_pages
    kernels = {"floor_lru": lambda cap: floor_lru(pages, counts, n, cap),
               "rules": lambda cap: RULES(pages, counts, n, cap),
               "rules+time": lambda cap: TIMED(pages, counts, n, cap),
               "floor+prefetch": lambda cap: floor_lru_prefetch(pages, counts, n, cap),
               "rules+prefetch": lambda cap: RULES_PF(pages, counts, n, cap),
               "rules+time+prefetch": lambda cap: TIMED_PF(pages, counts, n, cap),
               "one step": lambda cap: ONE(pages, counts, n, cap),
               "one step+time+pf": lambda cap: ONE_TIMED_PF(pages, counts, n, cap)}
    for cap in (8192, 262144):
        a, b = final_state(pages, counts, n, cap, False), final_state(pages, counts, n, cap, True)
        if a[:3] != b[:3] or not np.array_equal(a[3], b[3]):
            raise SystemExit(f"pool {cap}: the one-step rules end in another state than the "
                             f"step-by-step ones: {a[:3]} against {b[:3]}")
        for run in kernels.values():            # compile, and touch the pages once
            run(cap)
        cpu, hits = {}, {}
        for _ in range(args.repeat):            # interleaved: the machine's speed drifts
            for name, run in kernels.items():
                t0 = time.process_time()
                hits[name] = run(cap)
                cpu.setdefault(name, []).append(time.process_time() - t0)
        floor = min(cpu["floor_lru"])
        for name in kernels:
            best = min(cpu[name])
            print(f"pool {cap:7d}  {name:19s} hits {hits[name]:10d}  CPU {best:6.3f} s  "
                  f"{args.gets / best / 1e6:6.1f} M gets/s  ratio to floor_lru {floor / best:4.2f}")


if __name__ == "__main__":
    main()
