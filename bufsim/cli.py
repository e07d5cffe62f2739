"""The ``bufsim`` command line: replay, sweep, mrc, advise, convert, notebooks.

Each subcommand has ``--help``.  Exit status: 0 when it worked, 2 for bad input
or usage (a missing or malformed trace, an unknown column, a value out of
range, conflicting options, an output that cannot be written), 1 for a failure
while running, 130 after Ctrl-C, 141 when the reader of stdout went away
(``| head``).  An error is one line on stderr that names the argument (and, for
a file, the row and column); nothing is written then.  Outputs are checked
before any work (:func:`bufsim.outputs.check_output`) and the outputs of one
command are written to temporary names and moved into place together
(:class:`bufsim.outputs.Staged`), so an existing file is replaced only by a
complete new one, and a failure leaves none of them.

``bufsim.__main__`` is a thin door to :func:`main`.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from . import paths
from .config import DEVICES, PRESETS
from .trace_import import CANONICAL_COLUMNS, FORMATS as TRACE_FORMATS

__all__ = ["main", "UsageError", "CANONICAL_COLUMNS", "TRACE_FORMATS"]



class UsageError(ValueError):
    """Bad input or usage: exit status 2."""


def _type_error(what: str, message: str) -> argparse.ArgumentTypeError:
    """argparse prefixes 'argument WHAT: ' itself; drop our own prefix."""
    if message.startswith(what + ": "):
        message = message[len(what) + 2:]
    return argparse.ArgumentTypeError(message)


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (and exit status 2)."""

    def error(self, message):  # noqa: D401 - argparse API
        raise UsageError(f"{message} (see {self.prog} --help)")


# --------------------------------------------------------------------------------------
# argument types and helpers
# --------------------------------------------------------------------------------------
def _columns(text: str) -> dict:
    out = {}
    for part in text.split(","):
        if "=" not in part:
            raise _type_error("", f"{part!r} is not NAME=COLUMN (e.g. page=blk,space=sp)")
        k, v = (x.strip() for x in part.split("=", 1))
        if k not in CANONICAL_COLUMNS:
            raise _type_error("", f"{k!r} is not a trace column; allowed: "
                                  f"{', '.join(CANONICAL_COLUMNS)}")
        if not v:
            raise _type_error("", f"{k}= names no file column")
        if k in out:
            raise _type_error("", f"{k!r} is given twice")
        out[k] = v
    return out


def _int(what, lo=None, hi=None):
    def conv(text):
        try:
            v = int(text)
        except ValueError:
            raise _type_error(what, f"{text!r} is not an integer") from None
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise _type_error(what, f"{v} is out of range; allowed: {rng}")
        return v
    return conv


def _float(what, lo, hi, lo_open=False):
    def conv(text):
        try:
            v = float(text)
        except ValueError:
            raise _type_error(what, f"{text!r} is not a number") from None
        if not (v > lo if lo_open else v >= lo) or v > hi:
            raise _type_error(what, f"{v} is out of range; allowed: "
                             f"{'(' if lo_open else '['}{lo}, {hi}]")
        return v
    return conv


def _size(what):
    def conv(text):
        from .sweeps import parse_sizes
        try:
            v = parse_sizes(text, what)
        except ValueError as e:
            raise _type_error(what, str(e)) from None
        if len(v) != 1:
            raise _type_error(what, f"give one size, got {text!r}")
        return v[0]
    return conv


def _add_trace_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", metavar="TRACE",
                   help="trace file: CSV/Parquet with columns space,page[,time_ns|time_ms]"
                        "[,thread][,statement], or a trace saved by bufsim (.npy, .parquet)")
    p.add_argument("--columns", type=_columns, metavar="NAME=COL,...",
                   help="map trace columns to the file's (e.g. page=blk,space=sp); names: "
                        + ", ".join(CANONICAL_COLUMNS))
    p.add_argument("--format", choices=TRACE_FORMATS,
                   help="file format (default: guessed from the name)")


