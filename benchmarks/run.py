"""Replay throughput of bufsim's kernels, with libCacheSim's LRU and Clock measured in the same run.

Run with ``make bench`` (or ``python benchmarks/run.py [--quick]``) from the repo
root.  Writes ``benchmarks/results/bench-<UTC timestamp>.json`` (a new file: a run never
rewrites an earlier one; the docs' results page renders the newest full run) and prints
a table.  Every bufsim rate is gets
per second of wall time over the whole replay call (chunk feeding included;
the result cache off, ``$BUFSIM_NO_CACHE=1``, so that every round replays);
compile time is measured apart, on a tiny trace, before the timed runs.

libCacheSim runs its own C loop (``cache.process_trace`` over an oracleGeneral
binary trace file, see benchmarks/lcs.py): only that call is timed, not writing
the file.  Ratios are bufsim's rate over libCacheSim's on the same trace at the
same size, measured in this process: lru against libCacheSim's LRU, clock
against its Clock, the InnoDB configurations against its LRU.  The hits of lru
and clock must equal libCacheSim's exactly (column ``=lcs``).

Each trace and pool size is also replayed through ``floor_lru``
(benchmarks/floor_lru.py), a from-scratch minimal array LRU kernel: its hits must
equal bufsim ``lru``'s, and every bufsim row carries ``ratio_vs_floor``, its rate
over the floor's in this run (the issue-14 targets: ``lru`` >= 0.6, the InnoDB
configurations >= 0.4).  Each bufsim row also reports the engine's memory: bytes
of pool-sized state per frame and bytes of page-map state per distinct page.  A row
``floor_lru_unsigned`` times the same floor with its array indices typed unsigned, as
bufsim's fast loops index (numba then leaves out its negative-index fix-up): shown
beside the floor, so that the ratios can be read against both; the targets are
against ``floor_lru``.

And through ``midpoint_floor`` (benchmarks/midpoint_floor.py's ``one step+time+pf``), a
minimal kernel of InnoDB's t=0 midpoint rules, each get's list changes done at once,
with the per-frame time state and the fast loops' prefetch and nothing else: what the
rules themselves cost, measured in the same run.  The InnoDB rows carry
``ratio_vs_midpoint``, their rate over it.

And through ``midpoint_ra_floor`` (benchmarks/midpoint_ra.py's timed kernel): the same
rules as InnoDB has them from the first get (free list, 512-page rule, young window) with
linear read-ahead and a virtual clock, and nothing else.  Its hits and read-ahead pages
must equal bufsim ``innodb_t0``'s (column ``ra``; a difference fails the run): it does the
work the InnoDB rows do, so their ``ratio_vs_midpoint_ra`` is the part of the time that
is bufsim's own, and its ``ratio_vs_floor`` what the rules cost against the floor.  The InnoDB rows' target
(issue 38) is ``ratio_vs_midpoint_ra`` >= 0.6 (``midpoint_ra_target``); a row below it
is printed after the table (``BELOW TARGET (x ra)``), as one below the floor target is.

And through ``midpoint_duty_floor`` (benchmarks/midpoint_duty.py): midpoint_ra_floor's
rules plus the bookkeeping a replay must do per event, get and miss besides them (the
events' CPU times and flags, the stop and page-cleaner check, the budget, per-stream and
per-tablespace counts, evictions, frames' membership and free-stack state).  Its hits and
read-ahead pages must equal ``innodb_t0``'s too; the InnoDB rows carry
``ratio_vs_midpoint_duty``, their rate over it: the part of their time that is neither
the rules nor those duties.

A second section (benchmarks/mrc_vs_replay.py, key ``mrc_vs_replay`` of the
JSON) times one exact LRU miss-ratio curve against 20 LRU replays on a Zipf(0.9)
trace of the same length, whose hits must agree at every size.

A third (benchmarks/advise_bench.py, key ``advise``) times ``bufsim advise`` on a
two-thread CSV of 15M gets (2M with ``--quick``; target: under 90 s on 2 cores);
``--advise-only`` runs just that row.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

#: benchmarks/ (lcs.py and the floors are siblings) and the checkout's root, so that the
#: bufsim timed is this checkout's, not the one an editable install elsewhere points at
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

import lcs as lcs_bench  # noqa: E402  (benchmarks/lcs.py, not libcachesim)
from floor_lru import floor_lru, floor_lru_unsigned  # noqa: E402  (benchmarks/floor_lru.py)
from midpoint_floor import ONE_TIMED_PF as midpoint_kernel  # noqa: E402  (benchmarks/midpoint_floor.py)
import midpoint_ra  # noqa: E402  (benchmarks/midpoint_ra.py)
import midpoint_duty  # noqa: E402  (benchmarks/midpoint_duty.py)
import mrc_vs_replay as mrc_bench  # noqa: E402  (benchmarks/mrc_vs_replay.py)
import advise_bench  # noqa: E402  (benchmarks/advise_bench.py)

import bufsim  # noqa: E402
from bufsim import CostModel, DeviceModel, PoolConfig, Trace, replay  # noqa: E402
from bufsim.cache import OFF_ENV_VAR as cache_off_var  # noqa: E402
from bufsim.paths import atomic_path, repo_root  # noqa: E402

NO_COST = CostModel(0, 0, 0, 0)
#: bufsim configuration -> the libCacheSim policy it is compared with
REFERENCE = {"lru": "lru", "clock": "clock", "innodb_t0": "lru", "innodb_t1000": "lru"}
#: configurations that must hit exactly as often as their reference
EXACT = ("lru", "clock")


def configs():
    common = dict(cost=NO_COST, device=DeviceModel.instant())
    return {
        "lru": lambda n: PoolConfig(policy="lru", pool_pages=n, **common),
        "clock": lambda n: PoolConfig(policy="clock", pool_pages=n, **common),
        "innodb_t0": lambda n: bufsim.mysql56(pool_pages=n, instances=1, old_blocks_time_ms=0, **common),
        "innodb_t1000": lambda n: bufsim.mysql56(pool_pages=n, instances=1, old_blocks_time_ms=1000,
                                                 **common),
    }


def materialize(trace: Trace) -> Trace:
    """Generate the trace once so that generation is not timed."""
    return Trace(list(trace), trace.tablespaces, name=trace.name)


def time_replay(trace, cfg):
    """(seconds, result) of one replay (main takes the best of its rounds)."""
    t0 = time.perf_counter()
    res = replay(trace, cfg)
    return time.perf_counter() - t0, res


def libcachesim_runs(pages: np.ndarray, sizes):
    """{(policy, size): (seconds, hits, hashpower)} of libCacheSim's C loop over a page
    sequence written once, for policy in lru, clock; {} if libcachesim is absent.

    One untimed LRU pass comes first, so that one-off costs of the first run in the
    process (the file's pages, the allocator's arenas) land on no measured row, as
    compile_seconds() does for bufsim's kernels."""
    if lcs_bench.version() is None:
        return {}
    out = {}
    with lcs_bench.OracleTrace(pages) as t:
        t.run("lru", sizes[0])  # warm-up, not recorded
        for size in sizes:
            for policy in ("lru", "clock"):
                secs, hits = t.run(policy, size)
                out[policy, size] = (secs, hits, lcs_bench.default_hashpower(size))
    return out


