"""``bufsim advise``: a report recommending a pool size, old_blocks_time and instances
for a trace, per thread."""
from __future__ import annotations

import sys

from ..config import DEVICES, PRESETS
from ._common import (UsageError, add_executor_args, add_trace_args, check_executor,
                      checked_output, float_type, int_type, make_executor, read_trace_arg,
                      say_compiling)


def add_advise(commands) -> None:
    """The ``advise`` subcommand."""
    p = commands.add_parser("advise", help="recommend a pool size, old_blocks_time and "
                            "instances for a trace, per thread",
                            description="A report from InnoDB replays of the trace: which "
                            "streams (threads) bear latency and why, the pool size at the "
                            "knee of their synchronous reads (InnoDB replays with the better "
                            "old_blocks_time at each size), old_blocks_time 0 vs 1000 there and "
                            "below, and the number of instances from the contention model when "
                            "there is evidence of concurrency, with every assumption stated.")
    add_trace_args(p)
    p.add_argument("--margin", type=float_type("--margin", 0.0, 1.0, lo_open=True), default=0.05,
                   metavar="M", help="the smallest change of a protected stream's reads "
                   "that counts (old_blocks_time, old_blocks_pct); with --criterion reads or "
                   "wait, the allowed excess over the reference (default 0.05)")
    p.add_argument("--criterion", choices=("knee", "reads", "wait"), default="knee",
                   help="how the pool size is chosen: the end of the first cliff of the "
                   "protected streams' synchronous reads that ends where their own working "
                   "set fits (knee, the default); the smallest size where their reads are "
                   "within --margin of the largest size's below the footprint (reads); or "
                   "where their I/O wait is, as a share of their elapsed time (wait)")
    p.add_argument("--protect", metavar="THREAD,...", help="streams to protect (default: "
                   "those classified latency-bound)")
    p.add_argument("--target-hit", metavar="H|NAME=H,...", help="hit ratio every protected "
                   "stream must reach, or per stream (e.g. oltp=0.99)")
    p.add_argument("--threads", type=int_type("--threads", 1, 10_000), default=None, metavar="N",
                   help="concurrent user threads for the contention model (default: the "
                   "trace's threads; a one-thread trace without --threads/--cores is not "
                   "assessed)")
    p.add_argument("--cores", type=int_type("--cores", 1, 4096), default=None, metavar="C",
                   help="CPU cores of the server for the contention model (default: one per "
                   "thread)")
    p.add_argument("--gets-per-txn", type=int_type("--gets-per-txn", 1), default=None, metavar="G",
                   help="page gets per transaction when the trace has no statement marks "
                        "(default 100)")
    p.add_argument("--preset", default="mysql57", choices=list(PRESETS),
                   help="server version (default mysql57)")
    p.add_argument("--device", choices=DEVICES, help="I/O device model (default ssd)")
    p.add_argument("--pool", metavar="SIZE", help="the pool you have now (e.g. 512M): "
                   "replayed too and shown in the old_blocks_time section")
    p.add_argument("--shards", type=float_type("--shards", 0.0, 1.0, lo_open=True), metavar="RATE",
                   help="SHARDS-sample the per-stream LRU curves that choose where to replay "
                   "(default: exact)")
    p.add_argument("--jobs", type=int_type("--jobs", 1, 4096), metavar="N",
                   help="worker processes for the replays (default: every core; 1 serially)")
    add_executor_args(p, "run the replays on a dask.distributed scheduler")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("-o", "--output", metavar="REPORT", help="write REPORT (.md, with its "
                   "figures beside it, or .html with them inside) instead of printing Markdown")
    p.set_defaults(func=_cmd_advise)


def _targets(text: str):
    """``--target-hit``: ``0.99`` (every protected stream) or ``NAME=H,...`` (per stream)."""
    def one(what, v):
        try:
            x = float(v)
        except ValueError:
            raise UsageError(f"--target-hit: {what}{v!r} is not a number") from None
        if not 0 < x <= 1:
            raise UsageError(f"--target-hit: {what}{v} is out of range; allowed: (0, 1]")
        return x
    if "=" not in text:
        return one("", text)
    out = {}
    for part in text.split(","):
        name, _, v = part.partition("=")
        if not name.strip() or not v.strip():
            raise UsageError(f"--target-hit: {part!r} must be NAME=H (e.g. oltp=0.99)")
        out[name.strip()] = one(f"{name.strip()}=", v.strip())
    return out


def _cmd_advise(args) -> int:
    from ..advise import advise
    from ..config import preset
    out = checked_output(args.output, (".md", ".html"), inputs=[args.trace])
    if args.jobs is not None and args.executor is not None:
        raise UsageError("--jobs and --executor exclude each other (the cluster decides)")
    targets = _targets(args.target_hit) if args.target_hit else None
    protect = [x.strip() for x in args.protect.split(",") if x.strip()] if args.protect else None
    current = None
    if args.pool:
        from ..sweeps import parse_sizes
        try:
            sizes = parse_sizes(args.pool, "--pool")
        except ValueError as e:
            raise UsageError(str(e)) from None
        if len(sizes) != 1:
            raise UsageError(f"--pool: give one size (the pool you have now), got {args.pool!r}")
        current = sizes[0]
    address = check_executor(args.executor, args.executor_timeout) if args.executor else None
    trace = read_trace_arg(args)
    say_compiling([preset(args.preset)])
    executor = make_executor(address, args.executor_timeout) if address else None
    try:
        report = advise(trace, margin=args.margin, protect=protect, target_hit=targets,
                        threads=args.threads, cores=args.cores, preset=args.preset,
                        device=args.device or "ssd", current_pages=current,
                        criterion=args.criterion, shards=args.shards,
                        gets_per_txn=args.gets_per_txn, trace_label=args.trace,
                        executor=executor, jobs=args.jobs, progress=not args.no_progress)
    except ValueError as e:
        raise UsageError(str(e)) from None
    finally:
        if executor is not None:
            executor.close()
    if out is None:
        sys.stdout.write(report.markdown())
        return 0
    from ..outputs import Staged
    written = [out]
    with Staged() as staged:   # the report and its figures, together or neither
        if out.suffix.lower() == ".html":
            text = report.html()
        else:
            # figures beside the report: STEM-curves.png/.svg, STEM-instances.png/.svg
            scratch = staged.folder(out)
            files = report.render_figures(scratch, stem=out.stem)
            text = report.markdown({k: v.name for k, v in files.items()})
            for v in files.values():
                for x in (v, v.with_suffix(".svg")):
                    staged.move(x, out.parent / x.name)
                    written.append(out.parent / x.name)
        staged.file(out).write_text(text)
    print("wrote " + ", ".join(str(x) for x in written), file=sys.stderr)
    return 0
