"""sysbench 0.4 OLTP read-only on ``sbtest``, and mysqldump of a second table (seed 001).

Schema (sysbench 0.4 ``oltp`` prepare, latin1, every column NOT NULL)::

    CREATE TABLE sbtest (id int unsigned NOT NULL AUTO_INCREMENT, k int unsigned NOT NULL
      DEFAULT 0, c char(120) NOT NULL DEFAULT '', pad char(60) NOT NULL DEFAULT '',
      PRIMARY KEY (id), KEY k (k))

Prepare inserts ids 1..N in order with ``k = 0``, so both indexes are filled in key
order (``k`` entries are ``(0, id)``, ascending).  Geometry (COMPACT, see
:mod:`bufsim.workloads.geometry`): a clustered record is 5 (header) + 4 (id) + 6
(trx id) + 7 (roll ptr) + 4 (k) + 120 (c) + 60 (pad) = 206 bytes; at 15/16 fill a
leaf holds floor(16256 x 15/16 / (206 + 1/3)) = 73 rows and a node page 1143
pointers (13-byte records: 5 + 4 + 4); ``k`` records are 13 bytes, 1143 per leaf.

Table sizes of 001_b3c329944515dee7.txt: the document's own command lines give
``--oltp-table-size=1100000`` (the "200MB" table) and ``17600000`` (the "4GB"
table), and we use them (:data:`SMALL_ROWS`, :data:`BIG_ROWS`).  The geometry agrees
with what the document measured: 1.1M x 206 bytes of record data = 216.1 MiB
against the 216.31 "DATA_SIZE_MB" it reports for the small PRIMARY (data size is
record bytes, not page bytes); the index itself is 15,069 leaves + 15 node pages =
235.7 MiB of 16 KiB pages.  The big table is 241,096 leaves (3.68 GiB of pages,
3.38 GiB of records), larger than the 512 MB (32,768 page) pool.
:func:`rows_for_size` derives N for any other target size.

Transaction (sysbench 0.4 ``get_request_complex`` with ``--oltp-read-only``;
defaults ``oltp-point-selects=10``, one each of simple/sum/order/distinct ranges,
``oltp-range-size=100``)::

    10 x  SELECT c FROM sbtest WHERE id=?                        (PK point select)
          SELECT c FROM sbtest WHERE id BETWEEN ? AND ?+99       (100 rows)
          SELECT SUM(K) FROM sbtest WHERE id BETWEEN ? AND ?+99  (100 rows)
          SELECT c FROM sbtest WHERE id BETWEEN ? AND ?+99 ORDER BY c
          SELECT DISTINCT c FROM sbtest WHERE id BETWEEN ? AND ?+100 ORDER BY c  (101 rows)

A range start is a random id clipped to ``N - range_size`` (and to >= 1), as in
the source.  Each range is a clustered range scan (:func:`bufsim.workloads.plans.range_scan`
arithmetic: descent, one get per row and per leaf arrival, one past the end); each
point select a root-to-leaf descent, or with ``ahi=True`` one leaf get carrying
FLAG_AHI.  (Range starts always descend: the AHI shortcut of the point select,
``row_sel_try_search_shortcut_for_mysql``, serves unique searches only.)  BEGIN and
COMMIT touch no table page.  sysbench counts 14 read requests per transaction;
each of the 14 statements ends with an event carrying :data:`bufsim.FLAG_STMT_END`
(:mod:`~bufsim.workloads.txn`).

Random ids (``rnd_func_uniform`` / ``rnd_func_special`` of sysbench 0.4):

* ``uniform``: ``1 + rnd % N``.
* ``special`` (``--oltp-dist-pct=1 --oltp-dist-res=75 --oltp-dist-iter=12``): draw
  ``res`` uniform in ``1 .. N x (100 // (100 - dist_res))`` (integer division: 4N
  for 75).  If ``res <= N`` (1/4 of draws) the id is Gaussian-like, the mean of
  ``dist_iter`` uniform ids; otherwise it is ``N/2 - N*pct/200 + res % (N*pct/100)``:
  uniform over a band of ``pct`` % of the ids centred in the middle of the table
  (not at its start).  The band gets 3/4 of the draws plus the Gaussian draws that
  fall into it (about 0.25 x 4.8 % more, :func:`special_hot_share`).

CPU: ``CpuCost(row_ns, get_ns)`` per row and per get, ``query_ns`` once per
statement (parse, network round trip, think time) and ``txn_ns`` once per
transaction (BEGIN/COMMIT, think time), each charged on the statement's or
transaction's first get, which is always an event of one get.

The transaction-stream machinery (the vectorised descents and range scans,
:class:`PageFrequency`) lives in :mod:`~bufsim.workloads.txn`, shared with
:mod:`~bufsim.workloads.rein` and :mod:`~bufsim.workloads.dbstress`.
"""
from __future__ import annotations

