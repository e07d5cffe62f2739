"""Discrete-event simulation of threads contending for cores and mutexes.

A closed system of ``N`` threads (users).  Each thread thinks for an
exponential time of mean ``Z``, then runs a transaction: a sequence of visits
to stations, then thinks again.  Stations are

* the CPU: ``C`` identical cores with one FIFO queue (``servers = C``),
* a mutex: one server, FIFO (``servers = 1``); a thread that finds it taken
  waits: it spins for ``spin_ns``, then sleeps (an ``os_wait``; see Waits),
* a delay: no queueing at all (``servers = 0``).

Service times are exponential with the given means (or deterministic).

Routing (product form)
    ``routing="markov"`` (default): after the think time and after every
    visit, the thread goes to station ``k`` with probability ``V_k / (1 + V)``
    and ends the transaction with probability ``1 / (1 + V)``, where ``V_k``
    are the mean visits per transaction and ``V = sum V_k``.  The number of
    visits to ``k`` in a transaction is then geometric-like with mean ``V_k``;
    the network is a BCMP network (FCFS exponential stations, an infinite-server
    think station, Markov routing), so exact MVA of the demands ``V_k S_k``
    gives its throughput.  ``routing="fixed"``: integer visits, every
    transaction follows the same route with the visits of each station spread
    evenly (a deterministic route is a chain of class switches and keeps the
    product form).

Cores and mutexes
    By default (``hold_core=False``) a thread waiting for or holding a mutex
    does not occupy a core.  That is the product-form network MVA solves, and
    close to InnoDB's behaviour for long waits: a waiter spins only briefly
    (``innodb_spin_wait_delay`` rounds) and then sleeps on an OS event, and
    mutex hold times are short next to the CPU per transaction.
    ``hold_core=True`` models spin locks: before a mutex visit the thread takes
    a core (queueing at the CPU if needed) and keeps it while it waits and
    while it holds the mutex; cores held that way count in the CPU's
    utilisation.  That network has no product form.

Waits (``wakeup``)
    InnoDB 5.5's ``mutex_spin_wait`` spins ``SYNC_SPIN_ROUNDS`` rounds, then
    increments ``count_os_wait`` (what SHOW ENGINE INNODB MUTEX prints as
    ``os_waits``) and sleeps on the mutex's event; when it wakes it starts
    over (``goto mutex_loop``).  ``mutex_exit`` with waiters calls
    ``mutex_signal_object``, and ``os_event_set`` broadcasts: *every* sleeper
    wakes, one gets the mutex, the others spin again and go back to sleep,
    counting another ``os_wait`` each.  ``wakeup="broadcast"`` (default) counts
    exactly that on single-server stations: a waiter is awake for ``spin_ns``
    after it arrives and after each release of the mutex that finds it asleep,
    and every sleep is one ``os_wait``.  So a thread at the back of a long
    queue counts one ``os_wait`` per release it sleeps through, and the
    ``os_waits`` of a saturated mutex grow with its queue length, not just
    with its acquisitions.  ``wakeup="handoff"`` counts one ``os_wait`` per
    wait longer than ``spin_ns`` (a release that wakes only the next waiter).
    The order of service is FIFO either way (the mean queue, and so the
    count, does not depend on who wins a race); CPU stations (several
    servers) always count as ``"handoff"``.  The choice changes counters only,
    never the events.

Implementation
    :func:`simulate` checks the inputs and calls one jitted kernel
    (:func:`~bufsim.contention.des_kernel.run_kernel`) over int64 arrays: nanosecond
    clocks, a splitmix64 generator seeded by ``seed`` (the same stream in the kernel and in
    :func:`simulate_reference`, a small heapq-based pure-Python twin that
    tests compare with the kernel event by event).  Events are picked as the
    smallest (time, thread id).  :func:`simulate_waits` counts one run's waits
    under several ``(spin_ns, wakeup)`` settings at once (the events are the same).

References
----------
.. [1] F. Baskett, K. M. Chandy, R. R. Muntz and F. G. Palacios, "Open, closed,
   and mixed networks of queues with different classes of customers", Journal
   of the ACM 22(2), 1975.
.. [2] A. M. Law, "Simulation Modeling and Analysis", 5th ed., McGraw-Hill,
   2015, sec. 9.5.3 (batch means).
.. [3] S. Vigna, "Further scramblings of Marsaglia's xorshift generators",
   J. Comput. Appl. Math. 315, 2017 (splitmix64 as a seeding generator).
"""
from __future__ import annotations

