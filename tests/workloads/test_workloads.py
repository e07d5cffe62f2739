"""Geometry, page layout and plan operators against hand-computed counts; SSB against the document."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples

import bufsim
from bufsim import FLAG_AHI, FLAG_MODIFY, FLAG_SHORTCUT
from bufsim.paths import data_dir
from bufsim.workloads import (
    Column as C, CpuCost, Database, Index, Table, batch_sort, dedupe_consecutive, full_scan,
    layout_space, lookups, range_scan, scan_join, secondary_range, table_geometry,
)
from bufsim.workloads.geometry import EXTENT_PAGES, PAGE_USABLE, XDES_PAGES, record_bytes
from bufsim.workloads.ssb import N_ORDER_DATES, SSB, ssb_tables

# t1: id int PK, a int (nullable, random-order index), pad char(100) (nullable)
T1 = Table("t1", [C("id", "int", False), C("a", "int"), C("pad", "char(100)")], 5000,
           primary_key=("id",), indexes=[Index("ia", ("a",))])
# t2: no primary key: hidden row id and GEN_CLUST_INDEX
T2 = Table("t2", [C("k", "bigint", False), C("v", "varchar(300)", avg_len=40)], 20_000,
           indexes=[Index("ik", ("k",), ordered=True)])


def gets_of(op, stream=0):
    return sum(c.n_gets for c in op.chunks(stream))


def distinct_of(op):
    return np.unique(np.concatenate([c.page for c in op.chunks()])).size


# ---- geometry ------------------------------------------------------------------------
def test_t1_geometry_by_hand():
    g = table_geometry(T1)
    pk, ia = g.indexes
    # leaf: 5 header + 1 null-bitmap byte (a, pad) + 4 + 4 + 100 + 6 trx id + 7 roll ptr
    assert pk.leaf_record_bytes == 127
    # 16256 * 15/16 = 15240 bytes; 127 + 1/3 directory byte per record -> 119 records
    assert PAGE_USABLE == 16256 and pk.per_leaf == 119
    # node pointer: 5 + 4 (id) + 4 (child) = 13 -> 15240 / 13.33 = 1143
    assert pk.node_record_bytes == 13 and pk.per_node == 1143
    assert pk.level_pages == (43, 1) and pk.height == 2          # ceil(5000 / 119) = 43
    # secondary: 5 + 1 (a nullable) + 4 (a) + 4 (id) = 14, filled at ln 2: 16256*0.693/14.33
    assert ia.leaf_record_bytes == 14 and ia.per_leaf == 786
    assert ia.level_pages == (7, 1)


def test_t2_geometry_by_hand():
    g = table_geometry(T2)
    assert [x.name for x in g.indexes] == ["GEN_CLUST_INDEX", "ik"]
    cl, ik = g.indexes
    # 5 + 1 null byte (v) + 2 length bytes (varchar(300) > 255) + 8 + 40 + 6 row id + 13
    assert cl.leaf_record_bytes == 75
    assert cl.per_leaf == int(15240 // (75 + 1 / 3)) == 202
    assert cl.leaf_pages == -(-20_000 // 202) == 100
    # secondary entries carry the 6-byte row id: 5 + 8 + 6, ordered fill 15/16
    assert ik.leaf_record_bytes == 19 and ik.per_leaf == int(15240 // (19 + 1 / 3))


def test_decimal_and_validation():
    assert record_bytes([C("d", "decimal(10,2)", False)]) == 5 + 4 + 1   # 8 int digits: 4; 2 frac: 1
    assert C("x", "decimal").max_bytes == 5
    with pytest.raises(ValueError, match=r"Column\('x'\).type"):
        C("x", "blob(3")
    with pytest.raises(ValueError, match=r"avg_len = 50 is out of range; allowed: 0..10"):
        C("x", "varchar(10)", avg_len=50)
    with pytest.raises(ValueError, match=r"Table\('t'\).rows=-1 is out of range; allowed: >= 0"):
        Table("t", [C("a", "int")], -1)
    with pytest.raises(ValueError, match=r"fill = 1.5 is out of range; allowed: 0.05..1"):
        Table("t", [C("a", "int")], 1, fill=1.5)
    with pytest.raises(ValueError, match="unknown column 'b'"):
        Table("t", [C("a", "int")], 1, indexes=[Index("ib", ("b",))])


# ---- layout ----------------------------------------------------------------------------
def test_layout_rules():
    lo = ssb_tables(1.0, n_lineorder=400_000)[-1]        # 7 indexes, > 16384 pages of file
    lay = layout_space(table_geometry(lo), 9)
    pages = np.concatenate([ix.pages() for ix in lay.indexes])
    assert np.unique(pages).size == pages.size                        # no page twice
    assert pages.min() == 3 and pages.max() < lay.n_pages
    assert not np.isin(pages % XDES_PAGES, (0, 1)).any()              # descriptor/bitmap pages
    assert [ix.root for ix in lay.indexes] == list(range(3, 10))      # roots in creation order
    owner = np.full(lay.n_pages, -1)
    for k, ix in enumerate(lay.indexes):
        owner[ix.pages()] = k
    # only fragment extents mix indexes: 7 indexes x 2 segments x 32 pages = 7 extents
    mixed = [ext for ext in range(lay.n_pages // EXTENT_PAGES)
             if np.unique(owner[ext * EXTENT_PAGES:(ext + 1) * EXTENT_PAGES]).size > 2]
    assert 0 < len(mixed) <= 8
    cl = lay.clustered.leaves
    assert (np.diff(cl) > 0).all()                # loaded in key order: leaves in file order
    spec = lay.space_spec()
    assert spec.leaf_links[1][cl[0]] == cl[1] and spec.leaf_links[0][cl[1]] == cl[0]


# ---- operators ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def db():
    return Database([T1, T2])


def test_full_scan_by_hand(db):
    op = full_scan(db, "t1", cpu=CpuCost(row_ns=100, get_ns=10))
    # 1 root get + 5000 row gets + one arrival get on each of the 43 leaves
    assert (op.rows, op.gets) == (5000, 5044)
    assert op.distinct_pages() == distinct_of(op) == 44
    c = bufsim.Chunk.concat(op.chunks())
    assert c.n_gets == 5044 and len(c) == 44
    lay = db.index("t1")
    assert c.page[0] == db.dense("t1", [lay.root])[0]
    np.testing.assert_array_equal(c.page[1:], db.dense("t1", lay.leaves))
    assert c.count[1] == 120 and c.count[-1] == 5000 - 42 * 119 + 1
    assert c.cpu_ns[1] == 10 + 119 * 100 // 120


def test_range_and_lookups_by_hand(db):
    op = range_scan(db, "t1", 100, 300)
    # descent (2) + 300 entries + 1 past the end; entries 100..400 touch leaves 0..3: 3 arrivals
    assert op.gets == gets_of(op) == 2 + 300 + 1 + 3
    assert op.distinct_pages() == distinct_of(op) == 1 + 4
    entries = np.arange(0, 5000, 7)
    plain, ahi = lookups(db, "t1", entries), lookups(db, "t1", entries, ahi=True, modify=True)
    assert plain.gets == gets_of(plain) == 2 * entries.size
    assert plain.distinct_pages() == distinct_of(plain) == 1 + 43
    assert ahi.distinct_pages() == distinct_of(ahi) == 43
    c = bufsim.Chunk.concat(ahi.chunks())
    assert ahi.gets == c.n_gets == entries.size
    assert (c.flags == FLAG_AHI | FLAG_MODIFY).all()
    with pytest.raises(ValueError, match="entries of t1.PRIMARY must be in 0..4999"):
        lookups(db, "t1", [5000])


@pytest.mark.parametrize("mrr", [0, 2000])
def test_secondary_range(db, mrr):
    rng = np.random.default_rng(3)
    rowids = rng.integers(0, 5000, 800)
    op = secondary_range(db, "t1", "ia", 100, rowids, mrr_bytes=mrr)
    c = bufsim.Chunk.concat(op.chunks())
    assert op.gets == c.n_gets
    assert op.distinct_pages() == distinct_of(op)
    # the root, 800 entries + 1 past the end, an arrival on leaves 0 (the descent's leaf
    # get) and 1 (entries 100..900, 786 per leaf), a 2-level clustered descent per row
    assert op.gets == 1 + 801 + 2 + 800 * 2
    cl_leaves = set(db.dense("t1", db.index("t1").leaves).tolist())
    fetched = np.repeat(c.page, c.count)
    fetched = fetched[np.isin(fetched, list(cl_leaves))]
    expect = db.dense("t1", db.index("t1").leaves[rowids // 119])
    np.testing.assert_array_equal(np.sort(fetched), np.sort(expect))   # same rows either way
    if mrr:       # 2000 // 14 = 142 row ids per buffer, each buffer fetched in row order
        for lo in range(0, 800, 142):
            assert (np.diff(fetched[lo:lo + 142]) >= 0).all()
    else:         # index order: the rows come in random clustered order
        assert (np.diff(fetched) < 0).sum() > 300


def test_scan_join_counts(db):
    rng = np.random.default_rng(5)
    probe = np.where(rng.random(5000) < 0.3, rng.integers(0, 20_000, 5000), -1)
    n = int((probe >= 0).sum())
    for ahi, flag in ((False, 0), (True, FLAG_AHI), ("shortcut", FLAG_SHORTCUT)):
        op = scan_join(db, "t1", [("t2", None, probe, ahi)])
        per = 1 if ahi else db.index("t2").height
        assert op.rows == 5000 + n
        assert op.gets == gets_of(op) == 1 + 5000 + 43 + n * per
        assert op.distinct_pages() == distinct_of(op)
        c = bufsim.Chunk.concat(op.chunks())
        t2 = c.page >= db.tablespaces.bases[1]
        assert (c.flags[t2] != 0).sum() == (n if ahi else 0)
        assert set(np.unique(c.flags[t2])) <= {0, flag}
    with pytest.raises(ValueError, match="ahi = 'yes' is not an AHI mode"):
        scan_join(db, "t1", [("t2", None, probe, "yes")])


def test_batch_sort_and_dedupe():
    k = np.array([5, 3, 9, 1, 7, 2, 8])
    np.testing.assert_array_equal(batch_sort(k, 3), [3, 5, 9, 1, 2, 7, 8])
    np.testing.assert_array_equal(dedupe_consecutive([4, 4, 2, 2, 2, 4]), [4, 2, 4])
    with pytest.raises(ValueError, match="buffer_entries = 0 is out of range"):
        batch_sort(k, 0)


def test_operators_bounded_and_deterministic(db):
    op = full_scan(db, "t2", batch=1000)
    chunks = list(op.chunks())
    assert max(len(c) for c in chunks) <= 1000
    again = bufsim.Chunk.concat(full_scan(db, "t2").chunks())
    assert again == bufsim.Chunk.concat(chunks)


# ---- SSB ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_ssb():
    return SSB(0.02, seed=4)


def test_ssb_every_query_trace_matches_plan(small_ssb):
    for q in bufsim.workloads.ssb.QUERIES:
        op = small_ssb.query(q)
        assert op.gets == gets_of(op), q
        assert op.rows == small_ssb.expected_rows(q), q
        assert op.distinct_pages() == distinct_of(op), q
    for q in ("Q1.1", "Q1.2", "Q1.3"):
        op = small_ssb.query(q, "date_first")
        assert op.gets == gets_of(op) and op.rows == small_ssb.expected_rows(q, "date_first")
        assert op.distinct_pages() == distinct_of(op), q
    with pytest.raises(ValueError, match="query = 'Q5.1' is not an SSB query"):
        small_ssb.query("Q5.1")
    with pytest.raises(ValueError, match="date_first' exists for Q1.1-Q1.3 only"):
        small_ssb.query("Q2.1", "date_first")


def test_ssb_index_first_plans_match_their_counts(small_ssb):
    from bufsim.workloads.ssb import INDEX_DRIVERS, INDEX_PLAN_QUERIES, PLANS
    d = small_ssb.data
    for q, (table, _, lix) in INDEX_DRIVERS.items():
        op = small_ssb.query(q, "index_first")
        c = small_ssb.index_first_rows(q)
        assert op.gets == gets_of(op) and op.rows == small_ssb.expected_rows(q, "index_first"), q
        assert op.rows == c["driver"] + c["ref"] + c["eq_ref"], q
        assert op.distinct_pages() == distinct_of(op), q
        # the driving rows are the dimension rows passing its predicate, from the data directly
        pred = dict(PLANS[q]["joins"])[table]
        assert c["driver"] == int(pred(d).sum()) > 0, q
        key = {"part": d.partkey, "customer": d.custkey}[table]
        assert c["ref"] == int(pred(d)[key].sum()), q
        # the plan reads lineorder's leaves through its secondary index, not by a scan
        names = np.asarray(small_ssb.tablespaces.group_names)
        groups = set(names[small_ssb.tablespaces.page_group[op.pages()]])
        assert f"lineorder.{lix}" in groups, (q, groups)
    assert INDEX_PLAN_QUERIES.count("Q3.2") == 1 and "Q1.1" in INDEX_PLAN_QUERIES
    assert sum(q.endswith(":index_first") for q in INDEX_PLAN_QUERIES) == len(INDEX_DRIVERS) == 9
    with pytest.raises(ValueError, match="index_first' exists for"):
        small_ssb.query("Q3.2", "index_first")


@pytest.mark.parametrize("ahi", ["shortcut", True, False])
def test_ssb_index_first_events_equal_the_operator_reference(small_ssb, ahi):
    """The directly built index_first events are the reference's (one plan operator per
    driving row) event for event: pages, counts, CPU, flags and the statement end."""
    from bufsim.workloads.plans import statement
    from bufsim.workloads.ssb import INDEX_DRIVERS
    cpu = CpuCost(row_ns=7, get_ns=1171)
    for q in INDEX_DRIVERS:
        fast = small_ssb.query(q, "index_first", cpu=cpu, ahi=ahi)
        ref = statement(small_ssb._index_first_reference(q, cpu, ahi))
        a, b = list(fast.chunks(2)), list(ref.chunks(2))
        for f in ("page", "count", "cpu_ns", "stream", "flags"):
            assert np.array_equal(np.concatenate([getattr(c, f) for c in a]),
                                  np.concatenate([getattr(c, f) for c in b])), (q, f)
        assert fast.gets == ref.gets and fast.rows == ref.rows, q
    # a different block size cuts the chunks elsewhere, not the events
    q = "Q3.1"
    one = np.concatenate([c.count for c in small_ssb._index_first_plan(q, cpu, ahi, block=7).chunks()])
    assert np.array_equal(one, np.concatenate([c.count for c in small_ssb.query(q, "index_first", cpu=cpu, ahi=ahi).chunks()]))
    # with batches smaller than a driving row's lineorder rows and probes (at SF 1 a batch
    # holds 65,536), the segments the batches start stop merges where the reference's do
    def events(op):
        return np.concatenate([np.stack([c.page, c.count, c.cpu_ns, c.flags]) for c in op.chunks()],
                              axis=1)

    fast = events(small_ssb._index_first_plan(q, cpu, ahi, batch=16))
    assert np.array_equal(fast, events(statement(small_ssb._index_first_reference(q, cpu, ahi, batch=16))))
    assert fast.shape[1] > len(one)                  # the batches split runs the full batch merges


def test_ssb_index_first_plan_without_driving_rows_is_empty():
    """At SF 0.02 (seed 0) no dimension row passes Q3.3's predicate: its index_first plan
    has no gets and lists no pages, through the direct events and the reference alike
    (the reference raised IndexError from an empty operator sequence)."""
    from bufsim.workloads.plans import sequence
    ssb = SSB(0.02, seed=0)
    assert ssb.index_first_rows("Q3.3")["driver"] == 0
    op = ssb.query("Q3.3", "index_first")
    assert op.gets == 0 and op.rows == 0 and op.pages().size == 0
    ref = ssb._index_first_reference("Q3.3", CpuCost(), False)
    assert ref.gets == 0 and ref.pages().size == 0 and list(ref.chunks()) == []
    with pytest.raises(ValueError, match="no operators and no tablespaces"):
        sequence([])


def test_ssb_q11_probe_count_matches_closed_form(small_ssb):
    """Orders with a qualifying line probe dim_date once: n_orders * (1 - E[(1-p)^L])."""
    p = 3 / 11 * 24 / 50
    q = 1 - p
    expect = 1 - np.mean([q ** L for L in range(1, 8)])
    n_orders = int(small_ssb.data.order[-1]) + 1
    probes = int((small_ssb.probes("Q1.1")[0][1] >= 0).sum())
    sd = np.sqrt(n_orders * expect * (1 - expect))
    assert abs(probes - n_orders * expect) < 4 * sd


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(1, 40), st.integers(1, 6), st.integers(0, 2**32 - 1),
       st.integers(0, 5), st.integers(0, 3), st.integers(0, 300))
def test_emit_kept_equals_emit_of_the_kept_entries(k, width, seed, n_pages, row_ns, get_ns):
    """plans._emit_kept (one pass) gives the chunk of plans.emit_chunk over the entries >= 0 of a
    row-major layout: same pages, counts, CPU and flags, runs merged across dropped
    entries as in the compacted sequence."""
    from bufsim.workloads.plans import CpuCost, emit_chunk, _emit_kept
    rng = np.random.default_rng(seed)
    pg = rng.integers(-1, n_pages + 1, size=(k, width))   # few pages: long runs, many -1
    rw = rng.integers(0, 3, size=(k, width))
    fl = rng.choice(np.array([0, FLAG_AHI, FLAG_SHORTCUT], dtype=np.uint8), size=(k, width))
    cpu = CpuCost(row_ns=row_ns, get_ns=get_ns)
    keep = pg.ravel() >= 0
    want = emit_chunk(pg.ravel()[keep], rw.ravel()[keep], cpu, 3, fl.ravel()[keep])
    got = _emit_kept(pg, rw, fl, cpu, 3)
    assert got == want
    for col in ("page", "count", "cpu_ns", "stream", "flags"):
        assert getattr(got, col).dtype == getattr(want, col).dtype, col


def _probes_by_arrays(ssb, name):
    """SSB.probes written with whole-array operations (how it was before its one-pass
    kernel): the reference the kernel is held to."""
    from bufsim.workloads.ssb import PLANS
    spec, d = PLANS[name], ssb.data
    alive = spec["lo"](d) if "lo" in spec else np.ones(d.rows, dtype=bool)
    out = []
    for table, pred in spec["joins"]:
        keys = ssb._key_column(table).astype(np.int64)
        idx = np.flatnonzero(alive)
        k = keys[idx]
        keep = np.ones(k.size, dtype=bool)
        keep[1:] = k[1:] != k[:-1]
        e = np.full(d.rows, -1, dtype=np.int64)
        e[idx[keep]] = k[keep]
        out.append((table, e))
        m = ssb._dim_mask(table, pred)
        if m is not None:
            alive &= m[keys]
    return out


@pytest.mark.parametrize("seed", [0, 4])
def test_ssb_probes_equal_the_array_formulation(seed):
    """Every query's probes (key per lineorder row, -1 for a filtered row or a repeated
    key) from the one-pass kernel equal the whole-array formulation's."""
    from bufsim.workloads.ssb import QUERIES
    ssb = SSB(0.02, seed=seed)
    for q in QUERIES:
        got, want = ssb.probes(q), _probes_by_arrays(ssb, q)
        assert [t for t, _ in got] == [t for t, _ in want], q
        for (t, a), (_, b) in zip(got, want):
            assert a.dtype == b.dtype and np.array_equal(a, b), f"{q} {t}"


