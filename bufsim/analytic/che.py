"""Characteristic-time (Che-type) estimates of hit ratios under the IRM.

Under the independent reference model page ``k`` is requested with rate
``lambda_k``.  Che's approximation gives a cache of ``C`` pages one
characteristic time ``T``: an LRU page stays resident for ``T`` after its last
request, so it is resident with probability ``1 - exp(-lambda_k T)`` and ``T``
solves ``sum_k (1 - exp(-lambda_k T)) = C``.  FIFO and RANDOM replacement have
``lambda_k T / (1 + lambda_k T)`` instead (Gelenbe, 1973; Martina et al., 2014).

The segmented LRU with ``h`` lists, LRU(m) of Gast and Van Houdt, has one time
per list.  A miss inserts the page at the head of list 1; a hit in list
``i < h`` moves the page to the head of list ``i + 1``, a hit in list ``h`` to
the head of list ``h``; the tail of list ``i + 1`` is pushed to the head of list
``i`` and the tail of list 1 is evicted.  In the TTL approximation a page left
alone for ``T_i`` in list ``i`` drops to list ``i - 1``, which gives

    pi_{k,i} = prod_{s<=i} (exp(lambda_k T_s) - 1)
               / (1 + sum_{j=1..h} prod_{s<=j} (exp(lambda_k T_s) - 1))

for the probability that page ``k`` is in list ``i``, with ``sum_k pi_{k,i} =
m_i`` for every list.  InnoDB's midpoint LRU with ``innodb_old_blocks_time = 0``
is the case ``h = 2``: list 1 is the old sublist, list 2 the young one.

InnoDB with ``innodb_old_blocks_time = 0`` is neither: the get that misses is
the page's first access and moves it to the LRU head at once, so it is an LRU
but for the quarter ("young enough") rule, :func:`innodb_lru_t0`:

*Source.*  ``buf_page_get_gen`` reads a missing page (``buf_page_init`` leaves
its ``freed_page_clock`` at 0; ``buf_LRU_add_block`` puts it after ``LRU_old``
without a stamp) and then calls ``buf_page_make_young_if_needed`` for the same
get; with ``old_blocks_time = 0`` ``buf_page_peek_if_too_old`` only asks
``buf_page_peek_if_young``: the page stays put while
``(buf_pool->freed_page_clock & ((1 << 31) - 1)) < bpage->freed_page_clock + W``
with ``W = curr_size * (BUF_LRU_OLD_RATIO_DIV - LRU_old_ratio) /
(BUF_LRU_OLD_RATIO_DIV * 4)``, a quarter of the young sublist's target length
(buf0buf.ic, MySQL 5.5-8.0).  ``freed_page_clock`` counts the instance's
evictions; ``buf_LRU_add_block_low`` stamps a page with it when it puts the
page at the head.  A read page's stamp is 0, so once ``W`` pages have been
evicted the missing get moves it to the head, stamped.

*Model.*  With the pool full, every miss evicts one page, so ``W`` evictions
take ``w = W / m`` gets, ``m`` the miss probability per get.  In the TTL
approximation a page put at the head at time 0 is evicted at ``T`` unless
moved again; its gets in ``[0, w)`` hit without moving it; the first get in
``[w, T)`` moves it to the head (a new epoch).  An epoch ends in eviction with
probability ``e_k = exp(-lambda_k (T - w)^+)`` and lasts
``E_k = min(w, T) + (1 - e_k) / lambda_k`` in the pool on average, so a stay
lasts ``E_k / e_k`` and, the gets being Poisson,

    h_k = lambda_k E_k / (e_k + lambda_k E_k),

``T`` solving ``sum_k h_k = C`` and ``w = W / m`` with
``m = sum_k p_k (1 - h_k)``.  ``W = 0`` gives Che's LRU; ``w -> inf`` gives
FIFO.  ``w - W / m(w)`` is increasing (a longer window moves fewer pages, the
cache is nearer FIFO and misses more), so the root is unique.

Rates may be probabilities or rates per unit time: the characteristic times are
returned in the units of ``1 / rates`` (number of gets when the rates are
per-get probabilities that sum to one).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy import optimize

from .._units import old_ratio
from .._validation import check_int
from .solve import solve_monotone

__all__ = ["CheResult", "che_lru", "fifo_random", "segmented_lru", "innodb_midpoint_lru",
           "innodb_lru_t0", "rates_from_trace"]


@dataclass(frozen=True)
class CheResult:
    """An estimate under the independent reference model.

    Attributes
    ----------
    characteristic_time : float or numpy.ndarray
        ``T`` (LRU, FIFO/RANDOM), or ``T_1..T_h`` for a segmented LRU, in the
        units of ``1 / rates``; ``inf`` when every requested page fits.
    hit_ratio : float
        ``sum_k p_k h_k`` with ``p_k`` the normalised rates.
    per_page_hit : numpy.ndarray
        ``h_k``: the probability that page ``k`` is resident (the hit ratio of
        its requests).
    list_probability : numpy.ndarray or None
        Segmented LRU: ``(n_pages, h)`` probabilities that page ``k`` is in
        list ``i + 1``.
    window : float or None
        :func:`innodb_lru_t0`: ``w``, the time after a move to the head during
        which gets do not move the page (``W`` evictions), in the units of ``T``.
    """

    characteristic_time: float | np.ndarray
    hit_ratio: float
    per_page_hit: np.ndarray
    list_probability: np.ndarray | None = None
    window: float | None = None


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------
def _check_rates(rates) -> tuple[np.ndarray, float]:
    """Return the normalised rates (float64, summing to 1) and their sum."""
    r = np.asarray(rates, dtype=np.float64)
    if r.ndim != 1 or r.shape[0] < 2:
        raise ValueError("rates must be one-dimensional with at least 2 pages; "
                         f"got shape {r.shape}")
    if not np.all(np.isfinite(r)) or r.min() < 0:
        raise ValueError("rates must be finite and >= 0")
    total = float(r.sum())
    if total <= 0:
        raise ValueError("rates must have a positive sum")
    return r / total, total


def _saturated(p, total, h=None):
    """Every requested page fits: hit ratio 1, infinite times."""
    hit = (p > 0).astype(np.float64)
    t = np.inf if h is None else np.full(h, np.inf)
    return CheResult(t, 1.0, hit, None)


def _solve_increasing(f, lo):
    """The root of an increasing ``f`` with ``f(lo) <= 0`` (the upper end doubled until
    ``f`` is positive), to full precision."""
    return solve_monotone(f, 0.0, lo, None, log=False, xtol=1e-300,
                          rtol=4 * np.finfo(float).eps, maxiter=500)


# --------------------------------------------------------------------------
# LRU and FIFO / RANDOM
# --------------------------------------------------------------------------
def che_lru(rates, capacity: int) -> CheResult:
    """Che's approximation of an LRU cache under the independent reference model.

    Parameters
    ----------
    rates : array_like of float
        Reference rate or probability of each page (>= 0, positive sum).
    capacity : int
        Cache size in pages, in ``1..n_pages-1``.

    Returns
    -------
    CheResult
        ``T`` solving ``sum_k (1 - exp(-lambda_k T)) = capacity``, hit ratio
        ``sum_k p_k (1 - exp(-lambda_k T))`` and per-page hit probabilities.

    Notes
    -----
    The left side is increasing in ``T`` and bounded by ``T`` (in gets), so
    ``T`` is bracketed from ``capacity`` upwards and found with Brent's method.
    If ``capacity`` is at least the number of pages with a positive rate, every
    page fits and ``T = inf``.

    References
    ----------
    .. [1] H. Che, Y. Tung and Z. Wang, "Hierarchical Web caching systems:
       modeling, design and experimental results", IEEE JSAC 20(7), 2002.
    .. [2] C. Fricker, P. Robert and J. Roberts, "A versatile and accurate
       approximation for LRU cache performance", ITC 24, 2012.

    Examples
    --------
    >>> r = che_lru(np.ones(10), 5)
    >>> round(r.hit_ratio, 12)
    0.5
    """
    p, total = _check_rates(rates)
    capacity = check_int("capacity", capacity, 1, p.shape[0] - 1)
    if capacity >= np.count_nonzero(p):
        return _saturated(p, total)
    pp = p[p > 0]

    def f(t):
        return -np.expm1(-pp * t).sum() - capacity

    t = _solve_increasing(f, float(capacity))
    hit = -np.expm1(-p * t)
    return CheResult(t / total, float(np.dot(p, hit)), hit)


def fifo_random(rates, capacity: int) -> CheResult:
    """Characteristic-time approximation of a FIFO or RANDOM cache (IRM).

    Parameters
    ----------
    rates : array_like of float
        Reference rate or probability of each page (>= 0, positive sum).
    capacity : int
        Cache size in pages, in ``1..n_pages-1``.

    Returns
    -------
    CheResult
        ``T`` solving ``sum_k lambda_k T / (1 + lambda_k T) = capacity``; page
        ``k`` is resident with probability ``lambda_k T / (1 + lambda_k T)``.

    Notes
    -----
    For RANDOM replacement under the IRM this is exact in the limit of many
    pages (Gelenbe); FIFO has the same hit ratio under the IRM.

    References
    ----------
    .. [1] E. Gelenbe, "A unified approach to the evaluation of a class of
       replacement algorithms", IEEE Transactions on Computers C-22(6), 1973.
    .. [2] V. Martina, M. Garetto and E. Leonardi, "A unified approach to the
       performance analysis of caching systems", IEEE INFOCOM 2014.
    """
    p, total = _check_rates(rates)
    capacity = check_int("capacity", capacity, 1, p.shape[0] - 1)
    if capacity >= np.count_nonzero(p):
        return _saturated(p, total)
    pp = p[p > 0]

    def f(t):
        x = pp * t
        return (x / (1.0 + x)).sum() - capacity

    t = _solve_increasing(f, float(capacity))
    x = p * t
    hit = x / (1.0 + x)
    return CheResult(t / total, float(np.dot(p, hit)), hit)


# --------------------------------------------------------------------------
# segmented LRU, LRU(m)
# --------------------------------------------------------------------------
@njit(cache=True)
def _page_lists(lam, t, row):
    """Fill ``row[0..h-1]`` with the list probabilities of one page; return pi_0."""
    h = t.shape[0]
    # log of prod_{s<=j} (exp(a_s) - 1), a_s = lam * T_s, and a log-sum-exp
    acc = 0.0
    mx = 0.0
    for j in range(h):
        a = lam * t[j]
        acc += a + np.log(-np.expm1(-a))
        row[j] = acc
        if acc > mx:
            mx = acc
    z = np.exp(-mx)
    for j in range(h):
        row[j] = np.exp(row[j] - mx)
        z += row[j]
    for j in range(h):
        row[j] /= z
    return np.exp(-mx) / z


@njit(cache=True)
def _lru_m_system(lam, wt, t, occ, jac, with_jac):
    """Expected occupancy of every list, and (optionally) its Jacobian in ``log T``.

    Page ``k`` (rate ``lam[k]``) stands for ``wt[k]`` pages of that rate.

    ``jac[i, s] = d occ_i / d log T_s = sum_k pi_{k,i} g_{k,s}
    (1[s <= i] - sum_{j >= s} pi_{k,j})`` with ``g = a / (1 - exp(-a))``.
    """
    h = t.shape[0]
    row = np.empty(h)
    tail = np.empty(h)
    g = np.empty(h)
    occ[:] = 0.0
    jac[:, :] = 0.0
    for k in range(lam.shape[0]):
        _page_lists(lam[k], t, row)
        w = wt[k]
        for i in range(h):
            row[i] *= w
            occ[i] += row[i]
        if not with_jac:
            continue
        acc = 0.0
        for j in range(h - 1, -1, -1):
            acc += row[j] / w
            tail[j] = acc
        for s in range(h):
            a = lam[k] * t[s]
            g[s] = 1.0 + 0.5 * a if a < 1e-8 else a / (-np.expm1(-a))
        for i in range(h):
            for s in range(h):
                ind = 1.0 if s <= i else 0.0
                jac[i, s] += row[i] * g[s] * (ind - tail[s])


@njit(cache=True)
def _lru_m_pages(lam, t, out):
    for k in range(lam.shape[0]):
        _page_lists(lam[k], t, out[k])


_U_MAX = 600.0     # |log T| bound: exp stays finite


def _compress(pp, n_top=256, n_groups=256):
    """A small weighted stand-in for the rates: the ``n_top`` largest rates
    as they are, the rest as ``n_groups`` groups of consecutive sorted rates
    at their mean (for starting values only)."""
    if pp.shape[0] <= n_top + n_groups:
        return pp, np.ones(pp.shape[0])
    q = np.sort(pp)[::-1]
    rest = q[n_top:]
    edges = np.unique(np.linspace(0, rest.shape[0], n_groups + 1).astype(np.int64))
    cnt = np.diff(edges).astype(np.float64)
    mean = np.add.reduceat(rest, edges[:-1]) / cnt
    return np.concatenate([q[:n_top], mean]), np.concatenate([np.ones(n_top), cnt])


def _solve_hybr(pp, wt, m, t0):
    """Powell's hybrid method on ``log T``; None unless it converged."""
    occ = np.empty(m.shape[0])
    jac = np.empty((m.shape[0], m.shape[0]))
    kept = {}       # fun is pure: the check at the solution finds the value hybr computed

    def fun(u):
        key = np.asarray(u, dtype=np.float64).tobytes()
        if key not in kept:
            _lru_m_system(pp, wt, np.exp(np.clip(u, -_U_MAX, _U_MAX)), occ, jac, True)
            kept[key] = (occ / m - 1.0, jac / m[:, None])
        f, j = kept[key]
        return f.copy(), j.copy()

    sol = optimize.root(fun, np.log(t0), jac=True, method="hybr", options={"xtol": 1e-13})
    if not np.all(np.abs(sol.x) < _U_MAX):
        return None
    f, _ = fun(sol.x)
    if np.max(np.abs(f)) > 1e-9:
        return None
    return np.exp(sol.x)


