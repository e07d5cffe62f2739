"""Parts of the live tier that need no server: tolerances, explanations, .ibd parsing, results."""
import pytest

import numpy as np
import pandas as pd

from bufsim.live import tolerance as T
from bufsim.live.mechanisms import explain
from bufsim.live import validation as V
from bufsim.live.geometry import FIL_NULL, FIL_PAGE_INDEX, parse_ibd
from bufsim.live.workload import Scale, generate
from bufsim.results import results_frame


@pytest.mark.parametrize("metric,reported,simulated,ok", [
    ("NUMBER_PAGES_READ", 1000, 1050, True), ("NUMBER_PAGES_READ", 1000, 1051, False),
    ("NUMBER_PAGES_READ", 0, 0, True), ("NUMBER_PAGES_READ", 0, 1, False),
    ("NUMBER_PAGES_GET", 1000, 980, True), ("NUMBER_PAGES_GET", 1000, 979, False),
    ("PAGES_MADE_YOUNG", 199, 249, True), ("PAGES_MADE_YOUNG", 199, 250, False),
    ("PAGES_MADE_YOUNG", 200, 220, True), ("PAGES_MADE_YOUNG", 200, 221, False),
    ("PAGES_NOT_MADE_YOUNG", 10, 60, True), ("PAGES_NOT_MADE_YOUNG", 5000, 4400, False),
])
def test_tolerances_are_issue_16s(metric, reported, simulated, ok):
    assert T.holds(metric, reported, simulated) is ok


@pytest.mark.parametrize("metric,runs,ok", [
    ("PAGES_NOT_MADE_YOUNG", [0, 100], True),      # 50 meets both bands (+-50 each)
    ("PAGES_NOT_MADE_YOUNG", [0, 101], False),
    ("PAGES_NOT_MADE_YOUNG", [0, 151, 536], False),  # the server's 20 MiB join, 2026-11-27
    ("PAGES_NOT_MADE_YOUNG", [1000, 1200], True),  # 1000 + 100 >= 1200 - 120
    ("PAGES_NOT_MADE_YOUNG", [1000, 1250], False),
    ("NUMBER_PAGES_READ", [2913, 3039], True), ("NUMBER_PAGES_READ", [2900, 3300], False),
    ("NUMBER_PAGES_GET", [7, 7, 7], True),
])
def test_one_count_holds_all_runs_only_where_their_bands_meet(metric, runs, ok):
    assert T.one_count_holds_all(metric, runs) is ok
    if ok:      # then some count holds every run: the meeting point of the bands
        lo = max(T.tolerance_band(metric, r)[0] for r in runs)
        assert all(T.holds(metric, r, lo) for r in runs)


def test_repeatability_summarises_each_row_over_its_runs():
    import pandas as pd
    rows = []
    for rep, (nmy, read) in enumerate([(0, 3000), (536, 3010), (151, 2990)]):
        for metric, real in (("PAGES_NOT_MADE_YOUNG", nmy), ("NUMBER_PAGES_READ", read)):
            rows.append(dict(config="pool=20M", plan="star", phase="cold", metric=metric,
                             reported=float(real), simulated=0.0 if metric[0] == "P" else 3000.0,
                             holds=T.holds(metric, real, 0.0 if metric[0] == "P" else 3000.0)))
    s = T.repeatability(pd.DataFrame(rows)).set_index("metric")
    assert s.loc["PAGES_NOT_MADE_YOUNG", ["runs", "server_min", "server_median",
                                         "server_max", "held"]].tolist() == [3, 0, 151, 536, 1]
    assert not s.loc["PAGES_NOT_MADE_YOUNG", "one_count_can_hold"]
    assert s.loc["NUMBER_PAGES_READ", "one_count_can_hold"]
    assert s.within_spread.all()            # 0 in [0 - 50, 536 + 53.6]; 3000 in [2841, 3311]
    for sim, inside in ((-51.0, False), (-50.0, True), (589.6, True), (590.0, False)):
        frame = pd.DataFrame(rows).assign(simulated=sim)
        frame = frame[frame.metric == "PAGES_NOT_MADE_YOUNG"]
        assert bool(T.repeatability(frame).within_spread.iloc[0]) is inside, sim
    assert s.loc["NUMBER_PAGES_READ", "held"] == 3 and s.replay_values.tolist() == [1, 1]


