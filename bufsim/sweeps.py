"""Parameter sweeps: one replay per configuration, over any executor.

:func:`sweep` replays a trace once per point of a grid of :class:`bufsim.PoolConfig`
fields (a cartesian product, or an explicit list of points) and returns one
DataFrame: the parameters, InnoDB's counters, the hit ratio, an ``error`` column
(a configuration that fails is recorded there and the others go on) and
provenance columns (bufsim version, git commit, SHA-256 of the trace, the
parameters as JSON).

The points run on a :class:`concurrent.futures.Executor` (a process pool with
one worker per core by default) or on anything with a ``submit`` method that
returns futures with ``.result()``, such as a ``dask.distributed.Client``.
Workers re-read a trace given as a path (once per worker process, then kept);
a :class:`bufsim.Trace` in memory is written once to a temporary ``.npy`` file
that local workers read.  Workers inherit ``NUMBA_CACHE_DIR``, and the parent
compiles (or loads) the replay kernel once before submitting, so workers load
the cached machine code instead of compiling it again.

Sizes on the command line follow :func:`parse_sizes`: ``64M:4G:x2`` (geometric),
``64M,128M,1G`` (a list) or ``8192`` (pages).
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import functools
import hashlib
import itertools
import json
import math
import os
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ._cores import default_jobs
from ._validation import check_int
from .config import PAGE_SIZE, PRESETS, PoolConfig, preset as make_preset

__all__ = ["sweep", "parse_sizes", "parse_values", "expand_grid", "trace_sha256",
           "load_trace", "provenance", "RESULT_COUNTERS", "STREAM_MEASURES", "stream_rows"]

#: Fields a grid may vary: every PoolConfig field except the cost and device objects,
#: plus ``preset`` and ``device`` (a device preset name).
_CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(PoolConfig) if f.name not in ("cost",))
GRID_FIELDS = ("preset",) + _CONFIG_FIELDS

#: Counters copied from ``ReplayResult.totals`` into every result row.
RESULT_COUNTERS = ("NUMBER_PAGES_GET", "NUMBER_PAGES_READ", "NUMBER_PAGES_READ_AHEAD",
                   "NUMBER_READ_AHEAD_EVICTED", "PAGES_MADE_YOUNG", "PAGES_NOT_MADE_YOUNG",
                   "NUMBER_PAGES_WRITTEN", "Innodb_buffer_pool_reads", "evictions",
                   "Innodb_buffer_pool_wait_free", "HIT_RATE")
_MEASURES = ("hit_ratio", "misses", "elapsed_ns", "io_wait_ns")
_PROVENANCE = ("bufsim_version", "git_commit", "trace_sha256", "trace", "params")

_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


# --------------------------------------------------------------------------------------
# grammar of sizes and values
# --------------------------------------------------------------------------------------
def _one_size(text: str, what: str) -> int:
    """Pages in ``'128M'`` (bytes with a unit, 16 KiB pages) or ``'8192'`` (pages)."""
    s = text.strip().upper()
    if s.endswith("B") and s[-2:-1] in _UNITS:
        s = s[:-1]
    unit = s[-1:] if s[-1:] in _UNITS else ""
    num = s[:-1] if unit else s
    try:
        value = float(num) if unit else int(num)
    except ValueError:
        raise ValueError(f"{what}: {text!r} is not a size; allowed: pages (8192) or bytes "
                         "with a unit K, M, G, T (128M, 4G)") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what}: {text!r} is not a positive size")
    if not unit:
        return int(value)
    nbytes = value * _UNITS[unit]
    pages = int(nbytes // PAGE_SIZE)
    if pages < 1:
        raise ValueError(f"{what}: {text!r} is smaller than one 16 KiB page")
    return pages


def parse_sizes(spec: str, what: str = "size") -> list[int]:
    """Pool sizes in 16 KiB pages from the command-line grammar.

    Parameters
    ----------
    spec : str
        ``'64M:4G:x2'``: geometric, from 64 MiB up to 4 GiB (included when hit),
        each size twice the previous (any factor > 1, e.g. ``x1.5``; sizes are
        rounded down to whole pages);
        ``'64M:1G:+64M'``: arithmetic steps;
        ``'64M,128M,1G'``: a list; ``'8192'``: pages (a number without unit).
    what : str
        The name used in error messages (e.g. ``'--pool'``).

    Returns
    -------
    list of int
        Distinct sizes in pages, in the order given (ranges ascending).

    Raises
    ------
    ValueError
        Naming ``what`` and the bad part.

    Examples
    --------
    >>> parse_sizes("64M:256M:x2")
    [4096, 8192, 16384]
    >>> parse_sizes("8192,1G")
    [8192, 65536]
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"{what}: empty; give e.g. 128M, 64M,1G or 64M:4G:x2")
    out: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        if ":" not in part:
            out.append(_one_size(part, what))
            continue
        bits = part.split(":")
        if len(bits) != 3:
            raise ValueError(f"{what}: range {part!r} must be START:STOP:xFACTOR or "
                             "START:STOP:+STEP")
        lo, hi = _one_size(bits[0], what), _one_size(bits[1], what)
        if hi < lo:
            raise ValueError(f"{what}: range {part!r} ends below its start")
        step = bits[2].strip()
        if step[:1].lower() == "x":
            try:
                f = float(step[1:])
            except ValueError:
                f = float("nan")
            if not (math.isfinite(f) and f > 1):
                raise ValueError(f"{what}: factor {step!r} in {part!r} must be a number > 1")
            k = 0
            while True:
                v = int(lo * f**k + 1e-9)
                if v > hi:
                    break
                out.append(v)
                k += 1
                if k > 10_000:
                    raise ValueError(f"{what}: range {part!r} has more than 10000 sizes")
        elif step[:1] == "+":
            d = _one_size(step[1:], what)
            if (hi - lo) // d > 10_000:
                raise ValueError(f"{what}: range {part!r} has more than 10000 sizes")
            out.extend(range(lo, hi + 1, d))
        else:
            raise ValueError(f"{what}: step {step!r} in {part!r} must be xFACTOR (x2) or "
                             "+STEP (+64M)")
    seen: dict[int, None] = {}
    for v in out:
        seen.setdefault(v, None)
    return list(seen)


