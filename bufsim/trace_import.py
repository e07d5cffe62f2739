"""Importing a user's own page-access trace: CSV, TSV, Parquet, npz, oracleGeneral, text.

:func:`read_trace` reads a file of one row per page get (or per run of ``count``
gets) in chunks of bounded size.  A first pass validates every row before anything
is replayed (errors are :class:`bufsim.TraceError`, naming the file, the 0-based
data row, the column and, for text formats, the line); the returned
:class:`bufsim.Trace` then re-reads the file on every iteration, so that memory is
bounded by the chunk, not the trace.  Rows become run-length encoded events: one
stream per thread, the time between a thread's accesses as its CPU/think time, and
the end of each statement marked with :data:`bufsim.FLAG_STMT_END`.  It is
re-exported as ``bufsim.read_trace``.
"""
from __future__ import annotations

import bz2
import csv
import re
import gzip
import lzma
import os
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ._validation import TraceError, check_int, describe
from .pages import MAX_SPACE_ID, SpaceSpec, Tablespaces
from .trace import FLAG_MASK, FLAG_STMT_END, Chunk, Trace, first_true, split_chunk

__all__ = ["read_trace", "CANONICAL_COLUMNS", "FORMATS"]

#: Canonical column names a table may carry (map the file's names with ``columns=``).
CANONICAL_COLUMNS = ("space", "page", "time_ns", "time_ms", "thread", "statement", "count",
                     "flags")
#: Values of ``format=``.
FORMATS = ("csv", "tsv", "parquet", "npz", "oracle", "text")
_SUFFIX = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet", ".npz": "npz",
           ".bin": "oracle", ".oraclegeneral": "oracle", ".txt": "text"}
_COMPRESSION = {".gz": "gzip", ".zst": "zstd", ".bz2": "bz2", ".xz": "xz"}
_ALLOWED_SUFFIXES = ".csv, .tsv, .parquet, .npz, .bin or .oracleGeneral, .txt (each optionally " \
                    "compressed: .gz, .zst, also .bz2, .xz for the text formats)"
#: Largest page number (InnoDB's page_no is 32 bits).
MAX_PAGE_NO = 2**32 - 1
#: Largest run length of one row.
MAX_COUNT = 2**32 - 1
#: libCacheSim's oracleGeneral record (24 bytes, little-endian).
ORACLE_DTYPE = np.dtype([("time", "<u4"), ("obj_id", "<u8"), ("size", "<u4"),
                         ("next_access_vtime", "<i8")])
#: pandas' default NA strings (read_csv ``na_values``).
_CSV_NA = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
           "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]
_NA_WORDS = ("nan", "na", "n/a", "null", "none", "<na>", "-nan", "#n/a")
#: Optional columns of free-form labels, read as text.
_LABELS = ("thread", "statement")
#: Order of columns when two errors fall on one row.
_ORDER = ("space", "page", "time", "thread", "statement", "count", "flags")


class _FileMissing(TraceError, FileNotFoundError):
    """No file at the path (a TraceError, and a FileNotFoundError for older callers)."""


def read_trace(path: str | os.PathLike, *, columns: Mapping[str, str] | None = None,
               format: str | None = None, tablespaces: Tablespaces | None = None,
               cpu_ns_per_get: int = 0, chunk_size: int = 1 << 20) -> Trace:
    """Import a user's page-access trace, validating every row, as a streaming Trace.

    Parameters
    ----------
    path : str or path-like
        The trace file.  One row per page get (or run of gets, see ``count``), in
        the order the gets happened.
    columns : mapping of str to str, optional
        Canonical column name -> the file's column name, for tables whose names
        differ, e.g. ``{"page": "blk", "space": "sp"}``.  Canonical names (see
        :data:`CANONICAL_COLUMNS`): ``page`` (required), ``space`` (tablespace id;
        without it every page is in space 0), ``time_ns`` or ``time_ms`` (not
        both; the time of the get, read as decimal text into exact integer
        nanoseconds: ``time_ms`` may carry up to 6 decimals, ``time_ns`` none, and
        a value that is not a whole number of nanoseconds is an error),
        ``thread`` and ``statement`` (any labels; see Notes), ``count`` (run
        length >= 1: the row is that many consecutive gets of its page) and
        ``flags`` (bits of :data:`bufsim.FLAG_AHI` 1, ``FLAG_MODIFY`` 2,
        ``FLAG_SHORTCUT`` 4, ``FLAG_STMT_END`` 8, ``FLAG_RELATCH`` 16, ``FLAG_TEMP`` 32).  A name
        not mapped is looked up as itself.  Other columns are ignored; names and
        values may be padded with spaces.
    format : str, optional
        One of :data:`FORMATS`: ``"csv"``, ``"tsv"``, ``"parquet"``, ``"npz"``
        (one 1-d array per column, read member by member in chunks),
        ``"oracle"`` (libCacheSim's oracleGeneral binary: per 24-byte
        little-endian record uint32 time, uint64 obj_id, uint32 size, int64
        next_access_vtime; ``obj_id`` is the page, the rest is ignored) or
        ``"text"`` (one page id per line).  None guesses from the suffix:
        ``.csv .tsv .parquet/.pq .npz .bin/.oracleGeneral .txt``, each
        optionally followed by ``.gz`` or ``.zst`` (also ``.bz2``, ``.xz`` for
        the text formats); an unknown or ambiguous suffix is an error.
        ``oracle`` and ``text`` put every page in space 0.
    tablespaces : Tablespaces, optional
        The tablespaces the pages belong to.  If None, they are built from the
        data: one space per distinct id (ascending), of max page number + 1 pages.
    cpu_ns_per_get : int, optional
        CPU time charged per get without a time column, and for the last access
        of each thread with one.
    chunk_size : int, optional
        Rows read per block, and the largest number of events per chunk.

    Returns
    -------
    Trace
        Run-length encoded: consecutive rows with the same (thread, space, page,
        flags), of one statement, become one event whose ``count`` is the sum
        of their run lengths.  Threads become stream ids ``0..k-1`` in order of
        first appearance; ``trace.stream_names[s]`` is the label of stream ``s``
        (None without a thread column) and ``trace.stream_start_ns[s]`` the
        time of its first access relative to the earliest thread (None without
        a time column).  With one thread the trace is lazy: every iteration
        re-reads the file in chunks, so memory does not grow with the trace.
        With several threads the events are held in memory, per thread and
        run-length encoded in narrow dtypes (about 9-18 bytes per event: page
        index, run length, CPU time, flags, and a stream id for the file order);
        iterating the trace yields its chunks in file order, and
        :func:`bufsim.replay` (or ``trace.split_streams()``) takes each thread's
        events as they are held, one stream per thread.

    Raises
    ------
    bufsim.TraceError
        (a ``ValueError``) before any replay, naming the file, the 0-based data
        row (text formats: also the line) and the column, for: a missing,
        duplicated or unmapped column; both time columns; an empty, NaN,
        negative or non-integer value (``3.5``, ``abc``; ``time_ns`` is read as
        an exact integer, never through a float); a page or space id above
        ``2**32 - 1``; a count below 1; flag bits outside the defined ones; an
        empty ``thread`` or ``statement``; a space that is not in
        ``tablespaces`` or a page beyond its size; a time earlier than the
        previous access of the same thread; a file with no data rows; a file
        that cannot be read or decompressed (directory, bad gzip, bad UTF-8,
        truncated record).  A missing file raises a TraceError that is also a
        ``FileNotFoundError``.  Other bad arguments raise ``ValueError``.

    Notes
    -----
    The replay is closed-loop: each stream issues its next get when the previous
    one (and its CPU time) is done.  A thread's timestamps therefore become the
    CPU/think time between its accesses.  For an event (a run of ``count`` gets
    of one page starting at time ``t``) whose thread next accesses a page at
    ``t_next``, ``cpu_ns = (t_next - t) // count`` per get; the thread's last
    event gets ``(t_last - t + cpu_ns_per_get) // count``, where ``t_last`` is
    the time of the run's last row (so a single last access costs
    ``cpu_ns_per_get``).  With a zero-latency device the replay thus
    reproduces each thread's original timeline, measured from the thread's
    first access (up to the integer division), and every miss then adds its
    I/O time on top.  Without a time column every get costs ``cpu_ns_per_get``.
    Line numbers assume one record per line (no quoted line breaks).

    Statements are per thread: a run of a thread's rows with the same
    ``statement`` label is one statement, which ends at the run's last row,
    where the thread's next row has another label or the thread has no more
    rows.  Rows of other threads in between do not end it, labels are only
    compared within a thread (two threads may use the same labels), and a label
    may come back (a thread's ``q1, q2, q1`` is three statements).  The event
    holding a statement's last get carries :data:`bufsim.FLAG_STMT_END` (so does
    the event of a row whose ``flags`` carry it); two gets of one page on
    either side of a statement boundary stay two events.  The marks are what
    ``PoolConfig(cleaner_activity="statement")`` needs: the 5.6+ page cleaner
    then runs its LRU batch only in a virtual second in which a statement ended
    (InnoDB's ``srv_check_activity``).  Without the marks the cleaner would stay
    idle under ``"statement"``; keep the default ``cleaner_activity="get"`` for
    such traces.

    Examples
    --------
    A CSV with ``space,page,time_ms,thread`` rows
    ``5,3,0.0,a`` / ``5,3,0.5,a`` / ``5,4,2.0,a`` gives two events:
    page (5, 3) with count 2 and ``cpu_ns`` 1_000_000 per get, and page (5, 4)
    with ``cpu_ns_per_get``.  A TSV of ``blk`` and ``n`` columns is read with
    ``read_trace("t.tsv", columns={"page": "blk", "count": "n"})``.
    """
    src = _Source.open(path, columns, format, chunk_size)
    cpu_ns_per_get = check_int("cpu_ns_per_get", cpu_ns_per_get, 0, 2**62)
    if tablespaces is not None and not isinstance(tablespaces, Tablespaces):
        raise ValueError(f"tablespaces must be a Tablespaces or None, got {describe(tablespaces)}")
    # pass 1: every row validated, and what the trace needs up front
    rows = _Rows(src, tablespaces)
    for block in src.blocks():
        rows.add(block)
    if not rows.n_rows:
        raise TraceError(f"{src.path}: no data rows; nothing to replay")
    ts = tablespaces if tablespaces is not None else Tablespaces(
        [SpaceSpec(s, rows.max_page[s] + 1) for s in sorted(rows.max_page)])
    names = list(rows.thread_ids) if src.has("thread") else None
    start = None
    if src.time_col:
        start = rows.first_time - rows.first_time.min()
    name = src.path.name.split(".")[0]

    def events():
        again = _Rows(src, tablespaces)
        ev = _Events(src, ts, cpu_ns_per_get, chunk_size)
        for block in src.blocks():
            yield from ev.add(again.add(block))
        yield from ev.finish()

    if rows.n_threads > 1:
        ev = _ThreadEvents(src, ts, cpu_ns_per_get, rows.n_threads)
        again = _Rows(src, tablespaces)
        for block in src.blocks():
            ev.add(again.add(block))
        sid, streams = ev.finish()
        return _threaded_trace(sid, streams, ts, name, names, start, chunk_size, cpu_ns_per_get)
    return Trace(events, ts, name, stream_names=names, stream_start_ns=start)


