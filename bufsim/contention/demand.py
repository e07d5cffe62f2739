"""Per-instance mutex demand: from page gets to the stations of a queueing network.

A transaction of a workload touches pages; each page belongs to one buffer-pool
instance (``fold(space, page_no >> 6) mod N``, :meth:`bufsim.Tablespaces.instance_of`),
and the work InnoDB does under that instance's mutex depends on the version
(``docs/semantics.md`` §6.2):

* **5.5**: every ``buf_page_get_gen`` does its page-hash lookup under
  ``buf_pool->mutex``, so every get holds the instance mutex, and make-young
  moves and misses (free-list take, LRU insertion, I/O completion) hold it
  again.  A get that takes the adaptive-hash-index path
  (:data:`bufsim.FLAG_AHI`: ``btr_search_guess_on_hash`` then
  ``buf_page_get_known_nowait``) takes only the block mutex and the AHI latch,
  which is why switching the AHI off moved the contention of the dbSTRESS test
  (seed 003) from ``btr_search_latch`` onto one buffer-pool mutex.
* **5.6 / 5.7**: a plain hit takes the instance's page-hash rw-lock in S mode
  and no pool mutex; only make-young moves and misses take ``buf_pool->mutex``.

Each instance also has a ``flush_list_mutex`` (5.5 added it beside
``buf_pool->mutex``; same in 5.6/5.7), a station of its own: it is taken when a
clean page is first modified (``buf_flush_note_modification`` ->
``buf_flush_insert_into_flush_list``, 5.5 ``include/buf0flu.ic`` and
``buf/buf0flu.c``) and when a written page leaves the flush list
(``buf_flush_write_complete`` -> ``buf_flush_remove``), whoever wrote it (a
flush-list batch, the LRU batch or a single-page flush).  Its acquisitions come
from a replay's ``flush_list_inserts`` and ``NUMBER_PAGES_WRITTEN`` per instance
(:mod:`bufsim.policies.flush`).  The stations appear only when some instance has
such acquisitions, so read-only workloads keep their networks.

The page-hash latch is **not a station**.  Lookups take it in S mode (readers
do not exclude one another), there are 16 of them per instance, and X mode is
taken only on insert/remove, i.e. inside the miss path whose pool-mutex hold is
already charged; its cost is CPU time per get, which belongs in
``HoldTimes.cpu_ns``.

Global latches are stations of their own:

* ``ahi``: the adaptive hash index latch ``btr_search_latch``, one global
  rw-latch in 5.5 and 5.6, held ``ahi_ns`` per AHI lookup.  5.7 splits it into
  ``innodb_adaptive_hash_index_parts`` latches chosen by index; here the index
  is the page's group (:attr:`bufsim.Tablespaces.page_group`) and the part is
  ``group mod parts`` (InnoDB folds the index id; a workload hot on one index
  still lands on one part).  Modelling an rw-latch as an exclusive server is
  pessimistic for pure readers but captures what makes it hot in practice: the
  X-mode holders (hash updates, evictions of hashed pages) and the cache line
  every S-locker writes.
* ``kernel``: ``kernel_mutex`` in 5.5 (``srv/srv0srv.c``, the
  ``srv0srv.c:987`` line of seed 003's ``SHOW ENGINE INNODB MUTEX``),
  ``lock_sys->mutex`` / ``trx_sys->mutex`` from 5.6, held ``kernel_ns`` once
  per transaction.

Demands are in seconds per transaction (hold time times acquisitions divided
by the number of transactions the counts describe), ready for
:func:`bufsim.analytic.mva.exact_mva` through :meth:`ContentionDemand.network`.
The counting of gets per page, per instance and per AHI part is
:mod:`bufsim.contention.counting`'s.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, fields

import numpy as np
import pandas as pd

from .._validation import check_int
from .._units import MAX_INSTANCES, NS_PER_S
from ..pages import Tablespaces, as_int64
from ..trace import Trace
from ..versions import RECORDS, record
from .counting import (ahi_acquisitions, frequency_vectors, instance_sums, page_counts,
                       page_instances, per_instance, per_instance_from_replay, per_page,
                       touched_counts)

__all__ = ["HoldTimes", "ContentionDemand", "Network", "instance_demand", "PageCounts",
           "network", "VERSIONS"]

#: Versions whose mutex rules are modelled (§6.2 of the design note; the records'
#: ``contention_modelled`` field).
VERSIONS = tuple(k for k, r in RECORDS.items() if r.contention_modelled)
#: Largest hold time accepted, in nanoseconds (one second).
MAX_HOLD_NS = 1e9


def check_nanosecond_fields(obj) -> None:
    """Check that every field of the frozen dataclass ``obj`` is a finite number of
    nanoseconds in 0..MAX_HOLD_NS and store it as a float; the ValueError names the
    class, the field and the range."""
    for f in fields(obj):
        v = getattr(obj, f.name)
        ok = isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
        if not ok or not math.isfinite(v) or not 0 <= v <= MAX_HOLD_NS:
            raise ValueError(f"{type(obj).__name__}.{f.name}={v!r} is out of range; allowed: "
                             f"finite nanoseconds in 0..{MAX_HOLD_NS:.0e}")
        object.__setattr__(obj, f.name, float(v))


# --------------------------------------------------------------------------------------
# hold times
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MutexHolds:
    """Time spent inside each mutex per acquisition, in nanoseconds: the fields
    :class:`HoldTimes` (one transaction's) and :class:`~bufsim.contention.Costs`
    (per statement and get) share.

    All values are nanoseconds, finite, in ``0 .. 1e9``.  The defaults are
    orders of magnitude for a 2010-era x86 server, not measurements: calibrate
    them against a measured TPS curve (the notebooks mark such numbers
    ``fitted``).

    Parameters
    ----------
    get_ns : float
        Pool-mutex hold per page get in 5.5 (page-hash lookup and buffer-fix
        under ``buf_pool->mutex``).  Unused in 5.6/5.7.
    move_ns : float
        Pool-mutex hold per make-young move (unlink and relink at the LRU head).
    miss_ns : float
        Pool-mutex hold per page read: free-list take, ``buf_page_init_for_read``,
        LRU insertion, I/O completion (possibly an eviction), summed.
    ahi_ns : float
        AHI latch hold per AHI lookup.
    kernel_ns : float
        Kernel (lock-sys) mutex hold per transaction.
    flush_ns : float
        ``flush_list_mutex`` hold per acquisition: one flush-list insertion
        (``UT_LIST_ADD_FIRST`` in ``buf_flush_insert_into_flush_list``) or removal
        (``UT_LIST_REMOVE`` in ``buf_flush_remove``).  Default 100: the list work of
        half a make-young move (``move_ns``: an unlink and a relink), from reading the
        two functions, not a measurement.

    Raises
    ------
    ValueError
        Naming the field, the value and the allowed range.
    """

    get_ns: float = 100.0
    move_ns: float = 200.0
    miss_ns: float = 2_000.0
    ahi_ns: float = 50.0
    kernel_ns: float = 1_000.0
    flush_ns: float = 100.0

    def __post_init__(self):
        check_nanosecond_fields(self)


@dataclass(frozen=True)
class HoldTimes(MutexHolds):
    """The :class:`MutexHolds` of one transaction and its CPU.

    Parameters
    ----------
    get_ns, move_ns, miss_ns, ahi_ns, kernel_ns, flush_ns : float
        As in :class:`MutexHolds`.
    cpu_ns : float
        CPU per transaction outside every mutex (parsing, row handling, page
        latches, page-hash S-locks), on one core.
    """

    cpu_ns: float = 100_000.0


# --------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Network:
    """A closed single-class network: stations with demands, visits and servers.

    Attributes
    ----------
    names : tuple of str
        Station names.
    demands : numpy.ndarray of float, shape (K,)
        Service demand per transaction in seconds (visits times mean service).
    visits : numpy.ndarray of float, shape (K,)
        Mean visits per transaction; ``demands / visits`` is the mean service
        time of one visit (0 where a station is never visited).
    servers : numpy.ndarray of int64, shape (K,)
        1 for a mutex, ``C`` for the CPU, 0 for a delay station.
    think_time : float
        Mean think time ``Z`` in seconds.
    """

    names: tuple
    demands: np.ndarray
    visits: np.ndarray
    servers: np.ndarray
    think_time: float

    def __post_init__(self):
        d = np.asarray(self.demands, dtype=np.float64)
        v = np.asarray(self.visits, dtype=np.float64)
        m = np.asarray(self.servers)
        k = d.shape[0] if d.ndim == 1 else -1
        if k < 1 or v.shape != (k,) or m.shape != (k,) or len(self.names) != k:
            raise ValueError("names, demands, visits and servers must be one-dimensional of one "
                             f"length; got {len(self.names)}, {d.shape}, {v.shape}, {m.shape}")
        if not (np.all(np.isfinite(d)) and np.all(np.isfinite(v))) or d.min() < 0 or v.min() < 0:
            raise ValueError("demands and visits must be finite and >= 0")
        if np.any((v == 0) & (d > 0)):
            k0 = int(np.flatnonzero((v == 0) & (d > 0))[0])
            raise ValueError(f"station {self.names[k0]!r} has a demand but no visits")
        if not np.all(np.isfinite(m.astype(float))) or np.any(m != np.round(m)) or m.min() < 0:
            raise ValueError("servers must be integers >= 0 (0 = delay station)")
        z = float(self.think_time)
        if not math.isfinite(z) or z < 0:
            raise ValueError(f"think_time={self.think_time!r} is out of range; allowed: finite "
                             "seconds >= 0")
        for name, a in (("demands", d), ("visits", v), ("servers", m.astype(np.int64))):
            a = a.copy()
            a.flags.writeable = False
            object.__setattr__(self, name, a)
        object.__setattr__(self, "names", tuple(str(s) for s in self.names))
        object.__setattr__(self, "think_time", z)

    @property
    def service(self) -> np.ndarray:
        """Mean service time per visit in seconds (0 for unvisited stations)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.visits > 0, self.demands / np.where(self.visits > 0,
                                                                     self.visits, 1.0), 0.0)

    def mva(self, n_users: int):
        """Exact MVA for populations ``1..n_users``
        (:func:`bufsim.analytic.mva.exact_mva`)."""
        from ..analytic.mva import exact_mva
        return exact_mva(self.demands, self.think_time, n_users, servers=self.servers)

    def throughput(self, n_users: int) -> np.ndarray:
        """Exact-MVA throughput for populations ``1..n_users``: ``self.mva(n_users)
        .throughput`` without the rest (:func:`bufsim.analytic.mva.exact_mva_throughput`)."""
        from ..analytic.mva import exact_mva_throughput
        return exact_mva_throughput(self.demands, self.think_time, n_users, servers=self.servers)

    def simulate(self, n_users: int, **kwargs):
        """Discrete-event simulation at one population (:func:`bufsim.contention.simulate`)."""
        from .des import simulate
        return simulate(self.service, self.think_time, n_users, visits=self.visits,
                        servers=self.servers, names=self.names, **kwargs)

    def simulate_waits(self, n_users: int, waits, **kwargs) -> list:
        """One simulation at one population, its waits counted under each ``(spin_ns,
        wakeup)`` of ``waits`` (:func:`bufsim.contention.des.simulate_waits`)."""
        from .des import simulate_waits
        return simulate_waits(self.service, self.think_time, n_users, waits=waits,
                              visits=self.visits, servers=self.servers, names=self.names,
                              **kwargs)

    def frame(self) -> pd.DataFrame:
        """One row per station: ``station, servers, visits, service_s, demand_s``."""
        return pd.DataFrame({"station": list(self.names), "servers": self.servers,
                             "visits": self.visits, "service_s": self.service,
                             "demand_s": self.demands})