def _add_config_args(p: argparse.ArgumentParser, multi: bool) -> None:
    from .config import PRESETS
    p.add_argument("--preset", default="mysql56", choices=list(PRESETS),
                   help="version defaults (default mysql56)")
    p.add_argument("--device", choices=DEVICES, default=None,
                   help="I/O device model (default: the preset's, hdd7200)")
    if multi:
        p.add_argument("--pool", required=True, metavar="SIZES",
                       help="pool sizes: 64M:4G:x2 (geometric), 64M:1G:+64M, 64M,128M,1G "
                            "(list) or 8192 (pages)")
        p.add_argument("--old-blocks-time", metavar="MS,...",
                       help="innodb_old_blocks_time values, e.g. 0,1000")
        p.add_argument("--old-blocks-pct", metavar="PCT,...",
                       help="innodb_old_blocks_pct values (5..95), e.g. 20,37,50")
        p.add_argument("--instances", metavar="N,...",
                       help="innodb_buffer_pool_instances values (1..64)")
    else:
        p.add_argument("--pool", required=True, type=_size("--pool"), metavar="SIZE",
                       help="innodb_buffer_pool_size: 128M, 4G, or pages (8192)")
        p.add_argument("--old-blocks-time", type=_int("--old-blocks-time", 0, 2**32 - 1),
                       metavar="MS", help="innodb_old_blocks_time in ms (preset default)")
        p.add_argument("--old-blocks-pct", type=_int("--old-blocks-pct", 5, 95), metavar="PCT",
                       help="innodb_old_blocks_pct (preset default 37)")
        p.add_argument("--instances", type=_int("--instances", 1, 64), metavar="N",
                       help="innodb_buffer_pool_instances (preset default)")


def _overrides(args) -> dict:
    kw = {"pool_pages": args.pool}
    for a, f in (("old_blocks_time", "old_blocks_time_ms"), ("old_blocks_pct", "old_blocks_pct"),
                 ("instances", "instances"), ("device", "device")):
        v = getattr(args, a)
        if v is not None:
            kw[f] = v
    return kw


def _check_output(path: str | None, allowed: Sequence[str], what: str = "-o",
                  inputs: Sequence[str] = ()) -> Path | None:
    """:func:`bufsim.outputs.check_output`, before any work; a refusal is a UsageError."""
    from .outputs import check_output
    try:
        return check_output(path, allowed, what, inputs)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _chart_target(path: Path) -> tuple[str, Path]:
    """``(stem, directory)`` for save_figure from ``out.png`` / ``out.svg`` / ``out``."""
    from .figures import NAME_RE
    stem = path.stem if path.suffix.lower() in (".png", ".svg") else path.name
    if not NAME_RE.fullmatch(stem):
        raise UsageError(f"--chart: {path.name!r}: the file name may hold letters, digits, "
                         "'_', '-' and '.' only")
    return stem, path.parent if str(path.parent) else Path(".")


def _load(args):
    """The trace of ``args.trace``; bad input becomes a UsageError."""
    from .sweeps import load_trace
    if Path(args.trace).is_dir():
        raise UsageError(f"TRACE: {args.trace} is a directory, not a trace file")
    if not Path(args.trace).is_file():
        raise UsageError(f"TRACE: no such file: {args.trace}")
    try:
        return load_trace(args.trace, columns=args.columns, format=args.format)
    except (ValueError, FileNotFoundError) as e:
        raise UsageError(f"TRACE: {e}") from None


def _write_frame(df, path: Path, staged=None) -> None:
    """Write ``df`` to ``path`` by its suffix: through ``staged`` (a
    :class:`bufsim.outputs.Staged`) if given, else atomically on its own."""
    def write(tmp):
        sfx = path.suffix.lower()
        if sfx == ".parquet":
            df.to_parquet(tmp, index=False)
        elif sfx == ".json":
            tmp.write_text(df.to_json(orient="records", indent=1))
        else:
            df.to_csv(tmp, index=False)
    if staged is not None:
        write(staged.file(path))
    else:
        paths.atomic_write(path, write)


def _save_chart(chart_obj, target: Path, staged) -> None:
    """Save an Altair chart as ``target`` .png and .svg through ``staged``: rendered
    into a scratch folder beside the target, moved into place with the other outputs."""
    from .figures import save_figure
    stem, directory = _chart_target(target)
    scratch = staged.folder(directory / (stem + ".png"))
    save_figure(chart_obj, stem, directory=scratch)
    for sfx in (".png", ".svg"):
        staged.move(scratch / (stem + sfx), directory / (stem + sfx))


