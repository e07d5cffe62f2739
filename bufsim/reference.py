"""A small pure-Python reference of the whole replay engine, for tests.

Written from ``docs/semantics.md`` independently of the jitted
kernel's representation.  This module keeps what every policy shares: the streams, the
order of events (the smallest clock first), the device and the counters' tables; each
policy's own rules are its twin, beside its kernels in its module:
:mod:`bufsim.policies.innodb.twin` (:class:`~bufsim.policies.innodb.twin.InnoDBInstance`,
:class:`~bufsim.policies.innodb.twin.InnoDBPoolRules`, mixed into :class:`ReferencePool`)
and the comparison policies' twin classes (``LRUTwin`` of :mod:`bufsim.policies.lru`,
...; :func:`bufsim.policies.registry.twin` names them).  Slow (list operations are O(n));
meant for traces of a few thousand events.

The tests feed the same events to :class:`ReferencePool` and to the kernel, one
event at a time, and compare hit/miss, every list, every counter and every
stream clock after each event.
"""
from __future__ import annotations

import numpy as np

from .config import PoolConfig
from .policies.device import RefDevice
from .policies._state import COUNTER_NAMES, FLAG_ACTIVITY, FLAG_RELATCH
from .policies.innodb.twin import C, InnoDBInstance, InnoDBPoolRules


class RefStream:
    def __init__(self, events):
        self.events = events  # list of (page, count, cpu_ns, flags)
        self.pos = 0
        self.clock = 0
        self.cpu = 0
        self.io_wait = 0
        self.gets = 0
        self.misses = 0
        self.read_ahead = 0
        # the page of the stream's previous get if that was its first access (the B-tree
        # read-ahead rule, spec §5.4), else None
        self.prev_first = None


