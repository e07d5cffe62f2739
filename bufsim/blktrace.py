"""Block-I/O traces to page traces: blkparse's default text output.

``blktrace -d /dev/sdX -o - | blkparse -i -`` prints one line per event in its
default format (``-f "%D %2c %8s %5T.%9t %5p %2a %3d "`` followed, for events
that carry a range, by ``%S + %n [%C]``)::

      8,0    3        1     0.000000000  4162  Q   R 8192 + 32 [mysqld]

Fields, in order: device ``major,minor``; CPU; sequence number; time in seconds
with nanoseconds; process id; action (``Q`` queued, ``G`` get request, ``M``/``F``
merged, ``I`` inserted, ``D`` issued to the driver, ``C`` completed, ...); RWBS
(``R`` read, ``W`` write, with ``S`` sync, ``M`` meta, ``A`` ahead, ``F`` flush,
``D`` discard, ``N`` none); start sector (512 bytes) ``+`` sector count; and the
process name in brackets (for ``C`` events the error code).

:func:`parse_blkparse` keeps the events of the chosen actions (``Q`` by default:
every request as the program issued it, before the elevator merges
neighbours) that are reads (and writes with ``writes=True``), maps each to the
pages of the tablespace file it covers::

    first = (sector * 512 - file_offset) // page_size
    last  = (sector * 512 + count * 512 - 1 - file_offset) // page_size

and emits one row per page: ``space, page, time_ns, thread`` (the process id).
Requests wholly before ``file_offset`` are counted as outside the file and
dropped; lines that are not events (blkparse's per-CPU summaries, ``m``
messages, events without a range such as ``P``/``U`` plugs) are skipped.

``file_offset`` is where the tablespace file's first byte lies on the traced
device: 0 for a tablespace on a raw partition; for a file on a file system,
the physical offset of a contiguous file (``filefrag -v FILE`` prints its
extents; a fragmented file needs one conversion per extent).

What a block trace misses: every buffer-pool hit (only misses and read-ahead
reach the disk), so it is a trace of the pages *read*, not of the pages
*accessed*; and with a file-system cache (no ``O_DIRECT``) also the reads the
cache served.  Replaying it answers "what would a smaller pool do with these
misses", not "what is my hit ratio".
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ._validation import check_int
from .paths import atomic_path

__all__ = ["parse_blkparse", "convert_blkparse", "SECTOR"]

SECTOR = 512

_EVENT = re.compile(
    r"^\s*(?P<maj>\d+),(?P<min>\d+)\s+(?P<cpu>\d+)\s+(?P<seq>\d+)\s+"
    r"(?P<sec>\d+)\.(?P<nsec>\d{1,9})\s+(?P<pid>\d+)\s+(?P<action>[A-Za-z]{1,2})\s+"
    r"(?P<rwbs>[RWDNFSMAEB]+)(?:\s+(?P<rest>.*))?$")
_RANGE = re.compile(r"^(?P<sector>\d+)\s*\+\s*(?P<count>\d+)(?:\s+\[(?P<proc>.*)\])?\s*$")
_ACTIONS = set("QGMFIDCXBASTPUmR")


def parse_blkparse(lines, *, page_size: int = 16384, file_offset: int = 0, space: int = 0,
                   actions: str = "Q", writes: bool = False, device: str | None = None,
                   source: str = "input") -> tuple[pd.DataFrame, dict]:
    """Page gets from the lines of blkparse's default text output.

    Parameters
    ----------
    lines : iterable of str
        The text, line by line.
    page_size : int
        InnoDB page size in bytes (a power of two, 1024..65536; default 16384).
    file_offset : int
        Byte offset of the tablespace file on the traced device (a multiple
        of 512).
    space : int
        Space id written in the ``space`` column.
    actions : str
        Action letters to keep, e.g. ``"Q"`` (default) or ``"D"``.
    writes : bool
        Keep write requests too (default: reads only).
    device : str, optional
        ``"major,minor"`` to keep only one device.
    source : str
        Name of the input in error messages.

    Returns
    -------
    (pandas.DataFrame, dict)
        Rows ``space, page, time_ns, thread`` in the order of the input (a
        request covering several pages gives one row per page, ascending), and
        counts: ``events`` kept, ``rows``, ``skipped_lines``, ``outside``.

    Raises
    ------
    ValueError
        For a bad argument, naming it; for an event line whose range is
        malformed, naming the line and the field.

    Examples
    --------
    >>> df, st = parse_blkparse(["  8,0  1  1  0.000001000  77  Q  R 64 + 64 [mysqld]"])
    >>> df.to_dict("list")
    {'space': [0, 0], 'page': [2, 3], 'time_ns': [1000, 1000], 'thread': [77, 77]}
    """
    page_size = check_int("--page-size", page_size, 1024, 65536)
    if page_size & (page_size - 1):
        raise ValueError(f"--page-size={page_size!r} is out of range; allowed: a power of two "
                         "in 1024..65536 bytes")
    check_int("--file-offset", file_offset, 0)
    if file_offset % SECTOR:
        raise ValueError(f"--file-offset={file_offset} is not a multiple of {SECTOR} bytes")
    check_int("--space", space, 0)
    if not actions or not set(actions) <= _ACTIONS:
        raise ValueError(f"--action={actions!r}: allowed letters: {''.join(sorted(_ACTIONS))}")
    dev = None
    if device is not None:
        m = re.fullmatch(r"\s*(\d+),(\d+)\s*", device)
        if not m:
            raise ValueError(f"--device={device!r} is not MAJOR,MINOR (e.g. 8,0)")
        dev = (int(m.group(1)), int(m.group(2)))
    pages, times, pids = [], [], []
    st = {"events": 0, "rows": 0, "skipped_lines": 0, "outside": 0}
    for lineno, line in enumerate(lines, 1):
        m = _EVENT.match(line)
        if not m:
            st["skipped_lines"] += 1
            continue
        if m["action"] not in actions or (dev and (int(m["maj"]), int(m["min"])) != dev):
            continue
        rwbs = m["rwbs"]
        if "R" not in rwbs and not (writes and "W" in rwbs):
            continue
        rest = (m["rest"] or "").strip()
        r = _RANGE.match(rest)
        if not r:
            if rest == "" or rest.startswith("["):
                st["skipped_lines"] += 1   # an event without a sector range
                continue
            raise ValueError(f"{source}: line {lineno}: field 'sector + count' is {rest!r}; "
                             "expected e.g. '8192 + 32 [mysqld]'")
        count = int(r["count"])
        if count == 0:
            st["skipped_lines"] += 1
            continue
        start = int(r["sector"]) * SECTOR - file_offset
        end = start + count * SECTOR - 1
        if end < 0:
            st["outside"] += 1
            continue
        first, last = max(start, 0) // page_size, end // page_size
        t = int(m["sec"]) * 1_000_000_000 + int(m["nsec"].ljust(9, "0"))
        n = last - first + 1
        pages.append(np.arange(first, last + 1, dtype=np.int64))
        times.append(np.full(n, t, dtype=np.int64))
        pids.append(np.full(n, int(m["pid"]), dtype=np.int64))
        st["events"] += 1
    if pages:
        page = np.concatenate(pages)
        df = pd.DataFrame({"space": np.full(len(page), space, dtype=np.int64), "page": page,
                           "time_ns": np.concatenate(times), "thread": np.concatenate(pids)})
    else:
        df = pd.DataFrame({c: np.zeros(0, dtype=np.int64)
                           for c in ("space", "page", "time_ns", "thread")})
    st["rows"] = len(df)
    return df, st


def convert_blkparse(src, dst, **kwargs) -> dict:
    """Convert blkparse text output to a ``space,page,time_ns,thread`` CSV trace.

    The CSV is what :func:`bufsim.read_trace` reads; each process id is a
    thread.  blkparse prints events in time order, so a thread's times never
    go backwards; if an edited input does, :func:`bufsim.read_trace` reports
    the row later (nothing is reordered here).

    Parameters
    ----------
    src : path-like
        blkparse's text output (see :func:`parse_blkparse` for the fields).
    dst : path-like
        The CSV to write (atomically: an existing file is replaced only by a
        complete new one).
    **kwargs
        ``page_size``, ``file_offset``, ``space``, ``actions``, ``writes``,
        ``device`` as in :func:`parse_blkparse`.

    Returns
    -------
    dict
        The counts of :func:`parse_blkparse`.

    Raises
    ------
    ValueError
        For bad arguments or lines, or if no request of the file was found
        (nothing is written then).
    """
    src = Path(src)
    with open(src, encoding="utf-8", errors="replace") as fh:
        df, st = parse_blkparse(fh, source=str(src), **kwargs)
    if not len(df):
        raise ValueError(f"{src}: no {'/'.join(kwargs.get('actions', 'Q'))} "
                         f"{'read or write' if kwargs.get('writes') else 'read'} request inside "
                         f"the file was found ({st['skipped_lines']} other lines, "
                         f"{st['outside']} requests before --file-offset); nothing written")
    with atomic_path(os.fspath(dst)) as tmp:
        df.to_csv(tmp, index=False)
    return st
