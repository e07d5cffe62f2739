"""The Star Schema Benchmark (SSB) at any scale factor: schema, data and the 13 queries' plans.

Schema: the five tables and indexes of 000_fe2813b876a91991.txt (``lineorder``
has no primary key, so its clustered index is ``GEN_CLUST_INDEX`` on the hidden
row id; its six secondary indexes are ``LO_OrderKey (LO_OrderKey,
LO_LineNumber)``, ``LO_CustKey``, ``LO_SuppKey``, ``LO_PartKey``,
``LO_OrderDateKey``, ``LO_CommitDateKey``).  Character columns are latin1;
``varchar`` average lengths follow SSB's dbgen text (priorities ``1-URGENT`` ..
``5-LOW`` average 8.4 bytes, ship modes 4.3, and so on, see ``_TABLES``).

Data (seeded, :class:`SSBData`), as dbgen generates it: 1,500,000 x SF orders
in order-key order, each with 1-7 lines (uniform), so ``lineorder`` holds about
6.0M x SF rows stored in order-key order (the load order); an order's lines share
its customer and order date; order dates are uniform over the 2,406 days
1992-01-01 .. 1998-08-02; parts, suppliers, quantity (1-50) and discount (0-10)
are drawn per line.  Customers (30,000 x SF), suppliers (2,000 x SF) and parts
(200,000 x (1 + floor(log2 SF))) get a region, nation (5 per region), city (10
per nation), and for parts a manufacturer (5), category (5 per manufacturer) and
brand (40 per category), uniformly.  ``dim_date`` has 2,556 days from 1992-01-01.

Plans (write-down of what MySQL 5.5/5.6 run, see :data:`PLANS`):

* ``scan`` (every query): a full scan of ``lineorder``'s clustered index; the
  predicates on lineorder columns are checked on each row, and a row that passes
  probes each dimension by ``eq_ref`` on its primary key, in the query's join
  order, a later dimension only when the earlier ones matched.  A probe whose key
  equals the previous probe's key into the same table is skipped (the join keeps
  the last row, spec §14), so consecutive lines of one order probe ``dim_date``
  and ``customer`` once.  This is the EXPLAIN the document shows for Q1.1
  (lineorder ALL, dim_date eq_ref).
* ``date_first`` (Q1.x): ``dim_date`` scanned first; each qualifying date reads
  its ``lineorder`` rows through ``LO_OrderDateKey`` (``ref``), each index entry
  followed by a clustered lookup by row id (a 3-level descent at SF1).  The
  document's second Q1.1 plan.
* ``index_first`` (the queries of :data:`INDEX_DRIVERS`: flights 2-4 but Q3.2): the
  dimension whose predicate is on an indexed column drives the join: each entry of
  that index's range (with the clustered lookup of its dimension row) reads its
  ``lineorder`` rows through ``LO_PartKey``/``LO_CustKey`` (``ref``, a clustered
  lookup by row id per entry), and each such row probes the other dimensions by
  ``eq_ref`` in the query's join order, as the scan plan's rows do.  The document
  gives no EXPLAIN for these queries; :data:`INDEX_DRIVERS` says why this order.

With the adaptive hash index a dimension probe is one get of the dimension's
leaf: by default (``ahi="shortcut"``) the unique-lookup shortcut a SELECT takes
under the held search latch (one get, no make-young check, FLAG_SHORTCUT), or
``ahi=True`` for a plain hash guess (two gets and two checks), or ``ahi=False``
for a root-to-leaf descent.  With the shortcut the scan plan issues 6.65M gets
at SF1 (the document: 6,731,100); with a plain guess or a descent 7.26M.
Document check (Q1.1, SF1): the scan plan reads 6,001,171 lineorder rows and
probes dim_date for the orders with a qualifying line: 1.5M x (1 - E[(1-p)^L]) =
609,750 with p = 3/11 x 24/50 and L uniform 1..7; the document's
``Innodb_rows_read`` 6,611,119 - 6,001,171 = 609,948.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..trace import Chunk
from ._kernels import probe_join
from .geometry import FILL_RANDOM, Column, Index, Table
from .plans import (
    BATCH, CpuCost, Database, Operator, ahi_flag, emit_chunk, lookups, range_scan,
    scan_join, secondary_range, sequence, statement,
)


__all__ = ["SSB", "SSBData", "QUERIES", "PLANS", "INDEX_DRIVERS", "INDEX_PLAN_QUERIES", "ssb_tables",
           "N_DATES", "N_ORDER_DATES"]

#: days in dim_date (1992-01-01 .. 1998-12-30, as dbgen writes it)
N_DATES = 2556
#: order dates: 1992-01-01 .. 1998-08-02 (TPC-H's ENDDATE - 151 days)
N_ORDER_DATES = 2406
_DAYS_PER_YEAR = (366, 365, 365, 365, 366, 365, 365)   # 1992 .. 1998

C = Column


def ssb_tables(sf: float = 1.0, *, n_lineorder: int | None = None,
               random_fill: float = FILL_RANDOM) -> list[Table]:
    """The five SSB tables at scale factor ``sf`` (``n_lineorder`` overrides the row count)."""
    n_cust, n_supp, n_part = _dim_sizes(sf)
    lo_rows = int(round(6_000_000 * sf)) if n_lineorder is None else int(n_lineorder)
    customer = Table("customer", [
        C("C_CustomerKey", "int", False), C("C_Name", "varchar(25)", avg_len=18),
        C("C_Address", "varchar(25)", avg_len=15), C("C_City", "varchar(10)", avg_len=10),
        C("C_Nation", "varchar(15)", avg_len=8), C("C_Region", "varchar(12)", avg_len=6.8),
        C("C_Phone", "varchar(15)", avg_len=15), C("C_MktSegment", "varchar(10)", avg_len=9),
    ], n_cust, primary_key=("C_CustomerKey",), indexes=[
        Index("C_Name", ("C_Name",), ordered=True), Index("C_City", ("C_City",)),
        Index("C_Region", ("C_Region",)), Index("C_Phone", ("C_Phone",)),
        Index("C_MktSegment", ("C_MktSegment",))], random_fill=random_fill)
    part = Table("part", [
        C("P_PartKey", "int", False), C("P_Name", "varchar(25)", avg_len=12),
        C("P_MFGR", "varchar(10)", avg_len=6), C("P_Category", "varchar(10)", avg_len=7),
        C("P_Brand", "varchar(15)", avg_len=9), C("P_Colour", "varchar(15)", avg_len=6),
        C("P_Type", "varchar(25)", avg_len=20), C("P_Size", "tinyint"), C("P_Container", "char(10)"),
    ], n_part, primary_key=("P_PartKey",), indexes=[
        Index("P_Name", ("P_Name",)), Index("P_MFGR", ("P_MFGR",)),
        Index("P_Category", ("P_Category",)), Index("P_Brand", ("P_Brand",))],
        random_fill=random_fill)
    supplier = Table("supplier", [
        C("S_SuppKey", "int", False), C("S_Name", "char(25)"), C("S_Address", "varchar(25)", avg_len=15),
        C("S_City", "char(10)"), C("S_Nation", "char(15)"), C("S_Region", "char(12)"),
        C("S_Phone", "char(15)"),
    ], n_supp, primary_key=("S_SuppKey",), indexes=[
        Index("S_City", ("S_City",)), Index("S_Name", ("S_Name",), ordered=True),
        Index("S_Phone", ("S_Phone",))], random_fill=random_fill)
    dim_date = Table("dim_date", [
        C("D_DateKey", "int", False), C("D_Date", "char(18)"), C("D_DayOfWeek", "char(9)"),
        C("D_Month", "char(9)"), C("D_Year", "smallint"), C("D_YearMonthNum", "int"),
        C("D_YearMonth", "char(7)"), C("D_DayNumInWeek", "tinyint"), C("D_DayNumInMonth", "tinyint"),
        C("D_DayNumInYear", "smallint"), C("D_MonthNumInYear", "tinyint"),
        C("D_WeekNumInYear", "tinyint"), C("D_SellingSeason", "char(12)"),
        C("D_LastDayInWeekFl", "tinyint"), C("D_LastDayInMonthFl", "tinyint"),
        C("D_HolidayFl", "tinyint"), C("D_WeekDayFl", "tinyint"),
    ], N_DATES, primary_key=("D_DateKey",))
    lineorder = Table("lineorder", [
        C("LO_OrderKey", "bigint", False), C("LO_LineNumber", "tinyint", False),
        C("LO_CustKey", "int", False), C("LO_PartKey", "int", False), C("LO_SuppKey", "int", False),
        C("LO_OrderDateKey", "int", False), C("LO_OrderPriority", "varchar(15)", avg_len=8.4),
        C("LO_ShipPriority", "char(1)"), C("LO_Quantity", "tinyint"), C("LO_ExtendedPrice", "decimal"),
        C("LO_OrdTotalPrice", "decimal"), C("LO_Discount", "decimal"), C("LO_Revenue", "decimal"),
        C("LO_SupplyCost", "decimal"), C("LO_Tax", "tinyint"), C("LO_CommitDateKey", "int", False),
        C("LO_ShipMode", "varchar(10)", avg_len=4.29),
    ], lo_rows, indexes=[
        Index("LO_OrderKey", ("LO_OrderKey", "LO_LineNumber"), ordered=True),
        Index("LO_CustKey", ("LO_CustKey",)), Index("LO_SuppKey", ("LO_SuppKey",)),
        Index("LO_PartKey", ("LO_PartKey",)), Index("LO_OrderDateKey", ("LO_OrderDateKey",)),
        Index("LO_CommitDateKey", ("LO_CommitDateKey",))], random_fill=random_fill)
    return [customer, part, supplier, dim_date, lineorder]


def _dim_sizes(sf: float):
    return (int(round(30_000 * sf)) or 1, int(round(2_000 * sf)) or 1,
            int(round(200_000 * (1 + math.floor(math.log2(sf))) if sf >= 1 else 200_000 * sf)) or 1)


@dataclass(frozen=True, eq=False)
class SSBData:
    """Column values that decide which rows each query reads (see the module docstring).

    lineorder arrays are per row in storage order; dimension arrays per key - 1.
    """

    order: np.ndarray          # order index of each lineorder row
    orderdate: np.ndarray      # day index 0..N_ORDER_DATES-1 (into dim_date)
    custkey: np.ndarray        # 0-based
    partkey: np.ndarray
    suppkey: np.ndarray
    quantity: np.ndarray       # 1..50
    discount: np.ndarray       # 0..10
    c_region: np.ndarray       # 0..4; nation = region * 5 + 0..4; city = nation * 10 + 0..9
    c_nation: np.ndarray
    c_city: np.ndarray
    s_region: np.ndarray
    s_nation: np.ndarray
    s_city: np.ndarray
    p_mfgr: np.ndarray         # 0..4; category = mfgr * 5 + 0..4; brand = category * 40 + 0..39
    p_category: np.ndarray
    p_brand: np.ndarray

    @classmethod
    def generate(cls, sf: float, seed: int = 0) -> SSBData:
        rng = np.random.default_rng(seed)
        n_orders = max(1, int(round(1_500_000 * sf)))
        n_cust, n_supp, n_part = _dim_sizes(sf)
        lines = rng.integers(1, 8, n_orders)
        order = np.repeat(np.arange(n_orders, dtype=np.int32), lines)
        n = order.size
        odate = rng.integers(0, N_ORDER_DATES, n_orders).astype(np.int16)
        ocust = rng.integers(0, n_cust, n_orders).astype(np.int32)

        def geo(k):
            region = rng.integers(0, 5, k).astype(np.int8)
            nation = (region * 5 + rng.integers(0, 5, k)).astype(np.int16)
            city = (nation * 10 + rng.integers(0, 10, k)).astype(np.int16)
            return region, nation, city

        cr, cn, cc = geo(n_cust)
        sr, sn, sc = geo(n_supp)
        mfgr = rng.integers(0, 5, n_part).astype(np.int8)
        cat = (mfgr * 5 + rng.integers(0, 5, n_part)).astype(np.int16)
        brand = (cat * 40 + rng.integers(0, 40, n_part)).astype(np.int16)
        return cls(order, odate[order], ocust[order],
                   rng.integers(0, n_part, n).astype(np.int32),
                   rng.integers(0, n_supp, n).astype(np.int32),
                   rng.integers(1, 51, n).astype(np.int8), rng.integers(0, 11, n).astype(np.int8),
                   cr, cn, cc, sr, sn, sc, mfgr, cat, brand)

    @property
    def rows(self) -> int:
        return int(self.order.size)


def _year_of_day(day: np.ndarray) -> np.ndarray:
    edges = np.cumsum((0,) + _DAYS_PER_YEAR)
    return 1992 + np.searchsorted(edges, day, side="right") - 1


def _month_of_day(day: np.ndarray) -> np.ndarray:
    """1..12 for each day index (Gregorian calendar from 1992-01-01)."""
    d = np.datetime64("1992-01-01") + np.asarray(day).astype("timedelta64[D]")
    return d.astype("datetime64[M]").astype(np.int64) % 12 + 1


def _week_in_year(day: np.ndarray) -> np.ndarray:
    """dbgen's d_weeknuminyear: (day of year - 1) // 7 + 1."""
    year = _year_of_day(day)
    start = np.cumsum((0,) + _DAYS_PER_YEAR)[year - 1992]
    return (np.asarray(day) - start) // 7 + 1


