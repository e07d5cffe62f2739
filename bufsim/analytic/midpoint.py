"""A characteristic-time model of InnoDB's midpoint LRU with ``innodb_old_blocks_time > 0``.

The workload is a mixture of an independent-reference *hot set* (page ``i`` is
requested as a Poisson process of rate ``lambda_i`` per second) and at most one
*periodic scan*: ``S`` pages read in order, one page every ``1/r`` seconds, each
page touched ``k`` times in a burst of length ``b = (k - 1) g`` (``g`` seconds per
get), with an idle gap ``G`` between passes; the period is ``P = S / r + G``.
This is the side load of document 001 of ``docs/documents.md`` (sysbench on a small
table while mysqldump reads a big one).

Derivation
----------
*Lists.*  The LRU of ``L`` pages has an old sublist of ``C_old`` pages and a young
sublist of ``C_young = L - C_old``.  InnoDB keeps the old length within +-20 of
``L * ratio / 1024`` (``ratio = pct * 1024 // 100``, at least 51), and every
promotion shortens the old list, so in steady state it sits at the bottom of the
band: ``C_old = min(L * ratio // 1024, L - 25) - 20`` (``capacity="innodb"``;
``"nominal"`` uses ``round(L * pct / 100)`` as :func:`~bufsim.analytic.che.innodb_midpoint_lru`).

*Old sublist, time-varying.*  A page enters the old head (a read, or a demotion
from the young tail) and is evicted after the pages ahead of it have left.  Each
entry into the old head pushes it one place, so with ``kappa(t)`` the entry rate
(misses + demotions) a page that entered at ``t`` and was not promoted leaves at
``e(t)`` with ``int_t^e(t) kappa = A``.  ``A`` (about ``C_old``) is found from the
occupancy condition below; ``T_old(phi) = e(phi) - phi`` depends on the phase
``phi`` within the scan period because ``kappa`` does: while the scan misses,
``kappa = r + M + D`` (``M`` the hot miss rate, ``D`` the promotion = demotion
rate); in the gap between passes, and while the scan walks over pages that are
still resident, only ``M + D``.  Without a scan, or with a scan that misses all
the time, ``T_old`` is one number as in Che's approximation.

*Hot pages.*  A page read on a miss gets its first-access time at the miss.  Gets
in ``[0, tau)`` (``tau = old_blocks_time``) count as "not made young" and do not
move it; the first get in ``[tau, T_old)`` promotes it; otherwise it is evicted at
``T_old``.  For Poisson gets

    q_n = P(promoted) = 1 - exp(-lambda (T_old - tau)^+)
    a   = E[time in old] = min(tau, T_old) + q_n / lambda

(not ``exp(-lambda tau) - exp(-lambda T_old)``: gets before ``tau`` do not end the
wait).  A young page is treated as in an LRU list (the quarter rule ignored): it
is demoted to the old head when not referenced for ``T_young``, spending
``(exp(lambda T_young) - 1) / lambda`` in young per entry.  A demoted page keeps its
old first-access time, so any get promotes it at once:
``q_d = 1 - exp(-lambda T_old)``, ``s_d = q_d / lambda`` in old.  The embedded
chain OUT -> OLD_NEW -> {YOUNG, OUT}, YOUNG -> OLD_DEM -> {YOUNG, OUT} visits YOUNG
``v = q_n / (1 - q_d)`` times per miss, so with ``Z`` the mean cycle length

    lambda Z = 1 + lambda a + v (exp(lambda T_young) - 1) + v lambda s_d
    hit = 1 - 1 / (lambda Z),   P(old) = (a + v s_d) / Z,   P(young) = v (exp(lambda T_young) - 1) / (lambda Z)

Phase dependence is averaged: ``q_n``, ``a``, ``q_d``, ``s_d`` are means over the
phase of the miss (Poisson misses are uniform in phase).  With ``tau = 0`` this is
exactly the two-list TTL model of Gast and Van Houdt.

*Scan pages.*  A scan page that missed at phase ``phi`` is promoted within its
burst iff ``b >= tau`` (at offset ``u``, the first get at least ``tau`` after the
first; ``u = g`` when ``tau = 0``); it then stays young until ``b + T_young`` and
old for ``T_old`` more.  Otherwise it stays old until ``T_old(phi)``.  The model
assumes it is gone when the next pass comes (``T_old + T_young < P``); every pass
costs one miss and ``k - 1`` hits.

*Occupancy.*  ``A`` solves ``sum_i P_i(old) + scan old pages = C_old`` and
``T_young`` solves ``sum_i P_i(young) + scan young pages = C_young``; the hot miss
rate ``M = sum_i 1/Z_i`` and ``D`` enter ``kappa``, so the whole system is iterated
to a fixed point.

*Frozen young list.*  If no scan page is promoted and the hot pages that can be
promoted at all (``q_n > 0``) are fewer than ``C_young``, the young equation has
no finite root: ``T_young = inf``.  Nothing pushes young pages out, so the young
list keeps whatever was there, and the result depends on history.  The model
takes the side-load history (``start="warm"``): the hot set was resident and
warm when the scan began, a share ``f0`` of it (the old sublist of an LRU of
``H`` pages) at the old tail.  The scan's first misses evict that block at rate
``m0 = r + M``; a block page is promoted if it is referenced before it reaches the
tail.  With ``n(t)`` block pages left and ``p_i(t)`` the probability that page
``i`` is still in the block, ``dp_i/dt = -(lambda_i + m0 / n) p_i``, and
``l_i = int (m0 / n) p_i dt`` is the probability that it is *lost*.  Protected
pages (young, or promoted in the transient) stay young for ever, except that
promoted pages beyond ``C_young`` circulate through the old tail and drop out at
rate ``eps_i = exp(-lambda T_old) / s_d``.  A lost page cycles OUT -> OLD_NEW -> OUT
(hit ratio ``lambda a / (1 + lambda a)``, a FIFO page) and comes back to young at
rate ``rho_i = q_n / (1/lambda + a)``.  The young slots not held by hot pages hold
*pinned* scan pages: the pages read while the scan filled the free list, which
the boundary turned young; they are hits on every pass, and each pass walks
over them without missing (a pause of ``n_pinned / r`` in ``kappa``, which is what
lets some hot pages outlive ``tau``).  In InnoDB each of those pinned pages
passes through ``LRU_old`` once per pass and is counted in ``PAGES_MADE_YOUNG``.
The hit ratios are averages over a time window after the scan began
(``window=(t_a, t_b)`` seconds) or the limit ``t -> inf`` (``window=None``).

*Demotion chains* (``recovery="net"``).  Every promotion makes the old list one
page too long, so ``buf_LRU_old_adjust_len`` moves ``LRU_old`` one page towards
the head: the young tail page becomes old.  While the young list is frozen the
pinned scan pages are moved to the head once per pass (the pass walks over them,
and they are older than ``W`` evictions), a young hot page at least every few
tens of milliseconds (its first get ``W`` evictions after its last move), so the
young tail is a pinned page that the pass has not reached yet while the pass walks
over the pinned stretch, and it is the scan's too while the scan is idle (the
pinned pages were moved a whole pass ago, longer than any hot page waits); at
other moments, just after the pinned stretch, the pinned pages were all just
moved and the hot pages not referenced since sit below them.  A lost page promoted
then demotes a young hot page; that page keeps its first-access time, so it is
promoted again on its next get within ``T_old`` (probability ``q_d``), demoting
the next hot page at the tail, or lost: with hundreds of hot pages below the
pinned block the chain ends in the loss of one hot page almost surely, and the
promotion is no recovery.  ``recovery="net"`` therefore counts, in ``rho``, only
promotions that fall in the pinned stretch ``[0, n_pinned / r)`` or the idle gap:
for a page read at phase ``phi`` the promotion time is ``phi + tau + X`` with
``X ~ Exp(lambda)``, ``X < T_old(phi) - tau``, and the net probability is the
part of ``q_n`` whose promotion time lands there (phase mean).  The counters keep
every promotion (``made_young`` uses the gross ``q_n``; the chains' own promotions
are not added).  ``recovery="gross"`` (the default, as before) counts every
promotion of a lost page as a recovery.

Counters.  ``made_young`` counts promotions of old pages per second;
``not_made_young`` counts gets of old pages within ``tau`` of their first access
(``1 + lambda min(tau, T_old)`` per OLD_NEW stay; ``min(k, ceil(tau/g))`` per scan
page and pass).

Limits
------
* One scan class; scans that survive a whole pass in the pool (``T_old(phi) > P``)
  are counted as hits but their promotion at the next pass is not modelled.
* The quarter ("young enough") rule, the warm-up rule, the free-page reserve of
  the 5.6+ page cleaner (give ``lru_pages``), read-ahead and multiple instances
  are ignored; the +-20 tolerance is the fixed offset above.
* In the frozen regime recovery of lost pages is assumed to find room in young
  (it displaces pinned scan pages), and circulating pages are not counted in
  the old occupancy.
* Hot misses are taken as uniform in the scan phase, and a demoted page's
  ``T_old`` as the phase average.
* Uniform hot set 40% of a 4000-page pool + continuous 5x scan, tau = 100 ms,
  pct 37 (benchmarks/midpoint_grid.py): ``T_old`` (~89 ms) is just below
  ``tau``; lost hot pages come back only when read just before the pause over
  the pinned scan pages, and most of those promotions happen right after the
  pause, starting demotion chains.  Hot hit ratio simulated 0.911; modelled
  0.972 with ``recovery="gross"``, 0.910 with ``"net"`` (the engine's hot young
  pages grow from 1,096 to 1,337 over 10 s, a net recovery of about 0.065 lost
  pages per lost page per second, about four times slower than ``"gross"``).
  ``"net"`` assumes every promotion outside the pinned stretch and the gap is
  cancelled by a chain, and does not model the chain's own timing.
* At pct 5, tau = 100 ms the same recovery is slightly underestimated (hot
  -0.020, Zipf -0.013); the LRU_old slot (a page there is never pushed by
  reads, which are inserted behind it) is not modelled.
* The old-blocks time is checked in whole milliseconds in InnoDB (up to 1 ms
  earlier than ``tau``); ignored.

References
----------
.. [1] H. Che, Y. Tung and Z. Wang, "Hierarchical Web caching systems: modeling,
   design and experimental results", IEEE JSAC 20(7), 2002.
.. [2] N. Gast and B. Van Houdt, "TTL approximations of the cache replacement
   algorithms LRU(m) and h-LRU", Performance Evaluation 117, 2017.
.. [3] MySQL 5.6 Reference Manual, "Making the Buffer Pool Scan Resistant".

The per-page quantities of the derivation (the old sublist's clock over a scan
period, the phase means, the chain's time fractions) are in
:mod:`bufsim.analytic.midpoint_terms`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from .._units import old_ratio
from .._validation import check_int
from .midpoint_terms import (Phase, TINY, block_transient, chain, hot_terms, net_promotion,
                             window_mean)

__all__ = ["ScanClass", "MidpointResult", "midpoint_lru", "old_capacity"]


@dataclass(frozen=True)
class ScanClass:
    """A periodic sequential scan.

    Parameters
    ----------
    pages : int
        Pages per pass (>= 1).
    gets_per_page : int
        Gets of each page, in one burst (>= 1).
    get_time : float
        Seconds per get of the scan (> 0); a page takes ``gets_per_page * get_time``.
    pass_gap : float
        Idle seconds between the end of a pass and the start of the next (>= 0).
    """

    pages: int
    gets_per_page: int
    get_time: float
    pass_gap: float = 0.0

    def __post_init__(self):
        check_int("pages", self.pages, 1)
        check_int("gets_per_page", self.gets_per_page, 1)
        if not (math.isfinite(self.get_time) and self.get_time > 0):
            raise ValueError(f"get_time must be a finite number > 0; got {self.get_time!r}")
        if not (math.isfinite(self.pass_gap) and self.pass_gap >= 0):
            raise ValueError(f"pass_gap must be a finite number >= 0; got {self.pass_gap!r}")

    @property
    def page_time(self) -> float:
        return self.gets_per_page * self.get_time

    @property
    def page_rate(self) -> float:
        """Pages per second while a pass runs."""
        return 1.0 / self.page_time

    @property
    def burst(self) -> float:
        """Seconds from the first to the last get of a page."""
        return (self.gets_per_page - 1) * self.get_time

    @property
    def period(self) -> float:
        return self.pages * self.page_time + self.pass_gap

    @property
    def get_rate(self) -> float:
        """Average gets per second over a period."""
        return self.pages * self.gets_per_page / self.period


@dataclass(frozen=True)
class MidpointResult:
    """The model's estimate.

    Attributes
    ----------
    hit_ratio : float
        Over all gets (hot and scan).
    class_hit_ratio : tuple of float
        ``(hot, scan)`` (scan ``nan`` without a scan).
    per_page_hit : numpy.ndarray
        Hit ratio of each hot page.
    t_old : float
        Mean ``T_old`` over the phase, seconds; ``t_old_range`` its min and max.
    t_young : float
        ``T_young`` in seconds (``inf`` when the young list is frozen).
    made_young, not_made_young : float
        Expected ``PAGES_MADE_YOUNG`` and ``PAGES_NOT_MADE_YOUNG`` per second.
    regime : str
        ``"lru"`` (``T_young`` finite) or ``"frozen"``.
    old_pages, young_pages : int
        ``C_old`` and ``C_young``.
    hot_young_pages, hot_old_pages, scan_pinned_pages : float
        Expected hot pages in each sublist and scan pages held in young.
    hot_miss_rate : float
        Hot misses per second.
    """

    hit_ratio: float
    class_hit_ratio: tuple
    per_page_hit: np.ndarray
    t_old: float
    t_old_range: tuple
    t_young: float
    made_young: float
    not_made_young: float
    regime: str
    old_pages: int
    young_pages: int
    hot_young_pages: float
    hot_old_pages: float
    scan_pinned_pages: float
    hot_miss_rate: float


def old_capacity(lru_pages: int, old_blocks_pct: int, capacity: str = "innodb") -> int:
    """Pages of the old sublist used by the model (see the module docstring)."""
    if capacity == "nominal":
        old = int(np.floor(lru_pages * old_blocks_pct / 100.0 + 0.5))
    elif capacity == "innodb":
        ratio = old_ratio(old_blocks_pct)
        old = min(lru_pages * ratio // 1024, lru_pages - 25) - 20
    else:
        raise ValueError(f"capacity must be 'innodb' or 'nominal'; got {capacity!r}")
    return int(min(max(old, 1), lru_pages - 1))


def midpoint_lru(hot_rates, scans: Sequence[ScanClass] = (), *, pool_pages: int,
                 old_blocks_pct: int = 37, old_blocks_time_ms: float = 1000,
                 lru_pages: int | None = None, capacity: str = "innodb",
                 start: str = "warm", window: tuple | None = None, tau0: str = "innodb",
                 recovery: str = "gross", phase_points: int = 256,
                 max_iter: int = 60) -> MidpointResult:
    """InnoDB's midpoint LRU with an old-blocks time, for a hot set plus a scan.

    Parameters
    ----------
    hot_rates : array_like of float
        Reference rate of every hot page, **per second** (>= 0).
    scans : sequence of ScanClass
        At most one periodic scan (empty: a pure IRM workload).
    pool_pages : int
        Buffer pool size in pages (>= 2; one instance).
    old_blocks_pct : int
        ``innodb_old_blocks_pct``, 5..95.
    old_blocks_time_ms : float
        ``innodb_old_blocks_time`` in ms (>= 0).
    lru_pages : int, optional
        Pages in the LRU list (default ``pool_pages``; smaller by the free-list
        reserve of a 5.6+ page cleaner).
    capacity : {"innodb", "nominal"}
        Old sublist size rule, see :func:`old_capacity`.
    start : {"warm"}
        History assumed when the young list freezes: the hot set resident and
        warm before the scan started.
    window : (float, float), optional
        Seconds after the scan started over which hit ratios are averaged in the
        frozen regime; None for the limit ``t -> inf``.
    tau0 : {"innodb", "midpoint"}
        What a miss does when ``old_blocks_time_ms == 0``.  ``"innodb"`` (as the
        engine and the server): the get that missed makes the page young at
        once, because a read leaves the page's ``freed_page_clock`` stamp at 0
        and the quarter rule then finds it "too old"; the LRU behaves as plain
        LRU.  ``"midpoint"``: the page waits in the old sublist for its next get,
        the two-list model of :func:`~bufsim.analytic.che.innodb_midpoint_lru`.
    recovery : {"gross", "net"}
        Frozen regime: the rate at which lost hot pages come back to young.
        ``"gross"``: every promotion of a lost page counts (``rho`` in the module
        docstring).  ``"net"``: only promotions while the young tail is a scan page
        count (the pass is walking over the pinned pages, or the scan is idle);
        a promotion at any other moment demotes a young hot page, which is promoted
        again or lost: a chain of demotions that ends in the loss of a hot page
        (see "Demotion chains" in the module docstring).
    phase_points : int
        Grid of phases over one scan period.
    max_iter : int
        Fixed-point iterations.

    Returns
    -------
    MidpointResult

    References
    ----------
    .. [1] N. Gast and B. Van Houdt, "TTL approximations of the cache replacement
       algorithms LRU(m) and h-LRU", Performance Evaluation 117, 2017.
    .. [2] H. Che, Y. Tung and Z. Wang, IEEE JSAC 20(7), 2002.
    """
    lam_all, pool_pages, old_blocks_pct, lru, scans, window = _checked(
        hot_rates, scans, pool_pages, old_blocks_pct, old_blocks_time_ms, lru_pages, start,
        window, tau0, recovery)
    scan = scans[0] if scans else None
    tau = old_blocks_time_ms / 1000.0
    miss_promotes = tau == 0 and tau0 == "innodb"
    c_old = old_capacity(lru, old_blocks_pct, capacity)
    c_young = lru - c_old

    # distinct rates with their multiplicities: sums over pages are ``x @ cnt``
    lam, inv, cnt = np.unique(lam_all[lam_all > 0], return_inverse=True, return_counts=True)
    cnt = cnt.astype(np.float64)
    H = int(cnt.sum())
    total_hot = float(lam @ cnt)
    ph = Phase(scan, phase_points)

    r, S, k, b, P, promote_scan, u = _scan_constants(scan, tau, miss_promotes)

    # everything fits: no evictions, no old-blocks checks (warm-up rule)
    if H + (S if scan is not None else 0) <= lru:
        per = np.ones(lam_all.shape[0])
        return MidpointResult(1.0, (1.0, 1.0 if scan else float("nan")), per, float("inf"),
                              (float("inf"), float("inf")), float("inf"), 0.0, 0.0, "fits",
                              c_old, c_young, float(H), 0.0, 0.0, 0.0)

    # ---------------- normal (LRU-like young list) regime ----------------
    solve_lru = _lru_solver(lam, cnt, ph, scan, promote_scan, r, S, b, P, u, tau,
                            miss_promotes, c_old, c_young, lru)
    st = _iterate_lru(solve_lru, total_hot, cnt, max_iter)
    promotable = float((st["qn"] > 1e-12) @ cnt)
    if not math.isinf(st["t2"]) and (promote_scan or promotable > c_young):
        return _finish_lru(st, lam, cnt, inv, lam_all, scan, tau, u, promote_scan, c_old, c_young)

    # ---------------- frozen young list ----------------
    return _solve_frozen(lam, cnt, inv, lam_all, scan, ph, tau, c_old, c_young, lru, window, max_iter,
                         recovery)


def _lru_solver(lam, cnt, ph, scan, promote_scan, r, S, b, P, u, tau, miss_promotes, c_old,
                c_young, lru):
    """The normal (LRU-like young list) regime of :func:`midpoint_lru`: a function of the
    hot pages' miss and demotion rates (``M``, ``D``) that solves the old and young
    sublists' times (the old one by its occupancy scale, the young one for each scale)
    and returns the state :func:`_iterate_lru` iterates on."""
    def scan_old_young(t1, t2):
        """Scan pages in old and young (time averages) when every page misses."""
        if scan is None:
            return 0.0, 0.0
        if promote_scan:
            t1m = float(np.mean(t1))
            young = S * (b - u + t2) / P
            old = S * (u + t1m) / P
        else:
            old = S * float(np.mean(np.minimum(t1, P))) / P
            young = 0.0
        return old, young

    def solve_lru(M, D):
        base = M + D
        scan_rate = r if scan is not None else 0.0
        # pure functions of their argument (M and D fixed): brentq evaluates the
        # bracket's ends again and the root's point was evaluated by it, so each value
        # is kept and never computed twice (the same numbers, less work)
        inner_at = {}

        def inner(a):
            if a in inner_at:
                return inner_at[a]
            t1 = ph.profile(a, base, scan_rate, 0.0, promote_scan)
            qn, aa, qd, sd, w = hot_terms(lam, t1, tau, miss_promotes)
            chain_at = {}

            def chain_of(t2):
                if t2 not in chain_at:
                    chain_at[t2] = chain(lam, qn, aa, qd, sd, t2)
                return chain_at[t2]

            def young_gap(log_t2):
                t2 = math.exp(log_t2)
                _, py, _, _ = chain_of(t2)
                return (py @ cnt) + scan_old_young(t1, t2)[1] - c_young

            lo, hi = -40.0, 40.0
            if young_gap(hi) < 0:
                t2 = math.inf
            elif young_gap(lo) > 0:
                t2 = math.exp(lo)
            else:
                t2 = math.exp(optimize.brentq(young_gap, lo, hi, xtol=1e-10))
            po, py, mr, pr = chain_of(t2)
            so, sy = scan_old_young(t1, t2)
            inner_at[a] = dict(t1=t1, t2=t2, qn=qn, a=aa, qd=qd, sd=sd, w=w, po=po, py=py,
                               mr=mr, pr=pr, so=so, sy=sy)
            return inner_at[a]

        def old_gap(log_a):
            st = inner(math.exp(log_a))
            return (st["po"] @ cnt) + st["so"] - c_old

        lo, hi = math.log(1e-3), math.log(1e3 * lru)
        la = optimize.brentq(old_gap, lo, hi, xtol=1e-10) if old_gap(lo) < 0 < old_gap(hi) \
            else (hi if old_gap(hi) <= 0 else lo)
        return inner(math.exp(la))

    return solve_lru


def _checked(hot_rates, scans, pool_pages, old_blocks_pct, old_blocks_time_ms, lru_pages,
             start, window, tau0, recovery):
    """:func:`midpoint_lru`'s arguments checked: the rates as an array, ``pool_pages``,
    ``old_blocks_pct``, the LRU list's pages, the scans as a list and the window."""
    lam_all = np.asarray(hot_rates, dtype=np.float64)
    if lam_all.ndim != 1 or not np.all(np.isfinite(lam_all)) or (lam_all < 0).any():
        raise ValueError("hot_rates must be a one-dimensional array of finite rates >= 0")
    pool_pages = check_int("pool_pages", pool_pages, 2, 2**40)
    old_blocks_pct = check_int("old_blocks_pct", old_blocks_pct, 5, 95)
    if not (isinstance(old_blocks_time_ms, (int, float, np.integer, np.floating))
            and math.isfinite(old_blocks_time_ms) and old_blocks_time_ms >= 0):
        raise ValueError(f"old_blocks_time_ms must be a number >= 0; got {old_blocks_time_ms!r}")
    lru = pool_pages if lru_pages is None else check_int("lru_pages", lru_pages, 2, pool_pages)
    scans = list(scans)
    if len(scans) > 1:
        raise ValueError("at most one scan class is supported (see Limits)")
    for s in scans:
        if not isinstance(s, ScanClass):
            raise ValueError(f"scans must hold ScanClass objects; got {type(s).__name__}")
    if tau0 not in ("innodb", "midpoint"):
        raise ValueError(f"tau0 must be 'innodb' or 'midpoint'; got {tau0!r}")
    if recovery not in ("gross", "net"):
        raise ValueError(f"recovery must be 'gross' or 'net'; got {recovery!r}")
    if start != "warm":
        raise ValueError(f"start must be 'warm'; got {start!r}")
    if window is not None:
        window = (float(window[0]), float(window[1]))
        if not (0 <= window[0] <= window[1]):
            raise ValueError(f"window must be (t_a, t_b) with 0 <= t_a <= t_b; got {window!r}")
    return lam_all, pool_pages, old_blocks_pct, lru, scans, window


