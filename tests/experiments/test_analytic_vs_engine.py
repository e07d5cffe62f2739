"""Che-type estimates (IRM) against the replay engine on Zipf traces.

``tests/analytic/test_che.py`` checks the estimates against tiny pure-Python simulators;
here the simulator is :func:`bufsim.replay`'s kernel itself, on the grid of
issue 4: Zipf ``alpha`` in {0.6, 0.9, 1.2} over 100,000 pages, 10 pool sizes
spread log-uniformly over 1%..50% of the pages (1000..50000), the rates being
the exact probabilities of the trace (:func:`bufsim.synthetic.zipf_probabilities`
with the trace's seed, so the same rank-to-page permutation).

Steady state.  The estimates describe a warm pool, so every replay runs in two
phases through :class:`bufsim.PoolState`: a warm-up prefix of ``3 T`` gets,
with ``T`` Che's characteristic time at the largest size (an LRU pool of ``C``
pages is full after about ``T`` gets: ``T`` solves "expected distinct pages in
``T`` gets = ``C``"), then 1,000,000 measured gets; the hit ratio is the
difference of the counters.  Warm-ups: 283,664, 613,244 and 3,460,800 gets for
alpha 0.6, 0.9, 1.2.

Sampling error.  The binomial standard error of a hit ratio over 10**6 gets is
at most ``0.5 / sqrt(10**6) = 0.0005``; batch means of the LRU hits over 100
batches of 10,000 gets gave 0.00016..0.00065 on this grid (hits are correlated,
by at most a factor 1.3 here), so the bound 0.005 is at least 7.7 standard
errors and 0.01 at least 15.

Findings (numbers in the assertion messages, see also the issue 4 report):

* Che's LRU estimate is within 0.0006 of the engine's ``lru`` at every point.
* :func:`bufsim.analytic.che.innodb_midpoint_lru` (the two-list LRU(m), a miss
  entering the old sublist and the *next* get promoting) is 0.002..0.085 above
  the engine's ``innodb`` with ``old_blocks_time = 0`` (27 of the 30 points
  miss 0.01; the gap shrinks as the pool grows): in InnoDB the get that
  misses is itself the page's first access and, with a time threshold of 0,
  makes the page young at once (``buf_page_get_gen``: read, then
  ``buf_page_make_young_if_needed``; the MySQL manual: "If the page was read
  because it was required by a user-initiated operation, the first access
  occurs immediately and the page is made young").  With ``old_blocks_time =
  0`` InnoDB is an LRU whose young pages are not moved on a hit until W
  evictions after their last move (the quarter rule); it is 0.0003..0.0019
  below Che's LRU estimate.  That acceptance check is kept as a strict xfail.
* :func:`bufsim.analytic.che.innodb_lru_t0` (that LRU with the quarter rule: a hit moves a
  page only once W evictions have passed since its last move) is within 0.0006 of the
  engine's ``innodb`` t=0 at every point, and predicts the rule's effect (replayed ``lru``
  minus replayed ``innodb`` t=0 on the same trace, 0.0002..0.0016) within 0.00015.
* The LRU(m) estimate does describe InnoDB when the missing get does not
  promote: with ``old_blocks_time = 1 ms`` and gets 1 ms apart, a page's first
  access leaves it old and any later access promotes it, and the estimate is
  within 0.0028 of the engine.
"""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

from bufsim.experiments import analytic_validation as validation

N_PAGES = 100_000
SEED = 7
ALPHAS = (0.6, 0.9, 1.2)
#: 1000, 1544, 2385, 3684, 5690, 8788, 13572, 20961, 32374, 50000
SIZES = tuple(int(s) for s in np.round(np.geomspace(0.01 * N_PAGES, 0.5 * N_PAGES, 10)))
MEASURED = 1_000_000
WARM_T = 3          # warm-up in multiples of Che's T at the largest size
LRU_TOL = 0.005
MIDPOINT_TOL = 0.01


@functools.cache
def grid(alpha: float) -> pd.DataFrame:
    """One row per pool size: the estimates and the replayed steady-state hit ratios."""
    df = validation.che_grid(alpha, SIZES, n_pages=N_PAGES, measured=MEASURED, warm_t=WARM_T,
                             seed=SEED)
    assert (df["measured_gets"] == MEASURED).all()
    assert (df["first_access_old_read_ahead"] == 0).all()
    return df


def _table(df: pd.DataFrame, est: str, sim: str) -> str:
    t = df[["size", est, sim]].assign(error=df[est] - df[sim])
    return t.to_string(index=False, float_format=lambda x: f"{x:.4f}")


@pytest.mark.parametrize("alpha", ALPHAS)
def test_che_lru_matches_engine_lru(alpha):
    df = grid(alpha)
    err = (df["che_lru"] - df["lru"]).abs()
    assert err.max() < LRU_TOL, f"alpha={alpha}\n{_table(df, 'che_lru', 'lru')}"