@dataclass(frozen=True, eq=False)
class ContentionDemand:
    """Mutex demand of a workload, per buffer-pool instance and per global latch.

    Attributes
    ----------
    version : str
        ``"5.5"``, ``"5.6"`` or ``"5.7"``.
    n_instances : int
    n_transactions : float
        Transactions the counts describe; every ``*_per_txn`` value and demand
        is divided by it.
    hold : HoldTimes
    gets, ahi_lookups, moves, misses, acquisitions : numpy.ndarray of int64, shape (N,)
        Per instance: page gets (trace gets; an AHI hit counts once here, twice
        in ``NUMBER_PAGES_GET``), the gets among them that took the AHI path,
        make-young moves, page reads, and acquisitions of the instance mutex.
    pool_demand : numpy.ndarray, shape (N,)
        Instance-mutex demand in seconds per transaction.
    latch_names : tuple of str
        ``("ahi", "kernel")`` in 5.5/5.6, ``("ahi[0]", ..., "kernel")`` in 5.7.
    latch_acquisitions : numpy.ndarray of int64
        Per global latch, acquisitions in the counts.
    latch_demand : numpy.ndarray
        Per global latch, seconds per transaction.
    cpu_demand : float
        CPU seconds per transaction (``hold.cpu_ns``).
    dirtied, flushed, flush_acquisitions : numpy.ndarray of int64, shape (N,)
        Per instance: flush-list insertions (first modifications of clean pages),
        pages written (each leaves the flush list), and their sum, the acquisitions
        of the instance's ``flush_list_mutex``.
    flush_demand : numpy.ndarray, shape (N,)
        ``flush_list_mutex`` demand in seconds per transaction.
    """

    version: str
    n_instances: int
    n_transactions: float
    hold: HoldTimes
    gets: np.ndarray
    ahi_lookups: np.ndarray
    moves: np.ndarray
    misses: np.ndarray
    acquisitions: np.ndarray
    pool_demand: np.ndarray
    latch_names: tuple
    latch_acquisitions: np.ndarray
    latch_demand: np.ndarray
    cpu_demand: float = field(default=0.0)
    dirtied: np.ndarray | None = None
    flushed: np.ndarray | None = None
    flush_acquisitions: np.ndarray | None = None
    flush_demand: np.ndarray | None = None

    def __post_init__(self):
        zero = np.zeros(self.n_instances, dtype=np.int64)
        for name in ("dirtied", "flushed", "flush_acquisitions"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, zero.copy())
        if self.flush_demand is None:
            object.__setattr__(self, "flush_demand", np.zeros(self.n_instances))

    @property
    def has_flush_list(self) -> bool:
        """Whether any instance's ``flush_list_mutex`` is acquired (a station then)."""
        return bool(np.any(self.flush_acquisitions > 0))

    @property
    def hottest(self) -> int:
        """The instance with the largest mutex demand (the lowest id on ties)."""
        return int(np.argmax(self.pool_demand))

    def frame(self) -> pd.DataFrame:
        """One row per instance: ``instance, gets, ahi_lookups, moves, misses,
        acquisitions, acquisitions_per_txn, demand_s, share, dirtied, flushed,
        flush_acquisitions_per_txn, flush_demand_s`` (``share``: the instance's
        fraction of all instance-mutex demand)."""
        tot = self.pool_demand.sum()
        return pd.DataFrame({
            "instance": np.arange(self.n_instances), "gets": self.gets,
            "ahi_lookups": self.ahi_lookups, "moves": self.moves, "misses": self.misses,
            "acquisitions": self.acquisitions,
            "acquisitions_per_txn": self.acquisitions / self.n_transactions,
            "demand_s": self.pool_demand,
            "share": self.pool_demand / tot if tot > 0 else np.zeros(self.n_instances),
            "dirtied": self.dirtied, "flushed": self.flushed,
            "flush_acquisitions_per_txn": self.flush_acquisitions / self.n_transactions,
            "flush_demand_s": self.flush_demand})

    def network(self, cores: int, think_time: float = 0.0, *, cpu_visits: float = 1.0,
                drop_idle: bool = False) -> Network:
        """The closed network of this demand: see :func:`network`."""
        return network(self, cores, think_time, cpu_visits=cpu_visits, drop_idle=drop_idle)