class _NoBracket(Exception):
    """A level found no root within ``|log T| <= _U_MAX``: its residual stays
    of sign ``sign`` there (the outer trial value is too far out)."""

    def __init__(self, level, sign):
        super().__init__(f"segmented LRU: could not bracket T_{level + 1}")
        self.sign = sign


def _solve_nested(pp, wt, m, t0):
    """Nested Brent solves on ``log T``.

    Level ``i`` (0-based) sets ``T_{i+1}`` so that lists ``i+1..h`` hold
    ``m_{i+1} + ... + m_h`` pages, given the outer ``T`` and solving the
    inner levels for every trial value.  Given the inner constraints, the
    occupancy of lists ``i+1..h`` goes from 0 (``T_{i+1} -> 0`` empties
    them) to ``m_i + ... + m_h`` (``T_{i+1} -> inf`` empties list ``i``), so
    every level has a root.  When an outer trial value is so extreme that an
    inner level has no root within floating-point range, the inner
    residual's sign is passed up as the outer one.
    """
    h = m.shape[0]
    occ = np.empty(h)
    jac = np.empty((1, 1))
    t = t0.copy()
    cum = np.cumsum(m[::-1])[::-1]

    def solve(level):
        def f(u):
            t[level] = np.exp(u)
            if level > 0:
                try:
                    solve(level - 1)
                except _NoBracket as e:
                    return e.sign * cum[level]
            _lru_m_system(pp, wt, t, occ, jac, False)
            return occ[level:].sum() - cum[level]

        u0 = np.log(t[level])
        lo, hi = u0 - 0.5, u0 + 0.5
        flo = f(lo)
        while flo > 0 and lo > -_U_MAX:
            lo = max(lo - 2.0 * (u0 - lo), -_U_MAX)
            flo = f(lo)
        if flo > 0:
            raise _NoBracket(level, 1.0)
        fhi = f(hi)
        while fhi <= 0 and hi < _U_MAX:
            hi = min(hi + 2.0 * (hi - u0), _U_MAX)
            fhi = f(hi)
        if fhi <= 0:
            raise _NoBracket(level, -1.0)
        u = optimize.brentq(f, lo, hi, xtol=1e-12, rtol=4 * np.finfo(float).eps)
        f(u)

    try:
        solve(h - 1)
    except _NoBracket as e:  # pragma: no cover - the outermost level always brackets
        raise RuntimeError(str(e)) from None
    return t