def _scan_constants(scan, tau, miss_promotes):
    """The scan's page rate, pages, gets per page, burst and period, whether its pages
    are promoted and how long after its read a page's promoting get comes."""
    if scan is not None:
        r, S, k, b, P = scan.page_rate, scan.pages, scan.gets_per_page, scan.burst, scan.period
        if miss_promotes:
            promote_scan, u = True, 0.0
        elif tau == 0:
            promote_scan, u = k >= 2, scan.get_time
        else:
            j = math.ceil(tau / scan.get_time - 1e-12)
            promote_scan, u = j <= k - 1, j * scan.get_time
    else:
        r = S = k = b = 0.0
        P = 1.0
        promote_scan, u = False, 0.0
    return r, S, k, b, P, promote_scan, u


def _iterate_lru(solve_lru, total_hot, cnt, max_iter):
    """The normal regime's fixed point of the hot pages' miss and demotion rates
    (``M``, ``D``), damped by halves; the state of the last solve."""
    M = total_hot * 0.1
    D = 0.0
    st = None
    for _ in range(max_iter):
        st = solve_lru(M, D)
        if math.isinf(st["t2"]):
            break
        M_new = float((st["mr"] @ cnt))
        D_new = float((st["pr"] @ cnt))
        if abs(M_new - M) <= 1e-7 * (total_hot + 1) and abs(D_new - D) <= 1e-7 * (total_hot + 1):
            M, D = M_new, D_new
            break
        M, D = 0.5 * (M + M_new), 0.5 * (D + D_new)
    return st


