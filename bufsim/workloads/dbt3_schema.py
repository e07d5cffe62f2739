"""DBT-3 (TPC-H) schema and seeded data: the eight tables, their indexes, column values.

Part of the DBT-3 model of :mod:`bufsim.workloads.dbt3`, which re-exports the
functions, classes and constants defined here.  :func:`dbt3_tables` gives the
tables (columns, row counts, indexes) for :mod:`~bufsim.workloads.geometry`;
:class:`Dbt3Data` the seeded column values that decide which rows each query
reads; the constants code the TPC-H values the query plans filter on (:func:`day`
numbers of dates, nations, regions, part types, brands, containers, ship modes).

Schema
------
The eight TPC-H tables with the TPC-H column types (as DBT-3's MySQL scripts
create them; ``char``/``varchar`` latin1, all columns ``NOT NULL``) and the
indexes DBT-3 creates for MySQL (``scripts/mysql/*create_indexes*`` of OSDL
DBT-3, also listed by its ``analyze_stats.pl``): primary keys on every table
(``lineitem (l_orderkey, l_linenumber)``, ``partsupp (ps_partkey, ps_suppkey)``)
and ``i_l_shipdate``, ``i_l_suppkey_partkey (l_partkey, l_suppkey)``,
``i_l_partkey``, ``i_l_suppkey``, ``i_l_receiptdate``, ``i_l_orderkey``,
``i_l_orderkey_quantity (l_orderkey, l_quantity)``, ``i_l_commitdate``,
``i_c_nationkey``, ``i_o_orderdate``, ``i_o_custkey``, ``i_s_nationkey``,
``i_ps_partkey``, ``i_ps_suppkey``, ``i_n_regionkey``.  The scripts load the
data with LOAD DATA and add the indexes afterwards, so InnoDB builds every
secondary index by a merge sort: leaves in key order, filled like an ordered
load (``secondary_ordered=True``; ``False`` lays them out as a random-order
insert would).

Row counts (TPC-H 4.2.5): part 200,000 x SF, supplier 10,000 x SF, partsupp
4 per part, customer 150,000 x SF, orders 1,500,000 x SF with 1-7 lines each
(lineitem about 6,000,000 x SF; 6,001,215 in dbgen's SF1), nation 25, region 5.

Mean stored lengths of the varchar columns (TPC-H 4.2.2.7: a random v-string
or text of length uniform in [a, b] has mean (a+b)/2): p_name 32.5 (five of 92
colour words, mean word 5.7 letters, and 4 spaces), p_type 20.8 (three
syllables: 6.2 + 7.8 + 4.8 letters and 2 spaces), p_comment [5,22] 13.5,
s_address and c_address [10,40] 25, s_comment [25,100] 62.5, ps_comment
[49,198] 123.5, c_name 18 (``Customer#000000001``), c_comment [29,116] 72.5,
o_comment [19,78] 48.5, l_comment [10,43] 26.5, n_comment [31,114] 72.5,
r_comment [31,115] 73.

Data (:class:`Dbt3Data`, seeded numpy, TPC-H 4.2.3): orders in order-key order
(the keys are sparse, 8 of every 32, but only the order matters here) with
o_orderdate uniform over 1992-01-01 .. 1998-08-02 (2,406 days) and o_custkey
uniform over the customers whose key is not a multiple of 3; 1-7 lines per
order stored in (l_orderkey, l_linenumber) order; l_partkey uniform, l_suppkey
one of the part's four suppliers ``(p + i (S/4 + (p-1)/S)) mod S + 1``;
l_shipdate = orderdate + 1..121, l_commitdate = orderdate + 30..90,
l_receiptdate = shipdate + 1..30, l_returnflag R or A (even odds) when the
receipt is on or before 1995-06-17 (else N), o_orderstatus F / O / P from the
lines' ship dates against that date, l_quantity 1..50, 7 ship modes and 4 ship
instructions; parts get size 1..50, 150 types, 25 brands, 40 containers and a
name holding 'green' with probability 5/92; customers and suppliers a nation,
customers one of 5 market segments; about 1 % of the order comments match
``%special%requests%``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .geometry import FILL_ORDERED, FILL_RANDOM, Column, Index, Table

__all__ = ["Dbt3Data", "dbt3_tables", "day", "CURRENT_DATE", "N_ORDER_DATES", "NATION_REGION",
           "SHIP_MODES"]

#: o_orderdate: 1992-01-01 .. 1998-08-02 (TPC-H STARTDATE .. ENDDATE - 151 days)
N_ORDER_DATES = 2406
_EPOCH = np.datetime64("1992-01-01")


def day(iso: str) -> int:
    """Day number of an ISO date counted from 1992-01-01."""
    return int((np.datetime64(iso) - _EPOCH).astype(int))


#: TPC-H CURRENTDATE (4.2.3): decides l_returnflag, l_linestatus, o_orderstatus
CURRENT_DATE = day("1995-06-17")
#: nation -> region (TPC-H 4.2.3); regions AFRICA 0, AMERICA 1, ASIA 2, EUROPE 3, MIDDLE EAST 4
NATION_REGION = np.array([0, 1, 1, 1, 4, 0, 3, 3, 2, 2, 4, 4, 2, 4, 0, 0, 0, 1, 2, 3, 4, 2, 3, 3, 1])
GERMANY, SAUDI_ARABIA = 7, 20
AMERICA, ASIA, EUROPE = 1, 2, 3
#: p_type = syllable1 (6) x syllable2 (5) x syllable3 (5); codes s1 * 25 + s2 * 5 + s3
ECONOMY, ANODIZED, STEEL, BRASS = 4, 0, 3, 2
#: containers: size (SM 0, LG 1, MED 2, JUMBO 3, WRAP 4) * 8 + kind (CASE 0, BOX 1, BAG 2,
#: JAR 3, PKG 4, PACK 5, CAN 6, DRUM 7); brands (M-1) * 5 + (N-1) for Brand#MN
SHIP_MODES = ("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB")
DELIVER_IN_PERSON = 0


def brand_code(mn: int) -> int:
    return (mn // 10 - 1) * 5 + (mn % 10 - 1)


def container_codes(size: int, kinds) -> list:
    return [size * 8 + k for k in kinds]


C = Column


def dbt3_tables(sf: float = 1.0, *, n_lineitem: int | None = None,
                secondary_ordered: bool = True, random_fill: float = FILL_RANDOM) -> list[Table]:
    """The eight tables at scale factor ``sf`` (``n_lineitem`` overrides lineitem's rows)."""
    n = table_rows(sf)
    o = secondary_ordered
    dec = "decimal(15,2)"

    def T(name, cols, rows, pk, idx):
        return Table(name, [C(c, t, False, a) for c, t, a in cols], rows, primary_key=pk,
                     indexes=[Index(i, cs, ordered=o or ordered) for i, cs, ordered in idx],
                     fill=FILL_ORDERED, random_fill=random_fill)

    part = T("part", [("p_partkey", "int", None), ("p_name", "varchar(55)", 32.5),
                      ("p_mfgr", "char(25)", None), ("p_brand", "char(10)", None),
                      ("p_type", "varchar(25)", 20.8), ("p_size", "int", None),
                      ("p_container", "char(10)", None), ("p_retailprice", dec, None),
                      ("p_comment", "varchar(23)", 13.5)], n["part"], ("p_partkey",), [])
    supplier = T("supplier", [("s_suppkey", "int", None), ("s_name", "char(25)", None),
                              ("s_address", "varchar(40)", 25), ("s_nationkey", "int", None),
                              ("s_phone", "char(15)", None), ("s_acctbal", dec, None),
                              ("s_comment", "varchar(101)", 62.5)], n["supplier"], ("s_suppkey",),
                 [("i_s_nationkey", ("s_nationkey",), False)])
    partsupp = T("partsupp", [("ps_partkey", "int", None), ("ps_suppkey", "int", None),
                              ("ps_availqty", "int", None), ("ps_supplycost", dec, None),
                              ("ps_comment", "varchar(199)", 123.5)], n["partsupp"],
                 ("ps_partkey", "ps_suppkey"),
                 [("i_ps_partkey", ("ps_partkey",), True), ("i_ps_suppkey", ("ps_suppkey",), False)])
    customer = T("customer", [("c_custkey", "int", None), ("c_name", "varchar(25)", 18),
                              ("c_address", "varchar(40)", 25), ("c_nationkey", "int", None),
                              ("c_phone", "char(15)", None), ("c_acctbal", dec, None),
                              ("c_mktsegment", "char(10)", None), ("c_comment", "varchar(117)", 72.5)],
                 n["customer"], ("c_custkey",), [("i_c_nationkey", ("c_nationkey",), False)])
    orders = T("orders", [("o_orderkey", "int", None), ("o_custkey", "int", None),
                          ("o_orderstatus", "char(1)", None), ("o_totalprice", dec, None),
                          ("o_orderdate", "date", None), ("o_orderpriority", "char(15)", None),
                          ("o_clerk", "char(15)", None), ("o_shippriority", "int", None),
                          ("o_comment", "varchar(79)", 48.5)], n["orders"], ("o_orderkey",),
               [("i_o_orderdate", ("o_orderdate",), False), ("i_o_custkey", ("o_custkey",), False)])
    lineitem = T("lineitem", [("l_orderkey", "int", None), ("l_partkey", "int", None),
                              ("l_suppkey", "int", None), ("l_linenumber", "int", None),
                              ("l_quantity", dec, None), ("l_extendedprice", dec, None),
                              ("l_discount", dec, None), ("l_tax", dec, None),
                              ("l_returnflag", "char(1)", None), ("l_linestatus", "char(1)", None),
                              ("l_shipdate", "date", None), ("l_commitdate", "date", None),
                              ("l_receiptdate", "date", None), ("l_shipinstruct", "char(25)", None),
                              ("l_shipmode", "char(10)", None), ("l_comment", "varchar(44)", 26.5)],
                 n["lineitem"] if n_lineitem is None else int(n_lineitem),
                 ("l_orderkey", "l_linenumber"),
                 [("i_l_shipdate", ("l_shipdate",), False),
                  ("i_l_suppkey_partkey", ("l_partkey", "l_suppkey"), False),
                  ("i_l_partkey", ("l_partkey",), False), ("i_l_suppkey", ("l_suppkey",), False),
                  ("i_l_receiptdate", ("l_receiptdate",), False),
                  ("i_l_orderkey", ("l_orderkey",), True),
                  ("i_l_orderkey_quantity", ("l_orderkey", "l_quantity"), True),
                  ("i_l_commitdate", ("l_commitdate",), False)])
    nation = T("nation", [("n_nationkey", "int", None), ("n_name", "char(25)", None),
                          ("n_regionkey", "int", None), ("n_comment", "varchar(152)", 72.5)],
               25, ("n_nationkey",), [("i_n_regionkey", ("n_regionkey",), False)])
    region = T("region", [("r_regionkey", "int", None), ("r_name", "char(25)", None),
                          ("r_comment", "varchar(152)", 73)], 5, ("r_regionkey",), [])
    return [part, supplier, partsupp, customer, orders, lineitem, nation, region]


def table_rows(sf: float) -> dict:
    """Rows of each DBT-3 table at scale factor ``sf`` (TPC-H's cardinalities, at least one
    row; four suppliers at the least)."""
    r = lambda x: max(1, int(round(x * sf)))  # noqa: E731
    return dict(part=r(200_000), supplier=max(4, r(10_000)), partsupp=4 * r(200_000),
                customer=r(150_000), orders=r(1_500_000), lineitem=r(6_001_215))


@dataclass(frozen=True, eq=False)
class Dbt3Data:
    """Column values deciding which rows each query reads (0-based keys = row positions)."""

    sf: float
    # orders (per order, in order-key order)
    o_cust: np.ndarray
    o_date: np.ndarray
    o_status: np.ndarray          # 0 F, 1 O, 2 P
    o_special: np.ndarray         # o_comment like '%special%requests%'
    o_lstart: np.ndarray          # first lineitem row of each order (n_orders + 1)
    # lineitem (per row, in (l_orderkey, l_linenumber) order)
    l_order: np.ndarray
    l_part: np.ndarray
    l_supp: np.ndarray
    l_ps: np.ndarray              # partsupp row of (l_partkey, l_suppkey)
    l_qty: np.ndarray
    l_ship: np.ndarray
    l_commit: np.ndarray
    l_receipt: np.ndarray
    l_flag: np.ndarray            # 0 R, 1 A, 2 N
    l_mode: np.ndarray            # index into SHIP_MODES
    l_instruct: np.ndarray
    # part, partsupp, supplier, customer
    p_size: np.ndarray
    p_type: np.ndarray
    p_brand: np.ndarray
    p_container: np.ndarray
    p_green: np.ndarray
    ps_supp: np.ndarray           # partsupp rows in (partkey, suppkey) order: 4 per part
    s_nation: np.ndarray
    c_nation: np.ndarray
    c_segment: np.ndarray         # BUILDING = 1
    n_region: np.ndarray = field(default_factory=lambda: NATION_REGION.copy())

    @classmethod
    def generate(cls, sf: float, seed: int = 0) -> Dbt3Data:
        rng = np.random.default_rng(seed)
        n = table_rows(sf)
        no, nc, npart, ns = n["orders"], n["customer"], n["part"], n["supplier"]
        lines = rng.integers(1, 8, no)
        lstart = np.zeros(no + 1, dtype=np.int64)
        np.cumsum(lines, out=lstart[1:])
        l_order = np.repeat(np.arange(no, dtype=np.int32), lines)
        nl = l_order.size
        # customers with key % 3 != 0 (1-based) place orders
        active = np.flatnonzero((np.arange(1, nc + 1) % 3) != 0)
        if active.size == 0:
            active = np.arange(nc)
        o_cust = active[rng.integers(0, active.size, no)].astype(np.int32)
        o_date = rng.integers(0, N_ORDER_DATES, no).astype(np.int16)
        od = o_date[l_order].astype(np.int16)
        l_ship = (od + rng.integers(1, 122, nl)).astype(np.int16)
        l_commit = (od + rng.integers(30, 91, nl)).astype(np.int16)
        l_receipt = (l_ship + rng.integers(1, 31, nl)).astype(np.int16)
        l_flag = np.where(l_receipt <= CURRENT_DATE, rng.integers(0, 2, nl), 2).astype(np.int8)
        shipped = (l_ship <= CURRENT_DATE).astype(np.int64)
        n_shipped = np.add.reduceat(shipped, lstart[:-1])
        o_status = np.where(n_shipped == lines, 0, np.where(n_shipped == 0, 1, 2)).astype(np.int8)
        # parts and their four suppliers (TPC-H 4.2.3 ps_suppkey formula, 1-based keys)
        p1 = np.arange(1, npart + 1, dtype=np.int64)
        sup = np.stack([(p1 + i * (ns // 4 + (p1 - 1) // ns)) % ns for i in range(4)], axis=1)
        sup.sort(axis=1)
        ps_supp = sup.ravel().astype(np.int32)                 # 0-based supplier rows
        l_part = rng.integers(0, npart, nl).astype(np.int32)
        j = rng.integers(0, 4, nl)
        l_ps = (4 * l_part.astype(np.int64) + j).astype(np.int32)
        l_supp = ps_supp[l_ps]
        return cls(
            float(sf), o_cust, o_date, o_status, rng.random(no) < 0.01, lstart, l_order, l_part,
            l_supp, l_ps, rng.integers(1, 51, nl).astype(np.int8), l_ship, l_commit, l_receipt,
            l_flag, rng.integers(0, 7, nl).astype(np.int8), rng.integers(0, 4, nl).astype(np.int8),
            rng.integers(1, 51, npart).astype(np.int8), rng.integers(0, 150, npart).astype(np.int16),
            rng.integers(0, 25, npart).astype(np.int8), rng.integers(0, 40, npart).astype(np.int8),
            rng.random(npart) < 5 / 92, ps_supp,
            rng.integers(0, 25, ns).astype(np.int8), rng.integers(0, 25, nc).astype(np.int8),
            rng.integers(0, 5, nc).astype(np.int8))

    @property
    def n_lineitem(self) -> int:
        return int(self.l_order.size)
