"""The MariaDB 10.11 executor model (spec §14) without a server."""
import numpy as np
import pytest

from bufsim import trace as trace_mod
from bufsim.workloads import plans
from bufsim.workloads.plans import Database, full_scan, mariadb1011_scan_events, range_scan
from bufsim.trace import FLAG_DESCENT, FLAG_NO_RA, FLAG_STEP
from bufsim.workloads.sysbench import sbtest_table


def _calls(rows, threshold=4, batch=9):
    return min(rows, threshold) + -(-max(rows - threshold, 0) // batch)


def test_counted_gets_are_one_per_leaf():
    leaves = np.array([10, 11, 12, 40])
    recs = np.array([5, 0, 20, 3])
    page, flags, row_pos = mariadb1011_scan_events(leaves, recs, relatch=False)
    assert page.tolist() == [10, 11, 12, 40]          # the empty leaf is stepped over too
    # access kinds: the descent's leaf, then forward leaf steps
    assert flags.tolist() == [FLAG_DESCENT, FLAG_STEP, FLAG_STEP, FLAG_STEP]
    page, flags, _ = mariadb1011_scan_events(leaves, recs, relatch=False, first_kind=FLAG_NO_RA)
    assert flags.tolist() == [FLAG_NO_RA, FLAG_STEP, FLAG_STEP, FLAG_STEP]
    # rows of leaf 0 are read after the first access, those of leaf 2 after the third
    assert row_pos.tolist() == [1] * 5 + [3] * 20 + [4] * 3


def test_relatches_follow_the_fetch_cache(monkeypatch):
    monkeypatch.setattr(trace_mod, "FLAG_RELATCH", 16, raising=False)
    monkeypatch.setattr(trace_mod, "FLAG_MASK", trace_mod.FLAG_MASK | 16)
    assert plans.relatch_flag() == 16
    leaves = np.array([100, 101, 102])
    recs = np.array([30, 30, 30])
    page, flags, row_pos = mariadb1011_scan_events(leaves, recs)
    rel = (flags & 16) != 0
    assert set(flags[rel].tolist()) == {16 | FLAG_NO_RA}     # a re-latch is never a read-ahead site
    # one re-latch per handler call after the first, and one for the call that finds the end
    assert int(rel.sum()) == _calls(90)
    assert int((~rel).sum()) == 3                     # the counted gets: one per leaf
    # the first four calls fetch one row each: re-latches of leaf 100 right after arrival
    assert page[:4].tolist() == [100, 100, 100, 100]
    assert flags[:4].tolist() == [FLAG_DESCENT] + [16 | FLAG_NO_RA] * 3
    # every re-latch is of the leaf holding the previous row, and precedes a step
    assert set(page[rel].tolist()) <= {100, 101, 102}
    assert row_pos[-1] == page.size - 1               # the last row, then the end call


def test_without_the_flag_relatches_cannot_be_asked_for(monkeypatch):
    monkeypatch.delattr(trace_mod, "FLAG_RELATCH", raising=False)
    assert plans.relatch_flag() is None
    with pytest.raises(ValueError, match="FLAG_RELATCH"):
        mariadb1011_scan_events(np.array([1]), np.array([3]), relatch=True)


def test_full_scan_executor_mariadb1011_counts_one_get_per_leaf():
    db = Database([sbtest_table(20_000)])
    ix = db.index("sbtest")
    mysql = full_scan(db, "sbtest")
    maria = full_scan(db, "sbtest", executor="mariadb1011")
    n_leaves = len(ix.leaves)
    chunk = maria.trace().materialize()
    flag = plans.relatch_flag() or 0
    counted = int(chunk.count[(chunk.flags & flag) == 0].sum()) if flag else chunk.n_gets
    assert maria.gets == ix.height - 1 + n_leaves == counted
    assert mysql.gets == ix.height - 1 + n_leaves + 20_000
    assert maria.rows == mysql.rows == 20_000
    # the same pages, in the same order
    pages_m = maria.trace().materialize().page
    assert np.array_equal(np.unique(pages_m), np.unique(mysql.trace().materialize().page))
    with pytest.raises(ValueError, match="executor='bogus' is unknown"):
        range_scan(db, "sbtest", 0, 10, executor="bogus")


def test_operators_carry_relatches_once_the_flag_exists(monkeypatch):
    monkeypatch.setattr(trace_mod, "FLAG_RELATCH", 16, raising=False)
    monkeypatch.setattr(trace_mod, "FLAG_MASK", trace_mod.FLAG_MASK | 16)
    db = Database([sbtest_table(5_000)])
    ix = db.index("sbtest")
    chunk = full_scan(db, "sbtest", executor="mariadb1011").trace().materialize()
    rel = (chunk.flags & 16) != 0
    assert int(chunk.count[~rel].sum()) == ix.height - 1 + len(ix.leaves)
    assert int(chunk.count[rel].sum()) == _calls(5_000)


def test_mariadb1011_operators_carry_access_kinds():
    """open_leaf's leftmost leaf and the pages above a leaf are no read-ahead site; a
    range's first leaf is a descent's (its level-1 parent just before it); then steps."""
    db = Database([sbtest_table(5_000)])
    ix = db.index("sbtest")
    h = ix.height
    assert h >= 2
    kind = FLAG_NO_RA
    scan = full_scan(db, "sbtest", executor="mariadb1011").trace().materialize()
    k = scan.flags & kind
    assert (k != 0).all()                                   # every access carries a kind
    assert k[:h].tolist() == [FLAG_NO_RA] * h               # upper pages and the leftmost leaf
    counted = (scan.flags & 16) == 0
    assert (k[h:][counted[h:]] == FLAG_STEP).all()          # the other leaves: steps
    assert int((k == FLAG_STEP).sum()) == len(ix.leaves) - 1
    rng = range_scan(db, "sbtest", 2_000, 100, executor="mariadb1011").trace().materialize()
    k = rng.flags & kind
    assert k[:h].tolist() == [FLAG_NO_RA] * (h - 1) + [FLAG_DESCENT]
    leaf0 = db.dense("sbtest", ix.leaves[2_000 // ix.geometry.per_leaf])
    assert rng.page[h - 1] == leaf0