# --------------------------------------------------------------------------------------
# sources: blocks of (rows, lines, {canonical column: pandas Series}) from a file
# --------------------------------------------------------------------------------------
def _guess(path: Path) -> tuple[str, str | None]:
    sfx = [s.lower() for s in path.suffixes]
    comp = _COMPRESSION.get(sfx[-1]) if sfx else None
    body = sfx[:-1] if comp else sfx
    last = _SUFFIX.get(body[-1]) if body else None
    if last is None:
        raise TraceError(f"{path}: file type {''.join(path.suffixes) or '(none)'!r} is not "
                         f"supported; allowed: {_ALLOWED_SUFFIXES}; or pass format= one of "
                         f"{', '.join(FORMATS)}")
    others = {_SUFFIX[s] for s in body[:-1] if s in _SUFFIX} - {last}
    if others:
        raise TraceError(f"{path}: the suffixes {''.join(path.suffixes)!r} name several formats "
                         f"({', '.join(sorted(others | {last}))}); pass format= to say which")
    return last, comp


def _compression_of(path: Path) -> str | None:
    sfx = path.suffix.lower()
    return _COMPRESSION.get(sfx)


def _open_binary(path: Path, comp: str | None):
    if comp is None:
        return open(path, "rb")
    if comp == "gzip":
        return gzip.open(path, "rb")
    if comp == "bz2":
        return bz2.open(path, "rb")
    if comp == "xz":
        return lzma.open(path, "rb")
    import zstandard
    return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)


def _read_exact(f, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        b = f.read(n - got)
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def _too_many_fields_named(reader, path, header, n_columns):
    """Iterate pandas' chunks, turning its "Expected 2 fields in line 3, saw 3" into a
    TraceError naming the row and line (rows count data rows from 0, as elsewhere)."""
    import warnings

    import pandas as pd
    it = iter(reader)
    while True:
        try:
            with warnings.catch_warnings():
                # a *first* data row with more fields than the header is not an error to
                # pandas (index_col=False drops the extras with this warning): make it one
                warnings.filterwarnings("error", message="Length of header or names does not "
                                        "match", category=pd.errors.ParserWarning)
                df = next(it)
        except StopIteration:
            return
        except pd.errors.ParserWarning:
            line = 2 if header == 0 else 1
            raise TraceError(
                f"{path}: row 0 (line {line}): more fields than the header names "
                f"({n_columns} column{'s' if n_columns != 1 else ''}); a row may not have more "
                "fields than the header (quote a field that holds the separator)") from None
        except pd.errors.ParserError as e:
            m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(e))
            if m is None:
                raise
            line = int(m.group(2))
            raise TraceError(
                f"{path}: row {line - (2 if header == 0 else 1)} (line {line}): {m.group(3)} fields, but "
                f"the header names {n_columns} column{'s' if n_columns != 1 else ''}; a row may "
                "not have more fields than the header (quote a field that holds the separator)"
            ) from None
        yield df


def _read_errors():
    import pandas as pd
    import pyarrow as pa
    import zstandard
    return (OSError, EOFError, zlib.error, lzma.LZMAError, UnicodeDecodeError, zipfile.BadZipFile,
            csv.Error,
            zstandard.ZstdError, pd.errors.ParserError, pd.errors.EmptyDataError, pa.ArrowException,
            ValueError, KeyError, TypeError, OverflowError)


class _InterruptWatch:
    """Notes a SIGINT (Ctrl-C) that arrives while a third-party reader runs.

    pandas' C parser calls ``read()`` on the file; a KeyboardInterrupt raised there
    comes back as ``ParserError: ... Calling read(nbytes) on source failed``, which
    would be reported as bad input (and is a ValueError that ``except ValueError``
    swallows).  While the block runs, the SIGINT handler in force (Python's own
    raises KeyboardInterrupt) is wrapped so that ``hit`` records the signal; the
    caller then raises KeyboardInterrupt instead of the reader's error.  Only in the
    main thread (signal handlers live there); elsewhere it does nothing.
    """

    def __init__(self):
        self.hit = False
        self._prev = None

    def __enter__(self):
        import signal
        import threading
        if threading.current_thread() is threading.main_thread():
            prev = signal.getsignal(signal.SIGINT)
            if callable(prev):
                def handler(signum, frame):
                    self.hit = True
                    prev(signum, frame)
                signal.signal(signal.SIGINT, handler)
                self._prev = prev
        return self

    def __exit__(self, *exc):
        if self._prev is not None:
            import signal
            signal.signal(signal.SIGINT, self._prev)
            self._prev = None
        return False


