"""``midpoint_ra_floor`` plus the bookkeeping a bufsim replay must do on every event, get
and miss besides InnoDB's rules: a minimal Numba kernel that measures what that
bookkeeping costs, so that the InnoDB rows of ``make bench`` can be read against the
rules *and* the duties (the ``midpoint_duty_floor`` row).

It runs :mod:`midpoint_ra`'s timed kernel's rules (MySQL 5.6, ``innodb_old_blocks_time``
0, linear read-ahead, a FIFO device, a nanosecond clock; its cold paths, the warm-up
and read-ahead, are midpoint_ra's own functions) and adds what the replay does per
event and per get on the paths those rows take (bufsim.policies.innodb.fast):

- per event: the event's own CPU time and flag bits (``cpus``, ``flags``, as a trace
  carries them), whether it is counted (not re-latched) and whether a flag takes it
  off the plain path (modification, the adaptive hash index's paths: a return here,
  none in the bench's traces), whether the clock reached the stop time or the page
  cleaner's next pass (``t_lim``), the call's budget of gets (``budget``: a call
  stops there, resumable), the events done;
- per hit: the frame's list membership (``where``), as the replay's test for a page
  that stays where it is reads it;
- per miss: the synchronous read counted per stream and per tablespace (its space
  looked up), the eviction and whether the evicted page had been read ahead and never
  accessed (READ_AHEAD_EVICTED: its access time read), the page made young with its
  eviction (PAGES_MADE_YOUNG), the frame's membership and modification state reset,
  the free stack's slot written, the I/O wait and CPU summed per stream.

Its counts (gets, synchronous misses, hits, read-ahead pages) must equal bufsim
``innodb_t0``'s on the same trace (``make bench`` checks them).  Run from the repo root
to time it beside the floor and bufsim::

    .venv/bin/python -P benchmarks/midpoint_duty.py [--gets N] [--repeat R]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import midpoint_ra as mra  # noqa: E402
from midpoint_ra import (  # noqa: E402
    DEEP, DIV, FRAME_AHEAD, NS_PER_MS, RATIO, S_HEAD, S_OLD, S_RA, S_READ, S_TAIL, _area,
    _edge, _get, _put, _ra_area, _read_area, _space_of, _take, _to_head,
)
from bufsim.policies._state import (  # noqa: E402
    FLAG_AHI, FLAG_MODIFY, FLAG_RELATCH, FLAG_SHORTCUT, OLD_MIN_LEN, PREFETCH_AHEAD, ix,
    prefetch,
)
from bufsim.policies.innodb import old_bounds, old_clamp, old_walk  # noqa: E402

#: the kernel's counts, in the order it returns them
COUNTS = ("hits", "read_ahead", "gets", "misses", "evicted", "ra_evicted", "young", "events",
          "iowait_ns", "cpu_ns", "left")
SPECIAL = FLAG_MODIFY | FLAG_AHI | FLAG_SHORTCUT


@njit(cache=True)
def midpoint_duty(pages, counts, cpus, flags, n_pages, cap, base, size, read_ns, t_lim, budget):
    """The counts :data:`COUNTS` of the t=0 midpoint LRU with linear read-ahead over events
    (dense page, count, CPU ns per get, flags) on a pool of ``cap`` frames, with the
    replay's bookkeeping (see the module's docstring); -1 in ``events`` if an event is
    off the plain path."""
    out = np.zeros(len(COUNTS), dtype=np.int64)
    acc = np.zeros(cap, dtype=np.int64)
    fmap = np.full(n_pages, -1, dtype=np.int32)
    prv = np.full(cap, -1, dtype=np.int32)
    nxt = np.full(cap, -1, dtype=np.int32)
    page = np.zeros(cap, dtype=np.int32)
    stamp = np.zeros(cap, dtype=np.int32)
    isold = np.zeros(cap, dtype=np.uint8)
    # the frames' list membership: a frame, once taken, stays in the LRU here (no page
    # leaves the pool but by eviction, which reuses its frame), so every frame is 1
    where = np.ones(cap, dtype=np.uint8)
    ready = np.zeros(cap, dtype=np.int64)
    dirty = np.zeros(cap, dtype=np.int64)
    ffree = np.arange(cap - 1, -1, -1).astype(np.int32)
    smiss = np.zeros(base.shape[0], dtype=np.int64)
    if cap <= OLD_MIN_LEN + 1:
        raise ValueError("midpoint_duty: the pool must have more than OLD_MIN_LEN + 1 frames")
    area = _area(cap)
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
    hits = gets = misses = evicted = raev = young = iowait = cpu_sum = 0
    left = budget
    n = pages.shape[0]
    e = 0
    while e < n and left > 0:
        p = pages[ix(e)]
        c = counts[ix(e)]
        cpu = cpus[ix(e)]
        fl = np.int64(flags[ix(e)])
        if t >= t_lim:
            break
        if (fl & SPECIAL) != 0:
            out[7] = -1                              # off the plain path
            return out
        counted = 1 if (fl & FLAG_RELATCH) == 0 else 0
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
                    prefetch(where, ix(g))
                    prefetch(ready, ix(g))
        for _ in range(c):
            gets += counted
            f = fmap[ix(p)]
            first = False
            if f >= 0 and where[ix(f)] == 1:
                hits += 1
                if ready[ix(f)] > t:
                    iowait += ready[ix(f)] - t
                    t = ready[ix(f)]                 # wait for its read
                if acc[ix(f)] == 0:
                    first = True
                    acc[ix(f)] = t // NS_PER_MS + 1
                if not full or clock == 0 or clock < stamp[ix(f)] + window:
                    if not first:
                        t += cpu
                        cpu_sum += cpu
                        continue
                elif f == head:                      # made young where it is
                    young += isold[ix(f)]
                    stamp[ix(f)] = clock
                    k5 = old_clamp(old_clamp(oldlen, lo1, hi1), lo0, hi0)
                    old = old_walk(prv, nxt, isold, old, k5 - oldlen)
                    oldlen = k5
                else:                                # one step to the head
                    young += isold[ix(f)]
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
                    dirty[ix(tail)] == 0 and ready[ix(tail)] <= t:
                # evict the tail, add p after LRU_old and make it young: one step
                first = True
                misses += 1
                smiss[_space_of(np.int64(p), base)] += 1
                f = tail
                evicted += 1
                if acc[ix(f)] == 0:
                    raev += 1                        # read ahead, never accessed
                young += 1
                tail = prv[ix(f)]
                nxt[ix(tail)] = -1
                if deep:                             # what the next miss reads of the tail
                    prefetch(prv, ix(tail))
                    prefetch(page, ix(tail))
                    prefetch(isold, ix(tail))
                    prefetch(acc, ix(tail))
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
                ffree[ix(0)] = f                     # pushed and taken back
                clock += 1
                page[ix(f)] = p
                fmap[ix(p)] = f
                where[ix(f)] = 1
                dirty[ix(f)] = 0
                start = t if t > devfree else devfree
                devfree = start + read_ns
                ready[ix(f)] = devfree
                iowait += devfree - t
                t = devfree
                acc[ix(f)] = t // NS_PER_MS + 1
                head = _to_head(f, prv, nxt, head)
                stamp[ix(f)] = clock
            else:
                # a miss step by step (midpoint_ra's): while the pool fills, before the
                # window, or when the tail cannot be freed as it is
                first = True
                misses += 1
                smiss[_space_of(np.int64(p), base)] += 1
                _put(s, head, tail, old, oldlen, clock, t, devfree)
                f = _take(p, -1, fmap, prv, nxt, page, isold, acc, stamp, ready, dirty, s)
                where[ix(f)] = 1
                iowait += ready[ix(f)] - t
                t = ready[ix(f)]
                acc[ix(f)] = t // NS_PER_MS + 1
                if s[mra.S_CLOCK] != 0 and s[mra.S_CLOCK] >= stamp[ix(f)] + window:
                    mra._make_young(f, prv, nxt, isold, stamp, s)
                head, tail, old, oldlen, clock, devfree, full = _get(s, cap)
            if first and _edge(np.int64(p), base, area):
                low = _ra_area(np.int64(p), base, size, fmap, acc, area)
                if low >= 0:
                    _put(s, head, tail, old, oldlen, clock, t, devfree)
                    _read_area(np.int64(p), low, area, base, f, fmap, prv, nxt, page, isold,
                               acc, stamp, ready, dirty, s, bounds)
                    head, tail, old, oldlen, clock, devfree, full = _get(s, cap)
            t += cpu
            cpu_sum += cpu
        left -= c
        e += 1
    out[0], out[1], out[2], out[3], out[4], out[5] = hits, s[S_RA], gets, misses, evicted, raev
    out[6], out[7], out[8], out[9], out[10] = young, e, iowait, cpu_sum, left
    return out


def kernel_inputs(tr):
    """A trace's events as :func:`midpoint_duty` takes them: ``(pages, counts, cpus, flags)``
    arrays (int64, int64, int64, uint8), the spaces' ``base`` and ``size`` and the page count."""
    ch = tr.materialize()
    arrs = [np.ascontiguousarray(a, dtype=d) for a, d in
            ((ch.page, np.int64), (ch.count, np.int64), (ch.cpu_ns, np.int64),
             (ch.flags, np.uint8))]
    base, size = mra.spaces(tr.tablespaces)
    return arrs, base, size, tr.tablespaces.n_pages