#: A trace and pool whose floor_lru run takes less than this gets more rounds than
#: ``--repeat``, up to MAX_ROUNDS, so that about this much floor time backs its best (the
#: scan+hot floors take 33-60 ms, where one slow round moved a ratio by 0.1).
MIN_FLOOR_SECONDS = 0.5
MAX_ROUNDS = 12

#: issue-14 targets: bufsim rate / floor_lru rate, per configuration
FLOOR_TARGET = {"lru": 0.6, "innodb_t0": 0.4, "innodb_t1000": 0.4}
#: issue-38 targets: bufsim rate / midpoint_ra_floor rate (column ``x ra``), per configuration
RA_TARGET = {"innodb_t0": 0.6, "innodb_t1000": 0.6}


def time_floor(chunk, n_pages, capacity, kernel=floor_lru):
    """(seconds, hits, read-ahead pages or None) of one run of a minimal kernel (default
    the floor LRU) over a materialized chunk (main takes the best of its rounds)."""
    pages = np.ascontiguousarray(chunk.page, dtype=np.int64)
    counts = np.ascontiguousarray(chunk.count, dtype=np.int64)
    kernel(pages[:10], counts[:10], n_pages, capacity)  # compile or load, untimed
    t0 = time.perf_counter()
    out = kernel(pages, counts, n_pages, capacity)
    secs = time.perf_counter() - t0
    if isinstance(out, tuple):
        return secs, int(out[0]), int(out[1])
    return secs, int(out), None


