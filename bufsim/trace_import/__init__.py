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

The parts: ``_spec.py`` (formats, columns, limits), ``_sources.py`` (a file as blocks
of columns: CSV/TSV/text through pandas, Parquet, npz, oracleGeneral; the column
map), ``_rows.py`` (parsing and validating a block's values, with the row and
column of each error) and ``_events.py`` (rows to run-length encoded events, one
stream per thread).
"""
from __future__ import annotations

import os
from collections.abc import Mapping

from .._validation import TraceError, check_int, describe
from ..pages import SpaceSpec, Tablespaces
from ..trace import Trace
from . import _spec
from ._events import Events, ThreadEvents, threaded_trace
from ._rows import Rows, parse_time
from ._sources import Source

__all__ = ["read_trace", "CANONICAL_COLUMNS", "FORMATS"]

# the constants of the format (defined in _spec.py), documented here where callers find them
#: Canonical column names a table may carry (map the file's names with ``columns=``).
CANONICAL_COLUMNS = _spec.CANONICAL_COLUMNS
#: Values of ``format=``.
FORMATS = _spec.FORMATS
#: Largest page number (InnoDB's page_no is 32 bits).
MAX_PAGE_NO = _spec.MAX_PAGE_NO
#: Largest run length of one row.
MAX_COUNT = _spec.MAX_COUNT
#: libCacheSim's oracleGeneral record (24 bytes, little-endian).
ORACLE_DTYPE = _spec.ORACLE_DTYPE

#: the name the decimal time parser had when this was one module (tests use it)
_parse_time = parse_time


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
        ``FLAG_SHORTCUT`` 4, ``FLAG_STMT_END`` 8, ``FLAG_RELATCH`` 16, ``FLAG_TEMP`` 32, and the
        access kind ``FLAG_STEP`` 64, ``FLAG_DESCENT`` 128, both = ``FLAG_NO_RA``).  A name
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
    src = Source.open(path, columns, format, chunk_size)
    cpu_ns_per_get = check_int("cpu_ns_per_get", cpu_ns_per_get, 0, 2**62)
    if tablespaces is not None and not isinstance(tablespaces, Tablespaces):
        raise ValueError(f"tablespaces must be a Tablespaces or None, got {describe(tablespaces)}")
    # pass 1: every row validated, and what the trace needs up front
    rows = Rows(src, tablespaces)
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
        again = Rows(src, tablespaces)
        ev = Events(src, ts, cpu_ns_per_get, chunk_size)
        for block in src.blocks():
            yield from ev.add(again.add(block))
        yield from ev.finish()

    if rows.n_threads > 1:
        ev = ThreadEvents(src, ts, cpu_ns_per_get, rows.n_threads)
        again = Rows(src, tablespaces)
        for block in src.blocks():
            ev.add(again.add(block))
        sid, streams = ev.finish()
        return threaded_trace(sid, streams, ts, name, names, start, chunk_size, cpu_ns_per_get)
    return Trace(events, ts, name, stream_names=names, stream_start_ns=start)
