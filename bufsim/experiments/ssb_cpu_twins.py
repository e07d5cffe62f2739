"""Notebook 01's CPU model, beside step 3: twins, a version factor, the results rows.

:func:`twins` finds configurations whose predictions every cost vector keeps within a
small factor of each other, :func:`twin_requirement` what holding one of them out asks
of the fit, :func:`version_factor_loo` a leave-one-out with a fitted speed factor on one
server version's work (:func:`scale_version`), and :func:`out_of_sample_rows` the
results-file rows of :func:`~bufsim.experiments.ssb_cpu_ranges.leave_one_out`.
Re-exported by :mod:`bufsim.experiments.ssb_cpu`.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .ssb_cpu_counts import FEATURES, FITTED
from .ssb_cpu_fit import fit_inputs, lane_matrices, lsq_costs, predict
from .ssb_cpu_ranges import LIMITS

__all__ = ["twins", "twin_requirement", "BUILD_SCALED", "scale_version", "version_factor_loo",
           "out_of_sample_rows"]


def twins(obs: pd.DataFrame, tol: float = 0.02, *, both_ways: bool = False) -> pd.DataFrame:
    """Pairs of configurations that no cost vector tells apart by more than ``tol``.

    For two configurations with the same phases and statements, a phase's ``separation``
    is the largest ratio between a feature of one and the same feature of the other (over
    the phase's statements and every feature; 0 against 0 counts as equal, 0 against
    non-zero as infinitely apart), less 1.  Every lane of every statement is a sum of
    features times costs >= 0, so for *every* cost vector the two predictions of that
    phase lie within a factor ``1 + separation`` of each other: a configuration held out
    with its twin in the fit set is predicted at about what the fit predicts for the twin.

    One row per pair (every phase's ``separation <= tol``) and phase: ``config``, ``twin``, ``phase``,
    ``separation``, ``reported``, ``twin_reported`` and ``reported_ratio`` (the first
    over the second).  Empty when no pair is that close.  With ``both_ways``, each pair
    also appears the other way round (``config`` and ``twin`` swapped, ``reported_ratio``
    inverted): one row per configuration that has a twin, and phase.
    """
    if not (isinstance(tol, (int, float)) and 0 <= tol < np.inf and not isinstance(tol, bool)):
        raise ValueError(f"tol = {tol!r} is out of range; allowed: a finite number >= 0")
    feats = list(FEATURES)
    if "statement" in obs.columns:
        idx = ["phase", "statement"]
    else:
        idx = ["phase"]
    by = {c: obs[obs["config"] == c].set_index(idx)[feats].sort_index()
          for c in dict.fromkeys(obs["config"])}
    rep = obs.groupby(["config", "phase"], sort=False)["reported"].first()
    rows = []
    names = list(by)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            fa, fb = by[a], by[b]
            if not fa.index.equals(fb.index):
                continue
            xa, xb = fa.to_numpy(float), fb.to_numpy(float)
            if ((xa == 0) != (xb == 0)).any():
                continue
            nz = xa != 0
            far = np.ones_like(xa)
            far[nz] = np.maximum(xa[nz] / xb[nz], xb[nz] / xa[nz])
            phases = fa.index.get_level_values("phase")
            sep = {p: float(far[np.asarray(phases == p)].max()) - 1 for p in dict.fromkeys(phases)}
            if max(sep.values()) > tol:
                continue
            for phase, s_p in sep.items():
                ra, rb = float(rep.loc[(a, phase)]), float(rep.loc[(b, phase)])
                rows.append(dict(config=a, twin=b, phase=phase, separation=s_p, reported=ra,
                                 twin_reported=rb, reported_ratio=ra / rb))
    cols = ["config", "twin", "phase", "separation", "reported", "twin_reported", "reported_ratio"]
    out = pd.DataFrame(rows, columns=cols)
    if both_ways:
        back = out.rename(columns={"config": "twin", "twin": "config", "reported": "twin_reported",
                                   "twin_reported": "reported"})
        out = pd.concat([out, back.assign(reported_ratio=1 / out.reported_ratio)[cols]],
                        ignore_index=True)
    return out


def twin_requirement(obs: pd.DataFrame, fits: Mapping[str, pd.DataFrame], *, tol: float = 0.02,
                     overlap: bool = True, limits: Mapping[str, float] = LIMITS) -> pd.DataFrame:
    """What holding a configuration out alone asks of the fit when its twin is in the fit set.

    :func:`twins` (``tol``) pairs configurations whose predictions every cost vector keeps
    within a factor ``1 + separation``.  So a held-out configuration ``h``
    (reported ``y_h``) is within its phase's limit ``L`` only if its fit predicts the twin
    ``t`` (reported ``y_t``), an observation of its own fit set, within::

        (1 - L) y_h / ((1 + separation) y_t)  <=  predicted_t / y_t  <=  (1 + L)(1 + separation) y_h / y_t

    whatever the costs: a necessary condition, exact when ``separation`` is 0.  ``fits``:
    estimator name -> :func:`~bufsim.experiments.ssb_cpu_ranges.leave_one_out`'s rows with one
    configuration per held-out
    group (each row's costs are the fit that held that configuration out).

    One row per held-out configuration with a twin, phase and estimator: ``config``,
    ``twin``, ``phase``, ``estimator``, ``twin_needs_low`` / ``twin_needs_high`` (the range
    above), ``twin_fitted`` (what that fit predicts for the twin, over its reported time),
    ``twin_within`` (inside the range), ``ratio`` (the held-out prediction over its reported
    time) and ``holds`` (within ``L``).  ``holds`` implies ``twin_within``.
    """
    pairs = twins(obs, tol, both_ways=True)
    missing = sorted(set(pairs.phase) - set(limits))
    if missing:
        raise ValueError(f"limits lack phase(s) {missing}")
    rows = []
    for name, loo in fits.items():
        need = {"held_out", "config", "phase", "ratio", *(f"{k}_ns" for k in FITTED)}
        if not need <= set(loo.columns):
            raise ValueError(f"fits[{name!r}] lacks column(s) {sorted(need - set(loo.columns))} "
                             "(see leave_one_out)")
        shared = loo.groupby("held_out")["config"].nunique()
        if (shared > 1).any():
            raise ValueError(f"fits[{name!r}] holds out {list(shared[shared > 1].index)} with more "
                             "than one configuration; twin_requirement needs each held out alone")
        by = loo.set_index(["config", "phase"])
        for p in pairs.itertuples():
            if (p.config, p.phase) not in by.index:
                continue
            r = by.loc[(p.config, p.phase)]
            lim = float(limits[p.phase])
            pt = predict({k: float(r[f"{k}_ns"]) for k in FITTED}, obs[obs["config"] == p.twin],
                         overlap=overlap).set_index("phase").predicted[p.phase]
            lo = (1 - lim) * p.reported / ((1 + p.separation) * p.twin_reported)
            hi = (1 + lim) * (1 + p.separation) * p.reported / p.twin_reported
            fitted = float(pt / p.twin_reported)
            rows.append(dict(config=p.config, twin=p.twin, phase=p.phase, estimator=name,
                             twin_needs_low=lo, twin_needs_high=hi, twin_fitted=fitted,
                             twin_within=bool(lo <= fitted <= hi), ratio=float(r["ratio"]),
                             holds=bool(abs(float(r["ratio"]) - 1) <= lim)))
    cols = ["config", "twin", "phase", "estimator", "twin_needs_low", "twin_needs_high",
            "twin_fitted", "twin_within", "ratio", "holds"]
    return pd.DataFrame(rows, columns=cols)


#: the features a server build's speed scales: the query thread's CPU per operator and per get,
#: and each page read's work in the server (:func:`version_factor_loo`); not the clock read
#: (a system call) nor the cold disk's time
BUILD_SCALED = ("scan_rows", "eq_ref", "ref_rows", "group_rows", "gets", "sync_reads", "ahead_reads")


def scale_version(obs: pd.DataFrame, prefix: str, k: float,
                  features: Sequence[str] = BUILD_SCALED) -> pd.DataFrame:
    """``obs`` with ``features`` multiplied by ``k`` on the configurations whose name starts
    with ``prefix`` (e.g. ``"5.5.30"``): a server that does the same work ``k`` times slower."""
    if not (isinstance(k, (int, float, np.floating)) and 0 < k < np.inf):
        raise ValueError(f"k = {k!r} is out of range; allowed: 0 < k < inf")
    unknown = [f for f in features if f not in FEATURES]
    if unknown:
        raise ValueError(f"features {unknown} are not features; allowed: {', '.join(FEATURES)}")
    m = obs["config"].str.startswith(prefix).to_numpy()
    if not m.any():
        raise ValueError(f"prefix = {prefix!r} names no configuration of {sorted(set(obs['config']))}")
    out = obs.copy()
    for f in features:
        out.loc[m, f] = out.loc[m, f].astype(float) * float(k)
    return out


def version_factor_loo(obs: pd.DataFrame, configs: Sequence[str], prefix: str, *,
                       features: Sequence[str] = BUILD_SCALED, ks: Sequence[float] | None = None,
                       overlap: bool = True) -> pd.DataFrame:
    """Leave one configuration out with one more parameter: the configurations whose name
    starts with ``prefix`` do the work of ``features`` ``k`` times slower than the others
    (:func:`scale_version`), as a server built differently would.

    For each of ``configs`` held out alone, ``k`` is chosen on the others (the fit set
    of :func:`~bufsim.experiments.ssb_cpu_ranges.leave_one_out`) as the grid value of ``ks``
    (default 41 points, 0.5 to 3,
    evenly in log) whose least-squares fit (:func:`~bufsim.experiments.ssb_cpu_fit.fit`) has
    the smallest residual; those
    costs and ``k`` predict the held-out configuration.  One row per held-out observation:
    ``config``, ``phase``, ``reported``, ``predicted``, ``ratio``, ``k``, ``k_at_edge``
    (the grid's end: the fit set does not bound ``k``) and ``fit_residual``.
    """
    ks = np.exp(np.linspace(np.log(0.5), np.log(3.0), 41)) if ks is None else np.asarray(ks, float)
    if ks.ndim != 1 or len(ks) < 2 or not (np.isfinite(ks) & (ks > 0)).all():
        raise ValueError("ks must hold at least two finite numbers > 0")
    ks = np.unique(ks)
    all_cfg = list(dict.fromkeys(obs["config"]))
    unknown = [c for c in configs if c not in all_cfg]
    if unknown or not list(configs):
        raise ValueError(f"configs names {unknown or 'nothing'}; allowed: {all_cfg}")
    scale_version(obs, prefix, 1.0, features)          # checks prefix and features
    rows = []
    for cfg in configs:
        rest = [c for c in all_cfg if c != cfg]
        # fit(scale_version(obs, prefix, k, features), rest) for each k, on arrays: the fit
        # set's rows, grouping and times are the same for every k, only the scaled features
        # change (multiplied as scale_version does, so the matrices are the same numbers)
        sub, g, y = fit_inputs(obs, rest)
        m = sub["config"].str.startswith(prefix).to_numpy()
        base = {f: sub[f].to_numpy(float) for f in features}
        fits = []
        for k in ks:
            scaled_f = {}
            for f, v in base.items():
                v = v.copy()
                v[m] = v[m] * float(k)
                scaled_f[f] = v
            mats = lane_matrices(sub, scaled_f)
            fits.append(lsq_costs(mats["query"], mats["ahead"], g, y, overlap, 50))
        i = int(np.argmin([f[1] for f in fits]))
        costs = {name: float(v) for name, v in zip(FITTED, fits[i][0])}
        scaled = scale_version(obs, prefix, ks[i], features)
        p = predict(costs, scaled[scaled["config"] == cfg], overlap=overlap)
        for r in p.itertuples():
            rows.append(dict(config=cfg, phase=r.phase, reported=float(r.reported),
                             predicted=float(r.predicted), ratio=float(r.predicted / r.reported),
                             k=float(ks[i]), k_at_edge=i in (0, len(ks) - 1),
                             fit_residual=float(fits[i][1])))
    return pd.DataFrame(rows)


def out_of_sample_rows(loo: pd.DataFrame, experiment: str) -> list[dict]:
    """Rows for :func:`bufsim.results.write_results`: one per configuration and phase of
    ``loo`` (its ``cold`` and ``run1-3`` rows), ``metric`` = the phase, ``fitted`` False,
    ``holds`` = within 35% (cold) or 25% (run1-3), issue 20's limits."""
    out = []
    for r in loo.itertuples():
        if r.phase not in ("cold", "run1-3"):
            continue
        limit = LIMITS[r.phase]
        out.append(dict(experiment=experiment, metric=r.phase, config=r.config,
                        reported=float(r.reported), simulated=float(r.predicted), fitted=False,
                        holds=bool(abs(r.predicted / r.reported - 1) <= limit)))
    return out
