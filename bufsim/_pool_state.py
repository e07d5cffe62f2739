"""The engine's array state between kernel calls (:class:`PoolState`), private to the
engine layer: :class:`bufsim.Pool` (the session) and :func:`bufsim.replay` (its one-shot
form) drive it; nothing above them touches it.

It allocates the state arrays of :mod:`bufsim.policies._state` (checking the memory
first), translates a trace's pages to the kernels' ids (:func:`_translate`), buffers
each stream's events, and calls the policy's kernel (:func:`bufsim.policies.registry.kernel`,
the contract of :mod:`bufsim.policies.loop`) until it returns a code the caller handles,
growing the page map (NEED_ROOM) and resuming after a budget cut (YIELD) in between.
It reads the counters back as InnoDB names them.
"""
from __future__ import annotations

import os
from typing import Sequence

import numpy as np
import pandas as pd
from numba import njit

from ._validation import check_int, check_ns
from .config import PoolConfig
from .pages import Tablespaces
from .policies import registry
from .policies.innodb import background, old_adjust_len, old_init, take_frame
from .policies._state import (
    COUNTER_NAMES, C_DIRTIED, C_GETS, C_READ, C_WRITE_REQ, FLAG_RELATCH, FrameState, G_AREA,
    G_DEVBUSY, G_DEVLAST, G_FIXED, G_FTOP, G_NEXT_TICK, G_NLOCAL, G_TICKS, I_AREA, I_CAP,
    I_DROP, I_FREE,
    I_OLD, I_OLDLEN, I_SIZE, I_W, K_ACTIVITY, K_AHI, K_BATCH_UNBOUNDED, K_CLEANER, K_CLEANER_LAG, K_COST_CLOCK,
    K_COST_EVICT, K_COST_MISS, K_COST_YOUNG, K_DEV_EXPIRE, K_DEV_IDLE, K_DEV_RAND, K_DEV_SCHED,
    K_DEV_SEQ, K_DEV_SKIP, K_DEV_SLICE, K_DEV_WRITE, K_DIRTY_LWM, K_FLUSH, K_FREE_SCAN,
    K_FREE_UNUSED, K_IO_CAPACITY, K_LRU_FLOOR_SMALL, K_MASTER_FLUSH, K_MAX_DIRTY, K_NINST,
    K_OLDTIME, K_POLICY, K_RATHRESH, K_RATIO, K_RA_BTR, K_RA_FAIL_EARLY, K_RA_NEXT_AREA, K_RA_ZERO_OFF,
    K_REFILL_DEMAND, K_SCANDEPTH, K_TEMP_UNLOGGED, L1_LEN, L2_LEN, LF_HEAD, LF_LEN, LF_TAIL,
    NS_PER_MS, NS_PER_S, N_C, N_G, N_I, N_K, N_S, N_T, P_ACCESS, P_DIRTY, P_OLD, P_PAGE, P_WHERE,
    SCHED_CODES, SKIP_CODES, S_DENSE, T_CLOCK, T_CPU, T_END, T_EVENTS, T_GETS, T_IOWAIT, T_MISSES,
    T_POS, T_RA, copy_page_state, hash_slot, local_of, new_page_state, page_state_nbytes,
    push_head, register, walk, walk_flush,
)
from .policies.loop import CLOCK_OVERFLOW, FALLBACK, NEED_ROOM, YIELD
from .policies.flush import note_modification
from ._memory import check_pool_memory
from .policies._state import P_DTYPES
from .trace import SPACE_GETS_MEMO, Chunk

__all__ = ["PoolState", "COUNTER_NAMES", "check_memory", "hit_rate"]

#: gets done per kernel call at most, so that Python sees Ctrl-C often enough
GETS_PER_CALL = 2_000_000
#: new pages one get can register (a read-ahead area; a trace's own pages are registered
#: by the translation before the kernel runs)
ROOM_PER_GET = 64
#: tablespace maps up to this many pages use dense keys (an int32 frame per page
#: number, 64 MiB at most; a third as many with several instances, whose per-page
#: instance takes 8 bytes more); larger ones local ids and an open-addressing hash
DENSE_MAP_MAX_PAGES = 1 << 24




@njit(_nrt=False, cache=True)
def _translate(dense, out, pm, stat, glob, n_inst, start, room):
    """Local ids of dense pages ``dense[start:]`` into ``out``, registering new pages,
    until fewer than ``room`` could still be registered (local ids only: with dense
    keys a page's id is its dense index).  Returns the index reached."""
    n = dense.shape[0]
    j = start
    while j < n:
        if glob[G_NLOCAL] >= room:
            break
        p = local_of(pm, dense[j])
        if p < 0:
            p = register(pm, stat, glob, n_inst, dense[j])
        out[j] = p
        j += 1
    return j


@njit(_nrt=False, cache=True)
def _rehash(hk, hv, stat, n_local):
    """Fill an empty hash (keys -1) with the local ids 0..n_local-1."""
    for p in range(n_local):
        d = stat[p, S_DENSE]
        h = hash_slot(hk, d)
        hk[h] = d
        hv[h] = p