def midpoint_ra_floor(tablespaces):
    """benchmarks/midpoint_ra.py's timed kernel over a trace of these tablespaces, at the
    bench's zero costs and instant device: ``(hits, read-ahead pages)``."""
    base, size = midpoint_ra.spaces(tablespaces)

    def run(pages, counts, n_pages, capacity):
        return midpoint_ra.midpoint_ra_timed(pages, counts, n_pages, capacity, base, size, 0, 0)
    return run


def midpoint_duty_floor(tablespaces, chunk):
    """benchmarks/midpoint_duty.py's kernel over a chunk of these tablespaces (its CPU
    times and flags), at the bench's instant device, no stop time and no budget:
    ``(hits, read-ahead pages)``."""
    base, size = midpoint_ra.spaces(tablespaces)
    cpus = np.ascontiguousarray(chunk.cpu_ns, dtype=np.int64)
    flags = np.ascontiguousarray(chunk.flags, dtype=np.uint8)

    def run(pages, counts, n_pages, capacity):
        out = midpoint_duty.midpoint_duty(pages, counts, cpus[:len(pages)], flags[:len(pages)],
                                          n_pages, capacity, base, size, 0, 2**63 - 1, 2**62)
        if out[7] < 0:
            raise SystemExit("midpoint_duty: an event is off the plain path")
        return int(out[0]), int(out[1])
    return run


def compile_seconds():
    """Compile (or load from cache) the kernels on a tiny trace."""
    trace = bufsim.synthetic.zipf_trace(2000, 1000, 0.9, seed=0)
    out = {}
    for name, make in configs().items():
        t0 = time.perf_counter()
        replay(trace, make(400))
        out[name] = time.perf_counter() - t0
    return out


def warm_first_replay_seconds():
    """Wall time of a fresh interpreter that imports bufsim and replays a small trace
    (the compiled-kernel cache is warm by now)."""
    code = ("import bufsim; t = bufsim.synthetic.zipf_trace(10000, 5000, 0.9, seed=1); "
            "bufsim.replay(t, bufsim.mysql56(pool_pages=1000))")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ.copy())
    return time.perf_counter() - t0