import heapq
import math
import numbers
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._units import NS_PER_S
from .des_kernel import (C_AREA_B, C_AREA_Q, C_ARRIVALS, C_COMPLETIONS, C_OS_WAITS, C_SPINS,
                         C_WAITS, C_WAIT_NS, GOLDEN, MASK, MIX1, MIX2, N_C, N_O, N_S, N_TH, N_W,
                         O_EVENTS, O_LOGGED, O_T0, O_TEND, TWO_M53, W_OS_WAITS, W_SPINS,
                         run_kernel)

__all__ = ["SimResult", "simulate", "simulate_waits", "simulate_reference"]


# --------------------------------------------------------------------------------------
# result
# --------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class SimResult:
    """Measures of one simulation run (after the warm-up).

    Attributes
    ----------
    names : tuple of str
        Station names.
    n_users : int
    throughput : float
        Completed transactions per second.
    throughput_ci : float
        Half-width of the ``confidence`` interval of the throughput, from batch
        means (Student t over the batches).
    response_time : float
        Mean time from the end of a think to the end of the transaction, in
        seconds.
    utilization : numpy.ndarray, shape (K,)
        Busy fraction of a server (mean busy servers / servers); mean busy
        servers for a delay station.  With ``hold_core`` the CPU's includes
        cores held by threads at mutexes.
    queue_length : numpy.ndarray, shape (K,)
        Mean threads present (waiting or served).
    residence_time : numpy.ndarray, shape (K,)
        Seconds per transaction at the station (``queue_length / throughput``).
    acquisitions, waits, spins, os_waits : numpy.ndarray of int64, shape (K,)
        Arrivals; arrivals that found every server busy; of those, the ones
        served without ever sleeping (spins); and the sleeps (os_waits: one
        per wait longer than ``spin_ns`` with ``wakeup="handoff"`` and at
        CPU stations, one per sleep period with ``"broadcast"``, see the
        module notes).  For the CPU with ``hold_core``, acquisitions include
        core grabs before mutexes.
    wait_time : numpy.ndarray, shape (K,)
        Total time spent waiting in the queue, seconds.
    batch_throughput : numpy.ndarray, shape (n_batches,)
    n_transactions : int
        Transactions measured.
    sim_time : float
        Simulated seconds measured.
    n_events : int
        Events processed, warm-up included.
    confidence : float
    seed : int
    log : numpy.ndarray of int64, shape (L, 4), optional
        Events as ``(time_ns, thread, station or -1 for a think, transactions
        done)``: the first ``log_events`` of :func:`simulate`, all of them from
        :func:`simulate_reference`.
    """

    names: tuple
    n_users: int
    throughput: float
    throughput_ci: float
    response_time: float
    utilization: np.ndarray
    queue_length: np.ndarray
    residence_time: np.ndarray
    acquisitions: np.ndarray
    waits: np.ndarray
    spins: np.ndarray
    os_waits: np.ndarray
    wait_time: np.ndarray
    batch_throughput: np.ndarray = field(repr=False)
    n_transactions: int = 0
    sim_time: float = 0.0
    n_events: int = 0
    confidence: float = 0.95
    seed: int = 0
    log: np.ndarray | None = field(default=None, repr=False)

    @property
    def relative_ci(self) -> float:
        """``throughput_ci / throughput``."""
        return self.throughput_ci / self.throughput if self.throughput > 0 else math.inf

    def frame(self) -> pd.DataFrame:
        """One row per station: ``station, utilization, queue_length,
        residence_time, acquisitions, waits, spins, os_waits, wait_time,
        mean_wait`` (seconds per wait)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            mean_wait = np.where(self.waits > 0, self.wait_time / np.maximum(self.waits, 1), 0.0)
        return pd.DataFrame({
            "station": list(self.names), "utilization": self.utilization,
            "queue_length": self.queue_length, "residence_time": self.residence_time,
            "acquisitions": self.acquisitions, "waits": self.waits, "spins": self.spins,
            "os_waits": self.os_waits, "wait_time": self.wait_time, "mean_wait": mean_wait})

    def summary(self) -> pd.Series:
        """``n_users, throughput, throughput_ci, response_time, n_transactions,
        sim_time``."""
        return pd.Series({"n_users": self.n_users, "throughput": self.throughput,
                          "throughput_ci": self.throughput_ci,
                          "response_time": self.response_time,
                          "n_transactions": self.n_transactions, "sim_time": self.sim_time})



# --------------------------------------------------------------------------------------
# the pure-Python reference
# --------------------------------------------------------------------------------------
class _Splitmix:
    def __init__(self, seed: int):
        self.s = seed & MASK

    def uniform(self) -> float:
        self.s = (self.s + GOLDEN) & MASK
        z = self.s
        z = ((z ^ (z >> 30)) * MIX1) & MASK
        z = ((z ^ (z >> 27)) * MIX2) & MASK
        z ^= z >> 31
        return (float(z >> 11) + 0.5) * TWO_M53

    def draw(self, mean_ns: float, det: bool) -> int:
        if mean_ns <= 0.0:
            return 0
        if det:
            return int(mean_ns + 0.5)
        return int(-mean_ns * math.log(self.uniform()) + 0.5)


def _reference_run(service_ns, servers, cum_prob, route, think_ns, det, core, spin_ns,
                   broadcast, warmup, batch_size, n_batches, seed, n_users):
    """The model of :func:`run_kernel` with a heap of (time, thread) events, deques
    and plain integers.  Returns ``(counters, t0, t_end, batch_end, batch_resp,
    log)`` with counters measured after the warm-up, as ``(K, N_C)`` ints."""
    from collections import deque

    n_st = len(service_ns)
    rng = _Splitmix(seed)
    cum = [[0] * N_C for _ in range(n_st)]
    busy, present, last = [0] * n_st, [0] * n_st, [0] * n_st
    queue = [deque() for _ in range(n_st)]
    loc, arr, start, pos, want, awake = ([0] * n_users for _ in range(6))
    heap, log = [], []

    def touch(k, t):
        cum[k][C_AREA_Q] += present[k] * (t - last[k])
        cum[k][C_AREA_B] += busy[k] * (t - last[k])
        last[k] = t

    def enter(j, k, t):
        touch(k, t)
        cum[k][C_ARRIVALS] += 1
        present[k] += 1
        loc[j], arr[j] = k, t
        if servers[k] == 0 or busy[k] < servers[k]:
            busy[k] += 1
            heapq.heappush(heap, (t + rng.draw(service_ns[k], det), j))
        else:
            cum[k][C_WAITS] += 1
            awake[j] = t + spin_ns
            queue[k].append(j)

    def dispatch(k, t):
        if not queue[k]:
            return
        j = queue[k].popleft()
        wait = t - arr[j]
        cum[k][C_WAIT_NS] += wait
        if t >= awake[j]:
            cum[k][C_OS_WAITS] += 1
        elif wait < spin_ns:
            cum[k][C_SPINS] += 1
        if broadcast and servers[k] == 1:
            for i in queue[k]:
                if t >= awake[i]:
                    cum[k][C_OS_WAITS] += 1
                    awake[i] = t + spin_ns
        touch(k, t)
        busy[k] += 1
        if k == core and want[j] >= 0:
            present[k] -= 1
            enter(j, want[j], t)
        else:
            heapq.heappush(heap, (t + rng.draw(service_ns[k], det), j))

    for j in range(n_users):
        loc[j], want[j] = -1, -1
        heapq.heappush(heap, (rng.draw(think_ns, False), j))
    total = warmup + n_batches * batch_size
    n_done, t0 = 0, 0
    base = [row[:] for row in cum]
    batch_end, batch_resp = [0] * n_batches, [0] * n_batches
    while True:
        t, j = heapq.heappop(heap)
        here = loc[j]
        log.append((t, j, here, n_done))
        if here >= 0:
            touch(here, t)
            present[here] -= 1
            busy[here] -= 1
            cum[here][C_COMPLETIONS] += 1
            dispatch(here, t)
            if want[j] >= 0:
                want[j] = -1
                touch(core, t)
                busy[core] -= 1
                dispatch(core, t)
        else:
            start[j], pos[j] = t, 0
        nxt = -1
        if len(route):
            if pos[j] < len(route):
                nxt = route[pos[j]]
                pos[j] += 1
        else:
            u = rng.uniform()
            if u >= cum_prob[0]:
                nxt = next((k for k in range(n_st) if u < cum_prob[k + 1]), n_st - 1)
        if nxt >= 0:
            if core >= 0 and nxt != core and servers[nxt] == 1:
                want[j] = nxt
                if busy[core] < servers[core]:
                    touch(core, t)
                    cum[core][C_ARRIVALS] += 1
                    busy[core] += 1
                    enter(j, nxt, t)
                else:
                    enter(j, core, t)
            else:
                enter(j, nxt, t)
            continue
        n_done += 1
        if n_done > warmup:
            b = (n_done - warmup - 1) // batch_size
            batch_resp[b] += t - start[j]
            if (n_done - warmup) % batch_size == 0:
                batch_end[b] = t
        if n_done == warmup:
            for k in range(n_st):
                touch(k, t)
            base = [row[:] for row in cum]
            t0 = t
        if n_done == total:
            break
        loc[j] = -1
        heapq.heappush(heap, (t + rng.draw(think_ns, False), j))
    for k in range(n_st):
        touch(k, t)
    counters = [[c - b for c, b in zip(rc, rb)] for rc, rb in zip(cum, base)]
    return counters, t0, t, batch_end, batch_resp, log


# --------------------------------------------------------------------------------------
# the public function
# --------------------------------------------------------------------------------------
def _check_count(name, value, lo):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) \
            or value < lo:
        raise ValueError(f"{name}={value!r} is out of range; allowed: integers >= {lo}")
    return int(value)


def _fixed_route(visits: np.ndarray) -> np.ndarray:
    """Visit j of station k at position (j + 1/2) / V_k: each station's visits spread evenly."""
    keys = [((j + 0.5) / v, k) for k, v in enumerate(visits.astype(np.int64)) for j in range(v)]
    return np.array([k for _, k in sorted(keys)], dtype=np.int64)


