"""Wall time of ``bufsim advise`` on a two-thread CSV trace (issue 36: < 90 s on 2 cores).

The trace (written once to ``build/bench/advise-<N>.csv``, then reused): an OLTP thread
whose gets fall uniformly on a hot set of ``HOT`` pages of space 1, one get every 20 us,
and a batch thread that, from second 2 on, reads a table of ``BIG`` pages of space 2 in
order, ``ROWS`` rows (gets) a page, 2 us a row, pausing a second between passes, as
many passes as the gets allow.  Half the gets are the OLTP thread's.  Columns
``space,page,time_ns,thread``, one row per get, in time order.

Timed: ``bufsim.cli.main(["advise", CSV, "--no-progress", "-o", REPORT.md])`` in this
process, reading the CSV included (the replays run in worker processes, one per core).
Besides the wall time, the CPU time of this process and of its finished workers (user +
system, ``resource.getrusage``) and the load average before and after: on a shared
machine the wall time says little, while ``cpu_seconds`` / cores bounds what an idle
machine would take from below.
"""
from __future__ import annotations

import contextlib
import io
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

HOT = 20_000
BIG = 200_000
ROWS = 20
SEED = 36


def write_csv(path: Path, n_gets: int) -> None:
    rng = np.random.default_rng(SEED)
    n_oltp = n_gets // 2
    n_scan = n_gets - n_oltp
    oltp_t = np.arange(n_oltp, dtype=np.int64) * 20_000
    pages = (np.arange(n_scan, dtype=np.int64) // ROWS) % BIG
    passes = (np.arange(n_scan, dtype=np.int64) // ROWS) // BIG
    scan_t = 2_000_000_000 + np.arange(n_scan, dtype=np.int64) * 2_000 + passes * 1_000_000_000
    df = pd.DataFrame({
        "space": np.concatenate([np.ones(n_oltp, dtype=np.int64), np.full(n_scan, 2)]),
        "page": np.concatenate([rng.integers(0, HOT, n_oltp), pages]),
        "time_ns": np.concatenate([oltp_t, scan_t]),
        "thread": np.concatenate([np.full(n_oltp, "oltp"), np.full(n_scan, "batch")])})
    df = df.sort_values("time_ns", kind="stable")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    df.to_csv(tmp, index=False)
    os.replace(tmp, path)


def run(n_gets: int = 15_000_000, root: Path | None = None) -> dict:
    from bufsim.cli import main
    from bufsim.paths import repo_root
    root = root or repo_root()
    csv = root / "build" / "bench" / f"advise-{n_gets}.csv"
    if not csv.exists():
        write_csv(csv, n_gets)
    out = csv.with_suffix(".md")
    import resource

    def cpu():
        a, b = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
        return a.ru_utime + a.ru_stime, b.ru_utime + b.ru_stime
    buf = io.StringIO()
    load0 = os.getloadavg()[0]
    c0 = cpu()
    t0 = time.perf_counter()
    with contextlib.redirect_stderr(buf):
        code = main(["advise", str(csv), "--no-progress", "-o", str(out)])
    secs = time.perf_counter() - t0
    c1 = cpu()
    first = out.read_text().splitlines()[:3] if code == 0 else []
    return dict(n_gets=n_gets, seconds=secs, exit_code=code, cores=os.cpu_count(),
                cpu_seconds_main=round(c1[0] - c0[0], 1),
                cpu_seconds_workers=round(c1[1] - c0[1], 1),
                load_average=(round(load0, 1), round(os.getloadavg()[0], 1)),
                target_seconds=90.0, answer=first)


if __name__ == "__main__":
    import argparse
    import json
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gets", type=int, default=15_000_000)
    print(json.dumps(run(ap.parse_args().gets), indent=1))