def parse_values(spec: str, what: str, lo: int | None = None, hi: int | None = None) -> list[int]:
    """Integers from ``'0,1000'`` or a range ``'0:1000:+250'``; each within ``lo..hi``.

    Examples
    --------
    >>> parse_values("0,1000", "--old-blocks-time")
    [0, 1000]
    >>> parse_values("5:95:+30", "--old-blocks-pct")
    [5, 35, 65, 95]
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"{what}: empty; give a number or a comma-separated list")
    out: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        try:
            if ":" in part:
                a, b, s = part.split(":")
                if not s.strip().startswith("+"):
                    raise ValueError
                a, b, s = int(a), int(b), int(s.strip()[1:])
                if s < 1 or b < a:
                    raise ValueError
                out.extend(range(a, b + 1, s))
            else:
                out.append(int(part))
        except ValueError:
            raise ValueError(f"{what}: {part!r} is not an integer (or START:STOP:+STEP)") from None
    for v in out:
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise ValueError(f"{what}: {v} is out of range; allowed: {rng}")
    return list(dict.fromkeys(out))


def expand_grid(grid) -> list[dict]:
    """The points of a grid: a mapping field -> values (cartesian product, the first
    field varying slowest) or a sequence of dicts (used as given).

    Raises
    ------
    ValueError
        For an unknown field (naming it and the allowed ones), an empty list of
        values, or a grid that is neither a mapping nor a sequence of mappings.

    Examples
    --------
    >>> expand_grid({"pool_pages": [4096, 8192], "old_blocks_time_ms": [0, 1000]})[1]
    {'pool_pages': 4096, 'old_blocks_time_ms': 1000}
    """
    if isinstance(grid, Mapping):
        keys = list(grid)
        values = []
        for k in keys:
            v = grid[k]
            if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
                v = [v]
            v = list(v)
            if not v:
                raise ValueError(f"grid[{k!r}] is empty; give at least one value")
            values.append(v)
        points = [dict(zip(keys, combo)) for combo in itertools.product(*values)]
    elif isinstance(grid, Sequence) and not isinstance(grid, (str, bytes)):
        points = []
        for j, p in enumerate(grid):
            if not isinstance(p, Mapping):
                raise ValueError(f"grid[{j}] is a {type(p).__name__}, not a mapping of "
                                 "configuration fields")
            points.append(dict(p))
    else:
        raise ValueError("grid must be a mapping of field -> values or a list of dicts, got "
                         f"{type(grid).__name__}")
    if not points:
        raise ValueError("grid has no points")
    for p in points:
        for k in p:
            if k not in GRID_FIELDS:
                raise ValueError(f"grid field {k!r} is unknown; allowed: {', '.join(GRID_FIELDS)}")
    return points


# --------------------------------------------------------------------------------------
# traces and provenance
# --------------------------------------------------------------------------------------
def trace_sha256(trace) -> str:
    """SHA-256 of a trace file's bytes, or of a :class:`bufsim.Trace`'s chunks
    (the page, count, cpu_ns, stream and flags arrays of every chunk, in order,
    then the tablespaces as JSON)."""
    h = hashlib.sha256()
    if isinstance(trace, (str, os.PathLike)):
        with open(trace, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    for c in trace:
        for col in ("page", "count", "cpu_ns", "stream", "flags"):
            h.update(np.ascontiguousarray(getattr(c, col)).tobytes())
    h.update(trace.tablespaces.to_json().encode())
    return h.hexdigest()


@functools.cache
def _git_commit() -> str | None:
    try:
        from .paths import repo_root
        root = repo_root()
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--",
                                "bufsim"], capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def provenance(trace) -> dict:
    """``bufsim_version``, ``git_commit`` (HEAD of the checkout bufsim runs from,
    ``-dirty`` if ``bufsim/`` has uncommitted changes; None outside a checkout)
    and ``trace_sha256`` (:func:`trace_sha256`)."""
    from . import __version__
    return {"bufsim_version": __version__, "git_commit": _git_commit(),
            "trace_sha256": trace_sha256(trace)}


def _is_saved_trace(path: Path) -> bool:
    """A file written by :meth:`bufsim.Trace.save` (``.npy``, or Parquet whose schema
    carries bufsim's tablespaces)."""
    sfx = path.suffix.lower()
    if sfx == ".npy":
        return True
    if sfx in (".parquet", ".pq"):
        try:
            import pyarrow.parquet as pq
            md = pq.ParquetFile(path).schema_arrow.metadata or {}
        except Exception:  # not Parquet: let read_trace complain
            return False
        return b"bufsim.tablespaces" in md
    return False


def load_trace(path, *, columns: Mapping[str, str] | None = None, format: str | None = None):
    """Read a trace file: one saved by :meth:`bufsim.Trace.save` (``.npy``, or a
    bufsim Parquet) with :meth:`bufsim.Trace.load`, anything else with
    :func:`bufsim.read_trace` (``columns`` and ``format`` passed on only when given).

    Raises
    ------
    FileNotFoundError
        If there is no file at ``path``.
    ValueError
        From the reader, naming the row and column of bad input.
    """
    from .trace import Trace
    from .trace_import import read_trace
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no trace file at {p}")
    if columns is None and format is None and _is_saved_trace(p):
        return Trace.load(p)
    kw = {}
    if columns is not None:
        kw["columns"] = dict(columns)
    if format is not None:
        kw["format"] = format
    return read_trace(p, **kw)


_WORKER_TRACE: dict = {}


def _worker_trace(path: str, read_kw: tuple):
    """The trace of ``path`` in this worker process: read once, then kept."""
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns, read_kw)
    if key not in _WORKER_TRACE:
        _WORKER_TRACE.clear()
        kw = dict(read_kw)
        cols = kw.get("columns")
        _WORKER_TRACE[key] = load_trace(path, columns=dict(cols) if cols else None,
                                        format=kw.get("format"))
    return _WORKER_TRACE[key]