class _Source:
    """A trace file with its format, compression and the map of its columns."""

    def __init__(self, path, fmt, comp, chunk_size):
        self.path, self.format, self.comp, self.chunk_size = path, fmt, comp, chunk_size
        self.names: dict[str, str] = {}   # canonical -> the file's column name
        self.raw: dict[str, object] = {}  # canonical -> the reader's key for it
        self.time_col = None

    def has(self, canon: str) -> bool:
        return canon in self.names

    def label(self, canon: str) -> str:
        """The column as an error message names it."""
        name = self.names.get(canon, canon)
        return repr(name) if name == canon else f"{name!r} ({canon})"

    @classmethod
    def open(cls, path, columns, fmt, chunk_size) -> _Source:
        if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes):
            raise ValueError(f"path must be a str or path-like, got {describe(path)}")
        path = Path(path)
        chunk_size = check_int("chunk_size", chunk_size, 1, 2**40)
        if columns is not None:
            if not isinstance(columns, Mapping):
                raise ValueError(f"columns must be a mapping of canonical name to the file's "
                                 f"column name, got {describe(columns)}")
            seen = {}
            for k, v in columns.items():
                if k not in CANONICAL_COLUMNS:
                    raise ValueError(f"columns: {k!r} is not a canonical column name; allowed: "
                                     f"{', '.join(CANONICAL_COLUMNS)}")
                if not isinstance(v, str) or not v.strip():
                    raise ValueError(f"columns[{k!r}] must be a non-empty column name, got "
                                     f"{describe(v)}")
                if v.strip() in seen:
                    raise ValueError(f"columns: {seen[v.strip()]!r} and {k!r} both map to the "
                                     f"file's column {v!r}")
                seen[v.strip()] = k
            columns = {k: v.strip() for k, v in columns.items()}
        if fmt is None:
            fmt, comp = _guess(path)
        else:
            if fmt not in FORMATS:
                raise ValueError(f"format={fmt!r} is unknown; allowed: {', '.join(FORMATS)} or "
                                 "None (guess from the suffix)")
            comp = _compression_of(path)
        if fmt in ("parquet", "npz") and comp is not None:
            raise TraceError(f"{path}: a compressed {fmt} file ({path.suffix}) is not supported; "
                             f"{fmt} compresses internally (e.g. numpy.savez_compressed)")
        if fmt in ("oracle", "text") and columns:
            raise ValueError(f"columns= does not apply to format {fmt!r} (one page id per "
                             "record, every page in space 0)")
        if not path.exists():
            raise _FileMissing(f"{path}: no trace file at this path")
        if path.is_dir():
            raise TraceError(f"{path}: is a directory, not a trace file")
        src = cls(path, fmt, comp, chunk_size)
        watch = _InterruptWatch()
        try:
            with watch:
                src._map_columns(columns or {})
        except TraceError:
            if watch.hit:
                raise KeyboardInterrupt() from None
            raise
        except _read_errors() as e:
            if watch.hit:   # an interrupt that the reader turned into its own error
                raise KeyboardInterrupt() from None
            raise TraceError(f"{path}: cannot read as {fmt}"
                             f"{f' ({comp}-compressed)' if comp else ''}: "
                             f"{type(e).__name__}: {e}") from None
        return src

    # ---- columns -------------------------------------------------------------------
    def _file_columns(self) -> list[tuple[str, object]]:
        """(stripped name, reader key) of every column of the file, in order."""
        if self.format in ("csv", "tsv"):
            return self._csv_header()
        if self.format == "parquet":
            import pyarrow.parquet as pq
            return [(n.strip(), n) for n in pq.ParquetFile(self.path).schema_arrow.names]
        if self.format == "npz":
            with zipfile.ZipFile(self.path) as zf:
                members = [m for m in zf.namelist()]
            bad = [m for m in members if not m.endswith(".npy")]
            if bad:
                raise TraceError(f"{self.path}: member {bad[0]!r} is not a .npy array; an npz "
                                 "trace holds one 1-d array per column")
            return [(m[:-4].strip(), m) for m in members]
        if self.format == "oracle":
            return [("obj_id", "obj_id")]
        return [("page", 0)]

    def _csv_header(self):
        import pandas as pd
        sep = "," if self.format == "csv" else "\t"
        with _open_binary(self.path, self.comp) as f:
            head = b""
            while b"\n" not in head and len(head) < 1 << 22:
                b = f.read(1 << 16)
                if not b:
                    break
                head += b
        line = head.split(b"\n", 1)[0].decode("utf-8").lstrip("\ufeff").rstrip("\r")
        if not line.strip():
            raise TraceError(f"{self.path}: the file is empty or its first line is blank "
                             "(expected a header line naming the columns, e.g. space,page)")
        names = [n.strip() for n in next(csv.reader([line], delimiter=sep))]
        keys = list(pd.read_csv(self.path, sep=sep, nrows=0, skipinitialspace=True,
                                compression=self.comp, encoding="utf-8-sig").columns)
        if len(keys) != len(names):
            raise TraceError(f"{self.path}: cannot parse the header line {line[:80]!r}")
        return list(zip(names, keys))

    def _map_columns(self, columns: dict) -> None:
        cols = self._file_columns()
        found = [n for n, _ in cols]
        seen = set()
        for n in found:
            if n in seen:
                raise TraceError(f"{self.path}: column {n!r} appears twice; column names must be "
                                 "unique")
            seen.add(n)
        keys = dict(cols)
        self.all_keys = [k for _, k in cols]
        if self.format == "oracle":
            self.names, self.raw = {"page": "obj_id"}, {"page": "obj_id"}
            return
        for canon in CANONICAL_COLUMNS:
            name = columns.get(canon, canon)
            if name in keys:
                self.names[canon], self.raw[canon] = name, keys[name]
            elif canon in columns:
                raise TraceError(f"{self.path}: columns maps {canon!r} to {name!r}, but the file "
                                 f"has no such column; found columns: {found}")
        # an unmapped canonical name that is another column's mapped source is not its own
        taken = {v for k, v in columns.items()}
        for canon in list(self.names):
            if canon not in columns and self.names[canon] in taken:
                del self.names[canon], self.raw[canon]
        if "page" not in self.names:
            raise TraceError(f"{self.path}: missing required column 'page'; found columns: "
                             f"{found} (required: page; optional: space, time_ns or time_ms, "
                             "thread, statement, count, flags; map other names with columns=)")
        if "time_ns" in self.names and "time_ms" in self.names:
            raise TraceError(f"{self.path}: both columns 'time_ns' and 'time_ms' are present; "
                             "keep one")
        self.time_col = "time_ns" if "time_ns" in self.names else \
            "time_ms" if "time_ms" in self.names else None

    # ---- blocks --------------------------------------------------------------------
    def blocks(self):
        """Blocks of ``(rows, lines or None, {canonical: pandas.Series})``; read errors
        become TraceError naming the file."""
        gen = {"csv": self._csv_blocks, "tsv": self._csv_blocks, "text": self._text_blocks,
               "parquet": self._parquet_blocks, "npz": self._npz_blocks,
               "oracle": self._oracle_blocks}[self.format]()
        errors = _read_errors()
        while True:
            watch = _InterruptWatch()
            try:
                with watch:
                    block = next(gen)
            except StopIteration:
                return
            except TraceError:
                if watch.hit:
                    raise KeyboardInterrupt() from None
                raise
            except errors as e:
                gen.close()
                if watch.hit:   # an interrupt that the reader turned into its own error
                    raise KeyboardInterrupt() from None
                raise TraceError(f"{self.path}: cannot read as {self.format}"
                                 f"{f' ({self.comp}-compressed)' if self.comp else ''}: "
                                 f"{type(e).__name__}: {e}") from None
            yield block

    def _pandas_blocks(self, sep, header, used_keys, numeric):
        """Blocks of a CSV/TSV/text file.  The time column is read as pandas infers it
        while every block comes out as integers (exact, and fast); at the first block
        where it would be floats or text (a fraction, a blank cell, an exponent), the
        file is read again from its start with the time column as text, the blocks
        already given skipped, so that :func:`_parse_time` sees the decimal text."""
        given = 0
        first = self._pandas_chunks(sep, header, used_keys, numeric, False)
        for block, kind in first:
            if self.time_col and kind not in "iu":
                first.close()
                break
            given += 1
            yield block
        else:
            return
        for k, (block, _) in enumerate(self._pandas_chunks(sep, header, used_keys, numeric,
                                                           True)):
            if k >= given:
                yield block

    def _pandas_chunks(self, sep, header, used_keys, numeric, time_as_text: bool):
        """``(block, dtype kind of the time column or '')`` of every chunk."""
        import pandas as pd
        dtypes = {self.raw[c]: str for c in _LABELS if c in self.names}
        if self.time_col and time_as_text:   # decimal text for _parse_time
            dtypes[self.raw[self.time_col]] = str
        na = {self.raw[c]: _CSV_NA for c in numeric}
        # With a header, every column is parsed (no usecols): pandas then refuses a row
        # with more fields than the header ("Expected 2 fields in line 3, saw 3"), which
        # usecols would drop silently; unused columns are read as text.
        if header == 0:
            used = set(self.raw.values())
            dtypes = {k: str for k in self.all_keys if k not in used} | dtypes
            used_keys = None
        reader = pd.read_csv(self.path, sep=sep, header=header, skipinitialspace=True,
                             skip_blank_lines=False, usecols=used_keys, dtype=dtypes,
                             index_col=False,
                             keep_default_na=False, na_values=na, chunksize=self.chunk_size,
                             compression=self.comp, encoding="utf-8-sig",
                             names=None if header == 0 else [0])
        line0 = 2 if header == 0 else 1
        row0 = 0
        used = list(self.names)
        with reader:
            for df in _too_many_fields_named(reader, self.path, header, len(self.all_keys)):
                cols = {c: df[self.raw[c]].reset_index(drop=True) for c in used}
                kind = cols[self.time_col].dtype.kind if self.time_col else ""
                blank = np.logical_and.reduce([_blank(cols[c]) for c in used])
                lines = line0 + np.arange(len(df), dtype=np.int64)
                line0 += len(df)
                if blank.any():
                    keep = ~blank
                    cols = {c: s[keep].reset_index(drop=True) for c, s in cols.items()}
                    lines = lines[keep]
                rows = row0 + np.arange(len(lines), dtype=np.int64)
                row0 += len(lines)
                yield (rows, lines, cols), kind

    def _csv_blocks(self):
        numeric = [c for c in self.names if c not in _LABELS]
        yield from self._pandas_blocks("," if self.format == "csv" else "\t", 0,
                                       [self.raw[c] for c in self.names], numeric)

    def _text_blocks(self):
        # one field per line: a separator that does not occur in text, so that "3,4" or
        # "3 4" is one value (and not a number), never a page with the rest dropped
        yield from self._pandas_blocks("\x1f", None, [0], ["page"])

    def _parquet_blocks(self):
        import pyarrow as pa
        import pyarrow.parquet as pq
        import pandas as pd

        def mapper(t):
            if pa.types.is_integer(t):
                return pd.UInt64Dtype() if t == pa.uint64() else pd.Int64Dtype()
            return None
        row0 = 0
        used = list(self.names)
        # without pre-buffering, and with buffered column reads, pyarrow's memory stays flat
        # (pre-buffered row groups made it grow by about 0.75 byte per row read)
        pf = pq.ParquetFile(self.path, pre_buffer=False, buffer_size=1 << 20)
        for b in pf.iter_batches(batch_size=self.chunk_size, columns=[self.raw[c] for c in used]):
            cols = {c: self._parquet_column(b.column(k), c, row0).to_pandas(types_mapper=mapper)
                    for k, c in enumerate(used)}
            rows = row0 + np.arange(b.num_rows, dtype=np.int64)
            row0 += b.num_rows
            yield rows, None, cols

    def _parquet_column(self, col, canon: str, row0: int):
        """A Parquet column ready for pandas: bytes (binary) columns become text when
        they hold UTF-8, else a TraceError names the row and the column."""
        import pyarrow as pa
        import pyarrow.compute as pc
        if not (pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type)
                or pa.types.is_fixed_size_binary(col.type)):
            return col
        try:
            return pc.cast(col, pa.string())
        except pa.ArrowInvalid:
            for i, v in enumerate(col.to_pylist()):
                if v is not None:
                    try:
                        v.decode("utf-8")
                    except UnicodeDecodeError:
                        raise TraceError(
                            f"{self.path}: row {row0 + i}: column {self.label(canon)} holds "
                            f"bytes that are not UTF-8 text ({v[:20]!r}); store numbers as "
                            "integers and labels as strings") from None
            raise

    def _npz_blocks(self):
        import pandas as pd
        used = list(self.names)
        with zipfile.ZipFile(self.path) as zf:
            files, dtypes, n = {}, {}, None
            try:
                for c in used:
                    f = zf.open(self.raw[c])
                    files[c] = f
                    version = np.lib.format.read_magic(f)
                    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                        np.lib.format.read_array_header_2_0
                    shape, _fortran, dtype = read(f)
                    if len(shape) != 1 or dtype.hasobject:
                        raise TraceError(f"{self.path}: array {self.names[c]!r} must be a "
                                         f"one-dimensional array of numbers or strings, got "
                                         f"shape {shape} dtype {dtype}")
                    if n is not None and shape[0] != n:
                        raise TraceError(f"{self.path}: array {self.names[c]!r} has {shape[0]} "
                                         f"rows but {self.names[used[0]]!r} has {n}; the arrays "
                                         "must have equal lengths")
                    n, dtypes[c] = shape[0], dtype
                for i in range(0, n, self.chunk_size):
                    k = min(self.chunk_size, n - i)
                    cols = {}
                    for c in used:
                        raw = _read_exact(files[c], k * dtypes[c].itemsize)
                        if len(raw) != k * dtypes[c].itemsize:
                            raise TraceError(f"{self.path}: array {self.names[c]!r} is truncated "
                                             f"at row {i + len(raw) // dtypes[c].itemsize}")
                        cols[c] = pd.Series(np.frombuffer(raw, dtype=dtypes[c]))
                    yield np.arange(i, i + k, dtype=np.int64), None, cols
            finally:
                for f in files.values():
                    f.close()

    def _oracle_blocks(self):
        import pandas as pd
        size = ORACLE_DTYPE.itemsize
        row0 = 0
        with _open_binary(self.path, self.comp) as f:
            while True:
                raw = _read_exact(f, self.chunk_size * size)
                if not raw:
                    return
                k = len(raw) // size
                if k * size != len(raw):
                    raise TraceError(f"{self.path}: row {row0 + k}: a truncated record of "
                                     f"{len(raw) - k * size} bytes at the end (oracleGeneral "
                                     f"records are {size} bytes)")
                rec = np.frombuffer(raw, dtype=ORACLE_DTYPE)
                yield (np.arange(row0, row0 + k, dtype=np.int64), None,
                       {"page": pd.Series(rec["obj_id"])})
                row0 += k