def _finish_lru(st, lam, cnt, inv, lam_all, scan, tau, u, promote_scan, c_old, c_young):
    t1 = st["t1"]
    hit = 1.0 - st["mr"] / lam
    hot_gets = float(lam @ cnt)
    hot_hits = float((lam * hit) @ cnt)
    made_young = float((st["pr"] @ cnt))
    nmy = 0.0
    if tau > 0:
        nmy = float((st["mr"] * (1.0 + lam * st["w"])) @ cnt)
    scan_hit = float("nan")
    scan_gets = 0.0
    if scan is not None:
        k = scan.gets_per_page
        scan_gets = scan.get_rate
        scan_hit = (k - 1) / k
        pages_per_s = scan.pages / scan.period
        if promote_scan:
            made_young += pages_per_s
            if tau > 0:
                nmy += pages_per_s * (u / scan.get_time)
        elif tau > 0:
            nmy += pages_per_s * k
    total = hot_gets + scan_gets
    hr = (hot_hits + (scan_hit * scan_gets if scan is not None else 0.0)) / total
    per = np.ones(lam_all.shape[0])
    per[lam_all > 0] = hit[inv]
    return MidpointResult(float(hr), (hot_hits / hot_gets, scan_hit), per,
                          float(np.mean(t1)), (float(t1.min()), float(t1.max())), float(st["t2"]),
                          made_young, nmy, "lru", c_old, c_young, float((st["py"] @ cnt)),
                          float((st["po"] @ cnt)), 0.0, float((st["mr"] @ cnt)))


