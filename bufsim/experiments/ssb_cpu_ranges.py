"""Notebook 01's CPU model, step 3 of 3: predictions out of sample and what bounds them.

:func:`leave_one_out` fits on every observation but the held-out ones and predicts
those; :func:`prediction_range` gives, exactly, the smallest and largest prediction of a
held-out observation over every cost vector that keeps the others within their limits
(:data:`LIMITS`), :func:`band_floor` what meeting the limits out of sample costs the rest,
and :func:`held_out_ranges` both for each configuration held out alone.  Configurations
no costs tell apart, and what holding one out asks of the fit, are in
:mod:`bufsim.experiments.ssb_cpu_twins`.  Re-exported by :mod:`bufsim.experiments.ssb_cpu`.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .ssb_cpu_counts import FITTED
from .ssb_cpu_fit import obs_groups, lane_matrices, ExactProgram, fit, predict

__all__ = ["LIMITS", "prediction_range", "band_floor", "held_out_ranges", "range_rows",
           "leave_one_out"]

#: the relative error an observation of each phase may have (issue 20's limits; Q1.1's
#: times, which the issue gives no limit, are held to the table's Run1-3 limit)
LIMITS = {"cold": 0.35, "run1-3": 0.25, "q11": 0.25}


def prediction_range(obs: pd.DataFrame, held: Sequence[str], *, overlap: bool = True,
                     limits: Mapping[str, float] = LIMITS, ceiling: float = 10.0,
                     time_limit: float = 120.0) -> pd.DataFrame:
    """What the other observations allow the held-out ones to be predicted at.

    Over every cost vector (ns, >= 0) that puts each observation not in ``held``
    (``config`` values) within its phase's limit (``limits``), the smallest and the
    largest prediction of each held-out observation (exact, by :class:`ExactProgram`).  A
    wide range says the fit set does not determine the prediction: any value in it is
    what some costs that fit the rest within the limits predict; a range outside
    ``1 +- limit`` shows that no fit within the limits predicts the held-out observation
    within its own.  ``high`` is capped at ``ceiling`` (>= 2) times the reported time
    (``capped`` True when it reaches it).

    One row per held-out observation: ``config``, ``phase``, ``reported``, ``low``,
    ``high`` (seconds), ``ratio_low``, ``ratio_high``, ``capped``.  Raises ValueError when
    no costs put the fit set within the limits.
    """
    held = list(held)
    cfgs = list(dict.fromkeys(obs["config"]))
    unknown = [h for h in held if h not in cfgs]
    if unknown or not held or len(held) == len(cfgs):
        raise ValueError(f"held = {held!r}: must name some but not all of {cfgs}")
    bad = {k: v for k, v in limits.items()
           if not (isinstance(v, (int, float)) and 0 < v < np.inf and not isinstance(v, bool))}
    if bad:
        raise ValueError(f"limits {bad} out of range; allowed: a finite number > 0")
    if not (isinstance(ceiling, (int, float)) and 2 <= ceiling < np.inf):
        raise ValueError(f"ceiling = {ceiling!r}; allowed: a finite number >= 2")
    keys, g = obs_groups(obs)
    y = obs.groupby(["config", "phase"], sort=False)["reported"].first()
    y = np.array([float(y.loc[k]) for k in keys])
    missing = sorted({k[1] for k in keys if k[0] not in held} - set(limits))
    if missing:
        raise ValueError(f"limits lack phase(s) {missing}")
    mats = lane_matrices(obs)
    big = max(float(ceiling), 1 + max(limits.values())) * float(y.max()) * 1.01 + 1.0
    # each row its own v (merge=False): these programs are quick either way, and the ranges
    # in the results file stay the numbers they were, to the last digit
    pr = ExactProgram(mats["query"], mats["ahead"], g, y, overlap, big, merge=False)
    for o, (cfg, phase) in enumerate(keys):
        if cfg in held:                        # a held-out prediction: at most the ceiling
            pr.ub[pr.ie + o] = ceiling - 1
        else:
            pr.ub[pr.ie + o] = float(limits[phase])
    out = []
    for o, (cfg, phase) in enumerate(keys):
        if cfg not in held:
            continue
        cost = pr.prediction(o)
        try:
            low = float(cost @ pr.solve(cost, time_limit)) * y[o]
            high = float(cost @ pr.solve(-cost, time_limit)) * y[o]
        except RuntimeError as e:
            if "infeasible" in str(e).lower():
                raise ValueError(f"no costs >= 0 put every observation but {held} within "
                                 f"{dict(limits)}") from None
            raise
        out.append(dict(config=cfg, phase=phase, reported=y[o], low=low, high=high,
                        ratio_low=low / y[o], ratio_high=high / y[o],
                        capped=bool(high >= ceiling * y[o] * (1 - 1e-6))))
    return pd.DataFrame(out)


def band_floor(obs: pd.DataFrame, held: Sequence[str], *, overlap: bool = True,
               limits: Mapping[str, float] = LIMITS, time_limit: float = 120.0) -> tuple[float, float]:
    """What predicting ``held`` (``config`` values) within their limits costs the rest.

    Returns ``(floor, in_band)``: ``floor`` is the minimax floor of the observations not
    in ``held`` (:func:`~bufsim.experiments.ssb_cpu_fit.fit`'s ``"minimax"`` residual on them:
    the smallest largest
    relative error any costs >= 0 reach); ``in_band`` is the same smallest largest error
    over the costs that *also* predict every held-out observation within its phase's
    limit (``limits``), ``nan`` when no costs do.  ``in_band - floor`` is how much worse on
    its own data a fit must be to meet the limits out of sample: 0 when one of the best
    fits of the rest already does; small and positive when the fit set allows it but its
    best fits do not (then which fit meets it is a choice among near-equal costs, not a
    prediction); ``nan`` when none can.  Exact, by :class:`ExactProgram`.
    """
    held = list(held)
    cfgs = list(dict.fromkeys(obs["config"]))
    unknown = [h for h in held if h not in cfgs]
    if unknown or not held or len(held) == len(cfgs):
        raise ValueError(f"held = {held!r}: must name some but not all of {cfgs}")
    keys, g = obs_groups(obs)
    missing = sorted({k[1] for k in keys if k[0] in held} - set(limits))
    if missing:
        raise ValueError(f"limits lack phase(s) {missing}")
    rest = fit(obs, [c for c in cfgs if c not in held], overlap=overlap, objective="minimax",
               time_limit=time_limit)
    floor = rest.residual
    y = obs.groupby(["config", "phase"], sort=False)["reported"].first()
    y = np.array([float(y.loc[k]) for k in keys])
    out = np.array([k[0] in held for k in keys])
    mats = lane_matrices(obs)
    # the floor's own costs already put every held-out observation within its limit: then
    # they are among the costs in_band is the minimum over, and it is the floor
    x = np.array([rest.costs[k] for k in FITTED])
    q, a = mats["query"] @ x, mats["ahead"] @ x
    err = np.abs(g @ (np.maximum(q, a) if overlap else q + a) / y - 1)
    if all(err[o] <= limits[k[1]] for o, k in enumerate(keys) if out[o]):
        return floor, floor
    cap = max(9.0, 2 * floor)          # the rest's errors: a bound for M, never reached
    ub_e = np.array([float(limits[k[1]]) if out[o] else cap for o, k in enumerate(keys)])
    pr = ExactProgram(mats["query"], mats["ahead"], g, y, overlap, (1 + ub_e) * y * 1.01 + 1.0,
                      linked=~out)
    for o, (cfg, phase) in enumerate(keys):
        pr.ub[pr.ie + o] = float(limits[phase]) if out[o] else cap
    pr.lb[pr.it] = floor
    cost = np.zeros(pr.nv)
    cost[pr.it] = 1.0
    try:
        in_band = float(pr.solve(cost, time_limit)[pr.it])
    except RuntimeError as e:
        if "infeasible" not in str(e).lower():
            raise
        in_band = float("nan")
    return floor, max(in_band, floor)


def held_out_ranges(obs: pd.DataFrame, configs: Sequence[str],
                    fits: Mapping[str, pd.DataFrame] | None = None, *, overlap: bool = True,
                    limits: Mapping[str, float] = LIMITS) -> pd.DataFrame:
    """Each configuration of ``configs`` held out alone: its :func:`prediction_range` over
    the costs that keep every other observation within ``limits``, beside each
    leave-one-out result in ``fits`` (name -> :func:`leave_one_out`'s rows; a column of
    ratios each, and ``holds (name)``).

    Where no costs keep the others within ``limits`` (the fit set's own minimax floor is
    above the smallest limit, as with quick mode's smoke counts), the range is over the
    costs within that floor + 0.001 instead; ``range_limit`` says which (``limits`` or the
    floor).  ``limit`` is the acceptance's limit of the row's phase and ``reachable``
    whether the range meets the band ``1 +- limit``: if not, no fit within the limits
    predicts it within its own.  ``fit_floor`` and ``floor_in_band`` are
    :func:`band_floor`'s two numbers for the configuration: the rest's minimax floor, and
    the smallest largest error on the rest of the costs that put this configuration's
    every phase within its limit (``nan``: no costs do).
    """
    fits = dict(fits or {})
    parts = []
    for cfg in configs:
        floor, in_band = band_floor(obs, [cfg], overlap=overlap, limits=limits)
        lim = dict(limits)
        if floor > min(limits.values()):
            lim = {k: max(v, floor + 1e-3) for k, v in limits.items()}
        r = prediction_range(obs, [cfg], overlap=overlap, limits=lim)
        r["range_limit"] = "limits" if lim == dict(limits) else f"floor {floor + 1e-3:.3f}"
        r["fit_floor"], r["floor_in_band"] = floor, in_band
        parts.append(r)
    out = pd.concat(parts, ignore_index=True).drop(columns=["low", "high"])
    for name, loo in fits.items():
        out = out.merge(loo[["config", "phase", "ratio"]].rename(columns={"ratio": name}),
                        on=["config", "phase"], how="left")
    out["limit"] = out.phase.map(limits)
    out["reachable"] = (out.ratio_low <= 1 + out.limit) & (out.ratio_high >= 1 - out.limit)
    for name in fits:
        out[f"holds ({name})"] = (out[name] - 1).abs() <= out.limit
    return out


def range_rows(ranges: pd.DataFrame, experiment: str) -> list[dict]:
    """Rows for :func:`bufsim.results.write_results` from :func:`held_out_ranges`: two per
    configuration and phase (``metric`` "<phase> low" / "<phase> high", ``simulated`` the
    range's end in seconds), ``fitted`` False, ``holds`` = ``reachable``."""
    return [dict(experiment=experiment, metric=f"{r['phase']} {end}", config=r["config"],
                 reported=float(r["reported"]), simulated=float(r[f"ratio_{end}"] * r["reported"]),
                 fitted=False, holds=bool(r["reachable"]))
            for r in ranges.to_dict("records") for end in ("low", "high")]


def leave_one_out(obs: pd.DataFrame, groups: Mapping[str, Sequence[str]], *,
                  overlap: bool = True, objective: str = "lsq") -> pd.DataFrame:
    """For each ``{held-out name: [config, ...]}``: fit on every other observation
    (:func:`~bufsim.experiments.ssb_cpu_fit.fit` with ``objective``) and predict the held-out
    ones.  One row per held-out
    observation: ``held_out``, ``config``, ``phase``, ``reported``, ``predicted``,
    ``ratio``, the lanes, the fit set's size, its largest in-sample relative error
    (``fit_max_error``) and the costs."""
    rows = []
    all_cfg = list(dict.fromkeys(obs["config"]))
    for name, held in groups.items():
        held = list(held)
        unknown = [h for h in held if h not in all_cfg]
        if unknown or not held:
            raise ValueError(f"held-out group {name!r} names {unknown or 'nothing'}; "
                             f"allowed: {all_cfg}")
        rest = [c for c in all_cfg if c not in held]
        f = fit(obs, rest, overlap=overlap, objective=objective)
        out = obs[obs["config"].isin(held)]
        p = predict(f.costs, out, overlap=overlap)
        n_fit = len(f.in_sample)
        for r in p.itertuples():
            rows.append(dict(held_out=name, config=r.config, phase=r.phase,
                             reported=float(r.reported), predicted=float(r.predicted),
                             ratio=float(r.predicted / r.reported), query_s=float(r.query_s),
                             ahead_s=float(r.ahead_s), fit_observations=n_fit,
                             fit_max_error=float(np.max(np.abs(f.in_sample.ratio - 1))),
                             **{f"{k}_ns": f.costs[k] for k in FITTED}))
    return pd.DataFrame(rows)
