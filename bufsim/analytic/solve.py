"""The package's one bracket-and-solve root finder for monotone functions.

Che's characteristic time, the contention cost fit and the side-load calibration
all solve ``fn(x) = target`` for a monotone ``fn`` on an interval (or above a lower
end): :func:`solve_monotone` brackets the root (doubling the upper end if asked),
optionally works in ``log x``, and hands the bracket to
:func:`scipy.optimize.brentq`.

References
----------
R. P. Brent, *Algorithms for Minimization without Derivatives*, Prentice-Hall,
1973, ch. 4 (the method behind :func:`scipy.optimize.brentq`).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import optimize

from .._validation import check_int, check_number

__all__ = ["solve_monotone"]


class _Close(Exception):
    """Raised from inside brentq when ``fn(x)`` is already within ``ftol``."""

    def __init__(self, x):
        self.x = x


def solve_monotone(fn: Callable[[float], float], target: float, lo: float,
                   hi: float | None = None, *, log: bool = True, xtol: float = 2e-12,
                   rtol: float = 4 * np.finfo(float).eps, ftol: float | None = None,
                   maxiter: int = 200) -> float:
    """``x`` in ``[lo, hi]`` with ``fn(x) = target`` for a monotone ``fn`` (either
    direction), by Brent's method.

    Parameters
    ----------
    fn : callable
        Monotone on the interval.
    target : float
    lo, hi : float
        The bracket.  ``hi=None``: ``hi = 2 lo, 4 lo, ...`` until ``fn`` crosses the
        target (at most 2,100 doublings); the bracket is then ``[lo, hi]``.
    log : bool
        Solve in ``u = log x`` (needs ``lo > 0``): ``xtol`` is then relative to ``x``.
    xtol, rtol : float
        :func:`scipy.optimize.brentq`'s tolerances on the solution (in ``u`` when
        ``log``).
    ftol : float, optional
        Stop as soon as ``|fn(x) - target| <= ftol |target|`` (``0 < ftol < 1``), and
        fail unless the answer is that close: for expensive or stepwise ``fn``.
    maxiter : int
        Iterations of brentq (1..10,000).

    Raises
    ------
    ValueError
        Bad arguments; ``fn`` does not cross ``target`` on the bracket; no ``x`` within
        ``ftol`` (or no convergence) after ``maxiter`` iterations.

    Examples
    --------
    >>> round(solve_monotone(lambda x: x * x, 9.0, 1e-3, 1e3), 9)
    3.0
    >>> round(solve_monotone(lambda x: 1e6 / x, 250.0, 10.0, 1e6, ftol=1e-6), 3)
    4000.0
    >>> round(solve_monotone(lambda t: t - 5.0, 0.0, 1.0, log=False), 12)
    5.0
    """
    target = check_number("target", target)
    lo = check_number("lo", lo)
    maxiter = check_int("maxiter", maxiter, 1, 10_000)
    if ftol is not None:
        ftol = check_number("ftol", ftol)
        if not 0 < ftol < 1:
            raise ValueError(f"ftol={ftol!r} is out of range; allowed: 0 < ftol < 1")
    if log and lo <= 0:
        raise ValueError(f"lo={lo!r} is out of range for log=True; allowed: > 0")

    def g(u):
        x = math.exp(u) if log else u
        d = fn(x) - target
        if ftol is not None and abs(d) <= ftol * abs(target):
            raise _Close(x)
        return d

    a = math.log(lo) if log else lo
    try:
        g_a = g(a)
        if hi is None:
            x_hi = max(lo, 1e-300) * 2.0
            for _ in range(2100):  # the bracket stays [lo, hi]
                b = math.log(x_hi) if log else x_hi
                g_b = g(b)
                if (g_b > 0) != (g_a > 0) or g_b == 0:
                    break
                x_hi *= 2.0
            else:
                raise ValueError(f"fn does not reach target={target!r} above lo={lo!r}")
        else:
            hi = check_number("hi", hi)
            if not lo < hi:
                raise ValueError(f"lo={lo!r}, hi={hi!r}: need lo < hi")
            b = math.log(hi) if log else hi
            g_b = g(b)
        if g_a != 0 and g_b != 0 and (g_a > 0) == (g_b > 0):
            xa, xb = (math.exp(a), math.exp(b)) if log else (a, b)
            raise ValueError(f"target={target!r} is not bracketed: fn({xa!r})={g_a + target!r}, "
                             f"fn({xb!r})={g_b + target!r}")
        try:
            u = optimize.brentq(g, a, b, xtol=xtol, rtol=rtol, maxiter=maxiter)
        except RuntimeError:
            raise ValueError(f"no convergence to target={target!r} after {maxiter} "
                             "iterations") from None
    except _Close as c:
        return float(c.x)
    x = math.exp(u) if log else u
    if ftol is not None:  # converged on x without fn(x) coming within ftol (a step)
        raise ValueError(f"no x with fn(x) within ftol={ftol} of {target} (closest {x!r}, "
                         f"fn={fn(x)!r})")
    return float(x)