# --------------------------------------------------------------------------------------
# one point
# --------------------------------------------------------------------------------------
def make_config(point: Mapping, preset: str = "mysql56") -> PoolConfig:
    """The :class:`PoolConfig` of one grid point: ``preset`` (the point's own
    ``'preset'`` if it has one) with the point's other fields as overrides
    (``pool_pages`` may be a size string such as ``'128M'``)."""
    p = dict(point)
    name = p.pop("preset", preset)
    if name not in PRESETS:
        raise ValueError(f"preset={name!r} is unknown; allowed: {', '.join(PRESETS)}")
    return make_preset(name, **p)


def result_row(res) -> dict:
    """The counters of a :class:`bufsim.ReplayResult` as one flat row:
    :data:`RESULT_COUNTERS`, ``hit_ratio``, ``misses`` (synchronous reads),
    ``elapsed_ns`` (the longest stream's virtual time) and ``io_wait_ns``."""
    row = {k: int(res.totals[k]) for k in RESULT_COUNTERS}
    row["hit_ratio"] = float(res.hit_ratio)
    row["misses"] = int(res.streams["misses"].sum())
    row["elapsed_ns"] = int(res.streams["elapsed_ns"].max())
    row["io_wait_ns"] = int(res.streams["io_wait_ns"].sum())
    return row


