"""OLTP workloads: sysbench + mysqldump (seed 001), rein (seed 004), dbSTRESS (seed 003).

Traces are checked against their plan arithmetic without the engine; one small
side-load replay checks the effect seed 001 is about.
"""
import math

import numpy as np
import pytest

import bufsim
from bufsim.workloads import dbstress as ds
from bufsim.workloads import rein
from bufsim.workloads import sysbench as sb
from bufsim.workloads.geometry import table_geometry
from bufsim.workloads.plans import (
    CpuCost, full_scan, lookups, range_scan, secondary_range, sequence, statement,
)


def per_get(chunk):
    """Pages and flags of every single get (events expanded); FLAG_STMT_END stays on the
    last get of its event (the statement ends when the event is done)."""
    flags = np.repeat(chunk.flags, chunk.count)
    last = np.cumsum(chunk.count) - 1
    end = np.zeros(flags.size, dtype=bool)
    end[last] = (chunk.flags & bufsim.FLAG_STMT_END) != 0
    flags = np.where(end, flags, flags & ~np.uint8(bufsim.FLAG_STMT_END)).astype(np.uint8)
    return np.repeat(chunk.page, chunk.count), flags


@pytest.fixture(scope="module")
def sbdb():
    return sb.side_load_database(20_000, 60_000)


@pytest.fixture(scope="module")
def reindb():
    return rein.rein_database(5_000_000)


@pytest.fixture(scope="module")
def dsdb():
    return ds.dbstress_database(3_000)


# --------------------------------------------------------------------------------------
# sysbench: geometry
# --------------------------------------------------------------------------------------
def test_sbtest_geometry_by_hand():
    # clustered record: 5 header + 4 id + 6 trx id + 7 roll ptr + 4 k + 120 c + 60 pad = 206;
    # 16256 usable bytes x 15/16 = 15240; per leaf floor(15240 / (206 + 1/3)) = 73;
    # node record 5 + 4 id + 4 child = 13: floor(15240 / (13 + 1/3)) = 1143 per node page
    g = table_geometry(sb.sbtest_table(sb.SMALL_ROWS))
    pk, k = g.clustered, g.index("k")
    assert (pk.leaf_record_bytes, pk.per_leaf, pk.per_node) == (206, 73, 1143)
    # ceil(1,100,000 / 73) = 15,069 leaves; ceil(15,069 / 1143) = 14; then the root
    assert pk.level_pages == (15069, 14, 1)
    # k: (k, id) = 5 + 4 + 4 = 13 bytes, 1143 per leaf -> 963 leaves; node (k, id, child) 17:
    # floor(15240 / 17.333) = 879 -> ceil(963 / 879) = 2, root
    assert (k.leaf_record_bytes, k.per_leaf, k.level_pages) == (13, 1143, (963, 2, 1))
    # 17.6M rows: ceil(17,600,000 / 73) = 241,096 leaves, ceil(/1143) = 211
    assert table_geometry(sb.sbtest_table(sb.BIG_ROWS)).clustered.level_pages == (241096, 211, 1)
    # the document's DATA_SIZE_MB of the resident small PRIMARY (216.31) is record bytes
    assert sb.SMALL_ROWS * 206 / 2**20 == pytest.approx(216.31, rel=2e-3)
    assert sb.rows_for_size(216.31 * 2**20, measure="data") == pytest.approx(sb.SMALL_ROWS, rel=2e-3)
    assert sb.rows_for_size(15069 * 16384) == 15069 * 73


def test_side_load_database_shares_one_tablespaces(sbdb):
    a = sb.oltp_read_only(sbdb, sb.SMALL_NAME, 3).trace()
    b = sb.mysqldump(sbdb, sb.BIG_NAME).trace(1)
    assert a.tablespaces is b.tablespaces is sbdb.tablespaces


