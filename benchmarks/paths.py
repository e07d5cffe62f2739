"""The InnoDB rows of ``make bench`` split by the path a get takes: uniform traces whose
gets are nearly all of one kind, each replayed by bufsim (``innodb_t0``,
``innodb_t1000``) and by the two floors of the same run (``midpoint_ra_floor``: the t=0
rules; ``midpoint_duty_floor``: the rules and a replay's bookkeeping), so that the part
of bufsim's time that is neither shows per path rather than mixed in a trace:

- ``hits``: 4,000 pages on an 8,192-page pool: every get after the first of its page
  is a hit that moves nothing (nothing is ever evicted, so no page is made young);
- ``young``: 12,000 pages: about 2/3 hits, most of them past the young window (a move
  to the head), the rest misses;
- ``miss``: 1,000,000 pages: about 99% misses, each evicting the LRU tail (t=0: the
  page is made young with the eviction, one step), no read-ahead (no page's area is
  read in order).

A trace is one tablespace, one get per event, zero costs and an instant device, as the
bench's.  The duty floor's hits must equal bufsim ``innodb_t0``'s (a difference fails
the run).  Times are the best of ``--repeat`` rounds of process CPU seconds, the
kernels and replays interleaved in each round; the ratios are the ra floor's time over
each row's, as the bench's ``x ra`` column.  Run from the repo root::

    .venv/bin/python benchmarks/paths.py [--gets N] [--repeat R] [--case hits ...]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

import midpoint_duty  # noqa: E402  (benchmarks/midpoint_duty.py)
import midpoint_ra  # noqa: E402  (benchmarks/midpoint_ra.py)

import bufsim  # noqa: E402
from bufsim import CostModel, DeviceModel, PoolConfig, Trace, replay  # noqa: E402

#: case -> distinct pages of its uniform trace (see the module's docstring)
CASES = {"hits": 4000, "young": 12000, "miss": 1_000_000}
POOL = 8192


def run_case(pages: int, gets: int, repeat: int) -> dict:
    """Best CPU seconds of ``ra``, ``duty``, ``t0`` and ``t1000`` on a uniform trace over
    ``pages`` pages, with the duty floor's and ``t0``'s hits."""
    common = dict(cost=CostModel(0, 0, 0, 0), device=DeviceModel.instant())
    tr = bufsim.synthetic.uniform_trace(gets, pages, seed=3)
    tr = Trace(list(tr), tr.tablespaces, name=tr.name)
    arrs, base, size, n = midpoint_duty.kernel_inputs(tr)
    cap = PoolConfig(policy="lru", pool_pages=POOL, **common)
    cap = cap.instance_pages - cap.misc_pages
    cfgs = {f"t{ms}": bufsim.mysql56(pool_pages=POOL, instances=1, old_blocks_time_ms=ms,
                                     **common) for ms in (0, 1000)}
    small = [a[:100] for a in arrs]   # compile or load, untimed
    midpoint_ra.midpoint_ra_timed(small[0], small[1], n, cap, base, size, 0, 0)
    midpoint_duty.midpoint_duty(*small, n, cap, base, size, 0, 2**63 - 1, 2**62)
    for cfg in cfgs.values():
        replay(bufsim.synthetic.zipf_trace(2000, 1000, 0.9, seed=0), cfg)
    best = {}
    hits = {}

    def clock(name, fn):
        c0 = time.process_time()
        out = fn()
        best[name] = min(best.get(name, np.inf), time.process_time() - c0)
        return out

    for _ in range(repeat):
        clock("ra", lambda: midpoint_ra.midpoint_ra_timed(arrs[0], arrs[1], n, cap, base, size,
                                                          0, 0))
        out = clock("duty", lambda: midpoint_duty.midpoint_duty(
            *arrs, n, cap, base, size, 0, 2**63 - 1, 2**62))
        hits["duty"] = int(out[0])
        for name, cfg in cfgs.items():
            res = clock(name, lambda: replay(tr, cfg))
            hits[name] = int(res.streams["gets"].sum() - res.streams["misses"].sum())
    return dict(best, hits=hits)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gets", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--case", action="append", choices=sorted(CASES),
                    help="a case to time (repeatable; default all)")
    args = ap.parse_args(argv)
    if args.gets < 1000 or args.repeat < 1:
        ap.error(f"--gets must be >= 1000 and --repeat >= 1, got {args.gets}, {args.repeat}")
    os.environ["BUFSIM_NO_CACHE"] = "1"
    status = 0
    print(f"{'case':6} {'ra ms':>7} {'duty ms':>7} {'t0 ms':>7} {'t1000 ms':>8} "
          f"{'duty/ra':>7} {'x ra t0':>7} {'x ra t1000':>10} {'x duty t0':>9}  hits t0")
    for case in args.case or list(CASES):
        r = run_case(CASES[case], args.gets, args.repeat)
        print(f"{case:6} {r['ra'] * 1e3:7.0f} {r['duty'] * 1e3:7.0f} {r['t0'] * 1e3:7.0f} "
              f"{r['t1000'] * 1e3:8.0f} {r['ra'] / r['duty']:7.2f} {r['ra'] / r['t0']:7.2f} "
              f"{r['ra'] / r['t1000']:10.2f} {r['duty'] / r['t0']:9.2f}  {r['hits']['t0']}",
              flush=True)
        if r["hits"]["duty"] != r["hits"]["t0"]:
            print(f"MISMATCH {case}: midpoint_duty_floor {r['hits']['duty']} hits, innodb_t0 "
                  f"{r['hits']['t0']}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
