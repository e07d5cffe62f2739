"""A trace of 10**9 page gets streams through :func:`bufsim.replay` in bounded memory.

The trace is generated lazily, 100 chunks of 199,000 events: 99,000 events of a
sequential scan over pages 0..799,999 (wrapping round), each 100 consecutive
gets of its page (a scan reading 100 rows per page), and 100,000 single gets
of pages drawn uniformly from all 1,000,000 pages, at random positions of the
chunk.  That is 10,000,000 gets per chunk and exactly 10**9 in all
(19,900,000 events).  The pool is the 5.6 preset with a 1 GiB pool
(65,536 pages, 8 instances) and its default cost and device models, so the
virtual clock, the page cleaner and read-ahead all run.

The replay runs in a child interpreter that reports its own peak resident set
(``VmHWM`` of ``/proc/self/status``, else ``ru_maxrss``); Numba compilation
or cache loading happens in that child and counts too.  The peak must stay
under 2,000,000,000 bytes: the state is ``O(n_pages)`` and one chunk of
events, whatever the trace length.  Measured on the 2-core development
machine (with other jobs running): peak 985,845,760 bytes, of which about
950 MB are reached by a 1000-get replay over the same 1,000,000 pages already
(interpreter and libraries 255 MB, the pool state 175 MB, the loaded kernels);
the replay took 86 s of wall time (52 s of CPU), the whole test 158 s under a
load average of 4.6.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

N_GETS = 10**9
MAX_PEAK_BYTES = 2_000_000_000

CHILD = r'''
import json, sys, time
import numpy as np
import bufsim
from bufsim import Chunk, Tablespaces, Trace, replay

N_PAGES, SCAN_PAGES = 1_000_000, 800_000
N_CHUNKS, SCAN_EVENTS, RANDOM_EVENTS, SCAN_COUNT = 100, 99_000, 100_000, 100


def chunks():
    """Lazily: per chunk 99,000 scan events of 100 gets and 100,000 random single gets."""
    pos = 0
    for k in range(N_CHUNKS):
        rng = np.random.default_rng(np.random.SeedSequence(2024, spawn_key=(k,)))
        n = SCAN_EVENTS + RANDOM_EVENTS
        rand = np.zeros(n, dtype=bool)
        rand[rng.choice(n, RANDOM_EVENTS, replace=False)] = True
        page = np.empty(n, dtype=np.int64)
        page[~rand] = (pos + np.arange(SCAN_EVENTS)) % SCAN_PAGES
        page[rand] = rng.integers(0, N_PAGES, RANDOM_EVENTS)
        pos = (pos + SCAN_EVENTS) % SCAN_PAGES
        yield Chunk.from_arrays(page, np.where(rand, 1, SCAN_COUNT), 0)


t0 = time.perf_counter()
trace = Trace(chunks, Tablespaces.single(N_PAGES), name="scan100+random")
res = replay(trace, bufsim.mysql56(pool_pages=65_536))
secs = time.perf_counter() - t0
json.dump(dict(gets=int(res.totals["NUMBER_PAGES_GET"]),
               stream_gets=int(res.streams["gets"].sum()),
               events=int(res.streams["events"].sum()),
               hit_ratio=res.hit_ratio, seconds=secs, peak_rss_bytes=peak_rss_bytes()),
          sys.stdout)
'''


def test_a_billion_gets_replay_in_under_2_gb(run_child):
    out = run_child(CHILD, timeout=840)
    assert out["gets"] == N_GETS
    assert out["stream_gets"] == N_GETS
    assert out["events"] == 19_900_000
    assert out["peak_rss_bytes"] < MAX_PEAK_BYTES, out