def _solve_frozen(lam, cnt, inv, lam_all, scan, ph, tau, c_old, c_young, lru, window, max_iter,
                  recovery="gross"):
    """T_young = inf: protected hot pages stay young; lost ones cycle through old."""
    H = float(cnt.sum())
    f0 = _warm_old_len(H, lru, c_old) / H if H else 0.0
    return _frozen_iterate(lam, cnt, inv, lam_all, scan, ph, tau, c_old, c_young, f0, window, max_iter,
                           recovery)


def _warm_old_len(H, lru, c_old):
    """Old pages of a warm LRU of ``H`` pages (no evictions yet): the target share
    plus the tolerance (reads push the old length to the top of the band)."""
    if H < 512:
        return 0.0
    share = (c_old + 20) / lru  # ratio / 1024 back from the capacity rule
    return float(min(H * share + 20, H - 25))


def _frozen_iterate(lam, cnt, inv, lam_all, scan, ph, tau, c_old, c_young, f0, window, max_iter,
                    recovery="gross"):
    H = float(cnt.sum())
    if scan is not None:
        r, S, k, P = scan.page_rate, scan.pages, scan.gets_per_page, scan.period
    else:
        r = S = k = 0
        P = 1.0
    M = 0.1 * float(lam @ cnt)  # not 0: T_old = inf is a spurious fixed point
    pinned = 0.0
    a_scale = float(c_old)
    st = {}
    net_share = np.ones(lam.shape)     # recovery="net": net / gross promotion probability
    for it in range(max_iter):
        # transient loss of the warm old block (first pass: the scan misses)
        m0 = r + M
        if H > c_old + c_young:
            # the hot set never fitted: the young list is full of hot pages
            lost0 = np.full(lam.shape, 1.0 - c_young / H)
        else:
            lost0 = block_transient(lam, cnt, f0, f0 * H, m0)
        protected0 = 1.0 - lost0
        excess = max(protected0 @ cnt - c_young, 0.0)

        def occupancy(a, exact=False):
            """T_old profile and the per-page terms; ``qn`` here is the probability of a
            promotion that brings a lost page back: with ``recovery="net"`` the gross one
            scaled by the net share of the last exact evaluation (inside the root search),
            or the net one itself (``exact``, which also updates that share)."""
            t1 = ph.profile(a, M, r, pinned, False)
            qn, aa, qd, sd, w = hot_terms(lam, t1, tau)
            if recovery == "net" and scan is not None:
                if exact:
                    qnet = net_promotion(lam, ph.phi, t1, tau, P, pinned * scan.page_time,
                                          (S - pinned) * scan.page_time)
                    net_share[:] = np.where(qn > 0, qnet / np.clip(qn, TINY, None), 0.0)
                    qn = qnet
                else:
                    qn = qn * net_share
            return t1, qn, aa, qd, sd, w

        def lost_of_t(qn, aa, qd, sd, t):
            """P(page lost at times t): (n, len(t))."""
            rho = qn / (1.0 / lam + aa)
            eps = np.where(qd < 1.0, (1.0 - qd) / np.clip(sd, TINY, None), 0.0)
            if excess > 0:
                share = protected0 * eps
                if share @ cnt <= 0:
                    share = protected0
                x = excess * share / max(share @ cnt, TINY)
                x = np.minimum(x, protected0)
                epsm = ((x * eps) @ cnt) / max(x @ cnt, TINY)
                extra = x[:, None] * (-np.expm1(-epsm * t[None, :]) if epsm > 0 else 1.0)
            else:
                extra = 0.0
            return np.clip((lost0[:, None] + extra) * np.exp(-rho[:, None] * t[None, :]), 0, 1)

        def lost_avg(qn, aa, qd, sd):
            lp = _lost_avg(qn, aa, qd, sd)
            prot = 1.0 - lp
            held = prot @ cnt
            if held > c_young:  # the young list holds at most C_young hot pages
                prot = prot * (c_young / held)
            return 1.0 - prot

        def _lost_avg(qn, aa, qd, sd):
            if window is None:
                rho = qn / (1.0 / lam + aa)
                t = np.array([1e12])
                return np.where(rho > 0, 0.0, lost_of_t(qn, aa, qd, sd, t)[:, 0])
            return window_mean(lambda t: lost_of_t(qn, aa, qd, sd, t), window)

        gap_at = {}     # this iteration's old_gap values: brentq evaluates lo and hi again

        def old_gap(log_a):
            if log_a in gap_at:
                return gap_at[log_a]
            t1, qn, aa, qd, sd, w = occupancy(math.exp(log_a))
            lp = lost_avg(qn, aa, qd, sd)
            hc_old = lam * aa / (1.0 + lam * aa)
            so = 0.0
            if scan is not None:
                so = (S - pinned) * float(np.mean(np.minimum(t1, P))) / P
            gap_at[log_a] = float((lp * hc_old) @ cnt) + so - c_old
            return gap_at[log_a]

        lo, hi = math.log(1e-3), math.log(1e4 * (c_old + c_young))
        g_lo, g_hi = old_gap(lo), old_gap(hi)
        la = optimize.brentq(old_gap, lo, hi, xtol=1e-10) if g_lo < 0 < g_hi else \
            (hi if g_hi <= 0 else lo)
        a_scale = math.exp(la)
        t1, qn, aa, qd, sd, w = occupancy(a_scale, exact=True)
        lp = lost_avg(qn, aa, qd, sd)
        hc = lam * aa / (1.0 + lam * aa)
        M_new = float((lp * lam * (1.0 - hc)) @ cnt)
        hot_young = float((1.0 - lp) @ cnt)
        pinned_new = float(min(max(c_young - min(hot_young, c_young), 0.0), S)) \
            if scan is not None else 0.0
        st = dict(t1=t1, qn=qn, a=aa, qd=qd, sd=sd, w=w, lp=lp, hc=hc)
        if abs(M_new - M) <= 1e-7 * (lam @ cnt + 1) and abs(pinned_new - pinned) < 1e-6:
            M, pinned = M_new, pinned_new
            break
        M, pinned = 0.5 * (M + M_new), 0.5 * (pinned + pinned_new)

    lp, hc, t1, w = st["lp"], st["hc"], st["t1"], st["w"]
    hit = 1.0 - lp * (1.0 - hc)
    hot_gets = float(lam @ cnt)
    hot_hits = float((lam * hit) @ cnt)
    cyc = 1.0 / lam + st["a"]
    miss_rate = lp / cyc
    qn_gross = hot_terms(lam, t1, tau)[0]   # every promotion is counted, net or not
    made_young = float((miss_rate * qn_gross) @ cnt)
    nmy = float((miss_rate * (1.0 + lam * w)) @ cnt) if tau > 0 else 0.0
    scan_hit = float("nan")
    scan_gets = 0.0
    if scan is not None:
        scan_gets = scan.get_rate
        resident = float(np.mean(np.minimum(t1, P) >= P))  # survives a whole pass
        misses_per_pass = (S - pinned) * (1.0 - resident)
        scan_hit = 1.0 - misses_per_pass / (S * k)
        made_young += pinned / P
        if tau > 0:
            j = min(k, math.ceil(tau / scan.get_time - 1e-12))
            nmy += (S - pinned) * j / P
    total = hot_gets + scan_gets
    hr = (hot_hits + (scan_hit * scan_gets if scan is not None else 0.0)) / total
    per = np.ones(lam_all.shape[0])
    per[lam_all > 0] = hit[inv]
    return MidpointResult(float(hr), (hot_hits / hot_gets, scan_hit), per, float(np.mean(t1)),
                          (float(t1.min()), float(t1.max())), float("inf"), made_young, nmy,
                          "frozen", c_old, c_young, float((1.0 - lp) @ cnt),
                          float((lp * hc) @ cnt), float(pinned), M)
