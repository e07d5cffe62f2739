"""Notebook 09's DBT-3 subset: document 002's queries compiled to traces, held against MariaDB.

On a private server loaded with a small DBT-3 database (:mod:`bufsim.live.dbt3_load`),
every query of :data:`QUERIES` (the TPC-H text of the queries 002_5c4a4fbcadbdca94.txt
runs, with TPC-H's validation parameters; Q15's view as its GROUP BY) is compiled
(:mod:`bufsim.live.compile`) and run, once under MariaDB 10.11's default
``optimizer_switch`` (``plain``) and once with document 002's features on (``mrr_bka``:
``optimizer_switch='mrr=on,mrr_sort_keys=on'``, ``join_cache_level=6``, which lets the
server pick Disk-Sweep MRR for ranges and Batched Key Access for joins).  Per statement
the compiled page gets are set beside the server's ``Innodb_buffer_pool_read_requests``
delta (:func:`statement_check`); a query whose plan the compiler does not follow is one
line naming the plan node and the reason.  The supported queries, compiled once, are then
run on the server restarted at other pool sizes, several times each, and their trace
replayed through the ``mariadb1011`` preset beside the server's spread
(:func:`pool_check`).

What the DBT-3 subset adds to the compiler's checks: joins of up to eight tables
(``eq_ref``/``ref`` probes, Q8, Q9), GROUP BY / ORDER BY sorted in a temporary table after
the join (MEMORY or Aria, no InnoDB page: Q3, Q5, Q8-Q10, Q12, Q15), range rowid filters
(Q3, Q5, Q8, Q10), a range read by Disk-Sweep MRR (Q6 and Q15 under ``mrr_bka``), Batched
Key Access at any table of a join, chained buffers, tables probed row by row between them
and rowid filters beside them (Q3, Q5, Q8, Q9, Q10, Q12, Q14, Q19 under ``mrr_bka``; Q10
reads ``orders``' buffer in two fills, Q9 its four buffers in 2-4 fills laid out as the
server's), a FirstMatch semi-join (Q4, plain and beside BKA).  Not followed, each with its
line: subqueries (Q2, Q11, Q17, Q21) and materialised ones (Q13, Q18).
"""
from __future__ import annotations

import pandas as pd

from .._validation import check_int
from . import dbt3_load as D
from .compile import Compiler
from .compile_plan import parse_plan
from .compile_validation import pool_check as _pool_check, pool_rows, spread
from .compile_workload import check_against_server
from .server import MariaDBServer

__all__ = ["QUERIES", "SETTINGS", "QUICK_SF", "FULL_SF", "QUICK_QUERIES", "prepare",
           "statement_check", "pool_check", "spread", "results_rows", "unsupported_lines"]

#: scale factors of the quick mode and of the full run (lineitem about 6M x SF rows)
QUICK_SF = 0.003
FULL_SF = 0.01

#: session settings: MariaDB 10.11's defaults, and document 002's DS-MRR + BKA
SETTINGS = {
    "plain": (),
    "mrr_bka": ("SET SESSION optimizer_switch = 'mrr=on,mrr_sort_keys=on'",
                "SET SESSION join_cache_level = 6"),
}