_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _show(x) -> str:
    """`` value <x>`` for an error message, empty for a missing value."""
    import pandas as pd
    if x is None or x is pd.NA or (isinstance(x, float) and np.isnan(x)):
        return ""
    if isinstance(x, str):
        if _NUMBER_TEXT.fullmatch(x.strip()):
            return f" value {x.strip()}"
        return f" value {x.strip()!r}" if x.strip() else ""
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return f" value {int(x)}" if x.is_integer() and abs(x) < 2**53 else f" value {x!r}"
    if isinstance(x, (int, np.integer)):
        return f" value {int(x)}"
    return f" value {x}"


def _blank(series) -> np.ndarray:
    na = series.isna().to_numpy(dtype=bool)
    if series.dtype.kind == "O":
        na = na | (series.fillna("").astype(str).str.strip().to_numpy() == "")
    return na


def _parse_int(series, scale: int = 1):
    """Exact non-negative integers from a pandas Series of numbers or strings.

    Returns ``(values, bad, reason)``: ``values`` int64 (0 where bad), ``bad`` a
    boolean mask and ``reason(i)`` the complaint about bad row ``i``.  With
    ``scale`` > 1 (time in ms -> ns) fractional inputs are allowed and rounded to
    integer units of 1/scale.
    """
    import pandas as pd
    n = len(series)
    top = (2**63 - 1) // scale
    kind = series.dtype.kind
    if kind == "b":
        return np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool), lambda i: "is not an integer"
    if kind in "iu":
        na = series.isna().to_numpy(dtype=bool)
        raw = series.to_numpy(dtype=getattr(series.dtype, "numpy_dtype", series.dtype), na_value=0)
        neg = raw < 0
        big = raw > top
        bad = na | neg | big
        values = np.where(bad, 0, raw).astype(np.int64) * scale
        return values, bad, lambda i: ("is missing (null)" if na[i] else "is negative" if neg[i]
                                       else "is too large")
    strings = None
    exact = np.zeros(n, dtype=bool)
    ivals = np.zeros(n, dtype=np.int64)
    ibig = np.zeros(n, dtype=bool)
    if kind == "f":
        f = series.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        strings = series.astype(object).where(series.notna(), "").astype(str).str.strip()
        exact = strings.str.fullmatch(r"[+-]?[0-9]+").to_numpy(dtype=bool)
        for i in np.flatnonzero(exact):
            v = int(strings.iloc[i])
            if -top <= v <= top:
                ivals[i] = v * scale
            else:
                ibig[i] = True
        f = np.full(n, np.nan)
        if not exact.all():
            f[~exact] = pd.to_numeric(strings[~exact], errors="coerce").to_numpy(
                dtype=np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore", over="ignore"):
        fs = f * scale
        ok_f = np.isfinite(fs) & (np.abs(fs) < 2.0**63)
        if scale == 1:
            ok_f &= f == np.floor(f)
        ok_f &= ~exact
        fvals = np.rint(np.where(ok_f, fs, 0.0)).astype(np.int64)
    values = np.where(exact, ivals, fvals)
    parsed = (exact & ~ibig) | ok_f
    values[~parsed] = 0
    neg = parsed & (values < 0)
    bad = ~parsed | neg

    def reason(i):
        if neg[i]:
            return "is negative"
        if ibig[i]:
            return "is too large"
        s = None if strings is None else strings.iloc[i]
        if s == "":
            return "is empty"
        if np.isnan(f[i]):
            return "is empty or NaN" if s is None or s.lower() in _NA_WORDS else "is not a number"
        if not np.isfinite(f[i]):
            return "is not finite"
        if abs(fs[i]) >= 2.0**63:
            return "is too large"
        return "is not an integer"
    return values, bad, reason


#: A time written in plain decimal notation: integer part, optional fraction.
_PLAIN_DECIMAL = r"^\s*\+?0*(?P<i>[0-9]*)(?:\.(?P<f>[0-9]*))?\s*$"


def _parse_time(series, scale: int):
    """Exact integer nanoseconds from a time column (``scale`` ns per unit: 1 for
    ``time_ns``, 10**6 for ``time_ms``), read as decimal text, never through a float.

    Integer columns are taken as they are.  Text (CSV/TSV cells; Parquet or npz
    strings) and binary floats (by their shortest decimal form) are split at the
    decimal point with pyarrow's vectorised string kernels: the integer part, and the
    fraction padded to the unit's nanosecond digits, whose remaining digits must be
    zeros.  ``1.000001`` ms is 1,000,001 ns exactly; ``1000.5`` ns, ``0.0000005`` ms or
    ``1e3`` (an exponent) cannot be read exactly and are errors.  Returns
    ``(values, bad, reason)`` as :func:`_parse_int` does.
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc
    kind = series.dtype.kind
    if kind in "iub":
        return _parse_int(series, scale)
    n = len(series)
    digits = len(str(scale)) - 1            # nanosecond digits of the fraction: 0 or 6
    top = 2**63 - 1
    if kind == "f":
        arr = pa.array(series.to_numpy(dtype=np.float64, na_value=np.nan), from_pandas=True)
        text = pc.cast(arr, pa.string())
    else:
        text = pa.array(series.to_numpy(dtype=object), type=pa.string(), from_pandas=True)
    # split at the point with plain string kernels (a regex per row is several times slower)
    text = pc.utf8_ltrim(pc.utf8_trim_whitespace(text), "+")
    parts = pc.split_pattern(pc.fill_null(text, ""), ".", max_splits=1)
    nparts = pc.list_value_length(parts)
    ipart = pc.list_element(parts, 0)
    frac = pc.list_element(pc.if_else(pc.equal(nparts, 2), parts,
                                      pa.scalar(["", ""], pa.list_(pa.string()))), 1)
    ipart = pc.utf8_ltrim(ipart, "0")
    empty_i, empty_f = pc.equal(pc.utf8_length(ipart), 0), pc.equal(pc.utf8_length(frac), 0)
    plain = pc.and_(pc.or_(pc.ascii_is_decimal(ipart), empty_i),
                    pc.or_(pc.ascii_is_decimal(frac), empty_f))
    # at least one digit: "0", "0.5", ".5", "7."; not "", ".", "+"
    has_digit = pc.invert(pc.and_(pc.and_(empty_i, empty_f),
                                  pc.invert(pc.match_substring(text, "0"))))
    plain_np = pc.fill_null(pc.and_(plain, has_digit), False).to_numpy(zero_copy_only=False)
    ok = pa.array(plain_np)
    ipart = pc.if_else(ok, ipart, pa.scalar(""))
    frac = pc.if_else(ok, frac, pa.scalar(""))
    ilen = pc.utf8_length(ipart)
    long_int = pc.greater(ilen, 19)
    ipart = pc.if_else(pc.or_(pc.equal(ilen, 0), long_int), pa.scalar("0"), ipart)
    whole = pc.cast(ipart, pa.uint64()).to_numpy(zero_copy_only=False)
    long_int = long_int.to_numpy(zero_copy_only=False)
    if digits:
        padded = pc.utf8_rpad(frac, width=digits, padding="0")
        head = pc.utf8_slice_codeunits(padded, 0, digits)
        rest = pc.utf8_slice_codeunits(padded, digits)
        fpart = pc.cast(head, pa.uint64()).to_numpy(zero_copy_only=False).astype(np.int64)
    else:
        rest = frac
        fpart = np.zeros(n, dtype=np.int64)
    inexact = ~pc.match_substring_regex(rest, "^0*$").to_numpy(zero_copy_only=False)
    big = long_int | (whole > ((top - fpart) // scale).astype(np.uint64))
    values = np.where(big, 0, whole).astype(np.int64) * scale + fpart
    bad = ~plain_np | big | inexact
    values[bad] = 0
    unit = "ns" if scale == 1 else "ms"

    def reason(i):
        s = series.iloc[i]
        if s is None or s is pd.NA or (isinstance(s, float) and np.isnan(s)):
            return "is empty or NaN"
        s = str(s).strip()
        if s == "":
            return "is empty"
        if s.lower() in _NA_WORDS:
            return "is empty or NaN"
        if s.startswith("-") and _NUMBER_TEXT.fullmatch(s):
            return "is negative"
        if not plain_np[i]:
            what = "an integer" if scale == 1 else "a decimal number"
            return (f"is not {what} in plain decimal notation (digits, and for time_ms a "
                    "fraction; no exponent)")
        if big[i]:
            return "is too large"
        if scale == 1:
            return "is not an integer (time_ns is a whole number of nanoseconds)"
        return (f"is not a whole number of nanoseconds (time_{unit} takes at most 6 "
                "decimals, or zeros after them)")
    return values, bad, reason


def _labels(series):
    """Text labels (stripped; integral numbers without a decimal point) and a mask of
    the empty ones."""
    if series.dtype.kind in "iu":
        bad = series.isna().to_numpy(dtype=bool)
        labels = series.astype(str).to_numpy()
    else:
        if series.dtype.kind == "f":   # 3.0 is the label "3", 1.5 is "1.5"; NaN is empty
            labels = np.array([str(int(v)) if np.isfinite(v) and float(v).is_integer() else
                               "" if np.isnan(v) else repr(float(v))
                               for v in series.to_numpy()], dtype=object)
        else:
            labels = series.fillna("").astype(str).str.strip().to_numpy()
        bad = labels == ""
    return labels, bad




# --------------------------------------------------------------------------------------
# rows: parse and validate a block; keep what later blocks and the trace need
# --------------------------------------------------------------------------------------
class _Rows:
    """Parses and validates blocks of rows, statefully (per-thread times and labels)."""

    def __init__(self, src: _Source, tablespaces: Tablespaces | None):
        self.src, self.ts = src, tablespaces
        self.scale = 1_000_000 if src.time_col == "time_ms" else 1
        self.thread_ids: dict[str, int] = {}
        k0 = 0 if src.has("thread") else 1  # without a thread column all rows are one thread
        self.last_time = np.full(k0, -1, dtype=np.int64)
        self.last_row = np.full(k0, -1, dtype=np.int64)
        self.first_time = np.full(k0, -1, dtype=np.int64)
        self.last_statement: dict[int, str] = {}
        self.max_page: dict[int, int] = {}
        self.n_rows = 0

    @property
    def n_threads(self) -> int:
        return len(self.thread_ids) if self.src.has("thread") else 1

    def _where(self, rows, lines, i) -> str:
        line = f" (line {int(lines[i])})" if lines is not None else ""
        return f"{self.src.path}: row {int(rows[i])}{line}"

    def _threads(self, series):
        import pandas as pd
        labels, bad = _labels(series)
        codes, uniques = pd.factorize(labels)
        ids = np.array([self.thread_ids.setdefault(u, len(self.thread_ids)) for u in uniques],
                       dtype=np.int64)
        grow = len(self.thread_ids) - len(self.last_time)
        if grow > 0:
            more = np.full(grow, -1, dtype=np.int64)
            self.last_time = np.concatenate([self.last_time, more])
            self.last_row = np.concatenate([self.last_row, more])
            self.first_time = np.concatenate([self.first_time, more])
        return ids[codes] if len(codes) else np.zeros(0, dtype=np.int64), bad

    def _statement_starts(self, labels, th) -> np.ndarray:
        """Per row: its label differs from the one of its thread's previous row (in
        this block or an earlier one), or it is the thread's first row."""
        import pandas as pd
        n = len(labels)
        codes, uniques = pd.factorize(labels)
        order = np.argsort(th, kind="stable")
        th_s, codes_s = th[order], codes[order]
        first = np.ones(n, dtype=bool)
        first[1:] = th_s[1:] != th_s[:-1]
        start_s = np.empty(n, dtype=bool)
        start_s[1:] = codes_s[1:] != codes_s[:-1]
        for j in np.flatnonzero(first):
            start_s[j] = self.last_statement.get(int(th_s[j])) != uniques[codes_s[j]]
        for j in np.flatnonzero(np.append(first[1:], True)):  # each thread's last row
            self.last_statement[int(th_s[j])] = uniques[codes_s[j]]
        start = np.empty(n, dtype=bool)
        start[order] = start_s
        return start

    def add(self, block) -> dict | None:
        """Validate one block; return its parsed columns (None for an empty block)."""
        rows, lines, cols = block
        src = self.src
        n = len(rows)
        if not n:
            return None
        errors = []  # (local row, column order, message)

        def complain(order_key, canon, bad, why, raw):
            if bad.any():
                i = first_true(bad)
                errors.append((i, _ORDER.index(order_key),
                               f"{self._where(rows, lines, i)}: column {src.label(canon)}"
                               f"{_show(raw.iloc[i])} {why(i)}"))

        def ranged(order_key, canon, values, bad, why, lo, hi):
            out = ~bad & ((values < lo) | (values > hi))
            complain(order_key, canon, bad | out, lambda i: why(i) if bad[i] else
                     f"is out of range; allowed: {lo}..{hi}", cols[canon])
            return bad | out

        page, bad, why = _parse_int(cols["page"])
        ranged("page", "page", page, bad, why, 0, MAX_PAGE_NO)
        if src.has("space"):
            space, bad, why = _parse_int(cols["space"])
            ranged("space", "space", space, bad, why, 0, MAX_SPACE_ID)
        else:
            space = np.zeros(n, dtype=np.int64)
        t = None
        if src.time_col:
            t, bad, why = _parse_time(cols[src.time_col], self.scale)
            complain("time", src.time_col, bad, why, cols[src.time_col])
        if src.has("thread"):
            th, bad = self._threads(cols["thread"])
            complain("thread", "thread", bad, lambda i: "is empty", cols["thread"])
        else:
            th = np.zeros(n, dtype=np.int64)
        stmt = None
        if src.has("statement"):
            stmt, bad = _labels(cols["statement"])
            complain("statement", "statement", bad, lambda i: "is empty", cols["statement"])
        count = np.ones(n, dtype=np.int64)
        if src.has("count"):
            count, bad, why = _parse_int(cols["count"])
            ranged("count", "count", count, bad, why, 1, MAX_COUNT)
        flags = np.zeros(n, dtype=np.uint8)
        if src.has("flags"):
            f, bad, why = _parse_int(cols["flags"])
            bits = ~bad & ((f & ~np.int64(FLAG_MASK)) != 0)
            complain("flags", "flags", bad | bits, lambda i: why(i) if bad[i] else
                     f"has bits outside the defined flags; allowed: bits of {FLAG_MASK} "
                     "(1 AHI, 2 MODIFY, 4 SHORTCUT, 8 STMT_END, 16 RELATCH)", cols["flags"])
            flags = (f & FLAG_MASK).astype(np.uint8)
        m = min((e[0] for e in errors), default=n)
        # checks that need valid values: only the rows before the first parse error matter
        if self.ts is not None and m:
            idx = self.ts._space_idx(space[:m])
            unknown = idx < 0
            if unknown.any():
                i = first_true(unknown)
                errors.append((i, 0, f"{self._where(rows, lines, i)}: column "
                                     f"{src.label('space')} value {int(space[i])} is not one of "
                                     f"the given tablespaces (known space ids: "
                                     f"{self.ts.space_ids.tolist()[:20]})"))
            size = self.ts.sizes[np.maximum(idx, 0)]
            beyond = ~unknown & (page[:m] >= size)
            if beyond.any():
                i = first_true(beyond)
                errors.append((i, 1, f"{self._where(rows, lines, i)}: column "
                                     f"{src.label('page')} value {int(page[i])} is beyond the "
                                     f"size of space {int(space[i])} ({int(size[i])} pages; "
                                     f"allowed: 0..{int(size[i]) - 1})"))
        if t is not None and m:
            order = np.argsort(th[:m], kind="stable")
            ts_, th_ = t[:m][order], th[:m][order]
            first = np.ones(m, dtype=bool)
            first[1:] = th_[1:] != th_[:-1]
            prev = np.empty(m, dtype=np.int64)
            prev[1:] = ts_[:-1]
            prev[first] = self.last_time[th_[first]]
            prow = np.empty(m, dtype=np.int64)
            prow[1:] = rows[:m][order][:-1]
            prow[first] = self.last_row[th_[first]]
            back = ts_ < prev
            if back.any():
                j = int(np.flatnonzero(back)[np.argmin(order[back])])
                i = int(order[j])
                label = list(self.thread_ids)[th_[j]] if src.has("thread") else None
                who = f"thread {label!r}" if src.has("thread") else "the trace"
                raw = cols[src.time_col].iloc[i]
                errors.append((i, 2, f"{self._where(rows, lines, i)}: column "
                                     f"{src.label(src.time_col)}{_show(raw)} goes backwards in "
                                     f"{who}: its previous access (row {int(prow[j])}) is later"))
        if errors:
            raise TraceError(min(errors)[2])
        if t is not None:
            order = np.argsort(th, kind="stable")
            th_o = th[order]
            last = np.ones(n, dtype=bool)
            last[:-1] = th_o[1:] != th_o[:-1]
            firsts = np.ones(n, dtype=bool)
            firsts[1:] = last[:-1]
            new = self.first_time[th_o[firsts]] < 0
            self.first_time[th_o[firsts][new]] = t[order][firsts][new]
            self.last_time[th_o[last]] = t[order][last]
            self.last_row[th_o[last]] = rows[order][last]
        u, inv = np.unique(space, return_inverse=True)
        mx = np.full(len(u), -1, dtype=np.int64)
        np.maximum.at(mx, inv.ravel(), page)
        for s, v in zip(u.tolist(), mx.tolist()):
            if v > self.max_page.get(s, -1):
                self.max_page[s] = v
        self.n_rows += n
        stmt_start = self._statement_starts(stmt, th) if stmt is not None else None
        return dict(space=space, page=page, t=t, th=th, count=count, flags=flags,
                    stmt_start=stmt_start)


