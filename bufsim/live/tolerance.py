"""Issue 16's tolerances, and the reading of a live grid's rows against them.

The live tier (:func:`bufsim.live.validation.run_grid`) sets the server's counter deltas
beside a replay's, one row per configuration, plan, phase and counter.  This module
says which counters are compared (:data:`COMPARED`, and the phase-end gauges
:data:`GAUGES_COMPARED`), whether a row holds (:func:`holds`: pages read within 5 %,
pages made young / not made young within 10 % or within 50 pages where the server's
count is under 200, NUMBER_PAGES_GET within 2 %), and, over repeated server runs of a
row (:func:`bufsim.live.validation.repeat_runs`, :func:`bufsim.live.validation.recheck_misses`),
whether the replay is within the server's own spread (:func:`repeatability`), which
runs hold a row that misses (:func:`missing_runs`) and the claims that follow
(:func:`recheck_claims`).  Nothing here runs a server or a replay.
"""
from __future__ import annotations

import pandas as pd

__all__ = ["COMPARED", "GAUGES_COMPARED", "TOLERANCE", "SMALL", "holds", "tolerance_band",
           "one_count_holds_all", "repeatability", "missing_runs", "recheck_claims"]

#: the counters compared, in INNODB_BUFFER_POOL_STATS names
COMPARED = ("NUMBER_PAGES_READ", "NUMBER_PAGES_GET", "PAGES_MADE_YOUNG", "PAGES_NOT_MADE_YOUNG")
#: gauges compared at the end of each phase with ``run_grid(gauges=True)`` (issue 38):
#: the pages in the LRU the run leaves (after the cleaner's last batch), and how many of
#: them are in its old sublist (0: none exists)
GAUGES_COMPARED = ("DATABASE_PAGES", "OLD_DATABASE_PAGES")
#: relative tolerance, and the absolute one below ``small`` reported pages (issue 16; the
#: gauges take made young's: 10 %, or 50 pages where the server's count is under 200)
TOLERANCE = {"NUMBER_PAGES_READ": (0.05, None), "NUMBER_PAGES_GET": (0.02, None),
             "PAGES_MADE_YOUNG": (0.10, 50), "PAGES_NOT_MADE_YOUNG": (0.10, 50),
             "DATABASE_PAGES": (0.10, 50), "OLD_DATABASE_PAGES": (0.10, 50)}
SMALL = 200


def holds(metric: str, reported: float, simulated: float) -> bool:
    """Whether ``simulated`` is within issue 16's tolerance of ``reported`` for ``metric``."""
    rel, absolute = TOLERANCE[metric]
    diff = abs(simulated - reported)
    if absolute is not None and reported < SMALL:
        return bool(diff <= absolute)
    return bool(diff <= rel * reported)

def tolerance_band(metric: str, reported: float) -> tuple[float, float]:
    """The simulated counts that :func:`holds` accepts against ``reported``: (lo, hi)."""
    rel, absolute = TOLERANCE[metric]
    if absolute is not None and reported < SMALL:
        return reported - absolute, reported + absolute
    return reported - rel * reported, reported + rel * reported


def one_count_holds_all(metric: str, reported) -> bool:
    """Whether any single count is within issue 16's tolerance of every one of the
    server's ``reported`` counts (their tolerance bands meet): if not, no deterministic
    replay, whatever its mechanisms, can hold every run of that row."""
    bands = [tolerance_band(metric, float(r)) for r in reported]
    return max(b[0] for b in bands) <= min(b[1] for b in bands)


def repeatability(frame: pd.DataFrame) -> pd.DataFrame:
    """Per configuration, plan, phase and counter of a :func:`~bufsim.live.validation.repeat_runs` frame: the
    number of runs, the server's min / median / max, the replay's count (one value: the
    replay is deterministic), in how many runs it holds, ``one_count_can_hold``
    (:func:`one_count_holds_all`) and ``within_spread``: the replay's count is within
    the tolerance of the server's range (from the band of its least count to that of its
    greatest)."""
    keys = ["config", "plan", "phase", "metric"]
    out = frame.groupby(keys, sort=False).agg(
        runs=("reported", "size"), server_min=("reported", "min"),
        server_median=("reported", "median"), server_max=("reported", "max"),
        simulated=("simulated", "first"), replay_values=("simulated", "nunique"),
        held=("holds", "sum")).reset_index()
    out["one_count_can_hold"] = [one_count_holds_all(key[3], runs.reported)
                                 for key, runs in frame.groupby(keys, sort=False)]
    low = [tolerance_band(m, v)[0] for m, v in zip(out.metric, out.server_min)]
    high = [tolerance_band(m, v)[1] for m, v in zip(out.metric, out.server_max)]
    out["within_spread"] = (out.simulated >= low) & (out.simulated <= high)
    return out

def missing_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """The server runs of a :func:`~bufsim.live.validation.run_grid` frame that hold a row that misses: one row
    (``config``, ``plan``) each, in the frame's order."""
    return frame.loc[~frame.holds.astype(bool), ["config", "plan"]].drop_duplicates() \
        .reset_index(drop=True)


def recheck_claims(frame: pd.DataFrame, missing: pd.DataFrame, recheck: int) -> list[dict]:
    """Claims for :func:`bufsim.results.write_claims` from a grid's run and
    :func:`~bufsim.live.validation.recheck_misses`'s ``missing`` (at most ``recheck`` reruns): one for the grid (every row
    holds in its run, or is within the server's spread), then one per missing row."""
    n_miss, n_within = int((~frame.holds.astype(bool)).sum()), int(missing.within_spread.sum())
    nan = float("nan")
    claims = [dict(claim=f"every row of the grid holds in its run ({len(frame) - n_miss} of "
                         f"{len(frame)}) or is within the server's spread over at most "
                         f"{recheck + 1} runs ({n_within} of {n_miss})",
                   reported=nan, server_min=nan, server_max=nan, simulated=nan,
                   holds=n_within == n_miss)]
    keys = ["config", "plan", "phase", "metric"]
    first = frame.drop_duplicates(keys).set_index(keys)["reported"]   # the grid's run
    claims += [dict(claim=f"{r.plan} {r.phase} {r.metric} at {r.config}: the replay within the "
                          f"server's spread over {r.runs} runs",
                    reported=float(first.loc[(r.config, r.plan, r.phase, r.metric)]),
                    server_min=r.server_min, server_max=r.server_max, simulated=r.simulated,
                    holds=bool(r.within_spread))
               for r in missing.itertuples()]
    return claims
