"""Traces: re-iterable streams of run-length encoded page gets.

A trace event is one page index (dense, see :class:`bufsim.Tablespaces`), the
number of consecutive gets of that page (a scan touching a page 100 times in a
row is one event with ``count=100``), the CPU time charged per get in
nanoseconds, a stream id and flag bits.  Events come in :class:`Chunk` objects
(parallel NumPy arrays); a :class:`Trace` yields chunks and can be iterated any
number of times, either from chunks held in memory or from a generator factory,
so a trace of billions of gets replays in bounded memory.

Traces are saved and loaded as ``.npy`` (a structured array plus a
``<path>.tablespaces.json`` sidecar) or ``.parquet`` (one row group per chunk,
tablespaces in the schema metadata, read back lazily).  A user's own trace (CSV,
TSV, Parquet, npz, libCacheSim oracleGeneral or one page id per line) is
imported, and streamed, by :func:`read_trace` (in :mod:`bufsim.trace_import`,
re-exported here).
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._validation import TraceError, check_int, span
from .paths import atomic_path
from .pages import SpaceSpec, Tablespaces, as_int64

__all__ = ["FLAG_AHI", "FLAG_MODIFY", "FLAG_SHORTCUT", "FLAG_STMT_END", "FLAG_RELATCH", "FLAG_TEMP",
           "FLAG_STEP", "FLAG_DESCENT", "FLAG_NO_RA", "FLAG_KIND", "FLAG_MASK", "Chunk", "Trace",
           "read_trace", "TRACE_DTYPE"]

# The flag bits are defined beside the kernels that read them (bufsim.policies._state,
# where each is documented) and re-exported here, the trace's public vocabulary.
from .policies import (  # noqa: E402
    FLAG_AHI, FLAG_DESCENT, FLAG_KIND, FLAG_MASK, FLAG_MODIFY, FLAG_NO_RA, FLAG_RELATCH,
    FLAG_SHORTCUT, FLAG_STEP, FLAG_STMT_END, FLAG_TEMP,
)

_COLUMNS = ("page", "count", "cpu_ns", "stream", "flags")
#: Record layout of a saved ``.npy`` trace.
TRACE_DTYPE = np.dtype([("space", "<i8"), ("page_no", "<i8"), ("count", "<i8"), ("cpu_ns", "<i8"),
                        ("stream", "<i8"), ("flags", "u1")])
_FILE_COLUMNS = TRACE_DTYPE.names
_META_TS = b"bufsim.tablespaces"
_META_TRACE = b"bufsim.trace"


# --------------------------------------------------------------------------------------
# Chunk
# --------------------------------------------------------------------------------------
def _range(a: np.ndarray) -> tuple[int, int]:
    """``(a.min(), a.max())`` of a non-empty integer array: :func:`span`'s one pass, or
    NumPy's two for a read-only array (a Parquet file's), for which numba would compile
    ``span`` a second time."""
    return span(a) if a.flags.writeable else (a.min(), a.max())


def first_true(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


#: The attribute under which a replay keeps, on a chunk it was fed, that chunk's gets
#: per tablespace as ``(tablespaces, gets)`` (``bufsim._pool_state.PoolState`` counts them
#: once per chunk; a notebook driver that hands the same events to many pools may carry
#: them to a copy of the chunk: ``bufsim.experiments.ssb_chunks``).
SPACE_GETS_MEMO = "_space_gets"


@dataclass(frozen=True, eq=False)
class Chunk:
    """A block of trace events as parallel one-dimensional arrays.

    Parameters
    ----------
    page : numpy.ndarray of int64
        Dense page index of each event (>= 0; checked against a pool size by
        :meth:`validate`).
    count : numpy.ndarray of int64
        Consecutive gets of the page (>= 1).
    cpu_ns : numpy.ndarray of int64
        CPU (or think) time charged per get, in nanoseconds (>= 0).
    stream : numpy.ndarray of int64
        Stream id (>= 0).
    flags : numpy.ndarray of uint8
        Bits of :data:`FLAG_AHI`, :data:`FLAG_MODIFY`, :data:`FLAG_SHORTCUT`, :data:`FLAG_RELATCH`,
        :data:`FLAG_STMT_END` and :data:`FLAG_TEMP`, and the 2-bit access kind
        (:data:`FLAG_STEP`, :data:`FLAG_DESCENT`, both = :data:`FLAG_NO_RA`, neither = unknown).

    Notes
    -----
    Arrays are cast to their dtypes on construction with checks (floats must be
    integral and finite) and the value ranges above are enforced, so every Chunk
    is well formed; prefer :meth:`from_arrays`, which also broadcasts scalars.  The
    checks are made once, here: a chunk keeps the range of its pages, counts, CPU times
    and stream ids (one pass over each column), which a replay reads instead of scanning
    the columns again; so its arrays must not be changed afterwards (build a new chunk
    to change events).
    """

    page: np.ndarray
    count: np.ndarray
    cpu_ns: np.ndarray
    stream: np.ndarray
    flags: np.ndarray

    def __post_init__(self):
        n = None
        for col in _COLUMNS:
            v = getattr(self, col)
            if col == "flags":
                a = as_int64(v, "flags") if np.asarray(v).dtype != np.uint8 else np.asarray(v)
                if a.dtype != np.uint8:
                    bad = (a < 0) | (a > 255)
                    if bad.any():
                        i = first_true(bad)
                        raise ValueError(f"flags row {i} = {int(a[i])} is out of range; allowed: 0..255")
                    a = a.astype(np.uint8)
            else:
                a = as_int64(v, col)
            a = np.ascontiguousarray(a)
            if a.ndim != 1:
                raise ValueError(f"{col} must be one-dimensional, got shape {a.shape}")
            if n is None:
                n = a.shape[0]
            elif a.shape[0] != n:
                raise ValueError(f"{col} has {a.shape[0]} rows but page has {n}; columns must "
                                 "have equal lengths")
            object.__setattr__(self, col, a)
        # (lo, hi) of page, count, cpu_ns and stream, one pass each (empty: none)
        spans = {col: _range(getattr(self, col)) for col in ("page", "count", "cpu_ns", "stream")} \
            if n else {}
        if n:   # (the flags' bits outside FLAG_MASK, or'ed: 0 when every row is allowed)
            spans["flags"] = (0, int(np.bitwise_or.reduce(self.flags)) & ~FLAG_MASK)
        object.__setattr__(self, "_spans", spans)
        self._check(None)

    def span(self, col: str) -> tuple[int, int]:
        """``(min, max)`` of column ``col`` (page, count, cpu_ns or stream) of a
        non-empty chunk, as found once at construction."""
        return self._spans[col]

    def _check(self, n_pages: int | None) -> None:
        if not len(self):
            return
        hi = f"0..{n_pages - 1}" if n_pages is not None else ">= 0"
        sp = self._spans
        page_ok = sp["page"][0] >= 0 and (n_pages is None or sp["page"][1] < n_pages)
        # a column whose range is within its bounds has no bad row: no mask is built
        checks = (("page", page_ok, lambda: (self.page < 0) if n_pages is None else
                   (self.page < 0) | (self.page >= n_pages), f"allowed: {hi}"),
                  ("count", sp["count"][0] >= 1, lambda: self.count < 1, "allowed: >= 1"),
                  ("cpu_ns", sp["cpu_ns"][0] >= 0, lambda: self.cpu_ns < 0, "allowed: >= 0"),
                  ("stream", sp["stream"][0] >= 0, lambda: self.stream < 0, "allowed: >= 0"),
                  ("flags", sp["flags"][1] == 0, lambda: (self.flags & ~np.uint8(FLAG_MASK)) != 0,
                   f"allowed: bits of FLAG_AHI={FLAG_AHI} | FLAG_MODIFY={FLAG_MODIFY} | "
                   f"FLAG_SHORTCUT={FLAG_SHORTCUT} | FLAG_STMT_END={FLAG_STMT_END} | "
                   f"FLAG_RELATCH={FLAG_RELATCH} | FLAG_TEMP={FLAG_TEMP} | "
                   f"FLAG_STEP={FLAG_STEP} | FLAG_DESCENT={FLAG_DESCENT}"))
        for col, ok, bad, allowed in checks:
            if not ok:
                i = first_true(bad())
                raise ValueError(f"{col} row {i} = {int(getattr(self, col)[i])} is out of range; "
                                 f"{allowed}")

    @classmethod
    def from_arrays(cls, page, count=1, cpu_ns=0, stream=0, flags=0) -> Chunk:
        """Build a chunk, broadcasting scalars (or length-1 arrays) to ``len(page)``.

        Examples
        --------
        >>> c = Chunk.from_arrays([3, 4, 3], count=[1, 5, 1], cpu_ns=200)
        >>> c.n_gets, c.cpu_ns.tolist()
        (7, [200, 200, 200])
        """
        p = as_int64(page, "page")
        if p.ndim == 0:
            p = p.reshape(1)
        if p.ndim != 1:
            raise ValueError(f"page must be one-dimensional, got shape {p.shape}")
        cols = {}
        for col, v in (("count", count), ("cpu_ns", cpu_ns), ("stream", stream), ("flags", flags)):
            a = np.asarray(v)
            if a.dtype != np.uint8 or col != "flags":
                a = as_int64(a, col)
            if a.shape != p.shape:
                if a.ndim > 1 or (a.ndim == 1 and a.shape[0] != 1):
                    raise ValueError(f"{col} has shape {a.shape}; expected a scalar or {p.shape}")
                a = np.full(p.shape, a.reshape(()) if a.ndim == 0 else a[0], dtype=a.dtype)
            cols[col] = a
        return cls(np.ascontiguousarray(p), **cols)

    @classmethod
    def empty(cls) -> Chunk:
        """A chunk of no events."""
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z.copy(), z.copy(), z.copy(), np.zeros(0, dtype=np.uint8))

    @classmethod
    def concat(cls, chunks: Iterable[Chunk]) -> Chunk:
        """All events of several chunks, in order, as one chunk."""
        chunks = list(chunks)
        if not chunks:
            return cls.empty()
        if len(chunks) == 1:
            return chunks[0]
        return cls(*(np.concatenate([getattr(c, col) for c in chunks]) for col in _COLUMNS))

    def __len__(self) -> int:
        return int(self.page.shape[0])

    @property
    def n_gets(self) -> int:
        """Total gets (sum of ``count``), exact as a Python int (past 2**63 too)."""
        c = self.count
        # counts are >= 1 and below 2**63: sums of their 32-bit halves cannot wrap int64
        hi = int((c >> 32).sum())
        lo = int((c & 0xFFFFFFFF).sum())
        return (hi << 32) + lo

    def validate(self, n_pages: int) -> Chunk:
        """Check every column, pages against ``0..n_pages-1``; return self.

        Raises
        ------
        ValueError
            Naming the column and the first bad row.
        """
        self._check(check_int("n_pages", n_pages, 1))
        return self

    def take(self, index) -> Chunk:
        """The events selected by a slice, boolean mask or index array."""
        return Chunk(*(getattr(self, col)[index] for col in _COLUMNS))

    def __getitem__(self, index) -> Chunk:
        if isinstance(index, (int, np.integer)):
            index = slice(index, index + 1 if index != -1 else None)
        return self.take(index)

    def __eq__(self, other):
        if not isinstance(other, Chunk):
            return NotImplemented
        return all(np.array_equal(getattr(self, c), getattr(other, c)) for c in _COLUMNS)

    __hash__ = None

    def __repr__(self):
        return f"Chunk({len(self)} events, {self.n_gets} gets)"


def split_chunk(chunk: Chunk, size: int) -> list[Chunk]:
    if len(chunk) <= size:
        return [chunk] if len(chunk) else []
    return [chunk.take(slice(i, i + size)) for i in range(0, len(chunk), size)]


# --------------------------------------------------------------------------------------
# Trace
# --------------------------------------------------------------------------------------
class Trace:
    """A re-iterable stream of :class:`Chunk` objects over one :class:`Tablespaces`.

    Parameters
    ----------
    chunks : sequence of Chunk, Chunk, or callable
        Chunks held in memory, or a generator factory: a callable with no
        arguments returning a fresh iterator of chunks each time, so a lazily
        generated trace can be iterated more than once.
    tablespaces : Tablespaces
        The pages the events refer to; every page index must be below
        ``tablespaces.n_pages`` (checked at construction for chunks in memory,
        chunk by chunk while iterating a factory).
    name : str, optional
    stream_names : sequence of str, optional
        Label of every stream id (``stream_names[s]`` for id ``s``), e.g. the
        thread names of an imported trace.
    stream_start_ns : array_like of int, optional
        Per stream id, when the stream's first access happened relative to the
        earliest stream (imported traces with a time column).

    Examples
    --------
    >>> t = Trace.from_arrays([0, 1, 1, 2])
    >>> t.n_gets(), t.tablespaces.n_pages
    (4, 3)
    """

    #: One trace per stream id (0, 1, ...), when the trace already holds its events
    #: split by stream (:func:`bufsim.read_trace` of several threads); replay and
    #: :meth:`split_streams` use them instead of splitting again.
    _by_stream: list | None = None

    def __init__(self, chunks: Sequence[Chunk] | Chunk | Callable[[], Iterator[Chunk]],
                 tablespaces: Tablespaces, name: str = "", *, stream_names=None,
                 stream_start_ns=None):
        if not isinstance(tablespaces, Tablespaces):
            raise ValueError(f"tablespaces must be a Tablespaces, got {type(tablespaces).__name__}")
        if not isinstance(name, str):
            raise ValueError(f"name must be a string, got {name!r}")
        self.tablespaces = tablespaces
        self.name = name
        self.stream_names = None if stream_names is None else tuple(str(s) for s in stream_names)
        self.stream_start_ns = None if stream_start_ns is None else \
            as_int64(stream_start_ns, "stream_start_ns")
        if isinstance(chunks, Chunk):
            chunks = (chunks,)
        if callable(chunks):
            self._factory, self._chunks = chunks, None
        else:
            try:
                chunks = tuple(chunks)
            except TypeError:
                raise ValueError("chunks must be a sequence of Chunk or a callable returning an "
                                 f"iterator of Chunk, got {type(chunks).__name__}") from None
            for k, c in enumerate(chunks):
                self._check_chunk(k, c)
            self._factory, self._chunks = None, chunks

    def _check_chunk(self, k: int, c) -> Chunk:
        if not isinstance(c, Chunk):
            raise ValueError(f"chunk {k} is a {type(c).__name__}, not a Chunk")
        try:
            c.validate(self.tablespaces.n_pages)
        except ValueError as e:
            raise ValueError(f"trace {self.name!r} chunk {k}: {e}") from None
        return c

    # ---- constructors ----------------------------------------------------------------
    @classmethod
    def from_arrays(cls, page, count=1, cpu_ns=0, stream=0, flags=0, *,
                    tablespaces: Tablespaces | None = None, chunk_size: int = 1 << 20,
                    name: str = "") -> Trace:
        """An in-memory trace from event arrays (scalars broadcast).

        ``tablespaces`` defaults to ``Tablespaces.single(page.max() + 1)``.
        """
        chunk_size = check_int("chunk_size", chunk_size, 1)
        c = Chunk.from_arrays(page, count, cpu_ns, stream, flags)
        if tablespaces is None:
            tablespaces = Tablespaces.single(int(c.page.max()) + 1 if len(c) else 1)
        return cls(split_chunk(c, chunk_size), tablespaces, name)

    @classmethod
    def concat(cls, traces: Sequence[Trace], name: str | None = None) -> Trace:
        """One trace replaying several in order; all must share equal tablespaces."""
        traces = list(traces)
        if not traces:
            raise ValueError("traces must hold at least one Trace")
        ts = traces[0].tablespaces
        for j, t in enumerate(traces):
            if not isinstance(t, Trace):
                raise ValueError(f"traces[{j}] is a {type(t).__name__}, not a Trace")
            if t.tablespaces != ts:
                raise ValueError(f"traces[{j}] has other tablespaces than traces[0]; concatenated "
                                 "traces must share one tablespace map")
        if name is None:
            name = "+".join(t.name for t in traces)
        names = {t.stream_names for t in traces}
        sn = names.pop() if len(names) == 1 else None
        if all(t.is_materialized or t._by_stream is not None for t in traces):
            # in memory: the result is too (a trace held split by stream is gathered in
            # file order), so that replay splits it by stream as before
            return cls([c for t in traces for c in (t._chunks if t.is_materialized else t)], ts,
                       name, stream_names=sn)

        def gen():
            for t in traces:
                yield from t
        return cls(gen, ts, name, stream_names=sn)

    # ---- iteration -------------------------------------------------------------------
    @property
    def is_materialized(self) -> bool:
        """True if the chunks are held in memory (not generated on iteration)."""
        return self._chunks is not None

    def __iter__(self) -> Iterator[Chunk]:
        if self._chunks is not None:
            return iter(self._chunks)
        return self._iter_factory()

    def _iter_factory(self):
        for k, c in enumerate(self._factory()):
            yield self._check_chunk(k, c)

    def n_gets(self) -> int:
        """Total gets (one pass)."""
        return sum(c.n_gets for c in self)

    def n_events(self) -> int:
        """Total events (one pass)."""
        return sum(len(c) for c in self)

    def materialize(self) -> Chunk:
        """All events as one chunk (for traces that fit in memory)."""
        return Chunk.concat(self)

    def streams(self) -> np.ndarray:
        """Distinct stream ids, ascending (one pass)."""
        if self._by_stream is not None:
            return np.arange(len(self._by_stream), dtype=np.int64)
        seen = [c.stream[:1] if c.span("stream")[0] == c.span("stream")[1] else
                np.unique(c.stream) for c in self if len(c)]
        return np.unique(np.concatenate(seen)) if seen else np.zeros(0, dtype=np.int64)

    def split_streams(self) -> list[Trace]:
        """One trace per stream id, ascending; stream ids are kept.  In memory, except
        for a trace that holds its streams already split (a :func:`bufsim.read_trace` of
        several threads): its per-stream traces, which read the held arrays."""
        if self._by_stream is not None:
            return list(self._by_stream)
        c = self.materialize()
        out = []
        for s in np.unique(c.stream):
            sub = c.take(c.stream == s)
            label = self.stream_names[s] if self.stream_names and s < len(self.stream_names) else s
            out.append(Trace([sub], self.tablespaces, f"{self.name}[{label}]",
                             stream_names=self.stream_names, stream_start_ns=self.stream_start_ns))
        return out

    def __repr__(self):
        kind = f"{len(self._chunks)} chunks in memory" if self.is_materialized else "generated"
        return f"Trace({self.name!r}, {kind}, {self.tablespaces!r})"

    # ---- persistence -----------------------------------------------------------------
    def _meta(self) -> dict:
        return {"name": self.name, "stream_names": list(self.stream_names) if self.stream_names
                else None, "stream_start_ns": None if self.stream_start_ns is None
                else self.stream_start_ns.tolist()}

    def save(self, path: str | os.PathLike) -> Path:
        """Write the trace to ``.npy`` or ``.parquet`` (by suffix).

        ``.npy`` holds a structured array of :data:`TRACE_DTYPE` (written chunk by
        chunk after a counting pass) and a sidecar ``<path>.tablespaces.json``.
        ``.parquet`` holds the same columns, one row group per chunk, with the
        tablespaces and trace metadata in the schema metadata.  Files are written
        under a temporary sibling name and moved into place, so an existing file
        survives a failed write.

        Returns
        -------
        pathlib.Path
        """
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".npy":
            sidecar = path.with_name(path.name + ".tablespaces.json")
            doc = self.tablespaces.to_dict()
            doc["trace"] = self._meta()
            with atomic_path(sidecar) as tmp_side, atomic_path(path) as tmp:
                tmp_side.write_text(json.dumps(doc, sort_keys=True))
                self._write_npy(tmp)
        elif suffix == ".parquet":
            with atomic_path(path) as tmp:
                self._write_parquet(tmp)
        else:
            raise ValueError(f"path suffix {path.suffix!r} is not supported; allowed: .npy, .parquet")
        return path

    def _records(self, c: Chunk) -> np.ndarray:
        rec = np.empty(len(c), dtype=TRACE_DTYPE)
        rec["space"], rec["page_no"] = self.tablespaces.locate(c.page)
        for col in ("count", "cpu_ns", "stream", "flags"):
            rec[col] = getattr(c, col)
        return rec

    def _write_npy(self, tmp: Path) -> None:
        n = self.n_events()
        header = {"descr": np.lib.format.dtype_to_descr(TRACE_DTYPE), "fortran_order": False,
                  "shape": (n,)}
        written = 0
        with open(tmp, "wb") as f:
            np.lib.format.write_array_header_1_0(f, header)
            for c in self:
                if len(c):
                    f.write(self._records(c).tobytes())
                    written += len(c)
        if written != n:
            raise ValueError(f"trace {self.name!r} yielded {written} events on the second pass but "
                             f"{n} on the first; its generator factory is not deterministic")

    def _write_parquet(self, tmp: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq
        schema = pa.schema([(c, pa.uint8() if c == "flags" else pa.int64()) for c in _FILE_COLUMNS],
                           metadata={_META_TS: self.tablespaces.to_json(),
                                     _META_TRACE: json.dumps(self._meta())})
        with pq.ParquetWriter(tmp, schema) as w:
            for c in self:
                if len(c):
                    rec = self._records(c)
                    table = pa.Table.from_arrays([pa.array(rec[col]) for col in _FILE_COLUMNS],
                                                 schema=schema)
                    w.write_table(table, row_group_size=len(c))

    @classmethod
    def load(cls, path: str | os.PathLike, *, chunk_size: int = 1 << 20) -> Trace:
        """Read a trace written by :meth:`save`; both formats are read lazily.

        A ``.npy`` trace is memory-mapped.  Without its ``.tablespaces.json``
        sidecar (or, for Parquet, without the schema metadata) the tablespaces
        are rebuilt from the data: one space per distinct space id, in ascending
        id order, of max page number + 1 pages.
        """
        path = Path(path)
        chunk_size = check_int("chunk_size", chunk_size, 1)
        if not path.exists():
            raise FileNotFoundError(f"no trace at {path}")
        suffix = path.suffix.lower()
        if suffix not in (".npy", ".parquet"):
            raise ValueError(f"path suffix {path.suffix!r} is not supported; allowed: .npy, .parquet")
        if path.is_dir():
            raise TraceError(f"{path}: is a directory, not a trace file")
        try:
            if suffix == ".npy":
                return cls._load_npy(path, chunk_size)
            return cls._load_parquet(path, chunk_size)
        except TraceError:
            raise
        except (OSError, EOFError, UnicodeDecodeError, KeyError, TypeError, ValueError) as e:
            raise TraceError(f"{path}: cannot read as a bufsim {suffix} trace: "
                             f"{type(e).__name__}: {e}") from None

    @classmethod
    def _load_npy(cls, path: Path, chunk_size: int) -> Trace:
        arr = np.load(path, mmap_mode="r")
        if arr.dtype.names is None or not set(_FILE_COLUMNS) <= set(arr.dtype.names) or arr.ndim != 1:
            raise ValueError(f"{path} is not a bufsim trace: expected a one-dimensional structured "
                             f"array with fields {list(_FILE_COLUMNS)}")
        del arr
        sidecar = path.with_name(path.name + ".tablespaces.json")
        meta = {}
        if sidecar.exists():
            doc = json.loads(sidecar.read_text())
            ts = Tablespaces.from_dict(doc)
            meta = doc.get("trace") or {}
        else:
            def cols():
                a = np.load(path, mmap_mode="r")
                for i in range(0, a.shape[0], chunk_size):
                    yield a["space"][i:i + chunk_size], a["page_no"][i:i + chunk_size]
            ts = _tablespaces_from_data(cols(), str(path))

        def gen():
            a = np.load(path, mmap_mode="r")
            for i in range(0, a.shape[0], chunk_size):
                b = np.asarray(a[i:i + chunk_size])
                yield _from_file_columns(ts, {c: b[c] for c in _FILE_COLUMNS}, path, i)
        return cls._with_meta(gen, ts, meta, path)

    @classmethod
    def _load_parquet(cls, path: Path, chunk_size: int) -> Trace:
        import pyarrow.parquet as pq
        pf = pq.ParquetFile(path)
        names = pf.schema_arrow.names
        missing = [c for c in _FILE_COLUMNS if c not in names]
        if missing:
            raise ValueError(f"{path} is not a bufsim trace: missing columns {missing} (to import a "
                             "trace of space, page[, time][, thread][, statement] use bufsim.read_trace)")
        md = pf.schema_arrow.metadata or {}
        meta = json.loads(md[_META_TRACE]) if _META_TRACE in md else {}
        if _META_TS in md:
            ts = Tablespaces.from_json(md[_META_TS])
        else:
            def cols():
                for b in pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20).iter_batches(batch_size=chunk_size,
                                                           columns=["space", "page_no"]):
                    yield (_arrow_int(b.column("space"), "space", path),
                           _arrow_int(b.column("page_no"), "page_no", path))
            ts = _tablespaces_from_data(cols(), str(path))

        def gen():
            row = 0
            for b in pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20).iter_batches(batch_size=chunk_size,
                                                       columns=list(_FILE_COLUMNS)):
                cols = {c: _arrow_int(b.column(c), c, path) for c in _FILE_COLUMNS}
                yield _from_file_columns(ts, cols, path, row)
                row += b.num_rows
        return cls._with_meta(gen, ts, meta, path)

    @classmethod
    def _with_meta(cls, gen, ts, meta, path) -> Trace:
        """The loaded trace; one saved with several named streams (the threads of
        :func:`bufsim.read_trace`, the clients of ``bufsim live trace``) is held split
        by stream as it was before saving, each stream reading the file lazily and
        keeping only its own events, so that a replay gives every stream its own clock
        again."""
        name = meta.get("name") or path.name.split(".")[0]
        names, starts = meta.get("stream_names"), meta.get("stream_start_ns")
        trace = cls(gen, ts, name, stream_names=names, stream_start_ns=starts)
        if names and len(names) > 1:
            trace._by_stream = [trace._only_stream(s) for s in range(len(names))]
        return trace

    def _only_stream(self, s: int) -> Trace:
        """A lazy trace of stream ``s``'s events of this (generated) trace."""
        def gen():
            for c in self:
                keep = c.stream == s
                if keep.all():
                    yield c
                elif keep.any():
                    yield c.take(keep)
        label = self.stream_names[s] if self.stream_names else s
        return Trace(gen, self.tablespaces, f"{self.name}[{label}]",
                     stream_names=self.stream_names, stream_start_ns=self.stream_start_ns)