@pytest.mark.parametrize("bad", [0, 101, 2.0, True, "5"])
def test_repeat_runs_refuses_a_bad_count_before_starting_a_server(bad):
    with pytest.raises(ValueError, match="repeats.*1..100"):
        V.repeat_runs(repeats=bad)


def test_explanations_name_a_mechanism():
    row = dict(metric="NUMBER_PAGES_READ", config="pool=6M pct=37 time=1000 ra=on lsd=default",
               phase="cold", reported=400.0, simulated=350.0, holds=False)
    why = explain(row)
    assert "read-ahead target" in why and "refilled on demand" in why
    row.update(config="pool=10M pct=5 time=0 ra=off lsd=100", phase="warm")
    assert explain(row).startswith("free list refilled on demand")
    assert "overshoots" in explain(row)          # lru_scan_depth=100: the batch overshoots
    row.update(metric="PAGES_NOT_MADE_YOUNG")
    assert "overshoots" in explain(row) and "warm-up" in explain(row)
    row.update(config="pool=20M pct=95 time=1000 ra=on lsd=default")
    assert "beside the query" in explain(row) and "real time" not in explain(row)
    row.update(metric="PAGES_MADE_YOUNG", reported=7.0, simulated=0.0)
    assert explain(row).startswith("old_blocks_time is real time")
    assert explain(dict(row, holds=True)) == "holds"
    # issue 38's phase-end gauges: where the cleaner's cycle stands, not a count
    for gauge in T.GAUGES_COMPARED:
        why = explain(dict(row, metric=gauge, config="pool=6M pct=5 time=1000 ra=on lsd=1024"))
        assert why.startswith("the LRU's length at a phase's end") and "buf_lru_min_len" in why


def test_validation_keeps_the_names_notebook_07_reads():
    """The tolerances and explanations live in bufsim.live.tolerance and .mechanisms;
    bufsim.live.validation still names the ones notebook 07 and the docs use."""
    for name in ("COMPARED", "GAUGES_COMPARED", "holds", "repeatability", "missing_runs",
                 "recheck_claims"):
        assert getattr(V, name) is getattr(T, name) and name in V.__all__
    assert V.explain is explain and "explain" in V.__all__


def test_grid_labels_and_settings():
    assert len(V.FULL_GRID) == 98 and len({s.label for s in V.FULL_GRID}) == 98
    assert set(V.grid()) < set(V.FULL_GRID) and set(V.RESIDUAL_SETTINGS) <= set(V.FULL_GRID)
    # issue 38's residuals: a scan depth above the pool's pages (6 MiB: 379, 20 MiB: 1,260),
    # old_blocks_pct 5 with read-ahead on
    assert {(r.pool, r.lru_scan_depth) for r in V.RESIDUAL_SETTINGS
            if r.lru_scan_depth and r.lru_scan_depth > 1536} == {("20M", 2048)}
    assert any(r.old_blocks_pct == 5 and r.read_ahead for r in V.QUICK_GRID)
    pools = {s.pool for s in V.QUICK_GRID}
    assert pools == {"6M", "10M", "20M"}
    s = V.Setting("6M", 5, 0, False, None).server_settings()
    assert s["innodb_read_ahead_threshold"] == 0 and s["innodb_lru_scan_depth"] == 1536
    with pytest.raises(ValueError, match="preset='nope' is unknown"):
        V.run_grid(preset="nope")


@pytest.mark.parametrize("kwargs, message", [
    (dict(workers=0), "workers=0 is out of range"),
    (dict(workers=9), "workers=9 is out of range"),
    (dict(plans=("scan", "nope")), r"names unknown plans \['nope'\]; allowed: one or more of scan"),
    (dict(settings=()), "settings is empty"),
    (dict(load=False), "load=False needs a server="),
])
def test_run_grid_refuses_bad_arguments_before_starting_a_server(kwargs, message):
    with pytest.raises(ValueError, match=message):
        V.run_grid(**kwargs)


