"""The SQL -> trace compiler's parts that need no server: EXPLAIN/trace JSON -> plan
(on JSON recorded from MariaDB 10.11, tests/data/explain/), B-tree arithmetic on a small
hand-made index, workload files and their errors, the CLI's checks before any work."""
import json
from pathlib import Path

import numpy as np
import pytest

from bufsim.cli import main
from bufsim.live.compile_btree import (dive_pages, leaf_of, search_leaf, unique_lookup,
                                      unique_lookup_pages)
from bufsim.live.compile_plan import (Unsupported, parse_plan, parse_range, statement_limit,
                                      table_aliases)
from bufsim.live.compile_validation import oltp_workload
from bufsim.live.compile_workload import WorkloadError, read_workload
from bufsim.live.geometry import LiveIndex

DATA = Path(__file__).resolve().parents[1] / "data"
OLTP = oltp_workload()   # data/live/oltp.toml, through bufsim.paths


def recorded(name):
    doc = json.loads((DATA / "explain" / f"{name}.json").read_text())
    return doc["explain"], doc["trace"], doc["sql"]


def plan_of(name):
    e, t, sql = recorded(name)
    return parse_plan(e, t, sql)


# ---- EXPLAIN FORMAT=JSON + optimizer trace -> plan ------------------------------------------
def test_const_lookup_by_primary_key():
    p = plan_of("const_pk")
    (t,) = p.tables
    assert (t.alias, t.access, t.key, t.used_key_parts, t.ref) == (
        "sbtest", "const", "PRIMARY", ("id",), ("const",))
    assert ("sbtest", "PRIMARY", "id", "5") in p.key_uses
    assert p.dives == ()                      # a whole-key equality: no records-in-range


def test_ref_on_a_secondary_index_and_its_dive():
    p = plan_of("ref_secondary")
    (t,) = p.tables
    assert (t.access, t.key, t.covering) == ("ref", "k_1", False)
    assert [(d.table, d.index, d.ranges) for d in p.dives] == [
        ("sbtest", "k_1", ("(5) <= (k) <= (5)",))]


def test_covering_range_keeps_its_ranges():
    (t,) = plan_of("range_covering").tables
    assert (t.access, t.key, t.covering) == ("range", "k_1", True)
    assert t.ranges == ("(100) <= (k) <= (200)",)


def test_in_list_is_three_ranges_in_order():
    (t,) = plan_of("range_in_list").tables
    assert t.ranges == ("(3) <= (id) <= (3)", "(5) <= (id) <= (5)", "(9) <= (id) <= (9)")


def test_scan_join_in_join_order():
    p = plan_of("join_eq_ref")
    assert [(t.alias, t.access) for t in p.tables] == [("lineorder", "ALL"), ("dates", "eq_ref")]
    assert p.tables[1].ref == ("bufsim_live.lineorder.lo_orderdate",)
    assert "lo_discount" in p.tables[0].condition


def test_impossible_where_after_const_tables_names_the_const_table():
    p = plan_of("impossible_const")
    assert p.impossible and p.tables == () and p.const_tables == ("sbtest",)


def test_update_by_primary_key_is_one_table():
    p = plan_of("update_pk")
    assert p.kind == "update" and [(t.alias, t.access, t.key) for t in p.tables] == [
        ("sbtest", "range", "PRIMARY")]


@pytest.mark.parametrize("name,node,reason", [
    ("filesort", "nested_loop read_sorted_file", "filesort"),
    ("subquery", "table <subquery2>", "materialises"),
    ("optimized_away", "message", "Select tables optimized away"),
])
def test_unsupported_plans_name_the_node_and_the_reason(name, node, reason):
    e, t, sql = recorded(name)
    with pytest.raises(Unsupported) as info:
        parse_plan(e, t, sql)
    assert node in info.value.node and reason in info.value.reason