# Each query: predicates on lineorder columns, then the join order with each dimension's
# predicate.  REGIONS: AFRICA 0, AMERICA 1, ASIA 2, EUROPE 3, MIDDLE EAST 4; nation 24 =
# UNITED STATES (region 1), nation 23 = UNITED KINGDOM (region 3, cities UNITED KI0..9).
_US, _UK = 1 * 5 + 4, 3 * 5 + 3
_UK_CITIES = (_UK * 10 + 1, _UK * 10 + 5)


PLANS = {
    "Q1.1": dict(lo=lambda d: (d.discount >= 1) & (d.discount <= 3) & (d.quantity < 25),
                 joins=[("dim_date", lambda day: _year_of_day(day) == 1993)]),
    "Q1.2": dict(lo=lambda d: (d.discount >= 4) & (d.discount <= 6) & (d.quantity >= 26)
                 & (d.quantity <= 35),
                 joins=[("dim_date", lambda day: (_year_of_day(day) == 1994) & (_month_of_day(day) == 1))]),
    "Q1.3": dict(lo=lambda d: (d.discount >= 5) & (d.discount <= 7) & (d.quantity >= 26)
                 & (d.quantity <= 35),
                 joins=[("dim_date", lambda day: (_year_of_day(day) == 1994) & (_week_in_year(day) == 6))]),
    "Q2.1": dict(joins=[("dim_date", None), ("part", lambda d: d.p_category == 1),
                        ("supplier", lambda d: d.s_region == 1)]),
    "Q2.2": dict(joins=[("dim_date", None),
                        ("part", lambda d: (d.p_brand >= 1 * 200 + 1 * 40 + 20)
                         & (d.p_brand <= 1 * 200 + 1 * 40 + 27)),
                        ("supplier", lambda d: d.s_region == 2)]),
    "Q2.3": dict(joins=[("dim_date", None), ("part", lambda d: d.p_brand == 1 * 200 + 1 * 40 + 38),
                        ("supplier", lambda d: d.s_region == 3)]),
    "Q3.1": dict(joins=[("customer", lambda d: d.c_region == 2), ("supplier", lambda d: d.s_region == 2),
                        ("dim_date", lambda day: _year_of_day(day) <= 1997)]),
    "Q3.2": dict(joins=[("customer", lambda d: d.c_nation == _US),
                        ("supplier", lambda d: d.s_nation == _US),
                        ("dim_date", lambda day: _year_of_day(day) <= 1997)]),
    "Q3.3": dict(joins=[("customer", lambda d: np.isin(d.c_city, _UK_CITIES)),
                        ("supplier", lambda d: np.isin(d.s_city, _UK_CITIES)),
                        ("dim_date", lambda day: _year_of_day(day) <= 1997)]),
    "Q3.4": dict(joins=[("customer", lambda d: np.isin(d.c_city, _UK_CITIES)),
                        ("supplier", lambda d: np.isin(d.s_city, _UK_CITIES)),
                        ("dim_date", lambda day: (_year_of_day(day) == 1997) & (_month_of_day(day) == 12))]),
    "Q4.1": dict(joins=[("dim_date", None), ("customer", lambda d: d.c_region == 1),
                        ("supplier", lambda d: d.s_region == 1), ("part", lambda d: d.p_mfgr <= 1)]),
    "Q4.2": dict(joins=[("dim_date", lambda day: _year_of_day(day) >= 1997),
                        ("customer", lambda d: d.c_region == 1), ("supplier", lambda d: d.s_region == 1),
                        ("part", lambda d: d.p_mfgr <= 1)]),
    "Q4.3": dict(joins=[("dim_date", lambda day: _year_of_day(day) >= 1997),
                        ("customer", lambda d: d.c_region == 1), ("supplier", lambda d: d.s_nation == _US),
                        ("part", lambda d: d.p_category == 3)]),
}
#: the 13 queries in the benchmark's order
QUERIES = tuple(PLANS)

