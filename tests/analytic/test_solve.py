"""bufsim.analytic.solve_monotone: the package's one root finder (Brent's method)."""
import math

import numpy as np
import pytest

from bufsim.analytic import solve_monotone


@pytest.mark.parametrize("fn, target, lo, hi, log, root", [
    (lambda v: 3 * v + 1, 100.0, 1.0, 1000.0, True, 33.0),          # increasing
    (lambda v: 1e6 / v, 250.0, 10.0, 1e6, True, 4000.0),            # decreasing
    (lambda v: v ** 3, 2.0, -5.0, 5.0, False, 2 ** (1 / 3)),         # through zero, linear
    (lambda v: math.exp(v / 1e3), 5.0, 1.0, None, True, 1e3 * math.log(5.0)),  # grown bracket
])
def test_closed_form_roots(fn, target, lo, hi, log, root):
    assert solve_monotone(fn, target, lo, hi, log=log) == pytest.approx(root, rel=1e-9)


def test_ftol_stops_early_within_the_tolerance_and_counts_fewer_calls():
    calls = []

    def fn(x):
        calls.append(x)
        return math.sqrt(x)

    x = solve_monotone(fn, 30.0, 1.0, 1e6, ftol=1e-3)
    assert abs(math.sqrt(x) / 30 - 1) <= 1e-3
    n_ftol = len(calls)
    calls.clear()
    solve_monotone(fn, 30.0, 1.0, 1e6)
    assert n_ftol < len(calls)


def test_grown_bracket_matches_an_explicit_one_to_the_bit():
    """The upper end doubled from lo gives brentq the bracket [lo, hi] (Che's solver
    before the shared one: its estimates are unchanged to the last bit)."""
    f = lambda t: 1 - np.exp(-t / 7.0) - 0.3   # noqa: E731
    kw = dict(log=False, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    grown = solve_monotone(f, 0.0, 1.0, None, **kw)
    assert grown == solve_monotone(f, 0.0, 1.0, 4.0, **kw)
    assert grown == pytest.approx(-7.0 * math.log(0.7), rel=1e-14)


@pytest.mark.parametrize("kw, match", [
    (dict(lo=5.0, hi=1.0), "need lo < hi"),
    (dict(lo=0.0, hi=10.0), "lo=0.0 is out of range for log=True"),
    (dict(lo=1.0, hi=2.0), "not bracketed"),
    (dict(lo=1.0, hi=10.0, ftol=0.0), "ftol=0.0 is out of range"),
    (dict(lo=1.0, hi=10.0, maxiter=0), "maxiter=0 is out of range"),
    (dict(lo=float("nan"), hi=10.0), "lo is NaN"),
])
def test_bad_input_is_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        solve_monotone(lambda v: v, 5.0, **kw)


def test_a_step_never_within_ftol_is_an_error():
    step = lambda v: 0.0 if v < 3 else 10.0   # noqa: E731
    with pytest.raises(ValueError, match="ftol"):
        solve_monotone(step, 5.0, 1.0, 10.0, ftol=1e-3)
    with pytest.raises(ValueError, match="no convergence"):
        solve_monotone(step, 5.0, 1.0, 10.0, maxiter=3)