def _prepare(service, think_time, n_users, visits, servers, names, n_transactions, warmup,
             n_batches, seed, routing, service_dist, spin_ns, hold_core, cpu, confidence,
             wakeup):
    """Validate everything and return the kernel's inputs as a dict."""
    s = np.atleast_1d(np.asarray(service, dtype=np.float64))
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"service must be a non-empty one-dimensional array; got shape {s.shape}")
    if not np.all(np.isfinite(s)) or s.min() < 0:
        raise ValueError("service must be finite seconds >= 0")
    k = s.shape[0]
    v = np.ones(k) if visits is None else np.atleast_1d(np.asarray(visits, dtype=np.float64))
    if v.shape != (k,) or not np.all(np.isfinite(v)) or v.min() < 0:
        raise ValueError(f"visits must hold {k} finite values >= 0")
    m = np.ones(k, dtype=np.int64) if servers is None else np.atleast_1d(np.asarray(servers))
    if m.shape != (k,) or not np.all(np.isfinite(m.astype(float))) or np.any(m != np.round(m)) \
            or m.min() < 0:
        raise ValueError(f"servers must hold {k} integers >= 0 (0 = delay station)")
    m = m.astype(np.int64)
    names = tuple(f"station {i}" for i in range(k)) if names is None else tuple(map(str, names))
    if len(names) != k:
        raise ValueError(f"names must hold {k} names; got {len(names)}")
    z = float(think_time)
    if not math.isfinite(z) or z < 0:
        raise ValueError(f"think_time={think_time!r} is out of range; allowed: finite seconds >= 0")
    if z == 0 and float((s * v).sum()) == 0:
        raise ValueError("the demands and the think time must not all be zero")
    n = _check_count("n_users", n_users, 1)
    n_tx = _check_count("n_transactions", n_transactions, 1)
    nb = _check_count("n_batches", n_batches, 2)
    if n_tx < nb:
        raise ValueError(f"n_transactions={n_tx} is out of range; allowed: >= n_batches ({nb})")
    wu = n_tx // 10 if warmup is None else _check_count("warmup", warmup, 0)
    sd = _check_count("seed", seed, 0)
    if sd > MASK:
        raise ValueError(f"seed={seed!r} is out of range; allowed: 0..2**64-1")
    if routing not in ("markov", "fixed"):
        raise ValueError(f"routing={routing!r} is not supported; allowed: 'markov', 'fixed'")
    if service_dist not in ("exponential", "deterministic"):
        raise ValueError(f"service_dist={service_dist!r} is not supported; allowed: "
                         "'exponential', 'deterministic'")
    sp = _check_count("spin_ns", spin_ns, 0)
    if wakeup not in ("broadcast", "handoff"):
        raise ValueError(f"wakeup={wakeup!r} is not supported; allowed: 'broadcast', 'handoff'")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence!r} is out of range; allowed: 0 < c < 1")
    core = -1
    if hold_core:
        if cpu is None:
            multi = np.flatnonzero(m > 1)
            if multi.size != 1:
                raise ValueError("hold_core needs cpu=<index of the CPU station> (no single "
                                 "multi-server station to take)")
            cpu = int(multi[0])
        core = _check_count("cpu", cpu, 0)
        if core >= k or m[core] < 1:
            raise ValueError(f"cpu={cpu!r} is out of range; allowed: the index of a station "
                             f"with servers >= 1 in 0..{k - 1}")
    if routing == "fixed":
        if np.any(v != np.round(v)):
            raise ValueError("routing='fixed' needs integer visits")
        route = _fixed_route(v)
        cum_prob = np.ones(k + 1)           # an empty route: every transaction ends at once
    else:
        route = np.zeros(0, dtype=np.int64)
        tot = 1.0 + v.sum()
        cum_prob = np.concatenate([[1.0 / tot], (1.0 + np.cumsum(v)) / tot])
        cum_prob[-1] = 1.0
    return dict(service_ns=s * NS_PER_S, servers=m, cum_prob=cum_prob, route=route,
                think_ns=z * NS_PER_S, det=int(service_dist == "deterministic"), core=core,
                spin_ns=sp, broadcast=wakeup == "broadcast", warmup=wu, batch_size=n_tx // nb, n_batches=nb, seed=sd,
                n_users=n, names=names, confidence=float(confidence))