#: DBT-3 (TPC-H 2.x) queries with the specification's validation parameters, in
#: MariaDB's SQL; name -> SQL.  ``q15`` is the revenue view's GROUP BY (the query
#: itself reads the view twice through a subquery).
QUERIES = {
    "q2": "SELECT s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment "
          "FROM part, supplier, partsupp, nation, region WHERE p_partkey = ps_partkey "
          "AND s_suppkey = ps_suppkey AND p_size = 15 AND p_type LIKE '%BRASS' "
          "AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = 'EUROPE' "
          "AND ps_supplycost = (SELECT MIN(ps_supplycost) FROM partsupp, supplier, nation, region "
          "WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND s_nationkey = n_nationkey "
          "AND n_regionkey = r_regionkey AND r_name = 'EUROPE') "
          "ORDER BY s_acctbal DESC, n_name, s_name, p_partkey LIMIT 100",
    "q3": "SELECT l_orderkey, SUM(l_extendedprice * (1 - l_discount)) AS revenue, o_orderdate, "
          "o_shippriority FROM customer, orders, lineitem WHERE c_mktsegment = 'BUILDING' "
          "AND c_custkey = o_custkey AND l_orderkey = o_orderkey "
          "AND o_orderdate < DATE '1995-03-15' AND l_shipdate > DATE '1995-03-15' "
          "GROUP BY l_orderkey, o_orderdate, o_shippriority ORDER BY revenue DESC, o_orderdate "
          "LIMIT 10",
    "q4": "SELECT o_orderpriority, COUNT(*) AS order_count FROM orders "
          "WHERE o_orderdate >= DATE '1993-07-01' AND o_orderdate < DATE '1993-07-01' + "
          "INTERVAL 3 MONTH AND EXISTS (SELECT * FROM lineitem WHERE l_orderkey = o_orderkey "
          "AND l_commitdate < l_receiptdate) GROUP BY o_orderpriority ORDER BY o_orderpriority",
    "q5": "SELECT n_name, SUM(l_extendedprice * (1 - l_discount)) AS revenue "
          "FROM customer, orders, lineitem, supplier, nation, region WHERE c_custkey = o_custkey "
          "AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey AND c_nationkey = s_nationkey "
          "AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = 'ASIA' "
          "AND o_orderdate >= DATE '1994-01-01' AND o_orderdate < DATE '1994-01-01' + "
          "INTERVAL 1 YEAR GROUP BY n_name ORDER BY revenue DESC",
    "q6": "SELECT SUM(l_extendedprice * l_discount) AS revenue FROM lineitem "
          "WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1994-01-01' + "
          "INTERVAL 1 YEAR AND l_discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01 AND l_quantity < 24",
    "q8": "SELECT o_year, SUM(CASE WHEN nation = 'BRAZIL' THEN volume ELSE 0 END) / SUM(volume) "
          "AS mkt_share FROM (SELECT EXTRACT(YEAR FROM o_orderdate) AS o_year, "
          "l_extendedprice * (1 - l_discount) AS volume, n2.n_name AS nation "
          "FROM part, supplier, lineitem, orders, customer, nation n1, nation n2, region "
          "WHERE p_partkey = l_partkey AND s_suppkey = l_suppkey AND l_orderkey = o_orderkey "
          "AND o_custkey = c_custkey AND c_nationkey = n1.n_nationkey "
          "AND n1.n_regionkey = r_regionkey AND r_name = 'AMERICA' "
          "AND s_nationkey = n2.n_nationkey AND o_orderdate BETWEEN DATE '1995-01-01' "
          "AND DATE '1996-12-31' AND p_type = 'ECONOMY ANODIZED STEEL') AS all_nations "
          "GROUP BY o_year ORDER BY o_year",
    "q9": "SELECT nation, o_year, SUM(amount) AS sum_profit FROM (SELECT n_name AS nation, "
          "EXTRACT(YEAR FROM o_orderdate) AS o_year, "
          "l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity AS amount "
          "FROM part, supplier, lineitem, partsupp, orders, nation WHERE s_suppkey = l_suppkey "
          "AND ps_suppkey = l_suppkey AND ps_partkey = l_partkey AND p_partkey = l_partkey "
          "AND o_orderkey = l_orderkey AND s_nationkey = n_nationkey "
          "AND p_name LIKE '%green%') AS profit GROUP BY nation, o_year "
          "ORDER BY nation, o_year DESC",
    "q10": "SELECT c_custkey, c_name, SUM(l_extendedprice * (1 - l_discount)) AS revenue, "
           "c_acctbal, n_name, c_address, c_phone, c_comment FROM customer, orders, lineitem, "
           "nation WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey "
           "AND o_orderdate >= DATE '1993-10-01' AND o_orderdate < DATE '1993-10-01' + "
           "INTERVAL 3 MONTH AND l_returnflag = 'R' AND c_nationkey = n_nationkey "
           "GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment "
           "ORDER BY revenue DESC LIMIT 20",
    "q11": "SELECT ps_partkey, SUM(ps_supplycost * ps_availqty) AS value FROM partsupp, supplier, "
           "nation WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey "
           "AND n_name = 'GERMANY' GROUP BY ps_partkey HAVING SUM(ps_supplycost * ps_availqty) > "
           "(SELECT SUM(ps_supplycost * ps_availqty) * 0.0001 FROM partsupp, supplier, nation "
           "WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = 'GERMANY') "
           "ORDER BY value DESC",
    "q12": "SELECT l_shipmode, SUM(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = "
           "'2-HIGH' THEN 1 ELSE 0 END) AS high_line_count, SUM(CASE WHEN o_orderpriority <> "
           "'1-URGENT' AND o_orderpriority <> '2-HIGH' THEN 1 ELSE 0 END) AS low_line_count "
           "FROM orders, lineitem WHERE o_orderkey = l_orderkey AND l_shipmode IN ('MAIL', 'SHIP') "
           "AND l_commitdate < l_receiptdate AND l_shipdate < l_commitdate "
           "AND l_receiptdate >= DATE '1994-01-01' AND l_receiptdate < DATE '1994-01-01' + "
           "INTERVAL 1 YEAR GROUP BY l_shipmode ORDER BY l_shipmode",
    "q13": "SELECT c_count, COUNT(*) AS custdist FROM (SELECT c_custkey, COUNT(o_orderkey) AS "
           "c_count FROM customer LEFT OUTER JOIN orders ON c_custkey = o_custkey "
           "AND o_comment NOT LIKE '%special%requests%' GROUP BY c_custkey) AS c_orders "
           "GROUP BY c_count ORDER BY custdist DESC, c_count DESC",
    "q14": "SELECT 100.00 * SUM(CASE WHEN p_type LIKE 'PROMO%' THEN l_extendedprice * "
           "(1 - l_discount) ELSE 0 END) / SUM(l_extendedprice * (1 - l_discount)) AS "
           "promo_revenue FROM lineitem, part WHERE l_partkey = p_partkey "
           "AND l_shipdate >= DATE '1995-09-01' AND l_shipdate < DATE '1995-09-01' + "
           "INTERVAL 1 MONTH",
    "q15": "SELECT l_suppkey, SUM(l_extendedprice * (1 - l_discount)) FROM lineitem "
           "WHERE l_shipdate >= DATE '1996-01-01' AND l_shipdate < DATE '1996-01-01' + "
           "INTERVAL 3 MONTH GROUP BY l_suppkey",
    "q17": "SELECT SUM(l_extendedprice) / 7.0 AS avg_yearly FROM lineitem, part "
           "WHERE p_partkey = l_partkey AND p_brand = 'Brand#23' AND p_container = 'MED BOX' "
           "AND l_quantity < (SELECT 0.2 * AVG(l_quantity) FROM lineitem "
           "WHERE l_partkey = p_partkey)",
    "q18": "SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, SUM(l_quantity) "
           "FROM customer, orders, lineitem WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem "
           "GROUP BY l_orderkey HAVING SUM(l_quantity) > 300) AND c_custkey = o_custkey "
           "AND o_orderkey = l_orderkey GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, "
           "o_totalprice ORDER BY o_totalprice DESC, o_orderdate LIMIT 100",
    "q19": "SELECT SUM(l_extendedprice * (1 - l_discount)) AS revenue FROM lineitem, part "
           "WHERE (p_partkey = l_partkey AND p_brand = 'Brand#12' AND p_container IN ('SM CASE', "
           "'SM BOX', 'SM PACK', 'SM PKG') AND l_quantity >= 1 AND l_quantity <= 1 + 10 "
           "AND p_size BETWEEN 1 AND 5 AND l_shipmode IN ('AIR', 'AIR REG') "
           "AND l_shipinstruct = 'DELIVER IN PERSON') OR (p_partkey = l_partkey "
           "AND p_brand = 'Brand#23' AND p_container IN ('MED BAG', 'MED BOX', 'MED PKG', "
           "'MED PACK') AND l_quantity >= 10 AND l_quantity <= 10 + 10 AND p_size BETWEEN 1 AND 10 "
           "AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON') "
           "OR (p_partkey = l_partkey AND p_brand = 'Brand#34' AND p_container IN ('LG CASE', "
           "'LG BOX', 'LG PACK', 'LG PKG') AND l_quantity >= 20 AND l_quantity <= 20 + 10 "
           "AND p_size BETWEEN 1 AND 15 AND l_shipmode IN ('AIR', 'AIR REG') "
           "AND l_shipinstruct = 'DELIVER IN PERSON')",
    "q21": "SELECT s_name, COUNT(*) AS numwait FROM supplier, lineitem l1, orders, nation "
           "WHERE s_suppkey = l1.l_suppkey AND o_orderkey = l1.l_orderkey "
           "AND o_orderstatus = 'F' AND l1.l_receiptdate > l1.l_commitdate AND EXISTS "
           "(SELECT * FROM lineitem l2 WHERE l2.l_orderkey = l1.l_orderkey "
           "AND l2.l_suppkey <> l1.l_suppkey) AND NOT EXISTS (SELECT * FROM lineitem l3 "
           "WHERE l3.l_orderkey = l1.l_orderkey AND l3.l_suppkey <> l1.l_suppkey "
           "AND l3.l_receiptdate > l3.l_commitdate) AND s_nationkey = n_nationkey "
           "AND n_name = 'SAUDI ARABIA' GROUP BY s_name ORDER BY numwait DESC, s_name LIMIT 100",
}
#: the quick mode's queries: a DS-MRR / plain range (Q6), a range joined by eq_ref (Q14),
#: point joins (Q19), a sort after a join (Q12), a rowid filter (Q3; under ``mrr_bka`` two
#: chained BKA buffers, the filter beside the first), a FirstMatch semi-join (Q4)
QUICK_QUERIES = ("q6", "q14", "q19", "q12", "q3", "q4")