@pytest.mark.parametrize("alpha", ALPHAS)
def test_innodb_t0_lru_holds_the_whole_pool(alpha):
    """No free-list reserve in the t=0 replays: the model's capacity is ``pool_pages``."""
    df = grid(alpha)
    assert (df["t0_free"] == 0).all()
    assert (df["t0_database_pages"] == df["size"]).all()


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "issue 4 acceptance 1b as stated: innodb_midpoint_lru models a miss entering the old "
    "sublist and the next get promoting, but with old_blocks_time=0 the get that misses "
    "already makes the page young (buf_page_get_gen), so InnoDB t=0 is an LRU; errors "
    "0.002..0.085, 27 of 30 points above 0.01"))
@pytest.mark.parametrize("alpha", ALPHAS)
def test_midpoint_estimate_matches_innodb_t0(alpha):
    df = grid(alpha)
    err = (df["midpoint"] - df["innodb_t0"]).abs()
    assert err.max() < MIDPOINT_TOL, f"alpha={alpha}\n{_table(df, 'midpoint', 'innodb_t0')}"


@pytest.mark.parametrize("alpha", ALPHAS)
def test_innodb_t0_is_an_lru(alpha):
    """The get that misses promotes, so t=0 is LRU but for the quarter rule (<= 0.0019 here)."""
    df = grid(alpha)
    err = (df["che_lru"] - df["innodb_t0"]).abs()
    assert err.max() < LRU_TOL, f"alpha={alpha}\n{_table(df, 'che_lru', 'innodb_t0')}"


@pytest.mark.parametrize("alpha", ALPHAS)
def test_midpoint_estimate_matches_innodb_when_first_access_keeps_page_old(alpha):
    """LRU(m) with h = 2 is InnoDB when only a second, later access promotes."""
    df = grid(alpha)
    err = (df["midpoint"] - df["innodb_first_access_old"]).abs()
    assert err.max() < MIDPOINT_TOL, \
        f"alpha={alpha}\n{_table(df, 'midpoint', 'innodb_first_access_old')}"


@pytest.mark.parametrize("alpha", ALPHAS)
def test_quarter_rule_estimate_matches_innodb_t0(alpha):
    """innodb_lru_t0 within LRU_TOL of the t=0 replay, and the rule's replayed effect
    (lru - innodb_t0, same trace) within EFFECT_TOL of the estimated one."""
    df = grid(alpha)
    assert (df["quarter"] - df["innodb_t0"]).abs().max() < LRU_TOL, \
        f"alpha={alpha}\n{_table(df, 'quarter', 'innodb_t0')}"
    effect = (df["lru"] - df["innodb_t0"]) - (df["che_lru"] - df["quarter"])
    assert effect.abs().max() < EFFECT_TOL, f"alpha={alpha}\n{effect.to_string()}"


# ---- the quarter rule: innodb_lru_t0 against the engine, small and fast -------------------
#: 20,000 pages, Zipf(0.9), 1,000,000 measured gets; the replayed lru and innodb t=0 run on
#: the same trace, so their difference (the quarter rule's effect) has little sampling noise
QUARTER_SIZES = (1000, 4000, 10000)
#: |(lru - innodb_t0) replayed  -  (che_lru - quarter) estimated|; the effect itself is
#: 0.0011..0.0015 at pct 37 and larger at pct 5, so an estimate without the rule (quarter =
#: che_lru, effect 0) misses by more than this
EFFECT_TOL = 0.0005


@functools.cache
def quarter_grid(pct: int) -> pd.DataFrame:
    return validation.che_grid(0.9, QUARTER_SIZES, n_pages=20_000, measured=MEASURED, seed=SEED,
                               old_blocks_pct=pct)


@pytest.mark.parametrize("pct", [5, 37])
def test_quarter_rule_estimate_predicts_its_effect_on_innodb_t0(pct):
    """innodb_lru_t0 (an LRU whose hits move a page only W evictions after its last move)
    predicts how far InnoDB t=0 falls below LRU on the same trace; Che's LRU (effect 0)
    does not, and the estimate is nearer the replay than Che's."""
    df = quarter_grid(pct)
    replayed = df["lru"] - df["innodb_t0"]
    predicted = df["che_lru"] - df["quarter"]
    show = df[["size", "che_lru", "quarter", "lru", "innodb_t0"]].assign(
        replayed_effect=replayed, predicted_effect=predicted).to_string(index=False)
    assert (replayed > EFFECT_TOL + 0.0005).all(), f"the rule has no measurable effect\n{show}"
    assert ((replayed - predicted).abs() < EFFECT_TOL).all(), show
    assert ((df["quarter"] - df["innodb_t0"]).abs() < (df["che_lru"] - df["innodb_t0"]).abs()).all(), show
