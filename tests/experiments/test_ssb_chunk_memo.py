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


def test_statement_memo_gives_the_rows_of_generating_each_time(ssb, monkeypatch):
    """q11_after_restart and q11_sequence take Q1.1's chunks from _statement_chunks: the
    same rows as generating them for each call, generated once while the statement and
    costs stay the same, again when the costs change."""
    monkeypatch.setenv("BUFSIM_NO_CACHE", "1")
    c = X.Calibration(get_ns=500, clock_read_ns=1000, read_ns=10000)
    kw = dict(pool_pages=600)
    monkeypatch.setattr(X, "STATEMENT_MEMO_BYTES", 0)          # never kept: generated each time
    X._statement_memo.clear()
    fresh = [X.q11_after_restart(ssb, "date_first", 1000, c, earlier_pages=20, seed=s, **kw)
             for s in (0, 1)]
    fresh_seq = X.q11_sequence(ssb, [("date_first", 0), ("date_first", 1000)], c, **kw)
    made = _counting(monkeypatch, ssb)
    monkeypatch.setattr(X, "STATEMENT_MEMO_BYTES", 1 << 30)
    memo = [X.q11_after_restart(ssb, "date_first", 1000, c, earlier_pages=20, seed=s, **kw)
            for s in (0, 1)]
    memo_seq = X.q11_sequence(ssb, [("date_first", 0), ("date_first", 1000)], c, **kw)
    assert memo == fresh and memo_seq.equals(fresh_seq)
    assert fresh[0]["not_made_young"] > 0 and fresh[0] != fresh[1]
    assert made == [("Q1.1", "date_first")]                    # once for the five statements
    other = X.Calibration(get_ns=600, clock_read_ns=1000, read_ns=10000)
    X.q11_after_restart(ssb, "date_first", 1000, other, earlier_pages=20, seed=0, **kw)
    assert made == [("Q1.1", "date_first")] * 2                # other costs: other chunks