def _check_subset(name: str, values, allowed) -> tuple:
    """``values`` as a tuple: a non-empty list of names from ``allowed``."""
    values = tuple(values)
    bad = [v for v in values if v not in allowed]
    if bad or not values:
        raise ValueError(f"{name}={list(values)!r}: unknown {bad}; allowed: a non-empty list "
                         f"of {', '.join(allowed)}")
    return values


def prepare(server: MariaDBServer, sf: float, seed: int) -> float:
    """Load DBT-3 at scale factor ``sf`` (drawn from ``seed``) into ``server``; seconds taken
    (drawing the rows and loading them)."""
    import time
    t0 = time.monotonic()
    data = D.generate(sf, seed)
    with server.connect() as conn:
        D.load(conn, data, sf=sf)
    return time.monotonic() - t0


#: runs of a read whose first server count differs from the compiled one (the least count
#: is the statement's own: the counter is global, and background work only adds to it)
RERUNS = 2


def statement_check(server: MariaDBServer, queries=tuple(QUERIES),
                    settings=tuple(SETTINGS), rows: dict | None = None) -> pd.DataFrame:
    """Compile and run each of ``queries`` under each of ``settings`` on ``server`` (loaded
    by :func:`prepare`): :func:`~bufsim.live.compile_workload.check_against_server`'s
    columns plus ``set`` ("dbt3 plain", "dbt3 mrr_bka"), ``kind`` ("read") and
    ``server_runs`` (the server's counts).

    The read-request counter is global: a purge or statistics batch that runs while the
    statement does adds its gets (seen: Q9 at SF 0.01, 45,116 once where its compiled
    45,113 matched the server in other runs).  A supported query whose first count
    differs from the compiled one runs :data:`RERUNS` more times; ``server`` is the least
    count, ``server_runs`` names them all.

    ``rows``: a dict for the index entries the compiler reads by SQL (the rows a join
    drives and probes: most of a compilation's time), to give the same dict to
    :func:`pool_check`, which compiles the same queries over the same data again (the
    queries only read; a reloaded table has a new space id and is read again)."""
    queries = _check_subset("queries", queries, QUERIES)
    settings = _check_subset("settings", settings, SETTINGS)
    out = []
    for st in settings:
        with server.connect() as conn:
            for s in SETTINGS[st]:
                conn.execute(s, doing=f"setting the session ({st})")
            df = check_against_server(conn, D.SCHEMA, [(q, QUERIES[q]) for q in queries],
                                      rows=rows)
            runs = []
            for r in df.itertuples(index=False):
                seen = [int(r.server)]
                if r.unsupported == "" and r.compiled != r.server:
                    for _ in range(RERUNS):
                        b = conn.status()["Innodb_buffer_pool_read_requests"]
                        conn.query(r.sql, doing=f"running {r.template} again")
                        seen.append(conn.status()["Innodb_buffer_pool_read_requests"] - b)
                runs.append(seen)
            df["server"] = [min(x) for x in runs]
            df["server_runs"] = [" ".join(map(str, x)) for x in runs]
            comp = Compiler(conn, D.SCHEMA)
            df["rowid_filter"] = [
                r.unsupported == "" and any(t.rowid_filter for t in parse_plan(
                    *comp.explain(r.sql), r.sql).tables) for r in df.itertuples(index=False)]
        out.append(df.assign(set=f"dbt3 {st}"))
    frame = pd.concat(out, ignore_index=True)
    frame["kind"] = "read"
    return frame


