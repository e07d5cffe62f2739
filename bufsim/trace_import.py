"""Importing a user's own page-access trace from CSV or Parquet.

:func:`read_trace` reads a file of one row per page get (``space, page[, time_ns
or time_ms][, thread][, statement]``) in blocks, validates every row before
anything is replayed (errors name the row, the CSV line and the column) and
returns an in-memory, run-length encoded :class:`bufsim.Trace`: one stream per
thread, the time between a thread's accesses as its CPU/think time, and the end
of each statement marked with :data:`bufsim.FLAG_STMT_END`.  It is re-exported
as ``bufsim.read_trace`` and ``bufsim.trace.read_trace``.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .pages import Tablespaces, _check_int
from .trace import FLAG_STMT_END, Chunk, Trace, _first, _split, _tablespaces_from_data

__all__ = ["read_trace"]

_COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".zip")
#: pandas' default NA strings (read_csv ``na_values``).
_CSV_NA = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
           "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]
_NA_WORDS = ("nan", "na", "n/a", "null", "none", "<na>", "-nan", "#n/a")
#: Optional columns of free-form labels, read as text.
_LABELS = ("thread", "statement")


def read_trace(path: str | os.PathLike, *, tablespaces: Tablespaces | None = None,
               cpu_ns_per_get: int = 0, chunk_size: int = 1 << 20) -> Trace:
    """Import a user's page-access trace from CSV or Parquet, validating every row.

    Parameters
    ----------
    path : str or path-like
        ``.csv`` (also ``.csv.gz``, ``.csv.bz2``, ``.csv.xz``, ``.csv.zst``) or
        ``.parquet``.  One row per page get, in the order the gets happened.
        Required columns: ``space`` (tablespace id) and ``page`` (page number).
        Optional: ``time_ns`` or ``time_ms`` (not both; the time of the get, may
        be fractional in ``time_ms``), ``thread`` (any label) and ``statement``
        (any label; where each statement ends, see Notes).  Other columns
        are ignored; column names and values may be padded with spaces.  Lines
        whose used fields are all empty (blank lines) are skipped.
    tablespaces : Tablespaces, optional
        The tablespaces the pages belong to.  If None, they are built from the
        data: one space per distinct id (ascending), of max page number + 1 pages.
    cpu_ns_per_get : int, optional
        CPU time charged per get without a time column, and for the last access
        of each thread with one.
    chunk_size : int, optional
        Rows read per block, and events per chunk of the returned trace.

    Returns
    -------
    Trace
        In memory, run-length encoded: consecutive rows with the same
        (thread, space, page), and of one statement, become one event whose
        ``count`` is the run length.  Threads become stream ids ``0..k-1`` in
        order of first appearance; ``trace.stream_names[s]`` is the label of
        stream ``s`` (None without a thread column) and
        ``trace.stream_start_ns[s]`` the time of its first access relative to
        the earliest thread (None without a time column).
        Flags are 0, except :data:`bufsim.FLAG_STMT_END` on the event holding
        the last get of each statement (only with a ``statement`` column).

    Raises
    ------
    ValueError
        Before any replay, naming the 0-based data row (for CSV also the line of
        the file) and the column, for: a missing column; both time columns; an
        empty, NaN, negative or non-integer value (``3.5``, ``abc``); an empty
        ``thread`` or ``statement``; a space that is not in ``tablespaces`` or a
        page beyond its size; a time earlier than the previous access of the
        same thread; a file with no data rows.

    Notes
    -----
    The replay is closed-loop: each stream issues its next get when the previous
    one (and its CPU time) is done.  A thread's timestamps therefore become the
    CPU/think time between its accesses.  For an event (a run of ``count`` gets
    of one page starting at time ``t``) whose thread next accesses a page at
    ``t_next``, ``cpu_ns = (t_next - t) // count`` per get; the thread's last
    event gets ``(t_last - t + cpu_ns_per_get) // count``, where ``t_last`` is
    the time of the run's last get (so a single last access costs
    ``cpu_ns_per_get``).  With a zero-latency device the replay thus
    reproduces each thread's original timeline, measured from the thread's
    first access (up to the integer division), and every miss then adds its
    I/O time on top.  Without a time column every get costs ``cpu_ns_per_get``.
    CSV line numbers assume one record per line (no quoted line breaks).

    Statements are per thread: a run of a thread's rows with the same
    ``statement`` label is one statement, which ends at the run's last row,
    where the thread's next row has another label or the thread has no more
    rows.  Rows of other threads in between do not end it, labels are only
    compared within a thread (two threads may use the same labels), and a label
    may come back (a thread's ``q1, q2, q1`` is three statements).  The event
    holding a statement's last get carries :data:`bufsim.FLAG_STMT_END`; two
    gets of one page on either side of a statement boundary stay two events.
    The marks are what ``PoolConfig(cleaner_activity="statement")`` needs: the
    5.6+ page cleaner then runs its LRU batch only in a virtual second in which
    a statement ended (InnoDB's ``srv_check_activity``; an imported trace has no
    modifying gets, the other kind of activity).  Without the column there are
    no marks and the cleaner would stay idle under ``"statement"``; keep the
    default ``cleaner_activity="get"`` for such traces.

    Examples
    --------
    A CSV with ``space,page,time_ms,thread`` rows
    ``5,3,0.0,a`` / ``5,3,0.5,a`` / ``5,4,2.0,a`` gives two events:
    page (5, 3) with count 2 and ``cpu_ns`` 1_000_000 per get, and page (5, 4)
    with ``cpu_ns_per_get``.  With a ``statement`` column, rows (thread,
    statement) ``a,s1`` / ``b,s1`` / ``a,s1`` / ``a,s2`` / ``b,s1`` end three
    statements: at rows 2 (thread a, s1), 3 (a, s2) and 4 (b, s1).
    """
    path = Path(path)
    cpu_ns_per_get = _check_int("cpu_ns_per_get", cpu_ns_per_get, 0)
    chunk_size = _check_int("chunk_size", chunk_size, 1)
    if tablespaces is not None and not isinstance(tablespaces, Tablespaces):
        raise ValueError(f"tablespaces must be a Tablespaces or None, got {type(tablespaces).__name__}")
    sfx = [s.lower() for s in path.suffixes]
    if sfx[-1:] == [".csv"] or (len(sfx) >= 2 and sfx[-2] == ".csv" and sfx[-1] in _COMPRESSED):
        kind = "csv"
    elif sfx[-1:] in ([".parquet"], [".pq"]):
        kind = "parquet"
    else:
        raise ValueError(f"{path}: file type {''.join(path.suffixes) or '(none)'!r} is not supported; "
                         "allowed: .csv (or .csv.gz, .csv.bz2, .csv.xz, .csv.zst) and .parquet")
    if not path.exists():
        raise FileNotFoundError(f"no trace file at {path}")
    columns = _csv_columns(path) if kind == "csv" else _parquet_columns(path)
    for req in ("space", "page"):
        if req not in columns:
            raise ValueError(f"{path}: missing required column {req!r}; found columns: "
                             f"{list(columns)} (required: space, page; optional: time_ns or "
                             "time_ms, thread, statement)")
    if "time_ns" in columns and "time_ms" in columns:
        raise ValueError(f"{path}: both columns 'time_ns' and 'time_ms' are present; keep one")
    time_col = "time_ns" if "time_ns" in columns else "time_ms" if "time_ms" in columns else None
    used = ["space", "page"] + ([time_col] if time_col else []) + \
        [c for c in _LABELS if c in columns]
    blocks = (_csv_blocks if kind == "csv" else _parquet_blocks)(path, columns, used, chunk_size)
    imp = _Importer(path, tablespaces, time_col, "thread" in columns, "statement" in columns)
    for rows, lines, cols in blocks:
        imp.add(rows, lines, cols)
    return imp.finish(cpu_ns_per_get, chunk_size)


def _csv_columns(path: Path) -> dict:
    import pandas as pd
    try:
        header = pd.read_csv(path, nrows=0, skipinitialspace=True, dtype=str)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path}: the file is empty (expected a header line with the columns "
                         "space, page[, time_ns or time_ms][, thread][, statement])") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot parse the CSV header: {e}") from None
    out = {}
    for raw in header.columns:
        name = str(raw).strip()
        if name in out:
            raise ValueError(f"{path}: column {name!r} appears twice in the header")
        out[name] = raw
    return out


def _parquet_columns(path: Path) -> dict:
    import pyarrow.parquet as pq
    try:
        names = pq.ParquetFile(path).schema_arrow.names
    except Exception as e:  # pyarrow raises ArrowInvalid and others
        raise ValueError(f"{path}: cannot read as Parquet: {e}") from None
    return {n.strip(): n for n in names}


def _csv_blocks(path, columns, used, chunk_size):
    """Blocks of ``(data row indices, line numbers, {column: Series})``.

    Numbers are parsed by pandas' C parser (exact when a block's column is all
    integers); a block whose ``time_ns`` came out as floats of 2**53 or more is
    re-read as text so that no nanosecond is lost.
    """
    import pandas as pd
    raw = [columns[c] for c in used]
    dtypes = {columns[c]: str for c in _LABELS if c in used}
    # NA words apply to the numeric columns only: a thread may be called "NA" or "None"
    na = {columns[c]: _CSV_NA for c in used if c not in _LABELS}
    reader = pd.read_csv(path, skipinitialspace=True, skip_blank_lines=False, usecols=raw,
                         dtype=dtypes, keep_default_na=False, na_values=na, chunksize=chunk_size)
    line0, row0 = 2, 0
    try:
        with reader:
            for df in reader:
                cols = {c: df[columns[c]].reset_index(drop=True) for c in used}
                t = cols.get("time_ns")
                if t is not None and t.dtype.kind == "f" and (np.abs(t.to_numpy()) >= 2.0**53).any():
                    cols["time_ns"] = pd.read_csv(
                        path, skipinitialspace=True, skip_blank_lines=False, usecols=[columns["time_ns"]],
                        dtype=str, skiprows=range(1, line0 - 1), nrows=len(df))[columns["time_ns"]]
                blank = np.logical_and.reduce([_blank(cols[c]) for c in used])
                lines = line0 + np.arange(len(df), dtype=np.int64)
                line0 += len(df)
                if blank.any():
                    keep = ~blank
                    cols = {c: s[keep].reset_index(drop=True) for c, s in cols.items()}
                    lines = lines[keep]
                rows = row0 + np.arange(len(lines), dtype=np.int64)
                row0 += len(lines)
                yield rows, lines, cols
    except (pd.errors.ParserError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot parse the CSV: {e}") from None


def _show(x) -> str:
    """`` value <x>`` for an error message, empty for a missing value."""
    import pandas as pd
    if x is None or x is pd.NA or (isinstance(x, float) and np.isnan(x)):
        return ""
    if isinstance(x, str):
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


def _parquet_blocks(path, columns, used, chunk_size):
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pandas as pd

    def mapper(t):
        if pa.types.is_integer(t):
            return pd.UInt64Dtype() if t == pa.uint64() else pd.Int64Dtype()
        return None
    row0 = 0
    for b in pq.ParquetFile(path).iter_batches(batch_size=chunk_size,
                                               columns=[columns[c] for c in used]):
        cols = {c: b.column(columns[c]).to_pandas(types_mapper=mapper) for c in used}
        rows = row0 + np.arange(b.num_rows, dtype=np.int64)
        row0 += b.num_rows
        yield rows, None, cols


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


def _labels(series):
    """Text labels (stripped; integral numbers without a decimal point) and a mask of
    the empty ones."""
    if series.dtype.kind in "iu":
        bad = series.isna().to_numpy(dtype=bool)
        labels = series.astype(str).to_numpy()
    else:
        if series.dtype.kind == "f":
            labels = np.array([str(int(v)) if np.isfinite(v) and float(v).is_integer() else ""
                               for v in series.to_numpy()], dtype=object)
        else:
            labels = series.fillna("").astype(str).str.strip().to_numpy()
        bad = labels == ""
    return labels, bad


class _Importer:
    """Validates blocks of rows and accumulates run-length encoded events."""

    _ORDER = ("space", "page", "time", "thread", "statement")

    def __init__(self, path, tablespaces, time_col, has_thread, has_statement=False):
        self.path, self.ts, self.time_col, self.has_thread = path, tablespaces, time_col, has_thread
        self.has_statement = has_statement
        self.last_statement: dict[int, str] = {}  # thread id -> label of its latest row
        self.scale = 1_000_000 if time_col == "time_ms" else 1
        self.thread_ids: dict[str, int] = {}
        k0 = 0 if has_thread else 1  # without a thread column all rows are one thread
        self.last_time = np.full(k0, -1, dtype=np.int64)
        self.last_row = np.full(k0, -1, dtype=np.int64)
        self.ev = {k: [] for k in ("space", "page", "thread", "count", "t0", "t1")}
        if has_statement:
            self.ev["stmt_start"] = []  # the event's first get starts a statement
        self.tail = None  # (thread, space, page) of the last event so far

    def _where(self, rows, lines, i) -> str:
        line = f" (line {int(lines[i])})" if lines is not None else ""
        return f"{self.path}: row {int(rows[i])}{line}"

    def _threads(self, series):
        import pandas as pd
        labels, bad = _labels(series)
        codes, uniques = pd.factorize(labels)
        ids = np.array([self.thread_ids.setdefault(u, len(self.thread_ids)) for u in uniques],
                       dtype=np.int64)
        grow = len(self.thread_ids) - len(self.last_time)
        if grow > 0:
            self.last_time = np.concatenate([self.last_time, np.full(grow, -1, dtype=np.int64)])
            self.last_row = np.concatenate([self.last_row, np.full(grow, -1, dtype=np.int64)])
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

    def add(self, rows, lines, cols) -> None:
        n = len(rows)
        if not n:
            return
        errors = []  # (local row, column order, message)

        def complain(col_key, col_name, bad, why, raw):
            if bad.any():
                i = _first(bad)
                errors.append((i, self._ORDER.index(col_key),
                               f"{self._where(rows, lines, i)}: column {col_name!r}"
                               f"{_show(raw.iloc[i])} {why(i)}"))

        space, bad, why = _parse_int(cols["space"])
        complain("space", "space", bad, why, cols["space"])
        page, bad, why = _parse_int(cols["page"])
        complain("page", "page", bad, why, cols["page"])
        t = None
        if self.time_col:
            t, bad, why = _parse_int(cols[self.time_col], self.scale)
            complain("time", self.time_col, bad, why, cols[self.time_col])
        if self.has_thread:
            th, bad = self._threads(cols["thread"])
            complain("thread", "thread", bad, lambda i: "is empty", cols["thread"])
        else:
            th = np.zeros(n, dtype=np.int64)
        if self.has_statement:
            stmt, bad = _labels(cols["statement"])
            complain("statement", "statement", bad, lambda i: "is empty", cols["statement"])
        m = min((e[0] for e in errors), default=n)
        # checks that need valid values: only the rows before the first parse error matter
        if self.ts is not None and m:
            idx = self.ts._space_idx(space[:m])
            unknown = idx < 0
            if unknown.any():
                i = _first(unknown)
                errors.append((i, 0, f"{self._where(rows, lines, i)}: column 'space' value "
                                     f"{int(space[i])} is not one of the given tablespaces (known "
                                     f"space ids: {self.ts.space_ids.tolist()[:20]})"))
            size = self.ts.sizes[np.maximum(idx, 0)]
            beyond = ~unknown & (page[:m] >= size)
            if beyond.any():
                i = _first(beyond)
                errors.append((i, 1, f"{self._where(rows, lines, i)}: column 'page' value "
                                     f"{int(page[i])} is beyond the size of space {int(space[i])} "
                                     f"({int(size[i])} pages; allowed: 0..{int(size[i]) - 1})"))
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
                label = list(self.thread_ids)[th_[j]] if self.has_thread else None
                who = f"thread {label!r}" if self.has_thread else "the trace"
                raw = cols[self.time_col].iloc[i]
                errors.append((i, 2, f"{self._where(rows, lines, i)}: column {self.time_col!r}"
                                     f"{_show(raw)} goes backwards in {who}: its previous access "
                                     f"(row {int(prow[j])}) is later"))
        if errors:
            raise ValueError(min(errors)[2])
        if t is None:
            t = np.zeros(n, dtype=np.int64)
        else:
            order = np.argsort(th, kind="stable")
            last = np.ones(n, dtype=bool)
            last[:-1] = th[order][1:] != th[order][:-1]
            self.last_time[th[order][last]] = t[order][last]
            self.last_row[th[order][last]] = rows[order][last]
        # run-length encoding, merged with the previous block's last event; a row that
        # starts a statement starts an event, so that a statement's last get ends one
        new = np.ones(n, dtype=bool)
        new[1:] = (th[1:] != th[:-1]) | (space[1:] != space[:-1]) | (page[1:] != page[:-1])
        if self.has_statement:
            stmt_start = self._statement_starts(stmt, th)
            new[1:] |= stmt_start[1:]
        starts = np.flatnonzero(new)
        ends = np.append(starts[1:], n)
        count = ends - starts
        t0, t1 = t[starts], t[ends - 1]
        key = (int(th[0]), int(space[0]), int(page[0]))
        if self.tail == key and not (self.has_statement and stmt_start[0]):
            self.ev["count"][-1][-1] += count[0]
            self.ev["t1"][-1][-1] = t1[0]
            starts, count, t0, t1 = starts[1:], count[1:], t0[1:], t1[1:]
        if len(starts):
            for k, v in (("space", space[starts]), ("page", page[starts]), ("thread", th[starts]),
                         ("count", count), ("t0", t0), ("t1", t1)):
                self.ev[k].append(np.ascontiguousarray(v, dtype=np.int64))
            if self.has_statement:
                self.ev["stmt_start"].append(stmt_start[starts])
        self.tail = (int(th[-1]), int(space[-1]), int(page[-1]))

    def finish(self, cpu_ns_per_get: int, chunk_size: int) -> Trace:
        if not self.ev["count"]:
            raise ValueError(f"{self.path}: no data rows (only a header); nothing to replay")
        ev = {k: np.concatenate(v) for k, v in self.ev.items()}
        ts = self.ts
        if ts is None:
            ts = _tablespaces_from_data([(ev["space"], ev["page"])], str(self.path))
        page = ts.dense(ev["space"], ev["page"])
        th, count, t0, t1 = ev["thread"], ev["count"], ev["t0"], ev["t1"]
        start = None
        if self.time_col:
            order = np.argsort(th, kind="stable")
            th_s = th[order]
            last = np.ones(len(th), dtype=bool)
            last[:-1] = th_s[1:] != th_s[:-1]
            t0_s = t0[order]
            nxt = t0_s.copy()
            nxt[:-1] = t0_s[1:]
            span = np.where(last, t1[order] - t0_s + cpu_ns_per_get, nxt - t0_s)
            cpu = np.empty_like(span)
            cpu[order] = span // count[order]
            firsts = np.ones(len(th), dtype=bool)
            firsts[1:] = last[:-1]
            t_first = np.empty(len(self.thread_ids) or 1, dtype=np.int64)
            t_first[th_s[firsts]] = t0_s[firsts]
            start = t_first - t_first.min()
        else:
            cpu = np.full(len(th), cpu_ns_per_get, dtype=np.int64)
        flags = np.zeros(len(th), dtype=np.uint8)
        if self.has_statement:
            # an event ends a statement if its thread's next event starts one or it has none
            order = np.argsort(th, kind="stable")
            th_s = th[order]
            end_s = np.ones(len(th), dtype=bool)
            end_s[:-1] = (th_s[1:] != th_s[:-1]) | ev["stmt_start"][order][1:]
            flags[order[end_s]] = FLAG_STMT_END
        chunk = Chunk(page, count, cpu, th, flags)
        names = list(self.thread_ids) if self.has_thread else None
        return Trace(_split(chunk, chunk_size), ts, self.path.name.split(".")[0],
                     stream_names=names, stream_start_ns=start)