# --------------------------------------------------------------------------------------
# demand (the page counts it sums are bufsim.contention.counting's)
# --------------------------------------------------------------------------------------
def instance_demand(source, tablespaces: Tablespaces | None = None, n_instances: int = 1, *,
                    version: str = "5.6", hold: HoldTimes | None = None,
                    n_transactions: float = 1.0, misses=None, moves=None, replay=None,
                    ahi_lookups=None, adaptive_hash_index: bool = True,
                    ahi_parts: int | None = None, instance_map=None, dirtied=None,
                    flushed=None, flush_per_instance=None, optimistic=None) -> ContentionDemand:
    """Acquisitions and service demand of every instance mutex and global latch.

    Parameters
    ----------
    source : Trace or array_like of int
        A :class:`bufsim.Trace` (its ``count`` summed per page, chunk by chunk,
        in memory proportional to the number of pages; gets with
        :data:`bufsim.FLAG_AHI` are AHI lookups), or a page-frequency vector:
        gets per dense page, length ``tablespaces.n_pages``.
    tablespaces : Tablespaces, optional
        The page map; defaults to the trace's.  Required with a frequency vector.
    n_instances : int
        ``innodb_buffer_pool_instances``, 1..64.
    version : {"5.5", "5.6", "5.7"}
    hold : HoldTimes, optional
        Hold times; ``HoldTimes()`` by default.
    n_transactions : float
        Number of transactions the counts describe (> 0); demands are per
        transaction.  Use 1 when the counts are already per transaction.
    misses, moves : array_like of int, optional
        Page reads and make-young moves per dense page (e.g. from a replay
        with per-page bookkeeping); zero if not given.
    replay : ReplayResult or DataFrame, optional
        A replay of the same trace with ``instances=n_instances``: its
        per-instance ``NUMBER_PAGES_READ`` and ``PAGES_MADE_YOUNG`` are used as
        misses and moves, its ``flush_list_inserts`` and ``NUMBER_PAGES_WRITTEN``
        as dirtied and flushed.  Exclusive with ``misses`` / ``moves`` /
        ``dirtied`` / ``flushed``.
    dirtied, flushed : array_like of int, optional
        First modifications of clean pages and page writes per dense page
        (``flush_list_mutex`` acquisitions); zero if not given.
    flush_per_instance : pair of array_like of int, optional
        ``(dirtied, flushed)`` per instance (length ``n_instances``) for the
        ``n_transactions``, e.g. a replay's ``flush_list_inserts`` and
        ``NUMBER_PAGES_WRITTEN`` scaled to them; exclusive with the per-page
        ``dirtied`` / ``flushed`` and with ``replay``.
    ahi_lookups : array_like of int, optional
        AHI lookups per dense page for a frequency vector (a subset of the
        gets).  Ignored with a Trace, whose flags say it.
    adaptive_hash_index : bool
        ``innodb_adaptive_hash_index``.  Off: no AHI lookups; every get takes
        the normal path (in 5.5, the pool mutex), optimistic gets excepted.
    optimistic : array_like of int, optional
        Optimistic gets per dense page for a frequency vector (a subset of the gets
        that are not AHI lookups): ``buf_page_optimistic_get``, the re-latch of a
        stored cursor position (``btr_pcur_restore_position``, e.g. an UPDATE's
        restore of the row its search found).  In 5.5 it takes the block mutex, not
        ``buf_pool->mutex`` (design doc §6.2; its make-young move, if any, is in
        ``moves``).  Zero if not given; a Trace does not mark them.
    ahi_parts : int, optional
        ``innodb_adaptive_hash_index_parts``, 1..512: 8 by default in 5.7, 1
        (one latch) in 5.5/5.6 unless given (a what-if: 5.7's partitioned AHI
        under older pool-mutex rules).
    instance_map : array_like of int, optional
        Instance of every dense page (0..n_instances-1) instead of InnoDB's
        ``fold(space, page_no >> 6) mod N``, for what-if mappings
        (:func:`bufsim.contention.instances.instance_map`).

    Returns
    -------
    ContentionDemand

    Notes
    -----
    With ``g_i`` gets, ``a_i`` AHI lookups, ``y_i`` moves and ``r_i`` reads of
    instance ``i``, and ``T`` transactions, the instance mutex is acquired

    * 5.5: ``A_i = (g_i - a_i - o_i) + y_i + r_i`` times (``o_i`` optimistic gets),
      demand ``D_i = ((g_i - a_i - o_i) t_get + y_i t_move + r_i t_miss) / T``;
    * 5.6/5.7: ``A_i = y_i + r_i``, ``D_i = (y_i t_move + r_i t_miss) / T``.

    The AHI latch (or 5.7 part) is acquired ``a`` times with demand
    ``a t_ahi / T``; the kernel mutex once per transaction, ``t_kernel``.
    An AHI lookup is counted as a hit of the hash: the rare fallback to
    ``buf_page_get_gen`` after a failed guess is not charged to the pool mutex.

    Examples
    --------
    >>> from bufsim import Tablespaces
    >>> ts = Tablespaces.single(256, space_id=0)
    >>> d = instance_demand(np.ones(256, dtype=int), ts, 4, version="5.5",
    ...                     hold=HoldTimes(get_ns=100.0))
    >>> d.gets.tolist(), d.pool_demand.tolist()
    ([64, 64, 64, 64], [6.4e-06, 6.4e-06, 6.4e-06, 6.4e-06])
    """
    # ---- validation, before any work ----------------------------------------------------
    n, hold, parts = _check_settings(version, n_instances, hold, n_transactions,
                                     adaptive_hash_index, ahi_parts)
    fpi = _check_flush_inputs(replay, misses, moves, dirtied, flushed, flush_per_instance, n)
    is_trace = isinstance(source, Trace)
    if is_trace:
        if tablespaces is None:
            tablespaces = source.tablespaces
        elif tablespaces != source.tablespaces:
            raise ValueError("tablespaces differ from the trace's own; omit tablespaces")
    elif tablespaces is None:
        raise ValueError("tablespaces is required with a page-frequency vector")
    if not isinstance(tablespaces, Tablespaces):
        raise ValueError(f"tablespaces must be a Tablespaces, got {type(tablespaces).__name__}")
    n_pages = tablespaces.n_pages
    if not is_trace:
        page_gets, page_ahi, page_opt = frequency_vectors(source, n_pages, ahi_lookups,
                                                           optimistic)
    elif optimistic is not None:
        raise ValueError("optimistic is for a page-frequency vector; a Trace does not mark "
                         "optimistic gets")
    page_miss = None if misses is None else per_page(misses, n_pages, "misses")
    page_move = None if moves is None else per_page(moves, n_pages, "moves")
    page_dirty = None if dirtied is None else per_page(dirtied, n_pages, "dirtied")
    page_flush = None if flushed is None else per_page(flushed, n_pages, "flushed")
    if replay is not None:
        inst_miss, inst_move, inst_dirty, inst_flush = per_instance_from_replay(replay, n)

    # ---- counting ---------------------------------------------------------------------
    touched = None  # a trace alone: count the pages it touches, not every page number
    if is_trace and instance_map is None and all(
            a is None for a in (page_miss, page_move, page_dirty, page_flush)):
        touched, page_gets, page_ahi = touched_counts(source)
        page_opt = np.zeros(len(touched), dtype=np.int64)
    elif is_trace:
        page_gets, page_ahi = page_counts(source, n_pages)
        page_opt = np.zeros(n_pages, dtype=np.int64)
    if not adaptive_hash_index:
        page_ahi = np.zeros_like(page_gets)
    inst = page_instances(tablespaces, touched, instance_map, n, n_pages)

    gets, ahi, opt = instance_sums(page_gets, page_ahi, page_opt, inst, n)
    if replay is None:
        inst_miss, inst_move, inst_dirty, inst_flush = (
            np.zeros(n, np.int64) if a is None else per_instance(inst, a, n)
            for a in (page_miss, page_move, page_dirty, page_flush))
        if fpi is not None:
            inst_dirty, inst_flush = fpi
    names, ahi_acq = ahi_acquisitions(parts, page_ahi, tablespaces, touched)
    return _assemble(version, n, float(n_transactions), hold, gets, ahi, opt, inst_move,
                     inst_miss, inst_dirty, inst_flush, names, ahi_acq)