def pool_check(server: MariaDBServer, per_statement: pd.DataFrame, pools=("6M", "10M"), *,
               repeats: int = 2, preset: str = "mariadb1011", settings: dict | None = None,
               old_blocks_times=(1000,), sets=("plain",), recheck: int = 0,
               rows: dict | None = None) -> pd.DataFrame:
    """The queries :func:`statement_check` found supported and exact, per session setting,
    compiled once and replayed at each pool size and old_blocks_time beside the server
    restarted with them (a cold pool), ``repeats`` runs each, and at most ``recheck`` more
    while a counter's replay is not within the server's spread
    (:func:`bufsim.live.compile_validation.pool_check`).  ``sets``: the session
    settings (:data:`SETTINGS`) whose queries are replayed; by default ``plain`` only.

    ``sets`` is ``plain`` alone by default; notebook 09 replays both.  While the
    ``mrr_bka`` set held only the two-table BKA queries (Q6, Q12, Q14, Q15, Q19), one of its
    16 rows split the server in two: at 12 MiB / old_blocks_time 0 it made 451 pages young
    in 13 of 16 cold runs and 941 in 3 (the replay 940), as its page cleaner's batches
    evicted 117-118 pages during Q12 or 119-159, against the 119 evictions of InnoDB's
    "young enough" window (buf_page_peek_if_young; ``docs/cleaner-race.md``).  With BKA at
    any table and FirstMatch its 11 queries run, and every row of the set is within the
    server's range over 3 runs (SF 0.01, 6 and 12 MiB, old_blocks_time 1000 and 0; made
    young at 12 MiB / 0: 5,964-6,202, the replay 5,920).

    The queries with a range rowid filter (Q3, Q5, Q8, Q10) are in: their inner ``ref``
    probes are exact-key reads that prefetch from the first row (``ROW_SEL_EXACT``, see
    :mod:`bufsim.live.compile`), so a probe of a few rows restores its cursor
    once, not once per row (before that rule, 12 MiB / 1000 runs of 2026-11-29: Q3 4,604
    pages not made young where the server counted 3,811-3,814; with it 3,959 against
    3,750-3,810, and Q8 1,896 against 1,924-1,929).

    ``rows``: the dict given to :func:`statement_check` (the entries its compiler read).

    Returns one row per setting, pool, old_blocks_time, counter and run
    (:func:`bufsim.live.compile_validation.pool_check`'s columns, plus ``set``, ``run``
    and ``queries``)."""
    repeats = check_int("repeats", repeats, 1, 20)
    frames = []
    for st, g in per_statement.groupby("set", sort=False):
        ok = g[(g.unsupported == "") & (g.compiled == g.server)]
        if ok.empty:
            continue
        name = st.split(" ", 1)[1]
        if name not in sets:
            continue
        df = _pool_check(server, tuple(pools), preset=preset, settings=settings,
                         old_blocks_times=tuple(old_blocks_times), sqls=list(ok.sql),
                         schema=D.SCHEMA, tables=D.TABLES, session=SETTINGS[name],
                         repeats=repeats, recheck=recheck, rows=rows)
        frames.append(df.assign(set=st, queries=" ".join(ok.template)))
    if not frames:
        return pd.DataFrame(columns=["set", "pool", "pool_pages", "old_blocks_time", "metric",
                                     "reported", "simulated", "holds", "run", "queries"])
    return pd.concat(frames, ignore_index=True)


