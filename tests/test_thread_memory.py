"""A trace file of several threads is read, and replayed, in memory that follows its events.

``read_trace`` of a file with a ``thread`` column holds the events (a thread's CPU
time and statement end depend on its next event), but per thread in narrow dtypes:
dense page uint32, run length and CPU time in the smallest unsigned dtype of their
block, flags uint8, plus one uint8 stream id per event for the file order, about
9 bytes per event for the files below (page 4, count 1, CPU time 2, flags 1, stream
id 1); replay reads the per-thread arrays as they are.  The reader used to hold every
event in int64 buffers, concatenate them and split them into Chunks (33 bytes per
event in int64) and the engine split them again: 160-243 bytes per row.

The files: ``space,page,time_ns,thread`` rows, pages drawn uniformly from 1,000,000
(so runs rarely merge: events ~ rows), 1-1999 ns between rows, two threads ``t1``
and ``t2`` drawn at random per row (seeded).

Measured on the 2-core development machine (peak RSS of a fresh interpreter, Numba
cache warm; ``import bufsim, pandas, numba, pyarrow`` alone is 262 MB): ``read`` is
``read_trace`` and one pass over it, ``replay`` adds ``bufsim.replay`` with the 5.6
preset and 8192 pages, ``CLI`` is ``bufsim replay FILE --pool 128M`` (``/usr/bin/time``):

* 2 x 10**6 rows, previous reader: read 779 MB, replay 839 MB, CLI 1.13 GB
* 2 x 10**6 rows, now: read 539 MB, replay 540 MB, CLI 563 MB
* 2 x 10**7 rows, previous reader: read 4.01 GB, replay 4.02 GB, CLI 4.11 GB
* 2 x 10**7 rows, now: read 696 MB, replay 749 MB, CLI 779 MB (wall time 26-30 s)

Of the ~540 MB at 2 x 10**6 rows, ~270 MB above the imports is one block of 2**20 rows
being parsed (pandas text columns), the same for any length; beyond it a row costs
~9 bytes (8.3 measured by the first test; the previous reader: 160).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

N_PAGES = 1_000_000


def write_two_thread_csv(path: Path, n_rows: int, seed: int = 42, block: int = 1_000_000) -> Path:
    """``n_rows`` rows of ``space,page,time_ns,thread`` (see the module docstring)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    schema = pa.schema([("space", pa.int64()), ("page", pa.int64()), ("time_ns", pa.int64()),
                        ("thread", pa.string())])
    t = 0
    with pcsv.CSVWriter(path, schema) as w:
        for k in range(0, n_rows, block):
            m = min(block, n_rows - k)
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(k // block,)))
            page = rng.integers(0, N_PAGES, m)
            time_ns = t + np.cumsum(rng.integers(1, 2000, m))
            t = int(time_ns[-1])
            thread = np.where(rng.random(m) < 0.5, "t1", "t2")
            w.write_batch(pa.record_batch([pa.array(np.ones(m, dtype=np.int64)), pa.array(page),
                                           pa.array(time_ns), pa.array(thread)], schema=schema))
    return path


# ---- bytes per row: a small file first (interpreter, pandas, one block), then a large one --
GROWTH_CHILD = r'''
import json, sys
import bufsim

def read(path):
    t = bufsim.read_trace(path, chunk_size=int(sys.argv[3]))
    return t, [x.n_events() for x in t.split_streams()]

warm, n_warm = read(sys.argv[1])
del warm
before = peak_rss_bytes()
big, n_big = read(sys.argv[2])
json.dump(dict(events_warm=n_warm, events=n_big, peak_before=before,
               peak_after=peak_rss_bytes()), sys.stdout)
'''

#: Bytes of peak RSS per row allowed while reading a two-thread file.  The events held
#: take ~9 bytes each (see the module docstring); finishing a thread joins its blocks'
#: pieces column by column (at most 4 more bytes per event of that thread), and the
#: rest is allocator slack.  Holding the events as int64 Chunks alone would take 33.
MAX_BYTES_PER_ROW = 24


def test_reading_two_threads_grows_by_the_narrow_events_only(tmp_path, run_child):
    rows, chunk = 1_000_000, 50_000
    warm = write_two_thread_csv(tmp_path / "warm.csv", 3 * chunk, seed=1)
    big = write_two_thread_csv(tmp_path / "big.csv", rows, seed=2)
    out = run_child(GROWTH_CHILD, str(warm), str(big), str(chunk), timeout=300)
    assert sum(out["events"]) > 0.99 * rows and len(out["events"]) == 2   # runs rarely merge
    per_row = (out["peak_after"] - out["peak_before"]) / rows
    assert per_row < MAX_BYTES_PER_ROW, (per_row, out)


# ---- the figure: 2e7 rows replay in under 1 GB ------------------------------------
REPLAY_CHILD = r'''
import json, sys
import bufsim

trace = bufsim.read_trace(sys.argv[1])
after_read = peak_rss_bytes()
res = bufsim.replay(trace, bufsim.mysql56(pool_pages=8192))
json.dump(dict(gets=int(res.totals["NUMBER_PAGES_GET"]), streams=len(res.streams),
               peak_rss_after_read=after_read, peak_rss_bytes=peak_rss_bytes()), sys.stdout)
'''


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_a_two_thread_2e7_row_csv_replays_in_under_1_gb(tmp_path, run_child):
    rows = 20_000_000
    p = write_two_thread_csv(tmp_path / "two.csv", rows)
    try:
        out = run_child(REPLAY_CHILD, str(p), timeout=3000)
    finally:
        p.unlink()
    assert out["gets"] == rows and out["streams"] == 2
    assert out["peak_rss_bytes"] < 1_000_000_000, out


# ---- the per-thread events are the file-order events, split -------------------------------
def test_held_threads_replay_as_their_file_order_chunks_split_by_stream(tmp_path):
    import pandas as pd
    import bufsim
    rng = np.random.default_rng(3)
    n = 3000
    idx = np.repeat(np.arange(n), rng.integers(1, 3, n))     # some rows repeat: runs
    df = pd.DataFrame(dict(space=rng.integers(1, 3, n), page=rng.integers(0, 700, n),
                           time_ns=np.cumsum(rng.integers(0, 50, n)),
                           thread=rng.choice(["a", "b", "c"], n, p=[.6, .3, .1]),
                           statement=rng.choice(["q1", "q2"], n, p=[.9, .1]),
                           count=rng.integers(1, 4, n), flags=rng.choice([0, 2, 8], n))).loc[idx]
    p = tmp_path / "t.csv"
    df.to_csv(p, index=False)
    t = bufsim.read_trace(p, chunk_size=100, cpu_ns_per_get=7)
    held = bufsim.Trace(list(t), t.tablespaces, t.name, stream_names=t.stream_names,
                        stream_start_ns=t.stream_start_ns)   # file-order chunks, in memory
    assert held.is_materialized and [len(c) for c in held][:-1] == [100] * (len(held._chunks) - 1)
    c = held.materialize()
    assert c.n_gets == int(df["count"].sum())
    for s, part in enumerate(t.split_streams()):
        mine, theirs = part.materialize(), c.take(c.stream == s)
        assert mine == theirs, s
    cfg = bufsim.mysql56(pool_pages=512)
    r1, r2 = bufsim.replay(t, cfg), bufsim.replay(held, cfg)
    assert r1.streams["gets"].tolist() == r2.streams["gets"].tolist() and len(r1.streams) == 3
    pd.testing.assert_series_equal(r1.totals, r2.totals)
    pd.testing.assert_frame_equal(r1.streams, r2.streams)
