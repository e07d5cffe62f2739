"""A small DBT-3 (TPC-H) database on a live server: seeded rows, DBT-3's tables and indexes.

:func:`generate` draws the eight TPC-H tables at a small scale factor from a seed
(numpy, deterministic): the columns that decide which rows a query reads come from
:class:`bufsim.workloads.dbt3_schema.Dbt3Data` (the distributions notebook 05's DBT-3
model uses: order dates, 1-7 lines per order, ship/commit/receipt dates, return
flags, the four suppliers of a part, sizes, types, brands, containers, nations,
segments), the rest (prices, comments, names, phones) are drawn here with TPC-H's
value ranges.  :func:`load` creates the tables with :func:`~bufsim.workloads.dbt3_schema.dbt3_tables`'
columns and primary keys, loads them with ``LOAD DATA LOCAL INFILE`` and then adds
DBT-3's secondary indexes (as DBT-3's MySQL scripts do: InnoDB builds each by a merge
sort), runs ``ANALYZE TABLE`` and waits for purge.

Simplifications (TPC-H 4.2.3): keys are dense (``o_orderkey`` 1..n rather than 8 of
every 32), text columns are random letters of TPC-H's lengths (not its grammar), a
part's name is five of 20 colour words ('green' with TPC-H's odds, 5/92).
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ..workloads.dbt3_schema import CURRENT_DATE, Dbt3Data, dbt3_tables, table_rows
from .workload import load_tables, quiesce

__all__ = ["SCHEMA", "generate", "load", "ddl", "index_ddl", "TABLES", "MAX_SF"]

SCHEMA = "bufsim_dbt3"
#: table names in load order
TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")
#: the largest scale factor :func:`generate` accepts (lineitem about 6M x SF rows)
MAX_SF = 0.2

NATIONS = ("ALGERIA", "ARGENTINA", "BRAZIL", "CANADA", "EGYPT", "ETHIOPIA", "FRANCE", "GERMANY",
           "INDIA", "INDONESIA", "IRAN", "IRAQ", "JAPAN", "JORDAN", "KENYA", "MOROCCO",
           "MOZAMBIQUE", "PERU", "CHINA", "ROMANIA", "SAUDI ARABIA", "VIETNAM", "RUSSIA",
           "UNITED KINGDOM", "UNITED STATES")
REGIONS = ("AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST")
TYPE_S1 = ("STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO")
TYPE_S2 = ("ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED")
TYPE_S3 = ("TIN", "NICKEL", "BRASS", "STEEL", "COPPER")
CONTAINER_SIZE = ("SM", "LG", "MED", "JUMBO", "WRAP")
CONTAINER_KIND = ("CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM")
SEGMENTS = ("AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD")
PRIORITIES = ("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW")
INSTRUCTS = ("DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN")
SHIPMODES = ("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB")   # Dbt3Data's codes
COLOURS = ("almond", "antique", "aquamarine", "azure", "beige", "bisque", "black", "blanched",
           "blue", "blush", "brown", "burlywood", "burnished", "chartreuse", "chiffon",
           "chocolate", "coral", "cornflower", "cornsilk", "cream")
_EPOCH = np.datetime64("1992-01-01")


def _text(rng, n: int, lo: int, hi: int) -> np.ndarray:
    """``n`` strings of random lower-case letters and spaces, lengths uniform in [lo, hi]."""
    lens = rng.integers(lo, hi + 1, n)
    pool = rng.integers(0, 27, int(lens.sum()), dtype=np.uint8)
    chars = np.where(pool == 26, ord(" "), pool + ord("a")).astype(np.uint8).tobytes().decode()
    ends = np.cumsum(lens)
    return np.array([chars[e - k:e] for e, k in zip(ends, lens)], dtype=object)


def _dates(days) -> np.ndarray:
    return (_EPOCH + np.asarray(days, dtype="timedelta64[D]")).astype(str)


def _money(rng, n, lo, hi) -> np.ndarray:
    """Decimals with 2 places, uniform in [lo, hi], as strings."""
    cents = rng.integers(int(round(lo * 100)), int(round(hi * 100)) + 1, n)
    return _cents(cents)


def _cents(cents) -> np.ndarray:
    cents = np.asarray(cents, dtype=np.int64)
    sign = np.where(cents < 0, "-", "")
    a = np.abs(cents)
    return np.char.add(np.char.add(sign, (a // 100).astype(str)),
                       np.char.add(".", np.char.zfill((a % 100).astype(str), 2)))


def generate(sf: float = 0.01, seed: int = 0) -> dict:
    """The eight tables' rows as DataFrames (columns in table order), drawn from ``seed``.

    ``sf``: scale factor, 0 < sf <= :data:`MAX_SF` (0.01: lineitem about 60,000 rows).
    """
    if not isinstance(sf, (int, float)) or isinstance(sf, bool) or not 0 < sf <= MAX_SF:
        raise ValueError(f"sf={sf!r} is out of range; allowed: 0 < sf <= {MAX_SF}")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed={seed!r} is out of range; allowed: an integer >= 0")
    d = Dbt3Data.generate(float(sf), int(seed))
    rng = np.random.default_rng([int(seed), 3])        # the columns Dbt3Data does not draw
    n = table_rows(float(sf))
    npart, ns, nc, no = n["part"], n["supplier"], n["customer"], d.o_date.size
    nl = d.n_lineitem
    out = {}
    out["region"] = pd.DataFrame(dict(r_regionkey=np.arange(5), r_name=REGIONS,
                                      r_comment=_text(rng, 5, 31, 115)))
    out["nation"] = pd.DataFrame(dict(n_nationkey=np.arange(25), n_name=NATIONS,
                                      n_regionkey=d.n_region, n_comment=_text(rng, 25, 31, 114)))
    sk = np.arange(1, ns + 1)
    out["supplier"] = pd.DataFrame(dict(
        s_suppkey=sk, s_name=[f"Supplier#{k:09d}" for k in sk], s_address=_text(rng, ns, 10, 40),
        s_nationkey=d.s_nation, s_phone=_phones(rng, d.s_nation), s_acctbal=_money(rng, ns, -999.99, 9999.99),
        s_comment=_text(rng, ns, 25, 100)))
    ck = np.arange(1, nc + 1)
    out["customer"] = pd.DataFrame(dict(
        c_custkey=ck, c_name=[f"Customer#{k:09d}" for k in ck], c_address=_text(rng, nc, 10, 40),
        c_nationkey=d.c_nation, c_phone=_phones(rng, d.c_nation),
        c_acctbal=_money(rng, nc, -999.99, 9999.99), c_mktsegment=np.array(SEGMENTS)[d.c_segment],
        c_comment=_text(rng, nc, 29, 116)))
    pk = np.arange(1, npart + 1)
    words = rng.integers(0, len(COLOURS), (npart, 5))
    names = [" ".join(COLOURS[w] for w in row) for row in words]
    names = np.array(names, dtype=object)
    green = np.flatnonzero(d.p_green)
    names[green] = [f"{COLOURS[w[0]]} green {' '.join(COLOURS[x] for x in w[2:])}"
                    for w in words[green]]
    retail = 90000 + ((pk // 10) % 20001) + 100 * (pk % 1000)          # cents, TPC-H 4.2.3
    brand = d.p_brand.astype(int)
    ptype = d.p_type.astype(int)
    cont = d.p_container.astype(int)
    out["part"] = pd.DataFrame(dict(
        p_partkey=pk, p_name=names, p_mfgr=[f"Manufacturer#{b // 5 + 1}" for b in brand],
        p_brand=[f"Brand#{b // 5 + 1}{b % 5 + 1}" for b in brand],
        p_type=[f"{TYPE_S1[t // 25]} {TYPE_S2[(t // 5) % 5]} {TYPE_S3[t % 5]}" for t in ptype],
        p_size=d.p_size.astype(int),
        p_container=[f"{CONTAINER_SIZE[c // 8]} {CONTAINER_KIND[c % 8]}" for c in cont],
        p_retailprice=_cents(retail), p_comment=_text(rng, npart, 5, 22)))
    nps = d.ps_supp.size
    out["partsupp"] = pd.DataFrame(dict(
        ps_partkey=np.repeat(pk, 4), ps_suppkey=d.ps_supp.astype(int) + 1,
        ps_availqty=rng.integers(1, 10000, nps), ps_supplycost=_money(rng, nps, 1.0, 1000.0),
        ps_comment=_text(rng, nps, 49, 198)))
    qty = d.l_qty.astype(np.int64)
    ext = qty * retail[d.l_part]                                          # cents
    disc = rng.integers(0, 11, nl)                                       # hundredths
    tax = rng.integers(0, 9, nl)
    charge = ext * (100 - disc) * (100 + tax) // 10000
    total = np.add.reduceat(charge, d.o_lstart[:-1])
    status = np.array(["F", "O", "P"])[d.o_status]
    ocomment = _text(rng, no, 19, 78)
    sp = np.flatnonzero(d.o_special)
    ocomment[sp] = [c[:5] + " special " + c[5:20] + " requests" for c in ocomment[sp]]
    out["orders"] = pd.DataFrame(dict(
        o_orderkey=np.arange(1, no + 1), o_custkey=d.o_cust.astype(int) + 1, o_orderstatus=status,
        o_totalprice=_cents(total), o_orderdate=_dates(d.o_date),
        o_orderpriority=np.array(PRIORITIES)[rng.integers(0, 5, no)],
        o_clerk=[f"Clerk#{k:09d}" for k in rng.integers(1, max(2, int(1000 * sf)) + 1, no)],
        o_shippriority=np.zeros(no, dtype=int), o_comment=ocomment))
    lnum = np.arange(nl) - np.repeat(d.o_lstart[:-1], np.diff(d.o_lstart)) + 1
    out["lineitem"] = pd.DataFrame(dict(
        l_orderkey=d.l_order.astype(np.int64) + 1, l_partkey=d.l_part.astype(int) + 1,
        l_suppkey=d.l_supp.astype(int) + 1, l_linenumber=lnum, l_quantity=_cents(qty * 100),
        l_extendedprice=_cents(ext), l_discount=_cents(disc), l_tax=_cents(tax),
        l_returnflag=np.array(["R", "A", "N"])[d.l_flag],
        l_linestatus=np.where(d.l_ship > CURRENT_DATE, "O", "F"),
        l_shipdate=_dates(d.l_ship), l_commitdate=_dates(d.l_commit),
        l_receiptdate=_dates(d.l_receipt), l_shipinstruct=np.array(INSTRUCTS)[d.l_instruct],
        l_shipmode=np.array(SHIPMODES)[d.l_mode], l_comment=_text(rng, nl, 10, 43)))
    return out


def _phones(rng, nation) -> list:
    a = rng.integers(100, 1000, (len(nation), 3))
    b = rng.integers(1000, 10000, len(nation))
    return [f"{n + 10}-{x}-{y}-{z}" for n, (x, y), z in zip(nation, a[:, :2], b)] if len(nation) else []


def _table_defs(sf: float):
    return {t.name: t for t in dbt3_tables(sf)}


def ddl(sf: float = 0.01) -> dict:
    """``CREATE TABLE`` per table: TPC-H columns (latin1, NOT NULL) and the primary key."""
    out = {}
    for name, t in _table_defs(sf).items():
        cols = ",\n  ".join(f"`{c.name}` {c.type} NOT NULL" for c in t.columns)
        pk = ", ".join(f"`{c}`" for c in t.primary_key)
        out[name] = (f"CREATE TABLE `{name}` (\n  {cols},\n  PRIMARY KEY ({pk})\n) "
                     "ENGINE=InnoDB DEFAULT CHARSET=latin1")
    return out


def index_ddl(sf: float = 0.01) -> dict:
    """``ALTER TABLE ... ADD INDEX`` per table with DBT-3's secondary indexes (None: none)."""
    out = {}
    for name, t in _table_defs(sf).items():
        if not t.indexes:
            continue
        adds = ", ".join(f"ADD INDEX `{ix.name}` ({', '.join(f'`{c}`' for c in ix.columns)})"
                         for ix in t.indexes)
        out[name] = f"ALTER TABLE `{name}` {adds}"
    return out


