"""Paired timing of bench rows across checkouts: one worker process per checkout, the
rows run in each in turn, round after round (the order of the checkouts reversed every
other round), so that every checkout sees the machine in the same states; prints the
best CPU and wall seconds of each row in each checkout, and checks that the checkouts
agree on hits and read-ahead pages.

A row is ``TRACE POOL CONFIG``: TRACE ``zipf`` (make bench's zipf0.9, 1M pages, seed 42)
or ``scan`` (its scan+hot, seed 7), POOL in pages, CONFIG ``t0`` / ``t1000`` (bufsim
``mysql56`` with that old_blocks_time, one instance, zero costs, instant device, as
``make bench``'s InnoDB rows), ``lru``, or ``ra_floor`` (the checkout's own
benchmarks/midpoint_ra.py timed kernel, so a change of the floor shows too).  A replay
is timed as ``make bench`` times it (the whole ``replay`` call, result cache off); the
CPU time is the process's, which a loaded machine distorts less than wall time.

Each checkout compiles its kernels into its own numba cache folder (the checkout's
``.numba_cache``; the variable is cleared for the workers), so an old commit checked out
with ``git worktree add /tmp/old COMMIT`` can be timed beside this one::

    python benchmarks/paired.py --rounds 5 --row 'zipf 8192 t0' --row 'zipf 8192 ra_floor' \\
        old=/tmp/old new=.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def _worker(n_gets: int) -> None:
    """Serve rows read from stdin (one JSON line each, ``{"wall", "cpu", "gets", "info"}``)
    in the checkout that is the working directory."""
    sys.path[:0] = [os.path.join(os.getcwd(), "benchmarks"), os.getcwd()]
    os.environ["BUFSIM_NO_CACHE"] = "1"
    import numpy as np
    import bufsim
    import midpoint_ra
    from bufsim import CostModel, DeviceModel, PoolConfig, Trace, replay

    common = dict(cost=CostModel(0, 0, 0, 0), device=DeviceModel.instant())
    traces = {}
    warm = set()

    def trace_of(name):
        if name not in traces:
            if name == "zipf":
                tr = bufsim.synthetic.zipf_trace(n_gets, 1_000_000, 0.9, seed=42)
            elif name == "scan":
                tr = bufsim.synthetic.hot_and_scan_trace(
                    n_gets_hot=n_gets // 2, hot_pages=20_000, alpha=0.8, scan_pages=200_000,
                    scan_every=n_gets // 10, seed=7)
            else:
                raise SystemExit(f"trace must be zipf or scan, got {name!r}")
            tr = Trace(list(tr), tr.tablespaces, name=tr.name)
            ch = tr.materialize()
            traces[name] = (tr, np.ascontiguousarray(ch.page, dtype=np.int64),
                            np.ascontiguousarray(ch.count, dtype=np.int64))
        return traces[name]

    print(json.dumps({"ready": os.getcwd()}), flush=True)
    for line in sys.stdin:
        tname, pool, cname = line.split()
        pool = int(pool)
        trace, pages, counts = trace_of(tname)
        if cname == "ra_floor":
            cap = PoolConfig(policy="lru", pool_pages=pool, **common)
            cap = cap.instance_pages - cap.misc_pages
            base, size = midpoint_ra.spaces(trace.tablespaces)
            n = trace.tablespaces.n_pages
            midpoint_ra.midpoint_ra_timed(pages[:10], counts[:10], n, cap, base, size, 0, 0)
            c0, w0 = time.process_time(), time.perf_counter()
            out = midpoint_ra.midpoint_ra_timed(pages, counts, n, cap, base, size, 0, 0)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            info = [int(out[0]), int(out[1])]
        else:
            if cname == "lru":
                cfg = PoolConfig(policy="lru", pool_pages=pool, **common)
            elif cname in ("t0", "t1000"):
                cfg = bufsim.mysql56(pool_pages=pool, instances=1,
                                     old_blocks_time_ms=int(cname[1:]), **common)
            else:
                raise SystemExit(f"config must be t0, t1000, lru or ra_floor, got {cname!r}")
            if (cname, pool) not in warm:     # compile or load the kernel, untimed
                replay(bufsim.synthetic.zipf_trace(2000, 1000, 0.9, seed=0), cfg)
                warm.add((cname, pool))
            c0, w0 = time.process_time(), time.perf_counter()
            res = replay(trace, cfg)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            info = [int(res.streams["gets"].sum() - res.streams["misses"].sum())]
            if cname != "lru":
                info.append(int(res.totals["NUMBER_PAGES_READ_AHEAD"]))
        print(json.dumps(dict(wall=wall, cpu=cpu, gets=int(counts.sum()), info=info)),
              flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkouts", nargs="+", metavar="LABEL=DIR",
                    help="a label and the root of a checkout of bufsim")
    ap.add_argument("--row", action="append", required=True, metavar="'TRACE POOL CONFIG'",
                    help="a row to time (repeatable), e.g. 'zipf 8192 t0'")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (best of), 1..50")
    ap.add_argument("--gets", type=int, default=20_000_000, help="gets per trace")
    args = ap.parse_args(argv)
    if not 1 <= args.rounds <= 50:
        ap.error(f"--rounds must be in 1..50, got {args.rounds}")
    for row in args.row:
        if len(row.split()) != 3:
            ap.error(f"--row must be 'TRACE POOL CONFIG', got {row!r}")
    workers = {}
    for item in args.checkouts:
        label, sep, root = item.partition("=")
        if not sep or not os.path.isdir(os.path.join(root, "bufsim")):
            ap.error(f"checkout must be LABEL=DIR with DIR a bufsim checkout, got {item!r}")
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker",
                              str(args.gets)], cwd=root, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        p.stdout.readline()
        workers[label] = p
    best = {}
    status = 0
    try:
        for r in range(args.rounds):
            order = list(workers) if r % 2 == 0 else list(reversed(workers))
            for row in args.row:
                for label in order:
                    p = workers[label]
                    p.stdin.write(row + "\n")
                    p.stdin.flush()
                    d = json.loads(p.stdout.readline())
                    b = best.setdefault((label, row), dict(d, cpus=[], walls=[]))
                    b["cpus"].append(d["cpu"])
                    b["walls"].append(d["wall"])
            print(f"round {r + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    finally:
        for p in workers.values():
            p.stdin.close()
            p.wait()
    for row in args.row:
        infos = {best[label, row]["info"].__repr__() for label in workers}
        if len(infos) > 1:
            print(f"MISMATCH {row}: hits/read-ahead differ: {sorted(infos)}")
            status = 1
        for label in workers:
            b = best[label, row]
            cpu, wall = min(b["cpus"]), min(b["walls"])
            print(f"{row:20} {label:10} cpu {cpu:7.3f} s {b['gets'] / cpu / 1e6:7.2f} M gets/s  "
                  f"wall {wall:7.3f} s  hits/ra {b['info']}  cpu per round "
                  f"{' '.join(f'{x:.3f}' for x in b['cpus'])}")
    return status


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        _worker(int(sys.argv[2]))
    else:
        sys.exit(main())