def test_ssb_deterministic():
    a, b = SSB(0.01, seed=1), SSB(0.01, seed=1)
    assert bufsim.Chunk.concat(a.query("Q2.1").chunks()) == bufsim.Chunk.concat(b.query("Q2.1").chunks())
    assert not np.array_equal(SSB(0.01, seed=2).data.partkey, a.data.partkey)


@pytest.fixture(scope="module")
def ssb1():
    return SSB(1.0)


@pytest.fixture(scope="module")
def reported():
    d = pd.read_csv(data_dir() / "ssb_q11_counters.csv")
    assert (d.source == "000_fe2813b876a91991.txt").all()
    return d.set_index(["plan", "old_blocks_time_ms", "metric"]).value


@pytest.mark.parametrize("plan", ["scan", "date_first"])
def test_ssb_sf1_q11_against_document(ssb1, reported, plan):
    """Issue acceptance: Q1.1 on mysql56 in a 128M pool, gets within 10%, rows within 2%."""
    op = ssb1.query("Q1.1", plan)
    res = bufsim.replay(op.trace(), bufsim.mysql56(pool_pages="128M", device="fs_cache"))
    gets = res.totals["NUMBER_PAGES_GET"]
    assert abs(gets / reported[plan, 1000, "INNODB_BUFFER_POOL_READ_REQUESTS"] - 1) < 0.10
    assert abs(op.rows / reported[plan, 1000, "INNODB_ROWS_READ"] - 1) < 0.02
    read = res.totals["NUMBER_PAGES_READ"]
    assert abs(read / reported[plan, 1000, "NUMBER_PAGES_READ"] - 1) < 0.10


def test_ssb_sf1_lineorder_clustered_pages(ssb1, reported):
    pages = ssb1.db.index("lineorder").pages().size
    assert abs(pages / reported["scan", 1000, "NUMBER_PAGES_READ"] - 1) < 0.05
    # the data: 6.0M rows, order dates over 2406 days
    assert abs(ssb1.data.rows / 6_001_171 - 1) < 0.002
    assert ssb1.data.orderdate.max() == N_ORDER_DATES - 1