#: ``index_first`` plans: query -> (driving dimension, its index on the predicate's column,
#: lineorder's index on that dimension's key).  Why these (the document shows no EXPLAIN
#: for flights 2-4, so this is derived, not observed): its schema indexes P_Category,
#: P_Brand, P_MFGR, C_City, C_Region and S_City, and lineorder's LO_PartKey, LO_CustKey,
#: LO_SuppKey; MySQL 5.5/5.6's join optimizer (``best_access_path``) prices a ``ref``
#: access by the index's rows per key and a non-indexed predicate not at all (condition
#: filtering came in 5.7), so it prefers the plan that reads the fewest lineorder rows
#: through an index over a 6M-row scan with a probe per row.  Rows through the index at
#: SF1: Q2.1 and Q4.3 8,000 parts x 30 (P_Category), Q2.2 1,600 x 30 and Q2.3 200 x 30
#: (P_Brand), Q3.1, Q4.1 and Q4.2 6,000 customers x 200 (C_Region; P_MFGR's two of five
#: manufacturers would read 2.4M), Q3.3 and Q3.4 240 customers x 200 (C_City; S_City's 16
#: suppliers x 3,000 read as many, and customer comes first in the FROM clause).  Flight
#: 1 (dim_date has no index but its primary key; the document's Q1.1 EXPLAIN, with
#: ``straight_join``, scans lineorder) and Q3.2 (c_nation, s_nation and d_year are not
#: indexed) keep the scan.
INDEX_DRIVERS = {
    "Q2.1": ("part", "P_Category", "LO_PartKey"),
    "Q2.2": ("part", "P_Brand", "LO_PartKey"),
    "Q2.3": ("part", "P_Brand", "LO_PartKey"),
    "Q3.1": ("customer", "C_Region", "LO_CustKey"),
    "Q3.3": ("customer", "C_City", "LO_CustKey"),
    "Q3.4": ("customer", "C_City", "LO_CustKey"),
    "Q4.1": ("customer", "C_Region", "LO_CustKey"),
    "Q4.2": ("customer", "C_Region", "LO_CustKey"),
    "Q4.3": ("part", "P_Category", "LO_PartKey"),
}
#: the 13 queries with ``index_first`` where :data:`INDEX_DRIVERS` has one, else the scan
INDEX_PLAN_QUERIES = tuple(f"{q}:index_first" if q in INDEX_DRIVERS else q for q in QUERIES)
#: the dimension column each driving index is on (SSBData's field)
_INDEX_COLUMN = {"P_Category": "p_category", "P_Brand": "p_brand", "C_Region": "c_region",
                 "C_City": "c_city"}


