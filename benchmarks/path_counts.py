"""Instructions, loads, stores, simulated cache misses and branch mispredictions per get
of one kernel on one of :mod:`paths`'s uniform traces, counted by valgrind's callgrind
(this machine's VM has no hardware counters: ``perf stat`` says ``<not supported>``).

Only the kernel calls are counted: callgrind starts uninstrumented, this script starts
its instrumentation and zeroes its counts through callgrind's client requests (a tiny C
helper built with ``gcc`` and ``valgrind/callgrind.h`` into a temporary folder) and
toggles collection around each kernel call (for bufsim, around every call of the
policy's kernel, ``registry.kernel``, so the replay's Python and NumPy are left out).
Each case is counted at two trace lengths and the difference divided by the difference
in gets, so what does not grow with the trace (the pool's fill, allocation) cancels.
Counts are deterministic: unlike times on a shared machine, a change's effect shows
in one run.  Numba compiles for valgrind's virtual CPU (its cache is keyed by CPU), so
the counted code is a compile of the same source for that target, the first run of each
kernel under valgrind compiling it (minutes).  Cycles are not simulated: instructions per
cycle can be estimated from a paths.py time of the same case.

Run from the repo root (the kernel ``ra``, ``duty``, ``t0`` or ``t1000``)::

    .venv/bin/python benchmarks/path_counts.py --case miss --kernel t0 [--gets 50000,250000]
"""
from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: callgrind's events, in its output's order, and the names printed for them
EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw", "Bc", "Bcm", "Bi",
          "Bim")
HELPER = """#include <valgrind/callgrind.h>
void cg_on(void){ CALLGRIND_START_INSTRUMENTATION; CALLGRIND_ZERO_STATS; }
void cg_toggle(void){ CALLGRIND_TOGGLE_COLLECT; }
void cg_dump(void){ CALLGRIND_DUMP_STATS; CALLGRIND_STOP_INSTRUMENTATION; }
"""


def _child(case: str, kernel: str, sizes: list[int], helper: str) -> None:
    """Under callgrind: time nothing, count each size's kernel calls (one dump each)."""
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    os.environ["BUFSIM_NO_CACHE"] = "1"
    import midpoint_duty
    import midpoint_ra
    import paths

    import bufsim
    from bufsim import CostModel, DeviceModel, PoolConfig, Trace, replay
    from bufsim.policies import registry

    cg = ctypes.CDLL(helper)

    def counted(fn):
        def call(*a):
            cg.cg_toggle()
            try:
                return fn(*a)
            finally:
                cg.cg_toggle()
        return call

    kernel_of = registry.kernel
    registry.kernel = lambda name: counted(kernel_of(name))
    common = dict(cost=CostModel(0, 0, 0, 0), device=DeviceModel.instant())
    cap = PoolConfig(policy="lru", pool_pages=paths.POOL, **common)
    cap = cap.instance_pages - cap.misc_pages
    for gets in sizes:
        if case == "scan":
            # make bench's scan+hot scaled down by 20 (a scan of 10,000 pages, still more
            # than the pool, after every 100,000 of ``gets`` hot gets): its read-ahead
            # and miss shares, and each length's scans a whole number
            tr = bufsim.synthetic.hot_and_scan_trace(
                n_gets_hot=gets, hot_pages=20_000, alpha=0.8, scan_pages=10_000,
                scan_every=100_000, seed=7)
        else:
            tr = bufsim.synthetic.uniform_trace(gets, paths.CASES[case], seed=3)
        tr = Trace(list(tr), tr.tablespaces, name=tr.name)
        with open(f"{helper}.gets", "a") as fh:     # the gets counted, for the parent
            print(int(tr.materialize().count.sum()), file=fh)
        arrs, base, size, n = midpoint_duty.kernel_inputs(tr)
        if kernel == "duty":
            fn = counted(lambda: midpoint_duty.midpoint_duty(*arrs, n, cap, base, size, 0,
                                                             2**63 - 1, 2**62))
        elif kernel == "ra":
            fn = counted(lambda: midpoint_ra.midpoint_ra_timed(arrs[0], arrs[1], n, cap, base,
                                                               size, 0, 0))
        else:
            cfg = bufsim.mysql56(pool_pages=paths.POOL, instances=1,
                                 old_blocks_time_ms=int(kernel[1:]), **common)
            fn = lambda: replay(tr, cfg)   # noqa: E731  (its kernel calls are counted)
        fn()                               # compile or load, uninstrumented
        cg.cg_on()
        fn()
        cg.cg_dump()


def _totals(path: Path) -> dict:
    ev = tot = None
    for line in path.read_text().splitlines():
        if line.startswith("events:"):
            ev = line.split()[1:]
        elif line.startswith("totals:"):
            tot = [int(x) for x in line.split()[1:]]
    return dict(zip(ev, tot))


def main(argv=None) -> int:
    import paths  # noqa: F401  (checks the script runs from a checkout with benchmarks/)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", required=True, choices=("hits", "young", "miss", "scan"),
                    help="a uniform trace of paths.py, or scan: make bench's scan+hot "
                    "scaled down (--gets hot gets, e.g. 200000,1000000; per get of "
                    "the whole trace)")
    ap.add_argument("--kernel", required=True, choices=("ra", "duty", "t0", "t1000"))
    ap.add_argument("--gets", default="50000,250000",
                    help="two trace lengths, the second larger (default 50000,250000)")
    ap.add_argument("--keep", help="copy callgrind's two output files to KEEP.1 and KEEP.2 "
                    "(for callgrind_annotate: the calls that are not inlined, such as "
                    "read-ahead's, are functions of their own)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.gets.split(",")]
    if len(sizes) != 2 or not 1000 <= sizes[0] < sizes[1]:
        ap.error(f"--gets must be two lengths, 1000 <= first < second, got {args.gets!r}")
    if args.child:
        _child(args.case, args.kernel, sizes, args.child)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        src, lib = Path(tmp, "cg.c"), Path(tmp, "libcg.so")
        src.write_text(HELPER)
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
        out = Path(tmp, "cg.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                        "--collect-atstart=no", "--cache-sim=yes", "--branch-sim=yes",
                        f"--callgrind-out-file={out}", sys.executable, __file__,
                        "--case", args.case, "--kernel", args.kernel, "--gets", args.gets,
                        "--child", str(lib)], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        small, large = _totals(Path(f"{out}.1")), _totals(Path(f"{out}.2"))
        gets = [int(x) for x in Path(f"{lib}.gets").read_text().split()]
        if args.keep:
            for j in (1, 2):
                shutil.copy(f"{out}.{j}", f"{args.keep}.{j}")
    per = {k: (large[k] - small[k]) / (gets[1] - gets[0]) for k in EVENTS}
    print(f"{args.case} {args.kernel}: per get  instructions {per['Ir']:.1f}  loads "
          f"{per['Dr']:.1f}  stores {per['Dw']:.1f}  D1 misses {per['D1mr'] + per['D1mw']:.2f}"
          f"  LL misses {per['DLmr'] + per['DLmw']:.3f}  branches {per['Bc']:.1f}  "
          f"mispredicted {per['Bcm'] + per['Bim']:.3f}")
    return 0


if __name__ == "__main__":
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    sys.exit(main())