def _arrow_int(col, name, path) -> np.ndarray:
    if col.null_count:
        raise ValueError(f"{path}: column {name!r} holds {col.null_count} null values")
    return as_int64(col.to_numpy(zero_copy_only=False), f"{path}: column {name!r}")


def _from_file_columns(ts: Tablespaces, cols: dict, path, row0: int) -> Chunk:
    try:
        page = ts.dense(cols["space"], cols["page_no"])
        return Chunk(page, cols["count"], cols["cpu_ns"], cols["stream"], cols["flags"])
    except ValueError as e:
        raise ValueError(f"{path}: in the rows from {row0}: {e}") from None


def _tablespaces_from_data(pairs, where: str) -> Tablespaces:
    """One space per distinct id (ascending), size = max page number + 1."""
    best: dict[int, int] = {}
    for space, page in pairs:
        space = np.asarray(space, dtype=np.int64)
        page = np.asarray(page, dtype=np.int64)
        if not len(space):
            continue
        for col, a in (("space", space), ("page", page)):
            if (a < 0).any():
                i = first_true(a < 0)
                raise ValueError(f"{where}: column {col!r} holds a negative value {int(a[i])}")
        u, inv = np.unique(space, return_inverse=True)
        mx = np.full(len(u), -1, dtype=np.int64)
        np.maximum.at(mx, inv.ravel(), page)
        for s, m in zip(u.tolist(), mx.tolist()):
            best[s] = max(best.get(s, -1), m)
    if not best:
        raise ValueError(f"{where}: no events, so the tablespaces cannot be inferred; pass "
                         "tablespaces= explicitly")
    return Tablespaces([SpaceSpec(s, best[s] + 1) for s in sorted(best)])