def segmented_lru(rates, capacities: Sequence[int], *, method: str = "hybr") -> CheResult:
    """TTL approximation of a segmented LRU with ``h`` lists (LRU(m)), IRM.

    Parameters
    ----------
    rates : array_like of float
        Reference rate or probability of each page (>= 0, positive sum).
    capacities : sequence of int
        ``m_1..m_h``, each >= 1, with ``sum(m)`` in ``1..n_pages-1``.  List 1
        receives the misses; a hit in list ``i`` promotes to list ``i + 1``.
    method : {"hybr", "nested"}
        ``"hybr"``: Powell's hybrid method on ``log T`` with the analytic
        Jacobian, started from the nested solution for 512 representative
        rates (falls back to ``"nested"`` if it does not converge);
        ``"nested"``: one Brent solve per list, nested (``T_h`` outermost,
        ``T_1`` innermost matching the total occupancy); slow for ``h > 2``.

    Returns
    -------
    CheResult
        ``characteristic_time`` holds ``T_1..T_h`` and ``list_probability``
        the ``(n_pages, h)`` probabilities of being in each list.

    Notes
    -----
    In list ``i`` a page that is not requested for ``T_i`` drops to list
    ``i - 1`` (list 0 = evicted); a request in list ``i`` takes it to list
    ``min(i + 1, h)`` and restarts the clock.  The time-average of this
    birth-death chain gives the product form in the module docstring, and the
    ``T_i`` are found from ``sum_k pi_{k,i} = m_i``.  ``h = 1`` is Che's LRU
    approximation.

    References
    ----------
    .. [1] N. Gast and B. Van Houdt, "Transient and steady-state regime of a
       family of list-based cache replacement algorithms", ACM SIGMETRICS 2015.
    .. [2] N. Gast and B. Van Houdt, "TTL approximations of the cache
       replacement algorithms LRU(m) and h-LRU", Performance Evaluation 117,
       2017.
    .. [3] H. Che, Y. Tung and Z. Wang, "Hierarchical Web caching systems:
       modeling, design and experimental results", IEEE JSAC 20(7), 2002.
    """
    p, total = _check_rates(rates)
    try:
        m = np.array([int(c) for c in capacities], dtype=np.int64)
    except (TypeError, ValueError):
        raise ValueError(f"capacities must be a sequence of integers; got {capacities!r}") from None
    if m.ndim != 1 or m.size == 0:
        raise ValueError("capacities must be a non-empty sequence of integers")
    for i, c in enumerate(capacities):
        check_int(f"capacities[{i}]", c, 1, p.shape[0] - 1)
    check_int("sum(capacities)", int(m.sum()), 1, p.shape[0] - 1)
    if method not in ("hybr", "nested"):
        raise ValueError(f"method must be 'hybr' or 'nested'; got {method!r}")
    h = m.shape[0]
    if m.sum() >= np.count_nonzero(p):
        return _saturated(p, total, h)
    pp = p[p > 0]
    mf = m.astype(np.float64)
    # start: each list a share of the LRU time of the whole cache, refined by
    # the nested solution for a compressed set of rates
    t_lru = che_lru(pp, int(m.sum())).characteristic_time
    t0 = t_lru * mf / mf.sum()
    ones = np.ones(pp.shape[0])
    if method == "nested":
        t = _solve_nested(pp, ones, mf, t0)
    else:
        lam_c, w_c = _compress(pp)
        if lam_c.shape[0] < pp.shape[0]:
            t0 = _solve_nested(lam_c, w_c, mf, t0)
        t = _solve_hybr(pp, ones, mf, t0)
        if t is None:
            t = _solve_nested(pp, ones, mf, t0)
    lists = np.zeros((p.shape[0], h))
    _lru_m_pages(p, t, lists)
    lists[p == 0] = 0.0
    hit = lists.sum(axis=1)
    return CheResult(t / total, float(np.dot(p, hit)), hit, lists)