def _page(page_no, typ, prev=FIL_NULL, nxt=FIL_NULL, level=0, n_recs=0, index_id=0, size=16384):
    b = bytearray(size)
    b[4:8] = page_no.to_bytes(4, "big")
    b[8:12] = prev.to_bytes(4, "big")
    b[12:16] = nxt.to_bytes(4, "big")
    b[24:26] = typ.to_bytes(2, "big")
    b[38 + 16:38 + 18] = n_recs.to_bytes(2, "big")
    b[38 + 26:38 + 28] = level.to_bytes(2, "big")
    b[38 + 28:38 + 36] = index_id.to_bytes(8, "big")
    return bytes(b)


def test_parse_ibd_reads_the_headers(tmp_path):
    p0 = bytearray(_page(0, 8))
    p0[38 + 8:38 + 12] = (64).to_bytes(4, "big")          # FSP_SIZE
    pages = [bytes(p0), _page(1, 5), _page(2, 3),
             _page(3, FIL_PAGE_INDEX, level=1, n_recs=2, index_id=77),
             _page(4, FIL_PAGE_INDEX, nxt=5, n_recs=30, index_id=77),
             _page(5, FIL_PAGE_INDEX, prev=4, n_recs=12, index_id=77)]
    path = tmp_path / "t.ibd"
    path.write_bytes(b"".join(pages))
    f = parse_ibd(path)
    assert f["fsp_size"] == 64
    assert f["page_no"].tolist() == [0, 1, 2, 3, 4, 5]
    assert f["type"].tolist()[3:] == [FIL_PAGE_INDEX] * 3
    assert f["level"].tolist()[3:] == [1, 0, 0] and f["n_recs"].tolist()[3:] == [2, 30, 12]
    assert f["next"][4] == 5 and f["prev"][5] == 4 and f["prev"][4] == FIL_NULL
    assert (f["index_id"][3:] == 77).all()
    (tmp_path / "bad.ibd").write_bytes(b"x" * 100)
    with pytest.raises(Exception, match="not a whole number of 16384-byte pages"):
        parse_ibd(tmp_path / "bad.ibd")


def test_generated_rows_are_deterministic():
    a, b = generate(Scale(orders=50, sbtest_rows=200, krange_rows=10), seed=4), \
        generate(Scale(orders=50, sbtest_rows=200, krange_rows=10), seed=4)
    for k in a:
        assert a[k].equals(b[k])
    c = generate(Scale(orders=50, sbtest_rows=200, krange_rows=10), seed=5)
    assert not a["lineorder"].equals(c["lineorder"])
    lo = a["lineorder"]
    assert lo.set_index(["lo_orderkey", "lo_linenumber"]).index.is_unique
    with pytest.raises(ValueError, match="Scale.krange_rows=300 is out of range"):
        Scale(sbtest_rows=200, krange_rows=300)


def test_results_accept_a_holds_column():
    row = dict(experiment="e", metric="m", config="c", reported=10, simulated=11, fitted=False)
    f = results_frame([dict(row, holds=True), dict(row, holds=False)])
    assert list(f.columns)[-1] == "holds" and f.holds.tolist() == [True, False]
    assert "holds" not in results_frame([row]).columns
    with pytest.raises(ValueError, match="holds must be True or False"):
        results_frame([dict(row, holds="yes")])
    with pytest.raises(ValueError, match="missing \\['holds'\\]"):
        results_frame([dict(row, holds=True), row])