def _finish(p, counters, t0, t_end, batch_end, batch_resp, n_events, log) -> SimResult:
    counters = np.asarray(counters, dtype=np.int64)
    n_meas = p["n_batches"] * p["batch_size"]
    span = (t_end - t0) / NS_PER_S
    x = n_meas / span if span > 0 else math.inf
    edges = np.concatenate([[t0], np.asarray(batch_end, dtype=np.int64)])
    with np.errstate(divide="ignore"):
        xb = p["batch_size"] * NS_PER_S / np.diff(edges).astype(np.float64)
    nb = p["n_batches"]
    if np.all(np.isfinite(xb)):
        from scipy import stats
        half = float(stats.t.ppf(0.5 + p["confidence"] / 2, nb - 1) * xb.std(ddof=1)
                     / math.sqrt(nb))
    else:
        half = math.nan
    m = p["servers"]
    q = counters[:, C_AREA_Q] / (span * NS_PER_S) if span > 0 else np.zeros(len(m))
    b = counters[:, C_AREA_B] / (span * NS_PER_S) if span > 0 else np.zeros(len(m))
    return SimResult(
        names=p["names"], n_users=p["n_users"], throughput=x, throughput_ci=half,
        response_time=float(np.sum(batch_resp)) / n_meas / NS_PER_S,
        utilization=np.where(m > 0, b / np.maximum(m, 1), b), queue_length=q,
        residence_time=q / x, acquisitions=counters[:, C_ARRIVALS].copy(),
        waits=counters[:, C_WAITS].copy(), spins=counters[:, C_SPINS].copy(),
        os_waits=counters[:, C_OS_WAITS].copy(), wait_time=counters[:, C_WAIT_NS] / NS_PER_S,
        batch_throughput=xb, n_transactions=n_meas, sim_time=span, n_events=int(n_events),
        confidence=p["confidence"], seed=p["seed"], log=log)