def innodb_midpoint_lru(rates, pool_pages: int, old_blocks_pct: int = 37) -> CheResult:
    """Two-list estimate of InnoDB's midpoint-insertion LRU when a page's *next* access promotes it (IRM).

    Parameters
    ----------
    rates : array_like of float
        Reference rate or probability of each page (>= 0, positive sum).
    pool_pages : int
        Buffer pool size in pages, in ``2..n_pages-1``.
    old_blocks_pct : int
        ``innodb_old_blocks_pct``, in ``5..95`` (MySQL's range).

    Returns
    -------
    CheResult
        :func:`segmented_lru` with two lists: list 1 the old sublist of
        ``round(pool_pages * old_blocks_pct / 100)`` pages, list 2 the young
        sublist of the rest.

    Notes
    -----
    A page read on a miss enters the head of the old sublist, its next get
    makes it young (head of the LRU list), the young tail becomes old as the
    old sublist is rebalanced, and the old tail is evicted: the two-list
    LRU(m) of Gast and Van Houdt.  That is InnoDB with ``old_blocks_time > 0``
    when re-references come after the threshold (tests/experiments/test_analytic_vs_engine.py:
    within 0.0028 of the engine at 30 points).  It is **not** InnoDB with
    ``old_blocks_time = 0``: there the get that misses is the page's first
    access and already makes it young (``buf_page_get_gen`` reads, then
    ``buf_page_make_young_if_needed``; spec §3.1, §3.3), so InnoDB is an LRU
    but for the quarter rule; use :func:`innodb_lru_t0` (the quarter rule
    included, within 0.0006 of the engine), :func:`che_lru` (within 0.0019) or
    :func:`bufsim.analytic.midpoint.midpoint_lru`.  Ignored here: the
    tolerance of ``BUF_LRU_OLD_TOLERANCE`` around the old-sublist target, the
    rule that leaves a young page in place while it is in the first quarter
    of the young sublist (``buf_page_peek_if_too_old``), the absence of an old
    sublist below ``BUF_LRU_OLD_MIN_LEN`` pages, the free-page reserve, read
    ahead and non-IRM locality (a run of gets of one page counts as that many
    independent requests).

    References
    ----------
    .. [1] N. Gast and B. Van Houdt, "Transient and steady-state regime of a
       family of list-based cache replacement algorithms", ACM SIGMETRICS 2015.
    .. [2] N. Gast and B. Van Houdt, "TTL approximations of the cache
       replacement algorithms LRU(m) and h-LRU", Performance Evaluation 117,
       2017.
    .. [3] MySQL 5.6 Reference Manual, "Making the Buffer Pool Scan Resistant"
       (``innodb_old_blocks_pct``, ``innodb_old_blocks_time``).
    """
    n = _check_rates(rates)[0].shape[0]
    pool_pages = check_int("pool_pages", pool_pages, 2, max(2, n - 1))
    old_blocks_pct = check_int("old_blocks_pct", old_blocks_pct, 5, 95)
    old = int(np.floor(pool_pages * old_blocks_pct / 100.0 + 0.5))
    old = min(max(old, 1), pool_pages - 1)
    return segmented_lru(rates, [old, pool_pages - old])