def test_a_sort_or_temporary_table_after_the_join_is_unwrapped():
    """GROUP BY / DISTINCT / ORDER BY over a temporary table (MEMORY or Aria: no InnoDB
    page) leave the join below them; every row is read, so a LIMIT does not stop it."""
    import copy
    e, t, sql = recorded("temporary")
    p = parse_plan(e, t, sql)
    assert p.after == ("temporary table",) and [(x.alias, x.access) for x in p.tables] == [
        ("sbtest", "range")]
    with pytest.raises(Unsupported, match="LIMIT without a sort") as info:
        parse_plan(e, t, sql + " LIMIT 3")                 # DISTINCT can stop the join early
    assert info.value.node == "query_block 1 temporary_table"
    sorted_ = copy.deepcopy(e)
    qb = sorted_["query_block"]
    qb["filesort"] = {"sort_key": "sbtest.c desc", "temporary_table": qb.pop("temporary_table")}
    p = parse_plan(sorted_, t, sql + " ORDER BY c DESC LIMIT 3")
    assert p.after == ("filesort", "temporary table") and p.limit is None
    assert [x.alias for x in p.tables] == ["sbtest"]
    # a filesort with a node of its own beside the temporary table is not unwrapped
    qb["filesort"]["window_functions_computation"] = {}
    with pytest.raises(Unsupported, match="filesort"):
        parse_plan(sorted_, t, sql)


def test_backward_scans_and_other_statements_are_refused():
    e, t, _ = recorded("all_scan")
    with pytest.raises(Unsupported, match="backward"):
        parse_plan(e, t, "SELECT c FROM sbtest ORDER BY id DESC LIMIT 5")
    with pytest.raises(Unsupported, match="'CREATE' is not"):
        parse_plan(e, t, "CREATE TABLE x (a INT)")


@pytest.mark.parametrize("text,lo,hi,cols", [
    ("(100) <= (k) <= (200)", ((100,), True), ((200,), True), ("k",)),
    ("(k) < (5)", None, ((5,), False), ("k",)),
    ("(7990) < (k)", ((7990,), False), None, ("k",)),
    ("('Mon''day',3) <= (d,e) <= ('Tue',4)", (("Mon'day", 3), True), (("Tue", 4), True), ("d", "e")),
    ("(NULL) < (k) < (5)", ((None,), False), ((5,), False), ("k",)),
    ("(-1.5) <= (x) <= (2e3)", ((-1.5,), True), ((2000.0,), True), ("x",)),
])
def test_ranges_as_the_trace_prints_them(text, lo, hi, cols):
    a, b, c = parse_range(text)
    assert (None if a is None else (a.values, a.inclusive)) == lo
    assert (None if b is None else (b.values, b.inclusive)) == hi
    assert c == cols


@pytest.mark.parametrize("sql,limit", [
    ("SELECT k FROM t ORDER BY k LIMIT 10", (0, 10)),
    ("SELECT k FROM t LIMIT 20, 10;", (20, 10)),
    ("SELECT k FROM t LIMIT 10 OFFSET 2000", (2000, 10)),
    ("SELECT k FROM t WHERE k IN (SELECT a FROM u LIMIT 3)", None),
])
def test_limit_of_the_statement(sql, limit):
    assert statement_limit(sql) == limit


@pytest.mark.parametrize("query,aliases", [
    ("select sum(l.lo_revenue) AS `SUM(l.lo_revenue)` from (lineorder l straight_join dates d "
     "on(l.lo_orderdate = d.d_datekey)) where d.d_year = 1993", {"l": "lineorder", "d": "dates"}),
    ("select count(0) AS `COUNT(*)` from dates dd join lineorder lo where lo.x = dd.y",
     {"dd": "dates", "lo": "lineorder"}),
    ("select sbtest.c AS c from sbtest where sbtest.`id` < 5", {"sbtest": "sbtest"}),
    ("select x.c AS c from other.sbtest x where x.k = 1", {"x": "other.sbtest"}),
])
def test_aliases_from_the_expanded_query(query, aliases):
    trace = {"steps": [{"join_preparation": {"select_id": 1, "steps": [{"expanded_query": query}]}}]}
    assert table_aliases(trace) == aliases


