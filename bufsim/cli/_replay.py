"""``bufsim replay`` (one configuration, InnoDB's counters) and ``bufsim sweep`` (a grid
of configurations on every core or a dask scheduler, a table and a chart)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from .. import paths
from ._common import (UsageError, add_config_args, add_executor_args, add_trace_args,
                      chart_target, check_executor, checked_output, int_type, make_executor,
                      overrides, print_table, read_trace_arg, save_chart, say_compiling,
                      write_frame)


def add_replay(commands) -> None:
    """The ``replay`` subcommand."""
    p = commands.add_parser("replay", help="replay a trace and print InnoDB's counters",
                            description="Replay a trace through one buffer pool and print "
                            "INNODB_BUFFER_POOL_STATS counters (summed over instances) and "
                            "the hit ratio, as a table, JSON or CSV.")
    add_trace_args(p)
    add_config_args(p, multi=False)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--json", action="store_true", help="print JSON (config, totals, per instance)")
    g.add_argument("--csv", action="store_true", help="print one CSV row (parameters, counters, "
                   "provenance)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE (.txt table, .json or .csv) instead of stdout")
    p.set_defaults(func=_cmd_replay)


def add_sweep(commands) -> None:
    """The ``sweep`` subcommand."""
    p = commands.add_parser("sweep", help="replay a grid of configurations in parallel",
                            description="Replay a trace once per configuration of the grid "
                            "(the cartesian product of the lists given) on every core, write "
                            "one row per configuration (parameters, counters, hit ratio, error, "
                            "provenance) and a chart of hit ratio by pool size.")
    add_trace_args(p)
    add_config_args(p, multi=True)
    p.add_argument("--jobs", type=int_type("--jobs", 1, 4096), metavar="N",
                   help="worker processes (default: every core; 1 runs serially)")
    add_executor_args(p, "run on a dask.distributed scheduler instead of local processes")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="results table, .parquet or .csv")
    p.add_argument("--chart", metavar="PNG",
                   help="chart path (.png; an .svg is written beside it); default: OUT with .png")
    p.add_argument("--no-chart", action="store_true", help="do not draw the chart")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_sweep)


def _cmd_replay(args) -> int:
    from ..config import preset
    from ..engine import check_memory, replay
    from ..sweeps import provenance, result_row
    if args.json and args.csv:
        raise UsageError("--json and --csv exclude each other")
    out = checked_output(args.output, (".json", ".csv", ".txt"), inputs=[args.trace])
    fmt = "json" if args.json else "csv" if args.csv else None
    if out is not None:
        by_suffix = {".json": "json", ".csv": "csv", ".txt": "table"}[out.suffix.lower()]
        if fmt is not None and fmt != by_suffix:
            raise UsageError(f"-o {args.output}: the suffix says {by_suffix} but --{fmt} was given")
        fmt = by_suffix
    fmt = fmt or "table"
    try:
        cfg = preset(args.preset, **overrides(args))
        check_memory(cfg)  # a pool that cannot fit is refused before the trace is read
    except ValueError as e:
        raise UsageError(str(e)) from None
    trace = read_trace_arg(args)
    say_compiling([cfg])
    res = replay(trace, cfg)
    row = result_row(res)
    prov = provenance(args.trace)
    if fmt == "table":
        text = _table_text(cfg, res, row)
    elif fmt == "json":
        text = json.dumps({"config": cfg.describe(),
                           "totals": {k: int(v) for k, v in res.totals.items()},
                           "hit_ratio": row["hit_ratio"], "elapsed_ns": row["elapsed_ns"],
                           "streams": json.loads(res.streams.to_json(orient="records")),
                           "contents": json.loads(res.contents.to_json(orient="records")),
                           "spaces": json.loads(res.spaces.to_json(orient="records")),
                           "instances": json.loads(res.stats.to_json(orient="records")),
                           "provenance": {**prov, "trace": args.trace}}, indent=1) + "\n"
    else:
        import pandas as pd
        params = {"preset": args.preset, "policy": cfg.policy, "pool_pages": cfg.pool_pages,
                  "instances": cfg.instances, "old_blocks_time_ms": cfg.old_blocks_time_ms,
                  "old_blocks_pct": cfg.old_blocks_pct, "device": cfg.device.name}
        text = pd.DataFrame([{**params, **row, **prov, "trace": args.trace}]).to_csv(index=False)
    if out is None:
        sys.stdout.write(text)
    else:
        paths.atomic_write(out, lambda p: p.write_text(text))
        print(f"wrote {out}", file=sys.stderr)
    return 0


def _table_text(cfg, res, row) -> str:
    import io
    buf = io.StringIO()
    print(f"# {cfg.version} {cfg.policy}, pool {cfg.pool_pages:,} pages "
          f"({cfg.pool_pages * 16 / 1024:g} MiB), {cfg.instances} instance(s), "
          f"old_blocks_time {cfg.old_blocks_time_ms} ms, old_blocks_pct {cfg.old_blocks_pct}, "
          f"device {cfg.device.name}", file=buf)
    rows = [(k, int(v)) for k, v in res.totals.items()]
    rows += [("hit_ratio", row["hit_ratio"]), ("elapsed_s (virtual)", row["elapsed_ns"] / 1e9)]
    print_table(rows, buf)
    st = res.streams
    print("\n# per stream (misses: synchronous reads; read_ahead: pages read ahead for its "
          "gets)", file=buf)
    view = st[["name", "gets", "misses", "read_ahead", "hit_ratio"]].copy()
    view["io_wait_s"] = st["io_wait_ns"] / 1e9
    view["elapsed_s"] = st["elapsed_ns"] / 1e9
    print(view.to_string(index=False, float_format=lambda x: f"{x:.6f}"), file=buf)
    print("\n# per tablespace (misses: synchronous reads; pages: resident at the end)",
          file=buf)
    print(res.spaces.to_string(index=False, float_format=lambda x: f"{x:.6f}"), file=buf)
    print("\n# per index at the end (resident pages)", file=buf)
    print(res.contents.to_string(index=False), file=buf)
    return buf.getvalue()


def _cmd_sweep(args) -> int:
    from ..config import MAX_INSTANCES
    from ..engine import check_memory
    from ..sweeps import expand_grid, make_config, parse_sizes, parse_values, sweep
    out = checked_output(args.output, (".parquet", ".csv"), inputs=[args.trace])
    if args.jobs is not None and args.executor is not None:
        raise UsageError("--jobs and --executor exclude each other (the cluster decides)")
    if args.chart is not None and args.no_chart:
        raise UsageError("--chart and --no-chart exclude each other")
    chart = None if args.no_chart else checked_output(
        args.chart or out.with_suffix(".png"), (".png", ".svg"), "--chart", inputs=[args.trace])
    try:
        grid = {"pool_pages": parse_sizes(args.pool, "--pool")}
        if args.old_blocks_time:
            grid["old_blocks_time_ms"] = parse_values(args.old_blocks_time, "--old-blocks-time",
                                                      0, 2**32 - 1)
        if args.old_blocks_pct:
            grid["old_blocks_pct"] = parse_values(args.old_blocks_pct, "--old-blocks-pct", 5, 95)
        if args.instances:
            grid["instances"] = parse_values(args.instances, "--instances", 1, MAX_INSTANCES)
        if args.device:
            grid["device"] = [args.device]
    except ValueError as e:
        raise UsageError(str(e)) from None
    points = expand_grid(grid)
    configs = []
    for p in points:  # every configuration valid before any replay
        try:
            configs.append(make_config(p, args.preset))
            check_memory(configs[-1])
        except ValueError as e:
            raise UsageError(f"configuration {p}: {e}") from None
    address = check_executor(args.executor, args.executor_timeout) if args.executor else None
    if chart is not None:
        chart_target(chart)
    trace = args.trace
    # read once here so that bad input is refused before any replay (workers re-read it)
    read_trace_arg(args)
    say_compiling(configs)
    executor = make_executor(address, args.executor_timeout) if address else None
    try:
        df = sweep(trace, points, executor=executor, jobs=args.jobs, preset=args.preset,
                   columns=args.columns, format=args.format, progress=not args.no_progress,
                   streams=True)
    finally:
        if executor is not None:
            executor.close()
    from ..outputs import Staged
    with Staged() as staged:   # the table and the chart, together or neither
        write_frame(df, out, staged)
        if chart is not None:
            _sweep_chart(df, chart, staged)
    tot = df[df["stream"] == "all"]
    failed = int(tot["error"].notna().sum())
    cols = [c for c in ("pool_pages", "old_blocks_time_ms", "old_blocks_pct", "instances")
            if c in df.columns] + ["stream", "gets", "misses", "read_ahead", "hit_ratio",
                                   "io_wait_ns", "error"]
    print(df[cols].to_string(index=False))
    print(f"wrote {out}" + (f" and {chart.with_suffix('.png')}, {chart.with_suffix('.svg')}"
                            if chart is not None else ""), file=sys.stderr)
    if failed:
        print(f"bufsim sweep: {failed} of {len(tot)} configurations failed (see the error "
              "column)", file=sys.stderr)
        return 1
    return 0


def _sweep_chart(df, chart: Path, staged) -> None:
    import altair as alt
    d = df[df["error"].isna()].copy()
    d["pool_mib"] = d["pool_pages"].astype(float) * 16 / 1024
    series = [c for c in ("old_blocks_time_ms", "old_blocks_pct", "instances")
              if c in d.columns and d[c].nunique() > 1]
    d["setting"] = d.apply(lambda r: ", ".join(f"{c}={r[c]}" for c in series) or "replay", axis=1)
    if "stream" not in d.columns:
        d["stream"] = "all"
    several = d["stream"].nunique() > 2      # 'all' and more than one thread
    if not several:
        d = d[d["stream"] == "all"]
    d = d[["pool_mib", "hit_ratio", "setting", "stream"]]
    enc = dict(x=alt.X("pool_mib:Q", scale=alt.Scale(type="log", base=2), title="pool size (MiB)"),
               y=alt.Y("hit_ratio:Q", title="hit ratio (1 - synchronous reads / gets)",
                       scale=alt.Scale(zero=False)))
    if several:   # one colour per stream (the totals too), one dash per setting
        enc["color"] = alt.Color("stream:N", title="stream")
        if len(series):
            enc["strokeDash"] = alt.StrokeDash("setting:N", title=None)
    else:
        enc["color"] = alt.Color("setting:N", title=None)
    c = alt.Chart(d, title="Hit ratio by pool size").mark_line(point=True).encode(**enc)
    save_chart(c, chart, staged)
