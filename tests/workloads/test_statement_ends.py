"""Every workload marks the end of each SQL statement with FLAG_STMT_END, exactly once.

The flag is what moves the server activity count under
``PoolConfig(cleaner_activity="statement")``; these tests count it on small cases
and check that it sits on the statement's last event, without the engine.
"""
import numpy as np
import pytest

import bufsim
from bufsim import FLAG_AHI, FLAG_MODIFY, FLAG_STMT_END
from bufsim.trace import Chunk
from bufsim.workloads import dbstress as ds
from bufsim.workloads import rein
from bufsim.workloads import sysbench as sb
from bufsim.workloads.dbt3 import QUERIES, VARIANTS, Dbt3
from bufsim.experiments.dbt3 import CLEANER_ACTIVITY, pool_config


def events(op, stream=0):
    c = Chunk.concat([c for c in op.chunks(stream) if len(c)])
    return c


def ends(c):
    return np.flatnonzero(c.flags & FLAG_STMT_END)


@pytest.fixture(scope="module")
def sbdb():
    return sb.side_load_database(20_000, 60_000)


@pytest.fixture(scope="module")
def dsdb():
    return ds.dbstress_database(3_000)


@pytest.fixture(scope="module")
def d01():
    return Dbt3(0.01, seed=0)


# ---- sysbench ---------------------------------------------------------------------------
@pytest.mark.parametrize("ahi", [False, True])
def test_sysbench_14_statement_ends_per_transaction(sbdb, ahi):
    n_txn = 37
    op = sb.oltp_read_only(sbdb, sb.SMALL_NAME, n_txn, seed=3, ahi=ahi, batch=10)
    c = events(op)
    e = ends(c)
    assert e.size == n_txn * sb.REQUESTS_PER_TXN == n_txn * 14
    assert e[-1] == len(c) - 1                       # the stream ends with a statement end
    # the 10 point selects come first: each is one descent of height h (or one AHI get),
    # so the first 10 ends of the first transaction are at h-1, 2h-1, ..., 10h-1
    h = 1 if ahi else sbdb.index(sb.SMALL_NAME).height
    assert list(e[:10]) == [h * (i + 1) - 1 for i in range(10)]
    # a transaction of 14 statements: ends 14, 28, ... close a transaction, and the
    # events between two consecutive transaction ends hold exactly 14 ends
    per_txn = e.reshape(n_txn, 14)
    assert (np.diff(per_txn[:, -1]) > 0).all()


def test_sysbench_statement_count_follows_the_options(sbdb):
    op = sb.oltp_read_only(sbdb, sb.SMALL_NAME, 5, seed=1, point_selects=3, simple_ranges=2,
                           sum_ranges=0, order_ranges=0, distinct_ranges=1)
    assert ends(events(op)).size == 5 * (3 + 2 + 1)


def test_mysqldump_is_one_statement(sbdb):
    op = sb.mysqldump(sbdb, sb.SMALL_NAME)
    c = events(op, 1)
    assert list(ends(c)) == [len(c) - 1]
    assert int(c.count.sum()) == op.gets          # gets unchanged by the flag


# ---- rein --------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["select", "update"])
@pytest.mark.parametrize("ahi", [False, True])
def test_rein_one_statement_per_transaction(kind, ahi):
    db = rein.rein_database(2_000_000)
    n = 101
    op = rein.rein_stream(db, n, kind=kind, dist="uniform", hot_rows=2_000_000, ahi=ahi,
                          batch=17, seed=2)
    c = events(op)
    e = ends(c)
    w = rein.rein_expected(db, kind=kind, ahi=ahi)["gets"]
    assert e.size == n
    # every transaction is w single-get events; its end is its last event
    assert list(e) == [w * (i + 1) - 1 for i in range(n)]
    if kind == "update":
        # the last event of an UPDATE is the modifying get of the restored cursor
        assert (c.flags[e] & FLAG_MODIFY).all()
        assert np.count_nonzero(c.flags & FLAG_MODIFY) == n


# ---- dbSTRESS ----------------------------------------------------------------------------
@pytest.mark.parametrize("pattern,per_txn", [(("sel1",), 1), (("sel2",), 1), (("read",), 2),
                                             (("update",), 1),
                                             (("read", "read", "update"), None)])
@pytest.mark.parametrize("variant", [1, 4, 7])
def test_dbstress_statement_ends(dsdb, pattern, per_txn, variant):
    n = 30
    op = ds.dbstress_stream(dsdb, n, pattern=pattern, variant=variant, batch=7, seed=5)
    c = events(op)
    stmts = sum(2 if pattern[i % len(pattern)] == "read" else 1 for i in range(n))
    if per_txn is not None:
        assert stmts == n * per_txn
    assert ends(c).size == stmts
    assert ends(c)[-1] == len(c) - 1


def test_dbstress_sel1_ends_after_its_three_lookups(dsdb):
    # SEL1 with the AHI: three single FLAG_AHI gets (OBJECT, SECTION, ZONE), the third ends it
    op = ds.dbstress_stream(dsdb, 4, pattern=("sel1",), ahi=True, seed=0)
    c = events(op)
    assert list(ends(c)) == [2, 5, 8, 11]
    assert (c.flags & FLAG_AHI).all()


# ---- DBT-3 -------------------------------------------------------------------------------
@pytest.mark.parametrize("q", QUERIES)
def test_dbt3_query_is_one_statement(d01, q):
    for v in VARIANTS:
        op = d01.query(q, v)
        c = events(op)
        assert list(ends(c)) == [len(c) - 1], (q, v)
        assert int(c.count.sum()) == op.gets


def test_dbt3_56_pools_count_activity_by_statement():
    assert CLEANER_ACTIVITY == "statement"
    assert pool_config("5.6", 3200).cleaner_activity == "statement"
    assert pool_config("5.6", 3200, cleaner_activity="get").cleaner_activity == "get"
    assert pool_config("5.5", 3200).cleaner_activity == "get"       # no page cleaner
    # the engine default stays 'get': a user trace marks statement ends only when it has a
    # statement column (read_trace), and without the marks 'statement' would starve the cleaner
    assert bufsim.mysql56(pool_pages=3200).cleaner_activity == "get"