def _assemble(version, n, txn, hold, gets, ahi, opt, inst_move, inst_miss, inst_dirty,
              inst_flush, names, ahi_acq) -> ContentionDemand:
    """The :class:`ContentionDemand` of per-instance counts (``txn`` transactions) and the
    AHI latches' acquisitions, with the hold times ``hold``."""
    flush_acq = inst_dirty + inst_flush
    acq, hold_ns = _pool_mutex(version, gets, ahi, opt, inst_move, inst_miss, hold)
    latch_acq, latch_demand = _latch_demands(ahi_acq, txn, hold)
    return ContentionDemand(
        version=version, n_instances=n, n_transactions=txn, hold=hold, gets=gets,
        ahi_lookups=ahi, moves=inst_move, misses=inst_miss, acquisitions=acq,
        pool_demand=hold_ns / txn / NS_PER_S, latch_names=names,
        latch_acquisitions=latch_acq, latch_demand=latch_demand,
        cpu_demand=hold.cpu_ns / NS_PER_S, dirtied=inst_dirty, flushed=inst_flush,
        flush_acquisitions=flush_acq, flush_demand=flush_acq * hold.flush_ns / txn / NS_PER_S)


class PageCounts:
    """A page-frequency vector's integer counts for ``scale`` transactions
    (``freq.counts(scale)``), checked once as :func:`instance_demand` checks a frequency
    vector, with the per-instance sums of each instance count (and AHI setting) kept.

    :meth:`demand` (and :func:`bufsim.contention.workload_demand` given these
    ``counts``) builds the demand of any instance count, hold times and flush-list load
    from the kept sums: the same numbers as :func:`instance_demand` of the vectors,
    without a pass over every page per call (the notebooks build hundreds of networks
    of a few frequencies).  ``freq`` must not change while its counts are used.
    """

    def __init__(self, freq, scale: int):
        self.scale = check_int("scale", scale, 1)
        self.tablespaces = freq.tablespaces
        gets, ahi, opt = freq.counts(self.scale)
        self.gets, self.ahi_lookups, self.optimistic = frequency_vectors(
            gets, self.tablespaces.n_pages, ahi, opt)
        self.gets_per_txn = float(freq.gets.sum())
        self._sums = {}

    def sums(self, n_instances: int, adaptive_hash_index: bool, ahi_parts: int) -> tuple:
        """``(gets, ahi_lookups, optimistic)`` per instance, the global latches' names and
        the AHI latches' acquisitions, as :func:`instance_demand` counts them (read-only
        arrays, kept)."""
        key = (n_instances, bool(adaptive_hash_index), ahi_parts)
        if key not in self._sums:
            ahi = self.ahi_lookups if adaptive_hash_index else np.zeros_like(self.gets)
            per = instance_sums(self.gets, ahi, self.optimistic,
                                 self.tablespaces.instance_of(n_instances), n_instances)
            kept = per + ahi_acquisitions(ahi_parts, ahi, self.tablespaces, None)
            for a in kept:
                if isinstance(a, np.ndarray):
                    a.flags.writeable = False     # shared by every demand built from them
            self._sums[key] = kept
        return self._sums[key]

    def demand(self, n_instances: int, *, version: str = "5.6", hold: HoldTimes | None = None,
               adaptive_hash_index: bool = True, ahi_parts: int | None = None,
               flush_per_instance=None) -> ContentionDemand:
        """``instance_demand(self.gets, self.tablespaces, n_instances, n_transactions=
        self.scale, ahi_lookups=self.ahi_lookups, optimistic=self.optimistic, ...)``
        with these arguments, from the kept sums."""
        n, hold, parts = _check_settings(version, n_instances, hold, self.scale,
                                         adaptive_hash_index, ahi_parts)
        fpi = _check_flush_inputs(None, None, None, None, None, flush_per_instance, n)
        gets, ahi, opt, names, ahi_acq = self.sums(n, adaptive_hash_index, parts)
        dirty, flush = fpi if fpi is not None else (np.zeros(n, np.int64),
                                                    np.zeros(n, np.int64))
        return _assemble(version, n, float(self.scale), hold, gets, ahi, opt,
                         np.zeros(n, np.int64), np.zeros(n, np.int64), dirty, flush, names,
                         ahi_acq)