_DOC_PARAMS = """
    Parameters
    ----------
    service : array_like of float
        Mean service time of one visit to each station, seconds (>= 0).  Times
        are drawn in whole nanoseconds: keep means above a microsecond.
    think_time : float
        Mean think time ``Z`` (exponential), seconds (>= 0).
    n_users : int
        Threads ``N`` (>= 1).
    visits : array_like of float, optional
        Mean visits per transaction (default 1 each, so ``service`` is then the
        demand, as in :func:`bufsim.analytic.mva.exact_mva`).
    servers : array_like of int, optional
        1 per mutex (default), ``C`` for the CPU, 0 for a delay station.
    names : sequence of str, optional
    n_transactions : int
        Transactions measured after the warm-up, split into ``n_batches``
        batches (a remainder is dropped).
    warmup : int, optional
        Transactions completed before measuring (default ``n_transactions // 10``).
    n_batches : int
        Batches for the confidence interval (>= 2).
    seed : int
        Seed of the splitmix64 generator, 0..2**64-1.
    routing : {"markov", "fixed"}
        See the module notes.
    service_dist : {"exponential", "deterministic"}
        Service times (think times are always exponential).
    spin_ns : int
        How long a waiter spins before it sleeps: a wait shorter than this is
        a spin, not an os_wait (default 0: every wait sleeps).
    wakeup : {"broadcast", "handoff"}
        How sleeps are counted at a mutex (module notes, Waits): InnoDB 5.5's
        release wakes every sleeper and each loser sleeps again ("broadcast",
        default), or one os_wait per wait longer than ``spin_ns`` ("handoff").
        Counters only: the events are the same.
    hold_core : bool
        Threads hold a core while they wait for and hold a single-server
        station (spin locks); default False (product form, see the module notes).
    cpu : int, optional
        Index of the CPU station for ``hold_core`` (default: the only station
        with more than one server).
    confidence : float
        Level of the throughput interval."""