# ---- B-tree arithmetic on a hand-made index ------------------------------------------------
def small_index():
    """Height 2: root 3 over leaves 4, 5, 6, 7 holding 3, 2, 4, 1 records."""
    return LiveIndex("PRIMARY", 1, 3, (np.array([4, 5, 6, 7]), np.array([3])),
                     (np.array([3, 2, 4, 1]), np.array([4])))


@pytest.mark.parametrize("entry,pages", [
    (1, [3, 4]),            # inside leaf 4
    (0, [3, 4]),            # first of the first leaf: no previous leaf
    (3, [3, 4, 5]),         # first record of leaf 5: lands on leaf 4, steps
    (2, [3, 4, 5]),         # last record of leaf 4: the cursor steps onto leaf 5
    (4, [3, 5, 6]),         # last of leaf 5
    (9, [3, 6, 7]),         # first and last of the last leaf
])
def test_unique_lookup_pages(entry, pages):
    assert unique_lookup_pages(small_index(), entry).tolist() == pages


def test_leaf_of_is_leaf_of_entry_clamped_to_the_last_leaf():
    """The compiler's cached leaf_of gives LiveIndex.leaf_of_entry's leaf (the last one past
    the end), empty leaves included, for every rank before, in and past the records."""
    rng = np.random.default_rng(5)
    for recs in ([3, 2, 4, 1], [0, 2, 0, 0, 5, 1], [4], list(rng.integers(0, 6, 40))):
        n = len(recs)
        ix = LiveIndex("PRIMARY", 1, 0, (np.arange(1, n + 1),), (np.array(recs),))
        total = int(sum(recs))
        for entry in range(-2, total + 3):
            assert leaf_of(ix, entry) == min(int(ix.leaf_of_entry(entry)), n - 1), (recs, entry)
    assert leaf_of(small_index(), 3) == 1 and leaf_of(small_index(), 9) == 3


def test_unique_lookup_kinds():
    """Above the landing leaf no read-ahead site, the landing leaf a descent's, the steps
    onto the record's leaf and past its last record forward leaf steps."""
    from bufsim.trace import FLAG_DESCENT as D, FLAG_NO_RA as N, FLAG_STEP as S
    ix = small_index()
    assert unique_lookup(ix, 1)[1].tolist() == [N, D]
    assert unique_lookup(ix, 3)[1].tolist() == [N, D, S]        # lands on leaf 4, steps to 5
    assert unique_lookup(ix, 4)[1].tolist() == [N, D, S]        # steps past leaf 5's last
    # leaf 6 is the first child of a second level-1 page: the search for its first record
    # descends through the first level-1 page to leaf 5 (the levels above take the last
    # node pointer below the key), then steps
    two = LiveIndex("PRIMARY", 1, 9, (np.array([4, 5, 6, 7]), np.array([2, 3]), np.array([9])),
                    (np.array([3, 2, 4, 1]), np.array([2, 2]), np.array([2])))
    pages, kinds = unique_lookup(two, 5)
    assert pages.tolist() == [9, 2, 5, 6] and kinds.tolist() == [N, N, D, S]
    assert unique_lookup(two, 6)[0].tolist() == [9, 3, 6]      # inside leaf 6: its own path
    root_leaf = LiveIndex("PRIMARY", 1, 3, (np.array([3]),), (np.array([4]),))
    assert unique_lookup(root_leaf, 2)[1].tolist() == [N]      # a one-page tree: no parent


def test_locking_lookup_does_not_step_past_the_last_record():
    assert unique_lookup_pages(small_index(), 2, step_past=False).tolist() == [3, 4]


def testsearch_leaf_and_dive():
    ix = small_index()
    assert [search_leaf(ix, e) for e in range(11)] == [0, 0, 0, 0, 1, 1, 2, 2, 2, 2, 3]
    assert dive_pages(ix, 0, 0).tolist() == [3, 4]           # shared path: root and leaf once
    assert dive_pages(ix, 0, 3).tolist() == [3, 4, 5, 6, 7]   # both borders and the pages between


