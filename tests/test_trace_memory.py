"""A 10**8-get trace file (CSV and Parquet) replays through read_trace in bounded memory.

The file holds 10**8 rows ``space,page`` (one get each) over 1,000,000 distinct
pages of space 1: blocks of 1,000,000 rows, each 100,000 pages drawn uniformly
(seeded per block) and repeated 10 times in a row, so the run-length encoding
gives 10**7 events and what is measured is the reader (the engine's own memory
grows with distinct pages, not with the trace).  It is written in chunks with
pyarrow to a temporary folder (CSV about 0.9 GB, Parquet about 0.1 GB) and
deleted afterwards.  A child interpreter runs ``read_trace`` (its validation pass
over the whole file) and ``replay`` with the 5.6 preset and a 1 GiB pool (65,536
pages) and reports its peak resident set (``VmHWM``, else ``ru_maxrss``); it must
stay under 1.5 GB.

Measured on the 2-core development machine (load average 2-5, other jobs
running), rows (= gets) -> peak RSS of the child (its wall time, of which the
validation pass):

=========  ======================  ======================
rows       CSV                     Parquet
=========  ======================  ======================
10**7      643 MB (9.6 s, 2.7 s)   716 MB (9.0 s, 1.9 s)
10**8      639 MB (29 s, 10 s)     718 MB (20 s, 6 s)
3 x 10**8  646 MB (81 s, 40 s)     719 MB (62 s, 17 s)
=========  ======================  ======================

The peak does not grow with the trace, so 10**9 gets should replay at the same
~0.65 / 0.72 GB in about 4.5 / 3.5 min (wall time is linear in the rows).
(Parquet was read with pyarrow's pre-buffering at first, which grew 0.75 byte
per row: 775 MB at 10**8, 952 MB at 3 x 10**8.)  About 370-480 MB of the peak
is reached by the validation pass (interpreter, numpy, pandas, pyarrow, numba
and one chunk); the pool state and kernels add the rest.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

N_ROWS = 10**8
N_PAGES = 1_000_000
BLOCK, RUN = 1_000_000, 10
MAX_PEAK_BYTES = 1_500_000_000

CHILD = r'''
import json, sys, time
import bufsim

t0 = time.perf_counter()
trace = bufsim.read_trace(sys.argv[1])
t1 = time.perf_counter()
after_read = peak_rss_bytes()
res = bufsim.replay(trace, bufsim.mysql56(pool_pages=65_536))
t2 = time.perf_counter()
json.dump(dict(gets=int(res.totals["NUMBER_PAGES_GET"]), events=int(res.streams["events"].sum()),
               hit_ratio=res.hit_ratio, read_seconds=t1 - t0, replay_seconds=t2 - t1,
               peak_rss_after_read=after_read, peak_rss_bytes=peak_rss_bytes()), sys.stdout)
'''


def write_trace_files(folder: Path, n_rows: int = N_ROWS, seed: int = 17) -> dict:
    """Write ``t.csv`` and ``t.parquet`` of ``n_rows`` rows (see the module docstring)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq
    schema = pa.schema([("space", pa.int64()), ("page", pa.int64())])
    paths = {"csv": folder / "t.csv", "parquet": folder / "t.parquet"}
    with pcsv.CSVWriter(paths["csv"], schema) as cw, pq.ParquetWriter(paths["parquet"], schema) as pw:
        for k in range(0, n_rows, BLOCK):
            n = min(BLOCK, n_rows - k)
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(k // BLOCK,)))
            page = np.repeat(rng.integers(0, N_PAGES, -(-n // RUN)), RUN)[:n]
            batch = pa.record_batch([pa.array(np.ones(n, dtype=np.int64)), pa.array(page)],
                                    schema=schema)
            cw.write_batch(batch)
            pw.write_batch(batch, row_group_size=BLOCK)
    return paths


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("big_trace")
    paths = write_trace_files(folder)
    yield paths
    for p in paths.values():
        p.unlink()


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_1e8_get_trace_file_replays_in_under_1_5_gb(files, fmt, run_child):
    out = run_child(CHILD, str(files[fmt]), timeout=3000)   # read_trace + replay, fresh interpreter
    assert out["gets"] == N_ROWS
    assert out["events"] <= N_ROWS // RUN + N_ROWS // BLOCK  # runs merge only within a page
    assert out["peak_rss_bytes"] < MAX_PEAK_BYTES, out
