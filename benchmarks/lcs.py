"""libCacheSim's own C fast path over a page sequence, for benchmarks/run.py.

:class:`OracleTrace` writes the pages once to a temporary oracleGeneral binary
trace (per request a packed little-endian struct of uint32 ``clock_time``,
uint64 ``obj_id``, uint32 ``obj_size``, int64 ``next_access_vtime``: 24 bytes),
and each :meth:`OracleTrace.run` opens it with
``libcachesim.TraceReader(path, TraceType.ORACLE_GENERAL_TRACE)`` and times only
``cache.process_trace(reader)``, the loop in C (``c_process_trace``) with no
Python per request.  :func:`run` does both for one policy and size.

Conventions, those of tests/policies/test_libcachesim.py's per-request loop: object id
``page + 1``, every object size 1 (``clock_time`` 0, ``next_access_vtime`` -1,
which the reader turns into "never"), and the cache size given in objects, so a
cache of ``size`` holds ``size`` pages.  ``process_trace`` returns ``(object
miss ratio, byte miss ratio)``, and rewinds the reader itself; the hits are
``n_req - round(object miss ratio * n_req)``, which equalled the per-request
loop's count and bufsim's exactly for LRU and Clock (tests/test_bench_lcs.py;
by hand on a 200k-get Zipf trace at 1000 and 8192 objects).

Not part of the bufsim package: libCacheSim is only the benchmark's yardstick.
"""
from __future__ import annotations

import os
import tempfile
import time

import numpy as np

#: bufsim policy name -> libCacheSim class name.
POLICIES = {"lru": "LRU", "clock": "Clock", "fifo": "FIFO", "two_q": "TwoQ", "arc": "ARC"}

#: One oracleGeneral request (packed, little-endian, 24 bytes).
ORACLE_GENERAL = np.dtype([("clock_time", "<u4"), ("obj_id", "<u8"), ("obj_size", "<u4"),
                           ("next_access_vtime", "<i8")])
assert ORACLE_GENERAL.itemsize == 24


def version() -> str | None:
    """The installed libcachesim version, or None if it is not installed."""
    try:
        import libcachesim as lcs
    except ImportError:
        return None
    v = getattr(lcs, "__version__", None)
    if v is None:
        from importlib.metadata import version as _v
        v = _v("libcachesim")
    return str(v)


def write_trace(path, pages: np.ndarray) -> None:
    """Write ``pages`` as an oracleGeneral trace: obj_id ``page + 1``, size 1, time 0,
    next access -1 (unknown; only offline policies such as Belady read it)."""
    pages = np.asarray(pages)
    if pages.ndim != 1:
        raise ValueError(f"pages must be one-dimensional, got shape {pages.shape}")
    if len(pages) and int(pages.min()) < 0:
        raise ValueError("pages must be >= 0")
    rec = np.empty(len(pages), dtype=ORACLE_GENERAL)
    rec["clock_time"] = 0
    rec["obj_id"] = pages.astype(np.uint64) + np.uint64(1)
    rec["obj_size"] = 1
    rec["next_access_vtime"] = -1
    rec.tofile(path)


def default_hashpower(size: int) -> int:
    """log2 of the hash-table buckets for a cache of ``size`` objects: load factor <= 1/2.

    libCacheSim's Python default is 24 (16M buckets, 128 MiB) whatever the
    cache size; the first ``process_trace`` then page-faults that table inside
    the timed call and later lookups miss the TLB, which made a 2M-get LRU run
    at 8192 pages several times slower than with a table sized to the cache
    (the hits are identical).  A cache never holds more than ``size`` objects.
    """
    return max(12, int(size).bit_length() + 1)


class OracleTrace:
    """A page sequence written once to a temporary oracleGeneral file, for several runs.

    Use as a context manager; the file is removed on exit::

        with OracleTrace(pages) as t:
            secs, hits = t.run("lru", 8192)
    """

    def __init__(self, pages: np.ndarray):
        self.n = len(pages)
        fd, self.path = tempfile.mkstemp(prefix="bufsim-lcs-", suffix=".oracleGeneral.bin")
        os.close(fd)
        try:
            write_trace(self.path, pages)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.path is not None:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            self.path = None

    def __enter__(self) -> "OracleTrace":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def run(self, policy: str, size: int, *, hashpower: int | None = None) -> tuple[float, int]:
        """(seconds, hits) of libCacheSim's ``policy`` with ``size`` objects: see :func:`run`."""
        import libcachesim as lcs

        if policy not in POLICIES:
            raise ValueError(f"policy={policy!r} is not supported; allowed: {sorted(POLICIES)}")
        size = int(size)
        if size < 1:
            raise ValueError(f"size={size} is out of range; allowed: >= 1")
        if self.path is None:
            raise ValueError("the trace file is closed")
        n = self.n
        if n == 0:
            return 0.0, 0
        # no reader.close(): in libcachesim 0.3.5 close() followed by the reader's
        # destructor frees twice and aborts the process; dropping the reader closes it
        reader = lcs.TraceReader(self.path, lcs.TraceType.ORACLE_GENERAL_TRACE)
        n_req = int(reader.get_num_of_req())
        if n_req != n:
            raise RuntimeError(f"libCacheSim reads {n_req} requests from {self.path}, wrote {n}")
        hp = default_hashpower(size) if hashpower is None else int(hashpower)
        cache = getattr(lcs, POLICIES[policy])(size, hashpower=hp)
        t0 = time.perf_counter()
        obj_miss_ratio, _byte_miss_ratio = cache.process_trace(reader)
        secs = time.perf_counter() - t0
        del reader, cache
        return secs, n - int(round(obj_miss_ratio * n))


def run(policy: str, pages: np.ndarray, size: int, *,
        hashpower: int | None = None) -> tuple[float, int]:
    """(seconds, hits) of libCacheSim's ``policy`` over ``pages`` with ``size`` objects.

    Writes ``pages`` to a temporary oracleGeneral file (removed afterwards),
    opens it with ``TraceReader`` and creates the cache, none of it timed; only
    ``cache.process_trace(reader)`` is timed.  To run several policies or sizes
    over one sequence, write it once with :class:`OracleTrace`.

    Parameters
    ----------
    policy : str
        A key of :data:`POLICIES` ("lru", "clock", ...).
    pages : numpy.ndarray of int
        Page numbers (>= 0), one per get.
    size : int
        Cache size in objects (pages), >= 1.
    hashpower : int, optional
        Passed to the cache; default :func:`default_hashpower` ``(size)``.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy={policy!r} is not supported; allowed: {sorted(POLICIES)}")
    with OracleTrace(pages) as t:
        return t.run(policy, size, hashpower=hashpower)