# --------------------------------------------------------------------------------------
# sysbench: transactions
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dist", ["uniform", "special"])
@pytest.mark.parametrize("ahi", [False, True])
def test_oltp_trace_gets_equal_plan(sbdb, dist, ahi):
    op = sb.oltp_read_only(sbdb, sb.SMALL_NAME, 300, dist=dist, ahi=ahi, seed=5, batch=64)
    c = op.trace().materialize()
    assert c.n_gets == op.gets
    assert op.rows == 300 * (10 + 3 * 100 + 101)
    assert np.count_nonzero(c.flags & bufsim.FLAG_AHI) == (300 * 10 if ahi else 0)
    # the mean per transaction is the plan's expectation (leaf crossings are random:
    # at most 3 per range, so the mean over 300 transactions is within a few tenths)
    exp = sb.oltp_expected(sbdb, sb.SMALL_NAME, ahi=ahi)
    assert op.gets / 300 == pytest.approx(exp["gets"], abs=0.5)


def test_oltp_transaction_is_the_plans_operators(sbdb):
    """One transaction, get by get, equals lookups and range_scan of plans, each its own
    statement (FLAG_STMT_END on its last event)."""
    n = 20_000
    ids = sb.random_ids(np.random.default_rng(3), n, (1, 14), "uniform")[0]
    ops = [statement(lookups(sbdb, sb.SMALL_NAME, [i - 1])) for i in ids[:10]]
    for s, i in enumerate(ids[10:]):
        first = max(1, n - 100) if i + 100 > n else i
        ops.append(statement(range_scan(sbdb, sb.SMALL_NAME, first - 1,
                                        101 if s == 3 else 100)))
    ref = sequence(ops).trace().materialize()
    mine = sb.oltp_read_only(sbdb, sb.SMALL_NAME, 1, seed=3).trace().materialize()
    for a, b in zip(per_get(ref), per_get(mine)):
        np.testing.assert_array_equal(a, b)


def test_oltp_cpu_charges(sbdb):
    cpu = CpuCost(row_ns=10, get_ns=3)
    op = sb.oltp_read_only(sbdb, sb.SMALL_NAME, 20, cpu=cpu, query_ns=1000, txn_ns=50_000, seed=2)
    c = op.trace().materialize()
    total = int((c.cpu_ns * c.count).sum())
    assert total == op.gets * 3 + op.rows * 10 + 20 * 14 * 1000 + 20 * 50_000


def test_special_hot_share():
    """sysbench 0.4 special: 3/4 of draws uniform in the middle 1 % band, plus the
    Gaussian quarter's share of the band (CLT: about 4.8 %).  With n = 400,000
    draws the share's standard deviation is sqrt(p (1-p) / n) = 0.00067, and the
    CLT error at 12 iterations is far below it; 5 sd = 0.0034."""
    N, n = sb.SMALL_ROWS, 400_000
    lo, hi = sb.special_band(N)
    assert hi - lo + 1 == N // 100 and lo == N // 2 - N // 200
    ids = sb.random_ids(np.random.default_rng(11), N, n, "special")
    share = ((ids >= lo) & (ids <= hi)).mean()
    p = sb.special_hot_share(N)
    assert 0.75 < p < 0.77
    assert abs(share - p) < 5 * math.sqrt(p * (1 - p) / n)
    assert ids.min() >= 1 and ids.max() <= N
    u = sb.random_ids(np.random.default_rng(11), N, n, "uniform")
    assert abs(((u >= lo) & (u <= hi)).mean() - 0.01) < 5 * math.sqrt(0.01 * 0.99 / n)


def test_range_starts_are_clipped_like_sysbench(sbdb):
    # a table of 150 rows: every range start is clipped to N - 100 = 50 at most
    db = sb.side_load_database(150, 60_000)
    op = sb.oltp_read_only(db, sb.SMALL_NAME, 50, seed=1)
    assert op.rows == 50 * (10 + 3 * 100 + 101)
    assert op.trace().materialize().n_gets == op.gets


def test_streams_are_deterministic(sbdb, reindb, dsdb):
    def same(a, b):
        ca, cb = a.trace().materialize(), b.trace().materialize()
        return ca == cb
    mk = lambda s: sb.oltp_read_only(sbdb, sb.SMALL_NAME, 100, dist="special", seed=s, batch=16)
    assert same(mk(1), mk(1)) and not same(mk(1), mk(2))
    op = mk(4)
    assert op.trace().materialize() == op.trace().materialize()       # re-iterable
    mk = lambda s: rein.rein_stream(reindb, 500, dist="uniform", seed=s, batch=100)
    assert same(mk(1), mk(1)) and not same(mk(1), mk(2))
    mk = lambda s: ds.dbstress_stream(dsdb, 200, pattern=("read", "update"), seed=s, batch=30)
    assert same(mk(1), mk(1)) and not same(mk(1), mk(2))


