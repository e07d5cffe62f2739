"""The replay engine: streams interleaved in virtual time over one pool and one device.

:func:`replay` is the public entry point, a thin one-shot function over the
:class:`bufsim.Pool` session: it validates its arguments, opens a pool with one stream
per trace, runs it to each sample time and timed ``SET GLOBAL`` in turn
(:meth:`bufsim.Pool.run_until`), samples, and gathers the result.  The pool feeds
trace chunks to its policy's jitted kernel (:func:`bufsim.policies.registry.kernel`),
which keeps its state between chunks so a trace of billions of gets replays in bounded
memory; the engine holds no policy code.

Virtual time
    Each stream has a nanosecond clock.  The kernel always advances the stream
    whose clock is smallest (ties: the lowest stream id), so streams interleave in
    virtual-time order.  One event (a run of ``count`` gets of one page) is
    processed at once.  Each get costs the event's ``cpu_ns`` plus the cost model's
    extras; a miss waits for the device.  The device serves one request at a time,
    shared by every stream, in issue order or as its I/O scheduler decides
    (:mod:`bufsim.policies.device`); a read's completion time is fixed when it is
    issued; read-ahead is asynchronous and a get of a page whose read is in flight
    waits for it to land.
Page cleaner (5.6+)
    At every whole virtual second, if the server was active since the previous
    pass, the page cleaner refills each instance's free list (see
    :func:`bufsim.policies.innodb.page_cleaner`).  Active means: any get
    (``cleaner_activity='get'``), or an event flagged FLAG_STMT_END or
    FLAG_MODIFY (``'statement'``), marked once the event is done.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from . import cache as _cache
from ._pool_state import check_memory, hit_rate
from ._validation import MAX_NS, check_int, check_ns, describe, renamed
from .config import PoolConfig, preset
from .policies import registry
from .pool import Pool, trace_sources

__all__ = ["replay", "ReplayResult", "compiled", "compile_notice", "trace_sources", "check_memory"]


def compiled(config: PoolConfig | str) -> bool | None:
    """Whether the kernel a replay of ``config`` (or of a policy name) runs is compiled
    already, in this process or in numba's cache folder (``NUMBA_CACHE_DIR``, see
    :mod:`bufsim._numba_cache`).  False: the first replay compiles it, which takes
    about a minute on two cores for InnoDB (once per install or update of bufsim:
    :func:`compile_notice` says so).  None where numba's cache cannot tell.

    >>> from bufsim import mysql56
    >>> compiled(mysql56(pool_pages=1024)) in (True, False)
    True
    """
    kernel = registry.kernel(config if isinstance(config, str) else config.policy)
    if kernel.signatures:
        return True
    try:
        index = kernel._cache._cache_file._index_path   # numba's index of the cached kernel
    except AttributeError:
        return None
    return os.path.isfile(index)


def compile_notice(configs) -> str | None:
    """The line the command line and a notebook's setup show before a replay whose
    kernel is not compiled yet (a minute of silence otherwise), naming the policies of
    ``configs`` (PoolConfigs or policy names) it concerns; None when none is."""
    todo = sorted({c if isinstance(c, str) else c.policy for c in configs
                   if compiled(c) is False})
    if not todo:
        return None
    return (f"bufsim: the {', '.join(todo)} replay kernel{'s are' if len(todo) > 1 else ' is'} "
            "not compiled yet: the first replay compiles "
            f"{'them' if len(todo) > 1 else 'it'} (once after installing or updating bufsim: "
            f"about a minute; kept in {os.environ.get('NUMBA_CACHE_DIR', '?')})")


@dataclass
class ReplayResult:
    """What a replay leaves behind.

    Attributes
    ----------
    config
        The effective configuration.
    stats
        Per instance, INNODB_BUFFER_POOL_STATS columns plus
        Innodb_buffer_pool_reads, evictions, wait_free, write requests, AHI hits.
    totals
        The same summed over instances (the global status variables), HIT_RATE
        recomputed from the sums.
    streams
        Per stream: name, start and end of its virtual time, elapsed time, CPU,
        I/O wait, gets, misses (synchronous reads: gets that waited for their page),
        events, ``read_ahead`` (pages linear read-ahead brought in because of this
        stream's gets) and ``hit_ratio`` (1 - misses / gets).
    contents
        Resident, old and young pages per index at the end.
    spaces
        Per tablespace: gets, synchronous reads (misses), hit ratio and resident pages
        at the end (:meth:`bufsim.Pool.spaces`).
    timeline
        One row per sample (``sample_every_ns``): time, per-index resident (and
        old) pages, the cumulative counters, and per stream ``s`` the cumulative
        ``gets:s``, ``misses:s`` and ``io_wait_ns:s``; empty without sampling.
    device_busy_ns, cleaner_passes
        Total device service time and page-cleaner passes.
    memory
        Bytes of engine state: per frame (pool-sized arrays) and per distinct page
        met (the page map and static facts), see :meth:`bufsim.Pool.memory`.
    """

    config: PoolConfig
    stats: pd.DataFrame
    totals: pd.Series
    streams: pd.DataFrame
    contents: pd.DataFrame
    timeline: pd.DataFrame = field(default_factory=pd.DataFrame)
    device_busy_ns: int = 0
    cleaner_passes: int = 0
    memory: dict = field(default_factory=dict)
    spaces: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def hit_ratio(self) -> float:
        """1 - synchronous misses / gets over all streams (read-ahead not counted as a miss)."""
        g = self.streams["gets"].sum()
        return float(1 - self.streams["misses"].sum() / g) if g else float("nan")


def replay(trace, config: PoolConfig | str | None = None, *, sample_every_ns: int | None = None,
           start_ns: Sequence[int] | None = None, progress: bool = False,
           old_blocks_time_ms_at: Sequence[tuple[int, int]] | None = None,
           old_blocks_time_at: Sequence[tuple[int, int]] | None = None,
           **overrides) -> ReplayResult:
    """Replay a trace through a buffer pool under the virtual clock.

    Parameters
    ----------
    trace
        A :class:`bufsim.Trace`, or a list of traces, one per stream (for example
        a sysbench thread and a mysqldump scan).  An in-memory trace whose events
        carry several stream ids (e.g. the threads of :func:`bufsim.read_trace`) is
        split by stream, each stream starting at its ``stream_start_ns``; a lazily
        generated trace is one stream.  Every trace must share one
        :class:`bufsim.Tablespaces`.
    config
        A :class:`PoolConfig`, a preset name (``'mysql56'``...) or None for
        ``PoolConfig()`` (a 5.6 InnoDB pool of 8192 pages).
    sample_every_ns
        If given, record the pool contents and counters every that many
        nanoseconds of virtual time into ``result.timeline``.
    start_ns
        Virtual time at which each stream starts (one value per stream, >= 0),
        e.g. a scan that begins once the pool is warm.  Default: the traces'
        own ``stream_start_ns``, else 0.
    progress
        Show a progress bar over chunks.
    old_blocks_time_ms_at
        ``[(time_ns, ms), ...]``: ``SET GLOBAL innodb_old_blocks_time = ms`` when the
        virtual clock reaches ``time_ns`` (the variable is dynamic; the new value
        applies to every later make-young check).  ``result.config`` keeps the
        starting value.  ``old_blocks_time_at`` is its deprecated name.
    **overrides
        Fields of the configuration to change, e.g. ``old_blocks_time_ms=0``.

    Returns
    -------
    ReplayResult
    """
    old_blocks_time_ms_at = renamed("old_blocks_time_ms_at", old_blocks_time_ms_at,
                                    "old_blocks_time_at", old_blocks_time_at)
    if config is None:
        config = PoolConfig(**overrides) if overrides else PoolConfig()
    elif isinstance(config, str):
        config = preset(config, **overrides)
    elif isinstance(config, PoolConfig):
        config = config.replace(**overrides) if overrides else config
    else:
        raise ValueError(f"config must be a PoolConfig, a preset name or None, got {type(config).__name__}")
    if sample_every_ns is not None:
        check_ns("sample_every_ns", sample_every_ns, 1)
    sources, starts, names = trace_sources(trace)
    if start_ns is not None:
        if isinstance(start_ns, (str, bytes)) or np.ndim(start_ns) != 1:
            raise ValueError(f"start_ns must be a sequence of one integer >= 0 per stream "
                             f"({len(sources)} streams), got {describe(start_ns)}")
        starts = [check_ns(f"start_ns[{j}]", x) for j, x in enumerate(start_ns)]
        if len(starts) != len(sources):
            raise ValueError(f"start_ns holds {len(starts)} times for {len(sources)} streams; "
                             "give one integer >= 0 per stream")
    key = _cache.replay_key(sources, starts, names, config, sample_every_ns, old_blocks_time_ms_at)
    if key is not None and (hit := _cache.load(key)) is not _cache.MISSING:
        return hit      # the same events, configuration and package source (bufsim.cache)
    pool = Pool(config, sources[0].tablespaces, streams=names, start_ns=starts)
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(desc="replay", unit="chunk")

    samples = []
    # samples every sample_every_ns from the first stream's start (none past the clock's end)
    next_sample = _after(min(int(x) for x in starts), sample_every_ns) if sample_every_ns else -1
    switches = sorted(_switch(j, e) for j, e in enumerate(old_blocks_time_ms_at or ()))
    for t, v in switches:
        if config.policy != "innodb":
            raise ValueError(f"old_blocks_time_ms_at entry ({t}, {v}): needs policy 'innodb', "
                             f"got {config.policy!r}")
    try:
        pool.open(sources, on_chunk=None if bar is None else lambda: bar.update(1))
        while True:
            stop = next_sample
            if switches and (stop < 0 or switches[0][0] < stop):
                stop = switches[0][0]
            if not pool.run_until(None if stop < 0 else stop):
                break
            if switches and stop == switches[0][0]:
                pool.set(old_blocks_time_ms=switches.pop(0)[1])
                if stop != next_sample:
                    continue
            samples.append(_sample(pool, next_sample))
            next_sample = _after(next_sample, sample_every_ns)
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        st = pool.streams()
        raise KeyboardInterrupt(
            f"replay interrupted after {int(st['gets'].sum()):,} gets, at virtual time "
            f"{pool.clock_ns:,} ns; no result was produced") from None
    if bar is not None:
        bar.close()
    if sample_every_ns:
        samples.append(_sample(pool, pool.clock_ns))
    stats = pool.stats()
    sums = {k: int(v) for k, v in stats.drop(columns=["POOL_ID", "HIT_RATE"]).sum().items()}
    sums["HIT_RATE"] = hit_rate(sums["NUMBER_PAGES_READ"], sums["NUMBER_PAGES_GET"])
    totals = pd.Series(sums)
    busy = pool.totals()
    result = ReplayResult(config=config, stats=stats, totals=totals, streams=pool.streams(),
                          contents=pool.contents(),
                          timeline=pd.DataFrame(samples) if samples else pd.DataFrame(),
                          device_busy_ns=busy["busy_ns"], cleaner_passes=pool.cleaner_passes,
                          memory=pool.memory(), spaces=pool.spaces())
    if key is not None:
        _cache.store(key, result)
    return result


def _after(t_ns: int, step_ns: int) -> int:
    """``t_ns + step_ns``, or -1 (no stop) where the int64 clock cannot reach it."""
    t = t_ns + step_ns
    return t if t <= MAX_NS else -1


def _switch(j: int, entry) -> tuple[int, int]:
    """One ``old_blocks_time_ms_at`` entry as ``(time_ns, ms)``, checked (no truncation)."""
    if isinstance(entry, (str, bytes)) or not hasattr(entry, "__len__") or len(entry) != 2:
        raise ValueError(f"old_blocks_time_ms_at[{j}] must be a pair (time_ns, ms), got {entry!r}")
    return (check_ns(f"old_blocks_time_ms_at[{j}] time_ns", entry[0]),
            check_int(f"old_blocks_time_ms_at[{j}] ms", entry[1], 0, 2**32 - 1))


def _sample(pool: Pool, t_ns: int) -> dict:
    """One timeline row: the values of ``pool.contents()`` (resident and old pages per
    index), ``pool.cumulative()`` and ``pool.streams()`` (gets, misses, I/O wait per
    stream), read from the state's arrays without building those DataFrames (building
    them was 1.4 ms a sample, two thirds of a sampled side-load replay's CPU)."""
    row = {"time_ns": t_ns}
    state = pool._state
    pages, old = state.group_counts()
    for name, p, o in zip(state.tablespaces.group_names, pages, old):
        row[f"pages:{name}"] = int(p)
        row[f"old:{name}"] = int(o)
    row.update(pool.cumulative())
    for s in range(pool.n_streams):
        t = state.stream_totals(s)
        row[f"gets:{s}"] = t["gets"]
        row[f"misses:{s}"] = t["misses"]
        row[f"io_wait_ns:{s}"] = t["io_wait_ns"]
    return row