def _check_settings(version, n_instances, hold, n_transactions, adaptive_hash_index,
                    ahi_parts) -> tuple:
    """:func:`instance_demand`'s settings checked: the instance count, the hold times
    (``HoldTimes()`` by default) and the AHI parts (the version's by default)."""
    if version not in VERSIONS:
        raise ValueError(f"version={version!r} is not supported; allowed: {', '.join(VERSIONS)}")
    n = check_int("n_instances", n_instances, 1, MAX_INSTANCES)
    hold = HoldTimes() if hold is None else hold
    if not isinstance(hold, HoldTimes):
        raise ValueError(f"hold must be a HoldTimes, got {type(hold).__name__}")
    ok = isinstance(n_transactions, numbers.Real) and not isinstance(n_transactions, bool)
    if not ok or not math.isfinite(n_transactions) or n_transactions <= 0:
        raise ValueError(f"n_transactions={n_transactions!r} is out of range; allowed: finite > 0")
    if not isinstance(adaptive_hash_index, (bool, np.bool_)):
        raise ValueError(f"adaptive_hash_index must be a bool, got {adaptive_hash_index!r}")
    if ahi_parts is None:
        parts = record(version).ahi_parts
    else:
        parts = check_int("ahi_parts", ahi_parts, 1, 512)
    return n, hold, parts