def test_mysqldump_is_a_full_scan(sbdb):
    op = sb.mysqldump(sbdb, sb.BIG_NAME)
    g = sbdb.index(sb.BIG_NAME).geometry
    assert op.rows == 60_000
    # height - 1 above the first leaf, then rows + 1 per leaf... = rows + leaves + h - 1
    assert op.gets == 60_000 + g.leaf_pages + g.height - 1
    assert op.trace().materialize().n_gets == op.gets


# --------------------------------------------------------------------------------------
# rein
# --------------------------------------------------------------------------------------
def test_rein_geometry():
    g = table_geometry(rein.rein_table())
    # 5 + 1 null bitmap (id3) + 4 + 6 + 7 + 4 + 4 = 31 bytes; id2 entries 5 + 4 + 4 = 13
    assert g.clustered.leaf_record_bytes == 31 and g.index("id2").leaf_record_bytes == 13
    pages = sum(ix.n_pages for ix in g.indexes)
    assert pages * 16384 / 2**30 == pytest.approx(22, abs=0.25)      # rein.ibd: 22G


@pytest.mark.parametrize("kind", rein.KINDS)
@pytest.mark.parametrize("dist", rein.DISTS)
@pytest.mark.parametrize("ahi", [False, True])
def test_rein_gets_and_frequency(reindb, kind, dist, ahi):
    op = rein.rein_stream(reindb, 2000, kind=kind, dist=dist, ahi=ahi, seed=1, batch=512)
    c = op.trace().materialize()
    exp = rein.rein_expected(reindb, kind=kind, ahi=ahi)
    assert c.n_gets == op.gets == 2000 * exp["gets"] and op.rows == 2000
    assert exp["gets"] == (1 if ahi else 3) + (kind == "update")
    assert (c.flags & bufsim.FLAG_MODIFY).astype(bool).sum() == (2000 if kind == "update" else 0)
    f = rein.page_frequency(reindb, kind=kind, dist=dist, ahi=ahi)
    assert f.gets.sum() == pytest.approx(exp["gets"])
    assert f.ahi_lookups.sum() == pytest.approx(1.0 if ahi else 0.0)
    touched = np.unique(c.page)
    assert (f.gets[touched] > 0).all()                    # the trace stays inside the support


