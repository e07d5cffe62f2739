"""DBT-3 (TPC-H) on InnoDB: schema, seeded data and the access patterns of 15 queries.

Reproduces the setting of 002_5c4a4fbcadbdca94.txt: DBT-3 scale 1 on MySQL 5.5 /
5.6.5, queries run with plain nested loops, with Disk-Sweep MRR, and with
``optimizer_switch='mrr_cost_based=off,batched_key_access=on'``.

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

Plans: see :data:`PLANS` (join order and access type per table) and
:meth:`Dbt3.query`.  Three variants:

``plain``
    MySQL 5.5 / 5.6 without BKA and MRR: nested-loop joins (``ref`` and
    ``eq_ref`` probes), every secondary-index entry followed by its clustered
    lookup, an ``eq_ref`` probe skipped when its key repeats the previous one
    (spec 14).  The document found 5.6.5 with the default optimizer_switch
    (mrr_cost_based=on) no different from 5.5 except Q18 (subquery
    materialization, which this plan already uses), i.e. its cost model did
    not pick DS-MRR: ``plain`` stands for both.
``mrr``
    Assumption: Disk-Sweep MRR on every non-covering range access (the
    driving range scans of Q3, Q4, Q10, Q14 and Q15, the queries the document
    names), no BKA: the scan fills ``read_rnd_buffer_size`` (256K) with row
    ids, sorts them and fetches the rows in primary-key order, each fetched row
    then joined by nested loops.  This isolates the DS-MRR half of the
    document's ``mrr_cost_based=off,batched_key_access=on`` setting.
``bka``
    ``mrr_cost_based=off,batched_key_access=on``: DS-MRR as in ``mrr``, and
    Batched Key Access where MySQL 5.6 allows it (:meth:`Dbt3.batched`): only on
    non-covering secondary-index ``ref`` steps, because ``setup_join_buffering``
    refuses BKA when the default MRR implementation is chosen, which
    ``DsMrr_impl::choose_mrr_impl`` does for InnoDB's clustered primary key and for
    index-only access; ``eq_ref`` and primary-key ``ref`` steps stay nested loops.
    Outer rows fill a join buffer of ``join_buffer_size`` (128K in 5.6.5; 256K
    from 5.6.6); each record also reserves ``aux_buffer_incr()`` = rec_per_key x
    (ref_length + 8) bytes for the MRR buffer, so a batch holds
    ``join_buffer_size // (record + rec_per_key * (ref_length + 8))`` rows.  The
    keys are probed in join-buffer order (5.6's DS-MRR does not sort keys); the row
    ids go into the rest of the join buffer (``JOIN_CACHE_BKA::init_mrr_buff``:
    the MRR buffer is the buffer's free tail, elements ref_length + an association
    pointer), are sorted, and the rows are fetched in primary-key order, pass by
    pass, so joined rows leave in row-id order.  Dependent subqueries stay nested
    loops, evaluated per joined row in the order the join produces them (Q17: the
    subquery on the same part's lineitem rows then no longer follows the outer
    lookup of that part, which is the locality BKA destroys).  A full buffer's
    probes are emitted before the next buffer's rows are passed on, buffer by
    buffer, exactly as the join-cache code flushes.

Rows read (``Operator.rows``) and page gets (``Operator.gets``) are counted
from the plan without building pages (:meth:`Dbt3.expected`); the trace is
built from the same records plus the B-tree paths, so a test can compare both.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .geometry import FILL_ORDERED, FILL_RANDOM, Column, Index, Table
from .plans import CpuCost, Database, Operator, _emit, range_scan, statement

__all__ = ["Dbt3", "Dbt3Data", "dbt3_database", "dbt3_tables", "PLANS", "QUERIES", "VARIANTS",
           "day", "CURRENT_DATE", "N_ORDER_DATES"]

QUERIES = (2, 3, 4, 5, 8, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21)
VARIANTS = ("plain", "mrr", "bka")
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


def _brand(mn: int) -> int:
    return (mn // 10 - 1) * 5 + (mn % 10 - 1)


def _container(size: int, kinds) -> list:
    return [size * 8 + k for k in kinds]


C = Column


def dbt3_tables(sf: float = 1.0, *, n_lineitem: int | None = None,
                secondary_ordered: bool = True, random_fill: float = FILL_RANDOM) -> list[Table]:
    """The eight tables at scale factor ``sf`` (``n_lineitem`` overrides lineitem's rows)."""
    n = _sizes(sf)
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


def _sizes(sf: float) -> dict:
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
        n = _sizes(sf)
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


# --------------------------------------------------------------------------------------
# plan records
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    """One table access of a plan, probed once per incoming row.

    ``probe(cols)`` gives, per incoming row, the first key-order entry of
    ``index`` (None: the clustered index) and the number of entries with the
    key.  ``unique``: an ``eq_ref`` probe (one entry, no read past it).
    ``filt(cols)`` decides which read rows go on.  ``exists`` +1 / -1: an
    (NOT) EXISTS subquery reading entries up to the first one where
    ``pred(cols, rows)`` holds; the incoming row goes on when one was (was not)
    found.  ``bka``: the variant ``bka`` batches this join; otherwise it stays a
    nested loop (dependent subqueries).  ``buf``: join-buffer bytes per outer row.
    """

    alias: str
    table: str
    index: str | None
    probe: Callable
    unique: bool = False
    filt: Callable | None = None
    exists: int = 0
    pred: Callable | None = None
    covering: bool = False
    bka: bool = True
    buf: int = 32
    access: str = ""


@dataclass(eq=False)
class _Recs:
    """Records of one access in execution order: each is a group of consecutive gets
    (an optional descent above the leaf, 0-2 leaf gets, an optional clustered
    lookup) that reads at most one row and may pass one row on."""

    table: str
    index: str | None
    probe: np.ndarray      # incoming row of each record
    e: np.ndarray          # entry position in `index` (-1: a DS-MRR fetch record)
    upper: np.ndarray      # bool: descent from the root above the leaf
    leafreps: np.ndarray   # 0, 1 or 2 gets of the entry's leaf
    look: np.ndarray       # bool: clustered lookup of `row`
    row: np.ndarray        # clustered row read (-1: none)
    nrows: np.ndarray      # rows read (0/1)
    out: np.ndarray        # bool: passes a row on
    pcols: dict            # incoming rows' columns
    alias: str | None      # name of this table's row in passed-on rows (None: exists)
    gcount: np.ndarray = None
    parent: np.ndarray = None

    def __len__(self):
        return int(self.probe.size)

    def take(self, sl) -> _Recs:
        return _Recs(self.table, self.index, self.probe[sl], self.e[sl], self.upper[sl],
                     self.leafreps[sl], self.look[sl], self.row[sl], self.nrows[sl],
                     self.out[sl], self.pcols, self.alias, self.gcount[sl])

    def out_cols(self) -> dict:
        sel = np.flatnonzero(self.out)
        p = self.probe[sel]
        cols = {a: v[p] for a, v in self.pcols.items()}
        if self.alias is not None:
            cols[self.alias] = self.row[sel]
        return cols


def _n(cols: dict) -> int:
    return int(next(iter(cols.values())).size) if cols else 0


def _take(cols: dict, idx) -> dict:
    return {a: v[idx] for a, v in cols.items()}


def _cat(parts: list) -> dict:
    return {a: np.concatenate([p[a] for p in parts]) for a in parts[0]}


def _expand(start, k):
    """Per entry: (probe id, offset within the probe) for ``k[i]`` entries of probe i."""
    k = np.asarray(k, dtype=np.int64)
    pid = np.repeat(np.arange(k.size, dtype=np.int64), k)
    j = np.arange(pid.size, dtype=np.int64) - np.repeat(np.cumsum(k) - k, k)
    return pid, j


class Dbt3:
    """DBT-3 at a scale factor: layout, data, and the 15 queries' access patterns.

    Parameters
    ----------
    sf : float
        Scale factor, 0 < sf <= 10 (SF 0.01-0.05 for quick runs).
    seed : int
        Seeds the data (and the leaf order of randomly filled indexes).
    secondary_ordered : bool
        Secondary indexes built by merge sort after the load (DBT-3's scripts).
    join_buffer_size, read_rnd_buffer_size : int
        Bytes (MySQL 5.6.5 defaults 128K and 256K).

    Examples
    --------
    >>> d = Dbt3(0.01)
    >>> op = d.query(17, "bka")
    >>> op.gets == sum(c.n_gets for c in op.chunks())
    True
    """

    QUERIES = QUERIES
    VARIANTS = VARIANTS

    def __init__(self, sf: float = 1.0, *, seed: int = 0, secondary_ordered: bool = True,
                 join_buffer_size: int = 131072, read_rnd_buffer_size: int = 262144):
        if not (isinstance(sf, (int, float)) and 0 < sf <= 10):
            raise ValueError(f"sf = {sf!r} is out of range; allowed: 0 < sf <= 10")
        for f, v in (("join_buffer_size", join_buffer_size),
                     ("read_rnd_buffer_size", read_rnd_buffer_size)):
            if not isinstance(v, int) or v < 128:
                raise ValueError(f"{f} = {v!r} is out of range; allowed: integer >= 128")
        self.sf = float(sf)
        self.seed = seed
        self.data = Dbt3Data.generate(self.sf, seed)
        self.tables = dbt3_tables(self.sf, n_lineitem=self.data.n_lineitem,
                                  secondary_ordered=secondary_ordered)
        self.db = Database(self.tables, seed=seed)
        self.tablespaces = self.db.tablespaces
        self.join_buffer_size = join_buffer_size
        self.read_rnd_buffer_size = read_rnd_buffer_size
        self._ix = {}

    # ---- secondary indexes: entry -> row, key -> first entry ---------------------------
    def _sec(self, table: str, index: str):
        """(rows in index order, first entry of every key value)."""
        if (table, index) not in self._ix:
            d = self.data
            col = {("lineitem", "i_l_partkey"): d.l_part, ("lineitem", "i_l_suppkey"): d.l_supp,
                   ("lineitem", "i_l_shipdate"): d.l_ship, ("orders", "i_o_orderdate"): d.o_date,
                   ("orders", "i_o_custkey"): d.o_cust, ("customer", "i_c_nationkey"): d.c_nation,
                   ("supplier", "i_s_nationkey"): d.s_nation,
                   ("partsupp", "i_ps_suppkey"): d.ps_supp,
                   ("nation", "i_n_regionkey"): d.n_region}[(table, index)]
            order = np.argsort(col, kind="stable").astype(np.int64)
            starts = np.searchsorted(col[order], np.arange(int(col.max()) + 2)).astype(np.int64)
            self._ix[(table, index)] = (order, starts)
        return self._ix[(table, index)]

    def _ref(self, table, index):
        """probe(keys) -> (first entry, count) on a secondary index."""
        def f(keys):
            _, starts = self._sec(table, index)
            keys = np.asarray(keys, dtype=np.int64)
            k = np.clip(keys, 0, starts.size - 2)
            s = starts[k]
            return s, np.where(keys == k, starts[k + 1] - s, 0)
        return f

    def _range(self, table, index, lo, hi):
        """A driving range: entries with key in [lo, hi)."""
        _, starts = self._sec(table, index)
        lo, hi = np.clip([lo, hi], 0, starts.size - 1)
        return int(starts[lo]), int(starts[hi] - starts[lo])

    def _rows_of(self, table, index):
        if index is None or (table, index) in (("lineitem", "i_l_orderkey"),
                                               ("lineitem", "i_l_orderkey_quantity"),
                                               ("partsupp", "i_ps_partkey")):
            return None                                 # entries in clustered order
        return self._sec(table, index)[0]

    # ---- records -------------------------------------------------------------------
    def _records(self, st: Step, cols: dict, *, mrr: bool, last_key: dict | None,
                 mrr_cap: int | None = None, work: dict | None = None) -> _Recs:
        db = self.db
        ix = db.index(st.table, st.index)
        g = ix.geometry
        total, pl = g.rows, g.per_leaf
        T = _n(cols)
        start, k = st.probe(cols)
        start = np.broadcast_to(np.asarray(start, dtype=np.int64), (T,))
        k = np.broadcast_to(np.asarray(k, dtype=np.int64), (T,))
        rowmap = self._rows_of(st.table, st.index)
        secondary = st.index is not None and not st.covering
        z = np.zeros(T, dtype=bool)
        if st.unique:
            skip = z.copy()
            if last_key is not None and T:
                prev = np.empty(T, dtype=np.int64)
                prev[0] = last_key.get(st.alias, -1)
                prev[1:] = start[:-1]
                skip = start == prev
                last_key[st.alias] = int(start[-1])
            row = start if rowmap is None else rowmap[start]
            r = _Recs(st.table, st.index, np.arange(T), start.copy(), ~skip,
                      (~skip).astype(np.int64), z & secondary, row.astype(np.int64),
                      (~skip).astype(np.int64), z, cols, st.alias)
            r.out = np.ones(T, dtype=bool) if st.filt is None else \
                np.asarray(st.filt({**cols, st.alias: r.row}), dtype=bool)
            return self._finish(r)
        passed = None
        if st.exists:
            pid, j = _expand(start, k)
            e = start[pid] + j
            rows_e = e if rowmap is None else rowmap[e]
            m = np.asarray(st.pred(_take(cols, pid), rows_e), dtype=bool)
            first = np.full(T, np.iinfo(np.int64).max)
            hit = np.flatnonzero(m)
            if hit.size:
                u, at = np.unique(pid[hit], return_index=True)
                first[u] = j[hit[at]]
            found = first < k
            kk = np.where(found, first + 1, k)
            past = ~found & (start + k < total)
            passed = found if st.exists > 0 else ~found
        else:
            kk = k
            past = start + k < total
        desc_only = (kk == 0) & ~past
        nrec = kk + past + desc_only
        pid, j = _expand(start, nrec)
        e = np.minimum(start[pid] + j, max(total - 1, 0))
        is_entry = j < kk[pid]
        first = j == 0
        new = first | (e % pl == 0)
        leafreps = 1 + new - desc_only[pid]
        row = np.where(is_entry, e if rowmap is None else rowmap[e], -1)
        look_inline = is_entry & secondary & (not mrr)
        out = np.zeros(pid.size, dtype=bool)
        if st.exists:
            last = np.cumsum(nrec) - 1
            out[last[passed]] = True
            r = _Recs(st.table, st.index, pid, e, first, leafreps, look_inline, row,
                      is_entry.astype(np.int64), out, cols, None)
            return self._finish(r)
        if not (secondary and mrr):
            cand = np.flatnonzero(is_entry)
            if st.filt is None:
                out[cand] = True
            else:
                out[cand] = np.asarray(st.filt({**_take(cols, pid[cand]), st.alias: row[cand]}),
                                       dtype=bool)
            r = _Recs(st.table, st.index, pid, e, first, leafreps, look_inline, row,
                      is_entry.astype(np.int64), out, cols, st.alias)
            return self._finish(r)
        # Disk-Sweep MRR: index records fill the row-id buffer, then sorted fetches.
        # A range scan's buffer is read_rnd_buffer_size of bare row ids
        # (HA_MRR_NO_ASSOCIATION); under BKA the caller passes the join buffer's
        # free tail, whose elements carry an association pointer (``mrr_cap``).
        cap = max(1, self.read_rnd_buffer_size // self._rowid_bytes(st.table)) \
            if mrr_cap is None else max(1, int(mrr_cap))
        cum = np.cumsum(is_entry)
        chunk = (cum - is_entry) // cap
        ent = np.flatnonzero(is_entry)
        if work is not None and ent.size:
            sizes = np.bincount(chunk[ent])
            sizes = sizes[sizes > 0].astype(np.float64)
            work["mrr_passes"] = work.get("mrr_passes", 0) + int(sizes.size)
            work["mrr_rowids"] = work.get("mrr_rowids", 0) + int(ent.size)
            if mrr_cap is not None:         # BKA: each fetched row finds its join-buffer record
                work["bka_rowids"] = work.get("bka_rowids", 0) + int(ent.size)
            work["sort_compares"] = work.get("sort_compares", 0.0) + \
                float((sizes * np.log2(np.maximum(sizes, 2))).sum())
        fr = row[ent]
        fo = np.lexsort((fr, chunk[ent]))
        ent = ent[fo]
        nf = ent.size
        f_out = np.ones(nf, dtype=bool) if st.filt is None else \
            np.asarray(st.filt({**_take(cols, pid[ent]), st.alias: row[ent]}), dtype=bool)
        n_i = pid.size
        key_chunk = np.concatenate([chunk, chunk[ent]])
        kind = np.concatenate([np.zeros(n_i, np.int8), np.ones(nf, np.int8)])
        seq = np.arange(n_i + nf)
        order = np.lexsort((seq, kind, key_chunk))
        fz = np.zeros(nf, dtype=bool)
        cat = lambda a, b: np.concatenate([a, b])[order]  # noqa: E731
        r = _Recs(st.table, st.index, cat(pid, pid[ent]), cat(e, np.full(nf, -1)),
                  cat(first, fz), cat(leafreps, np.zeros(nf, np.int64)), cat(out & False, ~fz),
                  cat(np.full(n_i, -1), row[ent]), cat(np.zeros(n_i, np.int64), np.ones(nf, np.int64)),
                  cat(out, f_out), cols, st.alias)
        return self._finish(r)

    def _rowid_bytes(self, table):
        t = self.db.table(table).table
        return int(sum(t.column(c).bytes for c in t.primary_key)) or 6

    def _finish(self, r: _Recs) -> _Recs:
        h = self.db.index(r.table, r.index).height
        hc = self.db.index(r.table).height
        r.gcount = r.upper * (h - 1) + r.leafreps + r.look * hc
        return r

    def _pages(self, r: _Recs) -> tuple[np.ndarray, np.ndarray]:
        """Dense pages of every get of the records, and rows read per get."""
        db = self.db
        ix, cl = db.index(r.table, r.index), db.index(r.table)
        h, hc = ix.height, cl.height
        n = len(r)
        mat = np.full((n, h + 1 + hc), -1, dtype=np.int64)
        hasleaf = r.leafreps > 0
        if hasleaf.any():
            path = ix.paths(ix.leaf_of(r.e[hasleaf]))
            up = r.upper[hasleaf]
            sub = mat[hasleaf]
            sub[:, :h - 1] = np.where(up[:, None], path[:, :-1], -1)
            sub[:, h - 1] = path[:, -1]
            sub[:, h] = np.where(r.leafreps[hasleaf] == 2, path[:, -1], -1)
            mat[hasleaf] = sub
        if r.look.any():
            mat[r.look, h + 1:] = cl.paths(cl.leaf_of(r.row[r.look]))
        flat = mat.ravel()
        keep = flat >= 0
        pages = db.dense(r.table, flat[keep])
        rows = np.zeros(pages.size, dtype=np.int64)
        end = np.cumsum(r.gcount) - 1
        has = (r.gcount > 0) & (r.nrows > 0)
        rows[end[has]] = r.nrows[has]
        return pages, rows

    # ---- execution -------------------------------------------------------------------
    def _dfs(self, roots: _Recs, steps: list, last_key: dict, want_pages: bool):
        """Nested loops below ``roots``: yields (pages, rows) blocks or (gets, rows) counts."""
        block = 4096
        for lo in range(0, len(roots), block):
            r0 = roots.take(slice(lo, lo + block))
            levels = [r0]
            cols = r0.out_cols()
            parent = np.flatnonzero(r0.out)
            for st in steps:
                if parent.size == 0:
                    break
                r = self._records(st, cols, mrr=False, last_key=last_key)
                r.parent = parent[r.probe]
                levels.append(r)
                cols = r.out_cols()
                parent = np.flatnonzero(r.out)
            if not want_pages:
                yield (int(sum(int(lv.gcount.sum()) for lv in levels)),
                       int(sum(int(lv.nrows.sum()) for lv in levels)))
                continue
            yield self._dfs_order(levels)

    def _dfs_order(self, levels):
        sizes = [None] * len(levels)
        sizes[-1] = np.ones(len(levels[-1]), dtype=np.int64)
        for k in range(len(levels) - 1, 0, -1):
            sizes[k - 1] = 1 + np.bincount(levels[k].parent, weights=sizes[k],
                                           minlength=len(levels[k - 1])).astype(np.int64)
        pre = [np.cumsum(sizes[0]) - sizes[0]]
        for k in range(1, len(levels)):
            par = levels[k].parent
            ex = np.cumsum(sizes[k]) - sizes[k]
            firsts = np.searchsorted(par, par, side="left")
            pre.append(pre[k - 1][par] + 1 + ex - ex[firsts])
        pages, rows, goff, gcnt = [], [], [], []
        base = 0
        for lv in levels:
            p, rw = self._pages(lv)
            pages.append(p)
            rows.append(rw)
            goff.append(base + np.cumsum(lv.gcount) - lv.gcount)
            gcnt.append(lv.gcount)
            base += p.size
        order = np.argsort(np.concatenate(pre), kind="stable")
        goff = np.concatenate(goff)[order]
        gcnt = np.concatenate(gcnt)[order]
        idx = np.repeat(goff - (np.cumsum(gcnt) - gcnt), gcnt) + np.arange(int(gcnt.sum()))
        return np.concatenate(pages)[idx], np.concatenate(rows)[idx]

    def _rec_per_key(self, table: str, index: str) -> int:
        """rec_per_key of a secondary index's key (rows / distinct values), as the
        exact persistent statistics of the document's setup would give it."""
        _, starts = self._sec(table, index)
        distinct = int((np.diff(starts) > 0).sum())
        return max(1, int(round(int(starts[-1]) / max(distinct, 1))))

    @staticmethod
    def batched(st: Step) -> bool:
        """Whether ``batched_key_access=on`` gives ``st`` a BKA join buffer in MySQL 5.6.

        ``setup_join_buffering`` refuses BKA when the MRR implementation chosen is
        the default one, and ``DsMrr_impl::choose_mrr_impl`` picks the default for
        lookups on InnoDB's clustered primary key and for index-only (covering)
        access: only non-covering secondary-index ``ref`` steps are batched.
        Dependent subqueries (``st.bka`` False) are never batched.
        """
        return bool(st.bka and st.index is not None and not st.covering)

    def _run(self, plan: dict, variant: str, want_pages: bool, work: dict | None = None):
        """Yields (pages, rows) blocks in execution order, or (gets, rows) counts.

        ``work`` (a dict, optional) accumulates the executor work that is not a page
        get: ``buffer_records`` written to BKA join buffers, ``mrr_passes``,
        ``mrr_rowids`` and ``sort_compares`` (sum of m log2 m over DS-MRR passes).
        """
        steps = plan["steps"](self)
        drive = plan["drive"](self)
        bka = variant == "bka"
        n_stages = 0
        if bka:
            for i, st in enumerate(steps):
                if self.batched(st):
                    n_stages = i + 1
        stages, tail = steps[:n_stages], steps[n_stages:]
        is_batched = [self.batched(st) for st in stages]
        J = self.join_buffer_size
        # JOIN_CACHE_BKA: every record reserves aux_buffer_incr() = rec_per_key x
        # (ref_length + sizeof(void*)) bytes of MRR buffer (mrr_length_per_rec)
        elem = [self._rowid_bytes(st.table) + 8 for st in stages]
        incr = [self._rec_per_key(st.table, st.index) * e if b else 0
                for st, e, b in zip(stages, elem, is_batched)]
        cap = [max(1, J // (st.buf + a)) for st, a in zip(stages, incr)]
        pending = [[] for _ in stages]
        npend = [0] * len(stages)
        last_key: dict = {}

        def emit(r: _Recs):
            if len(r) == 0:
                return
            if want_pages:
                yield self._pages(r)
            else:
                yield int(r.gcount.sum()), int(r.nrows.sum())

        def forward(r: _Recs, s: int):
            """Emit r's gets and pass its rows to stage s, flushing when its buffer fills."""
            if s == len(stages):
                yield from self._dfs(r, tail, last_key, want_pages)
                return
            if not is_batched[s]:
                # a nested-loop step between batched ones (Q11's covering supplier
                # lookup): its probes follow r's gets; exact when r passes one row
                yield from emit(r)
                if r.out.any():
                    nxt = self._records(stages[s], r.out_cols(), mrr=False, last_key=last_key)
                    yield from forward(nxt, s + 1)
                return
            out = np.flatnonzero(r.out)
            cols = r.out_cols()
            pos = opos = 0
            b = cap[s] - npend[s]
            while b <= out.size:
                end = int(out[b - 1]) + 1
                yield from emit(r.take(slice(pos, end)))
                yield from feed(s, _take(cols, slice(opos, b)))
                pos, opos = end, b
                b += cap[s]
            yield from emit(r.take(slice(pos, len(r))))
            if opos < out.size:
                yield from feed(s, _take(cols, slice(opos, out.size)))

        def feed(s, cols):
            pending[s].append(cols)
            npend[s] += _n(cols)
            if npend[s] >= cap[s]:
                yield from flush(s)

        def flush(s):
            if npend[s] == 0:
                return
            cols = _cat(pending[s])
            n = npend[s]
            pending[s].clear()
            npend[s] = 0
            st = stages[s]
            if work is not None:
                work["buffer_records"] = work.get("buffer_records", 0) + n
            # keys are probed in join-buffer order (5.6's DS-MRR sorts row ids only);
            # the row-id buffer is the rest of the join buffer
            mcap = max(1, (J - n * st.buf) // elem[s])
            r = self._records(st, cols, mrr=True, last_key=None, mrr_cap=mcap, work=work)
            yield from forward(r, s + 1)

        d = self._records(drive, {"_": np.zeros(1, dtype=np.int64)}, mrr=variant != "plain",
                          last_key=None, work=work)
        yield from forward(d, 0)
        for s in range(len(stages)):
            if is_batched[s]:
                yield from flush(s)

    # ---- public ----------------------------------------------------------------------
    def _check(self, q, variant):
        if q not in PLANS:
            raise ValueError(f"q = {q!r} is not a modelled DBT-3 query; allowed: "
                             f"{', '.join(map(str, QUERIES))}")
        if variant not in VARIANTS:
            raise ValueError(f"variant = {variant!r} is unknown; allowed: {', '.join(VARIANTS)}")

    def work(self, q: int, variant: str = "plain") -> dict:
        """Executor work of query ``q`` that is not a page get (see :meth:`_run`):
        ``rows``, ``gets``, ``buffer_records``, ``mrr_passes``, ``mrr_rowids``,
        ``bka_rowids`` (the DS-MRR row ids of BKA steps), ``sort_compares``; counted
        from the plan without building pages."""
        self._check(q, variant)
        w = dict(rows=0, gets=0, buffer_records=0, mrr_passes=0, mrr_rowids=0, bka_rowids=0,
                 sort_compares=0.0)
        for part in PLANS[q]["parts"]:
            if part == "li_covering_scan":
                op = self._covering_scan(CpuCost())
                w["rows"] += op.rows
                w["gets"] += op.gets
                continue
            for g, r in self._run(part, variant, want_pages=False, work=w):
                w["gets"] += g
                w["rows"] += r
        return w

    def expected(self, q: int, variant: str = "plain") -> tuple[int, int]:
        """(rows read, page gets) of query ``q`` under ``variant``, counted from the plan."""
        self._check(q, variant)
        rows = gets = 0
        for part in PLANS[q]["parts"]:
            if part == "li_covering_scan":
                op = self._covering_scan(CpuCost())
                rows, gets = rows + op.rows, gets + op.gets
                continue
            for g, r in self._run(part, variant, want_pages=False):
                gets += g
                rows += r
        return rows, gets

    def _covering_scan(self, cpu):
        ix = self.db.index("lineitem", "i_l_orderkey_quantity")
        return range_scan(self.db, "lineitem", 0, ix.geometry.rows, index="i_l_orderkey_quantity",
                          cpu=cpu)

    def query(self, q: int, variant: str = "plain", *, cpu: CpuCost = CpuCost()) -> Operator:
        """The access pattern of DBT-3 query ``q`` under ``variant`` as an Operator.

        ``q`` in :data:`QUERIES`; ``variant`` ``'plain'``, ``'mrr'`` or ``'bka'``
        (module docstring).  ``.rows`` and ``.gets`` come from :meth:`expected`.
        The query is one statement (its subqueries, correlated or not, are part
        of it): only its last event carries :data:`bufsim.FLAG_STMT_END`.
        """
        self._check(q, variant)
        rows, gets = self.expected(q, variant)

        def chunks(stream):
            for part in PLANS[q]["parts"]:
                if part == "li_covering_scan":
                    yield from self._covering_scan(cpu).factory(stream)
                    continue
                for pages, rws in self._run(part, variant, want_pages=True):
                    for lo in range(0, pages.size, 1 << 20):
                        yield _emit(pages[lo:lo + (1 << 20)], rws[lo:lo + (1 << 20)], cpu,
                                    stream, 0)

        return statement(Operator(f"DBT-3 Q{q} {variant}", chunks, rows, gets,
                                  self.tablespaces))

    def distinct_pages(self, q: int, variant: str = "plain") -> int:
        """Distinct pages the query touches (from its trace)."""
        seen = np.zeros(self.tablespaces.n_pages, dtype=bool)
        for c in self.query(q, variant).chunks():
            seen[c.page] = True
        return int(seen.sum())

    def plan_table(self):
        """:data:`PLANS` as a DataFrame: query, step, table, access, BKA-batched."""
        import pandas as pd
        rows = []
        for q in QUERIES:
            for p, part in enumerate(PLANS[q]["parts"]):
                if part == "li_covering_scan":
                    rows.append(dict(query=q, part=p, step=0, alias="l", table="lineitem",
                                     access="index (covering full scan i_l_orderkey_quantity)",
                                     bka=False))
                    continue
                for i, st in enumerate([part["drive"](self)] + part["steps"](self)):
                    rows.append(dict(query=q, part=p, step=i, alias=st.alias, table=st.table,
                                     access=st.access, bka=bool(i and self.batched(st))))
        return pd.DataFrame(rows)


def dbt3_database(sf: float = 1.0, seed: int = 0, **kw) -> Dbt3:
    """A :class:`Dbt3` at scale factor ``sf``."""
    return Dbt3(sf, seed=seed, **kw)


# --------------------------------------------------------------------------------------
# the plans
# --------------------------------------------------------------------------------------
def _scan(alias, table, filt=None, access=None):
    """Driving full scan of a clustered index."""
    return lambda d: Step(alias, table, None, lambda c: (0, d.db.index(table).geometry.rows),
                          filt=filt and (lambda c: filt(d.data, c[alias])),
                          access=access or "ALL (full clustered scan)")


def _drive_range(alias, table, index, lo, hi, filt=None):
    def mk(d):
        s, k = d._range(table, index, lo, hi)
        return Step(alias, table, index, lambda c: (s, k),
                    filt=filt and (lambda c: filt(d.data, c[alias])),
                    access=f"range {index} (+ clustered lookups; DS-MRR in mrr/bka)")
    return mk


def _eq(alias, table, key, filt=None, bka=True, buf=32):
    """eq_ref on the primary key: key(data, cols) -> row."""
    def mk(d):
        return Step(alias, table, None, lambda c: (key(d.data, c), 1), unique=True,
                    filt=filt and (lambda c: filt(d.data, c)), bka=bka, buf=buf,
                    access="eq_ref PRIMARY")
    return mk


def _refsec(alias, table, index, key, filt=None, bka=True, buf=32, covering=False):
    def mk(d):
        f = d._ref(table, index)
        return Step(alias, table, index, lambda c: f(key(d.data, c)),
                    filt=filt and (lambda c: filt(d.data, c)), bka=bka, buf=buf,
                    covering=covering,
                    access=f"ref {index} " + ("(covering: Using index)" if covering
                                              else "(+ clustered lookups)"))
    return mk


def _li_by_order(alias, okey, filt=None, bka=True, exists=0, pred=None, buf=32):
    """lineitem rows of an order: ref on the PRIMARY prefix l_orderkey."""
    def mk(d):
        ls = d.data.o_lstart

        def probe(c):
            o = okey(c)
            return ls[o], ls[o + 1] - ls[o]
        return Step(alias, "lineitem", None, probe, filt=filt and (lambda c: filt(d.data, c)),
                    exists=exists, pred=pred and (lambda c, rows: pred(d.data, c, rows)),
                    bka=bka and not exists, buf=buf,
                    access=("EXISTS " if exists > 0 else "NOT EXISTS " if exists < 0 else "")
                    + "ref PRIMARY (l_orderkey prefix)")
    return mk


def _plan(drive, *steps):
    return dict(drive=drive, steps=lambda d: [s(d) for s in steps])


_Q19 = ((_brand(12), _container(0, (0, 1, 5, 4)), 1, 11, 5),
        (_brand(23), _container(2, (2, 1, 4, 5)), 10, 20, 10),
        (_brand(34), _container(1, (0, 1, 5, 4)), 20, 30, 15))


def _q19_branch(D, p):
    br = np.full(p.size, -1)
    for i, (b, cont, _, _, size) in enumerate(_Q19):
        m = (D.p_brand[p] == b) & np.isin(D.p_container[p], cont) & (D.p_size[p] >= 1) \
            & (D.p_size[p] <= size)
        br = np.where(m & (br < 0), i, br)
    return br


def _q19_line(D, c):
    br = _q19_branch(D, c["p"])
    lo = np.array([x[2] for x in _Q19])[np.maximum(br, 0)]
    hi = np.array([x[3] for x in _Q19])[np.maximum(br, 0)]
    q = D.l_qty[c["l"]]
    return (br >= 0) & (q >= lo) & (q <= hi) & (D.l_mode[c["l"]] <= 1) \
        & (D.l_instruct[c["l"]] == DELIVER_IN_PERSON)


def _q18_orders(D):
    qsum = np.add.reduceat(D.l_qty.astype(np.int64), D.o_lstart[:-1])
    return qsum > 300


_Q1995_03_15, _Q1993_07_01, _Q1993_10_01 = day("1995-03-15"), day("1993-07-01"), day("1993-10-01")

#: Per query: ``parts`` run one after another; each a driving access and join steps in
#: join order (see :meth:`Dbt3.plan_table` for the access type of every table).
PLANS = {
    # Q2 minimum cost supplier: region(EUROPE) -> nation ref i_n_regionkey -> supplier ref
    # i_s_nationkey -> partsupp ref i_ps_suppkey -> part eq_ref (size 15, %BRASS); the
    # dependent subquery min(ps_supplycost) per result row: partsupp ref PRIMARY prefix,
    # supplier, nation, region eq_ref (nested loops).
    2: dict(parts=[_plan(
        _scan("r", "region", lambda D, r: r == EUROPE),
        _refsec("n", "nation", "i_n_regionkey", lambda D, c: c["r"], buf=16),
        _refsec("s", "supplier", "i_s_nationkey", lambda D, c: c["n"], buf=24),
        _refsec("ps", "partsupp", "i_ps_suppkey", lambda D, c: c["s"], buf=48),
        _eq("p", "part", lambda D, c: c["ps"] // 4,
            lambda D, c: (D.p_size[c["p"]] == 15) & (D.p_type[c["p"]] % 5 == BRASS), buf=64),
        lambda d: Step("ps2", "partsupp", None, lambda c: (4 * c["p"], 4), bka=False,
                       access="dependent subquery: ref PRIMARY (ps_partkey prefix)"),
        _eq("s2", "supplier", lambda D, c: D.ps_supp[c["ps2"]], bka=False),
        _eq("n2", "nation", lambda D, c: D.s_nation[c["s2"]], bka=False),
        _eq("r2", "region", lambda D, c: D.n_region[c["n2"]], bka=False))]),
    # Q3 shipping priority: orders range i_o_orderdate (< 1995-03-15) -> customer eq_ref
    # (BUILDING) -> lineitem ref PRIMARY (l_shipdate > 1995-03-15)
    3: dict(parts=[_plan(
        _drive_range("o", "orders", "i_o_orderdate", 0, _Q1995_03_15),
        _eq("c", "customer", lambda D, c: D.o_cust[c["o"]],
            lambda D, c: D.c_segment[c["c"]] == 1, buf=24),
        _li_by_order("l", lambda c: c["o"], lambda D, c: D.l_ship[c["l"]] > _Q1995_03_15,
                     buf=32))]),
    # Q4 order priority checking: orders range i_o_orderdate [1993-07-01, +3 months) ->
    # EXISTS lineitem ref PRIMARY prefix, first line with l_commitdate < l_receiptdate
    4: dict(parts=[_plan(
        _drive_range("o", "orders", "i_o_orderdate", _Q1993_07_01, _Q1993_10_01),
        _li_by_order(None, lambda c: c["o"], exists=1,
                     pred=lambda D, c, rows: D.l_commit[rows] < D.l_receipt[rows]))]),
    # Q5 local supplier volume: region(ASIA) -> nation ref -> customer ref i_c_nationkey ->
    # orders ref i_o_custkey (1994) -> lineitem ref PRIMARY -> supplier eq_ref (same nation)
    5: dict(parts=[_plan(
        _scan("r", "region", lambda D, r: r == ASIA),
        _refsec("n", "nation", "i_n_regionkey", lambda D, c: c["r"], buf=16),
        _refsec("c", "customer", "i_c_nationkey", lambda D, c: c["n"], buf=24),
        _refsec("o", "orders", "i_o_custkey", lambda D, c: c["c"],
                lambda D, c: (D.o_date[c["o"]] >= day("1994-01-01"))
                & (D.o_date[c["o"]] < day("1995-01-01")), buf=32),
        _li_by_order("l", lambda c: c["o"], buf=40),
        _eq("s", "supplier", lambda D, c: D.l_supp[c["l"]],
            lambda D, c: D.s_nation[c["s"]] == D.c_nation[c["c"]], buf=56))]),
    # Q8 national market share: part(ECONOMY ANODIZED STEEL) -> lineitem ref i_l_partkey ->
    # orders eq_ref (1995-1996) -> customer eq_ref -> nation n1 -> region (AMERICA) ->
    # supplier eq_ref -> nation n2
    8: dict(parts=[_plan(
        _scan("p", "part", lambda D, p: D.p_type[p] == ECONOMY * 25 + ANODIZED * 5 + STEEL),
        _refsec("l", "lineitem", "i_l_partkey", lambda D, c: c["p"], buf=16),
        _eq("o", "orders", lambda D, c: D.l_order[c["l"]],
            lambda D, c: (D.o_date[c["o"]] >= day("1995-01-01"))
            & (D.o_date[c["o"]] <= day("1996-12-31")), buf=40),
        _eq("c", "customer", lambda D, c: D.o_cust[c["o"]], buf=48),
        _eq("n1", "nation", lambda D, c: D.c_nation[c["c"]], buf=56),
        _eq("r", "region", lambda D, c: D.n_region[c["n1"]],
            lambda D, c: c["r"] == AMERICA, buf=64),
        _eq("s", "supplier", lambda D, c: D.l_supp[c["l"]], buf=64),
        _eq("n2", "nation", lambda D, c: D.s_nation[c["s"]], buf=72))]),
    # Q9 product type profit: part(%green%) -> lineitem ref i_l_partkey -> partsupp eq_ref
    # (ps_partkey, ps_suppkey) -> supplier eq_ref -> orders eq_ref -> nation eq_ref
    9: dict(parts=[_plan(
        _scan("p", "part", lambda D, p: D.p_green[p]),
        _refsec("l", "lineitem", "i_l_partkey", lambda D, c: c["p"], buf=16),
        _eq("ps", "partsupp", lambda D, c: D.l_ps[c["l"]], buf=48),
        _eq("s", "supplier", lambda D, c: D.l_supp[c["l"]], buf=56),
        _eq("o", "orders", lambda D, c: D.l_order[c["l"]], buf=64),
        _eq("n", "nation", lambda D, c: D.s_nation[c["s"]], buf=72))]),
    # Q10 returned item reporting: orders range i_o_orderdate [1993-10-01, +3 months) ->
    # customer eq_ref -> lineitem ref PRIMARY (l_returnflag = 'R') -> nation eq_ref
    10: dict(parts=[_plan(
        _drive_range("o", "orders", "i_o_orderdate", _Q1993_10_01, day("1994-01-01")),
        _eq("c", "customer", lambda D, c: D.o_cust[c["o"]], buf=24),
        _li_by_order("l", lambda c: c["o"], lambda D, c: D.l_flag[c["l"]] == 0, buf=200),
        _eq("n", "nation", lambda D, c: D.c_nation[c["c"]], buf=220))]),
    # Q11 important stock: nation(GERMANY) -> supplier ref i_s_nationkey, covering
    # ("Using index": only s_suppkey is needed, and it is the primary key the entries
    # carry; so no BKA there, 5.6 refuses BKA with index-only MRR) -> partsupp ref
    # i_ps_suppkey (+ clustered lookups: ps_supplycost, ps_availqty); run twice (the
    # HAVING subquery is the same join, uncorrelated, executed once)
    11: dict(parts=[_plan(
        _scan("n", "nation", lambda D, n: n == GERMANY),
        _refsec("s", "supplier", "i_s_nationkey", lambda D, c: c["n"], buf=16,
                covering=True),
        _refsec("ps", "partsupp", "i_ps_suppkey", lambda D, c: c["s"], buf=16))] * 2),
    # Q13 customer distribution: customer (full scan) LEFT JOIN orders ref i_o_custkey
    # (o_comment not like '%special%requests%')
    13: dict(parts=[_plan(
        _scan("c", "customer"),
        _refsec("o", "orders", "i_o_custkey", lambda D, c: c["c"],
                lambda D, c: ~D.o_special[c["o"]], buf=16))]),
    # Q14 promotion effect: lineitem range i_l_shipdate [1995-09-01, +1 month) -> part eq_ref
    14: dict(parts=[_plan(
        _drive_range("l", "lineitem", "i_l_shipdate", day("1995-09-01"), day("1995-10-01")),
        _eq("p", "part", lambda D, c: D.l_part[c["l"]], buf=32))]),
    # Q15 top supplier: the view revenue0 (lineitem range i_l_shipdate [1996-01-01, +3
    # months), grouped) materialized twice (for max() and for the join), then supplier
    # scanned and joined to the temporary table
    15: dict(parts=[_plan(_drive_range("l", "lineitem", "i_l_shipdate", day("1996-01-01"),
                                       day("1996-04-01")))] * 2
             + [_plan(_scan("s", "supplier"))]),
    # Q17 small-quantity-order revenue: part(Brand#23, MED BOX) -> lineitem ref i_l_partkey
    # -> per joined row the dependent subquery avg(l_quantity) of the part: lineitem ref
    # i_l_partkey (+ clustered lookups), nested loops
    17: dict(parts=[_plan(
        _scan("p", "part", lambda D, p: (D.p_brand[p] == _brand(23))
              & (D.p_container[p] == 2 * 8 + 1)),
        _refsec("l", "lineitem", "i_l_partkey", lambda D, c: c["p"], buf=16),
        _refsec("l2", "lineitem", "i_l_partkey", lambda D, c: c["p"], lambda D, c: c["l2"] < 0,
                bka=False))]),
    # Q18 large volume customer (5.6 subquery materialization): the subquery (group by
    # l_orderkey having sum(l_quantity) > 300) by a covering scan of
    # i_l_orderkey_quantity; then customer (full scan) -> orders ref i_o_custkey ->
    # <subquery2> eq_ref (in memory) -> lineitem ref PRIMARY
    18: dict(parts=["li_covering_scan", _plan(
        _scan("c", "customer"),
        _refsec("o", "orders", "i_o_custkey", lambda D, c: c["c"],
                lambda D, c: _q18_orders(D)[c["o"]], buf=24),
        _li_by_order("l", lambda c: c["o"], buf=40))]),
    # Q19 discounted revenue: part (three brand/container/size branches) -> lineitem ref
    # i_l_partkey (ship mode AIR / AIR REG, DELIVER IN PERSON, quantity per branch)
    19: dict(parts=[_plan(
        _scan("p", "part", lambda D, p: _q19_branch(D, p) >= 0),
        _refsec("l", "lineitem", "i_l_partkey", lambda D, c: c["p"], _q19_line, buf=24))]),
    # Q21 suppliers who kept orders waiting: nation(SAUDI ARABIA) -> supplier ref
    # i_s_nationkey -> lineitem l1 ref i_l_suppkey (receipt > commit) -> orders eq_ref
    # (status F) -> EXISTS l2 (other supplier) -> NOT EXISTS l3 (other supplier, late),
    # both ref PRIMARY prefix, nested loops
    21: dict(parts=[_plan(
        _scan("n", "nation", lambda D, n: n == SAUDI_ARABIA),
        _refsec("s", "supplier", "i_s_nationkey", lambda D, c: c["n"], buf=40),
        _refsec("l1", "lineitem", "i_l_suppkey", lambda D, c: c["s"],
                lambda D, c: D.l_receipt[c["l1"]] > D.l_commit[c["l1"]], buf=48),
        _eq("o", "orders", lambda D, c: D.l_order[c["l1"]],
            lambda D, c: D.o_status[c["o"]] == 0, buf=56),
        _li_by_order(None, lambda c: c["o"], exists=1,
                     pred=lambda D, c, rows: D.l_supp[rows] != D.l_supp[c["l1"]]),
        _li_by_order(None, lambda c: c["o"], exists=-1,
                     pred=lambda D, c, rows: (D.l_supp[rows] != D.l_supp[c["l1"]])
                     & (D.l_receipt[rows] > D.l_commit[rows])))]),
}