# ---- workload files ---------------------------------------------------------------------------
def test_oltp_mix_draws_deterministically():
    w = read_workload(OLTP)
    assert (w.threads, w.statements, w.seed) == (2, 60, 7)
    a, b = w.draw(), read_workload(OLTP).draw()
    assert a == b and len(a) == 2 and all(len(x) == 60 for x in a)
    assert a != read_workload(OLTP, seed=8).draw()
    names = {t for thread in a for t, _ in thread}
    assert {"point_select", "index_update"} <= names
    assert all("{" not in sql for thread in a for _, sql in thread)


def _toml(tmp_path, body):
    p = tmp_path / "w.toml"
    p.write_text(body)
    return p


def test_zipf_is_skewed_and_sequential_wraps(tmp_path):
    p = _toml(tmp_path, """seed = 3
statements = 4000
[[template]]
sql = "SELECT {a}, {b}"
[template.params.a]
dist = "zipf"
min = 1
max = 1000
s = 1.2
[template.params.b]
dist = "sequential"
min = 10
max = 14
step = 2
""")
    stmts = read_workload(p).draw()[0]
    a = np.array([int(s.split()[1].rstrip(",")) for _, s in stmts])
    b = [int(s.split()[2]) for _, s in stmts[:5]]
    assert b == [10, 12, 14, 10, 12]
    # P(1) / P(2) = 2**1.2 = 2.30 for Zipf(1.2); uniform would give 1
    ratio = (a == 1).sum() / (a == 2).sum()
    assert 1.9 < ratio < 2.8, ratio
    assert a.min() >= 1 and a.max() <= 1000


@pytest.mark.parametrize("body,match", [
    ("threads = 0\n[[template]]\nsql = 'SELECT 1'\n", r"row 1, column 1: threads = 0 is out of range; allowed: an integer 1\.\.1024"),
    ("[[template]]\nsql = 'SELECT {x}'\n", r"row 2, column 1: template 'template 1': placeholder\(s\) \['x'\]"),
    ("[[template]]\nsql = 'SELECT {x}'\n[template.params.x]\ndist = 'normal'\n",
     r"row 4, column 1: .*dist = 'normal' is unknown; allowed: uniform, zipf, sequential, choice"),
    ("[[template]]\nsql = 'SELECT 1'\nweight = -1\n", r"row 3, column 1: .*weight = -1 is out of range"),
    ("[[template]]\nsql = 'SELECT {x}'\n[template.params.x]\ndist = 'uniform'\nmin = 5\nmax = 1\n",
     r"row 6, column 1: .*max = 1 is out of range; allowed: >= min \(5\)"),
    ("[[template]]\nsql = 'SELECT 1'\n\n[[template]]\n  sql = 'SELECT 2'\n  wieght = 2\n",
     r"row 6, column 3: template 2: unknown field 'wieght'"),
    ("statements = 5\nrate = 1\nseconds = 2\n[[template]]\nsql = 'SELECT 1'\n",
     r"row 1, column 1: give statements, or rate and seconds"),
    ("[[template]\nsql = 1\n", r"w.toml: .*line 1"),
])
def test_bad_workloads_name_field_range_row_and_column(tmp_path, body, match):
    with pytest.raises(WorkloadError, match=match):
        read_workload(_toml(tmp_path, body))


def test_sql_script_keeps_statements_in_order(tmp_path):
    p = tmp_path / "s.sql"
    p.write_text("-- a script\nSELECT c FROM sbtest\n  WHERE id = 5;\n\nUPDATE sbtest SET k = 1 WHERE id = 2;\n")
    w = read_workload(p)
    assert w.draw() == [[("line 2", "SELECT c FROM sbtest\n  WHERE id = 5"),
                         ("line 5", "UPDATE sbtest SET k = 1 WHERE id = 2")]]
    with pytest.raises(WorkloadError, match="need a .toml workload"):
        read_workload(p, threads=2)