def _quarter_hits(p, t, w):
    """``h_k`` of :func:`innodb_lru_t0` for rates ``p`` (all > 0), ``T`` and ``w``."""
    x = max(t - w, 0.0)
    px = -p * x
    e = np.exp(px)
    pe = p * min(w, t) - np.expm1(px)     # lambda_k E_k
    return pe / (e + pe)


def innodb_lru_t0(rates, pool_pages: int, old_blocks_pct: int = 37) -> CheResult:
    """InnoDB's LRU with ``innodb_old_blocks_time = 0``, quarter rule included (IRM).

    Parameters
    ----------
    rates : array_like of float
        Reference rate or probability of each page (>= 0, positive sum).
    pool_pages : int
        Pages of the instance (``curr_size``), all in the LRU list (no free-page
        reserve), in ``2..n_pages-1``.
    old_blocks_pct : int
        ``innodb_old_blocks_pct``, in ``5..95``: sets ``W`` through ``LRU_old_ratio``.

    Returns
    -------
    CheResult
        ``T``, ``window`` (``w = W / m``), the hit ratio and per-page hit
        probabilities of the model in the module docstring: every miss puts the
        page at the head; a hit moves it to the head only once ``W`` pages have
        been evicted since it was last put there.

    Notes
    -----
    ``W = pool_pages * (1024 - LRU_old_ratio) // 4096`` as the engine's
    ``PoolConfig.young_window``.  The old sublist plays no part: with a threshold
    of 0 ``buf_page_peek_if_too_old`` does not look at the old flag, and the
    missing get moves every read page to the head (the warm-up, before the
    first eviction, is not modelled).  One instance; the ``BUF_LRU_OLD_MIN_LEN``
    rule does not matter because no page stays old.

    References
    ----------
    .. [1] H. Che, Y. Tung and Z. Wang, IEEE JSAC 20(7), 2002.
    .. [2] C. Fricker, P. Robert and J. Roberts, "A versatile and accurate
       approximation for LRU cache performance", ITC 24, 2012 (the TTL view).
    .. [3] MySQL 5.6 source, storage/innobase/include/buf0buf.ic
       (``buf_page_peek_if_young``, ``buf_page_peek_if_too_old``) and
       buf/buf0buf.cc (``buf_page_get_gen``, ``buf_page_make_young_if_needed``).

    Examples
    --------
    >>> r = innodb_lru_t0(np.arange(1, 2001) ** -0.9, 400)
    >>> r.hit_ratio < che_lru(np.arange(1, 2001) ** -0.9, 400).hit_ratio
    True
    """
    p, total = _check_rates(rates)
    pool_pages = check_int("pool_pages", pool_pages, 2, max(2, p.shape[0] - 1))
    old_blocks_pct = check_int("old_blocks_pct", old_blocks_pct, 5, 95)
    big_w = pool_pages * (1024 - old_ratio(old_blocks_pct)) // 4096
    if pool_pages >= np.count_nonzero(p):
        return _saturated(p, total)
    pp = p[p > 0]
    cap = float(pool_pages)

    last = [cap]
    kept = {}

    def hits(t, w):
        """:func:`_quarter_hits` of ``pp``, each ``(t, w)`` computed once: the solves
        below ask for the same points again (bracket ends, roots, ``w`` twice)."""
        if (t, w) not in kept:
            kept[(t, w)] = _quarter_hits(pp, t, w)
        return kept[(t, w)]

    def t_of(w):
        """T with sum_k h_k = C for the window w (occupancy increases with T); the
        bracket starts at half the last root (the occupancy is at most T, so T >= C)."""
        lo = max(cap, 0.5 * last[0])
        if hits(lo, w).sum() > cap:
            lo = cap
        last[0] = solve_monotone(lambda t: hits(t, w).sum(), cap, lo, None, xtol=1e-13)
        return last[0]

    def excess(w):
        t = t_of(w)
        m = float(pp @ (1.0 - hits(t, w)))
        return w - big_w / m

    if big_w == 0:
        w = 0.0
    else:
        hi = big_w / float(pp @ np.exp(-pp * t_of(0.0)))   # W / m of Che's LRU: m(w) >= it
        for _ in range(60):
            if excess(hi) >= 0:
                break
            hi *= 2.0
        w = solve_monotone(excess, 0.0, 0.0, hi, log=False, xtol=1e-9 * hi)
    t = t_of(w)
    hit = np.zeros(p.shape[0])
    hit[p > 0] = hits(t, w)
    return CheResult(t / total, float(np.dot(p, hit)), hit, None, w / total)


