"""Notebook 01's claims table (issue 41): each claim holds, or the document's own numbers
exclude it under the model family, with the computed range beside it.

The 13-query response-time claims are out-of-sample predictions: each configuration's
Cold and Run1-3 times are predicted by the CPU model of :mod:`bufsim.experiments.ssb_cpu`
with costs fitted on Q1.1 and the *other* four configurations only
(:func:`~bufsim.experiments.ssb_cpu_ranges.leave_one_out`, least squares: an estimator named
in advance), so no constant is fitted on a claim it is said to predict (``fitted`` is
False on every row).  Beside each prediction, the range of predictions over *every*
cost vector that keeps Q1.1 and the other configurations within their limits
(:func:`~bufsim.experiments.ssb_cpu_ranges.held_out_ranges`).  The verdict of one claim
(:func:`time_verdict`):

* **holds** when the least-squares prediction is within the stated limit of the
  document's figure (25% Run1-3, 35% Cold);
* **document_excludes** when it does not and the document's figure lies outside the
  range: no costs that reproduce the document's other numbers within the limits predict
  this figure, so the document's numbers are not all reproducible at once by any
  parameters of the model family; the range is written beside it (``computed_low``,
  ``computed_high`` in seconds, ``computed_range`` in words, which also says whether the
  claim's band is reached from the range's edge);
* **neither** otherwise: the figure lies inside the range (some costs fitting the rest
  predict it) but the named estimator misses it.  Holding it would mean choosing costs
  knowing the figure, so it is not counted as held.  Also neither when the rest cannot
  be fitted within the limits at all (the range is then over the rest's floor, not over
  the limits; ``range_limit`` of :func:`~bufsim.experiments.ssb_cpu_ranges.held_out_ranges`).
"""
from __future__ import annotations

import math

import pandas as pd

from .._units import NS_PER_S
from . import ssb as _ssb
from .ssb_cpu import LIMITS, phase_of
from .ssb_evidence import stats_refresh

__all__ = ["CLAIM_COLUMNS", "time_verdict", "time_claims", "counter_claims", "document_restart"]

#: the columns of notebook 01's claims table, in order
CLAIM_COLUMNS = ("claim", "reported", "simulated", "holds", "fitted", "document_excludes",
                 "computed_low", "computed_high", "computed_range")