def _check_flush_inputs(replay, misses, moves, dirtied, flushed, flush_per_instance, n):
    """The replay and the per-page counts exclude each other; ``flush_per_instance``
    checked as ``[dirtied, flushed]`` int64 arrays of ``n`` counts (None if not given)."""
    if replay is not None and any(a is not None for a in (misses, moves, dirtied, flushed,
                                                           flush_per_instance)):
        raise ValueError("give either replay or misses/moves/dirtied/flushed, not both")
    if flush_per_instance is None:
        return None
    if dirtied is not None or flushed is not None:
        raise ValueError("give either flush_per_instance or dirtied/flushed, not both")
    if not isinstance(flush_per_instance, (tuple, list)) or len(flush_per_instance) != 2:
        raise ValueError("flush_per_instance must be a pair (dirtied, flushed) of "
                         f"per-instance counts, got {flush_per_instance!r}")
    fpi = []
    for name, a in zip(("dirtied", "flushed"), flush_per_instance):
        a = as_int64(a, f"flush_per_instance {name}")
        if a.shape != (n,) or (a.size and a.min() < 0):
            raise ValueError(f"flush_per_instance {name} must hold {n} counts >= 0 (one "
                             f"per instance); got {a.tolist()}")
        fpi.append(a)
    return fpi