def rates_from_trace(chunks, n_pages: int, *, weight: str = "gets") -> np.ndarray:
    """Per-page reference probabilities of a trace (IRM estimate).

    Parameters
    ----------
    chunks : tuple, chunk, or iterable of chunks
        As in :func:`bufsim.analytic.mrc.exact_mrc`.
    n_pages : int
        Length of the result; every page index must be below it.
    weight : {"gets", "events"}
        Count every get (default) or every run of gets of one page once.

    Returns
    -------
    numpy.ndarray of float64
        Counts per page divided by their total.

    References
    ----------
    .. [1] E. G. Coffman and P. J. Denning, "Operating Systems Theory",
       Prentice-Hall, 1973 (the independent reference model).
    """
    from .mrc import check_n_pages, iter_events

    n_pages = check_n_pages(n_pages)
    if weight not in ("gets", "events"):
        raise ValueError(f"weight must be 'gets' or 'events'; got {weight!r}")
    acc = np.zeros(n_pages, dtype=np.float64)
    for p, c in iter_events(chunks):
        if p.size and p.max() >= n_pages:
            raise ValueError(f"page index {int(p.max())} is out of range; "
                             f"allowed: 0..{n_pages - 1}")
        acc += np.bincount(p, weights=c if weight == "gets" else None, minlength=n_pages)
    total = acc.sum()
    if total <= 0:
        raise ValueError("the trace has no gets")
    return acc / total