def advise_report(adv: dict) -> str:
    """One line for the advise row."""
    return (f"advise: {adv['n_gets']:,} gets, two threads: {adv['seconds']:.1f} s wall on "
            f"{adv['cores']} cores (target < {adv['target_seconds']:.0f} s; CPU "
            f"{adv.get('cpu_seconds_main', float('nan')):.0f} s here + "
            f"{adv.get('cpu_seconds_workers', float('nan')):.0f} s in workers, load average "
            f"{adv.get('load_average', ('?', '?'))[0]} -> {adv.get('load_average', ('?', '?'))[1]}"
            f"), exit {adv['exit_code']}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="2M gets instead of 20M")
    ap.add_argument("--repeat", type=int, default=3,
                    help="best of at least this many timings per row (the machine may be "
                         "shared; a floor under MIN_FLOOR_SECONDS gets more, up to MAX_ROUNDS)")
    ap.add_argument("--advise-only", action="store_true",
                    help="time only the advise row (benchmarks/advise_bench.py)")
    ap.add_argument("--replay-only", action="store_true",
                    help="time only the replay rows and their floors (no mrc_vs_replay, no "
                         "advise row)")
    args = ap.parse_args(argv)
    # the rows time replays, not the result cache: with it on, every round after the first
    # was a SHA-256 of the trace and a pickle load (bufsim.cache), not the engine
    os.environ[cache_off_var] = "1"
    if args.advise_only:
        adv = advise_bench.run(2_000_000 if args.quick else 15_000_000)
        print(advise_report(adv))
        return 0 if adv["exit_code"] == 0 else 1
    n_gets = 2_000_000 if args.quick else 20_000_000
    n_pages = 1_000_000
    sizes = [8192, 262_144]

    compile_s = compile_seconds()
    warm_s = warm_first_replay_seconds()
    traces = {
        "zipf0.9": materialize(bufsim.synthetic.zipf_trace(n_gets, n_pages, 0.9, seed=42)),
        "scan+hot": materialize(bufsim.synthetic.hot_and_scan_trace(
            n_gets_hot=n_gets // 2, hot_pages=20_000, alpha=0.8, scan_pages=200_000,
            scan_every=n_gets // 10, seed=7)),
    }
    rows = []
    rounds_of = {}   # "trace/pool" -> rounds timed
    floor_mismatch = []
    for tname, trace in traces.items():
        chunk = trace.materialize()
        gets = int(chunk.count.sum())
        flat = np.repeat(chunk.page, chunk.count)
        ref = libcachesim_runs(flat, sizes)
        del flat
        for size in sizes:
            cap = configs()["lru"](size)
            cap = cap.instance_pages - cap.misc_pages
            # the minimal kernels: floor_lru (the targets' reference); the same floor with
            # unsigned indices (as bufsim's fast loops index: shown, not a reference); the
            # t=0 midpoint rules, one step per get, with the time state and the fast loops'
            # prefetch and nothing else (benchmarks/midpoint_floor.py)
            kernels = {"floor_lru": floor_lru, "floor_lru_unsigned": floor_lru_unsigned,
                       "midpoint_floor": midpoint_kernel,
                       "midpoint_ra_floor": midpoint_ra_floor(trace.tablespaces),
                       "midpoint_duty_floor": midpoint_duty_floor(trace.tablespaces, chunk)}
            cfgs = {pname: make(size) for pname, make in configs().items()}
            # every kernel and configuration once per round, ``repeat`` rounds (more for a
            # short floor: MIN_FLOOR_SECONDS), the best time of each: the floors and the
            # replays see the machine in the same state (it drifts by up to 20% within
            # minutes when shared)
            best = {}
            rounds = args.repeat
            r = 0
            while r < rounds:
                r += 1
                for kname, kernel in kernels.items():
                    secs, hits, n_ra = time_floor(chunk, trace.tablespaces.n_pages, cap,
                                                  kernel=kernel)
                    if kname not in best or secs < best[kname][0]:
                        best[kname] = (secs, hits, n_ra)
                for pname, cfg in cfgs.items():
                    secs, res = time_replay(trace, cfg)
                    if pname not in best or secs < best[pname][0]:
                        best[pname] = (secs, res)
                if r == 1:   # a short floor gets more rounds (see MIN_FLOOR_SECONDS)
                    rounds = max(args.repeat, min(MAX_ROUNDS, math.ceil(
                        MIN_FLOOR_SECONDS / max(best["floor_lru"][0], 1e-6))))
            rounds_of[f"{tname}/{size}"] = rounds
            fsecs, fhits, _ = best["floor_lru"]
            msecs = best["midpoint_floor"][0]
            rsecs, rhits, rra = best["midpoint_ra_floor"]
            dsecs, dhits, dra = best["midpoint_duty_floor"]
            for kname in kernels:
                secs, hits, n_ra = best[kname]
                if kname == "floor_lru_unsigned" and hits != fhits:
                    floor_mismatch.append(f"{tname}/{size}: floor_lru_unsigned {hits} hits, "
                                          f"floor_lru {fhits}")
                rows.append(dict(trace=tname, gets=gets, pool_pages=size, policy=kname,
                                 seconds=secs, gets_per_s=gets / secs, hits=hits,
                                 read_ahead=n_ra, ratio_vs_floor=fsecs / secs, rounds=rounds))
            for lpol in ("lru", "clock"):
                if (lpol, size) in ref:
                    secs, hits, hp = ref[lpol, size]
                    rows.append(dict(trace=tname, gets=gets, pool_pages=size,
                                     policy=f"libcachesim_{lpol}", seconds=secs,
                                     gets_per_s=gets / secs, hits=hits, libcachesim_hits=None,
                                     hits_equal_libcachesim=None, ratio_vs_libcachesim=1.0,
                                     libcachesim_hashpower=hp))
            for pname in cfgs:
                secs, res = best[pname]
                hits = int(res.streams["gets"].sum() - res.streams["misses"].sum())
                if pname == "lru" and hits != fhits:
                    floor_mismatch.append(f"{tname}/{size}: lru {hits} hits, floor_lru {fhits}")
                n_ra = int(res.totals["NUMBER_PAGES_READ_AHEAD"]) if \
                    pname.startswith("innodb") else None
                if pname == "innodb_t0" and (hits, n_ra) != (rhits, rra):
                    floor_mismatch.append(f"{tname}/{size}: innodb_t0 {hits} hits, {n_ra} read "
                                          f"ahead; midpoint_ra_floor {rhits}, {rra}")
                if pname == "innodb_t0" and (hits, n_ra) != (dhits, dra):
                    floor_mismatch.append(f"{tname}/{size}: innodb_t0 {hits} hits, {n_ra} read "
                                          f"ahead; midpoint_duty_floor {dhits}, {dra}")
                mem = res.memory
                lpol = REFERENCE[pname]
                r = ref.get((lpol, size))
                rows.append(dict(
                    trace=tname, gets=gets, pool_pages=size, policy=pname, seconds=secs,
                    gets_per_s=gets / secs, hits=hits, read_ahead=n_ra, rounds=rounds,
                    reference=f"libcachesim_{lpol}",
                    libcachesim_hits=r[1] if r else None,
                    hits_equal_libcachesim=(hits == r[1]) if r and pname in EXACT else None,
                    ratio_vs_libcachesim=r[0] / secs if r else None,
                    ratio_vs_floor=fsecs / secs, floor_target=FLOOR_TARGET.get(pname),
                    ratio_vs_midpoint=(msecs / secs) if pname.startswith("innodb") else None,
                    ratio_vs_midpoint_ra=(rsecs / secs) if pname.startswith("innodb") else None,
                    midpoint_ra_target=RA_TARGET.get(pname),
                    ratio_vs_midpoint_duty=(dsecs / secs) if pname.startswith("innodb") else None,
                    bytes_per_frame=mem.get("bytes_per_frame"),
                    bytes_per_distinct_page=mem.get("bytes_per_distinct_page"),
                    distinct_pages=mem.get("distinct_pages"), frames=mem.get("frames")))
        del chunk
    mrc = None if args.replay_only else mrc_bench.run(quick=args.quick)
    adv = None if args.replay_only else advise_bench.run(2_000_000 if args.quick else 15_000_000)
    out = dict(
        when=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        machine=dict(python=platform.python_version(), cpu_count=os.cpu_count(),
                     platform=platform.platform()),
        libcachesim_version=lcs_bench.version(),
        libcachesim_method=("cache.process_trace(TraceReader(oracleGeneral file)), obj_id "
                            "page+1, obj_size 1, cache size in objects; only process_trace "
                            "timed"),
        quick=bool(args.quick), replay_only=bool(args.replay_only), n_gets=n_gets,
        n_pages=n_pages, repeat=args.repeat,
        compile_or_cache_load_seconds=compile_s,
        warm_process_first_replay_seconds=warm_s, results=rows, mrc_vs_replay=mrc,
        advise=adv,
    )
    res_dir = repo_root() / "benchmarks" / "results"
    res_dir.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = res_dir / f"bench-{stamp}.json"
    while path.exists():   # (two runs in one second: never overwrite a record)
        path = path.with_name(path.stem + "-1.json")
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(out, indent=2))
    print(f"libcachesim {out['libcachesim_version'] or 'not installed'}; "
          f"{n_gets} gets per trace")
    print(f"compile (or cache load) s: {', '.join(f'{k} {v:.2f}' for k, v in compile_s.items())}")
    print(f"warm process import + first small replay: {warm_s:.2f} s")
    print(f"{'trace':10} {'pool':>8} {'policy':18} {'Mgets/s':>8} {'x floor':>7} {'target':>6} "
          f"{'x mid':>6} {'x ra':>6} {'x duty':>6} {'x lcs':>6} {'vs':>6} {'hits':>10} {'ra':>8} {'lcs hits':>10} "
          f"{'=lcs':>5} {'B/frame':>7} {'B/page':>7}")
    for r in rows:
        ratio = "-" if r.get("ratio_vs_libcachesim") is None else f"{r['ratio_vs_libcachesim']:.2f}"
        vs = (r.get("reference") or "").replace("libcachesim_", "") or "-"
        lh = "-" if r.get("libcachesim_hits") is None else str(r["libcachesim_hits"])
        eq = {True: "yes", False: "NO", None: "-"}[r.get("hits_equal_libcachesim")]
        fl = "-" if r.get("ratio_vs_floor") is None else f"{r['ratio_vs_floor']:.2f}"
        tg = "-" if r.get("floor_target") is None else f"{r['floor_target']:.1f}"
        xm = "-" if r.get("ratio_vs_midpoint") is None else f"{r['ratio_vs_midpoint']:.2f}"
        xr = "-" if r.get("ratio_vs_midpoint_ra") is None else f"{r['ratio_vs_midpoint_ra']:.2f}"
        xd = "-" if r.get("ratio_vs_midpoint_duty") is None else \
            f"{r['ratio_vs_midpoint_duty']:.2f}"
        ra = "-" if r.get("read_ahead") is None else str(r["read_ahead"])
        bf = "-" if r.get("bytes_per_frame") is None else f"{r['bytes_per_frame']:.0f}"
        bp = "-" if r.get("bytes_per_distinct_page") is None else f"{r['bytes_per_distinct_page']:.0f}"
        print(f"{r['trace']:10} {r['pool_pages']:>8} {r['policy']:18} {r['gets_per_s'] / 1e6:8.2f} "
              f"{fl:>7} {tg:>6} {xm:>6} {xr:>6} {xd:>6} {ratio:>6} {vs:>6} {r['hits']:>10} {ra:>8} {lh:>10} "
              f"{eq:>5} {bf:>7} {bp:>7}")
    print("rounds (best of): " + ", ".join(f"{k} {v}" for k, v in rounds_of.items()))
    if mrc is not None:
        print(mrc_bench.report(mrc))
    if adv is not None:
        print(advise_report(adv))
    if floor_mismatch:
        print("MISMATCH: a minimal kernel differs from bufsim: " + "; ".join(floor_mismatch))
        return 1
    below = [r for r in rows if r.get("floor_target") is not None
             and r["ratio_vs_floor"] < r["floor_target"]]
    if below:
        print("BELOW TARGET (x floor): " + ", ".join(
            f"{r['trace']}/{r['pool_pages']}/{r['policy']} {r['ratio_vs_floor']:.2f}"
            for r in below))
    below_ra = [r for r in rows if r.get("midpoint_ra_target") is not None
                and r["ratio_vs_midpoint_ra"] < r["midpoint_ra_target"]]
    if below_ra:
        print("BELOW TARGET (x ra): " + ", ".join(
            f"{r['trace']}/{r['pool_pages']}/{r['policy']} {r['ratio_vs_midpoint_ra']:.2f} "
            f"(< {r['midpoint_ra_target']:.1f})" for r in below_ra))
    bad = [r for r in rows if r.get("hits_equal_libcachesim") is False]
    if bad:
        print("MISMATCH: " + ", ".join(f"{r['trace']}/{r['pool_pages']}/{r['policy']}"
                                       for r in bad))
        return 1
    if mrc is not None and not mrc["hits_equal"]:
        print("MISMATCH: exact_mrc hits differ from the LRU replays")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