#: Per-stream measures of :func:`stream_rows` (and of the ``all`` row of a per-stream sweep).
STREAM_MEASURES = ("gets", "misses", "read_ahead", "hit_ratio", "io_wait_ns", "elapsed_ns")


def stream_rows(res) -> list[dict]:
    """Per stream of a :class:`bufsim.ReplayResult`: ``stream`` (its name), ``gets``,
    ``misses`` (synchronous reads), ``read_ahead`` (pages read ahead because of its
    gets), ``hit_ratio`` (1 - misses / gets), ``io_wait_ns`` and ``elapsed_ns``."""
    out = []
    for r in res.streams.itertuples(index=False):
        g = int(r.gets)
        out.append({"stream": str(r.name), "gets": g, "misses": int(r.misses),
                    "read_ahead": int(r.read_ahead),
                    "hit_ratio": 1 - int(r.misses) / g if g else float("nan"),
                    "io_wait_ns": int(r.io_wait_ns), "elapsed_ns": int(r.elapsed_ns)})
    return out


#: Per-instance counters of a sweep row with ``per_instance=True`` (what
#: :func:`bufsim.contention.instance_demand` reads from a replay).
INSTANCE_COLUMNS = ("NUMBER_PAGES_READ", "PAGES_MADE_YOUNG", "flush_list_inserts",
                    "NUMBER_PAGES_WRITTEN")


def _run_point(source, read_kw: tuple, point: dict, preset: str, streams: bool = False,
               per_instance: bool = False) -> dict:
    """Replay one configuration; never raises (the error goes in the row)."""
    from .engine import replay
    try:
        cfg = make_config(point, preset)
        trace = _worker_trace(source, read_kw) if isinstance(source, str) else source
        res = replay(trace, cfg)
        row = {**result_row(res), "error": None}
        if streams:
            row["_streams"] = stream_rows(res)
        if per_instance:
            row["per_instance"] = {c: res.stats[c].astype(np.int64).tolist()
                                   for c in INSTANCE_COLUMNS if c in res.stats.columns}
        return row
    except Exception as e:  # recorded, the sweep goes on
        return {"error": f"{type(e).__name__}: {e}"}


def _warm_kernel() -> None:
    """Compile (or load from NUMBA_CACHE_DIR) the replay kernel in this process, so
    that worker processes started next find it in the cache."""
    from .engine import replay
    from .trace import Trace
    replay(Trace.from_arrays(np.arange(8)), PoolConfig(pool_pages=320))


def _as_completed(futures):
    """Yield futures as they finish: concurrent.futures', dask's, or in order."""
    if all(isinstance(f, cf.Future) for f in futures):
        yield from cf.as_completed(futures)
        return
    mod = type(futures[0]).__module__ if futures else ""
    if mod.startswith("distributed"):
        from distributed import as_completed
        yield from as_completed(futures)
        return
    yield from futures


