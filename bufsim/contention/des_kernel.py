"""The compiled event loop of :mod:`bufsim.contention.des`: the state's columns
(threads, stations, counters, outputs), splitmix64 draws (the same bits as the
pure-Python reference's) and :func:`run_kernel`, which runs the events of one
simulation over int64 arrays.

The wait counters (spins and os_waits) depend on the spin time and the wake-up rule
only, never the events: one run counts them for ``V`` such settings at once, each in
its own ``wcum[v]`` (``spin_ns[v]``, ``broadcast[v]``; a waiter's ``awake[j, v]``)."""
import math

import numpy as np
from numba import njit

INF = np.iinfo(np.int64).max
MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
TWO_M53 = 1.0 / 9007199254740992.0

# per-thread columns (the time a waiter sleeps from, per counter setting: ``awake``)
TH_NEXT, TH_LOC, TH_ARR, TH_START, TH_POS, TH_WANT = range(6)
N_TH = 6
# per-station state columns
S_BUSY, S_PRESENT, S_QHEAD, S_QLEN, S_LAST = range(5)
N_S = 5
# per-station counters (C_SPINS and C_OS_WAITS: filled from ``wcum`` after the run)
C_ARRIVALS, C_COMPLETIONS, C_WAITS, C_SPINS, C_OS_WAITS, C_WAIT_NS, C_AREA_Q, C_AREA_B = range(8)
N_C = 8
# per counter setting and station: ``wcum[v, k, W_SPINS]``, ``wcum[v, k, W_OS_WAITS]``
W_SPINS, W_OS_WAITS = range(2)
N_W = 2
# scalar outputs
O_T0, O_TEND, O_EVENTS, O_LOGGED, O_DONE = range(5)
N_O = 5