import math

import numpy as np

from .._validation import check_int
from .geometry import PAGE_SIZE, Column, Index, Table, table_geometry
from .plans import CpuCost, Database, Operator, full_scan, statement
from .txn import PageFrequency, clustered_ranges, leaf_descents, range_gets, txn_operator

__all__ = [
    "SMALL_ROWS", "BIG_ROWS", "SMALL_NAME", "BIG_NAME", "sbtest_table", "rows_for_size",
    "side_load_database", "random_ids", "special_band", "special_hot_share", "oltp_read_only",
    "oltp_expected", "mysqldump", "PageFrequency", "REQUESTS_PER_TXN",
]

#: ``--oltp-table-size`` of the small and the big table in 001_b3c329944515dee7.txt
SMALL_ROWS = 1_100_000
BIG_ROWS = 17_600_000
SMALL_NAME = "md_cache_test_small"
BIG_NAME = "md_cache_test_big"
#: read requests of one read-only transaction with the default statement counts
REQUESTS_PER_TXN = 14

C = Column


def sbtest_table(rows: int, name: str = "sbtest") -> Table:
    """The sysbench 0.4 ``sbtest`` table with ``rows`` rows (module docstring)."""
    return Table(name, [C("id", "int unsigned", False), C("k", "int unsigned", False),
                        C("c", "char(120)", False), C("pad", "char(60)", False)],
                 int(rows), primary_key=("id",), indexes=[Index("k", ("k",), ordered=True)])