def _print_table(rows: Sequence[tuple[str, object]], out=None) -> None:
    out = out or sys.stdout
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        if isinstance(v, float):
            v = f"{v:.6f}"
        elif isinstance(v, int):
            v = f"{v:,}"
        print(f"{k:<{w}}  {v}", file=out)


# --------------------------------------------------------------------------------------
# replay
# --------------------------------------------------------------------------------------
def _compile_notice(configs) -> None:
    """Say on stderr, before the silence, that a replay is about to compile its kernel
    (:func:`bufsim.engine.compile_notice`)."""
    from .engine import compile_notice
    line = compile_notice(configs)
    if line:
        print(line, file=sys.stderr, flush=True)


def _cmd_replay(args) -> int:
    from .config import preset
    from .engine import check_memory, replay
    from .sweeps import provenance, result_row
    if args.json and args.csv:
        raise UsageError("--json and --csv exclude each other")
    out = _check_output(args.output, (".json", ".csv", ".txt"), inputs=[args.trace])
    fmt = "json" if args.json else "csv" if args.csv else None
    if out is not None:
        by_suffix = {".json": "json", ".csv": "csv", ".txt": "table"}[out.suffix.lower()]
        if fmt is not None and fmt != by_suffix:
            raise UsageError(f"-o {args.output}: the suffix says {by_suffix} but --{fmt} was given")
        fmt = by_suffix
    fmt = fmt or "table"
    try:
        cfg = preset(args.preset, **_overrides(args))
        check_memory(cfg)  # a pool that cannot fit is refused before the trace is read
    except ValueError as e:
        raise UsageError(str(e)) from None
    trace = _load(args)
    _compile_notice([cfg])
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
    _print_table(rows, buf)
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


# --------------------------------------------------------------------------------------
# sweep
# --------------------------------------------------------------------------------------
def _check_executor(spec: str, timeout: float) -> str:
    """The address of the dask scheduler ``spec`` names, after a handshake with it
    (:func:`bufsim.cluster.check_scheduler`): refused before any work."""
    from .cluster import SchedulerError, check_scheduler
    if not spec.startswith("dask://") or len(spec) <= len("dask://"):
        raise UsageError(f"--executor: {spec!r} must be dask://HOST:PORT")
    import importlib.util
    if importlib.util.find_spec("distributed") is None:
        raise UsageError("--executor: dask.distributed is not installed; "
                         "pip install 'bufsim[cluster]'") from None
    try:
        return check_scheduler(spec, timeout)
    except SchedulerError as e:
        raise UsageError(f"--executor: {e}") from None


def _executor(address: str, timeout: float):
    from distributed import Client
    return Client(address, timeout=timeout)


