"""Rows to events: run-length encoding across blocks, the CPU time between a
thread's gets, statement ends, and one stream per thread."""
from __future__ import annotations

import numpy as np

from .._validation import TraceError
from ..pages import Tablespaces
from ..trace import FLAG_STMT_END, Chunk, Trace, split_chunk
from ._sources import Source


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


class Events:
    """Run-length encodes parsed blocks of one thread into chunks of at most
    ``chunk_size`` events (several threads: :class:`ThreadEvents`).

    An event's CPU time and statement end depend on its thread's next event.  With
    one thread that is the next event, so all but the last event of the buffer are
    emitted after each block.
    """

    def __init__(self, src: Source, ts: Tablespaces, cpu_ns_per_get: int, chunk_size: int):
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


class ThreadEvents:
    """The events of a trace of several threads, built per thread while reading.

    Blocks are run-length encoded as in :class:`Events` (a run is consecutive rows of
    one thread), then each event is appended to its thread's lists in narrow dtypes:
    dense page (uint32 when the tablespaces allow), count, CPU time (each the smallest
    unsigned dtype of its block) and flags (uint8).  An event's CPU time and statement
    end depend on its thread's next event, so each thread's last event waits
    (``pend``) until its thread's next event, or the end.  The file order of events
    is kept as one stream id per event (``sid``, uint8/uint16/uint32).  Nothing holds
    every event in int64: about 8-18 bytes per event instead of 33 for Chunks.
    """

    _P = ("th", "space", "page", "dense", "count", "t0", "t1", "flags", "ss")

    def __init__(self, src: Source, ts: Tablespaces, cpu_ns_per_get: int, n_threads: int):
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


def threaded_trace(sid, streams, ts, name, names, start, chunk_size, cpu_ns_per_get) -> Trace:
    """The trace of several threads from :meth:`ThreadEvents.finish`: iterated in file
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