def _config_array(cfg: PoolConfig) -> np.ndarray:
    a = np.zeros(N_K, dtype=np.int64)
    a[K_POLICY] = registry.CODES[cfg.policy]
    rules = cfg.server  # the version's record (bufsim.versions)
    a[K_FREE_SCAN] = rules.free_scan_code
    a[K_MASTER_FLUSH] = int(rules.master_thread_flushing)
    a[K_RA_ZERO_OFF] = int(rules.read_ahead_zero_off)
    a[K_RA_NEXT_AREA] = int(rules.read_ahead_next_page_area)
    a[K_RA_FAIL_EARLY] = int(rules.read_ahead_fail_early)
    a[K_FREE_UNUSED] = int(rules.free_unused_after_read_ahead)
    a[K_REFILL_DEMAND] = int(rules.refill_on_demand)
    a[K_BATCH_UNBOUNDED] = int(rules.cleaner_batch_unbounded)
    a[K_LRU_FLOOR_SMALL] = int(rules.small_pool_lru_floor)
    a[K_TEMP_UNLOGGED] = int(rules.temp_pages_unlogged)
    a[K_CLEANER_LAG] = cfg.cleaner_lag
    a[K_RA_BTR] = int(cfg.ra_sites == "btr")
    a[K_OLDTIME] = cfg.old_blocks_time_ms
    a[K_RATIO] = cfg.old_ratio
    a[K_RATHRESH] = cfg.read_ahead_threshold
    a[K_SCANDEPTH] = cfg.lru_scan_depth
    a[K_AHI] = int(cfg.adaptive_hash_index)
    a[K_CLEANER] = int(cfg.page_cleaner)
    a[K_COST_CLOCK] = cfg.cost.clock_read_ns
    a[K_COST_YOUNG] = cfg.cost.make_young_ns
    a[K_COST_MISS] = cfg.cost.miss_cpu_ns
    a[K_COST_EVICT] = cfg.cost.evict_ns
    a[K_DEV_RAND] = cfg.device.random_read_ns
    a[K_DEV_SEQ] = cfg.device.seq_read_ns
    a[K_DEV_WRITE] = cfg.device.write_ns
    a[K_DEV_SCHED] = SCHED_CODES[cfg.device.scheduler]
    a[K_DEV_SKIP] = SKIP_CODES[cfg.device.skip_pricing]
    a[K_DEV_SLICE] = cfg.device.slice_sync_ns
    a[K_DEV_IDLE] = cfg.device.slice_idle_ns
    a[K_DEV_EXPIRE] = cfg.device.read_expire_ns
    a[K_NINST] = cfg.instances
    a[K_ACTIVITY] = int(cfg.cleaner_activity == "statement")
    a[K_IO_CAPACITY] = cfg.io_capacity
    a[K_MAX_DIRTY] = cfg.max_dirty_pages_pct
    a[K_DIRTY_LWM] = cfg.max_dirty_pages_pct_lwm
    a[K_FLUSH] = int(cfg.policy == "innodb" and cfg.flush_list_flushing)
    return a


