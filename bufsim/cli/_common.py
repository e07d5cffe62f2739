"""What the subcommands share: the usage error, the parser class, argument types
(each naming its argument and the allowed range), the trace and configuration
arguments, and the checked, staged writing of outputs."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .. import paths
from ..config import DEVICES
from ..trace_import import CANONICAL_COLUMNS, FORMATS as TRACE_FORMATS


class UsageError(ValueError):
    """Bad input or usage: exit status 2."""


def type_error(what: str, message: str) -> argparse.ArgumentTypeError:
    """argparse prefixes 'argument WHAT: ' itself; drop our own prefix."""
    if message.startswith(what + ": "):
        message = message[len(what) + 2:]
    return argparse.ArgumentTypeError(message)


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error (and exit status 2)."""

    def error(self, message):  # noqa: D401 - argparse API
        raise UsageError(f"{message} (see {self.prog} --help)")


def columns_type(text: str) -> dict:
    out = {}
    for part in text.split(","):
        if "=" not in part:
            raise type_error("", f"{part!r} is not NAME=COLUMN (e.g. page=blk,space=sp)")
        k, v = (x.strip() for x in part.split("=", 1))
        if k not in CANONICAL_COLUMNS:
            raise type_error("", f"{k!r} is not a trace column; allowed: "
                                  f"{', '.join(CANONICAL_COLUMNS)}")
        if not v:
            raise type_error("", f"{k}= names no file column")
        if k in out:
            raise type_error("", f"{k!r} is given twice")
        out[k] = v
    return out


def int_type(what, lo=None, hi=None):
    def conv(text):
        try:
            v = int(text)
        except ValueError:
            raise type_error(what, f"{text!r} is not an integer") from None
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise type_error(what, f"{v} is out of range; allowed: {rng}")
        return v
    return conv


def float_type(what, lo, hi, lo_open=False):
    def conv(text):
        try:
            v = float(text)
        except ValueError:
            raise type_error(what, f"{text!r} is not a number") from None
        if not (v > lo if lo_open else v >= lo) or v > hi:
            raise type_error(what, f"{v} is out of range; allowed: "
                             f"{'(' if lo_open else '['}{lo}, {hi}]")
        return v
    return conv


def size_type(what):
    def conv(text):
        from ..sweeps import parse_sizes
        try:
            v = parse_sizes(text, what)
        except ValueError as e:
            raise type_error(what, str(e)) from None
        if len(v) != 1:
            raise type_error(what, f"give one size, got {text!r}")
        return v[0]
    return conv


def byte_size_type(what):
    def conv(text):
        s = text.strip().upper()
        mult = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}.get(s[-1:], 1)
        num = s[:-1] if s[-1:] in "KMGT" else s
        try:
            v = int(num) * mult
        except ValueError:
            raise type_error(what, f"{text!r} is not a byte count (e.g. 16K, 1048576)") \
                from None
        if v < 0:
            raise type_error(what, f"{text!r} is negative")
        return v
    return conv


def add_trace_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", metavar="TRACE",
                   help="trace file: CSV/Parquet with columns space,page[,time_ns|time_ms]"
                        "[,thread][,statement], or a trace saved by bufsim (.npy, .parquet)")
    p.add_argument("--columns", type=columns_type, metavar="NAME=COL,...",
                   help="map trace columns to the file's (e.g. page=blk,space=sp); names: "
                        + ", ".join(CANONICAL_COLUMNS))
    p.add_argument("--format", choices=TRACE_FORMATS,
                   help="file format (default: guessed from the name)")


def add_config_args(p: argparse.ArgumentParser, multi: bool) -> None:
    from ..config import PRESETS
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
        p.add_argument("--pool", required=True, type=size_type("--pool"), metavar="SIZE",
                       help="innodb_buffer_pool_size: 128M, 4G, or pages (8192)")
        p.add_argument("--old-blocks-time", type=int_type("--old-blocks-time", 0, 2**32 - 1),
                       metavar="MS", help="innodb_old_blocks_time in ms (preset default)")
        p.add_argument("--old-blocks-pct", type=int_type("--old-blocks-pct", 5, 95), metavar="PCT",
                       help="innodb_old_blocks_pct (preset default 37)")
        p.add_argument("--instances", type=int_type("--instances", 1, 64), metavar="N",
                       help="innodb_buffer_pool_instances (preset default)")