def time_verdict(reported: float, predicted: float, low: float, high: float, limit: float,
                 *, over_limits: bool = True) -> tuple[bool, bool]:
    """``(holds, document_excludes)`` of one time claim (see the module's docstring).

    Parameters
    ----------
    reported : float
        The document's figure (seconds, > 0).
    predicted : float
        The out-of-sample prediction (seconds, > 0).
    low, high : float
        The range of predictions over every cost vector that keeps the other observations
        within their limits (seconds, ``0 <= low <= high``).
    limit : float
        The claim's relative limit (> 0): holds when ``|predicted / reported - 1| <= limit``.
    over_limits : bool
        False when the range is not over the limits (the rest has no costs within them):
        then nothing is excluded.
    """
    for name, v in (("reported", reported), ("predicted", predicted)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ValueError(f"{name} = {v!r}; allowed: a finite number of seconds > 0")
    if not (isinstance(limit, (int, float)) and math.isfinite(limit) and limit > 0):
        raise ValueError(f"limit = {limit!r}; allowed: a finite number > 0")
    if not (math.isfinite(low) and math.isfinite(high) and 0 <= low <= high):
        raise ValueError(f"range {low!r}..{high!r}; allowed: 0 <= low <= high, finite")
    holds = abs(predicted / reported - 1) <= limit
    excluded = (not holds) and over_limits and not (low <= reported <= high)
    return bool(holds), bool(excluded)


def _range_words(rep: float, low: float, high: float, lim: float, range_reported: float,
                 over_limits: bool, range_limit: str) -> str:
    if not over_limits:
        return (f"no costs keep the rest within the limits ({range_limit}); over those within "
                f"it: {low:.2f}..{high:.2f} s")
    where = "below" if rep < low else "above" if rep > high else "inside"
    txt = (f"costs >= 0 keeping Q1.1 and the other configurations within their limits predict "
           f"{low:.2f}..{high:.2f} s ({low / range_reported:.3f}..{high / range_reported:.3f} of the "
           f"run mean); the document's {rep:.2f} s lies {where} it")
    if where != "inside":
        # the part of the range inside the claim's band, as ratios to the figure
        a, b = max(low, rep * (1 - lim)) / rep, min(high, rep * (1 + lim)) / rep
        best = min(max(rep, low), high) / rep           # the range's end nearest the figure
        if a > b:
            txt += f"; nearest {best:.3f}: no such costs come within {lim:.0%}"
        elif low / rep >= 1 - lim and high / rep <= 1 + lim:
            txt += (f"; yet every one of these cost vectors predicts within the claim's +-{lim:.0%} "
                    f"({low / rep:.3f}..{high / rep:.3f}): the figure itself is out of reach, the "
                    f"band is not")
        else:
            txt += (f"; the claim's +-{lim:.0%} band is met by the part of the range nearest "
                    f"the figure ({a:.3f}..{b:.3f} of it), not by the figure itself")
    return txt


def time_claims(table: pd.DataFrame, loo: pd.DataFrame, ranges: pd.DataFrame,
                limits: dict[str, float] = LIMITS) -> pd.DataFrame:
    """The 13-query time claims, one per configuration and run, as out-of-sample predictions.

    Parameters
    ----------
    table : pandas.DataFrame
        The document's figures: ``config``, ``run`` (Cold, Run1, Run2, Run3), ``reported``
        (seconds).
    loo : pandas.DataFrame
        :func:`~bufsim.experiments.ssb_cpu_ranges.leave_one_out` with each configuration held out
        alone: ``config``, ``phase``, ``predicted``.
    ranges : pandas.DataFrame
        :func:`~bufsim.experiments.ssb_cpu_ranges.held_out_ranges` of the same configurations:
        ``config``, ``phase``, ``reported`` (the phase's figure the range is relative to),
        ``ratio_low``, ``ratio_high``, ``range_limit``.
    limits : dict
        Phase -> relative limit (``cold``, ``run1-3``).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CLAIM_COLUMNS`; ``simulated`` is the prediction, ``fitted`` False.

    Raises
    ------
    ValueError
        If a configuration and phase of ``table`` has no prediction or no range.
    """
    pred = loo.set_index(["config", "phase"])["predicted"]
    rng = ranges.set_index(["config", "phase"])
    rows = []
    for r in table.itertuples(index=False):
        phase = phase_of(r.run)
        key = (r.config, phase)
        if key not in pred.index or key not in rng.index:
            raise ValueError(f"config {r.config!r}, phase {phase!r}: no out-of-sample prediction "
                             f"or range; have {sorted(set(pred.index) & set(rng.index))}")
        g = rng.loc[key]
        low = float(g.ratio_low * g.reported)
        high = float(g.ratio_high * g.reported)
        lim = float(limits[phase])
        over = g.range_limit == "limits"
        rep, p = float(r.reported), float(pred.loc[key])
        holds, excl = time_verdict(rep, p, low, high, lim, over_limits=over)
        words = (f"least-squares prediction {p:.2f} s ({p / rep:.3f}), limit {lim:.0%}; "
                 + _range_words(rep, low, high, lim, float(g.reported), over, str(g.range_limit)))
        rows.append(dict(claim=f"{r.config} {r.run}: 13-query time predicted out of sample "
                               f"(costs fitted on Q1.1 and the other configurations) within {lim:.0%}",
                         reported=rep, simulated=p, holds=holds, fitted=False,
                         document_excludes=excl, computed_low=low, computed_high=high,
                         computed_range=words))
    return pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))


