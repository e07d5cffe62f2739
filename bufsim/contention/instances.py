"""Instance-count questions: instance maps, costs, maximum throughput, wait shares.

Glue between page frequencies (:mod:`bufsim.workloads`), the demand model
(:func:`bufsim.contention.instance_demand`) and exact MVA, for notebooks 03
and 04:

* :func:`instance_map`: the buffer-pool instance of every dense page,
  InnoDB's ``fold(space, page_no >> 6) mod N`` or a what-if variant: a finer
  area (``page_shift`` < 6, down to one page) or tables moved to other space
  ids (hot tables spread over instances).
* :class:`Costs`: hold times and CPU per get and per statement; one
  :class:`~bufsim.contention.HoldTimes` per workload (:meth:`Costs.hold`).
* :func:`workload_network`: frequency vector -> closed network (CPU, instance
  mutexes, AHI latch(es), kernel mutex).
* :func:`max_throughput`: the largest exact-MVA throughput over populations
  ``1..n_max`` and where it is reached.
* :func:`wait_shares`: the hottest instance's share of all waits and how many
  instances hold a given fraction of them (the measures of a ``SHOW ENGINE
  INNODB MUTEX`` listing).
* :func:`instances_for_fraction`: the smallest instance count reaching a
  fraction of the best maximum throughput.
* :func:`fit_costs`: several cost fields, each to one reported maximum (Brent's
  method in log space, :func:`bufsim.analytic.solve_monotone`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields

import numpy as np

from .._validation import check_int
from .._units import MAX_INSTANCES, instance_fold
from ..analytic.solve import solve_monotone
from ..pages import Tablespaces
from .demand import (ContentionDemand, HoldTimes, MutexHolds, Network, PageCounts,
                     instance_demand)

__all__ = ["Costs", "fit_costs", "instance_map", "workload_demand",
           "workload_network", "max_throughput", "wait_shares", "instances_for_fraction"]



def instance_map(tablespaces: Tablespaces, n_instances: int, *, page_shift: int = 6,
                 space_ids: Mapping[str, int] | None = None) -> np.ndarray:
    """Buffer-pool instance of every dense page, InnoDB's rule or a what-if.

    ``fold(space, page_no >> page_shift) mod n_instances`` with
    ``fold(a, b) = (a << 20) + a + b`` (unsigned 64-bit), as ``buf_pool_get``.

    Parameters
    ----------
    tablespaces : Tablespaces
    n_instances : int
        1..64.
    page_shift : int
        0..20.  6 is InnoDB (64-page areas, equal to
        :meth:`Tablespaces.instance_of`); 0 hashes every page on its own (the
        "finer instance hash" what-if).
    space_ids : mapping of str to int, optional
        Space name -> space id to use instead of the real one (``0 .. 2**32-1``),
        e.g. to place a hot table's tablespace on another instance.

    Returns
    -------
    numpy.ndarray of int64, shape (n_pages,)

    Examples
    --------
    >>> ts = Tablespaces.single(256, space_id=1)
    >>> np.bincount(instance_map(ts, 4), minlength=4).tolist()
    [64, 64, 64, 64]
    >>> np.bincount(instance_map(ts, 4, page_shift=0)[:8], minlength=4).tolist()
    [2, 2, 2, 2]
    """
    if not isinstance(tablespaces, Tablespaces):
        raise ValueError(f"tablespaces must be a Tablespaces, got {type(tablespaces).__name__}")
    n = check_int("n_instances", n_instances, 1, MAX_INSTANCES)
    shift = check_int("page_shift", page_shift, 0, 20)
    sid = tablespaces.page_space_id.astype(np.int64).copy()
    if space_ids:
        names = tablespaces.space_names
        for name, new in space_ids.items():
            if name not in names:
                raise ValueError(f"space_ids names {name!r}, which is not a space; allowed: "
                                 f"{', '.join(map(str, names))}")
            new = check_int(f"space_ids[{name!r}]", new, 0, 2**32 - 1)
            sid[tablespaces.page_space_idx == names.index(name)] = new
    return instance_fold(sid, tablespaces.page_no, n, shift)


@dataclass(frozen=True)
class Costs(MutexHolds):
    """Hold times (per acquisition) and CPU costs, in nanoseconds.

    ``get_ns, move_ns, miss_ns, ahi_ns`` as in :class:`MutexHolds`;
    ``kernel_ns`` is charged once per *statement* (each autocommit statement is
    an InnoDB transaction: start, read view, commit under ``kernel_mutex``);
    CPU per transaction is ``stmt_cpu_ns * statements + get_cpu_ns * gets``.
    Every value finite, 0..1e9; ValueError names the field otherwise.
    """

    get_cpu_ns: float = 1_000.0
    stmt_cpu_ns: float = 50_000.0

    def hold(self, gets_per_txn: float, statements: float = 1.0) -> HoldTimes:
        """The :class:`HoldTimes` of a transaction with these gets and statements."""
        if not (math.isfinite(gets_per_txn) and gets_per_txn >= 0):
            raise ValueError(f"gets_per_txn={gets_per_txn!r} is out of range; allowed: >= 0")
        if not (math.isfinite(statements) and statements > 0):
            raise ValueError(f"statements={statements!r} is out of range; allowed: > 0")
        cpu = self.stmt_cpu_ns * statements + self.get_cpu_ns * gets_per_txn
        return HoldTimes(get_ns=self.get_ns, move_ns=self.move_ns, miss_ns=self.miss_ns,
                         ahi_ns=self.ahi_ns, kernel_ns=self.kernel_ns * statements,
                         flush_ns=self.flush_ns, cpu_ns=min(cpu, 1e9))


#: transactions :func:`workload_demand` counts by default (integers: 1e-6 resolution)
COUNT_SCALE = 1_000_000


def workload_demand(freq, n_instances: int, costs: Costs, *, statements: float = 1.0,
                    version: str = "5.5", adaptive_hash_index: bool = True,
                    mapping: np.ndarray | None = None, ahi_parts: int | None = None,
                    misses: np.ndarray | None = None, dirtied: np.ndarray | None = None,
                    flushed: np.ndarray | None = None, flush_per_instance=None,
                    scale: int = COUNT_SCALE, counts=None) -> ContentionDemand:
    """Per-instance demand of one transaction described by a page-frequency
    vector (``freq.gets``, ``freq.ahi_lookups``, ``freq.optimistic``, ``freq.tablespaces``).

    ``misses`` are expected page reads per page per transaction (floats),
    ``dirtied`` and ``flushed`` expected flush-list insertions and page writes
    (the ``flush_list_mutex`` acquisitions, :func:`instance_demand`), per page;
    ``flush_per_instance`` the same two per instance, ``(dirtied, flushed)``;
    ``scale`` transactions are counted (integers) to keep 1e-6 resolution;
    ``counts``: ``freq.counts(scale)`` or its :class:`PageCounts` when the caller has it
    already (it builds several networks of one unchanged ``freq``), else None (computed
    here).  ``mapping`` is an :func:`instance_map` (default InnoDB's).
    """
    scale = check_int("scale", scale, 1)

    def per_scale(a):
        return None if a is None else np.rint(np.asarray(a, float) * scale).astype(np.int64)

    fpi = None if flush_per_instance is None else tuple(per_scale(a) for a in flush_per_instance)
    if isinstance(counts, PageCounts):
        if counts.scale != scale or counts.tablespaces is not freq.tablespaces:
            raise ValueError(f"counts are of another frequency or scale ({counts.scale}); "
                             f"allowed: PageCounts(freq, scale={scale})")
        if mapping is None and all(a is None for a in (misses, dirtied, flushed)):
            return counts.demand(n_instances, version=version,
                                 hold=costs.hold(counts.gets_per_txn, statements),
                                 adaptive_hash_index=adaptive_hash_index, ahi_parts=ahi_parts,
                                 flush_per_instance=fpi)
        counts = (counts.gets, counts.ahi_lookups, counts.optimistic)
    gets, ahi, opt = freq.counts(scale) if counts is None else counts
    hold = costs.hold(float(freq.gets.sum()), statements)
    return instance_demand(gets, freq.tablespaces, n_instances, version=version, hold=hold,
                           n_transactions=scale, ahi_lookups=ahi, optimistic=opt,
                           misses=per_scale(misses),
                           dirtied=per_scale(dirtied), flushed=per_scale(flushed),
                           flush_per_instance=fpi,
                           adaptive_hash_index=adaptive_hash_index, instance_map=mapping,
                           ahi_parts=ahi_parts)


def workload_network(freq, n_instances: int, costs: Costs, *, cores: int,
                     think_time: float = 0.0, cpu_visits: float = 1.0, drop_idle: bool = False,
                     **kwargs) -> Network:
    """:func:`workload_demand` then its closed network with ``cores`` CPU servers."""
    d = workload_demand(freq, n_instances, costs, **kwargs)
    return d.network(cores, think_time, cpu_visits=cpu_visits, drop_idle=drop_idle)


def max_throughput(network: Network, n_max: int = 256) -> tuple[float, int]:
    """Largest exact-MVA throughput over populations ``1..n_max`` and the
    smallest population reaching it (in a product-form network throughput
    never falls, so this is the saturation level, seen at ``n_max``)."""
    n_max = check_int("n_max", n_max, 1, 100_000)
    x = np.asarray(network.throughput(n_max))
    i = int(np.argmax(x >= x.max() * (1 - 1e-12)))
    return float(x.max()), i + 1


def wait_shares(waits, fraction: float = 0.9) -> dict:
    """``hottest_share`` (largest / total) and ``n_for_fraction`` (fewest
    instances whose waits reach ``fraction`` of the total) of per-instance waits.

    >>> wait_shares([1, 8, 1, 90])
    {'total': 100.0, 'hottest_share': 0.9, 'n_for_fraction': 1}
    """
    w = np.asarray(waits, dtype=float)
    if w.ndim != 1 or w.size == 0 or not np.all(np.isfinite(w)) or w.min() < 0:
        raise ValueError("waits must be a non-empty 1-d array of finite values >= 0")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction={fraction!r} is out of range; allowed: (0, 1]")
    tot = float(w.sum())
    if tot <= 0:
        return {"total": 0.0, "hottest_share": 0.0, "n_for_fraction": 0}
    c = np.cumsum(np.sort(w)[::-1]) / tot
    return {"total": tot, "hottest_share": float(w.max() / tot),
            "n_for_fraction": int(np.argmax(c >= fraction - 1e-12) + 1)}


def instances_for_fraction(max_tps: Mapping[int, float], fraction: float = 0.95) -> int:
    """Smallest instance count whose maximum throughput is at least
    ``fraction`` times the best over ``max_tps`` (instances -> max TPS).

    >>> instances_for_fraction({1: 50.0, 2: 96.0, 4: 100.0})
    2
    """
    if not max_tps:
        raise ValueError("max_tps must map at least one instance count to a throughput")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction={fraction!r} is out of range; allowed: (0, 1]")
    best = max(max_tps.values())
    return min(k for k, v in max_tps.items() if v >= fraction * best)


def fit_costs(targets, base: Costs, *, n_instances: int = 16, cores: int = 32,
              n_max: int = 256, rounds: int = 2, rtol: float = 1e-5) -> Costs:
    """Fit some :class:`Costs` fields so that workloads reach reported maxima.

    Parameters
    ----------
    targets : sequence of (field, freq, statements, adaptive_hash_index, tps)
        For each, the ``Costs`` field to solve (e.g. ``"kernel_ns"``), the
        page-frequency vector of the workload it is fitted on, its statements
        per transaction, its AHI setting and the reported maximum TPS.  Each
        field is solved in turn (Brent's method in log space on the exact-MVA
        maximum over users ``1..n_max``, 5.5 rules), the whole sequence repeated
        ``rounds`` times so that fields that act on each other's workloads settle.
    base : Costs
        Starting values; fields not named keep theirs.
    rtol : float
        Relative tolerance of each solved field (the log-space ``xtol``).

    Returns
    -------
    Costs
    """
    names = {f.name for f in fields(Costs)}
    costs = base
    rounds = check_int("rounds", rounds, 1, 20)
    for fld, fq, stmts, ahi, tps in targets:
        if fld not in names:
            raise ValueError(f"field {fld!r} is not a Costs field; allowed: "
                             f"{', '.join(sorted(names))}")
        if not (math.isfinite(tps) and tps > 0):
            raise ValueError(f"tps={tps!r} is out of range; allowed: > 0")
    # each workload's integer counts, once (workload_network would recount them per call)
    counts = {id(t[1]): PageCounts(t[1], COUNT_SCALE) for t in targets}
    for _ in range(rounds):
        for fld, fq, stmts, ahi, tps in targets:
            kept = {}   # f is pure: brentq asks again for the bracket's ends

            def f(x, fld=fld, fq=fq, stmts=stmts, ahi=ahi, kept=kept):
                if x not in kept:
                    c = Costs(**{**{g.name: getattr(costs, g.name) for g in fields(Costs)},
                                 fld: x})
                    net = workload_network(fq, n_instances, c, cores=cores, statements=stmts,
                                           adaptive_hash_index=ahi, counts=counts[id(fq)])
                    kept[x] = -max_throughput(net, n_max)[0]
                return kept[x]

            x = solve_monotone(f, -float(tps), 1.0, 1e8, xtol=rtol)
            costs = Costs(**{**{g.name: getattr(costs, g.name) for g in fields(Costs)}, fld: x})
    return costs