def test_exact_lookups_step_at_leaf_edges():
    """First record of a leaf: the previous leaf first; last record: the next leaf after."""
    from bufsim import SpaceSpec, Tablespaces
    from bufsim.live.geometry import LiveGeometry, LiveIndex
    from bufsim.live.workload import exact_lookup_pages

    class _T:                                   # the parts of LiveTable the lookup uses
        name, space_id, n_pages = "t", 9, 64

        def space_spec(self):
            return SpaceSpec(9, 64, "t")

    ix = LiveIndex("PRIMARY", 1, 3, (np.array([10, 11, 12]), np.array([3])),
                   (np.array([4, 4, 4]), np.array([3])))
    t = _T()
    t.clustered = ix
    geo = LiveGeometry.__new__(LiveGeometry)
    geo.tables = {"t": t}
    geo.tablespaces = Tablespaces([t.space_spec()])
    geo._base = {"t": 0}
    assert exact_lookup_pages(geo, "t", [0]).tolist() == [3, 10]            # first of leaf 0
    assert exact_lookup_pages(geo, "t", [3]).tolist() == [3, 10, 11]        # last of leaf 0
    assert exact_lookup_pages(geo, "t", [4]).tolist() == [3, 10, 11]        # first of leaf 1
    assert exact_lookup_pages(geo, "t", [5]).tolist() == [3, 11]
    assert exact_lookup_pages(geo, "t", [11]).tolist() == [3, 12]           # last of the last leaf
    from bufsim.live.workload import exact_lookup
    from bufsim.trace import FLAG_DESCENT as D, FLAG_NO_RA as N, FLAG_STEP as S
    pages, kinds = exact_lookup(geo, "t", [3, 4, 5])
    assert pages.tolist() == [3, 10, 11, 3, 10, 11, 3, 11]
    assert kinds.tolist() == [N, D, S, N, D, S, N, D]    # landing leaf a descent's, then steps


def test_the_startup_pool_keeps_the_tables_dense_ids_and_evicts_first():
    """The server's pool after a restart already holds pages (its DATABASE_PAGES before
    the first run); the replay stands for them with a system tablespace appended after
    the tables', read once before the roots.  In a pool that then fills, those pages
    are the first evicted, which ends the warm-up exemption (freed_page_clock > 0)."""
    from bufsim import Trace, mariadb1011
    from bufsim.pages import SpaceSpec, Tablespaces
    ts = Tablespaces([SpaceSpec(5, 600, "t")])
    ts2 = V._with_system_space(ts)
    assert ts2.space_base[0] == 0 and ts2.space_ids[-1] == 0 and ts2.n_pages == 600 + V.SYSTEM_PAGES
    boot = V._startup_trace(ts2, 277)
    scan = V._rebase(Trace.from_arrays(np.arange(500), count=3, cpu_ns=1000, tablespaces=ts), ts2)
    cfg = mariadb1011(pool_pages=630, lru_scan_depth=100, device="ssd")
    alone = V._totals([scan, scan], cfg)
    booted = V._totals([boot, scan, scan], cfg)
    # alone: 512 pages read (the area past page 500 by read-ahead), nothing evicted, so
    # the pool never leaves warm-up and the second scan checks nothing
    assert (alone["NUMBER_PAGES_READ"], alone["evictions"]) == (512, 0)
    assert alone["PAGES_NOT_MADE_YOUNG"] == 0
    # booted: the startup pages fill the pool, evictions start, the second scan re-reads
    # and its re-accesses within old_blocks_time are counted
    assert booted["evictions"] > 277 and booted["NUMBER_PAGES_READ"] > 512 + 277
    assert booted["PAGES_NOT_MADE_YOUNG"] > 0


