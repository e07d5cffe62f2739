"""The live tier against a private MariaDB server (marker ``live``).

Each test starts its own ``mariadbd`` on a unix socket in a temporary directory
(networking off) and stops it by its pid.  Skipped with the reason where no server
can be started; in CI (``BUFSIM_REQUIRE_LIVE=1``) they fail instead.
"""
import os
import signal
import time

import numpy as np
import pandas as pd
import pytest

from tests._live import require_server
from bufsim import pages_from_bytes
from bufsim.live import DEFAULT_SETTINGS, TIMING_SETTINGS as TIMING, LiveError, MariaDBServer, connect, delta
from bufsim.live import tolerance as T
from bufsim.live import validation as V
from bufsim.live import workload as W

pytestmark = [pytest.mark.live, pytest.mark.timeout(600)]

SMALL = W.Scale(orders=8_000, sbtest_rows=8_000, point_selects=150, krange_rows=300)


@pytest.fixture(scope="module")
def server():
    require_server()
    srv = MariaDBServer({"innodb_buffer_pool_size": "10M"}).start()
    try:
        yield srv
    finally:
        srv.close()


@pytest.fixture(scope="module")
def loaded(server):
    conn = server.connect()
    data = W.generate(SMALL, seed=3)
    W.load(conn, data)
    geo = conn.geometry(W.SCHEMA)
    conn.close()
    return data, geo


def test_settings_pool_size_is_the_servers(server):
    with server.connect() as conn:
        s = conn.settings()
        frame = conn.pool_stats()
    assert (s.pool_pages, s.instances) == (int(frame.POOL_SIZE.sum()), len(frame))
    assert s.is_mariadb and s.version.startswith("10.11")
    assert s.buffer_pool_size == 10 * 2**20
    assert s.pool_pages == pages_from_bytes("10M", "mariadb10.11") == 630
    assert s.flush_method == "O_DIRECT" and not s.adaptive_hash_index
    assert s.lru_scan_depth == 1536 and s.page_size == 16384


def _as_shown(value) -> str:
    """A DEFAULT_SETTINGS value as SHOW VARIABLES prints it (sizes in bytes)."""
    v = str(value)
    mult = {"K": 2**10, "M": 2**20, "G": 2**30}
    return str(int(v[:-1]) * mult[v[-1]]) if v[-1:] in mult and v[:-1].isdigit() else v


def test_default_settings_are_the_servers(server):
    """Every DEFAULT_SETTINGS entry is what the started server reports (SHOW VARIABLES):
    a name the server does not know, or a value it rounds or ignores, fails here."""
    with server.connect() as conn:
        shown = {k.lower(): v for k, v in conn.query("SHOW GLOBAL VARIABLES")}
    assert {k: shown.get(k) for k in DEFAULT_SETTINGS} == \
        {k: _as_shown(v) for k, v in DEFAULT_SETTINGS.items()}
    assert shown["aria_pagecache_buffer_size"] == "1048576"
    assert shown["key_buffer_size"] == "65536" and shown["innodb_log_buffer_size"] == "2097152"


_OFF_PATH = ("Key_read_requests", "Key_write_requests", "Aria_pagecache_read_requests",
             "Aria_pagecache_write_requests", "Created_tmp_disk_tables", "Innodb_log_waits")