def _cmd_sweep(args) -> int:
    from .config import MAX_INSTANCES
    from .engine import check_memory
    from .sweeps import expand_grid, make_config, parse_sizes, parse_values, sweep
    out = _check_output(args.output, (".parquet", ".csv"), inputs=[args.trace])
    if args.jobs is not None and args.executor is not None:
        raise UsageError("--jobs and --executor exclude each other (the cluster decides)")
    if args.chart is not None and args.no_chart:
        raise UsageError("--chart and --no-chart exclude each other")
    chart = None if args.no_chart else _check_output(
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
    address = _check_executor(args.executor, args.executor_timeout) if args.executor else None
    if chart is not None:
        _chart_target(chart)
    trace = args.trace
    # read once here so that bad input is refused before any replay (workers re-read it)
    _load(args)
    _compile_notice(configs)
    executor = _executor(address, args.executor_timeout) if address else None
    try:
        df = sweep(trace, points, executor=executor, jobs=args.jobs, preset=args.preset,
                   columns=args.columns, format=args.format, progress=not args.no_progress,
                   streams=True)
    finally:
        if executor is not None:
            executor.close()
    from .outputs import Staged
    with Staged() as staged:   # the table and the chart, together or neither
        _write_frame(df, out, staged)
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
    _save_chart(c, chart, staged)


# --------------------------------------------------------------------------------------
# mrc
# --------------------------------------------------------------------------------------
def _cmd_mrc(args) -> int:
    from .advise import miss_ratio_curve
    from .sweeps import parse_sizes
    out = _check_output(args.output, (".csv", ".parquet", ".json"), inputs=[args.trace])
    if args.chart is not None and args.no_chart:
        raise UsageError("--chart and --no-chart exclude each other")
    chart = None if args.no_chart or (args.chart is None and out is None) else \
        _check_output(args.chart or out.with_suffix(".png"), (".png", ".svg"), "--chart",
                      inputs=[args.trace])
    if chart is not None:
        _chart_target(chart)
    sizes = None
    if args.sizes:
        try:
            sizes = parse_sizes(args.sizes, "--sizes")
        except ValueError as e:
            raise UsageError(str(e)) from None
    trace = _load(args)
    df = miss_ratio_curve(trace, sizes=sizes, shards=args.shards, seed=args.seed)
    show = df.assign(pool_mib=df["size"] * 16 / 1024)[["size", "pool_mib", "hits", "misses",
                                                      "hit_ratio", "miss_ratio"]]
    print(f"# {'SHARDS rate ' + str(args.shards) if args.shards else 'exact'} LRU miss-ratio "
          f"curve of {args.trace}: {int(df['gets'].iloc[0]):,} gets")
    print(show.to_string(index=False))
    from .outputs import Staged
    with Staged() as staged:   # the table and the chart, together or neither
        if out is not None:
            _write_frame(df, out, staged)
        if chart is not None:
            import altair as alt
            d = show[["pool_mib", "miss_ratio"]]
            c = alt.Chart(d, title="LRU miss-ratio curve" + (" (SHARDS)" if args.shards else "")
                          ).mark_line(point=True).encode(
                x=alt.X("pool_mib:Q", scale=alt.Scale(type="log", base=2),
                        title="pool size (MiB)"),
                y=alt.Y("miss_ratio:Q", title="miss ratio"))
            _save_chart(c, chart, staged)
    if out is not None or chart is not None:
        print("wrote " + ", ".join(str(x) for x in
                                   ([out] if out else []) + ([chart.with_suffix(".png"),
                                                              chart.with_suffix(".svg")]
                                                             if chart else [])),
              file=sys.stderr)
    return 0


# --------------------------------------------------------------------------------------
# advise
# --------------------------------------------------------------------------------------
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
    from .advise import advise
    from .config import preset
    out = _check_output(args.output, (".md", ".html"), inputs=[args.trace])
    if args.jobs is not None and args.executor is not None:
        raise UsageError("--jobs and --executor exclude each other (the cluster decides)")
    targets = _targets(args.target_hit) if args.target_hit else None
    protect = [x.strip() for x in args.protect.split(",") if x.strip()] if args.protect else None
    current = None
    if args.pool:
        from .sweeps import parse_sizes
        try:
            sizes = parse_sizes(args.pool, "--pool")
        except ValueError as e:
            raise UsageError(str(e)) from None
        if len(sizes) != 1:
            raise UsageError(f"--pool: give one size (the pool you have now), got {args.pool!r}")
        current = sizes[0]
    address = _check_executor(args.executor, args.executor_timeout) if args.executor else None
    trace = _load(args)
    _compile_notice([preset(args.preset)])
    executor = _executor(address, args.executor_timeout) if address else None
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
    from .outputs import Staged
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


# --------------------------------------------------------------------------------------
# convert
# --------------------------------------------------------------------------------------
def _cmd_convert(args) -> int:
    from .blktrace import convert_blkparse
    out = _check_output(args.output, (".csv",), inputs=[args.input])
    src = Path(args.input)
    if not src.is_file():
        raise UsageError(f"IN: no such file: {args.input}")
    try:
        stats = convert_blkparse(src, out, page_size=args.page_size, file_offset=args.file_offset,
                                 space=args.space, actions=args.action, writes=args.writes,
                                 device=args.device)
    except ValueError as e:
        raise UsageError(str(e)) from None
    print(f"wrote {out}: {stats['rows']:,} page gets from {stats['events']:,} requests "
          f"({stats['skipped_lines']:,} other lines, {stats['outside']:,} requests outside the "
          "file)", file=sys.stderr)
    return 0


def _byte_size(what):
    def conv(text):
        s = text.strip().upper()
        mult = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}.get(s[-1:], 1)
        num = s[:-1] if s[-1:] in "KMGT" else s
        try:
            v = int(num) * mult
        except ValueError:
            raise _type_error(what, f"{text!r} is not a byte count (e.g. 16K, 1048576)") \
                from None
        if v < 0:
            raise _type_error(what, f"{text!r} is negative")
        return v
    return conv