# ---- the command line checks everything before it connects -------------------------------
def test_cli_refuses_bad_input_before_any_work(tmp_path, capsys):
    bad = _toml(tmp_path, "[[template]]\nsql = 'SELECT 1'\nweight = 0\n")
    out = tmp_path / "t.parquet"
    sock = str(tmp_path / "no.sock")          # never reached: the checks come first
    assert main(["live", "trace", "--socket", sock, "--schema", "s", "--workload", str(bad),
                 "-o", str(out)]) == 2
    assert "row 3, column 1" in capsys.readouterr().err
    assert main(["live", "trace", "--socket", sock, "--schema", "s", "--workload", str(OLTP),
                 "-o", str(tmp_path / "t.csv")]) == 2
    assert "must end with .parquet, .npy" in capsys.readouterr().err
    out.write_text("keep")
    assert main(["live", "trace", "--socket", sock, "--schema", "s", "--workload", str(OLTP),
                 "-o", str(out)]) == 2
    assert "no MySQL/MariaDB server answers" in capsys.readouterr().err
    assert out.read_text() == "keep"          # nothing a user had is overwritten


def test_results_rows_judge_reads_exact_and_writes_but_where_pages_were_created():
    import pandas as pd
    from bufsim.live.compile_validation import results_rows
    per = pd.DataFrame(dict(
        set="oltp", template=["p", "p", "u", "u", "u", "x"],
        kind=["read", "read", "write", "write", "write", "read"],
        sql="s", compiled=[4, 5, 12, 12, 12, None], server=[4, 5, 12, 280, 12, 9],
        unsupported=["", "", "", "", "", "filesort"], created=[0, 0, 0, 3, 0, 0]))
    pools = pd.DataFrame(dict(pool="16M", pool_pages=1014, old_blocks_time=0,
                              metric=["PAGES_MADE_YOUNG"] * 2, reported=[6762.0, 6900.0],
                              simulated=[6756.0] * 2, holds=[True, True], statements=335,
                              run=[0, 1]))
    rows = {r["metric"]: r for r in results_rows(per, pools)}
    assert rows["oltp p page gets"]["holds"] and rows["oltp p page gets"]["reported"] == 9
    u = rows["oltp u page gets"]
    assert u["holds"] and u["reported"] == 304 and u["simulated"] == 36
    assert "1 created pages on the server (not modelled): +268 gets" in u["config"]
    young = rows["replay PAGES_MADE_YOUNG"]
    assert "old_blocks_time=0" in young["config"]
    assert "server 6762..6900 over 2 runs" in young["config"]
    assert young["holds"] and young["reported"] == 6831             # the runs' median
    # the replay against the server's range: below the least run's band, it misses
    low = results_rows(per, pools.assign(simulated=6762 * 0.9 - 1))
    assert not {r["metric"]: r for r in low}["replay PAGES_MADE_YOUNG"]["holds"]
    # a write that created no page must be exact; one that did must not exceed the server
    for change in (dict(server=[4, 5, 13, 280, 12, 9]), dict(compiled=[4, 5, 12, 290, 12, None])):
        rows = {r["metric"]: r for r in results_rows(per.assign(**change), pools)}
        assert not rows["oltp u page gets"]["holds"]
    # a read is exact, whatever the server created
    rows = {r["metric"]: r for r in results_rows(per.assign(server=[4, 6, 12, 280, 12, 9]), pools)}
    assert not rows["oltp p page gets"]["holds"]


def test_batched_key_access_keeps_the_inner_access_and_its_mrr_type():
    """MariaDB prints a BKA join as a ``block-nl-join`` around the inner table (Q14 with
    join_cache_level=6); a block nested loop stays unsupported."""
    drive = {"table": {"table_name": "lineitem", "access_type": "ALL"}}
    bka = {"block-nl-join": {"table": {"table_name": "part", "access_type": "eq_ref",
                                       "key": "PRIMARY", "used_key_parts": ["p_partkey"],
                                       "ref": ["db.lineitem.l_partkey"]},
                             "buffer_type": "flat", "buffer_size": "256Kb", "join_type": "BKA",
                             "mrr_type": "Key-ordered scan"}}
    p = parse_plan({"query_block": {"select_id": 1, "nested_loop": [drive, bka]}}, {},
                   "SELECT 1 FROM lineitem, part WHERE l_partkey = p_partkey")
    inner = p.tables[1]
    assert (inner.alias, inner.access, inner.join_buffer, inner.mrr) == (
        "part", "eq_ref", "BKA", "Key-ordered scan")
    bnl = {"block-nl-join": {"table": {"table_name": "part", "access_type": "ALL"},
                             "buffer_type": "flat", "join_type": "BNL"}}
    with pytest.raises(Unsupported, match="block nested loop"):
        parse_plan({"query_block": {"select_id": 1, "nested_loop": [drive, bnl]}}, {}, "SELECT 1")