def rows_for_size(target_bytes: float, *, measure: str = "pages") -> int:
    """Rows of ``sbtest`` whose clustered index is about ``target_bytes``.

    ``measure="pages"``: leaf pages x 16 KiB (the file size of the index);
    ``"data"``: record bytes (what INNODB_BUFFER_POOL_PAGES_INDEX calls
    ``data_size``).  E.g. ``rows_for_size(216.31 * 2**20, measure="data")``
    gives 1,101,040, the document's 1,100,000.
    """
    g = table_geometry(sbtest_table(1)).clustered
    if measure == "pages":
        return int(target_bytes // PAGE_SIZE) * g.per_leaf
    if measure == "data":
        return int(target_bytes // g.leaf_record_bytes)
    raise ValueError(f"measure={measure!r} is unknown; allowed: 'pages', 'data'")


def side_load_database(small_rows: int = SMALL_ROWS, big_rows: int = BIG_ROWS, *,
                       small: str = SMALL_NAME, big: str = BIG_NAME, seed: int = 0) -> Database:
    """Both tables of seed 001 in one :class:`Database` (one shared Tablespaces), so a
    sysbench stream and a mysqldump stream can be replayed together."""
    return Database([sbtest_table(small_rows, small), sbtest_table(big_rows, big)], seed=seed)


# --------------------------------------------------------------------------------------
# sysbench's random ids
# --------------------------------------------------------------------------------------
def special_band(n_rows: int, dist_pct: int = 1) -> tuple[int, int]:
    """First and last id (inclusive) of the 'special' hot band of sysbench 0.4."""
    d = max(1, n_rows * dist_pct // 100)
    lo = n_rows // 2 - n_rows * dist_pct // 200
    return lo, lo + d - 1


def special_hot_share(n_rows: int, dist_pct: int = 1, dist_res: int = 75,
                      dist_iter: int = 12) -> float:
    """Expected share of 'special' draws that land in :func:`special_band`.

    ``1 - 1/m`` of the draws go to the band directly (``m = 100 // (100 -
    dist_res)``); the other ``1/m`` are means of ``dist_iter`` uniform ids,
    approximately normal with mean ``(N+1)/2`` and variance ``(N^2-1)/(12 dist_iter)``
    (central limit theorem; error well under 0.1 % of the share at 12 iterations),
    and land in the band with the normal probability of the band.
    """
    m = 100 // (100 - dist_res)
    lo, hi = special_band(n_rows, dist_pct)
    mu = (n_rows + 1) / 2
    sd = math.sqrt((n_rows ** 2 - 1) / (12 * dist_iter))
    # the mean is floored (integer division): id <= x  <=>  mean < x + 1
    def cdf(x):
        return 0.5 * (1 + math.erf((x - mu) / (sd * math.sqrt(2))))
    p_gauss = cdf(hi + 1) - cdf(lo)
    return (1 - 1 / m) + p_gauss / m


def random_ids(rng: np.random.Generator, n_rows: int, size, dist: str = "uniform", *,
               dist_pct: int = 1, dist_res: int = 75, dist_iter: int = 12) -> np.ndarray:
    """sysbench 0.4 ``GET_RANDOM_ID()``: ids in ``1..n_rows`` (module docstring).

    ``rnd % k`` is drawn as a uniform integer in ``0..k-1``.  A special id that
    would be 0 (tables of fewer than 2/pct rows) is clipped to 1.
    """
    if n_rows < 1:
        raise ValueError(f"n_rows={n_rows} is out of range; allowed: >= 1")
    if dist == "uniform":
        return 1 + rng.integers(0, n_rows, size=size, dtype=np.int64)
    if dist != "special":
        raise ValueError(f"dist={dist!r} is unknown; allowed: 'uniform', 'special'")
    if not 0 <= dist_res < 100 or not 0 < dist_pct <= 100 or dist_iter < 1:
        raise ValueError("special distribution needs 0 <= dist_res < 100, 0 < dist_pct <= 100, "
                         "dist_iter >= 1")
    m = 100 // (100 - dist_res)
    res = 1 + rng.integers(0, n_rows * m, size=size, dtype=np.int64)
    gauss = (1 + rng.integers(0, n_rows, size=np.shape(res) + (dist_iter,),
                              dtype=np.int64)).sum(axis=-1) // dist_iter
    d = max(1, n_rows * dist_pct // 100)
    band = res % d + (n_rows // 2 - n_rows * dist_pct // 200)
    out = np.where(res <= n_rows, gauss, band)
    return np.clip(out, 1, n_rows)


# --------------------------------------------------------------------------------------
# sysbench OLTP read-only
# --------------------------------------------------------------------------------------
def _range_from(ids, n_rows, range_size):
    f = np.where(ids + range_size > n_rows, n_rows - range_size, ids)
    return np.maximum(f, 1)


def oltp_read_only(db: Database, table: str, n_txn: int, *, dist: str = "uniform",
                   seed: int = 0, cpu: CpuCost = CpuCost(), query_ns: int = 0, txn_ns: int = 0,
                   ahi: bool = False, point_selects: int = 10, simple_ranges: int = 1,
                   sum_ranges: int = 1, order_ranges: int = 1, distinct_ranges: int = 1,
                   range_size: int = 100, dist_pct: int = 1, dist_res: int = 75,
                   dist_iter: int = 12, batch: int = 1024) -> Operator:
    """``n_txn`` sysbench 0.4 OLTP read-only transactions on ``table`` (module docstring).

    Returns an :class:`~bufsim.workloads.plans.Operator` whose ``rows`` and
    ``gets`` are the exact counts of the drawn stream (from the plan
    arithmetic); ``.trace(stream)`` gives the lazily generated trace (seeded:
    equal arguments give equal traces).
    """
    ix = db.index(table)
    n_rows = ix.geometry.rows
    for f, v in (("point_selects", point_selects), ("simple_ranges", simple_ranges),
                 ("sum_ranges", sum_ranges), ("order_ranges", order_ranges),
                 ("distinct_ranges", distinct_ranges), ("range_size", range_size)):
        check_int(f, v, 1 if f == "range_size" else 0)
    # statements after the point selects: (rows asked for: to - from + 1)
    spans = ([range_size] * (simple_ranges + sum_ranges + order_ranges)
             + [range_size + 1] * distinct_ranges)
    n_stmt = point_selects + len(spans)
    kw = dict(dist_pct=dist_pct, dist_res=dist_res, dist_iter=dist_iter)

    def draw(rng, b, lo):
        ids = random_ids(rng, n_rows, (b, n_stmt), dist, **kw)
        first = _range_from(ids[:, point_selects:], n_rows, range_size) - 1   # entry positions
        span = np.array(spans, dtype=np.int64)
        n = np.minimum(span[None, :], n_rows - first)
        return ids[:, :point_selects] - 1, first, n

    def build(ev, params):
        points, first, n = params
        b = points.shape[0]
        txn = np.arange(b)[:, None]
        if point_selects:
            leaf_descents(ev, db, table, ix, points, txn, np.arange(point_selects)[None, :], ahi=ahi)
        for s in range(first.shape[1]):
            clustered_ranges(ev, db, table, ix, first[:, s], n[:, s], np.arange(b),
                              point_selects + s)

    def count(params):
        points, first, n = params
        gets = points.size * (1 if ahi else ix.height) + range_gets(ix, first, n).sum()
        return points.size + n.sum(), gets

    return txn_operator(f"sysbench oltp read-only {table} ({dist})", db, int(n_txn), batch,
                         seed, draw, build, count, cpu, query_ns, txn_ns)


def oltp_expected(db: Database, table: str, *, ahi: bool = False, point_selects: int = 10,
                  ranges: int = 3, distinct_ranges: int = 1, range_size: int = 100) -> dict:
    """Mean rows and page gets of one transaction, by plan arithmetic.

    A range of ``m`` entries (rows plus the one read past the end) starting at
    a uniformly random offset in a leaf of ``P`` records touches
    ``1 + (m - 1) / P`` leaves on average, so it costs ``(h - 1) + m + 1 + (m -
    1) / P`` gets.  Ranges clipped at the end of the table are ignored (a
    share of ``range_size / N`` of them).
    """
    ix = db.index(table)
    g = ix.geometry
    h, P = ix.height, g.per_leaf
    spans = [range_size] * ranges + [range_size + 1] * distinct_ranges
    rows = point_selects + sum(spans)
    gets = point_selects * (1 if ahi else h)
    for r in spans:
        m = r + 1
        gets += (h - 1) + m + 1 + (m - 1) / P
    return {"rows": rows, "gets": gets, "requests": point_selects + len(spans)}


def mysqldump(db: Database, table: str, *, cpu: CpuCost = CpuCost()) -> Operator:
    """mysqldump of ``table``: ``SELECT /*!40001 SQL_NO_CACHE */ * FROM table``, a full
    clustered scan in key order (:func:`~bufsim.workloads.plans.full_scan`); its own
    stream.  ``cpu.row_ns`` covers sending and formatting each row.  The SELECT is
    one statement: only its last event carries :data:`bufsim.FLAG_STMT_END`."""
    op = full_scan(db, table, cpu=cpu)
    return statement(Operator(op.name, op.factory, op.rows, op.gets, op.tablespaces),
                     f"mysqldump {table}")