# --------------------------------------------------------------------------------------
# events: run-length encoding across blocks, CPU time and statement ends
# --------------------------------------------------------------------------------------
_EV = ("space", "page", "th", "count", "t0", "t1", "flags", "ss")


def _run_starts(r) -> np.ndarray:
    """Rows of block ``r`` that start an event: a run is consecutive rows of one thread
    on one page with the same flags, cut after a statement end and before a marked
    statement start."""
    th, space, page, flags = r["th"], r["space"], r["page"], r["flags"]
    new = np.ones(len(th), dtype=bool)
    new[1:] = ((th[1:] != th[:-1]) | (space[1:] != space[:-1]) | (page[1:] != page[:-1])
               | (flags[1:] != flags[:-1]) | ((flags[:-1] & FLAG_STMT_END) != 0))
    if r["stmt_start"] is not None:
        new[1:] |= r["stmt_start"][1:]
    return np.flatnonzero(new)


def _run_events(r) -> dict:
    """Block ``r`` run-length encoded (:func:`_run_starts`): per event its thread, space,
    page, flags, gets, the first and last row's time, and whether a statement starts."""
    starts = _run_starts(r)
    ends = np.append(starts[1:], len(r["th"]))
    t = r["t"] if r["t"] is not None else np.zeros(len(r["th"]), dtype=np.int64)
    ss = r["stmt_start"]
    return dict(th=r["th"][starts], space=r["space"][starts], page=r["page"][starts],
                count=np.add.reduceat(r["count"], starts), t0=t[starts], t1=t[ends - 1],
                flags=r["flags"][starts],
                ss=ss[starts] if ss is not None else np.zeros(len(starts), bool))