def sweep(trace, grid, *, executor=None, jobs: int | None = None, preset: str = "mysql56",
          columns: Mapping[str, str] | None = None, format: str | None = None,
          progress: bool = False, streams: bool = False,
          per_instance: bool = False) -> pd.DataFrame:
    """Replay a trace once per configuration of a grid, in parallel.

    Parameters
    ----------
    trace : str, path-like or Trace
        A trace file (read by :func:`load_trace` in each worker, once per
        worker process) or a :class:`bufsim.Trace` (with a process executor it
        is written once to a temporary ``.npy`` file that the workers load; a
        remote cluster needs a path its workers can read).
    grid : mapping or sequence of mappings
        Field -> values (cartesian product) or a list of points, each a dict of
        :class:`bufsim.PoolConfig` fields (``pool_pages`` may be ``'128M'``),
        optionally with ``'preset'``.
    executor : concurrent.futures.Executor, object with ``submit``, or None
        Where the replays run.  None: a :class:`~concurrent.futures.ProcessPoolExecutor`
        with ``jobs`` workers (default :func:`bufsim._cores.default_jobs`: every core), shut down at the end;
        ``jobs=1`` runs in this process, serially.  A ``dask.distributed.Client``
        works as is.  A given executor is left open.
    jobs : int, optional
        Worker processes of the default executor (>= 1).
    preset : str
        Preset of the points that do not name one (``'mysql56'``...).
    columns, format : optional
        Passed to :func:`bufsim.read_trace` when ``trace`` is a path.
    progress : bool
        Show a tqdm bar over configurations (total and ETA).
    streams : bool
        One row per configuration *and* stream: a ``stream`` column, ``'all'`` for
        the totals row (which keeps every counter) then one row per stream (its
        name) with :data:`STREAM_MEASURES` (the InnoDB counters are pool-wide and
        missing there); ``gets`` and ``read_ahead`` columns are added.
    per_instance : bool
        A ``per_instance`` column: per configuration, ``{counter: [one value per
        instance]}`` of :data:`INSTANCE_COLUMNS` (the input of
        :func:`bufsim.contention.instance_demand`).

    Returns
    -------
    pandas.DataFrame
        One row per point, in grid order: the grid's fields, ``preset``,
        :data:`RESULT_COUNTERS`, ``hit_ratio``, ``misses``, ``elapsed_ns``,
        ``io_wait_ns``, ``error`` (None, or ``"Type: message"`` for a point that
        failed; its counters are then missing), then the provenance columns
        ``bufsim_version``, ``git_commit``, ``trace_sha256``, ``trace`` (the path or
        the trace's name) and ``params`` (the point as JSON).

    Raises
    ------
    ValueError
        Before any replay, for an unknown grid field or preset, or bad ``jobs``.
    FileNotFoundError
        If ``trace`` is a path to no file.

    Examples
    --------
    >>> df = sweep(trace, {"pool_pages": ["64M", "128M"],
    ...                    "old_blocks_time_ms": [0, 1000]})  # doctest: +SKIP
    >>> df[["pool_pages", "old_blocks_time_ms", "hit_ratio", "error"]]  # doctest: +SKIP
    """
    points = expand_grid(grid)
    _check_sweep(preset, jobs, executor)
    read_kw = tuple(sorted({"columns": tuple(sorted(columns.items())) if columns else None,
                            "format": format}.items()))
    source, label = _sweep_source(trace)
    prov = provenance(source if isinstance(source, str) else trace)
    rows = _run_points(points, source, trace, read_kw, preset, streams, per_instance,
                       executor, jobs, progress)
    return _sweep_frame(points, rows, preset, prov, label, streams)


def _check_sweep(preset, jobs, executor) -> None:
    """:func:`sweep`'s preset, ``jobs`` and executor, before any work."""
    if preset not in PRESETS:
        raise ValueError(f"preset={preset!r} is unknown; allowed: {', '.join(PRESETS)}")
    if jobs is not None:
        check_int("jobs", jobs, 1)
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise ValueError(f"executor must have a submit method (a concurrent.futures.Executor "
                         f"or a dask.distributed.Client), got {type(executor).__name__}")


def _sweep_source(trace) -> tuple[object, str]:
    """What the workers read (a resolved path, or the Trace) and the trace's label."""
    from .trace import Trace
    if isinstance(trace, (str, os.PathLike)):
        path = Path(trace)
        if not path.is_file():
            raise FileNotFoundError(f"no trace file at {path}")
        source: object = str(path.resolve())
        label = str(trace)
    elif isinstance(trace, Trace):
        source, label = trace, trace.name
    else:
        raise ValueError(f"trace must be a path or a Trace, got {type(trace).__name__}")
    return source, label