def simulate(service, think_time: float, n_users: int, *, visits=None, servers=None,
             names=None, n_transactions: int = 100_000, warmup: int | None = None,
             n_batches: int = 20, seed: int = 0, routing: str = "markov",
             service_dist: str = "exponential", spin_ns: int = 0, hold_core: bool = False,
             cpu: int | None = None, confidence: float = 0.95, wakeup: str = "broadcast",
             log_events: int = 0) -> SimResult:
    """Simulate a closed network of threads, cores and mutexes (compiled kernel).
    {params}
    log_events : int
        Record the first that many events in ``result.log`` for event-by-event
        comparisons with :func:`simulate_reference`.

    Returns
    -------
    SimResult

    Notes
    -----
    The point estimate of the throughput is the measured transactions over
    the measured time; its interval comes from the throughputs of the batches
    (batch means, Law 2015).  Utilisation and queue lengths are time
    averages; the residence time per transaction follows from Little's law.

    Examples
    --------
    >>> r = simulate([0.002, 0.001], 0.01, 4, n_transactions=20_000, seed=1)
    >>> abs(r.throughput / 277.46 - 1) < 0.05      # exact MVA: 277.46 per second
    True
    """
    p = _prepare(service, think_time, n_users, visits, servers, names, n_transactions, warmup,
                 n_batches, seed, routing, service_dist, spin_ns, hold_core, cpu, confidence,
                 wakeup)
    log_events = _check_count("log_events", log_events, 0)
    return _run(p, [(p["spin_ns"], p["broadcast"])], log_events)[0]


def simulate_waits(service, think_time: float, n_users: int, *, waits, visits=None,
                   servers=None, names=None, n_transactions: int = 100_000,
                   warmup: int | None = None, n_batches: int = 20, seed: int = 0,
                   routing: str = "markov", service_dist: str = "exponential",
                   hold_core: bool = False, cpu: int | None = None,
                   confidence: float = 0.95) -> list[SimResult]:
    """One simulation counted under several spin times and wake-up rules.

    ``spin_ns`` and ``wakeup`` change the counters (spins, os_waits) only, never the
    events (module notes, Waits), so one run of the events counts them for every
    ``(spin_ns, wakeup)`` pair of ``waits``: result ``i`` is the :class:`SimResult` of
    :func:`simulate` with ``spin_ns=waits[i][0], wakeup=waits[i][1]`` and the same other
    arguments, number for number, at the cost of about one run.

    Parameters
    ----------
    waits : sequence of (int, str)
        One or more ``(spin_ns, wakeup)`` pairs (as :func:`simulate`'s arguments).
    service, think_time, n_users, visits, servers, names, n_transactions, warmup, \
n_batches, seed, routing, service_dist, hold_core, cpu, confidence
        As :func:`simulate`.

    Returns
    -------
    list of SimResult
        One per pair of ``waits``, in its order.
    """
    try:
        pairs = [(s, w) for s, w in waits]
    except (TypeError, ValueError):
        raise ValueError(f"waits must be a sequence of (spin_ns, wakeup) pairs; got {waits!r}") \
            from None
    if not pairs:
        raise ValueError("waits is empty; allowed: one or more (spin_ns, wakeup) pairs")
    settings = []
    for i, (s, w) in enumerate(pairs):
        sp = _check_count(f"waits[{i}] spin_ns", s, 0)
        if w not in ("broadcast", "handoff"):
            raise ValueError(f"waits[{i}] wakeup={w!r} is not supported; allowed: 'broadcast', "
                             "'handoff'")
        settings.append((sp, w == "broadcast"))
    p = _prepare(service, think_time, n_users, visits, servers, names, n_transactions, warmup,
                 n_batches, seed, routing, service_dist, settings[0][0], hold_core, cpu,
                 confidence, pairs[0][1])
    return _run(p, settings, 0)