def test_the_startup_pages_created_by_the_server_are_dirty_temporary_pages():
    """The last ``created`` startup pages carry FLAG_MODIFY | FLAG_TEMP (the server's pages
    created at startup, its temporary tablespace, are dirty): the LRU batch that reaches
    them writes them instead of evicting them, and frees them when the writes complete,
    after its stop test (MariaDB 10.11 buf_page_write_complete), so the batch leaves
    the free list that many blocks past where it stopped."""
    from bufsim import Trace, mariadb1011
    from bufsim.engine import replay
    from bufsim.pages import SpaceSpec, Tablespaces
    from bufsim.trace import FLAG_MODIFY, FLAG_TEMP, Chunk
    ts = V._with_system_space(Tablespaces([SpaceSpec(5, 600, "t")]))
    boot = V._startup_trace(ts, 280, 131)
    flags = np.concatenate([c.flags for c in boot])
    assert (flags[:149] == 0).all() and (flags[149:] == FLAG_MODIFY | FLAG_TEMP).all()
    with pytest.raises(ValueError, match="created=281 is out of range"):
        V._startup_trace(ts, 280, 281)
    # the same pages dirty but persistent (FLAG_MODIFY alone): written, kept in the LRU
    persistent = Trace(Chunk.from_arrays(np.concatenate([c.page for c in boot]), 1, 0, 0,
                                         (flags & FLAG_MODIFY).astype(np.uint8)), ts, "boot")
    scan = V._rebase(Trace.from_arrays(np.arange(300), count=3, cpu_ns=1000,
                                       tablespaces=Tablespaces([SpaceSpec(5, 600, "t")])), ts)
    # a 20 MiB pool at the default lru_scan_depth (1536, more than the pool): the first
    # refill writes the dirty pages and evicts scanned pages in their place, so the second
    # scan reads again (300 pages twice: 600 reads with clean startup pages)
    cfg = mariadb1011(pool_pages=1265, lru_scan_depth=1536, device="ssd")
    clean = V._totals([V._startup_trace(ts, 280), scan, scan], cfg)
    kept = V._totals([persistent, scan, scan], cfg)
    freed = V._totals([boot, scan, scan], cfg)
    assert (clean["NUMBER_PAGES_WRITTEN"], kept["NUMBER_PAGES_WRITTEN"],
            freed["NUMBER_PAGES_WRITTEN"]) == (0, 131, 131)
    assert clean["NUMBER_PAGES_READ"] < kept["NUMBER_PAGES_READ"]
    # the temporary pages leave the pool when their writes complete: 131 more evictions,
    # and after one scan the LRU is 131 pages shorter than with persistent pages
    assert freed["evictions"] == kept["evictions"] + 131
    lru = [int(replay(Trace.concat([b, scan]), cfg).stats["DATABASE_PAGES"].sum())
           for b in (persistent, boot)]
    assert lru[1] == lru[0] - 131


def _grid_rows(settings, plans, counts):
    """A run_grid-like frame: one cold row per setting, plan and counter; ``counts`` gives
    the server's count of (label, plan, metric), the replay's is 100 everywhere."""
    rows = []
    for st in settings:
        for plan in plans:
            for metric in ("NUMBER_PAGES_READ", "PAGES_NOT_MADE_YOUNG"):
                real = float(counts(st.label, plan, metric))
                rows.append(dict(config=st.label, plan=plan, phase="cold", metric=metric,
                                 reported=real, simulated=100.0,
                                 holds=T.holds(metric, real, 100.0), pool_pages=630,
                                 server_ms=float("nan")))
    return pd.DataFrame(rows)


