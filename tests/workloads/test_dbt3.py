"""DBT-3 workload: geometry by hand, plan counts against traces, determinism, and the
direction of the BKA / DS-MRR effects of 002_5c4a4fbcadbdca94.txt in a tiny pool."""
import math

import numpy as np
import pytest

import bufsim
from bufsim.workloads.dbt3 import PLANS, QUERIES, VARIANTS, Dbt3, dbt3_database, dbt3_tables
from bufsim.workloads.geometry import PAGE_USABLE, table_geometry


@pytest.fixture(scope="module")
def d01():
    return dbt3_database(0.01, seed=0)


@pytest.fixture(scope="module")
def d05():
    return Dbt3(0.05, seed=0)


def _gets_by_page(op, n_pages):
    acc = np.zeros(n_pages, dtype=np.int64)
    for c in op.chunks():
        np.add.at(acc, c.page, c.count)
    return acc


# ---- geometry ------------------------------------------------------------------------
def test_lineitem_and_orders_geometry_by_hand():
    geo = {t.name: table_geometry(t) for t in dbt3_tables(1.0)}
    usable = PAGE_USABLE * 15 / 16                       # 16256 bytes at 15/16 fill = 15240
    # lineitem leaf record: 5 header + 0 null bitmap (all NOT NULL) + 1 length byte
    # (l_comment) + 4 int 16 + 4 decimal(15,2) 28 (7 each) + 2 char(1) + 3 date 9
    # + char(25) + char(10) + l_comment 26.5 + trx id 6 + roll ptr 7 = 135.5 bytes
    li = geo["lineitem"].clustered
    assert li.leaf_record_bytes == 135.5
    assert li.per_leaf == int(usable // (135.5 + 1 / 3)) == 112
    assert li.leaf_pages == math.ceil(6_001_215 / 112) == 53_583
    # node pointer: 5 header + (l_orderkey, l_linenumber) 8 + child page 4 = 17 bytes
    assert li.per_node == int(usable // (17 + 1 / 3)) == 879
    assert li.level_pages == (53_583, 61, 1)        # 53,583 / 879 = 60.96
    # orders: 5 + 1 length byte + 4 + 4 + 1 + 7 + 3 + 15 + 15 + 4 + o_comment 48.5 + 13
    od = geo["orders"].clustered
    assert od.leaf_record_bytes == 120.5
    assert od.per_leaf == 126 and od.leaf_pages == math.ceil(1_500_000 / 126) == 11_905
    # i_o_orderdate: 5 header + date 3 + o_orderkey 4 = 12 bytes, built sorted (15/16)
    ix = geo["orders"].index("i_o_orderdate")
    assert ix.leaf_record_bytes == 12 and ix.per_leaf == int(usable // (12 + 1 / 3)) == 1235


def test_row_counts_follow_the_spec(d01):
    t = {x.name: x.rows for x in d01.tables}
    assert (t["part"], t["supplier"], t["partsupp"], t["customer"], t["orders"]) == \
        (2000, 100, 8000, 1500, 15000)
    assert (t["nation"], t["region"]) == (25, 5)
    assert abs(t["lineitem"] / 15000 - 4) < 0.1          # 1..7 lines per order
    assert d01.data.o_lstart[-1] == t["lineitem"]


# ---- plans ---------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("q", QUERIES)
def test_trace_gets_equal_plan_arithmetic(d01, q, variant):
    op = d01.query(q, variant)
    chunks = list(op.chunks())
    assert sum(c.n_gets for c in chunks) == op.gets
    assert op.rows > 0 and op.gets > op.rows // 2
    for c in chunks:
        c.validate(d01.tablespaces.n_pages)


def test_kept_plan_counts_follow_the_buffer_sizes(d01):
    """work() and expected() share one plan pass per query, variant and buffer sizes
    (Dbt3._count): a copy with another join_buffer_size (notebook 05's sensitivity) or
    read_rnd_buffer_size counts as a database built with it, and the caller's dict is
    its own."""
    import copy
    for jb, rr in ((1024, 262144), (128, 128)):
        dj = copy.copy(d01)
        dj.join_buffer_size, dj.read_rnd_buffer_size = jb, rr
        fresh = Dbt3(0.01, seed=0, join_buffer_size=jb, read_rnd_buffer_size=rr)
        for q, v in ((11, "bka"), (4, "mrr")):
            assert dj.work(q, v) == fresh.work(q, v)
            assert dj.expected(q, v) == fresh.expected(q, v)
    assert d01.work(4, "mrr") != dj.work(4, "mrr")     # the buffers change the plan's work
    w = d01.work(11, "bka")
    assert w != dj.work(11, "bka")
    w["rows"] = -1
    assert d01.work(11, "bka")["rows"] == d01.expected(11, "bka")[0] > 0


def test_same_seed_same_trace_other_seed_other_trace(d01):
    again = Dbt3(0.01, seed=0)
    other = Dbt3(0.01, seed=1)
    for q in (3, 17, 21):
        a = bufsim.Chunk.concat(d01.query(q, "bka").chunks())
        assert a == bufsim.Chunk.concat(again.query(q, "bka").chunks())
        assert not a == bufsim.Chunk.concat(other.query(q, "bka").chunks())


def _has_eq_ref(d, q):
    return any(st.unique for part in PLANS[q]["parts"] if part != "li_covering_scan"
               for st in part["steps"](d))


@pytest.mark.parametrize("q", QUERIES)
def test_variants_only_reorder(d01, q):
    """Without eq_ref steps BKA and DS-MRR issue the same multiset of gets as plain; with
    them they touch the same pages (plain skips an eq_ref probe repeating the previous
    key, a batched probe is never skipped, so counts may differ)."""
    n = d01.tablespaces.n_pages
    base = _gets_by_page(d01.query(q, "plain"), n)
    for v in ("mrr", "bka"):
        other = _gets_by_page(d01.query(q, v), n)
        if not _has_eq_ref(d01, q):
            assert np.array_equal(base, other), v
        assert np.array_equal(base > 0, other > 0), v
    assert d01.distinct_pages(q, "plain") == int((base > 0).sum())


def test_bad_arguments_name_the_field(d01):
    with pytest.raises(ValueError, match="q = 1 .*allowed: 2, 3"):
        d01.query(1, "plain")
    with pytest.raises(ValueError, match="variant = 'hash'.*plain, mrr, bka"):
        d01.query(3, "hash")
    with pytest.raises(ValueError, match="sf = 0"):
        Dbt3(0)


def test_plan_table_lists_every_query(d01):
    t = d01.plan_table()
    assert sorted(t["query"].unique()) == sorted(QUERIES)
    q17 = t[t["query"] == 17]
    assert list(q17["table"]) == ["part", "lineitem", "lineitem"]
    assert list(q17["bka"]) == [False, True, False]


# ---- engine: the document's directions in a tiny pool -----------------------------------
def _replay(op, **kw):
    cfg = bufsim.mysql56(pool_pages=320, instances=1, device="hdd7200", **kw)
    res = bufsim.replay(op.trace(), cfg)
    reads = int(res.totals["NUMBER_PAGES_READ"])
    r, s = cfg.device.random_read_ns, cfg.device.seq_read_ns
    sequential = (reads * r - res.device_busy_ns) / (r - s)      # busy = rand*r + seq*s
    return reads, sequential, int(res.streams["elapsed_ns"].iloc[0])


def test_q17_bka_reads_far_more_than_nested_loops(d05):
    # 10 parts x ~30 lines: the lines' pages exceed a 64-page pool; nested loops re-read
    # one part's pages right after fetching them, BKA's row-id order spreads the parts
    plain = _replay(d05.query(17, "plain"), misc_pages=256)
    bka = _replay(d05.query(17, "bka"), misc_pages=256)
    assert bka[0] > 5 * plain[0]
    assert bka[2] > 5 * plain[2]


@pytest.mark.parametrize("q", [3, 4, 10])
def test_ds_mrr_reads_are_more_sequential(d05, q):
    plain = _replay(d05.query(q, "plain"))
    mrr = _replay(d05.query(q, "mrr"))
    assert mrr[1] / mrr[0] > 2 * plain[1] / plain[0]
    assert mrr[2] < plain[2]


def test_q18_orders_computed_once_per_data_set(d05):
    """Q18's subquery (orders whose lineitems' quantities sum to more than 300) is a function
    of the data: the plan's filter gets the same read-only array on every batch, and it
    equals the sum over each order's lineitems counted here order by order."""
    from bufsim.workloads.dbt3_plans import _q18_orders
    D = d05.data
    got = _q18_orders(D)
    assert _q18_orders(D) is got and not got.flags.writeable
    lo, hi = D.o_lstart[:-1], D.o_lstart[1:]
    want = np.array([D.l_qty[a:b].astype(np.int64).sum() > 300 for a, b in zip(lo, hi)])
    assert got.shape == want.shape and np.array_equal(got, want)
    assert 0 < int(got.sum()) < got.size      # some orders qualify, not all


def test_query_chunk_is_the_query_in_one_chunk_and_leaves_the_same_work():
    """query_chunk: the events of query()'s chunks joined (every column, dtype and the
    statement-end flag), and the work its page pass gathers equals that of the count-only
    pass of work() (a fresh database makes the count pass)."""
    from bufsim.trace import Chunk
    from bufsim.workloads.plans import CpuCost
    cpu = CpuCost(row_ns=1000, get_ns=100)
    a, b = Dbt3(0.01, seed=0, join_buffer_size=1311), Dbt3(0.01, seed=0, join_buffer_size=1311)
    for q in QUERIES:
        for v in VARIANTS:
            want = Chunk.concat(list(a.query(q, v, cpu=cpu).chunks(2)))
            got = b.query_chunk(q, v, cpu=cpu, stream=2)
            for col in ("page", "count", "cpu_ns", "stream", "flags"):
                x, y = getattr(want, col), getattr(got, col)
                assert x.dtype == y.dtype and np.array_equal(x, y), (q, v, col)
            assert got.flags[-1] & bufsim.FLAG_STMT_END
            assert b.work(q, v) == a.work(q, v), (q, v)