def run(pages, counts, cpus, flags, tablespaces, cap):
    """:func:`midpoint_duty` over a whole trace at the bench's instant device, no stop
    time and no budget: ``dict`` of :data:`COUNTS`."""
    base, size = mra.spaces(tablespaces)
    out = midpoint_duty(pages, counts, cpus, flags, tablespaces.n_pages, cap, base, size, 0,
                        2**63 - 1, 2**62)
    return dict(zip(COUNTS, (int(x) for x in out)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gets", type=int, default=20_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    import bufsim
    from bufsim import CostModel, DeviceModel
    traces = {
        "zipf0.9": bufsim.synthetic.zipf_trace(args.gets, 1_000_000, 0.9, seed=42),
        "scan+hot": bufsim.synthetic.hot_and_scan_trace(
            n_gets_hot=args.gets // 2, hot_pages=20_000, alpha=0.8, scan_pages=200_000,
            scan_every=args.gets // 10, seed=7)}
    for name, tr in traces.items():
        tr = bufsim.Trace(list(tr), tr.tablespaces)
        arrs, base, size, n = kernel_inputs(tr)
        for cap in (8192, 262144):
            cfg = bufsim.mysql56(pool_pages=cap, instances=1, old_blocks_time_ms=0,
                                 cost=CostModel(0, 0, 0, 0), device=DeviceModel.instant())
            best = {}
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                mra.midpoint_ra_timed(arrs[0], arrs[1], n, cap, base, size, 0, 0)
                best["floor"] = min(best.get("floor", np.inf), time.perf_counter() - t0)
                t0 = time.perf_counter()
                duty = run(*arrs, tr.tablespaces, cap)
                best["duty"] = min(best.get("duty", np.inf), time.perf_counter() - t0)
                t0 = time.perf_counter()
                res = bufsim.replay(tr, cfg)
                best["bufsim"] = min(best.get("bufsim", np.inf), time.perf_counter() - t0)
            print(f"{name:9s} {cap:7d} floor {best['floor'] * 1e3:6.0f} ms, duty "
                  f"{best['duty'] * 1e3:6.0f} ms, bufsim t0 {best['bufsim'] * 1e3:6.0f} ms; "
                  f"counts {duty}; bufsim gets {int(res.streams['gets'].sum())} misses "
                  f"{int(res.streams['misses'].sum())}")


if __name__ == "__main__":
    main()