def _run(p, settings, log_events: int) -> list[SimResult]:
    """Run the kernel once on checked inputs ``p`` (:func:`_prepare`), counting waits for
    each ``(spin_ns, broadcast)`` of ``settings``; one SimResult per setting."""
    k, n, v = len(p["servers"]), p["n_users"], len(settings)
    th = np.zeros((n, N_TH), dtype=np.int64)
    awake = np.zeros((n, v), dtype=np.int64)
    stn = np.zeros((k, N_S), dtype=np.int64)
    qbuf = np.zeros((k, n), dtype=np.int64)
    cum = np.zeros((k, N_C), dtype=np.int64)
    base = np.zeros((k, N_C), dtype=np.int64)
    wcum = np.zeros((v, k, N_W), dtype=np.int64)
    wbase = np.zeros((v, k, N_W), dtype=np.int64)
    batch_end = np.zeros(p["n_batches"], dtype=np.int64)
    batch_resp = np.zeros(p["n_batches"], dtype=np.int64)
    log = np.zeros((log_events, 4), dtype=np.int64)
    out = np.zeros(N_O, dtype=np.int64)
    spin = np.array([s for s, _ in settings], dtype=np.int64)
    bcast = np.array([b for _, b in settings], dtype=np.bool_)
    run_kernel(p["service_ns"], p["servers"], p["cum_prob"], p["route"], p["think_ns"],
               p["det"], p["core"], spin, bcast, p["warmup"], p["batch_size"],
               np.uint64(p["seed"]), th, awake, stn, qbuf, cum, wcum, base, wbase, batch_end,
               batch_resp, log, out)
    results = []
    for i in range(v):
        counters = cum - base
        counters[:, C_SPINS] = wcum[i, :, W_SPINS] - wbase[i, :, W_SPINS]
        counters[:, C_OS_WAITS] = wcum[i, :, W_OS_WAITS] - wbase[i, :, W_OS_WAITS]
        results.append(_finish(p, counters, int(out[O_T0]), int(out[O_TEND]), batch_end.copy(),
                               batch_resp.copy(), out[O_EVENTS], log[:out[O_LOGGED]].copy()))
    return results


def simulate_reference(service, think_time: float, n_users: int, *, visits=None, servers=None,
                       names=None, n_transactions: int = 1_000, warmup: int | None = None,
                       n_batches: int = 20, seed: int = 0, routing: str = "markov",
                       service_dist: str = "exponential", spin_ns: int = 0,
                       hold_core: bool = False, cpu: int | None = None,
                       confidence: float = 0.95, wakeup: str = "broadcast") -> SimResult:
    """The same simulation in plain Python (heapq), for tests; slow.
    {params}

    Returns
    -------
    SimResult
        ``log`` holds every event.
    """
    p = _prepare(service, think_time, n_users, visits, servers, names, n_transactions, warmup,
                 n_batches, seed, routing, service_dist, spin_ns, hold_core, cpu, confidence,
                 wakeup)
    counters, t0, t_end, batch_end, batch_resp, log = _reference_run(
        p["service_ns"].tolist(), p["servers"].tolist(), p["cum_prob"].tolist(),
        p["route"].tolist(), p["think_ns"], bool(p["det"]), p["core"], p["spin_ns"],
        p["broadcast"], p["warmup"], p["batch_size"], p["n_batches"], p["seed"], p["n_users"])
    return _finish(p, counters, t0, t_end, batch_end, batch_resp, len(log),
                   np.array(log, dtype=np.int64).reshape(-1, 4))


simulate.__doc__ = simulate.__doc__.replace("{params}", _DOC_PARAMS)
simulate_reference.__doc__ = simulate_reference.__doc__.replace("{params}", _DOC_PARAMS)