def load(conn, data: dict, schema: str = SCHEMA, sf: float = 0.01) -> float:
    """Create ``schema`` and load ``data`` (:func:`generate`'s tables) into it; returns the
    seconds it took.

    As DBT-3's MySQL scripts: the tables with their primary keys, ``LOAD DATA LOCAL
    INFILE`` (rows in primary-key order), then the secondary indexes, then ``ANALYZE
    TABLE`` over every page (the same data gives the same plans; and no background
    statistics run reads pages during a measured run), then a wait for purge.
    """
    missing = [t for t in TABLES if t not in data]
    if missing:
        raise ValueError(f"data lacks the table(s) {missing}; allowed: {generate.__name__}'s tables "
                         f"{', '.join(TABLES)}")
    t0 = time.monotonic()
    creates, indexes = ddl(sf), index_ddl(sf)
    load_tables(conn, schema, [(name, creates[name], data[name]) for name in TABLES])
    for name in TABLES:
        if name in indexes:
            conn.execute(indexes[name], doing=f"adding the indexes of {schema}.{name}")
    # statistics from every page, not from innodb_stats_persistent_sample_pages (20) random
    # dives: the same data gives the same plans (sampled, DBT-3 Q12 at SF 0.01 was planned
    # as a scan of lineitem after one load and as a range of i_l_receiptdate after another)
    old = conn.query("SELECT @@innodb_stats_persistent_sample_pages",
                     doing="reading innodb_stats_persistent_sample_pages")[0][0]
    conn.execute("SET GLOBAL innodb_stats_persistent_sample_pages = 1000000",
                 doing="sampling every page for the statistics")
    try:
        for name in TABLES:
            conn.query(f"ANALYZE TABLE `{name}`", doing=f"ANALYZE TABLE {schema}.{name}")
    finally:
        conn.execute(f"SET GLOBAL innodb_stats_persistent_sample_pages = {int(old)}",
                     doing="restoring innodb_stats_persistent_sample_pages")
    quiesce(conn)
    return time.monotonic() - t0