class _Events:
    """Run-length encodes parsed blocks of one thread into chunks of at most
    ``chunk_size`` events (several threads: :class:`_ThreadEvents`).

    An event's CPU time and statement end depend on its thread's next event.  With
    one thread that is the next event, so all but the last event of the buffer are
    emitted after each block.
    """

    def __init__(self, src: _Source, ts: Tablespaces, cpu_ns_per_get: int, chunk_size: int):
        self.src, self.ts, self.cpu, self.chunk_size = src, ts, cpu_ns_per_get, chunk_size
        self.has_time = src.time_col is not None
        self.has_stmt = src.has("statement")
        self.buf = None   # dict of arrays

    def add(self, r):
        if r is None:
            return
        ev = _run_events(r)
        b = self.buf
        if b is not None:
            last = {k: b[k][-1] for k in _EV}
            if (last["th"] == ev["th"][0] and last["space"] == ev["space"][0]
                    and last["page"] == ev["page"][0] and last["flags"] == ev["flags"][0]
                    and not (last["flags"] & FLAG_STMT_END) and not ev["ss"][0]):
                b["count"][-1] += ev["count"][0]
                b["t1"][-1] = ev["t1"][0]
                ev = {k: v[1:] for k, v in ev.items()}
        self.buf = ev if b is None else {k: np.concatenate([b[k], ev[k]]) for k in _EV}
        k = len(self.buf["th"]) - 1   # the last event waits for the next block
        if k > 0:
            out = self._resolve({key: v[:k + 1] for key, v in self.buf.items()}, done=False)
            self.buf = {key: v[k:].copy() for key, v in self.buf.items()}
            yield from out

    def finish(self):
        b = self.buf
        if b is None:
            return
        yield from self._resolve(b, done=True)
        self.buf = None

    def _resolve(self, ev, done: bool):
        """Chunks of the events of ``ev``; without ``done`` its last event is only the
        next event of the others and is not emitted."""
        th, count, t0, t1, ss = ev["th"], ev["count"], ev["t0"], ev["t1"], ev["ss"]
        n = len(th)
        flags = ev["flags"].copy()
        order = np.arange(n)   # one thread: its events in order
        th_s = th[order]
        last = np.ones(n, dtype=bool)
        last[:-1] = th_s[1:] != th_s[:-1]
        t0_s = t0[order]
        nxt = t0_s.copy()
        nxt[:-1] = t0_s[1:]
        if self.has_time:
            span = np.where(last, t1[order] - t0_s + self.cpu, nxt - t0_s)
            cpu = np.empty_like(span)
            cpu[order] = span // count[order]
        else:
            cpu = np.full(n, self.cpu, dtype=np.int64)
        if self.has_stmt:
            end_s = np.ones(n, dtype=bool)
            end_s[:-1] = (th_s[1:] != th_s[:-1]) | ss[order][1:]
            flags[order[end_s]] |= FLAG_STMT_END
        k = n if done else n - 1
        if not k:
            return []
        try:
            page = self.ts.dense(ev["space"][:k], ev["page"][:k])
        except ValueError as e:
            raise TraceError(f"{self.src.path}: {e}") from None
        chunk = Chunk(page, count[:k], cpu[:k], th[:k], flags[:k])
        return split_chunk(chunk, self.chunk_size)