# ---- handler calls of an exact-key read (no server) -------------------------------------------
def _one_leaf_segment(n_rows: int, exact: bool, per_call: int = 9):
    """(re-latches, counted gets) of a read of the first ``n_rows`` entries of an index of
    two 40-record leaves under a root (the compiler's _segment over a hand-made geometry)."""
    from bufsim import SpaceSpec, Tablespaces
    from bufsim.live.compile import Compiler
    from bufsim.live.compile_btree import Events
    from bufsim.live.geometry import LiveGeometry
    from bufsim.trace import FLAG_RELATCH

    ix = LiveIndex("k", 2, 3, (np.array([4, 5]), np.array([3])),
                   (np.array([40, 40]), np.array([2])))
    geo = LiveGeometry.__new__(LiveGeometry)
    geo.tables = {}
    geo.tablespaces = Tablespaces([SpaceSpec(9, 64, "t")])
    geo._base = {"t": 0}
    comp = Compiler.__new__(Compiler)
    comp.geo = geo
    ev = Events(geo, 64)
    comp._segment(ev, "t", ix, 0, n_rows, past_end=True, from_start=False,
                  per_call=per_call, exact=exact)
    pages, flags = ev.arrays()
    return int(((flags & FLAG_RELATCH) != 0).sum()), int(((flags & FLAG_RELATCH) == 0).sum())


@pytest.mark.parametrize("n,exact,relatches", [
    (1, False, 1), (4, False, 4), (5, False, 5), (14, False, 6),   # 4 single-row calls, then 9
    (1, True, 1), (4, True, 1), (9, True, 1), (10, True, 2), (18, True, 2), (19, True, 3),
])
def test_an_exact_key_read_prefetches_from_its_first_row(n, exact, relatches):
    """ROW_SEL_EXACT (a ref probe, HA_READ_KEY_EXACT) prefetches from the first row: calls
    of 9 rows, a cursor restore before each call after the first (and before the call that
    finds the key's end); other reads fetch their first 4 rows one call each."""
    got, counted = _one_leaf_segment(n, exact)
    assert got == relatches
    assert counted == 2                                     # root and leaf: re-latches not counted


def test_an_exact_key_read_under_a_filter_or_icp_takes_8_rows_a_call():
    assert _one_leaf_segment(8, True, per_call=8)[0] == 1
    assert _one_leaf_segment(9, True, per_call=8)[0] == 2


def test_pool_check_runs_again_while_a_counter_is_outside_the_servers_spread():
    """more_runs(): ``repeats`` runs, then more while the replay is outside the server's
    range (pages read: 5 % of it), at most ``recheck`` more."""
    from bufsim.live.compile_validation import more_runs

    def run(read, k):
        return [dict(pool="6M", pool_pages=379, old_blocks_time=1000, metric=m,
                     reported=float(v), simulated=float(s), run=k)
                for m, v, s in (("NUMBER_PAGES_READ", read, 244),
                                ("NUMBER_PAGES_GET", 11298, 11286))]

    assert more_runs([], 2, 3) and more_runs([run(268, 0)], 2, 3)
    assert not more_runs([run(268, 0), run(246, 1)], 2, 3)       # 244 >= 246 * 0.95
    assert more_runs([run(268, 0), run(262, 1)], 2, 3)           # 244 < 262 * 0.95 = 248.9
    assert not more_runs([run(268, 0), run(262, 1), run(259, 2), run(270, 3), run(265, 4)], 2, 3)
    assert not more_runs([run(268, 0), run(262, 1)], 2, 0)       # no recheck: two runs
