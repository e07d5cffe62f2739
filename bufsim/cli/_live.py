"""``bufsim live trace``: a workload of SQL statements compiled into a page-access trace
over a live MariaDB server's geometry."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from ._common import Parser, UsageError, checked_output, int_type, write_frame


def add_live(commands) -> None:
    """The ``live`` subcommand and its actions."""
    lv = commands.add_parser("live", help="work with a live MariaDB server")
    lv_commands = lv.add_subparsers(dest="action", required=True, metavar="ACTION",
                                    parser_class=Parser)
    lt = lv_commands.add_parser(
        "trace", help="compile a workload of SQL statements into a page-access trace",
        description=("Ask a MariaDB 10.11 server for the plan of every statement of a workload "
                     "(EXPLAIN FORMAT=JSON and the optimizer trace), rank its keys in their "
                     "indexes, and write the page gets the server issues for it over the "
                     "B-tree geometry read from the server's files; one stream per client "
                     "thread. The server is only read. Statements whose plan is not modelled "
                     "(filesort, temporary tables, subqueries, ...) are reported, one line "
                     "each, and left out. The password, if any, is read from "
                     "BUFSIM_LIVE_PASSWORD."))
    lt.add_argument("--socket", metavar="PATH", help="the server's unix socket")
    lt.add_argument("--host", choices=("127.0.0.1", "::1", "localhost"),
                    help="TCP on this machine (instead of --socket)")
    lt.add_argument("--port", type=int_type("--port", 1, 65535), default=3306)
    lt.add_argument("--user", default="root", help="needs SELECT, PROCESS and RELOAD (for "
                    "FLUSH TABLES ... FOR EXPORT)")
    lt.add_argument("--schema", required=True, help="the schema the statements use")
    lt.add_argument("--workload", metavar="FILE",
                    help="a .sql script or a .toml template mix (docs/guide-live-trace.md)")
    lt.add_argument("--from-history", action="store_true",
                    help="instead of --workload: the statements the server ran in --schema, "
                    "from performance_schema.events_statements_history_long (one stream per "
                    "client thread)")
    lt.add_argument("-o", "--output", required=True, metavar="OUT.parquet",
                    help="the trace (.parquet, or .npy with a tablespaces sidecar)")
    lt.add_argument("--report", metavar="STATEMENTS.csv",
                    help="one row per statement: stream, template, sql, gets, unsupported")
    lt.add_argument("--threads", type=int_type("--threads", 1, 1024), default=None,
                    help="client threads (streams); overrides the workload's")
    lt.add_argument("--statements", type=int_type("--statements", 1, 10_000_000), default=None,
                    help="statements per thread; overrides the workload's")
    lt.add_argument("--seed", type=int_type("--seed", 0, 2**63 - 1), default=None,
                    help="overrides the workload's seed")
    lt.add_argument("--get-ns", type=int_type("--get-ns", 0, 10**9), default=0, metavar="NS",
                    help="CPU time per page get in the trace (default 0)")
    lt.add_argument("--no-progress", action="store_true", help="do not show progress")
    lt.set_defaults(func=_cmd_live_trace)


def _cmd_live_trace(args) -> int:
    """Compile a workload of SQL statements into a trace over a live server's geometry
    (:mod:`bufsim.live.compile`); the server is only read."""
    from ..live.compile_workload import WorkloadError, read_workload
    if (args.workload is None) == (not args.from_history):
        raise UsageError("give exactly one of --workload FILE or --from-history")
    inputs = [args.workload] if args.workload else []
    out = checked_output(args.output, (".parquet", ".npy"), inputs=inputs)
    report = checked_output(args.report, (".csv",), "--report", inputs=inputs)
    if report is not None and out is not None and Path(report).resolve() == Path(out).resolve():
        raise UsageError("--report and -o name the same file")
    if (args.socket is None) == (args.host is None):
        raise UsageError("give exactly one of --socket PATH or --host 127.0.0.1")
    workload = None
    if args.workload is not None:
        try:
            workload = read_workload(args.workload, threads=args.threads,
                                     statements=args.statements, seed=args.seed)
        except (WorkloadError, FileNotFoundError) as e:
            raise UsageError(str(e)) from None
    elif args.threads is not None or args.statements is not None or args.seed is not None:
        raise UsageError("--threads, --statements and --seed shape a --workload file; the "
                         "history has its own threads and statements")
    from ..live import LiveError, connect
    from ..live.compile import Compiler
    from ..live.compile_workload import compile_workload
    password = os.environ.get("BUFSIM_LIVE_PASSWORD", "")
    try:
        conn = connect(socket=args.socket, host=args.host, port=args.port, user=args.user,
                       password=password)
    except (LiveError, ValueError) as e:
        raise UsageError(str(e)) from None
    with conn:
        have = [r[0] for r in conn.query("SHOW DATABASES", doing="listing schemas")]
        if args.schema not in have:
            raise UsageError(f"--schema: no schema {args.schema!r} on {conn.where}; "
                             f"schemas: {', '.join(sorted(have))}")
        if workload is None:
            from ..live.compile_workload import read_history
            workload, truncated = read_history(conn, args.schema)
            n = sum(len(x) for x in workload.scripts)
            if n == 0:
                raise UsageError(f"--from-history: no SELECT/INSERT/UPDATE/DELETE of schema "
                                 f"{args.schema!r} in performance_schema's statement history")
            print(f"{n:,} statements of {len(workload.scripts)} thread(s) from the history "
                  f"({truncated:,} left out: their text was truncated)", file=sys.stderr)
        print(f"reading the geometry of {args.schema} on {conn.where}", file=sys.stderr)
        compiler = Compiler(conn, args.schema)

        tty = sys.stderr.isatty()
        step = {"n": 0}

        def progress(done, total):
            if args.no_progress:
                return
            if tty and (done == total or done % 25 == 0):
                print(f"\rcompiled {done:,}/{total:,} statements", end="\n" if done == total
                      else "", file=sys.stderr, flush=True)
            elif not tty and (done == total or done * 4 // total > step["n"]):
                step["n"] = done * 4 // total
                print(f"compiled {done:,}/{total:,} statements", file=sys.stderr, flush=True)

        trace, rep = compile_workload(compiler, workload, get_ns=args.get_ns, progress=progress)
    from ..outputs import Staged
    with Staged() as staged:     # the trace (and its sidecar) and the report, together or neither
        scratch = staged.folder(out)
        trace.save(scratch / out.name)
        for f in sorted(scratch.iterdir()):
            staged.move(f, out.parent / f.name)
        if report is not None:
            write_frame(rep, report, staged)
    bad = rep[rep.unsupported != ""]
    for line in dict.fromkeys(bad.unsupported):
        print(line, file=sys.stderr)
    streams = rep.stream.nunique()
    print(f"wrote {out}: {int(rep.gets.sum()):,} page gets of {len(rep) - len(bad):,} statements "
          f"in {streams} stream(s); {len(bad):,} statement(s) unsupported", file=sys.stderr)
    return 0