def results_rows(per_statement: pd.DataFrame, pools: pd.DataFrame,
                 experiment: str = "SQL -> trace, live MariaDB 10.11") -> list[dict]:
    """Rows for :func:`bufsim.results.write_results`: per setting and supported query the
    compiled gets beside the server's (holds: equal), and per setting, pool, old_blocks_time
    and counter the replay beside the server's spread over its runs (``reported``: the
    median of the runs, the config names their range)."""
    out = []
    for r in per_statement[per_statement.unsupported == ""].itertuples(index=False):
        runs = str(r.server_runs).split()
        out.append(dict(experiment=experiment, metric=f"{r.set} {r.template} page gets",
                        config="1 statement, read" + (f"; server runs {', '.join(runs)} (least "
                                                      "taken)" if len(runs) > 1 else ""),
                        reported=float(r.server),
                        simulated=float(r.compiled), fitted=False,
                        holds=bool(r.compiled == r.server and r.created == 0)))
    return out + pool_rows(pools, experiment)


def unsupported_lines(per_statement: pd.DataFrame) -> list[str]:
    """One line per unsupported query and setting: the setting, the query, the plan node and
    the reason."""
    bad = per_statement[per_statement.unsupported != ""]
    return [f"{r.set} {r.template}: {r.unsupported}" for r in bad.itertuples(index=False)]
