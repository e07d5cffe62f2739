"""A buffer pool as a session, the one door to the engine's state: run traces one
after another on one pool, interleave several streams by virtual time up to a given
moment (:meth:`Pool.run_until`), change settings at run time, let virtual time pass,
read counters and deltas, save and restore the whole state.

:func:`bufsim.replay` is the one-shot form over it (several streams, sampling, timed
``SET GLOBAL``); :class:`Pool` is for cold-then-warm runs, warm-up-then-measure,
a setting changed between statements, a measurement window inside a run, or an idle
gap in which the page cleaner works.  The array state is the engine's private
:class:`bufsim._pool_state.PoolState`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from typing import Sequence

from ._pool_state import COUNTER_NAMES, PoolState, hit_rate
from ._validation import check_ns, check_number, describe, renamed
from .config import PoolConfig, preset
from .pages import Tablespaces
from .policies.loop import STOP_TIME

__all__ = ["Pool", "PoolSnapshot", "trace_sources"]

#: counters of :meth:`Pool.counters` that are levels, not cumulative counts
_LEVELS = ("DATABASE_PAGES", "OLD_DATABASE_PAGES", "FREE_BUFFERS", "HIT_RATE")


@dataclass(frozen=True)
class PoolSnapshot:
    """The complete state of a :class:`Pool` at one moment (see :meth:`Pool.snapshot`).

    ``config`` is the configuration in effect then (with the values :meth:`Pool.set`
    changed), ``created`` the one the pool was created with, and ``tablespaces`` its
    page map: :meth:`Pool.restore` takes the snapshot only into a pool created with
    the same configuration over equal tablespaces."""

    arrays: dict
    config: PoolConfig
    baseline: np.ndarray
    created: PoolConfig
    tablespaces: Tablespaces


class Pool:
    """One buffer pool and its streams of gets (one by default), kept between calls.

    Parameters
    ----------
    config
        A :class:`PoolConfig` or a preset name (``'mysql56'``...).
    tablespaces
        The page map every trace run on this pool uses.
    streams
        The number of streams (an int >= 1) or their names, one per stream (for
        example a sysbench thread and a mysqldump scan sharing the pool and the
        device); :meth:`open` and :meth:`run_until` interleave them in virtual time.
    start_ns
        The virtual time at which each stream starts (one integer >= 0 per stream;
        default 0).
    content
        Optional starting content (InnoDB and ``lru`` pools): see :meth:`load`.

    Examples
    --------
    >>> pool = Pool(bufsim.mysql56(pool_pages=8192), trace.tablespaces)   # doctest: +SKIP
    >>> cold = pool.run(trace); warm = pool.run(trace)                    # doctest: +SKIP
    >>> pool.set(old_blocks_time_ms=0); pool.idle(5); pool.delta()           # doctest: +SKIP
    >>> two = Pool(cfg, ts, streams=["oltp", "dump"], start_ns=[0, 10**9])   # doctest: +SKIP
    >>> two.open([oltp, dump]); two.run_until(5 * 10**9); two.streams()       # doctest: +SKIP
    """

    def __init__(self, config: PoolConfig | str, tablespaces: Tablespaces, *,
                 streams: int | Sequence[str] = 1, start_ns: Sequence[int] | None = None,
                 content=None):
        if isinstance(config, str):
            config = preset(config)
        if not isinstance(config, PoolConfig):
            raise ValueError(f"config must be a PoolConfig or a preset name, got "
                             f"{type(config).__name__}")
        if not isinstance(tablespaces, Tablespaces):
            raise ValueError(f"tablespaces must be a Tablespaces, got {type(tablespaces).__name__}")
        if isinstance(streams, (int, np.integer)) and not isinstance(streams, bool):
            if streams < 1:
                raise ValueError(f"streams={streams} is out of range; allowed: an int >= 1 or "
                                 "a list of stream names")
            names = None
            n = int(streams)
        elif isinstance(streams, (list, tuple)) and streams:
            names = [str(x) for x in streams]
            n = len(names)
        else:
            raise ValueError(f"streams must be an int >= 1 or a non-empty list of names, got "
                             f"{describe(streams)}")
        self._state = PoolState(config, tablespaces, n, start_ns=start_ns, stream_names=names)
        self._sources = None  # one chunk iterator per stream while open() feeds them
        self._on_chunk = None
        self._created = config  # what a snapshot must have been taken with (restore)
        self._baseline = self._cumulative()
        self._run0 = None  # (counters, stream totals) when begin() started a run
        if content is not None:
            self.load(**content) if isinstance(content, dict) else self.load(content)

    # ---- properties ------------------------------------------------------------------------
    @property
    def config(self) -> PoolConfig:
        """The configuration now in effect (with the values :meth:`set` changed)."""
        return self._state.config

    @property
    def tablespaces(self) -> Tablespaces:
        return self._state.tablespaces

    @property
    def clock_ns(self) -> int:
        """The virtual time now, in nanoseconds (the latest stream's clock)."""
        return self._state.clock_ns

    @property
    def n_streams(self) -> int:
        return self._state.n_streams

    # ---- running ---------------------------------------------------------------------------
    def run(self, trace) -> pd.DataFrame:
        """Replay a one-stream trace from the pool's current state and virtual time.

        Returns
        -------
        pandas.DataFrame
            One row: the counters' increments over this run (as :meth:`delta`, which
            it does not reset), plus ``elapsed_ns``, ``cpu_ns``, ``io_wait_ns``,
            ``gets``, ``misses`` and ``read_ahead`` of the stream and the device's
            ``device_busy_ns``.
        """
        sources, _, _ = trace_sources(trace)
        if len(sources) != 1:
            raise ValueError(f"trace: Pool.run takes one stream, this trace has {len(sources)}; "
                             "open() and run_until() (or replay()) interleave several")
        if self.n_streams != 1:
            raise ValueError(f"trace: Pool.run feeds stream 0 of a one-stream pool; this pool "
                             f"has {self.n_streams} streams: use open() and run_until()")
        if sources[0].tablespaces is not self.tablespaces and \
                sources[0].tablespaces != self.tablespaces:
            raise ValueError("trace: its tablespaces differ from the pool's")
        self.begin()
        try:
            for chunk in sources[0]:
                self.feed(chunk)
        except BaseException:  # an interrupted or failed run leaves no run open
            self._run0 = None
            raise
        return self.end()

    def open(self, traces, *, on_chunk=None) -> None:
        """Give each stream its source of gets for :meth:`run_until`: a list of traces,
        one per stream, or one trace of as many streams (split as :func:`bufsim.replay`
        splits it).  Each stream continues from its own clock; a stream whose trace runs
        out is closed.  ``on_chunk``: called with no argument after each chunk is fed
        (a progress bar's update).

        Raises
        ------
        ValueError
            If the number of traces is not the pool's number of streams, or a trace's
            tablespaces differ from the pool's."""
        sources, _, _ = trace_sources(traces)
        if len(sources) != self.n_streams:
            raise ValueError(f"traces: {len(sources)} for a pool of {self.n_streams} streams; "
                             "give one trace per stream")
        for j, src in enumerate(sources):
            if src.tablespaces is not self.tablespaces and src.tablespaces != self.tablespaces:
                raise ValueError(f"traces[{j}]: its tablespaces differ from the pool's")
        if self._run0 is not None:
            raise RuntimeError("Pool.open: a run is open (begin() without end()); call end() "
                               "first")
        self._sources = [iter(src) for src in sources]
        self._on_chunk = on_chunk
        for s in range(self.n_streams):
            self._state.reopen(s)
            self._refill(s)

    def _refill(self, s: int) -> None:
        for chunk in self._sources[s]:
            if len(chunk):
                self._state.feed(s, chunk)
                if self._on_chunk is not None:
                    self._on_chunk()
                return
        self._state.close(s)

    def run_until(self, t_ns: int | None = None) -> bool:
        """Run the streams given to :meth:`open`, the one whose clock is smallest first,
        until the stream to go next has reached virtual time ``t_ns`` (None: until every
        trace is done).  Returns True if it stopped at ``t_ns`` with gets left, False once
        every stream's trace is done (then :meth:`open` takes new traces).

        A get is never split: a stream stops at the first get that would start at or
        after ``t_ns``; an event of several gets may be cut there and resumes exactly."""
        if self._sources is None:
            raise RuntimeError("Pool.run_until: call open() with the streams' traces first")
        stop = -1 if t_ns is None else check_ns("t_ns", t_ns)
        st = self._state
        while True:
            code = st.run(stop_ns=stop)
            if code > 0:
                self._refill(code - 1)
            elif code == STOP_TIME:
                return True
            else:
                self._sources = None
                return False

    def begin(self) -> None:
        """Start a run fed chunk by chunk (:meth:`feed`, then :meth:`end`): for a trace
        made on the fly, or one chunk stream fed to several pools.

        Raises
        ------
        RuntimeError
            If a run is open already (``begin()`` without its ``end()``): its gets
            would otherwise be left out of both runs' rows."""
        if self._run0 is not None:
            raise RuntimeError("Pool.begin: a run is open already (begin() was called and "
                               "end() was not); call end() first")
        if self.n_streams != 1:
            raise RuntimeError(f"Pool.begin: feeds stream 0 of a one-stream pool; this pool has "
                               f"{self.n_streams} streams: use open() and run_until()")
        self._run0 = (self._cumulative(), self._state.stream_totals(0))
        self._state.reopen(0)

    def feed(self, chunk) -> None:
        """Replay one chunk (a :class:`bufsim.trace.Chunk` of the pool's tablespaces) of
        the run started by :meth:`begin`."""
        if self._run0 is None:
            raise RuntimeError("Pool.feed: call begin() first")
        if len(chunk):
            self._state.feed(0, chunk)
            code = self._state.run()
            if code not in (0, 1):
                raise RuntimeError(f"kernel returned {code}")

    def end(self) -> pd.DataFrame:
        """End the run started by :meth:`begin`; returns its row as :meth:`run` does."""
        if self._run0 is None:
            raise RuntimeError("Pool.end: call begin() first")
        st = self._state
        st.close(0)
        if st.run() != 0:
            raise RuntimeError("the replay did not finish")
        before, s0 = self._run0
        self._run0 = None
        row = self._frame(self._cumulative() - before)
        s1 = st.stream_totals(0)
        row["elapsed_ns"] = s1["clock_ns"] - s0["clock_ns"]
        for k in ("cpu_ns", "io_wait_ns", "gets", "misses", "read_ahead"):
            row[k] = s1[k] - s0[k]
        row["device_busy_ns"] = s1["busy_ns"] - s0["busy_ns"]
        return row

    def idle(self, seconds: float) -> None:
        """Let ``seconds`` of virtual time pass with no gets; the 5.6+ page cleaner makes
        the pass due at the first whole second after the last activity.

        ``seconds`` is a finite number >= 0 (an int or a float, rounded to whole
        nanoseconds; not a bool or a string): :meth:`idle_ns` takes exact
        nanoseconds."""
        seconds = check_number("seconds", seconds, lo=0.0)
        self.idle_ns(int(round(seconds * 1e9)))

    def idle_ns(self, ns: int) -> None:
        """:meth:`idle` for ``ns`` nanoseconds exactly (an integer >= 0)."""
        t = self.clock_ns + check_ns("ns", ns)
        if t > 2**63 - 1:
            raise ValueError(f"idle of {ns} ns would overflow the int64 virtual clock")
        self._state.idle_until(t)

    def set(self, *, old_blocks_time_ms: int | None = None, old_blocks_pct: int | None = None,
            old_blocks_time: int | None = None) -> None:
        """``SET GLOBAL innodb_old_blocks_time = ms`` / ``innodb_old_blocks_pct = pct``.

        The time applies to every later make-young check; a new percentage re-adjusts
        each instance's old sublist at once, as buf_LRU_old_ratio_update does.  The
        keywords are the configuration's field names; ``old_blocks_time=`` is the
        deprecated name of ``old_blocks_time_ms=``.

        Raises
        ------
        ValueError
            Out of range (naming the field), or on a pool whose policy is not
            ``'innodb'``: the other policies have no old sublist and ignore both."""
        old_blocks_time = renamed("old_blocks_time_ms", old_blocks_time_ms,
                                  "old_blocks_time", old_blocks_time)
        given = [n for n, v in (("old_blocks_time_ms", old_blocks_time),
                                ("old_blocks_pct", old_blocks_pct)) if v is not None]
        if given and self.config.policy != "innodb":
            raise ValueError(f"{given[0]}: innodb_old_blocks_time and innodb_old_blocks_pct "
                             f"apply to policy 'innodb' only; this pool's policy is "
                             f"{self.config.policy!r}")
        changes = {}
        if old_blocks_time is not None:
            changes["old_blocks_time_ms"] = old_blocks_time
        if old_blocks_pct is not None:
            changes["old_blocks_pct"] = old_blocks_pct
        if not changes:
            return
        self._state.set_settings(self.config.replace(**changes))  # validates, naming the field

    # ---- counters ----------------------------------------------------------------------------
    def _cumulative(self) -> np.ndarray:
        return self._state.counter_totals()

    def _frame(self, counts: np.ndarray) -> pd.DataFrame:
        row = {name: int(v) for name, v in zip(COUNTER_NAMES, counts)}
        row["HIT_RATE"] = hit_rate(row["NUMBER_PAGES_READ"], row["NUMBER_PAGES_GET"])
        return pd.DataFrame([row])

    def counters(self) -> pd.DataFrame:
        """One row, INNODB_BUFFER_POOL_STATS names summed over instances (the global
        status variables) since the pool was created, plus the levels
        DATABASE_PAGES, OLD_DATABASE_PAGES, FREE_BUFFERS and MODIFIED_DATABASE_PAGES
        (the flush lists' length) now."""
        df = self._frame(self._cumulative())
        stats = self._state.stats()
        for name in ("DATABASE_PAGES", "OLD_DATABASE_PAGES", "FREE_BUFFERS",
                     "MODIFIED_DATABASE_PAGES"):
            df[name] = int(stats[name].sum())
        return df

    def cumulative(self) -> dict:
        """The cumulative counters (INNODB_BUFFER_POOL_STATS names, summed over instances)
        since the pool was created, as ints: the columns of :meth:`counters` that count."""
        return {name: int(v) for name, v in zip(COUNTER_NAMES, self._cumulative())}

    @property
    def cleaner_passes(self) -> int:
        """Page-cleaner passes so far."""
        return self._state.cleaner_passes

    def memory(self) -> dict:
        """Bytes of engine state: per frame (pool-sized arrays) and per distinct page met
        (the page map and static facts), with the counts."""
        return self._state.nbytes()

    def streams(self) -> pd.DataFrame:
        """One row per stream, cumulative since the pool was created: ``stream``,
        ``name``, ``start_ns``, ``end_ns`` (its clock now), ``elapsed_ns``, ``cpu_ns``,
        ``io_wait_ns``, ``gets``, ``misses``, ``events``, ``read_ahead`` and
        ``hit_ratio``."""
        return self._state.streams()

    def spaces(self) -> pd.DataFrame:
        """Per tablespace: gets, synchronous reads, hit ratio and resident pages now."""
        return self._state.spaces()

    def totals(self, stream: int = 0) -> dict:
        """A stream's cumulative ``clock_ns``, ``cpu_ns``, ``io_wait_ns``, ``gets``,
        ``misses``, ``events``, ``read_ahead`` (pages its gets made linear read-ahead bring
        in) and the device's ``busy_ns`` since the pool was created."""
        return self._state.stream_totals(stream)

    def stats(self) -> pd.DataFrame:
        """One row per instance: INNODB_BUFFER_POOL_STATS columns now."""
        return self._state.stats()

    def contents(self) -> pd.DataFrame:
        """Resident, old and young pages per index now (INNODB_BUFFER_PAGE_LRU grouped)."""
        return self._state.contents()

    def delta(self) -> pd.DataFrame:
        """One row: the counters' increments since the previous ``delta()`` call (since
        the pool was created, the first time), HIT_RATE over those increments."""
        now = self._cumulative()
        out = self._frame(now - self._baseline)
        self._baseline = now
        return out

    # ---- state ---------------------------------------------------------------------------
    def snapshot(self) -> PoolSnapshot:
        """A copy of the whole state (lists, flags, counters, clock, device, settings)."""
        st = self._state
        return PoolSnapshot(st.copy_arrays(), st.config, self._baseline.copy(), self._created,
                            self.tablespaces)

    def restore(self, snap: PoolSnapshot) -> None:
        """Return to a :meth:`snapshot` of this pool, or of a pool created with the same
        configuration over equal tablespaces (the snapshot stays usable).  The settings
        :meth:`set` had changed when the snapshot was taken come back with it.

        Raises
        ------
        ValueError
            If the snapshot was taken of a pool created with another configuration
            (each differing field named, with both values) or over other tablespaces;
            the pool is left as it was.
        """
        if not isinstance(snap, PoolSnapshot):
            raise ValueError(f"snap must be a PoolSnapshot, got {type(snap).__name__}")
        if snap.tablespaces is not self.tablespaces and snap.tablespaces != self.tablespaces:
            raise ValueError(f"snap: taken of a pool over other tablespaces "
                             f"({snap.tablespaces!r}; this pool: {self.tablespaces!r}); restore "
                             "takes a snapshot of a pool over equal tablespaces")
        diff = [f"{f.name}={getattr(snap.created, f.name)!r} (this pool: "
                f"{getattr(self._created, f.name)!r})" for f in dataclasses.fields(PoolConfig)
                if getattr(snap.created, f.name) != getattr(self._created, f.name)]
        if diff:
            raise ValueError("snap: taken of a pool created with another configuration: "
                             + ", ".join(diff) + "; restore takes a snapshot of a pool created "
                             "with this pool's configuration")
        st = self._state
        st.restore_arrays(snap.arrays, snap.config)
        self._baseline = snap.baseline.copy()
        self._run0 = None
        self._sources = None  # the buffered events are gone: open() again

    def load(self, pages, old=None, dirty=None) -> None:
        """Start from a given content: ``pages`` (dense page indices) in LRU order, head
        (most recent) first, per instance in the order given; ``old`` flags (a
        suffix of each instance's list) or None for InnoDB's own split (every page
        young below 512 pages, else buf_LRU_old_init's); ``dirty`` flags or None.

        The pool must be empty (a new pool).  The pages count as accessed now.
        Supported for ``innodb`` and ``lru`` pools."""
        st = self._state
        cfg = st.config
        if cfg.policy not in ("innodb", "lru"):
            raise ValueError(f"content: loading a content is supported for policies innodb "
                             f"and lru, not {cfg.policy!r}")
        if st.stats()["DATABASE_PAGES"].sum() or st.counter_totals().any():
            raise ValueError("content: the pool is not empty; load a content into a new Pool")
        pages = np.asarray(pages, dtype=np.int64).ravel()
        n = len(pages)
        old = np.zeros(n, dtype=bool) if old is None else np.asarray(old, dtype=bool).ravel()
        dirty = np.zeros(n, dtype=bool) if dirty is None else np.asarray(dirty, dtype=bool).ravel()
        for name, a in (("old", old), ("dirty", dirty)):
            if len(a) != n:
                raise ValueError(f"content: {name} has {len(a)} flags for {n} pages")
        if n and (pages.min() < 0 or pages.max() >= self.tablespaces.n_pages):
            bad = int(np.flatnonzero((pages < 0) | (pages >= self.tablespaces.n_pages))[0])
            raise ValueError(f"content: pages row {bad} = {int(pages[bad])} is outside the "
                             f"tablespaces (allowed 0..{self.tablespaces.n_pages - 1})")
        if len(np.unique(pages)) != n:
            raise ValueError("content: pages must be distinct")
        inst = self.tablespaces.instance_of(cfg.instances)[pages] if cfg.instances > 1 else \
            np.zeros(n, dtype=np.int64)
        cap = cfg.data_pages
        given_old = old.any()
        for i in range(cfg.instances):
            sel = np.flatnonzero(inst == i)
            if len(sel) > cap:
                raise ValueError(f"content: {len(sel)} pages for instance {i}, which holds "
                                 f"{cap}")
            o = old[sel]
            if given_old and cfg.policy == "innodb":
                k = int(np.argmax(o)) if o.any() else len(o)
                if not o[k:].all():
                    raise ValueError(f"content: the old pages of instance {i} must be the "
                                     "tail of its list")
                if (len(sel) >= 512) != bool(o.any()):
                    raise ValueError(f"content: instance {i} holds {len(sel)} pages; an "
                                     "InnoDB list has old pages exactly when it holds >= 512")
        local = st.local_ids(pages)
        st.load_content(local, inst, old if given_old else None, dirty)

    def __repr__(self):
        c = self.config
        return (f"Pool(policy={c.policy!r}, pool_pages={c.pool_pages}, instances={c.instances}, "
                f"clock_ns={self.clock_ns})")


def trace_sources(trace) -> tuple[list, list[int], list[str]]:
    """One source of chunks per stream, with its start time and name."""
    from .trace import Trace
    if isinstance(trace, (list, tuple)):
        if not trace:
            raise ValueError("trace: an empty list of traces; give at least one")
        for j, t in enumerate(trace):
            if not isinstance(t, Trace):
                raise ValueError(f"trace[{j}] must be a bufsim.Trace, got {describe(t)}")
        ts = trace[0].tablespaces
        for j, t in enumerate(trace[1:], 1):
            if t.tablespaces is not ts and t.tablespaces != ts:
                raise ValueError(f"trace[{j}] has other tablespaces than trace[0]; "
                                 "every stream must share one tablespace map")
        return list(trace), [0] * len(trace), [t.name or str(j) for j, t in enumerate(trace)]
    if not isinstance(trace, Trace):
        raise ValueError(f"trace must be a bufsim.Trace or a list of them (one per stream), "
                         f"got {describe(trace)}")
    if trace._by_stream is not None:   # already split (read_trace of several threads)
        starts, names = trace.stream_start_ns, trace.stream_names
        return (list(trace._by_stream),
                [int(starts[s]) if starts is not None else 0 for s in range(len(trace._by_stream))],
                [names[s] if names else str(s) for s in range(len(trace._by_stream))])
    if trace.is_materialized:
        ids = trace.streams()
        if len(ids) > 1:
            starts = trace.stream_start_ns
            names = trace.stream_names
            return (trace.split_streams(),
                    [int(starts[s]) if starts is not None else 0 for s in ids],
                    [names[s] if names else str(s) for s in ids])
        if len(ids) == 1 and trace.stream_start_ns is not None:
            s = int(ids[0])
            name = trace.stream_names[s] if trace.stream_names else trace.name or "0"
            return [trace], [int(trace.stream_start_ns[s])], [name]
    return [trace], [0], [trace.name or "0"]