def test_recheck_misses_runs_again_only_the_runs_with_a_missing_row(monkeypatch):
    a, b = V.Setting("10M", 37, 1000, True, 100), V.Setting("20M", 95, 1000, True, None)
    # the grid's run: the star of b misses its not made young (300 against the replay's 100)
    grid = _grid_rows((a, b), ("scan", "star"),
                      lambda c, p, m: 300 if (c, p, m) == (b.label, "star", "PAGES_NOT_MADE_YOUNG")
                      else 100)
    calls = []
    reruns = iter([400, 120, 500])     # the server's count in each rerun of that row

    memos = []

    def fake_run_grid(settings, *, plans, runs, memo, **kwargs):
        calls.append((tuple(s.label for s in settings), plans, sorted(runs), kwargs))
        memos.append(memo)
        return _grid_rows(settings, plans, lambda c, p, m: next(reruns)
                          if m == "PAGES_NOT_MADE_YOUNG" else 100)

    monkeypatch.setattr(V, "run_grid", fake_run_grid)
    out = V.recheck_misses(grid, (a, b), repeats=3, seed=7)
    # round by round, the run with the missing row only, until that row is within the
    # server's spread (after the second rerun: 120); the third rerun is not run
    assert calls == [((b.label,), ("star",), [(b.label, "star")], {"seed": 7})] * 2
    assert memos[0] is memos[1]          # one memo for every round: no replay made twice
    assert len(out) == 1
    row = out.iloc[0]
    assert (row.config, row.plan, row.metric) == (b.label, "star", "PAGES_NOT_MADE_YOUNG")
    assert [row.runs, row.server_min, row.server_median, row.server_max, row.held] == \
        [3, 120, 300, 400, 1]
    assert row.simulated == 100 and row.within_spread       # 100 in [120 - 50, 400 + 40]
    claims = T.recheck_claims(grid, out, 2)
    assert [c["holds"] for c in claims] == [True, True]
    assert claims[0]["claim"].startswith("every row of the grid holds in its run (7 of 8)")
    assert (claims[1]["reported"], claims[1]["server_min"], claims[1]["server_max"]) == \
        (300, 120, 400)
    # reruns that stay above the replay: not within the spread, after every rerun allowed
    reruns = iter([400, 500])
    calls.clear()
    out = V.recheck_misses(grid, (a, b), repeats=2)
    assert out.server_min.tolist() == [300] and not out.within_spread.any()
    assert len(calls) == 2 and out.runs.tolist() == [3]
    assert [c["holds"] for c in T.recheck_claims(grid, out, 2)] == [False, False]
    # no row misses: nothing runs again, and no row comes back
    calls.clear()
    ok = grid.assign(holds=True)
    out = V.recheck_misses(ok, (a, b), repeats=2)
    assert calls == [] and out.empty and "within_spread" in out.columns


def test_recheck_misses_runs_a_rounds_runs_in_one_call_and_no_other(monkeypatch):
    """Two runs of different settings and plans miss: each round is one run_grid call that
    runs those two (setting, plan) pairs, not every plan of both settings."""
    a, b = V.Setting("10M", 37, 1000, True, 100), V.Setting("20M", 95, 1000, True, None)
    miss = {(a.label, "scan"), (b.label, "star")}
    grid = _grid_rows((a, b), ("scan", "star"), lambda c, p, m: 300
                      if (c, p) in miss and m == "PAGES_NOT_MADE_YOUNG" else 100)
    calls, given = [], {}

    def fake_run_grid(settings, *, plans, runs, memo, **kwargs):
        calls.append((tuple(s.label for s in settings), tuple(plans), sorted(runs)))
        assert memo is given
        rows = _grid_rows(settings, plans, lambda c, p, m: 300 if m == "PAGES_NOT_MADE_YOUNG" else 100)
        keep = [(c, p) in set(runs) for c, p in zip(rows.config, rows.plan)]
        return rows[keep]

    monkeypatch.setattr(V, "run_grid", fake_run_grid)
    out = V.recheck_misses(grid, (a, b), repeats=2, memo=given)
    assert calls == [((a.label, b.label), ("scan", "star"), sorted(miss))] * 2
    assert out.runs.tolist() == [3, 3] and not out.within_spread.any()


def test_recheck_misses_refuses_bad_arguments_before_running():
    grid = _grid_rows((V.Setting(),), ("scan",), lambda c, p, m: 0)
    with pytest.raises(ValueError, match="repeats.*1..100"):
        V.recheck_misses(grid, (V.Setting(),), repeats=0)
    with pytest.raises(ValueError, match="not in settings"):
        V.recheck_misses(grid, (V.Setting("20M"),))
    grid = grid.assign(holds=False)         # one server run holds missing rows
    assert T.missing_runs(grid).values.tolist() == [[V.Setting().label, "scan"]]
    with pytest.raises(ValueError, match="2 server runs hold a row that misses; limit=1"):
        V.recheck_misses(pd.concat([grid, grid.assign(plan="star")]), (V.Setting(),), limit=1)


