"""DBT-3 query plans: the join order and access type of every table, for 15 queries.

Part of the DBT-3 model of :mod:`bufsim.workloads.dbt3`, which re-exports
:data:`PLANS`, :data:`QUERIES` and :class:`Step`.  :data:`PLANS` holds, for each
query of :data:`QUERIES`, the parts run one after another; a part is a driving
access and join steps in join order.  Each access is a factory that takes the
:class:`~bufsim.workloads.dbt3.Dbt3` being run (its
:class:`~bufsim.workloads.dbt3_schema.Dbt3Data` and its secondary-index maps)
and returns a :class:`Step`:

* ``_scan``: a driving full scan of a clustered index;
* ``_drive_range``: a driving range on a secondary index (with clustered lookups,
  DS-MRR in the ``mrr`` and ``bka`` variants);
* ``_eq``: an ``eq_ref`` probe of a primary key;
* ``_refsec``: a ``ref`` probe of a secondary index, covering or followed by its
  clustered lookups;
* ``_li_by_order``: the lineitem rows of an order, ``ref`` on the PRIMARY prefix
  ``l_orderkey``, also as an (NOT) EXISTS subquery.

The steps only describe the plan; :class:`~bufsim.workloads.dbt3.Dbt3` executes
them as page gets, and :meth:`~bufsim.workloads.dbt3.Dbt3.plan_table` lists them.
This module imports nothing from the executor (the factories receive it as an
argument), so there is no import cycle.

Variants
--------
:meth:`~bufsim.workloads.dbt3.Dbt3.query` runs a plan under one of three variants:

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
    Batched Key Access where MySQL 5.6 allows it
    (:meth:`~bufsim.workloads.dbt3.Dbt3.batched`): only on non-covering
    secondary-index ``ref`` steps, because ``setup_join_buffering``
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
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .dbt3_schema import (
    AMERICA, ANODIZED, ASIA, BRASS, DELIVER_IN_PERSON, ECONOMY, EUROPE, GERMANY, SAUDI_ARABIA,
    STEEL, brand_code, container_codes, day,
)

__all__ = ["PLANS", "QUERIES", "Step"]

QUERIES = (2, 3, 4, 5, 8, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21)


# --------------------------------------------------------------------------------------
# plan steps
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


_Q19 = ((brand_code(12), container_codes(0, (0, 1, 5, 4)), 1, 11, 5),
        (brand_code(23), container_codes(2, (2, 1, 4, 5)), 10, 20, 10),
        (brand_code(34), container_codes(1, (0, 1, 5, 4)), 20, 30, 15))


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


#: _q18_orders per data set (weakly held: it goes with the data)
_Q18_ORDERS = weakref.WeakKeyDictionary()


def _q18_orders(D):
    """Q18's IN subquery, per order: whether its lineitems' quantities sum to more than
    300 (``group by l_orderkey having sum(l_quantity) > 300``).  A function of the data
    alone, which the plan's filter asks for on every batch of orders: computed once per
    data set (read-only)."""
    got = _Q18_ORDERS.get(D)
    if got is None:
        got = np.add.reduceat(D.l_qty.astype(np.int64), D.o_lstart[:-1]) > 300
        got.setflags(write=False)
        _Q18_ORDERS[D] = got
    return got


_Q1995_03_15, _Q1993_07_01, _Q1993_10_01 = day("1995-03-15"), day("1993-07-01"), day("1993-10-01")

#: Per query: ``parts`` run one after another; each a driving access and join steps in
#: join order (see :meth:`~bufsim.workloads.dbt3.Dbt3.plan_table` for the access type of
#: every table).
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
        _scan("p", "part", lambda D, p: (D.p_brand[p] == brand_code(23))
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
