"""Notebook 01's statements generated once per process, kept in narrow dtypes.

Notebook 01 replays the same SSB statements many times: the 13 scan queries in every run
of the 13-query table (6 pools x 4 runs), in the sensitivity sweeps (28 pools) and the
analytic check; the ``index_first`` plans in every run of their table; Q1.1 at each
fitted cost in :func:`~bufsim.experiments.ssb.fit_q11` (twice per iteration: both
old_blocks_time settings) and in the restart grids.  A statement's events are a pure
function of the data (drawn when the :class:`~bufsim.workloads.ssb.SSB` is made: its
``cache_params`` name it), the query and the plan; the CPU costs only set each run's
per-get CPU, ``get_ns + (rows * row_ns) // count`` (:func:`bufsim.workloads.plans.emit_chunk`),
and a replay does not modify a chunk.  So :func:`statement` generates each statement
once, at a probe cost from which every run's rows are read back exactly, and keeps it
packed: dense page ids, run lengths and rows per run in the narrowest unsigned dtype
that holds the chunk's largest value (an SF 1 scan: uint32, uint8, uint8), the stream id
once when it is the same for every event, the flags as they are: 7-8 bytes an event
instead of the :class:`~bufsim.trace.Chunk`'s 33 (the 13 scan queries at SF 1: 72.9 M
events, about 0.55 GB instead of 2.24).  :meth:`Packed.unpack` gives back the chunk at
any costs, every value as the plan generates it at those costs
(``tests/experiments/test_ssb_chunk_memo.py`` compares them).

The kept copies are bounded by :data:`MEMO_BYTES` (least recently used go first); a
statement larger than the bound is generated for each call and not kept.  Consecutive
chunks of the plan are kept joined, :data:`COALESCE_EVENTS` events or more each: the same
events in the same order, in fewer calls into the pools (a replay does not depend on where
its chunks end: ``tests/test_replay.py``).

A pool fed a chunk counts its gets per tablespace (``NUMBER_PAGES_GET`` per space: a
``searchsorted`` over the chunk, ~6 ns an event) and keeps the counts on the chunk for the
next pool over the same tablespaces (``PoolState._chunk_space_gets``).  A kept chunk
carries the counts the pools made for its first unpacked copy to every later copy (they
depend on its pages, counts and flags only, never on the CPU costs), so each statement's
gets per space are counted once per process instead of once per run.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterator

import numpy as np

from ..trace import SPACE_GETS_MEMO, Chunk, Trace
from ..workloads.plans import CpuCost
from ..workloads.ssb import SSB

__all__ = ["MEMO_BYTES", "COALESCE_EVENTS", "UNPACKED_BYTES", "Packed", "Statement", "statement",
           "cpu_ns", "kept_pages", "clear", "kept_bytes"]

#: bytes of packed chunks kept for later calls (the SF 1 notebook keeps about 0.55 GiB:
#: the 13 scan queries 0.38, the 9 index_first plans 0.14, Q1.1's date_first plan)
MEMO_BYTES = 3 << 29
#: events a kept chunk holds at least (consecutive chunks of the plan joined; a statement's
#: last chunk: what is left): a chunk fed to a pool costs ~40-80 us of calls besides the
#: replay, about 1,200 chunks per pass of the 13 scan queries at SF 1 as the plans make them
COALESCE_EVENTS = 1 << 20
#: bytes of unpacked chunks kept: the last statement passed over, at its costs, when it is
#: this small (Q1.1 date_first at SF 1: 0.12 GB), for the next pass at the same costs
#: (31 replays of it in a row at the fitted costs: the restart grids)
UNPACKED_BYTES = 256 << 20
_memo: OrderedDict = OrderedDict()          # key -> _Entry, least recently used first
_unpacked: list = []                        # [(key, cpu), chunks, entry] of the last pass
_to_learn: list = []                        # (Packed, copy) a pool may still be replaying
_UNSIGNED = (np.uint8, np.uint16, np.uint32, np.uint64)


def _narrow(a: np.ndarray) -> np.ndarray:
    """``a`` (integers >= 0) in the narrowest unsigned dtype holding its largest value."""
    hi = int(a.max()) if a.size else 0
    for t in _UNSIGNED:
        if hi <= np.iinfo(t).max:
            return a.astype(t)
    raise AssertionError("unreachable: int64 values >= 0 fit uint64")


#: the per-row CPU a statement is generated at (no per-get CPU): the rows of each run are
#: read back from its cpu_ns, ``(rows * ROW_PROBE_NS) // count``, exactly for runs of fewer
#: than ROW_PROBE_NS gets (one integer per floor) and up to 2**63 / ROW_PROBE_NS rows
ROW_PROBE_NS = 1 << 20
_PROBE = CpuCost(row_ns=ROW_PROBE_NS, get_ns=0)


def _rows_of(chunk: Chunk) -> np.ndarray:
    """The rows attributed to each run of ``chunk`` generated at :data:`_PROBE`: the one
    integer whose ``(rows * ROW_PROBE_NS) // count`` is the run's cpu_ns (checked)."""
    count, v = chunk.count, chunk.cpu_ns
    if count.size and int(count.max()) >= ROW_PROBE_NS:
        raise RuntimeError(f"a run of {int(count.max())} gets: rows are read back from runs of "
                           f"fewer than {ROW_PROBE_NS} gets only")
    rows = -((-v * count) // ROW_PROBE_NS)         # ceil(v * count / ROW_PROBE_NS)
    if not np.array_equal((rows * ROW_PROBE_NS) // count, v):
        raise RuntimeError("a chunk's cpu_ns is not (rows * row_ns) // count: its rows cannot "
                           "be read back (has bufsim.workloads.plans changed how it charges CPU?)")
    return rows


def cpu_ns(count: np.ndarray, rows: np.ndarray, cpu: CpuCost) -> np.ndarray:
    """Per-get CPU of runs of ``count`` gets carrying ``rows`` rows, as the plans charge it
    (:func:`bufsim.workloads.plans.emit_chunk`): ``get_ns + (rows * row_ns) // count``."""
    rows = rows.astype(np.int64)
    if cpu.row_ns == 0:
        return np.full(rows.size, cpu.get_ns, dtype=np.int64)
    return cpu.get_ns + (rows * cpu.row_ns) // count.astype(np.int64)


class Packed:
    """One chunk, its CPU as rows per run, in narrow dtypes (see the module docstring);
    :meth:`unpack` gives the chunk at any CPU costs."""

    __slots__ = ("page", "count", "rows", "stream", "flags", "space_gets")

    def __init__(self, chunk: Chunk, rows: np.ndarray):
        self.page = _narrow(chunk.page)
        self.count = _narrow(chunk.count)
        self.rows = _narrow(rows)
        s = chunk.stream
        # one stream id for the whole chunk (a statement's chunks: stream 0) is kept once
        self.stream = int(s[0]) if s.size and (s == s[0]).all() else s.copy()
        self.flags = chunk.flags.copy()
        self.space_gets = None      # the pools' (tablespaces, gets per space) of a copy

    @property
    def nbytes(self) -> int:
        st = self.stream.nbytes if isinstance(self.stream, np.ndarray) else 8
        return self.page.nbytes + self.count.nbytes + self.rows.nbytes + self.flags.nbytes + st

    def unpack(self, cpu: CpuCost) -> Chunk:
        """The chunk as generated at the CPU costs ``cpu`` (int64 columns, uint8 flags)."""
        n = self.page.size
        stream = (np.full(n, self.stream, dtype=np.int64) if not isinstance(self.stream, np.ndarray)
                  else self.stream.copy())
        count = self.count.astype(np.int64)
        c = Chunk(self.page.astype(np.int64), count, cpu_ns(count, self.rows, cpu), stream,
                  self.flags.copy())
        if self.space_gets is not None:
            object.__setattr__(c, SPACE_GETS_MEMO, self.space_gets)
        return c

    def learn(self, chunk: Chunk) -> None:
        """Keep the gets per tablespace a pool counted on ``chunk`` (a copy of this one),
        if it has them, for the later copies."""
        if self.space_gets is None:
            self.space_gets = chunk.__dict__.get(SPACE_GETS_MEMO)


class _Entry:
    """A statement's chunks, CPU-free: generated at :data:`_PROBE` by the first pass and
    kept packed."""

    __slots__ = ("key", "name", "rows", "gets", "op", "packed")

    def __init__(self, key, op):
        self.key, self.name, self.rows, self.gets = key, op.name, int(op.rows), int(op.gets)
        self.op = op
        self.packed = None          # the packed chunks once a pass has kept them all

    @property
    def nbytes(self) -> int:
        return sum(p.nbytes for p in self.packed) if self.packed is not None else 0

    def chunks(self, cpu: CpuCost) -> Iterator[Chunk]:
        if _unpacked and _unpacked[0] == (self.key, cpu):
            yield from _unpacked[1]
            return
        if self.packed is not None:
            if self.key in _memo:
                _memo.move_to_end(self.key)
            yield from _keep_unpacked(self, cpu, _learning((p, p.unpack(cpu)) for p in self.packed))
            return
        yield from _keep_unpacked(self, cpu, self._generate(cpu))

    def _generate(self, cpu: CpuCost) -> Iterator[Chunk]:
        kept, used = [], 0

        def packed():
            nonlocal kept, used
            for group in _groups(self.op.chunks()):
                p = Packed(_Joined(group), np.concatenate([_rows_of(c) for c in group]))
                if kept is not None:
                    kept.append(p)
                    used += p.nbytes
                    if used > MEMO_BYTES:
                        kept = None         # too large to keep: generated on every call
                yield p, p.unpack(cpu)
        yield from _learning(packed())
        if kept is not None and self.packed is None:
            while _memo and kept_bytes() + used > MEMO_BYTES:
                _memo.popitem(last=False)
            self.packed, self.op = kept, None
            _memo[self.key] = self


def _groups(chunks) -> Iterator[list]:
    """Consecutive ``chunks`` in groups of at least :data:`COALESCE_EVENTS` events (the
    last: what is left)."""
    group, n = [], 0
    for c in chunks:
        group.append(c)
        n += len(c)
        if n >= COALESCE_EVENTS:
            yield group
            group, n = [], 0
    if group:
        yield group


class _Joined:
    """A group of chunks' columns end to end, as :class:`Packed` reads a chunk's."""

    __slots__ = ("page", "count", "stream", "flags")

    def __init__(self, group):
        for f in self.__slots__:
            setattr(self, f, np.concatenate([getattr(c, f) for c in group]))


class Statement:
    """A statement at given CPU costs: its rows read, page gets and chunks (:func:`statement`)."""

    __slots__ = ("_entry", "cpu")

    def __init__(self, entry: _Entry, cpu: CpuCost):
        self._entry, self.cpu = entry, cpu

    name = property(lambda self: self._entry.name)
    rows = property(lambda self: self._entry.rows)
    gets = property(lambda self: self._entry.gets)

    def chunks(self) -> Iterator[Chunk]:
        """The events of ``ssb.query(name, plan, cpu=cpu).chunks()`` in order, in chunks of
        :data:`COALESCE_EVENTS` events or more (the plan's chunks joined: a replay does not
        depend on where chunks end, and each chunk fed is a call into every pool):
        generated by the first pass (and kept packed while :data:`MEMO_BYTES` allows) or
        unpacked from the kept copy."""
        return self._entry.chunks(self.cpu)

    def trace(self, tablespaces) -> Trace:
        """A re-iterable :class:`~bufsim.trace.Trace` of :meth:`chunks` (as the operator's
        ``trace()``)."""
        return Trace(self.chunks, tablespaces, self.name)


def statement(ssb: SSB, name: str, plan: str = "scan", cpu: CpuCost = CpuCost()) -> Statement:
    """Query ``name`` under ``plan`` at the CPU costs ``cpu``, as ``ssb.query(name, plan,
    cpu=cpu)`` generates it: a :class:`Statement` whose chunks the first pass over the
    statement (at any costs) generates and keeps packed for the later passes and calls,
    at these costs or others, while :data:`MEMO_BYTES` allows."""
    key = (ssb.cache_params, name, plan)
    hit = _memo.get(key)
    if hit is not None:
        _memo.move_to_end(key)
        return Statement(hit, cpu)
    if _unpacked and _unpacked[2].key == key:      # kept unpacked only (too large to pack)
        return Statement(_unpacked[2], cpu)
    return Statement(_Entry(key, ssb.query(name, plan, cpu=_PROBE)), cpu)


def _learning(pairs) -> Iterator[Chunk]:
    """The chunks of ``(packed, chunk)`` pairs; once the consumer has asked for the one
    after the next (run_ssb's pools have replayed a chunk by then, also in threads), each
    packed chunk learns what the pools counted on its copy (:meth:`Packed.learn`).  The
    last two, which pools in threads may still be replaying when the pass ends, learn at
    the start of the next pass."""
    while _to_learn:
        q, d = _to_learn.pop()
        q.learn(d)
    held = []
    for p, c in pairs:
        yield c
        held.append((p, c))
        if len(held) > 2:
            q, d = held.pop(0)
            q.learn(d)
    for q, d in held:
        q.learn(d)
        if q.space_gets is None:
            _to_learn.append((q, d))


def _keep_unpacked(entry: _Entry, cpu: CpuCost, chunks) -> Iterator[Chunk]:
    """``chunks``, and the list of them in the unpacked slot once the pass ends, if they
    take at most :data:`UNPACKED_BYTES`."""
    kept, used = [], 0
    for c in chunks:
        if kept is not None:
            used += c.page.nbytes + c.count.nbytes + c.cpu_ns.nbytes + c.stream.nbytes + c.flags.nbytes
            kept.append(c)
            if used > UNPACKED_BYTES:
                kept = None
        yield c
    _unpacked.clear()
    if kept is not None:
        _unpacked.extend(((entry.key, cpu), kept, entry))


def kept_pages(ssb: SSB, name: str, plan: str = "scan") -> list | None:
    """The dense pages of the statement's events (one array per chunk, repeats and all) if
    it is kept, else None: the pages it touches, without generating anything."""
    e = _memo.get((ssb.cache_params, name, plan))
    return None if e is None or e.packed is None else [p.page for p in e.packed]


def kept_bytes() -> int:
    """Bytes of the packed chunks kept now."""
    return sum(s.nbytes for s in _memo.values())


def clear() -> None:
    """Drop every kept statement."""
    _memo.clear()
    _unpacked.clear()
    _to_learn.clear()
