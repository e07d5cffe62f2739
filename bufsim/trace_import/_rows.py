"""Parsing and validating a block of rows: integers and decimal times as exact
integers, labels, the limits of each column; each error names the file, the row,
the column and, for text formats, the line.  :class:`Rows` keeps what later blocks
and the trace need."""
from __future__ import annotations

import re

import numpy as np

from .._validation import TraceError
from ..pages import MAX_SPACE_ID, Tablespaces
from ..trace import FLAG_MASK, first_true
from ._sources import Source
from ._spec import MAX_COUNT, MAX_PAGE_NO, NA_WORDS, ORDER


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
            return "is empty or NaN" if s is None or s.lower() in NA_WORDS else "is not a number"
        if not np.isfinite(f[i]):
            return "is not finite"
        if abs(fs[i]) >= 2.0**63:
            return "is too large"
        return "is not an integer"
    return values, bad, reason


#: A time written in plain decimal notation: integer part, optional fraction.
_PLAIN_DECIMAL = r"^\s*\+?0*(?P<i>[0-9]*)(?:\.(?P<f>[0-9]*))?\s*$"


def parse_time(series, scale: int):
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
        if s.lower() in NA_WORDS:
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


class Rows:
    """Parses and validates blocks of rows, statefully (per-thread times and labels)."""

    def __init__(self, src: Source, tablespaces: Tablespaces | None):
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
                errors.append((i, ORDER.index(order_key),
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
            t, bad, why = parse_time(cols[src.time_col], self.scale)
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
                     "(1 AHI, 2 MODIFY, 4 SHORTCUT, 8 STMT_END, 16 RELATCH, 32 TEMP, "
                     "64 STEP, 128 DESCENT)", cols["flags"])
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