class ReferencePool(InnoDBPoolRules):
    """Reference replay of whole per-stream event lists.

    Parameters
    ----------
    config
        The pool configuration (any policy).
    tablespaces
        The :class:`bufsim.Tablespaces` of the pages.
    streams
        One list of ``(page, count, cpu_ns, flags)`` per stream.
    """

    def __init__(self, config: PoolConfig, tablespaces, streams):
        self.config = config
        self.ts = tablespaces
        self.unused = set(tablespaces.unused_dense.tolist())
        self.inst_of = tablespaces.instance_of(config.instances)
        self.streams = [RefStream(list(ev)) for ev in streams]
        self.fixed = -1
        for i, s in enumerate(self.streams):
            s.sid = i
        space = tablespaces.page_space_idx
        self.device = RefDevice(config.device, lambda p: (int(space[p]), int(p)))
        #: synchronous reads per tablespace (position in the tablespaces)
        self.space_misses = np.zeros(tablespaces.n_spaces, dtype=np.int64)
        self.next_tick = 1_000_000_000
        self.active = False
        self.ticks = 0
        self.cleaner_pend = 0     # takes left before a woken page cleaner runs (cleaner_lag)
        self.lsn = 0            # page modifications so far
        self.flush_passes = 0   # flushing passes (5.5: every tenth is the 10-second loop)
        self.flush_ios = 0      # pages read + written at the last 10-second loop (5.5)
        self.flush_lsn = 0      # the LSN at the previous page-cleaner pass (5.6+)
        if config.policy == "innodb":
            self.inst = [InnoDBInstance(self, i) for i in range(config.instances)]
        else:
            from .policies import registry
            twin = registry.twin(config.policy)
            cap = config.data_pages
            self.inst = [_TwinInstance(twin(cap)) for _ in range(config.instances)]

    # ---- a session (bufsim.Pool's reference) ---------------------------------------------
    def add_events(self, stream: int, events) -> None:
        """Append ``(page, count, cpu_ns, flags)`` events to a stream."""
        self.streams[stream].events.extend(events)

    def set(self, old_blocks_time_ms: int | None = None, old_blocks_pct: int | None = None):
        """SET GLOBAL innodb_old_blocks_time / innodb_old_blocks_pct: the time applies to
        later checks; a new ratio re-adjusts every old sublist at once
        (buf_LRU_old_ratio_update_instance with adjust = TRUE)."""
        if old_blocks_time_ms is not None:
            self.config = self.config.replace(old_blocks_time_ms=old_blocks_time_ms)
        if old_blocks_pct is not None:
            self.config = self.config.replace(old_blocks_pct=old_blocks_pct)
            if self.config.policy == "innodb":
                for inst in self.inst:
                    inst.ratio = self.config.old_ratio
                    if len(inst.lru) >= 512:
                        inst.adjust()

    def idle_until(self, t_ns: int) -> None:
        """No gets until ``t_ns``: the page cleaner makes the passes due, every
        stream's clock moves to ``t_ns`` if behind."""
        self.cleaner_passes_due(t_ns)
        for st in self.streams:
            st.clock = max(st.clock, t_ns)

    # ---- device --------------------------------------------------------------------------
    @property
    def dev_busy(self) -> int:
        return self.device.busy

    def device_read(self, p, t_ns, stream: "RefStream"):
        return self.device.read(p, stream.sid, t_ns)

    def device_write(self, t_ns):
        return self.device.write(t_ns)

    # ---- one event -------------------------------------------------------------------------
    def step(self) -> bool:
        """Process the next event in virtual-time order; False when all are done."""
        live = [s for s in range(len(self.streams))
                if self.streams[s].pos < len(self.streams[s].events)]
        if not live:
            return False
        k = min(live, key=lambda s: (self.streams[s].clock, s))
        st = self.streams[k]
        t = st.clock
        self.cleaner_passes_due(t)
        page, count, cpu, flags = st.events[st.pos]
        for _ in range(count):
            if self.config.policy == "innodb":
                t = self.innodb_get(page, flags, st, t)
            else:
                t = self._twin_get(page, flags, st, t)
            t += cpu
            st.cpu += cpu
        if self.config.cleaner_activity == "statement" and flags & FLAG_ACTIVITY:
            self.active = True    # FLAG_STMT_END or FLAG_MODIFY: the activity count moved
        if not flags & FLAG_RELATCH:
            st.gets += count  # FLAG_RELATCH: checked, not counted
        st.pos += 1
        st.clock = t
        return True

    def run(self):
        while self.step():
            pass

    def _twin_get(self, p, flags, st, t):
        cfg = self.config
        inst = self.inst[self.inst_of[p]]
        inst.count("NUMBER_PAGES_GET", 0 if flags & FLAG_RELATCH else 1)
        hit, victim = inst.twin.access(p)
        if hit:
            return t
        st.misses += 1
        self.space_misses[self.ts.page_space_idx[p]] += 1
        inst.count("Innodb_buffer_pool_reads")
        inst.count("NUMBER_PAGES_READ")
        if victim >= 0:
            inst.count("evictions")
        done = self.device_read(p, t, st)
        st.io_wait += done - t
        st.cpu += cfg.cost.miss_cpu_ns
        return done + cfg.cost.miss_cpu_ns

    # ---- reading the state ----------------------------------------------------------------
    def counters(self) -> np.ndarray:
        return np.array([inst.counters for inst in self.inst], dtype=np.int64)

    def lists(self, i: int) -> list[list[int]]:
        inst = self.inst[i]
        if isinstance(inst, _TwinInstance):
            return inst.twin.lists()
        return [list(inst.lru), [], [], []]

    def flush_list(self, i: int) -> list[int]:
        """Instance i's flush list, head (newest) first; empty for other policies."""
        inst = self.inst[i]
        return [] if isinstance(inst, _TwinInstance) else list(inst.flush)

    def stream_table(self) -> np.ndarray:
        return np.array([[s.clock, s.cpu, s.io_wait, s.gets, s.misses, s.pos, s.read_ahead]
                         for s in self.streams], dtype=np.int64)


class _TwinInstance:
    def __init__(self, twin):
        self.twin = twin
        self.counters = [0] * len(COUNTER_NAMES)

    def count(self, name, n=1):
        self.counters[C[name]] += n
