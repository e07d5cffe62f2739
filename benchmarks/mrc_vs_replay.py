"""One exact miss-ratio curve against one LRU replay per pool size, on the same trace.

:func:`bufsim.analytic.mrc.exact_mrc` gets the hits of an LRU pool of every
size from one pass (Mattson stack distances over a Fenwick tree,
``O(log n_pages)`` per event); a sweep of :func:`bufsim.replay` with
``policy="lru"`` needs one pass per size.  This benchmark times both on one
Zipf(0.9) trace of 20,000,000 gets over 1,000,000 pages (``--quick``:
2,000,000 gets) at 20 sizes, 1024..524,288 pages spaced log-uniformly, and
checks that the curve's hits equal every replay's hits exactly.

The trace is generated and materialized (1,048,576-event chunks held in
memory) before any timing; both sides then read the same chunks.  The kernels
are compiled (or loaded from Numba's cache) on a 2000-get trace over the same
pages first, so neither side is charged for compilation.  Wall times are
``time.perf_counter`` around the whole ``exact_mrc`` call and around each
``replay`` call (state allocation and chunk feeding included).

Run alone (``python benchmarks/mrc_vs_replay.py [--quick] [--json PATH]``)
or as a section of ``benchmarks/run.py``, which stores :func:`run`'s result
under ``"mrc_vs_replay"`` in its JSON.  Acceptance (issue 4): the curve at
least 2x faster than the 20 replays.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import bufsim
from bufsim import CostModel, DeviceModel, PoolConfig, Trace, replay
from bufsim.analytic.mrc import exact_mrc

N_PAGES = 1_000_000
ALPHA = 0.9
SEED = 42
#: 1024 .. 524288 pages, 20 sizes spaced log-uniformly
SIZES = tuple(int(s) for s in np.round(np.geomspace(1024, 524_288, 20)))
#: acceptance of issue 4: the curve at least this many times faster than the replays
MIN_SPEEDUP = 2.0


def lru_config(size: int) -> PoolConfig:
    return PoolConfig(policy="lru", pool_pages=size, cost=CostModel(0, 0, 0, 0),
                      device=DeviceModel.instant())


def _compile() -> None:
    """Compile (or load) the stack-distance and replay kernels on a 2000-get trace
    over the benchmark's 1,000,000 pages, so that the first large allocations of
    the process are not charged to either side either."""
    t = bufsim.synthetic.zipf_trace(2000, N_PAGES, ALPHA, seed=0)
    exact_mrc(t, [10, 100])
    replay(t, lru_config(100))


def run(quick: bool = False) -> dict:
    """Time the curve and the 20 replays; return the figures as a JSON-ready dict.

    Keys: ``n_gets, n_pages, alpha, seed, sizes, mrc_seconds,
    replay_seconds_total, speedup`` (replay total over curve, wall time),
    ``speedup_at_least_2x``, the same in process CPU time (``mrc_cpu_seconds,
    replay_cpu_seconds_total, speedup_cpu``: less sensitive to other load on
    the machine), ``hits_equal`` (all 20 sizes), and ``rows``: per size
    ``pool_pages, replay_seconds, replay_cpu_seconds, hits_mrc, hits_replay,
    equal, hit_ratio``.
    """
    n_gets = 2_000_000 if quick else 20_000_000
    _compile()
    gen = bufsim.synthetic.zipf_trace(n_gets, N_PAGES, ALPHA, seed=SEED)
    trace = Trace(list(gen), gen.tablespaces, name=gen.name)

    t0, c0 = time.perf_counter(), time.process_time()
    curve = exact_mrc(trace, SIZES)
    mrc_s, mrc_cpu = time.perf_counter() - t0, time.process_time() - c0

    rows = []
    for size, hits_mrc in zip(SIZES, curve["hits"].tolist()):
        t0, c0 = time.perf_counter(), time.process_time()
        res = replay(trace, lru_config(size))
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
        hits = int(res.streams["gets"].sum() - res.streams["misses"].sum())
        rows.append(dict(pool_pages=size, replay_seconds=secs, replay_cpu_seconds=cpu,
                         hits_mrc=int(hits_mrc), hits_replay=hits, equal=hits == int(hits_mrc),
                         hit_ratio=hits / n_gets))
    replay_s = sum(r["replay_seconds"] for r in rows)
    replay_cpu = sum(r["replay_cpu_seconds"] for r in rows)
    return dict(n_gets=n_gets, n_pages=N_PAGES, alpha=ALPHA, seed=SEED, sizes=list(SIZES),
                mrc_seconds=mrc_s, replay_seconds_total=replay_s, speedup=replay_s / mrc_s,
                speedup_at_least_2x=replay_s / mrc_s >= MIN_SPEEDUP,
                mrc_cpu_seconds=mrc_cpu, replay_cpu_seconds_total=replay_cpu,
                speedup_cpu=replay_cpu / mrc_cpu,
                hits_equal=all(r["equal"] for r in rows), rows=rows)


def report(res: dict) -> str:
    """A few lines for the console."""
    lines = [f"exact MRC vs {len(res['rows'])} LRU replays, zipf({res['alpha']}) "
             f"{res['n_gets']} gets over {res['n_pages']} pages",
             f"  MRC {res['mrc_seconds']:.2f} s, replays {res['replay_seconds_total']:.2f} s, "
             f"speedup {res['speedup']:.1f}x (>= {MIN_SPEEDUP:g}x: "
             f"{'yes' if res['speedup_at_least_2x'] else 'NO'}; CPU time "
             f"{res['mrc_cpu_seconds']:.2f} s vs {res['replay_cpu_seconds_total']:.2f} s, "
             f"{res['speedup_cpu']:.1f}x)",
             f"  hits equal at all sizes: {'yes' if res['hits_equal'] else 'NO'}",
             f"  {'pool':>8} {'replay s':>9} {'hit ratio':>9} {'=mrc':>5}"]
    for r in res["rows"]:
        lines.append(f"  {r['pool_pages']:>8} {r['replay_seconds']:9.2f} {r['hit_ratio']:9.4f} "
                     f"{'yes' if r['equal'] else 'NO':>5}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2M gets instead of 20M")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args(argv)
    res = run(args.quick)
    print(report(res))
    if args.json is not None:
        args.json.write_text(json.dumps(res, indent=2))
    return 0 if res["hits_equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
