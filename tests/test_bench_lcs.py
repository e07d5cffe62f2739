"""benchmarks/lcs.py (libCacheSim's C ``process_trace`` over an oracleGeneral file) counts
the same hits as libCacheSim's per-request ``get`` and as bufsim's lru and clock kernels."""
import os

import numpy as np
import pytest
from tests._bench import libcachesim, load_benchmark

import bufsim
from bufsim import CostModel, DeviceModel, PoolConfig

lcs = libcachesim()

N_GETS, N_PAGES = 30_000, 5_000
SIZES = (100, 1000)


def load_adapter():
    return load_benchmark("lcs")


adapter = load_adapter()
TRACE = bufsim.synthetic.zipf_trace(N_GETS, N_PAGES, 0.9, seed=11)
_CHUNK = TRACE.materialize()
assert (_CHUNK.count == 1).all()  # one get per event: the pages are the get sequence
PAGES = _CHUNK.page


def per_request_hits(policy, size, pages):
    cache = getattr(lcs, adapter.POLICIES[policy])(size, hashpower=12)
    req = lcs.Request()
    req.obj_size = 1
    hits = 0
    for p in pages.tolist():
        req.obj_id = p + 1
        hits += bool(cache.get(req))
    return hits


def bufsim_hits(policy, size):
    cfg = PoolConfig(policy=policy, pool_pages=size, cost=CostModel(0, 0, 0, 0),
                     device=DeviceModel.instant())
    res = bufsim.replay(TRACE, cfg)
    return int(res.streams["gets"].sum() - res.streams["misses"].sum())


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("policy", ["lru", "clock"])
def test_fast_path_hits_equal_bufsim(policy, size):
    assert len(PAGES) == N_GETS
    secs, hits = adapter.run(policy, PAGES, size)
    assert secs >= 0
    assert 0 < hits < N_GETS
    assert hits == per_request_hits(policy, size, PAGES), (policy, size)
    assert hits == bufsim_hits(policy, size), (policy, size)


def test_trace_file_written_once_and_removed():
    with adapter.OracleTrace(PAGES) as t:
        path = t.path
        rec = np.fromfile(path, dtype=adapter.ORACLE_GENERAL)
        assert len(rec) == N_GETS and (rec["obj_id"] == PAGES + 1).all()
        assert (rec["obj_size"] == 1).all()
        # two runs over the same file, the second with libCacheSim's default hash table
        assert t.run("lru", 1000)[1] == t.run("lru", 1000, hashpower=24)[1]
    assert not os.path.exists(path)
