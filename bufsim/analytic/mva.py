"""Closed single-class queueing networks: exact and approximate MVA, bounds, USL.

A closed interactive network has ``N`` users that think for ``Z`` on average,
then visit stations ``k = 1..K`` with a total service demand ``D_k`` each
(visits times service time per visit).  Stations are

* queueing (one FCFS or PS server; ``servers[k] = 1``, the default),
* multi-server (``servers[k] = m >= 2``, e.g. the CPU cores),
* delay (``servers[k] = 0``: infinitely many servers, no queueing),
* load-dependent (``load_dependent={k: alpha}``: service rate ``alpha[j-1]``
  times the single-server rate when ``j`` users are at the station).

Exact MVA (Reiser and Lavenberg, 1980) computes throughput, response time and
per-station queue lengths for every population ``n = 1..N`` by recursion on
``n``; multi-server and load-dependent stations carry their marginal
queue-length probabilities along.  Bard-Schweitzer approximate MVA replaces the
recursion by a fixed point at each population.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numba import njit
from scipy import optimize

from .._validation import check_int

__all__ = ["MVAResult", "USLFit", "exact_mva", "exact_mva_throughput", "schweitzer_mva",
           "asymptotic_bounds", "usl_fit"]

_QUEUE, _DELAY, _MULTI, _LD = 0, 1, 2, 3


@dataclass(frozen=True)
class MVAResult:
    """Performance measures of a closed network for populations ``1..N``.

    Attributes
    ----------
    n : numpy.ndarray of int64, shape (N,)
        Populations ``1..N``.
    throughput : numpy.ndarray, shape (N,)
        ``X(n)``, completed interactions per unit time.
    response_time : numpy.ndarray, shape (N,)
        ``R(n)``: time at the stations per interaction, think time excluded
        (``n / X(n) - Z``).
    residence_time, queue_length, utilization : numpy.ndarray, shape (N, K)
        Per station: time per interaction (all visits), mean number of users
        present (``X R_k``), and utilization: ``X D_k / m_k`` for queueing and
        multi-server stations (busy fraction of a server), ``X D_k`` (mean busy
        servers) for delay stations, ``1 - P(0 users)`` for load-dependent ones.
    think_time : float
    demands : numpy.ndarray, shape (K,)
    servers : numpy.ndarray of int64, shape (K,)
        0 for delay, -1 for load-dependent stations.
    """

    n: np.ndarray
    throughput: np.ndarray
    response_time: np.ndarray
    residence_time: np.ndarray
    queue_length: np.ndarray
    utilization: np.ndarray
    think_time: float
    demands: np.ndarray = field(repr=False)
    servers: np.ndarray = field(repr=False)

    def to_frame(self) -> pd.DataFrame:
        """One row per population: ``n, throughput, response_time`` and, per
        station ``k``, ``queue_k`` and ``util_k``."""
        cols = {"n": self.n, "throughput": self.throughput, "response_time": self.response_time}
        for k in range(self.demands.shape[0]):
            cols[f"queue_{k}"] = self.queue_length[:, k]
            cols[f"util_{k}"] = self.utilization[:, k]
        return pd.DataFrame(cols)


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------
def _check_network(demands, think_time, n_users, servers, load_dependent):
    d = np.atleast_1d(np.asarray(demands, dtype=np.float64))
    if d.ndim != 1 or d.size == 0:
        raise ValueError(f"demands must be a non-empty one-dimensional array; got shape {d.shape}")
    if not np.all(np.isfinite(d)) or d.min() < 0:
        raise ValueError("demands must be finite and >= 0")
    z = float(think_time)
    if not np.isfinite(z) or z < 0:
        raise ValueError(f"think_time must be finite and >= 0; got {think_time!r}")
    n = check_int("n_users", n_users, 1)
    k = d.shape[0]
    if servers is None:
        m = np.ones(k, dtype=np.int64)
    else:
        ms = np.atleast_1d(np.asarray(servers))
        if ms.shape != (k,):
            raise ValueError(f"servers must have one entry per station ({k}); got shape {ms.shape}")
        if not np.all(np.isfinite(ms.astype(float))) or np.any(ms != np.round(ms)) or ms.min() < 0:
            raise ValueError("servers must be integers >= 0 (0 = delay station)")
        m = ms.astype(np.int64)
    kind = np.where(m == 0, _DELAY, np.where(m == 1, _QUEUE, _MULTI)).astype(np.int64)
    alpha = np.ones((k, n + 1))
    if load_dependent is not None:
        if not isinstance(load_dependent, Mapping):
            raise ValueError("load_dependent must map station index -> rate multipliers")
        for st, a in load_dependent.items():
            check_int("load_dependent key (one of the station indices)", st, 0, k - 1)
            a = np.asarray(a, dtype=np.float64)
            if a.ndim != 1 or a.shape[0] < n:
                raise ValueError(f"load_dependent[{st}] must give alpha(1..n_users), {n} values; "
                                 f"got shape {a.shape}")
            if not np.all(np.isfinite(a[:n])) or a[:n].min() <= 0:
                raise ValueError(f"load_dependent[{st}] must be finite and > 0")
            alpha[st, 1:] = a[:n]
            kind[st] = _LD
            m[st] = -1
    if z + d.sum() <= 0:
        raise ValueError("the demands and the think time must not all be zero")
    return d, z, n, m, kind, alpha


# --------------------------------------------------------------------------
# exact MVA
# --------------------------------------------------------------------------
@njit(cache=True)
def _exact_mva_kernel(d, z, n_users, kind, m, alpha):
    k_st = d.shape[0]
    x_out = np.zeros(n_users)
    r_out = np.zeros((n_users, k_st))
    q_out = np.zeros((n_users, k_st))
    u_out = np.zeros((n_users, k_st))
    mmax = 1
    for k in range(k_st):
        if kind[k] == _MULTI and m[k] > mmax:
            mmax = m[k]
        if kind[k] == _LD:
            mmax = max(mmax, n_users + 1)
    # marginal probabilities P_k(j | n-1), j = 0..mmax-1 (only MULTI and LD)
    prob = np.zeros((k_st, mmax + 1))
    new = np.zeros(mmax + 1)
    for k in range(k_st):
        prob[k, 0] = 1.0
    q = np.zeros(k_st)
    r = np.zeros(k_st)
    for n in range(1, n_users + 1):
        for k in range(k_st):
            kd = kind[k]
            if kd == _QUEUE:
                r[k] = d[k] * (1.0 + q[k])
            elif kd == _DELAY:
                r[k] = d[k]
            elif kd == _MULTI:
                mk = m[k]
                s = 1.0 + q[k]
                for j in range(mk - 1):
                    s += (mk - 1 - j) * prob[k, j]
                r[k] = d[k] / mk * s
            else:
                s = 0.0
                for j in range(1, n + 1):
                    s += j / alpha[k, j] * prob[k, j - 1]
                r[k] = d[k] * s
        x = n / (z + r.sum())
        x_out[n - 1] = x
        for k in range(k_st):
            q[k] = x * r[k]
            kd = kind[k]
            if kd == _MULTI:
                mk = m[k]
                tot = x * d[k]
                for j in range(1, mk):
                    new[j] = d[k] * x / j * prob[k, j - 1]
                    tot += (mk - j) * new[j]
                new[0] = 1.0 - tot / mk
                for j in range(mk):
                    prob[k, j] = new[j]
                u_out[n - 1, k] = x * d[k] / mk
            elif kd == _LD:
                tot = 0.0
                for j in range(1, n + 1):
                    new[j] = d[k] * x / alpha[k, j] * prob[k, j - 1]
                    tot += new[j]
                new[0] = 1.0 - tot
                for j in range(n + 1):
                    prob[k, j] = new[j]
                u_out[n - 1, k] = tot
            else:
                u_out[n - 1, k] = x * d[k]
        r_out[n - 1] = r
        q_out[n - 1] = q
    return x_out, r_out, q_out, u_out


@njit(cache=True)
def _log_conv(la, lb, n):
    """log of the convolution of two non-negative sequences given as logs (-inf = 0)."""
    out = np.empty(n + 1)
    for t in range(n + 1):
        mx = -np.inf
        for j in range(t + 1):
            v = la[j] + lb[t - j]
            if v > mx:
                mx = v
        if mx == -np.inf:
            out[t] = -np.inf
            continue
        acc = 0.0
        for j in range(t + 1):
            acc += np.exp(la[j] + lb[t - j] - mx)
        out[t] = mx + np.log(acc)
    return out


@njit(cache=True)
def _log_factors(d, z, n_users, kind, m, alpha):
    """log f_k(j), j = 0..N, of every station (row K is the think time, a delay station).

    f_k(j) = prod_{i=1..j} D_k / a_k(i) with a(i) = 1 (queue), i (delay), min(i, m)
    (m servers) or alpha(i) (load-dependent)."""
    k_st = d.shape[0]
    lf = np.zeros((k_st + 1, n_users + 1))
    for k in range(k_st + 1):
        dk = z if k == k_st else d[k]
        kd = _DELAY if k == k_st else kind[k]
        for j in range(1, n_users + 1):
            if dk <= 0.0:
                lf[k, j] = -np.inf
                continue
            if kd == _QUEUE:
                a = 1.0
            elif kd == _DELAY:
                a = float(j)
            elif kd == _MULTI:
                a = float(min(j, m[k]))
            else:
                a = alpha[k, j]
            lf[k, j] = lf[k, j - 1] + np.log(dk / a)
    return lf


@njit(cache=True)
def _convolution_kernel(d, z, n_users, kind, m, alpha):
    """Exact solution by convolution of normalising constants, in logs.

    Every term is a sum of positive numbers, so unlike the MVA recursion for
    multi-server and load-dependent stations (P(0) as one minus the rest) it
    stays accurate in saturation.  X(n) = G(n-1) / G(n); the marginal queue
    length of station k is f_k(j) G_{-k}(n-j) / G(n), with G_{-k} the
    constants of the network without k (prefix and suffix products)."""
    k_st = d.shape[0]
    n = n_users
    lf = _log_factors(d, z, n, kind, m, alpha)
    n_f = k_st + 1
    pre = np.empty((n_f + 1, n + 1))
    suf = np.empty((n_f + 1, n + 1))
    pre[0, :] = -np.inf
    pre[0, 0] = 0.0
    suf[n_f, :] = -np.inf
    suf[n_f, 0] = 0.0
    for k in range(n_f):
        pre[k + 1] = _log_conv(pre[k], lf[k], n)
    for k in range(n_f - 1, -1, -1):
        suf[k] = _log_conv(lf[k], suf[k + 1], n)
    lg = pre[n_f]
    x_out = np.empty(n)
    r_out = np.zeros((n, k_st))
    q_out = np.zeros((n, k_st))
    u_out = np.zeros((n, k_st))
    for t in range(1, n + 1):
        x_out[t - 1] = np.exp(lg[t - 1] - lg[t])
    for k in range(k_st):
        lgk = _log_conv(pre[k], suf[k + 1], n)
        for t in range(1, n + 1):
            x = x_out[t - 1]
            if kind[k] == _DELAY:
                qk = x * d[k]
            else:
                qk = 0.0
                for j in range(1, t + 1):
                    qk += j * np.exp(lf[k, j] + lgk[t - j] - lg[t])
            q_out[t - 1, k] = qk
            r_out[t - 1, k] = qk / x
            if kind[k] == _MULTI:
                u_out[t - 1, k] = x * d[k] / m[k]
            elif kind[k] == _LD:
                u_out[t - 1, k] = 1.0 - np.exp(lgk[t] - lg[t])
            else:
                u_out[t - 1, k] = x * d[k]
    return x_out, r_out, q_out, u_out


@njit(cache=True)
def _convolution_throughput(d, z, n_users, kind, m, alpha):
    """``X(1..N)`` of :func:`_convolution_kernel` alone: its prefix products of the
    normalising constants and nothing else (the same operations in the same order, so
    the same numbers; a third of the work or less)."""
    n = n_users
    lf = _log_factors(d, z, n, kind, m, alpha)
    lg = np.empty(n + 1)
    lg[:] = -np.inf
    lg[0] = 0.0
    for k in range(d.shape[0] + 1):
        lg = _log_conv(lg, lf[k], n)
    x_out = np.empty(n)
    for t in range(1, n + 1):
        x_out[t - 1] = np.exp(lg[t - 1] - lg[t])
    return x_out


def _result(x, r, q, u, z, d, m):
    n = np.arange(1, x.shape[0] + 1, dtype=np.int64)
    return MVAResult(n, x, r.sum(axis=1), r, q, u, z, d, m)


def exact_mva(demands, think_time: float, n_users: int, *, servers=None,
              load_dependent: Mapping[int, np.ndarray] | None = None) -> MVAResult:
    """Exact mean value analysis of a closed single-class product-form network.

    Parameters
    ----------
    demands : array_like of float
        Service demand ``D_k`` of each station per interaction (visits times
        mean service time), >= 0.
    think_time : float
        Mean think time ``Z`` of a user between interactions (a delay station
        outside the response time), >= 0.
    n_users : int
        Largest population ``N`` (>= 1); results are given for ``1..N``.
    servers : array_like of int, optional
        Per station: 1 = queueing station (default), ``m >= 2`` = ``m``
        identical servers with one queue, 0 = delay station.
    load_dependent : mapping of int to array_like, optional
        Station index -> ``alpha(1..N)``: the station serves at ``alpha(j)``
        times the rate ``1 / D_k`` when ``j`` users are there (``alpha(j) =
        min(j, m)`` is an ``m``-server station).  Overrides ``servers``.

    Returns
    -------
    MVAResult

    Notes
    -----
    Queueing stations use ``R_k(n) = D_k (1 + Q_k(n-1))``.  An ``m``-server
    station uses ``R_k(n) = D_k / m (1 + Q_k(n-1) + sum_{j=0}^{m-2} (m-1-j)
    P_k(j|n-1))`` with the marginal probabilities ``P_k(j|n) = D_k X(n) / j
    P_k(j-1|n-1)`` for ``j < m`` (Bolch et al., sec. 8.2.1), which only
    needs ``m`` probabilities per station.  General load-dependent stations
    use ``R_k(n) = sum_j j D_k / alpha(j) P_k(j-1|n-1)`` (Reiser and
    Lavenberg); computing ``P_k(0|n)`` as one minus the rest loses all
    accuracy near saturation (8 cores, N = 64: 145k/s for a true 400k/s), so a
    network with multi-server or load-dependent stations is solved by the
    convolution of its normalising constants instead, in logarithms, where
    every sum has positive terms (the same exact solution).  Product form requires FCFS
    stations to have exponential service times of the same mean for every
    visit; PS and delay stations may have any distribution.

    References
    ----------
    .. [1] M. Reiser and S. S. Lavenberg, "Mean-value analysis of closed
       multichain queuing networks", Journal of the ACM 27(2), 1980.
    .. [2] E. D. Lazowska, J. Zahorjan, G. S. Graham and K. C. Sevcik,
       "Quantitative System Performance", Prentice-Hall, 1984, ch. 6 and 20.
    .. [3] D. A. Menasce, V. A. F. Almeida and L. W. Dowdy, "Performance by
       Design", Prentice Hall, 2004, ch. 12 and 14.
    .. [4] G. Bolch, S. Greiner, H. de Meer and K. S. Trivedi, "Queueing
       Networks and Markov Chains", 2nd ed., Wiley, 2006, sec. 8.2.

    Examples
    --------
    >>> res = exact_mva([0.5, 1.0], 1.0, 2)
    >>> res.response_time.round(6).tolist()
    [1.5, 2.0]
    """
    d, z, n, m, kind, alpha = _check_network(demands, think_time, n_users, servers,
                                             load_dependent)
    if ((kind == _MULTI) | (kind == _LD)).any():
        x, r, q, u = _convolution_kernel(d, z, n, kind, m, alpha)
    else:
        x, r, q, u = _exact_mva_kernel(d, z, n, kind, m, alpha)
    return _result(x, r, q, u, z, d, m)


def exact_mva_throughput(demands, think_time: float, n_users: int, *, servers=None,
                         load_dependent: Mapping[int, np.ndarray] | None = None) -> np.ndarray:
    """The throughput of :func:`exact_mva` alone, ``X(1..N)``: the same numbers as
    ``exact_mva(...).throughput``, computed without the queue lengths, residence times
    and utilisations (for a network with a multi-server or load-dependent station, whose
    convolution solution gets the throughput from the normalising constants alone).

    Parameters and errors are those of :func:`exact_mva`.

    Returns
    -------
    numpy.ndarray of float, shape (n_users,)

    Examples
    --------
    >>> exact_mva_throughput([0.5, 1.0], 1.0, 2).round(6).tolist()
    [0.4, 0.666667]
    """
    d, z, n, m, kind, alpha = _check_network(demands, think_time, n_users, servers,
                                             load_dependent)
    if ((kind == _MULTI) | (kind == _LD)).any():
        return _convolution_throughput(d, z, n, kind, m, alpha)
    return _exact_mva_kernel(d, z, n, kind, m, alpha)[0]


# --------------------------------------------------------------------------
# Bard-Schweitzer approximate MVA
# --------------------------------------------------------------------------
@njit(cache=True)
def _schweitzer_kernel(dq, dd, z, n_users, tol, max_iter):
    """Per population: R_k = Dq_k (1 + (n-1)/n Q_k) + Dd_k, iterated to a fixed point."""
    k_st = dq.shape[0]
    x_out = np.zeros(n_users)
    r_out = np.zeros((n_users, k_st))
    q_out = np.zeros((n_users, k_st))
    iters = np.zeros(n_users, dtype=np.int64)
    r = np.zeros(k_st)
    nq = 0
    for k in range(k_st):
        if dq[k] > 0:
            nq += 1
    q = np.zeros(k_st)
    for n in range(1, n_users + 1):
        # start from the previous population's queues scaled up, or an even split
        for k in range(k_st):
            if n == 1:
                q[k] = 1.0 / max(nq, 1) if dq[k] > 0 else 0.0
            else:
                q[k] = q[k] * n / (n - 1)
        x = 0.0
        f = (n - 1.0) / n
        for it in range(max_iter):
            for k in range(k_st):
                r[k] = dq[k] * (1.0 + f * q[k]) + dd[k]
            x = n / (z + r.sum())
            delta = 0.0
            for k in range(k_st):
                qn = x * r[k]
                dlt = abs(qn - q[k])
                if dlt > delta:
                    delta = dlt
                q[k] = qn
            iters[n - 1] = it + 1
            if delta < tol * n:
                break
        x_out[n - 1] = x
        r_out[n - 1] = r
        q_out[n - 1] = q
    return x_out, r_out, q_out, iters


def schweitzer_mva(demands, think_time: float, n_users: int, *, servers=None,
                   tol: float = 1e-12, max_iter: int = 100_000) -> MVAResult:
    """Bard-Schweitzer approximate MVA (with Seidmann's multi-server approximation).

    Parameters
    ----------
    demands, think_time, n_users, servers
        As in :func:`exact_mva` (load-dependent stations are not supported).
    tol : float
        Stop when no queue length changes by more than ``tol * n``.
    max_iter : int
        Iterations allowed per population.

    Returns
    -------
    MVAResult
        For every ``n = 1..N`` the fixed point of ``R_k = D_k (1 + (n-1)/n
        Q_k)``, ``X = n / (Z + sum R_k)``, ``Q_k = X R_k``.

    Notes
    -----
    Schweitzer's approximation estimates the queue seen on arrival,
    ``Q_k(n-1)``, by ``(n-1)/n Q_k(n)``; exact for ``n = 1`` and
    asymptotically, typically within a few per cent in between.  An
    ``m``-server station of demand ``D`` is replaced (Seidmann et al.) by a
    queueing station of demand ``D / m`` in series with a delay of
    ``D (m - 1) / m``; its residence time and queue length are the sums of
    the two parts.

    References
    ----------
    .. [1] P. Schweitzer, "Approximate analysis of multiclass closed networks
       of queues", Int. Conf. on Stochastic Control and Optimization, 1979.
    .. [2] Y. Bard, "Some extensions to multiclass queueing network
       analysis", Performance of Computer Systems, North-Holland, 1979.
    .. [3] A. Seidmann, P. J. Schweitzer and S. Shalev-Oren, "Computerized
       closed queueing network models of flexible manufacturing systems",
       Large Scale Systems 12, 1987.
    .. [4] E. D. Lazowska, J. Zahorjan, G. S. Graham and K. C. Sevcik,
       "Quantitative System Performance", Prentice-Hall, 1984, sec. 6.4.2.
    """
    d, z, n, m, kind, _ = _check_network(demands, think_time, n_users, servers, None)
    tol = float(tol)
    if not tol > 0:
        raise ValueError(f"tol must be > 0; got {tol!r}")
    check_int("max_iter", max_iter, 1)
    mm = np.where(m >= 1, m, 1).astype(np.float64)
    dq = np.where(kind == _DELAY, 0.0, d / mm)
    dd = np.where(kind == _DELAY, d, d * (mm - 1.0) / mm)
    x, r, q, it = _schweitzer_kernel(dq, dd, z, n, tol, int(max_iter))
    if it.max() >= max_iter:
        raise RuntimeError(f"Schweitzer MVA did not converge in {max_iter} iterations")
    u = x[:, None] * np.where(kind == _DELAY, d, d / mm)[None, :]
    return _result(x, r, q, u, z, d, m)


# --------------------------------------------------------------------------
# bounds
# --------------------------------------------------------------------------
def asymptotic_bounds(demands, think_time: float, n, *, servers=None) -> pd.DataFrame:
    """Asymptotic (and pessimistic) bounds on throughput and response time.

    Parameters
    ----------
    demands, think_time, servers
        As in :func:`exact_mva`.
    n : int or array_like of int
        Populations (>= 1).

    Returns
    -------
    pandas.DataFrame
        Columns ``n, x_upper, x_lower, r_lower, r_upper``:
        ``X <= min(n / (D + Z), 1 / Dmax)``, ``R >= max(D, n Dmax - Z)``,
        ``R <= n D_q + D_delay`` and ``X >= n / (n D_q + D_delay + Z)``, with
        ``D`` the total demand, ``D_q`` that of the non-delay stations and
        ``Dmax`` the largest ``D_k / m_k``.  ``df.attrs["n_star"]`` is the
        knee ``(D + Z) / Dmax``.

    References
    ----------
    .. [1] E. D. Lazowska, J. Zahorjan, G. S. Graham and K. C. Sevcik,
       "Quantitative System Performance", Prentice-Hall, 1984, ch. 5.
    .. [2] R. R. Muntz and J. W. Wong, "Asymptotic properties of closed
       queueing network models", Princeton Conf. on Information Sciences and
       Systems, 1974.
    """
    d, z, _, m, kind, _ = _check_network(demands, think_time, 1, servers, None)
    nn = np.atleast_1d(np.asarray(n))
    if nn.ndim != 1 or nn.size == 0 or not np.all(np.isfinite(nn.astype(float))) \
            or np.any(nn != np.round(nn)) or nn.min() < 1:
        raise ValueError("n must be integers >= 1")
    nn = nn.astype(np.int64)
    total = d.sum()
    delay = kind == _DELAY
    dq = d[~delay].sum()
    dd = d[delay].sum()
    per_server = np.where(delay, 0.0, d / np.maximum(m, 1))
    dmax = per_server.max()
    with np.errstate(divide="ignore"):
        x_up = np.minimum(nn / (total + z), 1.0 / dmax if dmax > 0 else np.inf)
        r_lo = np.maximum(total, nn * dmax - z)
        r_up = nn * dq + dd
        x_lo = nn / (r_up + z)
    df = pd.DataFrame({"n": nn, "x_upper": x_up, "x_lower": x_lo, "r_lower": r_lo,
                       "r_upper": r_up})
    df.attrs["n_star"] = (total + z) / dmax if dmax > 0 else np.inf
    return df


# --------------------------------------------------------------------------
# Universal Scalability Law
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class USLFit:
    """Gunther's Universal Scalability Law ``X(N) = lambda N / (1 + sigma (N-1)
    + kappa N (N-1))`` fitted to throughput data.

    Attributes
    ----------
    lambda_ : float
        Throughput of one user (the ideal slope).
    sigma : float
        Contention (serial fraction), >= 0.
    kappa : float
        Coherency (crosstalk) penalty, >= 0.
    rmse : float
        Root mean square residual of the fit, in throughput units.
    """

    lambda_: float
    sigma: float
    kappa: float
    rmse: float = float("nan")

    def predict(self, n) -> np.ndarray:
        """Throughput at concurrency ``n`` (array_like)."""
        n = np.asarray(n, dtype=np.float64)
        return self.lambda_ * n / (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0))

    @property
    def n_peak(self) -> float:
        """Concurrency of peak throughput, ``sqrt((1 - sigma) / kappa)``."""
        if self.kappa <= 0 or self.sigma >= 1:
            return np.inf if self.sigma < 1 else 1.0
        return float(np.sqrt((1.0 - self.sigma) / self.kappa))


def usl_fit(n, throughput) -> USLFit:
    """Fit the Universal Scalability Law by bounded nonlinear least squares.

    Parameters
    ----------
    n : array_like of float
        Concurrency levels (users, threads), >= 1; at least 3 distinct.
    throughput : array_like of float
        Measured throughput at each level, > 0.

    Returns
    -------
    USLFit
        ``lambda_ > 0``, ``sigma >= 0``, ``kappa >= 0`` minimising the squared
        error of ``X(N)`` (scipy's trust-region reflective least squares).

    References
    ----------
    .. [1] N. J. Gunther, "Guerrilla Capacity Planning", Springer, 2007,
       ch. 4-6.
    .. [2] N. J. Gunther, "A simple capacity model of massively parallel
       transaction systems", CMG Conference, 1993.

    Examples
    --------
    >>> f = usl_fit([1, 2, 4, 8, 16], USLFit(100.0, 0.05, 0.002).predict([1, 2, 4, 8, 16]))
    >>> round(f.sigma, 6), round(f.kappa, 6)
    (0.05, 0.002)
    """
    nn = np.asarray(n, dtype=np.float64)
    x = np.asarray(throughput, dtype=np.float64)
    if nn.ndim != 1 or nn.shape != x.shape:
        raise ValueError(f"n and throughput must be one-dimensional of one length; "
                         f"got shapes {nn.shape} and {x.shape}")
    if not np.all(np.isfinite(nn)) or nn.min() < 1:
        raise ValueError("n must be finite and >= 1")
    if not np.all(np.isfinite(x)) or x.min() <= 0:
        raise ValueError("throughput must be finite and > 0")
    if np.unique(nn).size < 3:
        raise ValueError("n must hold at least 3 distinct concurrency levels")
    scale = x.max()
    y = x / scale
    i0 = int(np.argmin(nn))
    lam0 = y[i0] / nn[i0]

    def resid(theta):
        lam, s, k = theta
        return lam * nn / (1.0 + s * (nn - 1.0) + k * nn * (nn - 1.0)) - y

    def jac(theta):
        lam, s, k = theta
        den = 1.0 + s * (nn - 1.0) + k * nn * (nn - 1.0)
        g = lam * nn / den ** 2
        return np.column_stack([nn / den, -g * (nn - 1.0), -g * nn * (nn - 1.0)])

    best = None
    for s0, k0 in ((0.01, 1e-4), (0.1, 1e-3), (0.5, 0.01)):
        sol = optimize.least_squares(resid, [lam0, s0, k0], jac=jac,
                                     bounds=([1e-300, 0.0, 0.0], [np.inf, np.inf, np.inf]),
                                     method="trf", xtol=1e-15, ftol=1e-15, gtol=1e-15,
                                     max_nfev=10_000)
        if best is None or sol.cost < best.cost:
            best = sol
    lam, s, k = best.x
    rmse = float(np.sqrt(np.mean(best.fun ** 2)) * scale)
    return USLFit(float(lam * scale), float(s), float(k), rmse)
