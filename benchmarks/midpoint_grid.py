"""The analytic midpoint-LRU model (bufsim.analytic.midpoint) against the replay engine.

A hot independent-reference stream (Zipf or uniform over ``hot_pages``, one get
every ``hot_gap_ns``) runs alone until the hot set is warm; then a second stream
starts scanning ``scan_pages`` pages pass after pass, each page touched
``scan_k`` times in a burst (``scan_get_ns`` per get), with ``pass_gap_ns`` of
idle time between passes (0: back to back).  This is the side-load experiment of
document 001 of ``docs/documents.md`` (sysbench on a small table while mysqldump reads a
big one) on a small pool.  Hit ratios are measured over a window that starts ``settle_ns``
after the scan began.

Run from the repo root::

    .venv/bin/python -P benchmarks/midpoint_grid.py [--quick] [--csv PATH]

It prints one row per grid point: model and simulated hit ratio (all gets, hot
gets, scan gets), the absolute error and the model's regime.
"""
from __future__ import annotations

import argparse
import sys

import pandas as pd

from bufsim.experiments.analytic_validation import MIXTURES, run_grid


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="first mixture only")
    ap.add_argument("--csv", help="write the table to this CSV file")
    args = ap.parse_args(argv)
    mixes = MIXTURES[:1] if args.quick else MIXTURES
    df = run_grid(mixes, verbose=True)
    pd.set_option("display.width", 200)
    print(df[["mixture", "old_blocks_time_ms", "old_blocks_pct", "model", "sim", "err",
              "regime"]].to_string(index=False))
    print(f"max |err| = {df['err'].abs().max():.4f}")
    if args.csv:
        df.to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
