"""The SQL -> trace compiler against a private MariaDB server (marker ``live``).

Per statement, the compiled trace's counted page gets equal the server's
``Innodb_buffer_pool_read_requests`` delta: a sysbench-like OLTP template mix
(data/live/oltp.toml) and star-schema queries over bufsim.live.workload's tables.
"""
import pytest

from tests._live import require_server
from bufsim.cli import main
from bufsim.live import MariaDBServer
from bufsim.live import compile_validation as CV
from bufsim.live import workload as W
from bufsim.live.compile import Compiler
from bufsim.live.compile_workload import check_against_server, read_workload
from bufsim.trace import FLAG_RELATCH, Trace

from .test_compile_plan import OLTP

pytestmark = [pytest.mark.live, pytest.mark.timeout(600)]

SMALL = CV.QUICK_SCALE

#: star-schema statements: the ones notebook 09 checks, and a block join the compiler reports
STAR = [*CV.STAR,
        ("block join", "SELECT COUNT(*) FROM dates STRAIGHT_JOIN sbtest ON sbtest.c = dates.d_pad")]


@pytest.fixture(scope="module")
def server():
    require_server()
    srv = MariaDBServer({"innodb_buffer_pool_size": "32M"}).start()
    try:
        with srv.connect() as conn:
            W.load(conn, W.generate(SMALL, seed=5))
        yield srv
    finally:
        srv.close()


def test_cli_writes_the_trace_and_only_reads_the_server(server, tmp_path):
    out, rep = tmp_path / "oltp.parquet", tmp_path / "statements.csv"
    with server.connect() as conn:
        before = conn.query(f"CHECKSUM TABLE `{W.SCHEMA}`.sbtest")
    code = main(["live", "trace", "--socket", server.socket, "--schema", W.SCHEMA,
                 "--workload", str(OLTP), "-o", str(out), "--report", str(rep), "--no-progress"])
    assert code == 0
    with server.connect() as conn:
        assert conn.query(f"CHECKSUM TABLE `{W.SCHEMA}`.sbtest") == before   # UPDATEs not run
    import pandas as pd
    report = pd.read_csv(rep, keep_default_na=False)
    assert len(report) == 2 * 60 and set(report.stream) == {0, 1}
    bad = report[report.unsupported != ""]
    assert set(bad.template) == {"order_range"}                   # filesort, one line each
    assert all("read_sorted_file: filesort" in u for u in bad.unsupported)
    trace = Trace.load(out)
    counted = sum(int(c.count[(c.flags & FLAG_RELATCH) == 0].sum()) for c in trace)
    assert counted == report.gets.sum() > 0


def test_star_queries_page_gets_equal_the_servers(server):
    with server.connect() as conn:
        comp = Compiler(conn, W.SCHEMA)
        rows = []
        for name, sql in STAR:
            cs = comp.compile(sql)
            conn.query(sql)
            b = conn.status()["Innodb_buffer_pool_read_requests"]
            conn.query(sql)
            a = conn.status()["Innodb_buffer_pool_read_requests"]
            rows.append((name, cs.gets if cs.ok else None, a - b, cs.unsupported))
    got = {n: (c, s) for n, c, s, _ in rows}
    reasons = {n: u for n, _, _, u in rows if u}
    # GROUP BY sorts the joined rows in a temporary table (no InnoDB page): compiled, exact
    assert set(reasons) == {"block join"}, reasons
    assert "block nested loop" in reasons["block join"] or "BNL" in reasons["block join"]
    for name, (compiled, server_gets) in got.items():
        if name not in reasons:
            assert compiled == server_gets, (name, compiled, server_gets)
    assert got["full scan"][1] > 100 and got["q1.1 scan join"][1] > got["full scan"][1]


def test_oltp_mix_page_gets_equal_the_servers(server):
    w = read_workload(OLTP, statements=40)
    stmts = [s for thread in w.draw() for s in thread]
    with server.connect() as conn:
        df = check_against_server(conn, W.SCHEMA, stmts)
    ok = df[df.unsupported == ""]
    reads = ok[ok.sql.str.upper().str.startswith("SELECT")]
    writes = ok[~ok.sql.str.upper().str.startswith("SELECT")]
    assert len(reads) > 40 and len(writes) > 5
    # reads: exact, statement by statement
    assert (reads.compiled == reads.server).all(), reads[reads.compiled != reads.server]
    # writes: exact but while the server creates pages (a new undo segment or undo page,
    # a page split: Innodb_pages_created moves; not modelled), which only adds gets
    # and now and then by a few hundred gets with no page created (not yet explained: one
    # of 23 non-index updates in one run of notebook 09, none in others)
    assert (reads.created == 0).all()
    still = writes[writes.created == 0]
    assert len(still) > 5 and (still.compiled == still.server).mean() >= 0.9, still
    assert (writes.server >= writes.compiled).all(), writes


def test_cli_compiles_the_servers_statement_history(server, tmp_path):
    history = {"performance_schema": "ON",
               "performance_schema_consumer_events_statements_current": "ON",
               "performance_schema_consumer_events_statements_history_long": "ON"}
    server.restart(**history)
    try:
        run = ["SELECT c FROM sbtest WHERE id = 17", "SELECT SUM(k) FROM sbtest WHERE id "
               "BETWEEN 10 AND 80", "SELECT d_year FROM dates WHERE d_datekey = 19940203"]
        other = ["SELECT c FROM sbtest WHERE id = 18"]
        with server.connect(database=W.SCHEMA) as a, server.connect(database=W.SCHEMA) as b:
            for sql in run:
                a.query(sql)
            for sql in other:
                b.query(sql)
        out, rep = tmp_path / "history.parquet", tmp_path / "history.csv"
        assert main(["live", "trace", "--socket", server.socket, "--schema", W.SCHEMA,
                     "--from-history", "-o", str(out), "--report", str(rep),
                     "--no-progress"]) == 0
        import pandas as pd
        report = pd.read_csv(rep, keep_default_na=False)
        by_stream = report.groupby("stream").sql.apply(list).tolist()
        assert sorted(by_stream) == sorted([run, other])          # one stream per thread
        with server.connect(database=W.SCHEMA) as conn:
            comp = Compiler(conn, W.SCHEMA)
            assert report.gets.tolist() == [comp.compile(s).gets for s in report.sql]
    finally:
        server.restart(performance_schema="OFF",
                       performance_schema_consumer_events_statements_current="OFF",
                       performance_schema_consumer_events_statements_history_long="OFF")
    assert main(["live", "trace", "--socket", server.socket, "--schema", W.SCHEMA,
                 "--from-history", "-o", str(tmp_path / "none.parquet")]) == 1
