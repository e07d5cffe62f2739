"""The per-page quantities of the midpoint-LRU model (see
:mod:`bufsim.analytic.midpoint` for the derivation): the old sublist's clock over one
scan period (:class:`Phase`), the phase means of a hot page (:func:`hot_terms`,
:func:`net_promotion`), the time fractions of its chain (:func:`chain`), the loss
of the warm old block (:func:`block_transient`) and a mean over a time window."""
from __future__ import annotations

import numpy as np


TINY = 1e-300


class Phase:
    """Piecewise-constant entry rate into the old head over one period, and the
    resulting ``T_old(phi)`` on a grid of phases."""

    def __init__(self, scan, n_points: int):
        """``scan``: the :class:`~bufsim.analytic.midpoint.ScanClass`, or None."""
        self.scan = scan
        if scan is None:
            self.phi = np.zeros(1)
            self.period = 1.0
        else:
            self.period = scan.period
            self.phi = (np.arange(n_points) + 0.5) * (self.period / n_points)

    def profile(self, a, base, scan_rate, pinned, promote_scan):
        """T_old at every grid phase for occupancy scale ``a`` (pages), a constant
        entry rate ``base`` and a scan missing at ``scan_rate`` pages/s (doubled
        if its pages are promoted: each promotion demotes a young page) outside
        the pinned stretch and the gap."""
        if self.scan is None:
            return np.array([a / max(base, TINY)])
        sc = self.scan
        p_pin = pinned * sc.page_time
        p_miss = (sc.pages - pinned) * sc.page_time
        # breakpoints of one period: [0, p_pin) pinned, [p_pin, p_pin + p_miss) missing, gap
        edges = np.array([0.0, p_pin, p_pin + p_miss, self.period])
        rates = np.array([base, base + scan_rate * (2.0 if promote_scan else 1.0), base])
        seg = np.diff(edges) * rates
        per = seg.sum()
        if per <= 0:
            return np.full(self.phi.shape, np.inf)
        cum = np.concatenate([[0.0], np.cumsum(seg)])

        def K(t):
            n = np.floor(t / self.period)
            x = t - n * self.period
            return n * per + np.interp(x, edges, cum)

        def Kinv(y):
            n = np.floor(y / per)
            x = y - n * per
            # inverse of a nondecreasing piecewise-linear map; flat pieces map left
            t = np.empty_like(x)
            for j in range(3):
                lo, hi = cum[j], cum[j + 1]
                m = (x >= lo) & (x <= hi) if j == 2 else (x >= lo) & (x < hi)
                if rates[j] > 0 and edges[j + 1] > edges[j]:
                    t[m] = edges[j] + (x[m] - lo) / rates[j]
                else:
                    t[m] = edges[j]
            return n * self.period + t

        return Kinv(K(self.phi) + a) - self.phi


def hot_terms(lam, t1, tau, miss_promotes=False):
    """Phase means for rates ``lam`` (n,) and T_old values ``t1`` (g,).

    Returns q_n, a, q_d, s_d and w (time in old before tau) per page.  With
    ``miss_promotes`` a read page goes straight to the young head (q_n = 1, a = 0)."""
    # distinct rates and distinct T_old values only (a uniform hot set or a
    # scan without pauses collapses to one of each)
    lu, inv = np.unique(lam, return_inverse=True)
    tu, tc = np.unique(t1, return_counts=True)
    wt = tc / tc.sum()
    lt = lu[:, None]
    tt = tu[None, :]
    over = np.clip(tt - tau, 0.0, None)
    qn = (-np.expm1(-lt * over) @ wt)[inv]
    qd = (-np.expm1(-lt * tt) @ wt)[inv]
    w = np.full(lam.shape, float(np.minimum(tau, tu) @ wt))
    a = w + qn / lam
    sd = qd / lam
    if miss_promotes:
        qn, a, w = np.ones_like(lam), np.zeros_like(lam), np.zeros_like(lam)
    return qn, a, qd, sd, w


def net_promotion(lam, phi, t1, tau, period, p_pin, p_miss):
    """Phase mean, over the read phase ``phi`` (g,), of the probability that a hot page
    of rate ``lam`` (n,) read into old is promoted (first get in ``[tau, T_old)``) at a
    moment when the young tail is a scan page: while the pass walks over the pinned
    pages (``[0, p_pin)`` of the period, the ones not yet hit are the oldest in young)
    or in the idle gap (``[p_pin + p_miss, period)``).  See ``recovery="net"``."""
    lam = np.asarray(lam, dtype=np.float64)[:, None]
    # beyond 50 mean gaps of the slowest page a promotion has probability < e^-50
    horizon = 50.0 / float(np.min(lam))
    L = np.clip(np.minimum(t1 - tau, horizon), 0.0, None)           # promotion window
    start = phi + tau                                                # earliest promotion
    k_max = int(np.ceil((float(np.max(phi)) + tau + float(np.max(L))) / period)) + 1
    out = np.zeros(lam.shape[0])
    for k in range(k_max + 1):
        base = k * period
        for a, b in ((base, base + p_pin), (base + p_pin + p_miss, base + period)):
            if b <= a:
                continue
            lo = np.clip(a - start, 0.0, None)
            hi = np.minimum(b - start, L)
            ok = hi > lo          # only the phases whose window meets the interval
            if ok.any():
                out += (np.exp(-lam * lo[ok]) - np.exp(-lam * hi[ok])).sum(axis=1)
    return out / phi.shape[0]


def chain(lam, qn, a, qd, sd, t2):
    """Time fractions of the OUT/OLD_NEW/YOUNG/OLD_DEM chain."""
    stay = np.clip(1.0 - qd, TINY, None)
    v = qn / stay
    if np.isinf(t2):
        ey = np.where(v > 0, np.inf, 0.0)
    else:
        with np.errstate(over="ignore"):
            ey = v * np.expm1(np.minimum(lam * t2, 700.0))
    lz = 1.0 + lam * a + ey + v * lam * sd
    with np.errstate(invalid="ignore"):
        p_old = np.where(np.isinf(lz), 0.0, lam * (a + v * sd) / lz)
        p_young = np.where(np.isinf(lz), 1.0, ey / lz)
    miss_rate = np.where(np.isinf(lz), 0.0, lam / lz)
    prom_rate = np.where(np.isinf(lz), 0.0, v * lam / lz)
    return p_old, p_young, miss_rate, prom_rate


def block_transient(lam, cnt, f0, n0, m0, n_steps=2000):
    """Probability that each hot page of the warm old block is evicted (lost)
    before it is referenced, when evictions take the block at rate ``m0``."""
    if n0 <= 0 or m0 <= 0:
        return np.zeros_like(lam)
    p = np.full(lam.shape, f0)
    lost = np.zeros_like(lam)
    # time for the block to empty is at most n0 / m0
    dt = (n0 / m0) / n_steps * 1.2
    for _ in range(int(n_steps * 1.5)):
        n = p @ cnt
        if n < 1e-9 * n0:
            break
        h = m0 / n
        tot = lam + h
        dec = p * -np.expm1(-tot * dt)
        lost += dec * (h / tot)
        p = p - dec
    return lost


def window_mean(f, window):
    """Mean of f(t) (vectorised over a 1-D array of t) over the window."""
    ta, tb = window
    t = np.linspace(ta, tb, 65)
    return np.trapezoid(f(t), t, axis=-1) / (tb - ta) if tb > ta else f(np.array([ta]))[..., 0]