def counter_claims(q11: pd.DataFrame, ranges: dict | None = None,
                   replays: dict | None = None) -> pd.DataFrame:
    """The Q1.1 counter claims (within 10% where the document's count is >= 100).

    ``q11`` has ``plan``, ``old_blocks_time_ms``, ``metric``, ``reported``, ``simulated``,
    ``within_10pct`` (None where not judged: those rows are left out).  ``ranges`` maps
    ``(plan, old_blocks_time_ms, metric)`` to ``(low, high, words)``: the range of the count
    over every parameter (or history) of the model family that the document does not pin
    down; a row that does not hold is ``document_excludes`` when its figure lies outside it,
    and carries the range either way.  ``replays`` maps the same keys to ``(simulated,
    what)``: the replay of the document's own procedure for that run where it is not
    ``q11``'s (an empty pool), e.g. the restart the document's counters pin down; the row
    is then judged on ``simulated`` (within 10%) and its claim names ``what``.
    """
    ranges = dict(ranges or {})
    replays = dict(replays or {})
    rows = []
    for r in q11[q11.within_10pct.notna()].itertuples(index=False):
        key = (r.plan, int(r.old_blocks_time_ms), r.metric)
        sim, what = float(r.simulated), ""
        holds = bool(r.within_10pct)
        if key in replays:
            sim, what = replays[key]
            sim = float(sim)
            if not (math.isfinite(sim) and sim >= 0):
                raise ValueError(f"replays[{key!r}] simulated = {sim!r}; allowed: a count >= 0")
            holds = abs(sim / float(r.reported) - 1) <= 0.10
            what = f" ({what})"
        low = high = math.nan
        words, excl = "", False
        if key in ranges:
            low, high, words = ranges[key]
            excl = (not holds) and not (low <= float(r.reported) <= high)
        rows.append(dict(claim=f"Q1.1 {r.plan} t={r.old_blocks_time_ms}: {r.metric} within 10%{what}",
                         reported=float(r.reported), simulated=sim, holds=bool(holds),
                         fitted=False, document_excludes=bool(excl), computed_low=low,
                         computed_high=high, computed_range=words))
    return pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))


def document_restart(ssb, calib, counters: pd.DataFrame, *, plan: str = "date_first",
                     old_blocks_time_ms: int = 1000, seeds=range(10),
                     idle_ns: int = 2 * NS_PER_S) -> pd.DataFrame:
    """Q1.1 after the restart the document's own statistics pin down, one row per seed.

    The pages read before the statement are the run's ``NUMBER_PAGES_READ`` at the last
    statistics refresh (:func:`~bufsim.experiments.ssb_evidence.stats_refresh`: 263 in
    each of 000's restarted runs, with nothing made young or not made young then): the
    server's own start-up reads, replayed before the tables' statistics
    (:func:`~bufsim.experiments.ssb.q11_after_restart` with ``earlier_pages`` = that
    count).  ``seeds`` draw the statistics' random leaves (InnoDB's own draw, which the
    document cannot give); ``idle_ns`` is the gap before the statement.  Nothing is
    fitted.  Returns :func:`~bufsim.experiments.ssb.q11_after_restart`'s rows.

    Raises
    ------
    ValueError
        If the run has no statistics refresh in ``counters`` (rates all 0), or ``seeds``
        is empty.
    """
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    ref = stats_refresh(counters).set_index(["plan", "old_blocks_time_ms"])
    key = (plan, int(old_blocks_time_ms))
    if key not in ref.index:
        raise ValueError(f"run {key}: the counters give no statistics refresh before it "
                         f"(have {sorted(ref.index)})")
    n = int(ref.loc[key, "NUMBER_PAGES_READ_at_refresh"])
    return pd.DataFrame([_ssb.q11_after_restart(ssb, plan, int(old_blocks_time_ms), calib,
                                                earlier_pages=n, seed=s, idle_ns=idle_ns)
                         for s in seeds])
