"""Small workloads of bufsim's own for the live tier: generated, loaded, run, and traced.

Two schemas, generated deterministically from a seed (rows drawn with NumPy, loaded
with ``LOAD DATA LOCAL INFILE`` from a file in a temporary directory):

* an SSB-like star: a ``lineorder`` fact table (clustered by order key and line
  number, a secondary index on the order date, so clustered and secondary extents
  interleave in the file) and a ``dates`` dimension;
* a sysbench-like OLTP table ``sbtest`` (``id`` primary key, secondary ``k``).

Plans (:func:`plans`), each a list of SQL statements beside the page-access trace
bufsim's workload model makes of it over the geometry read from the server:

* ``scan``: a full clustered scan of ``lineorder`` (``type: ALL``);
* ``star``: an SSB Q1.1-like join, a scan of ``lineorder`` with an ``eq_ref``
  probe of ``dates`` per row (skipped when the key repeats the previous one);
* ``point``: sysbench-like primary-key point selects on ``sbtest``;
* ``krange``: a range of the secondary index ``k`` with a clustered lookup per entry
  (under index condition pushdown: 8 rows per handler call; the optimiser's
  records-in-range dive reads the range's border and middle leaves first).

The trace follows MariaDB 10.11's executor (design doc §14, see
:func:`bufsim.workloads.plans.mariadb1011_scan_events`): page gets are counted
accesses, and cursor re-latches are "checked, not counted" accesses carrying
``FLAG_RELATCH`` when the trace vocabulary has that flag (otherwise they are left
out, and the replay cannot count their make-young checks).
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from functools import partial
from typing import Callable

import numpy as np
import pandas as pd

from .._validation import check_int_fields
from ..trace import FLAG_NO_RA, FLAG_STEP, Chunk, Trace
from ..workloads.plans import (FETCH_CACHE_THRESHOLD, FETCH_ROWS_PER_CALL_ICP,
                               relatch_flag, mariadb1011_scan_events)
from .compile_btree import dive_pages, path_kinds
from .geometry import LiveGeometry

__all__ = ["Scale", "QUICK", "FULL", "generate", "load", "quiesce", "LivePlan", "plans", "SCHEMA",
           "exact_lookup", "exact_lookup_pages", "counted_gets"]

SCHEMA = "bufsim_live"


@dataclass(frozen=True)
class Scale:
    """Sizes of the generated tables and plans.

    Parameters
    ----------
    orders : int
        Orders in ``lineorder`` (1-7 lines each).
    dates : int
        Days in ``dates`` (from 1992-01-01).
    sbtest_rows : int
        Rows of ``sbtest``.
    point_selects : int
        Primary-key point selects in the ``point`` plan.
    krange_rows : int
        Entries of ``k`` read by the ``krange`` plan.
    """

    orders: int = 20_000
    dates: int = 2_556
    sbtest_rows: int = 30_000
    point_selects: int = 400
    krange_rows: int = 1_000

    def __post_init__(self):
        for f, lo in (("orders", 10), ("dates", 10), ("sbtest_rows", 100),
                      ("point_selects", 1), ("krange_rows", 1)):
            check_int_fields(self, (f,), lo)
        if self.krange_rows > self.sbtest_rows:
            raise ValueError(f"Scale.krange_rows={self.krange_rows} is out of range; "
                             f"allowed: 1..sbtest_rows ({self.sbtest_rows})")


#: the grid run in CI and the notebook's quick mode
QUICK = Scale()
#: the notebook's full grid
FULL = Scale(orders=120_000, sbtest_rows=150_000, point_selects=2_000, krange_rows=5_000)

_DDL = {
    "dates": """CREATE TABLE dates (
        d_datekey INT NOT NULL PRIMARY KEY, d_year SMALLINT NOT NULL,
        d_yearmonthnum INT NOT NULL, d_weeknuminyear TINYINT NOT NULL,
        d_dayofweek CHAR(9) NOT NULL, d_pad CHAR(40) NOT NULL) ENGINE=InnoDB""",
    "lineorder": """CREATE TABLE lineorder (
        lo_orderkey INT NOT NULL, lo_linenumber TINYINT NOT NULL, lo_custkey INT NOT NULL,
        lo_partkey INT NOT NULL, lo_suppkey INT NOT NULL, lo_orderdate INT NOT NULL,
        lo_quantity TINYINT NOT NULL, lo_extendedprice INT NOT NULL, lo_discount TINYINT NOT NULL,
        lo_revenue INT NOT NULL, lo_supplycost INT NOT NULL, lo_tax TINYINT NOT NULL,
        lo_shipmode CHAR(10) NOT NULL,
        PRIMARY KEY (lo_orderkey, lo_linenumber), KEY lo_orderdate (lo_orderdate)) ENGINE=InnoDB""",
    "sbtest": """CREATE TABLE sbtest (
        id INT NOT NULL PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL,
        KEY k_1 (k)) ENGINE=InnoDB""",
}
_SHIPMODES = np.array(["AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"])
_DAYS = np.array(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"])


def _digits(rng, n, width):
    """``n`` strings of ``width`` random digits (sysbench's c/pad style, grouped by 11)."""
    d = rng.integers(0, 10, size=(n, width), dtype=np.uint8) + ord("0")
    d[:, 11::12] = ord("-")
    return d.view(f"S{width}").ravel().astype(str)


def generate(scale: Scale = QUICK, seed: int = 0) -> dict:
    """The rows of the three tables as DataFrames, drawn from ``seed`` (deterministic)."""
    if not isinstance(scale, Scale):
        raise ValueError(f"scale must be a Scale, got {type(scale).__name__}")
    rng = np.random.default_rng(seed)
    day = np.datetime64("1992-01-01") + np.arange(scale.dates)
    ymd = pd.DatetimeIndex(day)
    datekey = (ymd.year * 10000 + ymd.month * 100 + ymd.day).to_numpy(np.int64)
    dates = pd.DataFrame(dict(
        d_datekey=datekey, d_year=ymd.year.to_numpy(), d_yearmonthnum=(ymd.year * 100 + ymd.month).to_numpy(),
        d_weeknuminyear=np.minimum(ymd.day_of_year.to_numpy() // 7 + 1, 53),
        d_dayofweek=_DAYS[ymd.day_of_week.to_numpy()], d_pad=_digits(rng, scale.dates, 40)))
    lines = rng.integers(1, 8, size=scale.orders)
    n = int(lines.sum())
    okey = np.repeat(np.arange(1, scale.orders + 1, dtype=np.int64), lines)
    first = np.cumsum(lines) - lines
    lnum = np.arange(n) - np.repeat(first, lines) + 1
    odate = np.repeat(datekey[rng.integers(0, scale.dates, size=scale.orders)], lines)
    qty = rng.integers(1, 51, size=n)
    price = rng.integers(90_000, 10_500_000, size=n) // 100
    disc = rng.integers(0, 11, size=n)
    lineorder = pd.DataFrame(dict(
        lo_orderkey=okey, lo_linenumber=lnum, lo_custkey=rng.integers(1, 30_001, size=n),
        lo_partkey=rng.integers(1, 200_001, size=n), lo_suppkey=rng.integers(1, 2_001, size=n),
        lo_orderdate=odate, lo_quantity=qty, lo_extendedprice=price, lo_discount=disc,
        lo_revenue=price * (100 - disc) // 100, lo_supplycost=rng.integers(100, 120_000, size=n),
        lo_tax=rng.integers(0, 9, size=n), lo_shipmode=_SHIPMODES[rng.integers(0, 7, size=n)]))
    m = scale.sbtest_rows
    sbtest = pd.DataFrame(dict(id=np.arange(1, m + 1), k=rng.integers(1, m + 1, size=m),
                               c=_digits(rng, m, 119), pad=_digits(rng, m, 59)))
    return {"dates": dates, "lineorder": lineorder, "sbtest": sbtest}


def load(conn, data: dict, schema: str = SCHEMA) -> None:
    """Create ``schema`` and load the generated tables (LOAD DATA LOCAL from a temp file).

    Statistics are computed once after loading (ANALYZE TABLE), so that no background
    recalculation reads pages during a measured run.
    """
    load_tables(conn, schema, [(n, _DDL[n], data[n]) for n in ("dates", "lineorder", "sbtest")],
                analyze=True)
    quiesce(conn)


def load_tables(conn, schema: str, tables, *, analyze: bool = False) -> None:
    """Drop and create ``schema``, then for each ``(name, create statement, frame)`` of
    ``tables``, in order: create the table and load the frame into it (``LOAD DATA LOCAL
    INFILE`` from a temporary tab-separated file), then, with ``analyze``, ``ANALYZE TABLE``
    it.  :func:`load` and :func:`bufsim.live.dbt3_load.load` load through it."""
    conn.execute(f"DROP DATABASE IF EXISTS `{schema}`")
    conn.execute(f"CREATE DATABASE `{schema}`")
    conn.execute(f"USE `{schema}`")
    with tempfile.TemporaryDirectory(prefix="bufsim-load-") as tmp:
        for name, create, frame in tables:
            conn.execute(create, doing=f"creating table {schema}.{name}")
            path = os.path.join(tmp, f"{name}.tsv")
            frame.to_csv(path, sep="\t", header=False, index=False)
            conn.execute(f"LOAD DATA LOCAL INFILE %s INTO TABLE `{name}` "
                         "FIELDS TERMINATED BY '\\t' LINES TERMINATED BY '\\n'", (path,),
                         doing=f"loading {schema}.{name} (LOAD DATA LOCAL INFILE)")
            if analyze:
                conn.query(f"ANALYZE TABLE `{name}`", doing=f"ANALYZE TABLE {schema}.{name}")


def quiesce(conn) -> None:
    """Wait until InnoDB's purge has caught up (``innodb_max_purge_lag_wait = 0``), so that
    no background purge of the load's (or the statistics') undo log adds page gets to a
    measured run after the next restart.  A server without the variable is left as is."""
    from .errors import LiveError
    try:
        conn.execute("SET GLOBAL innodb_max_purge_lag_wait = 0", doing="waiting for purge")
    except LiveError as exc:
        if "1193" not in str(exc) and "Unknown system variable" not in str(exc):
            raise


@dataclass(frozen=True, eq=False)
class LivePlan:
    """SQL statements and the trace bufsim's model makes of them.

    ``trace(geometry)`` returns a :class:`bufsim.Trace` over ``geometry.tablespaces``.
    ``rows`` is the rows the statements read from the driving table.
    """

    name: str
    statements: tuple
    trace: Callable[[LiveGeometry], Trace]
    description: str = ""

    def run(self, conn) -> list:
        """Run the statements; the last statement's rows.

        On a connection opened with ``multi_statements=True`` (:func:`bufsim.live.connect`)
        the statements go to the server in batches of 100 (``Connection.query_many``):
        the server runs each as it would alone, the same page gets, without a client
        round trip between them (2,000 point selects one round trip each took 7-8 s on
        a loaded 2-core machine, against 0.4-0.7 s of server time)."""
        return conn.query_many(self.statements, doing=f"running plan {self.name!r}")


def _descent(geo: LiveGeometry, table: str, index: str | None, leaf_pos) -> np.ndarray:
    t = geo.table(table)
    ix = t.clustered if index is None else t.index(index)
    return geo.dense(table, ix._paths()[np.asarray(leaf_pos, dtype=np.int64)])


def exact_lookup_pages(geo: LiveGeometry, table: str, entries) -> np.ndarray:
    """Page gets of unique exact-match lookups (:func:`exact_lookup` without the kinds)."""
    return exact_lookup(geo, table, entries)[0]


def exact_lookup(geo: LiveGeometry, table: str, entries):
    """Page gets of unique exact-match lookups (``WHERE pk = const``, an ``eq_ref`` probe),
    and their access kinds.

    A root-to-leaf descent per lookup; where the key is the first record of a leaf
    (not the first leaf) the search lands on the previous leaf (by that leaf's own
    path: the levels above search for the last node pointer below the key) and steps
    forward, and where it is the last record of a leaf (not the last leaf) the cursor
    steps onto the next leaf: one extra get either way (spec §14; both seen on MariaDB
    10.11.19 with INNODB_BUFFER_PAGE: the previous, resp. next, leaf becomes resident).
    Kinds: the pages above the landing leaf FLAG_NO_RA, the landing leaf FLAG_DESCENT
    (FLAG_NO_RA in a one-page tree), the steps FLAG_STEP.

    ``entries`` are key-order positions (0-based) in the clustered index.

    Returns
    -------
    pages : int64 array
        Dense pages, lookup after lookup.
    kinds : uint8 array
        The access kind of each.
    """
    ix = geo.table(table).clustered
    entries = np.asarray(entries, dtype=np.int64)
    leaf = ix.leaf_of_entry(entries)
    starts = np.cumsum(ix.leaf_recs) - ix.leaf_recs
    first = (entries == starts[leaf]) & (leaf > 0)
    last = (entries == starts[leaf] + ix.leaf_recs[leaf] - 1) & (leaf < len(ix.leaves) - 1)
    paths = ix._paths()[leaf - first]
    h = paths.shape[1]
    out = np.full((entries.size, h + 2), -1, dtype=np.int64)
    kinds = np.zeros((entries.size, h + 2), dtype=np.uint8)
    out[:, :h] = paths
    kinds[:, :h] = path_kinds(h)
    out[first, h] = ix.leaves[leaf[first]]
    out[last, h + 1] = ix.leaves[leaf[last] + 1]
    kinds[:, h:] = FLAG_STEP
    flat = out.ravel()
    keep = flat >= 0
    return geo.dense(table, flat[keep]), kinds.ravel()[keep]


def counted_gets(trace: Trace) -> int:
    """Page gets a trace counts in NUMBER_PAGES_GET: re-latches (FLAG_RELATCH) excluded."""
    flag = relatch_flag() or 0
    total = 0
    for c in trace:
        keep = (c.flags & np.uint8(flag)) == 0 if flag else slice(None)
        total += int(c.count[keep].sum())
    return total


def _chunk(pages, flags=0) -> Chunk:
    pages = np.asarray(pages, dtype=np.int64)
    flags = np.broadcast_to(np.asarray(flags, dtype=np.uint8), pages.shape).copy()
    return Chunk.from_arrays(pages, 1, 0, 0, flags)


def _scan_trace(geo: LiveGeometry, table: str, relatch: bool):
    """(pages, flags, row_pos) of a full clustered scan of ``table`` (descent included)."""
    ix = geo.table(table).clustered
    upper = geo.dense(table, ix._paths()[0, :-1])
    leaves = geo.dense(table, ix.leaves)
    # btr_cur_t::open_leaf: the leftmost leaf (FIL_PAGE_PREV FIL_NULL) is no read-ahead site
    page, flag, row_pos = mariadb1011_scan_events(leaves, ix.leaf_recs, relatch=relatch,
                                                  first_kind=FLAG_NO_RA)
    return (np.concatenate([upper, page]),
            np.concatenate([np.full(upper.size, FLAG_NO_RA, np.uint8), flag]),
            row_pos + upper.size)


def _plan_scan(g, ts, relatch: bool) -> Trace:
    """The scan plan: a full clustered scan of lineorder."""
    p, f, _ = _scan_trace(g, "lineorder", relatch)
    return Trace(_chunk(p, f), ts, "scan lineorder")


def _plan_star(g, ts, relatch: bool, dk: np.ndarray, qualifies: np.ndarray,
               keys: np.ndarray) -> Trace:
    """The star plan: scan lineorder, an eq_ref probe of dates per qualifying row whose
    key differs from the previous probe's (eq_ref keeps the last row), after the access
    that reads the row."""
    p, f, row_pos = _scan_trace(g, "lineorder", relatch)
    rows = np.flatnonzero(qualifies)
    new = np.zeros(keys.size, dtype=bool)
    k = keys[rows]
    keep = np.ones(rows.size, dtype=bool)
    keep[1:] = k[1:] != k[:-1]          # eq_ref keeps the last row: repeats skip the probe
    new[rows[keep]] = True
    entry = np.searchsorted(dk, keys)
    probe = {int(e): exact_lookup(g, "dates", [e]) for e in np.unique(entry[new])}
    # after the access that reads row r, the probe of row r (when its key is new)
    out_p, out_f, last = [], [], 0
    for r in np.flatnonzero(new):
        j = row_pos[r]
        out_p.append(p[last:j])
        out_f.append(f[last:j])
        pp, pk = probe[int(entry[r])]
        out_p.append(pp)
        out_f.append(pk)
        last = j
    out_p.append(p[last:])
    out_f.append(f[last:])
    return Trace(_chunk(np.concatenate(out_p), np.concatenate(out_f)), ts, "star join")


def _plan_point(g, ts, ids: np.ndarray) -> Trace:
    """The point plan: a primary-key lookup of sbtest per id."""
    return Trace(_chunk(*exact_lookup(g, "sbtest", ids - 1)), ts, "point selects")


def _range_dive(g, ix, lo_leaf: int, hi_leaf: int) -> np.ndarray:
    """The optimiser's records-in-range estimate of a range of sbtest's ``ix`` before the
    range runs (btr_estimate_n_rows_in_range, MariaDB 10.11.18 btr0cur.cc): both borders'
    paths from the root, level by level, a page once where they share it; where they
    differ, the left page, up to RANGE_DIVE_PAGES pages between them on that level
    (btr_estimate_n_rows_in_range_on_level), then the right page.  Counted gets."""
    return g.dense("sbtest", dive_pages(ix, lo_leaf, hi_leaf))


def _krange_bounds(sb, rows: int, krange_rows: int, rng) -> tuple:
    """The k range of the krange plan: ``krange_rows`` consecutive entries of ``k_1``
    from a start drawn from ``rng``; (entry order of sbtest by (k, id), k sorted, k_lo,
    k_hi, first entry, end entry)."""
    order = np.lexsort((sb["id"].to_numpy(), sb["k"].to_numpy()))
    k_sorted = sb["k"].to_numpy()[order]
    start = int(rng.integers(0, rows - krange_rows + 1))
    k_lo, k_hi = int(k_sorted[start]), int(k_sorted[start + krange_rows - 1])
    first = int(np.searchsorted(k_sorted, k_lo, side="left"))
    last = int(np.searchsorted(k_sorted, k_hi, side="right"))
    return order, k_sorted, k_lo, k_hi, first, last


def _plan_krange(g, ts, relatch: bool, sb, order: np.ndarray, k_sorted: np.ndarray,
                 first: int, last: int) -> Trace:
    """The range of ``k_1`` under index condition pushdown (EXPLAIN: "Using index
    condition"): the optimiser's records-in-range dive (:func:`_range_dive`), a
    descent to the first entry's leaf, then per entry a step onto its leaf when it
    changes and a clustered descent.  Rows reach the SQL layer one per handler call
    for the first FETCH_CACHE_THRESHOLD, then FETCH_ROWS_PER_CALL_ICP (8) per call;
    every call after the first restores the cursor stored at the end of the previous
    one: a re-latch of that ``k_1`` leaf, checked, not counted (§14).  The call that
    ends the range reads one entry past it, where its cursor is stored if the call
    was not full; a last call restores it and finds the end."""
    kix = g.table("sbtest").index("k_1")
    cl = g.table("sbtest").clustered
    entries = np.arange(first, last)
    kleaf = kix.leaf_of_entry(entries)
    dive = _range_dive(g, kix, kleaf[0], kleaf[-1])
    desc = _descent(g, "sbtest", "k_1", kleaf[:1])[0]
    kleaves = g.dense("sbtest", kix.leaves)
    rowids = sb["id"].to_numpy()[order][first:last] - 1
    cpaths = _descent(g, "sbtest", None, cl.leaf_of_entry(rowids))
    flag = (relatch_flag() or 0) if relatch else 0
    n = entries.size
    e = np.arange(n)
    thr = FETCH_CACHE_THRESHOLD
    starts = (e < thr) | ((e - thr) % FETCH_ROWS_PER_CALL_ICP == 0)
    # kinds: the dive's pages (btr_block_get without read-ahead) and the re-latches are
    # FLAG_NO_RA, the descents' leaves FLAG_DESCENT, the steps onto k_1 leaves FLAG_STEP
    relatch_kind = flag | FLAG_NO_RA
    out = [dive, desc]
    fl = [np.full(dive.size, FLAG_NO_RA, np.uint8), path_kinds(desc.size)]
    ckinds = path_kinds(cpaths.shape[1])

    def add(pages, f):
        out.append(np.asarray(pages, dtype=np.int64))
        fl.append(np.broadcast_to(np.asarray(f, np.uint8), out[-1].shape))

    prev = kleaf[0]
    for r in range(n):
        if flag and starts[r] and r > 0:
            add(kleaves[kleaf[r - 1]:kleaf[r - 1] + 1], relatch_kind)   # restore the cursor
        if kleaf[r] != prev:
            add(kleaves[kleaf[r]:kleaf[r] + 1], FLAG_STEP)
            prev = kleaf[r]
        add(cpaths[r], ckinds)
    # the last call: full (its rows fill it) or not; past the end of the range
    s = int(np.flatnonzero(starts)[-1])
    full = n - s == (1 if s < thr else FETCH_ROWS_PER_CALL_ICP)
    nl = kix.leaf_of_entry([last])[0] if last < len(k_sorted) else prev
    if flag and full:
        add(kleaves[prev:prev + 1], relatch_kind)
    if nl != prev:
        add(kleaves[nl:nl + 1], FLAG_STEP)
    if flag and not full:
        add(kleaves[nl:nl + 1], relatch_kind)
    return Trace(_chunk(np.concatenate(out), np.concatenate(fl)), ts, "k range")


def plans(geo: LiveGeometry, data: dict, scale: Scale = QUICK, seed: int = 0,
          relatch: bool | None = None) -> dict:
    """The four plans of the module docstring over ``geo``, keyed by name: each a
    :class:`LivePlan` whose trace is one of :func:`_plan_scan`, :func:`_plan_star`,
    :func:`_plan_point`, :func:`_plan_krange` over the drawn keys.

    ``relatch``: put cursor re-latches in the trace (default: when the trace
    vocabulary has ``FLAG_RELATCH``; see :func:`bufsim.workloads.plans.relatch_flag`).
    """
    if relatch is None:
        relatch = relatch_flag() is not None
    rng = np.random.default_rng(seed + 1)
    lo = data["lineorder"]
    ts = geo.tablespaces
    # star: the WHERE conditions on lineorder are checked on each scanned row before the
    # join probes dates, so only qualifying rows probe
    dk = np.sort(data["dates"]["d_datekey"].to_numpy())
    qualifies = ((lo["lo_discount"] >= 1) & (lo["lo_discount"] <= 3)
                 & (lo["lo_quantity"] < 25)).to_numpy()
    okey_date = lo["lo_orderdate"].to_numpy()
    ids = rng.integers(1, scale.sbtest_rows + 1, size=scale.point_selects)
    sb = data["sbtest"]
    order, k_sorted, k_lo, k_hi, first, last = _krange_bounds(sb, scale.sbtest_rows,
                                                              scale.krange_rows, rng)
    scan_trace = partial(_plan_scan, ts=ts, relatch=relatch)
    star_trace = partial(_plan_star, ts=ts, relatch=relatch, dk=dk, qualifies=qualifies,
                         keys=okey_date)
    point_trace = partial(_plan_point, ts=ts, ids=ids)
    krange_trace = partial(_plan_krange, ts=ts, relatch=relatch, sb=sb, order=order,
                           k_sorted=k_sorted, first=first, last=last)

    db = SCHEMA
    return {
        "scan": LivePlan("scan", (f"SELECT SUM(lo_revenue) FROM `{db}`.lineorder "
                                  "IGNORE INDEX (lo_orderdate)",), scan_trace,
                         "full clustered scan of lineorder"),
        "star": LivePlan("star", (f"SELECT SUM(lo_extendedprice * lo_discount) FROM "
                                  f"`{db}`.lineorder IGNORE INDEX (lo_orderdate) "
                                  f"STRAIGHT_JOIN `{db}`.dates ON lo_orderdate = d_datekey "
                                  "WHERE d_year = 1993 AND lo_discount BETWEEN 1 AND 3 "
                                  "AND lo_quantity < 25",), star_trace,
                         "scan lineorder, eq_ref probe of dates per new key"),
        "point": LivePlan("point", tuple(f"SELECT c FROM `{db}`.sbtest WHERE id = {int(i)}"
                                         for i in ids), point_trace,
                          f"{scale.point_selects} primary-key point selects on sbtest"),
        "krange": LivePlan("krange", (f"SELECT SUM(LENGTH(c)) FROM `{db}`.sbtest FORCE INDEX (k_1) "
                                      f"WHERE k BETWEEN {k_lo} AND {k_hi}",), krange_trace,
                           "range of k_1 with a clustered lookup per entry"),
    }
