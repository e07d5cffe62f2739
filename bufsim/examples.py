"""The example trace shipped as ``data/traces/example.csv``, and how it is made.

A small workload a user can point the command line at (README, "From a CSV to
an answer"): an OLTP thread whose gets follow a Zipf(1.0) popularity over a
2,000-page table (space 7, ranks shuffled over the pages), and a reporting
thread that scans a 4,000-page table (space 8) once, reading each page three
times in a row (rows of one page) and starting a third of the way in.  Times
are in milliseconds: an OLTP get every 1 ms (30 s in all), a scanned page
every 0.5 ms (2 s), its three gets 0.01 ms apart.  The scan is what
``innodb_old_blocks_time`` is about: with 0 its second get makes each scanned
page young, pushing hot pages out of a small pool; with 1000 scanned pages stay
old and are evicted first (with ``--preset mysql55`` and a 16M pool the hit
ratio goes from 0.8916 to 0.9010).

Regenerate it with ``python -m bufsim.examples data/traces/example.csv``; the
bytes are the same for the same seed (a test checks the shipped file).
"""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from .paths import atomic_path, data_dir

__all__ = ["example_trace_frame", "write_example_trace", "example_trace_path"]


def example_trace_frame(seed: int = 1, oltp_gets: int = 30_000, scan_pages: int = 4_000,
                        hot_pages: int = 2_000) -> pd.DataFrame:
    """The example workload as rows ``space, page, time_ms, thread`` in time order.

    Parameters
    ----------
    seed : int
        Seed of every random draw.
    oltp_gets, scan_pages, hot_pages : int
        Gets of the OLTP thread, pages of the scanned table, pages of the hot
        table.

    Returns
    -------
    pandas.DataFrame
    """
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, hot_pages + 1, dtype=float)
    p = ranks ** -1.0
    p /= p.sum()
    perm = rng.permutation(hot_pages)
    oltp_page = perm[rng.choice(hot_pages, size=oltp_gets, p=p)]
    oltp_t = np.arange(oltp_gets) * 1.0
    scan_page = np.repeat(np.arange(scan_pages), 3)
    t0 = oltp_t[-1] / 3
    scan_t = t0 + np.repeat(np.arange(scan_pages) * 0.5, 3) + np.tile([0.0, 0.01, 0.02],
                                                                      scan_pages)
    df = pd.DataFrame({
        "space": np.concatenate([np.full(oltp_gets, 7), np.full(len(scan_page), 8)]),
        "page": np.concatenate([oltp_page, scan_page]),
        "time_ms": np.round(np.concatenate([oltp_t, scan_t]), 2),
        "thread": ["oltp"] * oltp_gets + ["report"] * len(scan_page)})
    return df.sort_values(["time_ms", "thread"], kind="stable").reset_index(drop=True)


def example_trace_path():
    """``data/traces/example.csv`` in the checkout."""
    return data_dir() / "traces" / "example.csv"


def write_example_trace(path=None, seed: int = 1):
    """Write :func:`example_trace_frame` as CSV (atomically); returns the path."""
    path = example_trace_path() if path is None else path
    with atomic_path(path) as tmp:
        example_trace_frame(seed).to_csv(tmp, index=False, float_format="%.2f")
    return path


if __name__ == "__main__":
    print(write_example_trace(sys.argv[1] if len(sys.argv) > 1 else None))