def _pool_mutex(version, gets, ahi, opt, inst_move, inst_miss, hold):
    """Acquisitions and hold time (ns) of every instance mutex."""
    if record(version).get_takes_pool_mutex:   # 5.5: every get takes the instance mutex
        pool_gets = gets - ahi - opt
        acq = pool_gets + inst_move + inst_miss
        hold_ns = pool_gets * hold.get_ns + inst_move * hold.move_ns + inst_miss * hold.miss_ns
    else:
        acq = inst_move + inst_miss
        hold_ns = inst_move * hold.move_ns + inst_miss * hold.miss_ns
    return acq, hold_ns


def _latch_demands(ahi_acq, txn, hold):
    """The global latches' acquisitions (the AHI latches', then the kernel mutex's, once
    per transaction) and demands per transaction."""
    kernel_acq = int(round(txn))
    latch_acq = np.concatenate([ahi_acq, [kernel_acq]]).astype(np.int64)
    latch_demand = np.concatenate([ahi_acq * hold.ahi_ns / txn / NS_PER_S,
                                   [hold.kernel_ns / NS_PER_S]])
    return latch_acq, latch_demand


def network(demand: ContentionDemand, cores: int, think_time: float = 0.0, *,
            cpu_visits: float = 1.0, drop_idle: bool = False) -> Network:
    """The closed network of a :class:`ContentionDemand`: CPU, instance mutexes, latches.

    Parameters
    ----------
    demand : ContentionDemand
    cores : int
        CPU cores ``C`` (>= 1): the CPU is one ``C``-server station.
    think_time : float
        Mean think time between transactions in seconds (>= 0).
    cpu_visits : float
        CPU bursts per transaction (> 0).  It does not change MVA (only the
        demand matters in product form); it sets the burst length in the
        discrete-event simulation.
    drop_idle : bool
        Leave out stations with no visits (e.g. the 63 idle mutexes of a
        workload hot on one instance), which makes a simulation cheaper.

    Returns
    -------
    Network
        Stations ``cpu``, ``pool[0..N-1]``, ``flush_list[0..N-1]`` (only when
        :attr:`ContentionDemand.has_flush_list`), then ``demand.latch_names``; the
        demands and ``servers`` are the arrays :func:`bufsim.analytic.mva.exact_mva`
        takes (``net.mva(n_users)`` calls it).

    Notes
    -----
    Product form: a thread waiting for or holding a mutex does not occupy a
    core, so the CPU demand is ``hold.cpu_ns`` per transaction and the
    mutex hold times are not added to it.  Visits to a mutex are its
    acquisitions per transaction.
    """
    if not isinstance(demand, ContentionDemand):
        raise ValueError(f"demand must be a ContentionDemand, got {type(demand).__name__}")
    c = check_int("cores", cores, 1)
    z = float(think_time)
    if not math.isfinite(z) or z < 0:
        raise ValueError(f"think_time={think_time!r} is out of range; allowed: finite seconds >= 0")
    cv = float(cpu_visits)
    if not math.isfinite(cv) or cv <= 0:
        raise ValueError(f"cpu_visits={cpu_visits!r} is out of range; allowed: finite > 0")
    txn = demand.n_transactions
    fl = demand.has_flush_list
    fl_names = tuple(f"flush_list[{i}]" for i in range(demand.n_instances)) if fl else ()
    names = ("cpu",) + tuple(f"pool[{i}]" for i in range(demand.n_instances)) + fl_names \
        + demand.latch_names
    fl_demand = demand.flush_demand if fl else np.zeros(0)
    fl_visits = demand.flush_acquisitions / txn if fl else np.zeros(0)
    demands = np.concatenate([[demand.cpu_demand], demand.pool_demand, fl_demand,
                              demand.latch_demand])
    latch_visits = demand.latch_acquisitions / txn
    latch_visits[-1] = 1.0                                  # the kernel mutex: once per transaction
    visits = np.concatenate([[cv if demand.cpu_demand > 0 else 0.0], demand.acquisitions / txn,
                             fl_visits, latch_visits])
    # a station with visits but no hold time keeps its visits (zero-length service)
    servers = np.concatenate([[c], np.ones(len(names) - 1, dtype=np.int64)]).astype(np.int64)
    if drop_idle:
        keep = visits > 0
        keep[0] = True
        names = tuple(nm for nm, k in zip(names, keep) if k)
        demands, visits, servers = demands[keep], visits[keep], servers[keep]
    return Network(names, demands, visits, servers, z)