def add_executor_args(p, what: str) -> None:
    """``--executor`` (doing ``what``) and ``--executor-timeout``."""
    p.add_argument("--executor", metavar="dask://HOST:PORT", help=what)
    p.add_argument("--executor-timeout", type=float_type("--executor-timeout", 0.0, 3600.0,
                                                         lo_open=True),
                   default=10.0, metavar="S",
                   help="seconds allowed to reach the scheduler and read its handshake "
                        "(checked before any work; default 10)")


def overrides(args) -> dict:
    kw = {"pool_pages": args.pool}
    for a, f in (("old_blocks_time", "old_blocks_time_ms"), ("old_blocks_pct", "old_blocks_pct"),
                 ("instances", "instances"), ("device", "device")):
        v = getattr(args, a)
        if v is not None:
            kw[f] = v
    return kw


def checked_output(path: str | None, allowed: Sequence[str], what: str = "-o",
                   inputs: Sequence[str] = ()) -> Path | None:
    """:func:`bufsim.outputs.check_output`, before any work; a refusal is a UsageError."""
    from ..outputs import check_output
    try:
        return check_output(path, allowed, what, inputs)
    except ValueError as e:
        raise UsageError(str(e)) from None


def chart_target(path: Path) -> tuple[str, Path]:
    """``(stem, directory)`` for save_figure from ``out.png`` / ``out.svg`` / ``out``."""
    from ..figures import NAME_RE
    stem = path.stem if path.suffix.lower() in (".png", ".svg") else path.name
    if not NAME_RE.fullmatch(stem):
        raise UsageError(f"--chart: {path.name!r}: the file name may hold letters, digits, "
                         "'_', '-' and '.' only")
    return stem, path.parent if str(path.parent) else Path(".")


def read_trace_arg(args):
    """The trace of ``args.trace``; bad input becomes a UsageError."""
    from ..sweeps import load_trace
    if Path(args.trace).is_dir():
        raise UsageError(f"TRACE: {args.trace} is a directory, not a trace file")
    if not Path(args.trace).is_file():
        raise UsageError(f"TRACE: no such file: {args.trace}")
    try:
        return load_trace(args.trace, columns=args.columns, format=args.format)
    except (ValueError, FileNotFoundError) as e:
        raise UsageError(f"TRACE: {e}") from None


def write_frame(df, path: Path, staged=None) -> None:
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


def save_chart(chart_obj, target: Path, staged) -> None:
    """Save an Altair chart as ``target`` .png and .svg through ``staged``: rendered
    into a scratch folder beside the target, moved into place with the other outputs."""
    from ..figures import save_figure
    stem, directory = chart_target(target)
    scratch = staged.folder(directory / (stem + ".png"))
    save_figure(chart_obj, stem, directory=scratch)
    for sfx in (".png", ".svg"):
        staged.move(scratch / (stem + sfx), directory / (stem + sfx))


def print_table(rows: Sequence[tuple[str, object]], out=None) -> None:
    out = out or sys.stdout
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        if isinstance(v, float):
            v = f"{v:.6f}"
        elif isinstance(v, int):
            v = f"{v:,}"
        print(f"{k:<{w}}  {v}", file=out)


def say_compiling(configs) -> None:
    """Say on stderr, before the silence, that a replay is about to compile its kernel
    (:func:`bufsim.engine.compile_notice`)."""
    from ..engine import compile_notice
    line = compile_notice(configs)
    if line:
        print(line, file=sys.stderr, flush=True)


def check_executor(spec: str, timeout: float) -> str:
    """The address of the dask scheduler ``spec`` names, after a handshake with it
    (:func:`bufsim.cluster.check_scheduler`): refused before any work."""
    from ..cluster import SchedulerError, check_scheduler
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


def make_executor(address: str, timeout: float):
    from distributed import Client
    return Client(address, timeout=timeout)