def test_rein_hot_touches_only_the_first_million_ids(reindb):
    ix = reindb.index("rein")
    pl = ix.geometry.per_leaf
    hot_leaves = reindb.dense("rein", ix.leaves[: -(-rein.HOT_ROWS // pl)])
    upper = reindb.dense("rein", np.concatenate(ix.levels[1:]))
    c = rein.rein_stream(reindb, 20_000, dist="hot", seed=2).trace().materialize()
    pages = np.unique(c.page)
    assert np.isin(pages, np.concatenate([hot_leaves, upper])).all()
    leaves_hit = np.intersect1d(pages, hot_leaves)
    # 20,000 uniform draws over 3,650 leaves leave about e^-5.5 = 0.4 % untouched
    assert leaves_hit.size > 0.98 * hot_leaves.size
    f = rein.page_frequency(reindb, dist="hot")
    support = np.flatnonzero(f.gets)
    assert np.isin(support, np.concatenate([hot_leaves, upper])).all()
    assert f.gets[reindb.dense("rein", ix.root)] == pytest.approx(1.0)
    # the uniform workload spreads over every leaf
    fu = rein.page_frequency(reindb, dist="uniform")
    assert (fu.gets[reindb.dense("rein", ix.leaves)] > 0).all()


def test_page_frequency_counts_feed_instance_demand(reindb):
    from bufsim.contention import instance_demand
    f = rein.page_frequency(reindb, dist="hot", ahi=True)
    gets, ahi, _ = f.counts(1000)
    d = instance_demand(gets, reindb.tablespaces, 4, version="5.5", n_transactions=1000,
                        ahi_lookups=ahi)
    assert d.gets.sum() == gets.sum()
    assert f.per_instance(4).sum() == pytest.approx(f.gets_per_txn)


def test_rein_update_undo_log_gets(reindb):
    from bufsim.contention import Costs, max_throughput, workload_network
    f0 = rein.page_frequency(reindb, kind="update", dist="hot", ahi=True)
    f = rein.page_frequency(reindb, kind="update", dist="hot", ahi=True, undo=True)
    pages, gets, n_sys = rein.undo_gets()
    # per UPDATE: the table's gets, 3 of its rseg's undo page, 1 of its rseg header, 1/256 TRX_SYS
    assert gets.sum() == pytest.approx(rein.UNDO_PAGE_GETS + rein.RSEG_HEADER_GETS + 1 / 256)
    assert f.gets.sum() == pytest.approx(f0.gets.sum() + gets.sum())
    assert np.allclose(f.gets[n_sys:], f0.gets) and f.ahi_lookups[:n_sys].sum() == 0
    ts = f.tablespaces
    assert ts.n_pages == reindb.tablespaces.n_pages + n_sys
    sys_pages = np.flatnonzero(f.gets[:n_sys])
    assert (ts.page_space_id[sys_pages] == 0).all() and sys_pages.size == 1 + 2 * rein.N_RSEGS
    assert f.gets[rein.FIRST_RSEG_PAGE] == pytest.approx(1 / rein.N_RSEGS)     # rseg 0's header
    # by hand: undo pages 319..446 lie in areas 4-6, so 1 instance holds all 5 undo gets and
    # 4 instances split them; the busiest of 4 carries well under half of one instance's
    one = f.per_instance(1)
    four = f.per_instance(4)
    assert one.sum() == pytest.approx(f.gets_per_txn) and four.max() < 0.45 * one[0]
    # the leaf's restore is an optimistic get (block mutex only in 5.5), one per UPDATE
    assert f0.optimistic.sum() == pytest.approx(1.0) and f.optimistic[:n_sys].sum() == 0
    assert np.allclose(f.optimistic[n_sys:], f0.optimistic)
    assert np.all(f0.optimistic <= f0.gets - f0.ahi_lookups + 1e-12)
    # one instance: the pool mutex (4 undo gets and 1/256 TRX_SYS get of get_ns; not the
    # restore) binds before the kernel mutex
    c = Costs(get_ns=4_000, ahi_ns=1_000, kernel_ns=12_500)
    x1 = max_throughput(workload_network(f, 1, c, cores=8, adaptive_hash_index=True))[0]
    x4 = max_throughput(workload_network(f, 4, c, cores=8, adaptive_hash_index=True))[0]
    x0 = max_throughput(workload_network(f0, 1, c, cores=8, adaptive_hash_index=True))[0]
    assert x1 == pytest.approx(1e9 / (4_000 * 4.0 + 4_000 / 256), rel=0.01)
    assert x4 == pytest.approx(x0, rel=1e-6) == pytest.approx(1e9 / 12_500, rel=0.01)
    with pytest.raises(ValueError, match="undo=True is for kind='update'"):
        rein.page_frequency(reindb, kind="select", undo=True)


# --------------------------------------------------------------------------------------
# dbSTRESS
# --------------------------------------------------------------------------------------
CASES = ([("sel1", 1), ("update", 1)] + [("sel2", v) for v in range(1, 10)] + [("read", 1),
                                                                             ("read", 7)])


@pytest.mark.parametrize("kind,variant", CASES)
@pytest.mark.parametrize("ahi", [False, True])
def test_dbstress_gets_and_exact_frequency(dsdb, kind, variant, ahi):
    """Every object once: the trace's gets per page / objects is the frequency."""
    A = 3_000
    op = ds.dbstress_stream(dsdb, A, pattern=(kind,), variant=variant, ahi=ahi,
                            refs=np.arange(A), batch=700)
    c = op.trace().materialize()
    assert c.n_gets == op.gets
    exp = ds.expected(dsdb, kind, variant=variant, ahi=ahi)
    assert op.gets / A == pytest.approx(exp["gets"]) and op.rows / A == pytest.approx(exp["rows"])
    n = dsdb.tablespaces.n_pages
    f = ds.page_frequency(dsdb, kind, variant=variant, ahi=ahi)
    np.testing.assert_allclose(np.bincount(c.page, weights=c.count, minlength=n) / A, f.gets,
                               atol=1e-12)
    ahi_gets = np.bincount(c.page, weights=c.count * (c.flags & bufsim.FLAG_AHI), minlength=n)
    np.testing.assert_allclose(ahi_gets / A, f.ahi_lookups, atol=1e-12)


def test_dbstress_rows_per_query(dsdb):
    rows = {v: ds.expected(dsdb, "sel2", variant=v)["rows"] for v in range(1, 10)}
    assert rows == {1: 40, 2: 40, 3: 40, 4: 21, 5: 21, 6: 20, 7: 20, 8: 20, 9: 20}
    assert ds.expected(dsdb, "sel1")["rows"] == 3
    assert ds.expected(dsdb, "read", variant=1)["rows"] == 43


def test_dbstress_statements_are_the_plans_operators(dsdb):
    o = 7
    ref = statement(secondary_range(dsdb, "HISTORY", "history_ref_idx", 20 * o,
                                    np.arange(20 * o, 20 * o + 20), ahi=True)).trace().materialize()
    mine = ds.dbstress_stream(dsdb, 1, pattern=("sel2",), variant=6, refs=[o]).trace().materialize()
    for a, b in zip(per_get(ref), per_get(mine)):
        np.testing.assert_array_equal(a, b)
    ref = statement(sequence([lookups(dsdb, "OBJECT", [o]), lookups(dsdb, "SECTION", [o % 100]),
                              lookups(dsdb, "ZONE", [o % 10])])).trace().materialize()
    mine = ds.dbstress_stream(dsdb, 1, pattern=("sel1",), ahi=False, refs=[o]).trace().materialize()
    for a, b in zip(per_get(ref), per_get(mine)):
        np.testing.assert_array_equal(a, b)


def test_dbstress_pattern_mixes_kinds(dsdb):
    op = ds.dbstress_stream(dsdb, 300, pattern=("read", "read", "update"), seed=4, batch=37)
    c = op.trace().materialize()
    assert c.n_gets == op.gets
    # 100 updates of 20 rows each modify 2000 leaves
    assert (c.flags & bufsim.FLAG_MODIFY).astype(bool).sum() == 2000
    assert op.rows == 200 * 43 + 100 * 20


# --------------------------------------------------------------------------------------
# the side load (seed 001), scaled down
# --------------------------------------------------------------------------------------
def test_side_load_old_blocks_time_protects_the_small_table():
    """A 275-page sysbench table in a 1024-page pool while mysqldump scans a 2055-page
    table.  The pool is first filled and evicting (the big table's prepare), then the
    small table is read and sysbench runs alone for 3 s, then the dump starts.  With
    old_blocks_time 0 every dumped leaf (74 gets in a row) is made young and pushes
    most of the small table out; with 1000 the dump stays in the old sublist."""
    db = sb.side_load_database(20_000, 150_000)
    leaves = db.index(sb.SMALL_NAME).geometry.leaf_pages
    col = f"pages:{sb.SMALL_NAME}.PRIMARY"
    low = {}
    for obt in (0, 1000):
        warm = sequence([full_scan(db, sb.BIG_NAME), full_scan(db, sb.SMALL_NAME)])
        oltp = sb.oltp_read_only(db, sb.SMALL_NAME, 3000, seed=1, cpu=CpuCost(100, 100),
                                 query_ns=200_000)
        dump = sb.mysqldump(db, sb.BIG_NAME, cpu=CpuCost(1000, 0))
        res = bufsim.replay([sequence([warm, oltp]).trace(0, "sysbench"), dump.trace(1, "dump")],
                            bufsim.mysql55(pool_pages=1024, old_blocks_time_ms=obt),
                            start_ns=[0, 4_000_000_000], sample_every_ns=100_000_000)
        s = res.streams.set_index("name")
        assert s.loc["sysbench", "end_ns"] > s.loc["dump", "end_ns"]   # concurrent throughout
        tl = res.timeline
        during = tl[(tl.time_ns >= s.loc["dump", "start_ns"]) & (tl.time_ns <= s.loc["dump", "end_ns"])]
        assert tl[tl.time_ns < s.loc["dump", "start_ns"]][col].iloc[-1] >= leaves   # all resident
        low[obt] = during[col].min()
    assert low[0] < 0.5 * leaves
    assert low[1000] >= 0.95 * leaves