def test_a_socket_connection_builds_no_tls_context(monkeypatch):
    """PyMySQL >= 1.2 builds a TLS context at each connect unless told not to (22 ms of
    CPU: twice per run of notebook 07's grid); on a unix socket bufsim asks for none,
    over loopback TCP it keeps PyMySQL's default."""
    pymysql = pytest.importorskip("pymysql")
    from bufsim.live import client

    seen = []

    def fake_connect(**kw):
        seen.append(kw)
        raise pymysql.err.OperationalError(2002, "no server here")

    monkeypatch.setattr(pymysql, "connect", fake_connect)
    for where in (dict(socket="/nonexistent/mysqld.sock"), dict(host="127.0.0.1")):
        with pytest.raises(client.LiveError, match="no MySQL/MariaDB server answers"):
            client.connect(**where)
    assert seen[0]["unix_socket"] == "/nonexistent/mysqld.sock" and seen[0]["ssl_disabled"] is True
    assert "ssl_disabled" not in seen[1]


def _fake_rows(settings, plans, gauges, reported=0.0):
    """run_grid's rows for ``settings`` (in order), each run's counts ``reported``."""
    metrics = T.COMPARED + (T.GAUGES_COMPARED if gauges else ())
    return pd.DataFrame([dict(config=s.label, plan=p, phase=ph, metric=m, reported=reported,
                              simulated=1.0, holds=True, pool_pages=640, server_ms=float("nan"))
                         for s in settings for p in plans for ph in ("cold", "warm")
                         for m in metrics])


def test_repeat_runs_take_the_grids_run_of_a_setting_as_its_first(monkeypatch):
    """A setting the grid ran (every plan asked for, the gauges with gauges=True) runs
    repeats - 1 more times, its grid run numbered 0; the others run repeats times, the
    settings alternating as without ``first``."""
    a, b, c = V.Setting("20M", 95, 1000, True, None), V.Setting("6M", 5, 1000, True, 1024), \
        V.Setting("10M", 37, 0, False, 100)
    plans = ("scan", "star")
    calls = []

    def fake_grid(settings, **kwargs):
        calls.append((tuple(settings), kwargs))
        return _fake_rows(settings, kwargs["plans"], kwargs.get("gauges", False), 7.0)

    monkeypatch.setattr(V, "run_grid", fake_grid)
    grid = pd.concat([_fake_rows([a], V.PLANS, True), _fake_rows([c], ("scan",), True)])
    grid = grid.assign(ratio=1.0, why="holds")                 # columns the notebook adds
    out = V.repeat_runs((a, b, c), 3, first=grid, plans=plans, gauges=True, seed=0)
    # a: run 0 from the grid; b: not in it; c: the grid ran the scan only, so not taken
    assert calls == [((a, b, c, a, b, c, b, c), dict(plans=plans, gauges=True, seed=0))]
    assert list(out.columns) == list(_fake_rows([a], plans, True).columns) + ["repeat"]
    runs = out.groupby("config").repeat.max() + 1
    assert runs.to_dict() == {a.label: 3, b.label: 3, c.label: 3}
    first_a = out[(out.config == a.label) & (out.repeat == 0)]
    assert (first_a.reported == 0.0).all() and set(first_a.plan) == set(plans)
    assert len(first_a) == 2 * 2 * 6 and (out[out.repeat > 0].reported == 7.0).all()
    # without the gauges in the grid's rows a gauges=True check takes nothing from it
    calls.clear()
    V.repeat_runs((a,), 2, first=grid[grid.metric.isin(T.COMPARED)], plans=plans, gauges=True)
    assert calls[0][0] == (a, a)
    # one run each, all in the grid: no server run at all
    calls.clear()
    out = V.repeat_runs((a,), 1, first=grid, plans=plans)
    assert not calls and len(out) == 2 * 2 * 4 and (out.repeat == 0).all()
    with pytest.raises(ValueError, match="first lacks"):
        V.repeat_runs((a,), 2, first=grid.drop(columns="server_ms"), plans=plans)


def test_wait_exit_reaps_a_process_that_exits_and_times_out_on_one_that_does_not():
    import subprocess
    import sys
    from bufsim.live.server import _wait_exit
    quick = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(3)"])
    _wait_exit(quick, 30)
    assert quick.returncode == 3
    _wait_exit(quick, 30)                      # already reaped: returns at once
    slow = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            _wait_exit(slow, 0.05)
        assert slow.poll() is None
    finally:
        slow.kill()
        slow.wait()