def _run_points(points, source, trace, read_kw, preset, streams, per_instance, executor,
                jobs, progress) -> list:
    """Replay every point, serially or on ``executor`` (a process pool of ``jobs``
    workers when None): one row dict per point, in order (a failed task's row holds its
    error); on Ctrl-C or an error, what runs is cancelled and no process is left."""
    bar = None

    def start_bar():
        # created after the workers are started: tqdm's monitor thread must not be
        # running when a process pool forks
        if progress:
            from tqdm.auto import tqdm
            return tqdm(total=len(points), desc="sweep", unit="config")
        return None
    rows: list[dict | None] = [None] * len(points)
    tmpdir = None
    own = None
    futures: list = []
    try:
        serial = executor is None and (jobs == 1 or len(points) == 1)
        if serial:
            bar = start_bar()
            for i, p in enumerate(points):
                rows[i] = _run_point(source, read_kw, p, preset, streams, per_instance)
                if bar is not None:
                    bar.update(1)
        else:
            _warm_kernel()      # local workers then load the kernel from the cache
            if executor is None:
                own = cf.ProcessPoolExecutor(max_workers=min(jobs or default_jobs(),
                                                             len(points)),
                                             initializer=_ignore_sigint)
                executor = own
            if not isinstance(source, str) and not _in_process(executor):
                tmpdir = tempfile.TemporaryDirectory(prefix="bufsim-sweep-")
                tmp = Path(tmpdir.name) / "trace.npy"
                trace.save(tmp)
                source = str(tmp)
            futures = [executor.submit(_run_point, source, read_kw, p, preset, streams,
                                       per_instance) for p in points]
            bar = start_bar()
            index = {id(f): i for i, f in enumerate(futures)}
            for f in _as_completed(futures):
                i = index[id(f)]
                try:
                    rows[i] = f.result()
                except Exception as e:  # the worker died or the task could not be sent
                    rows[i] = {"error": f"{type(e).__name__}: {e}"}
                if bar is not None:
                    bar.update(1)
    except BaseException:   # Ctrl-C (or any error): cancel what runs, leave no process
        if own is not None:
            _stop_pool(own)
            own = None
        elif executor is not None:
            for f in futures:
                f.cancel()
        raise
    finally:
        if bar is not None:
            bar.close()
        if own is not None:
            own.shutdown()
        if tmpdir is not None:
            tmpdir.cleanup()
    return rows


def _sweep_frame(points, rows, preset, prov, label, streams) -> pd.DataFrame:
    """The rows as :func:`sweep`'s table: the point, its results and provenance, then
    its streams' rows; counters as nullable integers, columns in a fixed order."""
    out = []
    for p, r in zip(points, rows):
        row = {k: v for k, v in p.items()}
        row.setdefault("preset", preset)
        r = dict(r or {"error": "no result"})
        per_stream = r.pop("_streams", [])
        row.update(r)
        row.update(prov)
        row["trace"] = label
        row["params"] = json.dumps({"preset": preset, **p}, sort_keys=True, default=str)
        if streams:
            row["stream"] = "all"
            if r.get("error") is None:
                row["gets"] = sum(x["gets"] for x in per_stream)
                row["read_ahead"] = sum(x["read_ahead"] for x in per_stream)
        out.append(row)
        for x in per_stream:
            out.append({**{k: v for k, v in row.items() if k not in RESULT_COUNTERS},
                        **x})
    df = pd.DataFrame(out)
    measures = _MEASURES + (("gets", "read_ahead") if streams else ())
    for c in RESULT_COUNTERS + measures + ("error",):
        if c not in df.columns:
            df[c] = None
    for c in RESULT_COUNTERS + measures[1:]:
        df[c] = pd.array(df[c], dtype="Int64")
    df["hit_ratio"] = pd.to_numeric(df["hit_ratio"], errors="coerce").astype(float)
    lead = list(dict.fromkeys([k for p in points for k in p] + ["preset"]))
    order = lead + (["stream"] if streams else []) + list(RESULT_COUNTERS + measures) + \
        ["error"] + list(_PROVENANCE)
    return df[order + [c for c in df.columns if c not in order]]


def _ignore_sigint() -> None:
    """Initializer of the sweep's own worker processes: a Ctrl-C in the terminal reaches
    the whole process group; the parent alone handles it (and ends its workers), so a
    worker is never left half-interrupted with the pool waiting on it."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop_pool(pool: cf.ProcessPoolExecutor, grace_s: float = 0.5) -> None:
    """End a process pool now: cancel the waiting configurations, terminate the running
    ones (SIGTERM, then SIGKILL after ``grace_s``) and reap every worker."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(grace_s)
        if p.is_alive():
            p.kill()
            p.join(grace_s)


def _in_process(executor) -> bool:
    return isinstance(executor, cf.ThreadPoolExecutor)