def _narrow(a: np.ndarray) -> np.ndarray:
    """A copy of the non-negative integers ``a`` in the smallest unsigned dtype that
    holds them (int64 above 2**32 - 1)."""
    m = int(a.max()) if len(a) else 0
    for dt in (np.uint8, np.uint16, np.uint32):
        if m <= np.iinfo(dt).max:
            return a.astype(dt)
    return a.astype(np.int64)


def _join(pieces: list) -> np.ndarray:
    """Concatenate and empty ``pieces`` (the result takes the widest dtype)."""
    out = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.uint8)
    pieces.clear()
    return out


class _ThreadEvents:
    """The events of a trace of several threads, built per thread while reading.

    Blocks are run-length encoded as in :class:`_Events` (a run is consecutive rows of
    one thread), then each event is appended to its thread's lists in narrow dtypes:
    dense page (uint32 when the tablespaces allow), count, CPU time (each the smallest
    unsigned dtype of its block) and flags (uint8).  An event's CPU time and statement
    end depend on its thread's next event, so each thread's last event waits
    (``pend``) until its thread's next event, or the end.  The file order of events
    is kept as one stream id per event (``sid``, uint8/uint16/uint32).  Nothing holds
    every event in int64: about 8-18 bytes per event instead of 33 for Chunks.
    """

    _P = ("th", "space", "page", "dense", "count", "t0", "t1", "flags", "ss")

    def __init__(self, src: _Source, ts: Tablespaces, cpu_ns_per_get: int, n_threads: int):
        self.src, self.ts, self.cpu = src, ts, cpu_ns_per_get
        self.has_time = src.time_col is not None
        self.has_stmt = src.has("statement")
        self.n = n_threads
        self.cols = {k: [[] for _ in range(n_threads)] for k in ("page", "count", "cpu", "flags")}
        self.sid: list[np.ndarray] = []
        self.pend: dict[int, tuple] = {}   # thread -> its last event (tuple of _P)
        self.last_th = -1                  # thread of the last event in file order

    def _dense(self, space, page):
        try:
            d = self.ts.dense(space, page)
        except ValueError as e:
            raise TraceError(f"{self.src.path}: {e}") from None
        return d.astype(self.page_dtype)

    @property
    def page_dtype(self):
        return np.uint32 if self.ts.n_pages <= 2**32 else np.int64

    def add(self, r) -> None:
        if r is None:
            return
        ev = _run_events(r)
        p = self.pend.get(self.last_th)
        if p is not None:   # the block goes on the last event's run
            _, sp, pg, _, c, t0, _, fl, _ = p
            if (self.last_th == ev["th"][0] and sp == ev["space"][0] and pg == ev["page"][0]
                    and fl == ev["flags"][0] and not (fl & FLAG_STMT_END) and not ev["ss"][0]):
                self.pend[self.last_th] = p[:4] + (c + int(ev["count"][0]), t0,
                                                   int(ev["t1"][0])) + p[7:]
                ev = {k: v[1:] for k, v in ev.items()}
        m = len(ev["th"])
        if not m:
            return
        ev["dense"] = self._dense(ev["space"], ev["page"])
        self.sid.append(ev["th"].astype(self.sid_dtype))
        self.last_th = int(ev["th"][-1])
        # each present thread's waiting event goes first, then its events of the block
        present = np.unique(ev["th"])
        waiting = [self.pend.pop(int(s)) for s in present if int(s) in self.pend]
        if waiting:
            w = {k: np.array([x[j] for x in waiting]) for j, k in enumerate(self._P)}
            ev = {k: np.concatenate([w[k].astype(ev[k].dtype), ev[k]]) for k in self._P}
        order = np.argsort(ev["th"], kind="stable")
        ev = {k: v[order] for k, v in ev.items()}
        del order
        th_s = ev["th"]
        k = len(th_s)
        last = np.ones(k, dtype=bool)
        last[:-1] = th_s[1:] != th_s[:-1]
        for j in np.flatnonzero(last):   # each thread's last event waits for its next one
            self.pend[int(th_s[j])] = tuple(ev[key][j].item() for key in self._P)
        keep = ~last
        if self.has_time:
            nxt = np.empty(k, dtype=np.int64)
            nxt[:-1] = ev["t0"][1:]
            cpu = (nxt[keep] - ev["t0"][keep]) // ev["count"][keep]
            del nxt
        else:
            cpu = None
        fl = ev["flags"][keep]
        if self.has_stmt:
            fl[ev["ss"][1:][keep[:-1]]] |= FLAG_STMT_END
        th_k = th_s[keep]
        if not len(th_k):
            return
        bounds = np.flatnonzero(np.diff(th_k)) + 1
        lo = np.concatenate([[0], bounds])
        hi = np.append(bounds, len(th_k))
        page, count = ev["dense"][keep], _narrow(ev["count"][keep])
        cpu = _narrow(cpu) if cpu is not None else None
        for a, b in zip(lo.tolist(), hi.tolist()):
            s = int(th_k[a])
            self.cols["page"][s].append(page[a:b].copy())
            self.cols["count"][s].append(count[a:b].copy())
            if cpu is not None:
                self.cols["cpu"][s].append(cpu[a:b].copy())
            self.cols["flags"][s].append(fl[a:b].copy())

    @property
    def sid_dtype(self):
        return np.uint8 if self.n <= 256 else np.uint16 if self.n <= 65536 else np.uint32

    def finish(self) -> tuple[np.ndarray, list[dict]]:
        """(stream id of every event in file order, per stream its event arrays)."""
        for s, (_, _, _, dense, c, t0, t1, fl, _) in sorted(self.pend.items()):
            if self.has_time:
                self.cols["cpu"][s].append(_narrow(np.array([(t1 - t0 + self.cpu) // c])))
            if self.has_stmt:
                fl |= FLAG_STMT_END
            self.cols["page"][s].append(np.array([dense], dtype=self.page_dtype))
            self.cols["count"][s].append(_narrow(np.array([c])))
            self.cols["flags"][s].append(np.array([fl], dtype=np.uint8))
        self.pend.clear()
        sid = _join(self.sid).astype(self.sid_dtype, copy=False)
        streams = []
        for s in range(self.n):
            d = {k: _join(self.cols[k][s]) for k in ("page", "count", "flags")}
            d["cpu"] = _join(self.cols["cpu"][s]) if self.has_time else None
            streams.append(d)
        return sid, streams


def _threaded_trace(sid, streams, ts, name, names, start, chunk_size, cpu_ns_per_get) -> Trace:
    """The trace of several threads from :meth:`_ThreadEvents.finish`: iterated in file
    order, split for replay into one trace per thread (``trace._by_stream``) that reads
    its thread's arrays directly.  Chunks widen ``chunk_size`` events at a time."""
    n_streams = len(streams)

    def cols(d, s, a, b):
        cpu = d["cpu"][a:b] if d["cpu"] is not None else np.full(b - a, cpu_ns_per_get, np.int64)
        return d["page"][a:b], d["count"][a:b], cpu, d["flags"][a:b]

    def one(s):
        d = streams[s]

        def chunks():
            n = len(d["page"])
            for a in range(0, n, chunk_size):
                b = min(n, a + chunk_size)
                page, count, cpu, flags = cols(d, s, a, b)
                yield Chunk(page, count, cpu, np.full(b - a, s, dtype=np.int64), flags)
        label = names[s] if names else s
        t = Trace(chunks, ts, f"{name}[{label}]", stream_names=names, stream_start_ns=start)
        # the events that fully determine the chunks (hashed only when a replay is cached)
        t.cache_key = ("read_trace thread", s, chunk_size, int(cpu_ns_per_get), d["page"],
                       d["count"], d["cpu"], d["flags"])
        return t

    def in_file_order():
        pos = np.zeros(n_streams, dtype=np.int64)
        for i in range(0, len(sid), chunk_size):
            ids = sid[i:i + chunk_size]
            m = len(ids)
            order = np.argsort(ids, kind="stable")
            per = np.bincount(ids, minlength=n_streams)
            page, count = np.empty(m, np.int64), np.empty(m, np.int64)
            cpu, flags = np.empty(m, np.int64), np.empty(m, np.uint8)
            off = 0
            for s in np.flatnonzero(per).tolist():
                c, a = int(per[s]), int(pos[s])
                idx = order[off:off + c]
                page[idx], count[idx], cpu[idx], flags[idx] = cols(streams[s], s, a, a + c)
                off += c
                pos[s] = a + c
            yield Chunk(page, count, cpu, ids.astype(np.int64), flags)

    trace = Trace(in_file_order, ts, name, stream_names=names, stream_start_ns=start)
    trace._by_stream = [one(s) for s in range(n_streams)]
    return trace