# --------------------------------------------------------------------------------------
# live trace
# --------------------------------------------------------------------------------------
def _cmd_live_trace(args) -> int:
    """Compile a workload of SQL statements into a trace over a live server's geometry
    (:mod:`bufsim.live.compile`); the server is only read."""
    from .live.compile_workload import WorkloadError, read_workload
    if (args.workload is None) == (not args.from_history):
        raise UsageError("give exactly one of --workload FILE or --from-history")
    inputs = [args.workload] if args.workload else []
    out = _check_output(args.output, (".parquet", ".npy"), inputs=inputs)
    report = _check_output(args.report, (".csv",), "--report", inputs=inputs)
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
    from .live import LiveError, connect
    from .live.compile import Compiler
    from .live.compile_workload import compile_workload
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
            from .live.compile_workload import read_history
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
    from .outputs import Staged
    with Staged() as staged:     # the trace (and its sidecar) and the report, together or neither
        scratch = staged.folder(out)
        trace.save(scratch / out.name)
        for f in sorted(scratch.iterdir()):
            staged.move(f, out.parent / f.name)
        if report is not None:
            _write_frame(rep, report, staged)
    bad = rep[rep.unsupported != ""]
    for line in dict.fromkeys(bad.unsupported):
        print(line, file=sys.stderr)
    streams = rep.stream.nunique()
    print(f"wrote {out}: {int(rep.gets.sum()):,} page gets of {len(rep) - len(bad):,} statements "
          f"in {streams} stream(s); {len(bad):,} statement(s) unsupported", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------------------
# notebooks (today's behaviour)
# --------------------------------------------------------------------------------------
@contextlib.contextmanager
def _run_outputs(quick: bool):
    """Direct the outputs of a batch run through the environment (the kernels inherit it),
    unless ``BUFSIM_BUILD_DIR`` / ``BUFSIM_FIGURES_DIR`` say otherwise; restored afterwards.

    A full run is the one way to refresh the committed ``figures/``; a quick run writes
    under ``build/quick/`` (figures in ``build/quick/figures``) so that it never
    overwrites the figures and results of a full run."""
    saved = {k: os.environ.get(k) for k in (paths.BUILD_ENV_VAR, paths.FIGURES_ENV_VAR)}
    if quick:
        build = (paths.build_dir() / "quick" if saved[paths.BUILD_ENV_VAR] is None
                 else paths.build_dir())
        os.environ[paths.BUILD_ENV_VAR] = str(build)
        figures = build / "figures"
    else:
        figures = paths.committed_figures_dir()
    if saved[paths.FIGURES_ENV_VAR] is None:
        os.environ[paths.FIGURES_ENV_VAR] = str(figures)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _cmd_notebooks(args) -> int:
    from . import notebooks
    with _run_outputs(args.quick), _cache_switch(args.no_cache):
        try:
            selected = notebooks.select_notebooks(args.names)
        except (ValueError, FileNotFoundError) as exc:
            print(f"bufsim notebooks run: {exc}", file=sys.stderr)
            return 2
        if not selected:
            print("bufsim notebooks run: no notebooks to run", file=sys.stderr)
            return 1
        not_run = _live_not_run(notebooks, selected)
        names = [p.stem for p in selected if p.stem not in {r.name for r in not_run}]
        runs = notebooks.run_notebooks(names, quick=args.quick, progress=not args.no_progress,
                                       jobs=args.jobs) if names else []
        runs = sorted([*runs, *not_run], key=lambda r: r.name)
        summary = notebooks.write_summary(runs, quick=args.quick)
        print(notebooks.format_runs(runs))
        print(f"summary: {summary}")
        for r in not_run:       # last, where the eye lands: one line with the command
            print(f"{r.name}: {r.error}", file=sys.stderr)
        return 0 if all(r.ok for r in runs) else 1


def _live_not_run(notebooks, selected) -> list:
    """The live notebooks among ``selected`` that cannot run here (no MariaDB server and
    none can be installed), as NotebookRuns whose error names the command to run."""
    live = [p for p in selected if p.stem in notebooks.LIVE_NOTEBOOKS]
    if not live:
        return []
    ok, why = notebooks.live_server_status()
    return [] if ok else [notebooks._not_run(p, why) for p in live]


@contextlib.contextmanager
def _cache_switch(off: bool):
    """``--no-cache``: the result cache neither serves nor stores (the kernels inherit
    the environment variable); restored afterwards."""
    from . import cache
    saved = os.environ.get(cache.OFF_ENV_VAR)
    if off:
        os.environ[cache.OFF_ENV_VAR] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(cache.OFF_ENV_VAR, None)
        else:
            os.environ[cache.OFF_ENV_VAR] = saved


# --------------------------------------------------------------------------------------
# the parser
# --------------------------------------------------------------------------------------
def _add_executor_args(p, what: str) -> None:
    """``--executor`` (doing ``what``) and ``--executor-timeout``."""
    p.add_argument("--executor", metavar="dask://HOST:PORT", help=what)
    p.add_argument("--executor-timeout", type=_float("--executor-timeout", 0.0, 3600.0,
                                                     lo_open=True),
                   default=10.0, metavar="S",
                   help="seconds allowed to reach the scheduler and read its handshake "
                        "(checked before any work; default 10)")


def _parser() -> argparse.ArgumentParser:
    from . import __version__
    parser = _Parser(prog="bufsim", description="bufsim: buffer-pool modelling suite. "
                     "Exit status: 0 ok, 1 a failure while running, 2 bad input or usage.")
    parser.add_argument("--version", action="version", version=f"bufsim {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     parser_class=_Parser)

    p = commands.add_parser("replay", help="replay a trace and print InnoDB's counters",
                            description="Replay a trace through one buffer pool and print "
                            "INNODB_BUFFER_POOL_STATS counters (summed over instances) and "
                            "the hit ratio, as a table, JSON or CSV.")
    _add_trace_args(p)
    _add_config_args(p, multi=False)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--json", action="store_true", help="print JSON (config, totals, per instance)")
    g.add_argument("--csv", action="store_true", help="print one CSV row (parameters, counters, "
                   "provenance)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE (.txt table, .json or .csv) instead of stdout")
    p.set_defaults(func=_cmd_replay)

    p = commands.add_parser("sweep", help="replay a grid of configurations in parallel",
                            description="Replay a trace once per configuration of the grid "
                            "(the cartesian product of the lists given) on every core, write "
                            "one row per configuration (parameters, counters, hit ratio, error, "
                            "provenance) and a chart of hit ratio by pool size.")
    _add_trace_args(p)
    _add_config_args(p, multi=True)
    p.add_argument("--jobs", type=_int("--jobs", 1, 4096), metavar="N",
                   help="worker processes (default: every core; 1 runs serially)")
    _add_executor_args(p, "run on a dask.distributed scheduler instead of local processes")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="results table, .parquet or .csv")
    p.add_argument("--chart", metavar="PNG",
                   help="chart path (.png; an .svg is written beside it); default: OUT with .png")
    p.add_argument("--no-chart", action="store_true", help="do not draw the chart")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_sweep)

    p = commands.add_parser("mrc", help="the LRU miss-ratio curve of a trace",
                            description="The exact LRU miss-ratio curve (Mattson stack "
                            "distances) of a trace, or a SHARDS sample of it, as a table and "
                            "a chart.")
    _add_trace_args(p)
    p.add_argument("--shards", type=_float("--shards", 0.0, 1.0, lo_open=True), metavar="RATE",
                   help="SHARDS sampling rate in (0, 1] (default: exact)")
    p.add_argument("--seed", type=_int("--seed", 0), default=0,
                   help="seed of the SHARDS page hash (default 0)")
    p.add_argument("--sizes", metavar="SIZES", help="pool sizes (grammar of sweep --pool; "
                   "default: 5M, then doubling up to the pages the trace touches)")
    p.add_argument("-o", "--output", metavar="OUT", help="write the curve (.csv, .parquet, .json)")
    p.add_argument("--chart", metavar="PNG", help="chart path (default: OUT with .png, if -o)")
    p.add_argument("--no-chart", action="store_true", help="do not draw the chart")
    p.set_defaults(func=_cmd_mrc)

    p = commands.add_parser("advise", help="recommend a pool size, old_blocks_time and "
                            "instances for a trace, per thread",
                            description="A report from InnoDB replays of the trace: which "
                            "streams (threads) bear latency and why, the pool size at the "
                            "knee of their synchronous reads (InnoDB replays with the better "
                            "old_blocks_time at each size), old_blocks_time 0 vs 1000 there and "
                            "below, and the number of instances from the contention model when "
                            "there is evidence of concurrency, with every assumption stated.")
    _add_trace_args(p)
    p.add_argument("--margin", type=_float("--margin", 0.0, 1.0, lo_open=True), default=0.05,
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
    p.add_argument("--threads", type=_int("--threads", 1, 10_000), default=None, metavar="N",
                   help="concurrent user threads for the contention model (default: the "
                   "trace's threads; a one-thread trace without --threads/--cores is not "
                   "assessed)")
    p.add_argument("--cores", type=_int("--cores", 1, 4096), default=None, metavar="C",
                   help="CPU cores of the server for the contention model (default: one per "
                   "thread)")
    p.add_argument("--gets-per-txn", type=_int("--gets-per-txn", 1), default=None, metavar="G",
                   help="page gets per transaction when the trace has no statement marks "
                        "(default 100)")
    p.add_argument("--preset", default="mysql57", choices=list(PRESETS),
                   help="server version (default mysql57)")
    p.add_argument("--device", choices=DEVICES, help="I/O device model (default ssd)")
    p.add_argument("--pool", metavar="SIZE", help="the pool you have now (e.g. 512M): "
                   "replayed too and shown in the old_blocks_time section")
    p.add_argument("--shards", type=_float("--shards", 0.0, 1.0, lo_open=True), metavar="RATE",
                   help="SHARDS-sample the per-stream LRU curves that choose where to replay "
                   "(default: exact)")
    p.add_argument("--jobs", type=_int("--jobs", 1, 4096), metavar="N",
                   help="worker processes for the replays (default: every core; 1 serially)")
    _add_executor_args(p, "run the replays on a dask.distributed scheduler")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("-o", "--output", metavar="REPORT", help="write REPORT (.md, with its "
                   "figures beside it, or .html with them inside) instead of printing Markdown")
    p.set_defaults(func=_cmd_advise)

    p = commands.add_parser("convert", help="convert a block-I/O trace to a page trace")
    conv = p.add_subparsers(dest="kind", required=True, metavar="KIND", parser_class=_Parser)
    b = conv.add_parser("blktrace", help="blkparse's default text output -> space,page CSV",
                        description="Convert blkparse's default text output (one line per "
                        "event: dev cpu seq time pid action rwbs sector + n [process]) into a "
                        "CSV of space,page,time_ns,thread rows, one per page a request "
                        "touches: page = (sector * 512 - file offset) // page size.")
    b.add_argument("input", metavar="IN", help="blkparse text output")
    b.add_argument("-o", "--output", required=True, metavar="OUT.csv")
    b.add_argument("--page-size", type=_byte_size("--page-size"), default=16384,
                   metavar="BYTES", help="InnoDB page size (default 16K)")
    b.add_argument("--file-offset", type=_byte_size("--file-offset"), default=0,
                   metavar="BYTES", help="byte offset of the tablespace file's first page on "
                   "the traced device (default 0)")
    b.add_argument("--space", type=_int("--space", 0, 2**32 - 1), default=0,
                   help="space id to write (default 0)")
    b.add_argument("--action", default="Q", metavar="ACTIONS",
                   help="blkparse actions to keep (default Q: queued, before merging)")
    b.add_argument("--writes", action="store_true", help="keep writes too (default: reads)")
    b.add_argument("--device", metavar="MAJ,MIN", help="keep only this device (e.g. 8,0)")
    b.set_defaults(func=_cmd_convert)

    lv = commands.add_parser("live", help="work with a live MariaDB server")
    lv_commands = lv.add_subparsers(dest="action", required=True, metavar="ACTION",
                                    parser_class=_Parser)
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
    lt.add_argument("--port", type=_int("--port", 1, 65535), default=3306)
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
    lt.add_argument("--threads", type=_int("--threads", 1, 1024), default=None,
                    help="client threads (streams); overrides the workload's")
    lt.add_argument("--statements", type=_int("--statements", 1, 10_000_000), default=None,
                    help="statements per thread; overrides the workload's")
    lt.add_argument("--seed", type=_int("--seed", 0, 2**63 - 1), default=None,
                    help="overrides the workload's seed")
    lt.add_argument("--get-ns", type=_int("--get-ns", 0, 10**9), default=0, metavar="NS",
                    help="CPU time per page get in the trace (default 0)")
    lt.add_argument("--no-progress", action="store_true", help="do not show progress")
    lt.set_defaults(func=_cmd_live_trace)

    nb = commands.add_parser("notebooks", help="work with the notebooks in notebooks/")
    nb_commands = nb.add_subparsers(dest="action", required=True, metavar="ACTION",
                                    parser_class=_Parser)
    run = nb_commands.add_parser(
        "run", help="execute notebooks with papermill and write build/summary.md and .html",
        description=("Execute notebooks/*.ipynb (sorted) with papermill into build/notebooks/, "
                     "then write build/summary.md and build/summary.html with every "
                     "build/results/*.csv and every figure. A full run (no --quick) is the one "
                     "command that refreshes the committed figures/. Exits 1 if any notebook "
                     "failed."))
    run.add_argument("--quick", action="store_true",
                     help="inject quick = True into each notebook's parameters cell (small "
                     "sizes, for tests); outputs go to build/quick/ so that full-run figures "
                     "are kept")
    run.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    run.add_argument("--jobs", type=_int("--jobs", 1, 256), default=None, metavar="N",
                     help="notebooks executed side by side, each in its own kernel "
                     "(default: one per core)")
    run.add_argument("--no-cache", action="store_true",
                     help="replay everything: neither use nor fill the result cache "
                     "(build/cache/)")
    run.add_argument("names", nargs="*", metavar="NAME",
                     help="notebook stems or prefixes, e.g. 00 or 00_quickstart (default: all)")
    run.set_defaults(func=_cmd_notebooks)
    return parser


def _exit_now(code: int) -> None:
    """End the program at once after Ctrl-C.  Every output was already discarded and
    every worker ended on the way out; what remains is the interpreter's teardown of
    numba, pandas and pyarrow, which takes seconds on a loaded machine, so it is
    skipped (``os._exit``) once stdout and stderr are flushed."""
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _broken_pipe() -> int:
    """The reader of stdout went away (``bufsim ... | head``): stop quietly, as Unix
    tools do, with the status of a process ended by SIGPIPE (128 + 13).  stdout is
    pointed at /dev/null so that the interpreter's final flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout without a file descriptor (captured)
        pass
    return 141


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``bufsim`` command line.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        The exit status: 0 ok, 1 a failure while running, 2 bad input, 130
        interrupted (Ctrl-C; called without ``argv``, as the program, the process
        then ends at once), 141 stdout closed by its reader.  A usage
        error found while parsing the arguments raises ``SystemExit(2)`` after
        printing its line, as argparse does (``--help`` and ``--version`` exit 0).
    """
    as_program = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = ("replay", "sweep", "mrc", "advise", "convert", "notebooks", "live")
    prog = "bufsim" + (f" {argv[0]}" if argv and argv[0] in commands else "")
    try:
        args = _parser().parse_args(argv)
    except UsageError as e:  # as argparse itself does for usage errors: SystemExit(2)
        print(f"{prog}: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    try:
        code = int(args.func(args))
        sys.stdout.flush()   # a closed pipe shows here, not at the interpreter's exit
        return code
    except UsageError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # the engine's message says how far the replay got
        print(f"{prog}: interrupted" + (f": {e}" if str(e) else "") + "; nothing written",
              file=sys.stderr)
        if as_program:
            _exit_now(130)
        return 130
    except BrokenPipeError:
        return _broken_pipe()
    except Exception as e:  # a failure while running: one line, status 1
        msg = " ".join(str(e).split())
        print(f"{prog}: failed: {type(e).__name__}: {msg}", file=sys.stderr)
        return 1
