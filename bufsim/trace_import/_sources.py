"""A trace file as blocks of ``(rows, lines, {canonical column: pandas Series})``:
the format and compression from the suffix, the map from canonical columns to the
file's, and one reader per format (CSV/TSV/text through pandas, Parquet, npz,
oracleGeneral), each reporting a malformed file with its row and line."""
from __future__ import annotations

import bz2
import csv
import gzip
import lzma
import os
import re
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .._validation import TraceError, check_int, describe
from ._spec import (ALLOWED_SUFFIXES, CANONICAL_COLUMNS, COMPRESSION, CSV_NA, FORMATS,
                    FileMissing, LABELS, ORACLE_DTYPE, SUFFIX)


def _guess(path: Path) -> tuple[str, str | None]:
    sfx = [s.lower() for s in path.suffixes]
    comp = COMPRESSION.get(sfx[-1]) if sfx else None
    body = sfx[:-1] if comp else sfx
    last = SUFFIX.get(body[-1]) if body else None
    if last is None:
        raise TraceError(f"{path}: file type {''.join(path.suffixes) or '(none)'!r} is not "
                         f"supported; allowed: {ALLOWED_SUFFIXES}; or pass format= one of "
                         f"{', '.join(FORMATS)}")
    others = {SUFFIX[s] for s in body[:-1] if s in SUFFIX} - {last}
    if others:
        raise TraceError(f"{path}: the suffixes {''.join(path.suffixes)!r} name several formats "
                         f"({', '.join(sorted(others | {last}))}); pass format= to say which")
    return last, comp


def _compression_of(path: Path) -> str | None:
    sfx = path.suffix.lower()
    return COMPRESSION.get(sfx)


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


class Source:
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
    def open(cls, path, columns, fmt, chunk_size) -> Source:
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
            raise FileMissing(f"{path}: no trace file at this path")
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
        already given skipped, so that :func:`parse_time` sees the decimal text."""
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
        dtypes = {self.raw[c]: str for c in LABELS if c in self.names}
        if self.time_col and time_as_text:   # decimal text for parse_time
            dtypes[self.raw[self.time_col]] = str
        na = {self.raw[c]: CSV_NA for c in numeric}
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
        numeric = [c for c in self.names if c not in LABELS]
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


def _blank(series) -> np.ndarray:
    na = series.isna().to_numpy(dtype=bool)
    if series.dtype.kind == "O":
        na = na | (series.fillna("").astype(str).str.strip().to_numpy() == "")
    return na