# --------------------------------------------------------------------------------------
# random numbers: splitmix64 (same bits in the kernel and the reference)
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _uniform(rng):
    """A uniform double in (0, 1) from the splitmix64 state ``rng[0]``."""
    s = rng[0] + np.uint64(GOLDEN)
    rng[0] = s
    z = (s ^ (s >> np.uint64(30))) * np.uint64(MIX1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(MIX2)
    z = z ^ (z >> np.uint64(31))
    return (np.float64(z >> np.uint64(11)) + 0.5) * TWO_M53


@njit(cache=True)
def _draw(mean_ns, det, rng):
    """A service or think time in whole nanoseconds (no draw when the mean is 0)."""
    if mean_ns <= 0.0:
        return np.int64(0)
    if det:
        return np.int64(mean_ns + 0.5)
    return np.int64(-mean_ns * math.log(_uniform(rng)) + 0.5)


# --------------------------------------------------------------------------------------
# the kernel
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _touch(stn, cum, k, t):
    """Advance station k's time integrals to t."""
    dt = t - stn[k, S_LAST]
    cum[k, C_AREA_Q] += stn[k, S_PRESENT] * dt
    cum[k, C_AREA_B] += stn[k, S_BUSY] * dt
    stn[k, S_LAST] = t


@njit(cache=True, inline='always')
def _enter(j, k, t, th, awake, stn, qbuf, cum, service_ns, servers, det, rng, spin_ns):
    """Thread j arrives at station k at t: served at once or queued."""
    _touch(stn, cum, k, t)
    cum[k, C_ARRIVALS] += 1
    stn[k, S_PRESENT] += 1
    th[j, TH_LOC] = k
    th[j, TH_ARR] = t
    if servers[k] == 0 or stn[k, S_BUSY] < servers[k]:
        stn[k, S_BUSY] += 1
        th[j, TH_NEXT] = t + _draw(service_ns[k], det, rng)
    else:
        cum[k, C_WAITS] += 1
        for v in range(spin_ns.shape[0]):
            awake[j, v] = t + spin_ns[v]
        n = qbuf.shape[1]
        qbuf[k, (stn[k, S_QHEAD] + stn[k, S_QLEN]) % n] = j
        stn[k, S_QLEN] += 1
        th[j, TH_NEXT] = INF


@njit(cache=True, inline='always')
def _dispatch(k, t, core, th, awake, stn, qbuf, cum, wcum, service_ns, servers, det, rng,
              spin_ns, broadcast):
    """A server of k is free at t and k's queue is not empty (the caller checks: a call
    per event costs more than the test): start the head of the queue (and for each
    counter setting with ``broadcast``, wake every other sleeper of a mutex: module
    notes, Waits)."""
    n = qbuf.shape[1]
    j = qbuf[k, stn[k, S_QHEAD]]
    stn[k, S_QHEAD] = (stn[k, S_QHEAD] + 1) % n
    stn[k, S_QLEN] -= 1
    wait = t - th[j, TH_ARR]
    cum[k, C_WAIT_NS] += wait
    head = stn[k, S_QHEAD]
    qlen = stn[k, S_QLEN]
    for v in range(spin_ns.shape[0]):
        sp = spin_ns[v]
        if t >= awake[j, v]:
            wcum[v, k, W_OS_WAITS] += 1
        elif wait < sp:
            wcum[v, k, W_SPINS] += 1
        if broadcast[v] and servers[k] == 1:
            woke = 0
            for q in range(qlen):
                p = head + q
                if p >= n:
                    p -= n
                i = qbuf[k, p]
                if t >= awake[i, v]:
                    # asleep since awake[i, v]: that sleep is an os_wait; woken, it spins again
                    woke += 1
                    awake[i, v] = t + sp
            wcum[v, k, W_OS_WAITS] += woke
    _touch(stn, cum, k, t)
    stn[k, S_BUSY] += 1
    if k == core and th[j, TH_WANT] >= 0:
        # a core for a spin-lock visit: the thread keeps it and goes to its mutex
        stn[k, S_PRESENT] -= 1
        _enter(j, th[j, TH_WANT], t, th, awake, stn, qbuf, cum, service_ns, servers, det, rng,
               spin_ns)
    else:
        th[j, TH_NEXT] = t + _draw(service_ns[k], det, rng)


@njit(cache=True, nogil=True)
def run_kernel(service_ns, servers, cum_prob, route, think_ns, det, core, spin_ns, broadcast,
               warmup, batch_size, seed, th, awake, stn, qbuf, cum, wcum, base, wbase, batch_end,
               batch_resp, log, out):
    """Run until ``warmup + len(batch_end) * batch_size`` transactions are done.

    ``cum_prob[0]`` is the probability of ending the transaction and
    ``cum_prob[k + 1]`` the cumulative probability up to station k (Markov
    routing, used when ``route`` is empty); otherwise every transaction
    follows ``route``.  ``core >= 0`` makes threads hold a core of station
    ``core`` during every visit to a single-server station.  ``spin_ns`` (int64) and
    ``broadcast`` (bool) hold ``V`` counter settings, ``awake`` is ``(n_users, V)``,
    ``wcum`` and ``wbase`` ``(V, K, N_W)``; ``base`` and ``wbase`` receive the counters
    at the end of the warm-up.
    """
    n_users = th.shape[0]
    n_st = stn.shape[0]
    n_batches = batch_end.shape[0]
    total = warmup + n_batches * batch_size
    rng = np.empty(1, dtype=np.uint64)
    rng[0] = np.uint64(seed)
    t = np.int64(0)
    for j in range(n_users):
        th[j, TH_LOC] = -1
        th[j, TH_WANT] = -1
        th[j, TH_NEXT] = _draw(think_ns, 0, rng)
    n_done = 0
    n_ev = 0
    n_log = 0
    while True:
        best = 0
        bt = th[0, TH_NEXT]
        for j in range(1, n_users):
            if th[j, TH_NEXT] < bt:
                bt = th[j, TH_NEXT]
                best = j
        t = bt
        loc = th[best, TH_LOC]
        n_ev += 1
        if n_log < log.shape[0]:
            log[n_log, 0] = t
            log[n_log, 1] = best
            log[n_log, 2] = loc
            log[n_log, 3] = n_done
            n_log += 1
        if loc >= 0:
            # end of a visit
            _touch(stn, cum, loc, t)
            stn[loc, S_PRESENT] -= 1
            stn[loc, S_BUSY] -= 1
            cum[loc, C_COMPLETIONS] += 1
            if stn[loc, S_QLEN] > 0:
                _dispatch(loc, t, core, th, awake, stn, qbuf, cum, wcum, service_ns, servers,
                          det, rng, spin_ns, broadcast)
            if th[best, TH_WANT] >= 0:
                th[best, TH_WANT] = -1
                _touch(stn, cum, core, t)
                stn[core, S_BUSY] -= 1
                if stn[core, S_QLEN] > 0:
                    _dispatch(core, t, core, th, awake, stn, qbuf, cum, wcum, service_ns,
                              servers, det, rng, spin_ns, broadcast)
        else:
            # end of a think: a new transaction
            th[best, TH_START] = t
            th[best, TH_POS] = 0
        # route the thread: next station, or the end of its transaction
        nxt = -1
        if route.shape[0] > 0:
            if th[best, TH_POS] < route.shape[0]:
                nxt = route[th[best, TH_POS]]
                th[best, TH_POS] += 1
        else:
            u = _uniform(rng)
            if u >= cum_prob[0]:
                nxt = n_st - 1
                for k in range(n_st):
                    if u < cum_prob[k + 1]:
                        nxt = k
                        break
        if nxt >= 0:
            if core >= 0 and nxt != core and servers[nxt] == 1:
                th[best, TH_WANT] = nxt
                if stn[core, S_BUSY] < servers[core]:
                    _touch(stn, cum, core, t)
                    cum[core, C_ARRIVALS] += 1
                    stn[core, S_BUSY] += 1
                    _enter(best, nxt, t, th, awake, stn, qbuf, cum, service_ns, servers, det,
                           rng, spin_ns)
                else:
                    _enter(best, core, t, th, awake, stn, qbuf, cum, service_ns, servers, det,
                           rng, spin_ns)
            else:
                _enter(best, nxt, t, th, awake, stn, qbuf, cum, service_ns, servers, det, rng,
                       spin_ns)
            continue
        # the transaction is complete
        n_done += 1
        if n_done > warmup:
            b = (n_done - warmup - 1) // batch_size
            batch_resp[b] += t - th[best, TH_START]
            if (n_done - warmup) % batch_size == 0:
                batch_end[b] = t
        if n_done == warmup:
            for k in range(n_st):
                _touch(stn, cum, k, t)
            base[:, :] = cum
            wbase[:, :, :] = wcum
            out[O_T0] = t
        if n_done == total:
            break
        th[best, TH_LOC] = -1
        th[best, TH_NEXT] = t + _draw(think_ns, 0, rng)
    for k in range(n_st):
        _touch(stn, cum, k, t)
    out[O_TEND] = t
    out[O_EVENTS] = n_ev
    out[O_LOGGED] = n_log
    out[O_DONE] = n_done