def _frames_needed(config: PoolConfig) -> int:
    """Frames (rows of the per-frame state) a pool needs: one per block, plus room for
    the ghost lists of 2Q and ARC and the page being read while its victim leaves."""
    cap = config.data_pages
    ghosts = {"two_q": cap // 2 + 1, "arc": cap + 1}.get(config.policy, 0)
    return config.instances * (cap + ghosts + 1)


def check_memory(config: PoolConfig, tablespaces: Tablespaces | None = None) -> int:
    """Bytes of engine state a pool of ``config`` (over ``tablespaces``: its dense page
    map too) allocates up front; raises :class:`bufsim._memory.PoolMemoryError` (a
    ValueError naming that figure and the memory available) if it cannot fit.
    :class:`PoolState` calls it before allocating anything; the command line calls it
    before reading a trace."""
    pm = 0
    if tablespaces is not None and \
            tablespaces.n_pages * (1 if config.instances == 1 else 3) <= DENSE_MAP_MAX_PAGES:
        pm = tablespaces.n_pages * (4 if config.instances == 1 else 12)
    return check_pool_memory(config, _frames_needed(config), P_DTYPES, pm)


class first_call:
    """Around a kernel's call: the first one in this process (it compiles the kernel, or
    loads it from numba's cache folder) holds a lock file in that folder, so that two
    processes starting at once (notebooks side by side, pytest-xdist workers) do not
    both spend a minute compiling the same kernel: the second waits, then loads what
    the first saved. Later calls, and machines without ``fcntl``, take no lock."""

    __slots__ = ("kernel", "fh")

    #: the kernels called once already in this process (their first call compiled or
    #: loaded them): later calls skip the check (numba's ``signatures`` took 0.2 ms a call)
    called: set = set()

    def __init__(self, kernel):
        self.kernel, self.fh = kernel, None

    def __enter__(self):
        if self.kernel in first_call.called:
            return self
        folder = os.environ.get("NUMBA_CACHE_DIR", "")
        # (a plain function under NUMBA_DISABLE_JIT has no signatures: nothing to compile)
        if getattr(self.kernel, "signatures", True) or not folder:
            return self
        try:
            import fcntl
            os.makedirs(folder, exist_ok=True)
            # named by module and name: policies' kernels share names (innodb.run, lru.run)
            name = f"{getattr(self.kernel, '__module__', '')}.{self.kernel.__name__}"
            self.fh = open(os.path.join(folder, f".compile-{name}.lock"), "a")
            fcntl.flock(self.fh, fcntl.LOCK_EX)
        except (ImportError, OSError):      # no lock: at worst both processes compile
            if self.fh is not None:
                self.fh.close()
            self.fh = None
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            first_call.called.add(self.kernel)
        if self.fh is not None:
            self.fh.close()                 # closing the file releases the lock
            self.fh = None
        return False


#: the columns of :meth:`PoolState.stats` (INNODB_BUFFER_POOL_STATS's), an Index made
#: once: pandas builds an Index of strings column by column, which took 10-20 ms of a
#: replay's result right after a long kernel call (2026-11-29)
STATS_COLUMNS = pd.Index(["POOL_ID", "POOL_SIZE", "FREE_BUFFERS", "DATABASE_PAGES",
                          "OLD_DATABASE_PAGES", "MODIFIED_DATABASE_PAGES", *COUNTER_NAMES,
                          "HIT_RATE"])


class PoolState:
    """The complete array state of one replay, between calls of the kernel.

    Most users call :func:`replay` or :class:`bufsim.Pool` (the notebooks do); tests
    that need to look inside (step one event at a time, read the LRU order) use this
    class directly.

    Layout (frame-major, like InnoDB's ``buf_block_t`` array and ``page_hash``):

    ``pst[P_*][frame]``
        one entry per buffer frame (the pool's size, plus ghost entries for 2Q/ARC)
        in one array per field (:class:`~bufsim.policies._state.FrameState`): list
        links and the page as int32, list id, old flag and CLOCK's reference bit as
        uint8, stamp int32, flush-list links int32, access time, read completion and
        oldest modification int64 (51 bytes a frame; with the free list ``ffree``,
        int32, 55: :meth:`nbytes`).
    ``fmap[page]``
        the page's frame: -1 if not resident, -2 if it never had one.
    Page ids (``page`` above; "page ids" in :mod:`bufsim.policies._state`)
        With at most :data:`DENSE_MAP_MAX_PAGES` pages in the tablespaces (a third
        as many with several instances), a page's id
        is its dense index (*dense keys*): ``fmap`` has 4 bytes per page number, a
        trace's pages go to the kernel as they are, the page facts are computed from
        the space arrays, and ``stat`` holds only each page's instance (8 bytes per
        page number, with several instances).  Beyond that, local ids given in order of
        first appearance: ``stat[page, S_*]`` holds each *distinct page met*'s dense
        index, space, page number, instance and B-tree leaf links, and ``hk``/``hv`` is
        an open-addressing hash from dense page index to local id.

    Memory therefore follows the pool size and the pages a trace touches (or, with
    dense keys, 4 bytes per page number below 2**24 pages), not the largest page
    number.
    """

    def __init__(self, config: PoolConfig, tablespaces: Tablespaces, n_streams: int = 1,
                 start_ns: Sequence[int] | None = None, stream_names: Sequence[str] | None = None):
        if n_streams < 1:
            raise ValueError(f"n_streams={n_streams} is out of range; allowed: >= 1")
        if start_ns is None:
            self.start_ns = np.zeros(n_streams, dtype=np.int64)
        else:
            vals = list(start_ns) if np.ndim(start_ns) else [start_ns]
            self.start_ns = np.asarray([check_ns(f"start_ns[{s}]", x) for s, x in enumerate(vals)],
                                       dtype=np.int64)
        if self.start_ns.shape != (n_streams,) or (self.start_ns < 0).any():
            raise ValueError(f"start_ns must hold {n_streams} times >= 0, got {start_ns!r}")
        self.stream_names = [str(s) for s in range(n_streams)] if stream_names is None \
            else [str(x) for x in stream_names]
        self.config = config
        self.tablespaces = tablespaces
        check_memory(config, tablespaces)  # refuse before allocating
        nf = _frames_needed(config)
        self.pst = new_page_state(nf)
        self.ffree = np.arange(nf - 1, -1, -1, dtype=np.int32)  # a stack: frame 0 on top
        self._space_ids = np.array(tablespaces.space_ids, dtype=np.int64)
        self.space_base = np.array(tablespaces.space_base, dtype=np.int64)
        self.space_size = np.array(tablespaces.space_size, dtype=np.int64)
        # per tablespace: synchronous reads (the kernels') and gets (counted as fed)
        self.space_misses = np.zeros(len(self.space_base), dtype=np.int64)
        self.space_gets = np.zeros(len(self.space_base), dtype=np.int64)
        # pages that hold no data, freed after a MariaDB 10.11 read-ahead reads them (§13)
        self._unused = np.array(tablespaces.unused_dense, dtype=np.int64)
        self._links = tuple(np.array(a, dtype=np.int64) for a in tablespaces.leaf_link_table)
        self.dense_keys = tablespaces.n_pages * (1 if config.instances == 1 else 3) \
            <= DENSE_MAP_MAX_PAGES
        self._alloc_pages(1 << 14)
        ni = config.instances
        ist = np.zeros((ni, N_I), dtype=np.int64)
        ist[:, 0:12:3] = -1
        ist[:, 1:12:3] = -1
        ist[:, I_OLD] = -1
        ist[:, I_DROP] = -1
        ist[:, LF_HEAD] = -1
        ist[:, LF_TAIL] = -1
        size = config.instance_pages
        cap = config.data_pages
        ist[:, I_SIZE] = size
        ist[:, I_FREE] = cap
        ist[:, I_W] = config.young_window
        ist[:, I_AREA] = config.read_ahead_area
        module = registry.module(config.policy)
        for i in range(ni):
            if module is not None:
                module.init(ist, i, cap)
            else:
                ist[i, I_CAP] = cap
        self.ist = ist
        self.cnt = np.zeros((ni, N_C), dtype=np.int64)
        self.sst = np.zeros((n_streams, N_T), dtype=np.int64)
        self.sst[:, T_CLOCK] = self.start_ns
        self.glob = np.zeros(N_G, dtype=np.int64)
        self.glob[G_DEVLAST] = -1
        self.glob[G_FIXED] = -1
        self.glob[G_NEXT_TICK] = NS_PER_S
        self.glob[G_FTOP] = nf
        self.glob[G_AREA] = config.read_ahead_area if config.policy == "innodb" else 0
        self.cfg = _config_array(config)
        self.exhausted = np.zeros(n_streams, dtype=np.int64)
        self._kernel = registry.kernel(config.policy)
        self._buf = [_empty_events() for _ in range(n_streams)]
        self._arrays = _empty_events()

    # ---- the page map ------------------------------------------------------------------
    def _alloc_pages(self, rows: int) -> None:
        """(Re)allocate the per-page arrays for ``rows`` distinct pages, keeping the
        pages met so far, and rebuild the hash at a load factor <= 1/2 (with dense
        keys: the arrays for every page number, once)."""
        if self.dense_keys:
            if hasattr(self, "fmap"):
                return  # sized for every page number already: nothing to grow
            n, ni = self.tablespaces.n_pages, self.config.instances
            self.fmap = np.full(n, -2, dtype=np.int32)
            self.stat = np.zeros((0, 1), dtype=np.int64) if ni == 1 else \
                np.array(self.tablespaces.instance_of(ni), dtype=np.int64).reshape(-1, 1)
            self.edge = np.zeros(0, dtype=np.uint8)
            self.hk = np.zeros(0, dtype=np.int64)
            self.hv = np.zeros(0, dtype=np.int32)
            return
        old = getattr(self, "stat", None)
        n = int(self.glob[G_NLOCAL]) if old is not None else 0
        stat = np.zeros((rows, N_S), dtype=np.int64)
        fmap = np.full(rows, -1, dtype=np.int32)
        edge = np.zeros(rows, dtype=np.uint8)
        if old is not None:
            stat[:n] = old[:n]
            fmap[:n] = self.fmap[:n]
            edge[:n] = self.edge[:n]
        self.edge = edge
        hsize = 1 << max(4, int(2 * rows - 1).bit_length())
        hk = np.full(hsize, -1, dtype=np.int64)
        hv = np.zeros(hsize, dtype=np.int32)
        _rehash(hk, hv, stat, n)
        self.stat, self.fmap, self.hk, self.hv = stat, fmap, hk, hv

    def _grow(self) -> None:
        self._alloc_pages(2 * self.stat.shape[0])

    @property
    def _pm(self):
        """The page map tuple of the kernels (``PM_*`` in :mod:`bufsim.policies._state`)."""
        return (self.fmap, self.ffree, self.hk, self.hv, self.space_base,
                self.space_size, self._space_ids, self._unused) + self._links + \
            (self.edge, self.space_misses)

    def local_ids(self, dense) -> np.ndarray:
        """The kernels' ids of dense pages: the pages themselves with dense keys,
        otherwise their local ids, registering the new ones (with their leaf links)."""
        dense = np.ascontiguousarray(dense, dtype=np.int64)
        if self.dense_keys:
            return dense
        out = np.empty(len(dense), dtype=np.int64)
        j = 0
        while True:
            j = _translate(dense, out, self._pm, self.stat, self.glob, self.config.instances, j,
                           self._room())
            if j >= len(dense):
                return out
            self._grow()

    def _frame_of(self, page: int) -> int:
        """Frame of dense page ``page``, -1 if it has none."""
        lp = local_of(self._pm, int(page))
        return -1 if lp < 0 else max(int(self.fmap[lp]), -1)

    def page_field(self, page: int, field: int) -> int:
        """Column ``field`` (a ``P_*`` constant) of dense page ``page``'s frame; 0 for a
        page that has no frame (not resident, not a ghost), as every field of such a
        page was in the page-major engine."""
        f = self._frame_of(page)
        return 0 if f < 0 else int(self.pst[field][f])

    def _dense_of_frames(self, frames) -> np.ndarray:
        fr = np.asarray(frames, dtype=np.int64)
        ids = self.pst[P_PAGE][fr].astype(np.int64)
        return ids if self.dense_keys else self.stat[ids, S_DENSE]

    def _room(self) -> int:
        """The kernels' ``room``: local ids they may register before NEED_ROOM."""
        return 2**62 if self.dense_keys else self.stat.shape[0] - ROOM_PER_GET

    @property
    def n_streams(self) -> int:
        return self.sst.shape[0]

    @property
    def cleaner_passes(self) -> int:
        """Page-cleaner passes so far."""
        return int(self.glob[G_TICKS])

    @property
    def clock_ns(self) -> int:
        """The latest stream's virtual clock."""
        return int(self.sst[:, T_CLOCK].max())

    @property
    def distinct_pages(self) -> int:
        """Distinct pages the replay has met (trace pages and read-ahead pages)."""
        if self.dense_keys:
            return int(np.count_nonzero(self.fmap != -2))
        return int(self.glob[G_NLOCAL])

    def nbytes(self) -> dict:
        """Bytes of state: ``per_frame`` (pool-sized arrays), ``per_page`` (arrays
        sized by the distinct pages met, at their current capacity) and the counts."""
        frame = page_state_nbytes(self.pst) + self.ffree.nbytes
        page = self.stat.nbytes + self.fmap.nbytes + self.hk.nbytes + self.hv.nbytes + \
            self.edge.nbytes
        nf = len(self.ffree)
        return {"frames": nf, "frame_bytes": frame, "bytes_per_frame": frame / nf,
                "distinct_pages": self.distinct_pages, "page_bytes": page,
                "bytes_per_distinct_page": page / max(self.distinct_pages, 1)}

    # ---- feeding events ---------------------------------------------------------------
    def feed(self, stream: int, chunk) -> None:
        """Append a chunk's events to a stream's buffer."""
        if not isinstance(chunk, Chunk):
            raise ValueError(f"chunk must be a bufsim.trace.Chunk, got {type(chunk).__name__}")
        n = self.tablespaces.n_pages
        # a Chunk's pages are >= 0, its counts >= 1 and its cpu_ns >= 0 (Chunk checks them,
        # and keeps its columns' ranges: no pass over them here)
        page = _kernel_array(chunk.page, np.int64)
        lo, hi = chunk.span("page") if len(chunk) else (0, 0)
        if lo < 0 or hi >= n:
            bad = int(np.flatnonzero((page < 0) | (page >= n))[0])
            raise ValueError(f"trace column 'page' row {bad}: page index {int(page[bad])} "
                             f"is outside the tablespaces (allowed 0..{n - 1})")
        cpu = _kernel_array(chunk.cpu_ns, np.int64)
        if len(chunk) and (chunk.span("cpu_ns")[1] > 2**63 - 1 - int(self.sst[stream, T_CLOCK])):
            bad = int(np.flatnonzero(cpu > 2**63 - 1 - int(self.sst[stream, T_CLOCK]))[0])
            raise ValueError(f"trace column 'cpu_ns' row {bad} = {int(cpu[bad])} would overflow "
                             "the int64 virtual clock (start_ns + cpu_ns must stay below 2**63)")
        # the kernels read the chunk's own counts, cpu_ns and flags and never write them
        # (a cut event's remaining count is glob[G_LEFT]); pages become the kernels' ids
        new = (self.local_ids(page), _kernel_array(chunk.count, np.int64), cpu,
               _kernel_array(chunk.flags, np.uint8))
        if len(page):   # gets per tablespace, as NUMBER_PAGES_GET counts them (no re-latch)
            self.space_gets += self._chunk_space_gets(chunk, page, new[1], new[3])
        if self.n_streams == 1 and self.sst[0, T_POS] >= self.sst[0, T_END]:
            # one stream, its buffer used up: the chunk's arrays are the kernel's
            self._arrays = new
            self.sst[0, T_POS] = 0
            self.sst[0, T_END] = len(page)
            self._buf[0] = new
            return
        rest = self._remaining(stream)
        self._buf[stream] = tuple(np.concatenate([r, a]) for r, a in zip(rest, new))
        self._layout()

    def _chunk_space_gets(self, chunk, page, count, flags) -> np.ndarray:
        """A chunk's gets per tablespace; kept on the chunk for the next pool over the same
        tablespaces that it is fed to (run_ssb feeds every chunk to many pools)."""
        memo = getattr(chunk, "__dict__", {}).get(SPACE_GETS_MEMO)
        if memo is not None and memo[0] is self.tablespaces:
            return memo[1]
        w = np.where((flags & FLAG_RELATCH) == 0, count, 0)
        sp = np.searchsorted(self.space_base, page, side="right") - 1
        gets = np.bincount(sp, weights=w, minlength=len(self.space_gets)).astype(np.int64)
        if hasattr(chunk, "__dict__"):
            object.__setattr__(chunk, SPACE_GETS_MEMO, (self.tablespaces, gets))
        return gets

    def _remaining(self, s):
        a, b = self.sst[s, T_POS], self.sst[s, T_END]
        return tuple(x[a:b] for x in self._arrays) if b > a else _empty_events()

    def _layout(self):
        """Lay the streams' buffers end to end in one set of arrays for the kernel."""
        bufs = [self._buf[s] for s in range(self.n_streams)]
        off = 0
        for s, b in enumerate(bufs):
            self.sst[s, T_POS] = off
            off += len(b[0])
            self.sst[s, T_END] = off
        self._arrays = tuple(np.ascontiguousarray(np.concatenate([b[j] for b in bufs]))
                             for j in range(4))
        for s in range(self.n_streams):
            self._buf[s] = self._remaining(s)

    def close(self, stream: int) -> None:
        """Mark a stream's source as exhausted."""
        self.exhausted[stream] = 1

    def run(self, stop_ns: int = -1, max_events: int = -1) -> int:
        """Run the kernel on the buffered events.

        Returns 0 when every stream is exhausted, ``1 + s`` when stream s needs its
        next chunk, -1 when a stream reached ``stop_ns``, -2 after ``max_events``
        events.  The kernel returns to Python every few million gets (a long event
        is split and resumed exactly), so Ctrl-C stops a replay within a second.

        Raises
        ------
        ValueError
            If the int64 virtual clock would overflow (``start_ns`` plus the
            trace's ``cpu_ns`` and waits reach 2**63).
        """
        pages, counts, cpus, flags = self._arrays
        kernel = self._kernel
        done = 0
        limit = max_events >= 0       # (the events done are counted only for a limit)
        while True:
            left = max(int(max_events) - done, 0) if limit else -1
            ev0 = int(self.sst[:, T_EVENTS].sum()) if limit else 0
            with first_call(kernel):
                code = kernel(pages, counts, cpus, flags, self.pst, self.stat, self.ist,
                              self.cnt, self.sst, self.glob, self.cfg, self._pm,
                              self.exhausted, int(stop_ns), left, GETS_PER_CALL, self._room())
            if limit:
                done += int(self.sst[:, T_EVENTS].sum()) - ev0
            if code == FALLBACK:  # the LRU fast path does not apply: nothing was done
                kernel = registry.run_generic
                continue
            if code == NEED_ROOM:
                self._grow()
                continue
            if code == YIELD:
                continue
            if code == CLOCK_OVERFLOW:
                s = int(np.argmin(self.sst[:, T_CLOCK]))
                raise ValueError(
                    f"the virtual clock of stream {s} overflowed int64: start_ns "
                    f"({int(self.start_ns[s])}) plus the trace's cpu_ns and waits reached "
                    "2**63 ns; allowed: start_ns + total time < 2**63 - 1")
            break
        for s in range(self.n_streams):
            self._buf[s] = self._remaining(s)
        return int(code)

    def reopen(self, stream: int) -> None:
        """Let a closed stream take chunks again (a new statement on the same pool)."""
        self.exhausted[stream] = 0

    def set_settings(self, config: PoolConfig) -> None:
        """``SET GLOBAL``: make ``config``'s old_blocks_time and old_blocks_pct the ones in
        effect.  A new percentage re-adjusts each instance's old sublist at once, as
        buf_LRU_old_ratio_update does; the time applies to every later check."""
        self.config = config
        self.cfg[K_OLDTIME] = config.old_blocks_time_ms
        if self.cfg[K_RATIO] != config.old_ratio:
            self.cfg[K_RATIO] = config.old_ratio
            if config.policy == "innodb":
                for i in range(config.instances):
                    if self.ist[i, I_OLD] >= 0:
                        old_adjust_len(self.pst, self.stat, self.ist, self.cfg, i)

    def counter_totals(self) -> np.ndarray:
        """The cumulative counters (:data:`~bufsim.policies._state.COUNTER_NAMES`), summed
        over instances."""
        return self.cnt.sum(axis=0).astype(np.int64)

    def stream_totals(self, stream: int = 0) -> dict:
        """A stream's cumulative ``clock_ns``, ``cpu_ns``, ``io_wait_ns``, ``gets``,
        ``misses``, ``events`` and ``read_ahead`` (pages its gets made linear read-ahead
        bring in), and the device's ``busy_ns`` (all streams)."""
        s = self.sst[stream]
        return dict(clock_ns=int(s[T_CLOCK]), cpu_ns=int(s[T_CPU]), io_wait_ns=int(s[T_IOWAIT]),
                    gets=int(s[T_GETS]), misses=int(s[T_MISSES]), events=int(s[T_EVENTS]),
                    read_ahead=int(s[T_RA]), busy_ns=int(self.glob[G_DEVBUSY]))

    #: the arrays that hold the whole mutable state (:meth:`copy_arrays`)
    STATE_ARRAYS = ("pst", "ffree", "stat", "fmap", "edge", "hk", "hv", "ist", "cnt",
                    "sst", "glob", "cfg", "exhausted", "space_misses", "space_gets")

    def copy_arrays(self) -> dict:
        """A copy of every state array (lists, flags, counters, clocks, device, settings)."""
        return {k: _copy(getattr(self, k)) for k in self.STATE_ARRAYS}

    def restore_arrays(self, arrays: dict, config: PoolConfig) -> None:
        """Return to :meth:`copy_arrays`' state, with no buffered events."""
        for k, v in arrays.items():
            setattr(self, k, _copy(v))
        self.config = config
        self._buf = [_empty_events() for _ in range(self.n_streams)]
        self._arrays = self._buf[0]
        self.sst[:, T_POS] = self.sst[:, T_END] = 0

    def load_content(self, local: np.ndarray, inst: np.ndarray, old: np.ndarray | None,
                     dirty: np.ndarray) -> None:
        """Put pages (local ids, LRU order, head first) into an empty pool: see
        :meth:`bufsim.Pool.load`, which checks the arguments.  ``old`` None: InnoDB's own
        split (buf_LRU_old_init from 512 pages)."""
        cfg = self.config
        access = self.sst[0, T_CLOCK] // NS_PER_MS + 1
        for i in range(cfg.instances):
            sel = np.flatnonzero(inst == i)
            for j in sel[::-1]:  # tail first: each push goes to the head
                f = take_frame(self.pst, self.glob, self.fmap, self.ffree, local[j])
                push_head(self.pst, self.ist, i, 1, f)
                self.pst[P_ACCESS][f] = access
                self.pst[P_DIRTY][f] = 0
                if dirty[j] and cfg.policy == "innodb":
                    # a dirty page enters the flush list too (loaded tail first: the
                    # tail's page is the oldest); the counters start at 0
                    note_modification(self.pst, self.ist, self.cnt, self.glob, i, f)
                    self.cnt[i, C_WRITE_REQ] -= 1
                    self.cnt[i, C_DIRTIED] -= 1
                elif dirty[j]:
                    self.pst[P_DIRTY][f] = 1
                self.pst[P_OLD][f] = 0
            if cfg.policy != "innodb":
                continue
            self.ist[i, I_FREE] -= len(sel)
            o = None if old is None else old[sel]
            if o is not None and o.any():
                first = sel[int(np.argmax(o))]
                for j in sel:
                    self.pst[P_OLD][self.fmap[local[j]]] = int(old[j])
                self.ist[i, I_OLD] = self.fmap[local[first]]
                self.ist[i, I_OLDLEN] = int(o.sum())
            elif len(sel) >= 512:
                old_init(self.pst, self.stat, self.ist, self.cfg, i)

    def set_old_blocks_time(self, ms: int) -> None:
        """``SET GLOBAL innodb_old_blocks_time = ms``: applies to every later make-young
        check (``config`` keeps the starting value; :class:`bufsim.Pool` updates it)."""
        self.cfg[K_OLDTIME] = check_int("old_blocks_time_ms", ms, 0, 2**32 - 1)

    def idle_until(self, t_ns: int) -> None:
        """Advance every stream's clock to ``t_ns`` (if behind) with no gets: the page
        cleaner (5.6+) and the flush-list flushing make the pass due at the first whole
        second after activity."""
        t_ns = int(t_ns)
        if self.config.policy == "innodb" and (self.config.page_cleaner
                                               or self.config.flush_list_flushing):
            background(self.pst, self.stat, self.ist, self.cnt, self.glob, self.cfg,
                       self.fmap, self.ffree, t_ns)
        self.sst[:, T_CLOCK] = np.maximum(self.sst[:, T_CLOCK], t_ns)

    # ---- reading the state ---------------------------------------------------------------
    def lru(self, instance: int = 0, l: int = 1) -> list[int]:
        """Dense pages of list ``l`` of an instance, head (most recent) first."""
        frames = walk(self.pst, self.ist, instance, l)
        return [int(x) for x in self._dense_of_frames(frames)] if frames else []

    def flush_list(self, instance: int = 0) -> list[int]:
        """Dense pages of an instance's flush list, head (newest oldest_modification)
        first; the tail is flushed first."""
        frames = walk_flush(self.pst, self.ist, instance)
        return [int(x) for x in self._dense_of_frames(frames)] if frames else []

    def stats(self) -> pd.DataFrame:
        """One row per instance, columns as INFORMATION_SCHEMA.INNODB_BUFFER_POOL_STATS
        (:data:`STATS_COLUMNS`)."""
        ist, cnt = self.ist, self.cnt
        resident = ist[:, L1_LEN] + ist[:, L2_LEN]
        free = ist[:, I_FREE] if self.config.policy == "innodb" else ist[:, I_CAP] - resident
        # HIT_RATE wraps past int64 when read-ahead makes reads exceed gets: a column of
        # uint64 then, set apart
        hit = [hit_rate(r, g) for r, g in zip(cnt[:, C_READ], cnt[:, C_GETS])]
        wraps = max(hit) >= 2**63
        hit = np.array(hit, dtype=np.uint64 if wraps else np.int64)   # (never a float)
        block = np.column_stack([np.arange(len(ist)), ist[:, I_SIZE], free, resident,
                                 ist[:, I_OLDLEN], ist[:, LF_LEN], cnt,
                                 np.zeros(len(ist), dtype=np.int64) if wraps else hit])
        # (a shallow copy each: a frame's ``columns.name`` can be set in place)
        df = pd.DataFrame(block.astype(np.int64, copy=False), columns=STATS_COLUMNS.copy())
        if wraps:
            df["HIT_RATE"] = hit
        return df

    def streams(self) -> pd.DataFrame:
        s = self.sst
        return pd.DataFrame({
            "stream": np.arange(len(s)), "name": self.stream_names, "start_ns": self.start_ns,
            "end_ns": s[:, T_CLOCK], "elapsed_ns": s[:, T_CLOCK] - self.start_ns, "cpu_ns": s[:, T_CPU],
            "io_wait_ns": s[:, T_IOWAIT], "gets": s[:, T_GETS], "misses": s[:, T_MISSES],
            "events": s[:, T_EVENTS], "read_ahead": s[:, T_RA],
            "hit_ratio": np.where(s[:, T_GETS] > 0,
                                  1 - s[:, T_MISSES] / np.maximum(s[:, T_GETS], 1), np.nan)})

    def spaces(self) -> pd.DataFrame:
        """Per tablespace: ``space_id``, ``name``, ``gets`` (as NUMBER_PAGES_GET counts
        them, AHI lookups once), ``misses`` (synchronous reads), ``hit_ratio`` (1 - misses
        / gets) and ``pages`` resident now."""
        ts = self.tablespaces
        pages, _ = self.group_counts()
        res = np.bincount(np.asarray(ts.group_space, dtype=np.int64), weights=pages,
                          minlength=ts.n_spaces).astype(np.int64)
        g, m = self.space_gets, self.space_misses
        return pd.DataFrame({
            "space_id": np.asarray(ts.space_ids), "name": list(ts.space_names), "gets": g.copy(),
            "misses": m.copy(), "hit_ratio": np.where(g > 0, 1 - m / np.maximum(g, 1), np.nan),
            "pages": res})

    def group_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Resident and old pages per group (index), counted from the frames."""
        where = self.pst[P_WHERE][:]
        resident = (where == 1) | (where == 2)
        n = self.tablespaces.n_groups
        frames = np.flatnonzero(resident)
        g = self.tablespaces.group_of(self._dense_of_frames(frames)) if len(frames) else \
            np.zeros(0, dtype=np.int64)
        old = (self.pst[P_OLD][frames] != 0) if self.config.policy == "innodb" else \
            np.zeros(len(frames), dtype=bool)
        return (np.bincount(g, minlength=n), np.bincount(g[old], minlength=n))

    def contents(self) -> pd.DataFrame:
        """Resident pages per index (group), like INNODB_BUFFER_PAGE_LRU grouped;
        ``old_pages`` are pages in InnoDB's old sublist (0 for other policies)."""
        ts = self.tablespaces
        gs = np.asarray(ts.group_space)
        pages, old = self.group_counts()
        return pd.DataFrame({
            "space_id": np.asarray(ts.space_ids)[gs], "index": list(ts.group_names),
            "pages": pages, "old_pages": old, "young_pages": pages - old})


def _kernel_array(a, dtype) -> np.ndarray:
    """``a`` as the kernels take it: C-contiguous, ``dtype`` and writable.  Numba compiles
    a separate specialisation for read-only arrays (those pyarrow hands out for a
    Parquet trace), so a read-only one is copied: one compiled kernel serves every
    source of chunks."""
    a = np.ascontiguousarray(a, dtype=dtype)
    return a if a.flags.writeable else a.copy()


def _copy(a):
    """A copy of one state array, or of each array of the per-frame state."""
    return copy_page_state(a) if isinstance(a, FrameState) else a.copy()


def hit_rate(reads: int, gets: int) -> int:
    """HIT_RATE of buf_stats_get_pool_info: 1000 - 1000 * reads / gets in unsigned
    64-bit arithmetic (it wraps when read-ahead makes reads exceed gets), 0 if no gets."""
    if gets == 0:
        return 0
    return (1000 - (1000 * int(reads)) // int(gets)) % (1 << 64)


#: no events, as :func:`_empty_events` returns them (arrays of no element: shared)
_NO_EVENTS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
              np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint8))


def _empty_events():
    """No events: (dense pages, counts, cpu_ns, flags)."""
    return _NO_EVENTS
