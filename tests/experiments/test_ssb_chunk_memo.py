"""bufsim.experiments.ssb.run_ssb keeps a query's chunks from its first run for the later
runs (bounded by CHUNK_MEMO_BYTES): the same rows as generating them in every run."""
import pytest

from bufsim.experiments import ssb as X
from bufsim.workloads.ssb import SSB


@pytest.fixture(scope="module")
def ssb():
    return SSB(0.02)


def _counting(monkeypatch, ssb):
    made = []
    real = type(ssb).query

    def query(self, name, plan="scan", **kw):
        made.append((name, plan))
        return real(self, name, plan, **kw)
    monkeypatch.setattr(type(ssb), "query", query)
    return made


@pytest.mark.parametrize("budget", [0, 1_000_000, 1 << 30])
def test_memo_gives_the_rows_of_generating_each_run(ssb, monkeypatch, budget):
    monkeypatch.setenv("BUFSIM_NO_CACHE", "1")
    c = X.Calibration(get_ns=500, clock_read_ns=1000, read_ns=10000)
    base = X.pool_config(X.SsbConfig("5.6.10", "128M", 1000), c, pool_pages=600)
    cfgs = {"a": base, "b": base.replace(old_blocks_time_ms=0)}
    kw = dict(runs=("Cold", "Run1", "Run2"), queries=("Q1.1", "Q2.1", "Q1.1:date_first"))
    monkeypatch.setattr(X, "CHUNK_MEMO_BYTES", 0)
    fresh = X.run_ssb(ssb, cfgs, c, **kw)
    made = _counting(monkeypatch, ssb)
    monkeypatch.setattr(X, "CHUNK_MEMO_BYTES", budget)
    memo = X.run_ssb(ssb, cfgs, c, **kw)
    assert memo.equals(fresh)
    assert fresh.groupby("query").gets.nunique().eq(1).all() and fresh.pages_read.sum() > 0
    if budget == 0:
        assert len(made) == 9                         # every query in each of 3 runs
    elif budget == 1 << 30:
        assert len(made) == 3                         # each query once
    else:
        assert len(made) == 7                         # Q1.1 (0.8 MB) once, the two others 3 times