class SSB:
    """SSB at a scale factor: the database layout, the data and the query plans.

    Parameters
    ----------
    sf : float
        Scale factor, > 0 (1 = the document's 6M-row lineorder).
    seed : int
        Seeds the data and the leaf order of randomly filled indexes.
    random_fill : float
        Fill of secondary indexes loaded in random key order (default ln 2).

    Examples
    --------
    >>> ssb = SSB(0.01)
    >>> op = ssb.query("Q1.1")
    >>> op.rows == ssb.expected_rows("Q1.1")
    True
    """

    def __init__(self, sf: float = 1.0, *, seed: int = 0, random_fill: float = FILL_RANDOM):
        if not (isinstance(sf, (int, float)) and 0 < sf <= 100):
            raise ValueError(f"sf = {sf!r} is out of range; allowed: 0 < sf <= 100")
        self.sf = float(sf)
        #: what fully determines the generated data and traces (bufsim.cache keys on it)
        self.cache_params = ("SSB", self.sf, seed, random_fill)
        self.data = SSBData.generate(self.sf, seed)
        self.tables = ssb_tables(self.sf, n_lineorder=self.data.rows, random_fill=random_fill)
        self.db = Database(self.tables, seed=seed)
        self.tablespaces = self.db.tablespaces
        self._by_date = None
        self._by_key = {}
        self._index_rows = {}

    # ---- the data behind each dimension key --------------------------------------------
    def _key_column(self, table: str) -> np.ndarray:
        d = self.data
        return {"dim_date": d.orderdate, "customer": d.custkey, "part": d.partkey,
                "supplier": d.suppkey}[table]

    def _dim_mask(self, table: str, pred) -> np.ndarray | None:
        if pred is None:
            return None
        if table == "dim_date":
            return pred(np.arange(N_DATES))
        return pred(self.data)

    def date_entries(self) -> tuple[np.ndarray, np.ndarray]:
        """LO_OrderDateKey: row ids in index order and the first entry of each date."""
        if self._by_date is None:
            od = self.data.orderdate
            order = np.argsort(od, kind="stable").astype(np.int64)
            starts = np.searchsorted(od[order], np.arange(N_DATES + 1))
            self._by_date = (order, starts.astype(np.int64))
        return self._by_date

    # ---- plans ---------------------------------------------------------------------------
    def query(self, name: str, plan: str = "scan", *, cpu: CpuCost = CpuCost(),
              ahi: bool | str = "shortcut") -> Operator:
        """The access pattern of query ``name`` (``'Q1.1'`` .. ``'Q4.3'``) under ``plan``.

        ``plan``: ``'scan'`` (all queries), ``'date_first'`` (Q1.x) or
        ``'index_first'`` (the queries of :data:`INDEX_DRIVERS`); see the module docstring.  ``ahi``: how the adaptive hash index answers dimension
        probes (``"shortcut"``, True, False; module docstring).  The query is one
        statement: its last event carries :data:`bufsim.FLAG_STMT_END`.
        """
        if name not in PLANS:
            raise ValueError(f"query = {name!r} is not an SSB query; allowed: {', '.join(QUERIES)}")
        if plan == "scan":
            return self._scan_plan(name, cpu, ahi)
        if plan == "date_first":
            if not name.startswith("Q1."):
                raise ValueError(f"plan = 'date_first' exists for Q1.1-Q1.3 only, not {name}")
            return self._date_first_plan(name, cpu)
        if plan == "index_first":
            if name not in INDEX_DRIVERS:
                raise ValueError(f"plan = 'index_first' exists for {', '.join(INDEX_DRIVERS)} only, "
                                 f"not {name}")
            return self._index_first_plan(name, cpu, ahi)
        raise ValueError(f"plan = {plan!r} is not a plan; allowed: 'scan', 'date_first', 'index_first'")

    def probes(self, name: str) -> list[tuple[str, np.ndarray]]:
        """Per dimension in join order, the key each lineorder row probes (-1: no probe)."""
        spec = PLANS[name]
        d = self.data
        alive = spec["lo"](d) if "lo" in spec else np.ones(d.rows, dtype=bool)
        out = []
        for table, pred in spec["joins"]:
            m = self._dim_mask(table, pred)
            keys = self._key_column(table)
            e = np.empty(d.rows, dtype=np.int64)
            probe_join(keys, alive, np.ones(1, dtype=bool) if m is None else m, m is not None,
                       e)
            out.append((table, e))
        return out

    def _scan_plan(self, name, cpu, ahi):
        joins = [(t, None, e, ahi) for t, e in self.probes(name)]
        op = scan_join(self.db, "lineorder", joins, cpu=cpu)
        return statement(op, f"{name} scan")

    def _date_first_plan(self, name, cpu):
        spec = PLANS[name]
        _, pred = spec["joins"][0]
        dates = np.flatnonzero(pred(np.arange(N_DATES)))
        rowids, starts = self.date_entries()
        db = self.db
        dim = db.index("dim_date")
        per_leaf = dim.geometry.per_leaf
        parts = []
        # the dim_date scan, split before each qualifying date's ref range
        prev = 0
        for day in dates.tolist() + [N_DATES]:
            hi = day + 1 if day < N_DATES else N_DATES
            if hi > prev:
                parts.append(_dim_slice(db, prev, hi, per_leaf, cpu))
            if day < N_DATES:
                lo_e, hi_e = int(starts[day]), int(starts[day + 1])
                parts.append(secondary_range(db, "lineorder", "LO_OrderDateKey", lo_e,
                                             rowids[lo_e:hi_e], cpu=cpu))
            prev = hi
        op = sequence(parts)
        return statement(op, f"{name} date_first")

    def index_first_rows(self, name: str) -> dict:
        """The row counts of ``name``'s ``index_first`` plan: ``driver`` (dimension rows
        read through the driving index), ``ref`` (lineorder rows read through its
        secondary index), ``eq_ref`` (probes of the other dimensions, consecutive
        repeats skipped) and ``entries`` (the driving index's qualifying entries in
        index order, as dimension keys: read-only arrays).  Computed once per query
        (the plan, its gets and its reference each read them)."""
        if name not in self._index_rows:
            got = self._index_first_rows(name)
            for a in got["entries"]:
                a.flags.writeable = False
            self._index_rows[name] = got
        got = self._index_rows[name]
        return dict(got, eq_ref_by_table=dict(got["eq_ref_by_table"]))

    def _index_first_rows(self, name: str) -> dict:
        table, dix, _ = INDEX_DRIVERS[name]
        value = getattr(self.data, _INDEX_COLUMN[dix])
        order = np.lexsort((np.arange(value.size), value))     # entries -> dimension key
        ok = self._dim_mask(table, dict(PLANS[name]["joins"])[table])
        ent = np.flatnonzero(ok[order])
        keys = order[ent]
        k_lo = self._key_column(table)
        ref_mask = ok[k_lo]
        eq, by_table = 0, {}
        alive = np.flatnonzero(ref_mask)
        # rows in the plan's order: by the driving key's index entry, then row id
        rank = np.zeros(value.size, dtype=np.int64)
        rank[keys] = np.arange(keys.size)
        alive = alive[np.lexsort((alive, rank[k_lo[alive]]))]
        for t, p in PLANS[name]["joins"]:
            if t == table:
                continue
            k = self._key_column(t)[alive]
            keep = np.ones(k.size, dtype=bool)
            keep[1:] = k[1:] != k[:-1]
            eq += int(keep.sum())
            by_table[t] = int(keep.sum())
            m = self._dim_mask(t, p)
            if m is not None:
                alive = alive[m[k]]
        return dict(driver=int(keys.size), ref=int(ref_mask.sum()), eq_ref=eq,
                    eq_ref_by_table=by_table, entries=(ent, keys))

    def key_entries(self, table: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """lineorder's index on ``table``'s key (LO_PartKey, LO_CustKey, ...): the key
        column as int64, row ids in index order and the first entry of each key
        (computed once)."""
        if table not in self._by_key:
            k = self._key_column(table).astype(np.int64)
            # a stable argsort of the keys: (key, row id) pairs are distinct, so sorting them
            # packed in one int64 (keys and row ids < 2**31) gives the same order, faster
            if k.size and int(k.max()) < 2**31 and k.size < 2**31 and int(k.min()) >= 0:
                order = np.sort((k << 32) | np.arange(k.size, dtype=np.int64)) & 0xFFFFFFFF
            else:
                order = np.argsort(k, kind="stable").astype(np.int64)
            n_dim = {"dim_date": N_DATES, "customer": self.data.c_region.size,
                     "part": self.data.p_brand.size, "supplier": self.data.s_region.size}[table]
            self._by_key[table] = (k, order, np.searchsorted(k[order], np.arange(n_dim + 1)))
        return self._by_key[table]

    def _index_first_reference(self, name, cpu, ahi, batch: int = BATCH) -> Operator:
        """The ``index_first`` plan as a sequence of plan operators, one range or probe
        batch per driving row (the reference :meth:`_index_first_plan` is held to; slow;
        ``batch``: the operators' batch, for the tests)."""
        table, dix, lix = INDEX_DRIVERS[name]
        spec = PLANS[name]
        db = self.db
        _, lo_order, lo_starts = self.key_entries(table)
        rest = [(t, p, self.key_entries(t)[0], self._dim_mask(t, p))
                for t, p in spec["joins"] if t != table]
        ent, keys = self.index_first_rows(name)["entries"]
        parts = []
        last = {t: -1 for t, _, _, _ in rest}     # eq_ref's last key, kept across driving rows
        for e, k in zip(ent.tolist(), keys.tolist()):
            # the driving index's entry and its dimension row (the range continues: no
            # read past the end but after the last entry)
            parts.append(secondary_range(db, table, dix, e, [k], cpu=cpu, read_past_end=False))
            a, b = int(lo_starts[k]), int(lo_starts[k + 1])
            if b == a:
                continue
            alive = lo_order[a:b]
            parts.append(secondary_range(db, "lineorder", lix, a, alive, cpu=cpu, batch=batch))
            for t, p, col, m in rest:
                kk = col[alive]
                keep = np.ones(kk.size, dtype=bool)
                keep[1:] = kk[1:] != kk[:-1]       # eq_ref keeps the last row
                keep[0] = kk[0] != last[t]
                last[t] = int(kk[-1])
                if keep.any():
                    parts.append(lookups(db, t, kk[keep], cpu=cpu, ahi=ahi, batch=batch))
                if m is not None:
                    alive = alive[m[kk]]
                if alive.size == 0:
                    break
        return _coalesced(sequence(parts, f"{name} index_first", tablespaces=db.tablespaces))

    def _index_first_plan(self, name, cpu, ahi, block: int = 256, batch: int = BATCH):
        """The ``index_first`` plan's events built directly, ``block`` driving rows at a
        time (:class:`_IndexFirstParts`, NumPy over the block): the same events, in the
        same order and with the same merges, as :meth:`_index_first_reference` (each
        operator's gets merged only within its own chunk of ``batch`` entries or probes),
        without one operator per driving row."""
        table, dix, lix = INDEX_DRIVERS[name]
        db = self.db
        _, lo_order, lo_starts = self.key_entries(table)
        # the probed dimensions' key columns (their lineorder index order is not needed;
        # the rows a block reads are taken from them as they are stored)
        rest = [(t, self._key_column(t), self._dim_mask(t, p))
                for t, p in PLANS[name]["joins"] if t != table]
        c = self.index_first_rows(name)
        ent, keys = c["entries"]
        sec_d, cl_d = db.index(table, dix), db.index(table)
        sec_l, cl_l = db.index("lineorder", lix), db.index("lineorder")
        flag = ahi_flag(ahi)
        parts = _IndexFirstParts(db, table, sec_d, cl_d, sec_l, cl_l, lo_order, lo_starts,
                                 rest, flag, batch)

        def chunks(stream):
            last = {t: -1 for t, _, _ in rest}
            for lo_i in range(0, ent.size, block):
                hi_i = min(ent.size, lo_i + block)
                pages, rows, flags, breaks = parts.block(ent[lo_i:hi_i], keys[lo_i:hi_i], last)
                yield emit_chunk(pages, rows, cpu, stream, flags, breaks)

        def pages():
            # the pages of its own events (the reference's, event for event: tested), not
            # of the reference's one operator per driving row (7x slower at SF 1)
            return np.concatenate([ch.page for ch in chunks(0)] or [np.zeros(0, dtype=np.int64)])

        gets = self._index_first_gets(name, ahi)
        return statement(Operator(f"{name} index_first", chunks, c["driver"] + c["ref"] + c["eq_ref"],
                                  gets, db.tablespaces, pages),
                         f"{name} index_first")

    def _index_first_gets(self, name, ahi) -> int:
        """The ``index_first`` plan's page gets from its arithmetic (as the reference's
        operators count them)."""
        table, dix, lix = INDEX_DRIVERS[name]
        db = self.db
        _, _, lo_starts = self.key_entries(table)
        ent, keys = self.index_first_rows(name)["entries"]
        sec_d, cl_d = db.index(table, dix), db.index(table)
        sec_l, cl_l = db.index("lineorder", lix), db.index("lineorder")
        gets = ent.size * (sec_d.height - 1 + 2 + cl_d.height)
        a, b = lo_starts[keys], lo_starts[keys + 1]
        a, b = a[b > a], b[b > a]
        n = b - a
        extra = (b < sec_l.geometry.rows).astype(np.int64)
        pl = sec_l.geometry.per_leaf
        touched = (b + extra - 1) // pl - a // pl + 1
        gets += int((sec_l.height - 1 + n + extra + touched + n * cl_l.height).sum())
        probes = self.index_first_rows(name)["eq_ref_by_table"]
        gets += sum(cnt * (1 if ahi_flag(ahi) else db.index(t).height) for t, cnt in probes.items())
        return int(gets)

    def expected_rows(self, name: str, plan: str = "scan") -> int:
        """Rows read, from the data alone (lineorder rows + dimension probes or ref rows)."""
        if plan == "scan":
            return self.data.rows + sum(int((e >= 0).sum()) for _, e in self.probes(name))
        if plan == "index_first":
            c = self.index_first_rows(name)
            return c["driver"] + c["ref"] + c["eq_ref"]
        _, pred = PLANS[name]["joins"][0]
        dates = pred(np.arange(N_DATES))
        return N_DATES + int(dates[self.data.orderdate].sum())


def _coalesced(op: Operator, events: int = 1 << 16) -> Operator:
    """``op`` with its (many small) chunks joined into chunks of about ``events`` events:
    the same events in the same order, fewer calls into the pools."""
    def chunks(stream):
        buf, n = [], 0
        for c in op.factory(stream):
            buf.append(c)
            n += len(c)
            if n >= events:
                yield _join(buf)
                buf, n = [], 0
        if buf:
            yield _join(buf)

    return Operator(op.name, chunks, op.rows, op.gets, op.tablespaces, op.pages)


def _ranges(starts: np.ndarray, lengths: np.ndarray):
    """The ranges ``[s, s + l)`` end to end: each element's value, its range's index and
    its place in its range."""
    lengths = np.asarray(lengths, dtype=np.int64)
    rid = np.repeat(np.arange(lengths.size), lengths)
    pos = np.arange(rid.size, dtype=np.int64) - (np.cumsum(lengths) - lengths)[rid]
    return np.asarray(starts, dtype=np.int64)[rid] + pos, rid, pos


def _places(ids: np.ndarray, n_ids: int) -> np.ndarray:
    """Each element's place among the elements of its id (``ids``: non-decreasing, in
    ``0 .. n_ids - 1``)."""
    counts = np.bincount(ids, minlength=n_ids)
    return np.arange(ids.size) - (np.cumsum(counts) - counts)[ids]


class _IndexFirstParts:
    """The ``index_first`` plan's gets for a block of driving rows, with NumPy over the
    whole block (:meth:`SSB._index_first_plan`).  Per driving row, in order, the
    segments :meth:`SSB._index_first_reference`'s operators issue (consecutive gets of a
    page merge within a segment, never across): the driving index's descent above its
    leaf; its leaf (twice: the entry and the range's end check) and the dimension row's
    clustered descent; then, for a key with lineorder rows, ``LO_*Key``'s descent above
    its leaf; its entries, each with the clustered lookup of its row (and the entry after
    the last one), a segment per :data:`~bufsim.workloads.plans.BATCH` entries; and each
    other dimension's ``eq_ref`` probes in join order (a key equal to the previous probe's
    skipped, across driving rows too), a segment per ``BATCH`` probes, the rows that fail
    a dimension's predicate probing no later one.  ``batch``: the reference operators'
    batch (:data:`~bufsim.workloads.plans.BATCH`)."""

    def __init__(self, db, table, sec_d, cl_d, sec_l, cl_l, lo_order, lo_starts, rest, flag,
                 batch: int = BATCH):
        self.db, self.table, self.batch = db, table, int(batch)
        self.sec_d, self.cl_d, self.sec_l, self.cl_l = sec_d, cl_d, sec_l, cl_l
        self.lo_order, self.lo_starts, self.rest, self.flag = lo_order, lo_starts, rest, flag

    @staticmethod
    def _fixed(rows, mat, rw=None, fl=None, start=None):
        """A part of one segment per row of ``mat`` (one driving row each): its gets."""
        n, w = mat.shape
        st = np.zeros((n, w), dtype=bool)
        if w:
            st[:, 0] = True if start is None else start
        return (np.repeat(rows, w), mat.ravel(),
                np.zeros(n * w, dtype=np.int64) if rw is None else rw.ravel(),
                np.zeros(n * w, dtype=np.uint8) if fl is None else fl.ravel(), st.ravel())

    def block(self, ent: np.ndarray, keys: np.ndarray, last: dict):
        """The gets of the driving rows ``ent`` (driving index entries) / ``keys`` (their
        dimension keys): ``(pages, rows, flags, breaks)`` as :func:`emit_chunk` takes
        them; ``last`` (table -> the last key probed) is updated as the rows probe."""
        db, table, lo_order = self.db, self.table, self.lo_order
        sec_d, cl_d, sec_l, cl_l = self.sec_d, self.cl_d, self.sec_l, self.cl_l
        m = ent.size
        rows_all = np.arange(m)
        parts = []
        # the driving index's descent above its leaf, then its leaf twice and the row's descent
        leaf_d = ent // sec_d.geometry.per_leaf
        parts.append(self._fixed(rows_all, db.dense(table, sec_d.paths(leaf_d)[:, :-1])))
        sp = db.dense(table, sec_d.leaves[leaf_d])
        mat = np.column_stack([sp, sp, db.dense(table, cl_d.paths(cl_d.leaf_of(keys)))])
        rw = np.zeros(mat.shape, dtype=np.int64)
        rw[:, -1] = 1
        parts.append(self._fixed(rows_all, mat, rw))
        a, b = self.lo_starts[keys], self.lo_starts[keys + 1]
        jn = np.flatnonzero(b > a)              # the rows with lineorder rows
        a, n = a[jn].astype(np.int64), (b - a)[jn].astype(np.int64)
        pl = sec_l.geometry.per_leaf
        parts.append(self._fixed(jn, db.dense("lineorder", sec_l.paths(a // pl)[:, :-1])))
        # LO_*Key's entries (and the one after the last, if any), each with its lookup
        extra = (a + n < sec_l.geometry.rows).astype(np.int64)
        e, er, pos = _ranges(a, n + extra)
        leaf = e // pl
        new = np.ones(e.size, dtype=bool)
        new[1:] = leaf[1:] != leaf[:-1]
        new[pos == 0] = True
        real = pos < n[er]
        spage = db.dense("lineorder", sec_l.leaves[leaf])
        w = 2 + cl_l.height
        pg = np.full((e.size, w), -1, dtype=np.int64)
        pg[:, 0] = np.where(new, spage, -1)
        pg[:, 1] = spage
        alive = lo_order[e[real]]
        pg[real, 2:] = db.dense("lineorder", cl_l.paths(cl_l.leaf_of(alive)))
        rw = np.zeros((e.size, w), dtype=np.int64)
        rw[real, -1] = 1
        first = pos % self.batch == 0
        st = np.zeros((e.size, w), dtype=bool)
        st[:, 0] = first & new
        st[:, 1] = first & ~new
        keep = pg.ravel() >= 0
        parts.append((np.repeat(jn[er], w)[keep], pg.ravel()[keep], rw.ravel()[keep],
                      np.zeros(int(keep.sum()), dtype=np.uint8), st.ravel()[keep]))
        # the other dimensions' probes, in join order
        arow = jn[er[real]]
        for t, col, mask in self.rest:
            if alive.size == 0:
                break
            kk = col[alive].astype(np.int64)
            kp = np.ones(kk.size, dtype=bool)
            kp[1:] = kk[1:] != kk[:-1]
            kp[0] = kk[0] != last[t]
            last[t] = int(kk[-1])
            probe, prow = kk[kp], arow[kp]
            jx = db.index(t)
            paths = db.dense(t, jx.paths(jx.leaf_of(probe)))
            if self.flag:
                paths = paths[:, -1:]
            rw = np.zeros(paths.shape, dtype=np.int64)
            rw[:, -1] = 1
            fl = np.zeros(paths.shape, dtype=np.uint8)
            fl[:, -1] = self.flag
            parts.append(self._fixed(prow, paths, rw, fl, _places(prow, m) % self.batch == 0))
            if mask is not None:
                ok = mask[kk]
                alive, arow = alive[ok], arow[ok]
        # the parts interleaved: driving row by driving row, each row's parts in order
        lens = np.stack([np.bincount(p[0], minlength=m) for p in parts], axis=1)
        off = (np.cumsum(lens.ravel()) - lens.ravel()).reshape(lens.shape)
        total = int(lens.sum())
        pages = np.empty(total, dtype=np.int64)
        rows = np.empty(total, dtype=np.int64)
        flags = np.empty(total, dtype=np.uint8)
        starts = np.zeros(total, dtype=bool)
        part_first = np.cumsum(lens, axis=0) - lens     # a row's first get within its part
        for j, (grow, pg, rw, fl, st) in enumerate(parts):
            dest = off[grow, j] + np.arange(grow.size) - part_first[grow, j]
            pages[dest], rows[dest], flags[dest], starts[dest] = pg, rw, fl, st
        breaks = np.flatnonzero(starts)
        return pages, rows, flags, breaks[breaks > 0]


def _join(chunks) -> Chunk:
    if len(chunks) == 1:
        return chunks[0]
    return Chunk(*(np.concatenate([getattr(c, f) for c in chunks])
                   for f in ("page", "count", "cpu_ns", "stream", "flags")))


def _dim_slice(db: Database, lo: int, hi: int, per_leaf: int, cpu: CpuCost) -> Operator:
    """Rows ``[lo, hi)`` of the dim_date scan: the descent on row 0, a get per row, an
    arrival get per leaf."""
    if lo == 0:
        return range_scan(db, "dim_date", 0, hi, cpu=cpu, read_past_end=False)
    # continuing a scan: no descent, an arrival get on every leaf that starts in the slice
    ix = db.index("dim_date")
    r = np.arange(lo, hi, dtype=np.int64)
    leaf = r // per_leaf
    pages = db.dense("dim_date", ix.leaves[leaf])
    arrive = r % per_leaf == 0
    pg = np.repeat(pages, 1 + arrive)
    rows = np.ones(pg.size, dtype=np.int64)
    first = np.cumsum(1 + arrive) - (1 + arrive)
    rows[first[arrive]] = 0

    def chunks(stream):
        yield emit_chunk(pg, rows, cpu, stream, 0)

    return Operator("dim_date scan", chunks, int(r.size), int(pg.size), db.tablespaces,
                    lambda: pages)