def test_the_plans_touch_no_cache_that_default_settings_shrink(server, loaded):
    """The small Aria page cache, MyISAM key cache and InnoDB log buffer of DEFAULT_SETTINGS
    are off the runs' path: from a restart (the tables opened as a run opens them) through
    every plan cold and warm, no key-cache or Aria page-cache request, no temporary table
    on disk, no wait for log-buffer space; and no system table is MyISAM."""
    data, geo = loaded
    plans = W.plans(geo, data, SMALL, seed=3)
    server.restart()
    with server.connect(multi_statements=True) as conn:
        assert conn.query("SELECT COUNT(*) FROM information_schema.TABLES "
                          "WHERE ENGINE = 'MyISAM'") == [(0,)]
        for t in ("dates", "lineorder", "sbtest"):
            conn.query(f"SELECT * FROM `{W.SCHEMA}`.`{t}` LIMIT 0")
        where = ", ".join(f"'{n}'" for n in _OFF_PATH)
        read = lambda: dict(conn.query(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({where})"))
        before = read()
        gets = conn.counters()["NUMBER_PAGES_GET"]
        for plan in plans.values():
            plan.run(conn)
            plan.run(conn)
        after = read()
        assert conn.counters()["NUMBER_PAGES_GET"] > gets           # the plans did run
    assert sorted(after) == sorted(_OFF_PATH)
    assert {n: int(after[n]) - int(before[n]) for n in _OFF_PATH} == dict.fromkeys(_OFF_PATH, 0)


def test_counters_are_the_sums_of_pool_stats(server, loaded):
    """Connection.counters() reads the two statements without pool_stats()'s frame: the
    same values, index and dtype as the frame's column sums (POOL_ID dropped), after a
    scan has moved the counters off zero."""
    with server.connect() as conn:
        conn.query(f"SELECT SUM(lo_revenue) FROM `{W.SCHEMA}`.lineorder")
        frame = conn.pool_stats()
        fast = conn.counters()
    slow = frame.drop(columns=["POOL_ID"]).sum(numeric_only=True, min_count=1).astype("float64")
    assert fast["NUMBER_PAGES_GET"] > 0 and fast["Innodb_buffer_pool_read_requests"] > 0
    pd.testing.assert_series_equal(fast, slow)


def test_geometry_matches_what_the_server_holds(server, loaded):
    data, geo = loaded
    server.restart(innodb_buffer_pool_size="64M")     # room for the whole table
    with server.connect() as conn:
        conn.query(f"SELECT SUM(lo_revenue) FROM `{W.SCHEMA}`.lineorder IGNORE INDEX (lo_orderdate)")
        t = geo.table("lineorder")
        held = conn.frame("SELECT PAGE_NUMBER, NUMBER_RECORDS FROM "
                          "INFORMATION_SCHEMA.INNODB_BUFFER_PAGE WHERE SPACE = %s AND "
                          "PAGE_TYPE = 'INDEX' AND INDEX_NAME = 'PRIMARY'", (t.space_id,))
    server.restart(innodb_buffer_pool_size="10M")
    # the clustered index read from the file is the one the server scanned into its pool
    assert sorted(held.PAGE_NUMBER.astype(int)) == sorted(t.clustered.pages().tolist())
    recs = dict(zip(held.PAGE_NUMBER.astype(int), held.NUMBER_RECORDS.astype(int)))
    assert [recs[p] for p in t.clustered.leaves] == t.clustered.leaf_recs.tolist()
    for table, frame in data.items():
        t = geo.table(table)
        assert t.clustered.rows == len(frame)               # every leaf record is a row
        # the size is the server's (FSP_SIZE), past the last index page
        assert t.n_pages >= t.clustered.pages().max() + 1
        assert geo.tablespaces.sizes[geo.tablespaces.space_index(t.space_id)] == t.n_pages
    k = geo.table("sbtest").index("k_1")
    assert k.rows == len(data["sbtest"])
    # root-to-leaf paths: start at the root, end at the leaf, one page per level
    ix = geo.table("lineorder").clustered
    paths = ix._paths()
    assert (paths[:, 0] == ix.root).all() and np.array_equal(paths[:, -1], ix.leaves)


def test_page_gets_of_the_model_match_the_server(server, loaded):
    data, geo = loaded
    plans = W.plans(geo, data, SMALL, seed=3)
    server.restart()
    with server.connect() as conn:
        for t in ("dates", "lineorder", "sbtest"):
            conn.query(f"SELECT * FROM `{W.SCHEMA}`.`{t}` LIMIT 0")
        for name in ("scan", "star", "point", "krange"):
            plans[name].run(conn)                           # cold
            before = conn.counters()
            plans[name].run(conn)                           # warm: gets only
            d = delta(before, conn.counters())
            model = W.counted_gets(plans[name].trace(geo))
            # exact, the k range's records-in-range dive included (root, the two border
            # leaves and the leaves between them)
            assert d["NUMBER_PAGES_GET"] == model, (name, d["NUMBER_PAGES_GET"], model)


def test_quick_grid_row_replays_a_run(server, loaded):
    frame = V.run_grid((V.Setting("10M", 37, 0, False, 100),), scale=SMALL, seed=3,
                       plans=("scan", "point"), server=server)
    assert len(frame) == 2 * 2 * len(T.COMPARED)
    assert (frame["pool_pages"] == 630).all()
    gets = frame[frame.metric == "NUMBER_PAGES_GET"]
    assert gets["holds"].all(), gets
    # read-ahead off, a cold pool: the scan reads its pages once, as the replay does
    cold = frame[(frame.plan == "scan") & (frame.phase == "cold")
                 & (frame.metric == "NUMBER_PAGES_READ")].iloc[0]
    assert cold.reported > 0 and cold.holds, cold
    rows = V.results_rows(frame)
    assert {r["fitted"] for r in rows} == {False} and all(isinstance(r["holds"], bool) for r in rows)


def test_bad_socket_names_it(tmp_path):
    require_server()
    path = tmp_path / "no-such.sock"
    with pytest.raises(LiveError, match=f"socket {path}"):
        connect(socket=str(path))
    with pytest.raises(ValueError, match="not a loopback address"):
        connect(host="10.0.0.1")


def test_missing_privilege_is_named(server):
    with server.connect() as conn:
        conn.execute("DROP USER IF EXISTS 'weak'@'localhost'")
        conn.execute("CREATE USER 'weak'@'localhost' IDENTIFIED BY 'pw'")
    with connect(socket=server.socket, user="weak", password="pw", server=server) as weak:
        with pytest.raises(LiveError, match="PROCESS"):
            weak.pool_stats()
    with pytest.raises(LiveError, match="access denied"):
        connect(socket=server.socket, user="weak", password="wrong")


def test_server_that_dies_mid_run_is_named_and_leaves_nothing():
    require_server()
    srv = MariaDBServer({"innodb_buffer_pool_size": "6M"}).start()
    pid, tmp = srv.pid, srv.tmpdir
    try:
        conn = srv.connect()
        os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            if srv.proc.poll() is not None:
                break
            time.sleep(0.05)
        with pytest.raises(LiveError, match=rf"mariadbd \(pid {pid}\) was killed by signal 9"):
            conn.counters()
    finally:
        srv.close()
    assert not tmp.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_server_that_cannot_start_says_why_and_leaves_nothing():
    require_server()
    srv = MariaDBServer({"innodb_buffer_pool_size": "5M"})   # below 10.11's 6 MiB minimum
    with pytest.raises(LiveError, match="requires innodb_buffer_pool_size >= 6 MiB"):
        srv.start()
    assert srv.tmpdir is None and srv.proc.poll() is not None


def test_stop_and_restart_use_the_same_datadir(server):
    datadir = server.datadir
    server.restart(innodb_old_blocks_pct=5)
    with server.connect() as conn:
        assert conn.settings().old_blocks_pct == 5
        assert conn.query("SELECT COUNT(*) FROM bufsim_live.dates")[0][0] > 0
    assert server.datadir == datadir
    server.restart(innodb_old_blocks_pct=37)


def test_relatches_are_one_per_nine_rows_as_on_the_server():
    """A scan's not-made-young count is one per make-young check of an old page; in a
    20 MiB pool at old_blocks_pct=95 nearly every check is of an old page, so the count
    follows the number of cursor re-latches: one per handler call, 9 rows per call after
    the first 4 (row0sel.cc: the call's first row goes to the caller's buffer, 8 more to
    the fetch cache).  With 8 rows per call the replay counted 12 % more than the server."""
    require_server()
    setting = V.Setting("20M", 95, 1000, True, 100)
    with MariaDBServer(setting.server_settings()) as srv:
        frame = V.run_grid((setting,), scale=W.QUICK, seed=0, plans=("scan",), server=srv)
    nmy = frame[frame.metric == "PAGES_NOT_MADE_YOUNG"].set_index("phase")
    for phase in ("cold", "warm"):
        real, sim = nmy.loc[phase, "reported"], nmy.loc[phase, "simulated"]
        assert real > 1000, nmy                      # the checks are counted at all
        assert abs(sim - real) <= 0.02 * real, nmy   # 12 % off with 8 rows per call


def test_range_relatches_are_one_per_eight_rows_under_icp_as_on_the_server():
    """The k range runs under index condition pushdown ("Using index condition"): a handler
    call reads 8 rows (row_search_mvcc enqueues every row when prebuilt->idx_cond), and each
    later call re-latches the k_1 leaf of its stored cursor; the optimiser's
    records-in-range dive reads the range's k_1 leaves at the statement's start.  At
    old_blocks_pct=95 in a 10 MiB pool nearly every check is of an old page: without the
    re-latches the replay counted 4 % fewer than the server (13,565 against 14,155).

    The server's count does not always repeat: one run in five of this setting counted
    6,053 (notebook 07's recheck, 2026-11-28) and a fresh-clone CI run 12,975, where the
    cleaner's batch left the pool without an old sublist for part of the run.  So, as for
    every live row, the replay must be within the server's spread: a run that misses the
    2 % band runs twice more, and the replay must then lie within 2 % of the range of the
    three runs."""
    require_server()
    setting = V.Setting("10M", 95, 1000, False, 100)
    with MariaDBServer(setting.server_settings()) as srv:
        frame = V.run_grid((setting,), scale=W.FULL, seed=0, plans=("krange",), server=srv)
        with srv.connect() as conn:
            plan = conn.frame(f"EXPLAIN SELECT SUM(LENGTH(c)) FROM `{W.SCHEMA}`.sbtest "
                              "FORCE INDEX (k_1) WHERE k BETWEEN 1 AND 1000")
        assert "Using index condition" in plan.Extra.iloc[0], plan

        def not_made_young(f):
            return f[f.metric == "PAGES_NOT_MADE_YOUNG"]
        nmy = not_made_young(frame)
        assert (nmy.reported > 10000).all(), nmy     # the checks are counted at all
        if ((nmy.simulated - nmy.reported).abs() > 0.02 * nmy.reported).any():
            again = V.run_grid((setting, setting), scale=W.FULL, seed=0, plans=("krange",),
                               server=srv, load=False)
            nmy = pd.concat([nmy, not_made_young(again)])
    for phase, runs in nmy.groupby("phase"):
        sim = runs.simulated.iloc[0]               # 4 % off without the re-latches
        assert 0.98 * runs.reported.min() <= sim <= 1.02 * runs.reported.max(), nmy


def test_server_timer_measures_each_run(server, loaded):
    """run_grid(timing=True): the server's own statement time of each run (performance_schema);
    without performance_schema, statement_ns says it is off."""
    with server.connect() as conn:
        with pytest.raises(LiveError, match="performance_schema is off"):
            conn.statement_ns()
    server.restart(**TIMING)
    try:
        frame = V.run_grid((V.Setting("10M", 37, 1000, False, 100),), scale=SMALL, seed=3,
                           plans=("scan", "point"), server=server, timing=True)
        with server.connect() as conn:
            a = conn.statement_ns()
            conn.query(f"SELECT SUM(lo_revenue) FROM `{W.SCHEMA}`.lineorder")
            b = conn.statement_ns()
    finally:
        server.restart(performance_schema="OFF")
    per_run = frame.groupby(["plan", "phase"]).server_ms.first()
    assert (per_run > 0).all() and (per_run < 60_000).all(), per_run
    assert b > a


def test_a_batch_runs_every_statement_as_one_by_one_does(server, loaded):
    """Plan statements sent as one batch (multi_statements) are the same statements:
    the same page gets as one round trip each, and the last one's rows."""
    data, geo = loaded
    plan = W.plans(geo, data, SMALL, seed=3)["point"]
    gets = []
    for multi in (False, True):
        with server.connect(multi_statements=multi) as conn:
            assert conn.multi_statements is multi
            plan.run(conn)                                  # warm the pool: gets only below
            before = conn.counters()
            rows = plan.run(conn)
            gets.append(delta(before, conn.counters())["NUMBER_PAGES_GET"])
            assert rows == conn.query(plan.statements[-1])
    assert gets[0] == gets[1] == W.counted_gets(plan.trace(geo)), gets
    with server.connect(multi_statements=True) as conn:
        # batches of 7 (150 statements: 21 full batches and one of 3): one round trip
        # each, the same page gets, the last statement's rows
        sent = []
        cursor = conn._conn.cursor

        def counting_cursor(*a, **k):
            cur = cursor(*a, **k)
            execute = cur.execute
            cur.execute = lambda sql, args=None: (sent.append(sql.count(";") + 1), execute(sql, args))[1]
            return cur

        before = conn.counters()
        conn._conn.cursor = counting_cursor
        rows = conn.query_many(plan.statements, batch=7)
        conn._conn.cursor = cursor
        assert sent == [7] * 21 + [3]
        assert delta(before, conn.counters())["NUMBER_PAGES_GET"] == gets[0]
        assert rows == conn.query(plan.statements[-1])
        for bad in (0, -1, 2.5, True):
            with pytest.raises(ValueError, match="batch=.* allowed: an int >= 1"):
                conn.query_many(plan.statements, batch=bad)
    with server.connect(multi_statements=True) as conn:
        with pytest.raises(LiveError, match="running the batch test"):
            conn.query_many(["SELECT 1", "SELECT * FROM no_such_table", "SELECT 2"],
                            doing="running the batch test")
        assert conn.query("SELECT 3") == [(3,)]           # the connection is usable after it


def test_a_clone_runs_the_same_tables_in_its_own_directory(server, loaded):
    with pytest.raises(LiveError, match="stop\\(\\) it first"):
        server.clone()
    server.stop()
    try:
        twin = server.clone(innodb_old_blocks_pct=5)
    finally:
        server.start()
    try:
        assert twin.tmpdir != server.tmpdir and twin.socket != server.socket
        with twin.start().connect() as conn:
            assert conn.settings().old_blocks_pct == 5
            n = conn.query(f"SELECT COUNT(*) FROM `{W.SCHEMA}`.sbtest")[0][0]
        with server.connect() as conn:                        # both run side by side
            assert conn.query(f"SELECT COUNT(*) FROM `{W.SCHEMA}`.sbtest")[0][0] == n > 0
    finally:
        tmp = twin.tmpdir
        twin.close()
    assert not tmp.exists() and server.datadir.exists()


def test_two_workers_give_every_row_in_grid_order(server, loaded):
    """run_grid(workers=2): two servers take the runs in turn; the frame has every row, in
    the order of the settings then the plans, and the given server is left running."""
    settings = (V.Setting("10M", 37, 0, False, 100), V.Setting("6M", 5, 1000, True, None))
    frame = V.run_grid(settings, scale=SMALL, seed=3, plans=("point", "scan"), server=server,
                       load=False, workers=2, gauges=True)
    per_run = len(T.COMPARED) + len(T.GAUGES_COMPARED)
    assert len(frame) == 2 * 2 * 2 * per_run
    keys = frame[["config", "plan"]].drop_duplicates().apply(tuple, axis=1).tolist()
    assert keys == [(s.label, p) for s in settings for p in ("point", "scan")]
    gets = frame[frame.metric == "NUMBER_PAGES_GET"]
    assert gets["holds"].all(), gets
    lru = frame[frame.metric == "DATABASE_PAGES"]
    assert (lru.reported > 0).all() and (lru.reported <= lru.pool_pages).all(), lru
    with server.connect() as conn:
        assert conn.query("SELECT 1") == [(1,)]


def test_runs_and_a_shared_memo_run_only_the_pairs_asked_and_replay_as_alone(server, loaded):
    """run_grid(runs=...) runs only the (setting, plan) pairs given, in grid order; a memo
    kept across calls keeps each plan's trace (the rows a memo gives are those of a replay
    alone: test_the_replay_memo_gives_each_run_the_rows_of_its_own_replay), and refuses
    the tables of another seed, or pairs outside settings x plans, before any run."""
    settings = (V.Setting("10M", 37, 0, False, 100), V.Setting("6M", 5, 1000, True, None))
    kw = dict(scale=SMALL, seed=3, server=server, load=False)
    memo = {}
    first = V.run_grid(settings[:1], plans=("point",), memo=memo, **kw)
    frame = V.run_grid(settings, plans=("point", "scan"), memo=memo, **kw,
                       runs=[(settings[1], "scan"), (settings[0].label, "point")])
    keys = frame[["config", "plan"]].drop_duplicates().apply(tuple, axis=1).tolist()
    assert keys == [(settings[0].label, "point"), (settings[1].label, "scan")]
    assert frame[frame.metric == "NUMBER_PAGES_GET"].holds.all(), frame
    # the point plan's trace made once for both calls, the scan's by the second
    assert "point" in memo and "scan" in memo and memo["context"][:2] == (SMALL, 3)
    pt = frame[frame.plan == "point"].reset_index(drop=True)
    same = pt.pool_pages.equals(first.pool_pages)
    assert same and (pt.metric.tolist(), pt.phase.tolist()) == (first.metric.tolist(), first.phase.tolist())
    with pytest.raises(ValueError, match="memo holds the replays of other tables"):
        V.run_grid(settings[:1], plans=("scan",), memo=memo, **dict(kw, seed=4))
    with pytest.raises(ValueError, match=r"runs names \(setting, plan\) pairs"):
        V.run_grid(settings[:1], plans=("scan",), runs=[(settings[1], "scan")], **kw)


def test_standby_runs_start_as_cold_as_a_restart(server, loaded):
    """run_grid(standby=True) restarts the next run's server while this one runs: every run
    still starts on a pool a restart left, so a 1 GiB pool (no eviction) reads the same
    pages in each of three runs, as many as with a restart before each run; a server
    reused without its restart would read nothing in its cold phase."""
    settings = tuple(V.Setting("1G", pct, 0, False, 100) for pct in (5, 37, 95))
    kw = dict(scale=SMALL, seed=3, plans=("scan",), server=server, load=False)
    ahead = V.run_grid(settings, standby=True, **kw)
    inline = V.run_grid(settings[:1], standby=False, **kw)
    for frame in (ahead, inline):
        assert frame.holds[frame.metric.isin(["NUMBER_PAGES_GET", "NUMBER_PAGES_READ"])].all()
    cold = ahead[(ahead.phase == "cold") & (ahead.metric == "NUMBER_PAGES_READ")].reported
    first = inline[(inline.phase == "cold") & (inline.metric == "NUMBER_PAGES_READ")].reported
    assert len(cold) == 3 and cold.nunique() == 1 and cold.iloc[0] == first.iloc[0] > 100


@pytest.fixture(scope="module")
def full_server():
    require_server()
    with V.loaded_server(W.FULL, 0) as srv:
        yield srv


@pytest.mark.slow
def test_standby_runs_count_as_the_loaded_server_does(full_server):
    """At full scale, 1 GiB, pct 95, time 1000 (nothing evicted, the counts repeat to a page
    without a standby): each standby run's scan counts its warm pages not made young within
    issue 16's tolerance of a run without one.  The first scan of a batch has come out
    3-5 % low in 3 of 6 batches (run_grid's docstring), so a bound tighter than the grid's
    own tolerance would not hold."""
    st = V.Setting("1G", 95, 1000, True, 100)
    kw = dict(scale=W.FULL, seed=0, plans=("star", "scan"), server=full_server, load=False)
    ahead = V.run_grid((st,) * 3, standby=True, **kw)
    inline = V.run_grid((st,), standby=False, **kw)
    pick = (lambda f: f[(f.phase == "warm") & (f.metric == "PAGES_NOT_MADE_YOUNG")
                        & (f.plan == "scan")].reported)
    warm, ref = pick(ahead), pick(inline)
    assert ref.iloc[0] > 10_000, ref.tolist()
    assert all(T.holds("PAGES_NOT_MADE_YOUNG", r, ref.iloc[0]) for r in warm), (warm.tolist(), ref.tolist())


def test_the_replay_memo_gives_each_run_the_rows_of_its_own_replay(server, loaded):
    """run_grid keeps each distinct replay's counters (configuration, plan, startup pages)
    for the runs that repeat it: every run's rows are those of a replay made for it alone,
    and runs that started from other pools are replayed again."""
    data, geo = loaded
    with server.connect() as conn:
        info = conn.settings()
    plan = W.plans(geo, data, SMALL, 3)["scan"]
    prep = V._prep_trace(geo, ("dates", "lineorder", "sbtest"))
    st = V.Setting("10M", 37, 0, False, 100)
    zero = pd.Series(0.0, index=list(T.COMPARED) + list(T.GAUGES_COMPARED))
    memo, rows = {}, []
    for resident0, created0 in ((300, 100), (300, 100), (280, 100), (300, 131)):
        run = V._Run(0, "scan", info, resident0, created0, [zero, zero], [np.nan, np.nan])
        shared = V._replay_rows(run, st, plan, geo, prep, "mariadb1011", True, memo, True)
        alone = V._replay_rows(run, st, plan, geo, prep, "mariadb1011", True, {}, True)
        assert shared == alone
        rows.append([r["simulated"] for r in alone])
    assert rows[0] == rows[1] and rows[2] != rows[0]
    assert sum(1 for k in memo if k[0] == "totals") == 3


def test_pool_check_with_a_standby_counts_as_a_restart_before_each_run(server, loaded, monkeypatch):
    """compile_validation.pool_check(standby=True) runs every other run on a copy of the
    data directory, restarted for it while the run before it goes on: in a pool the
    statements fit in (32 MiB, nothing evicted) each run reads and gets the same pages as
    with a restart before every run; ``server`` is left running and the copy removed."""
    import glob
    import tempfile
    from bufsim.live import compile_validation as CV
    dirs = set(glob.glob(os.path.join(tempfile.gettempdir(), "bufsim-mariadb-*")))
    clones, clone = [], MariaDBServer.clone
    monkeypatch.setattr(MariaDBServer, "clone", lambda self, **kw: clones.append(1) or clone(self, **kw))
    kw = dict(statements=10, seed=7, old_blocks_times=(1000, 0), repeats=2)
    with_standby = CV.pool_check(server, ("32M",), standby=True, **kw)
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), "bufsim-mariadb-*"))) <= dirs
    assert len(clones) == 1
    alone = CV.pool_check(server, ("32M",), standby=False, **kw)
    assert len(clones) == 1 and server.proc.poll() is None
    cols = ["pool", "old_blocks_time", "metric", "run", "reported", "simulated"]
    exact = with_standby.metric.isin(["NUMBER_PAGES_READ", "NUMBER_PAGES_GET"])
    assert len(with_standby) == len(alone) == 2 * 2 * 4
    assert with_standby.loc[exact, cols].reset_index(drop=True).equals(
        alone.loc[exact, cols].reset_index(drop=True))
    assert (with_standby.reported[with_standby.metric == "NUMBER_PAGES_READ"] > 0).all()
