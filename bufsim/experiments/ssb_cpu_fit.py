"""Notebook 01's CPU model, step 2 of 3: the costs, fitted.

:func:`predict` prices observations (:mod:`bufsim.experiments.ssb_cpu_counts`) with a
cost vector, the max (or the sum) of the query thread's lane and the read-ahead lane;
:func:`fit` fits the costs on named observations, by non-negative least squares of the
relative errors or exactly by the smallest largest error (``objective="minimax"``, a
mixed-integer program: :class:`ExactProgram`, :func:`minimax`).  Re-exported by
:mod:`bufsim.experiments.ssb_cpu`.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from collections import OrderedDict
from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from .._validation import check_int
from .ssb_cpu_counts import COSTS, FITTED, LANES, NS

__all__ = ["predict", "CpuFit", "OBJECTIVES", "fit"]

# ---- the model -----------------------------------------------------------------------------
def lane_matrices(obs: pd.DataFrame, features: Mapping[str, np.ndarray] | None = None):
    """Per lane, the matrix of features times costs (columns in FITTED order; the tied
    cold_page_q feature is added onto cold_page's column in the query lane).

    ``features`` (feature column -> float array, one value per row of ``obs``) replaces
    ``obs``' own columns where given: the same matrices, without a copy of ``obs``."""
    features = {} if features is None else features
    mats = {}
    for lane in LANES:
        m = np.zeros((len(obs), len(FITTED)))
        for name, (col, ln, _) in COSTS.items():
            if ln != lane:
                continue
            j = FITTED.index("cold_page" if name == "cold_page_q" else name)
            m[:, j] += features[col] if col in features else obs[col].to_numpy(float)
        mats[lane] = m / NS       # ns -> seconds
    return mats


def obs_groups(obs: pd.DataFrame):
    """The observations (``config``, ``phase``) in order of first appearance, and the
    0/1 matrix summing ``obs``' rows into them (the identity without a ``statement``
    column: each row is an observation)."""
    if "statement" not in obs.columns:
        keys = list(zip(obs["config"], obs["phase"]))
        return keys, np.eye(len(obs))
    pairs = list(zip(obs["config"], obs["phase"]))
    keys = list(dict.fromkeys(pairs))
    pos = {k: i for i, k in enumerate(keys)}
    g = np.zeros((len(keys), len(obs)))
    g[[pos[p] for p in pairs], np.arange(len(obs))] = 1.0
    return keys, g


def predict(costs: Mapping[str, float], obs: pd.DataFrame, *, overlap: bool = True) -> pd.DataFrame:
    """Per observation: the query-thread and read-ahead lane seconds and the predicted
    time (their max with ``overlap``, else their sum).  With a ``statement`` column
    (``observations(..., statements=True)``) the max is taken per statement and summed
    over the observation's statements; one row per observation (``config``, ``phase``,
    ``reported`` when ``obs`` has it)."""
    missing = [k for k in FITTED if k not in costs]
    if missing:
        raise ValueError(f"costs lack {missing}; allowed keys: {', '.join(FITTED)}")
    x = np.array([float(costs[k]) for k in FITTED])
    if (x < 0).any() or not np.isfinite(x).all():
        raise ValueError(f"costs must be finite and >= 0, got {dict(costs)}")
    mats = lane_matrices(obs)
    q, a = mats["query"] @ x, mats["ahead"] @ x
    t = np.maximum(q, a) if overlap else q + a
    keys, g = obs_groups(obs)
    out = pd.DataFrame({"config": [k[0] for k in keys], "phase": [k[1] for k in keys],
                        "query_s": g @ q, "ahead_s": g @ a, "predicted": g @ t})
    if "statement" not in obs.columns:
        out.index = obs.index
    if "reported" in obs.columns:
        first = obs.groupby(["config", "phase"], sort=False)["reported"].first()
        out.insert(2, "reported", [float(first.loc[k]) for k in keys])
    return out


@dataclass
class CpuFit:
    """Fitted costs (ns, >= 0), the fit set's names, the in-sample predictions and the
    residual: the norm of the relative errors (``objective="lsq"``) or the largest
    relative error (``"minimax"``)."""

    costs: dict
    fit_set: tuple
    in_sample: pd.DataFrame
    residual: float
    overlap: bool
    objective: str = "lsq"

    def table(self) -> pd.DataFrame:
        """The costs with what each prices and its fit set (written beside it)."""
        return pd.DataFrame([dict(cost=k, ns=self.costs[k], lane=COSTS[k][1], prices=COSTS[k][2],
                                  fit_set=", ".join(self.fit_set)) for k in FITTED])


OBJECTIVES = ("lsq", "minimax")


def fit(obs: pd.DataFrame, fit_set: Iterable[str] | None = None, *, overlap: bool = True,
        max_iter: int = 50, objective: str = "lsq", time_limit: float = 120.0) -> CpuFit:
    """Fit the costs on the observations named in ``fit_set`` (``config`` values;
    None: all).

    ``objective="minimax"`` minimises the largest relative error instead, exactly
    (:func:`minimax`, a mixed-integer program; ``time_limit`` seconds at most): its
    residual is the smallest largest error any costs >= 0 reach on the fit set, so a
    smaller one is not in the model.

    ``"lsq"`` minimises the squared relative errors subject to costs >= 0 (``scipy.optimize.nnls``).
    With ``overlap`` (max of the lanes) the fit alternates: fix each observation's slower
    lane, solve the nnls with that lane's features, re-decide the lanes; from three starts
    (every observation on the query lane, every one on the read-ahead lane, the no-overlap
    solution) until the lanes stop changing or ``max_iter``; the start with the smallest
    max-model error wins.  A cost whose feature is 0 in every fitted observation is 0
    (nothing determines it).
    """
    check_int("max_iter", max_iter, 1)
    if objective not in OBJECTIVES:
        raise ValueError(f"objective = {objective!r}; allowed: {', '.join(map(repr, OBJECTIVES))}")
    names = list(obs["config"]) if fit_set is None else list(fit_set)
    sub, g, y = fit_inputs(obs, names)
    mats = lane_matrices(sub)
    Aq, Aa = mats["query"], mats["ahead"]

    best, residual = lsq_costs(Aq, Aa, g, y, overlap, max_iter)
    if objective == "minimax":
        q, a = Aq @ best, Aa @ best
        start = g @ (np.maximum(q, a) if overlap else q + a)
        best, residual = minimax(Aq, Aa, g, y, overlap,
                                  float(np.max(np.abs(start / y - 1))) * 1.01 + 1e-4,
                                  time_limit)
    costs = {k: float(v) for k, v in zip(FITTED, best)}
    pred = predict(costs, sub, overlap=overlap)
    pred["reported"] = y
    pred["ratio"] = pred["predicted"] / y
    return CpuFit(costs, tuple(dict.fromkeys(names)), pred, residual, overlap, objective)


def fit_inputs(obs: pd.DataFrame, names: list):
    """:func:`fit`'s inputs for the fit set ``names`` (``config`` values, checked): the
    rows of ``obs`` in it, their grouping into observations (:func:`obs_groups`) and each
    observation's reported time (> 0)."""
    unknown = [n for n in names if n not in set(obs["config"])]
    if unknown or not names:
        raise ValueError(f"fit_set names {unknown or 'nothing'}; allowed: {sorted(set(obs['config']))}")
    sub = obs[obs["config"].isin(names)]
    keys, g = obs_groups(sub)
    y = sub.groupby(["config", "phase"], sort=False)["reported"].first()
    y = np.array([float(y.loc[k]) for k in keys])
    if (y <= 0).any():
        raise ValueError("reported times must all be > 0")
    return sub, g, y


def lsq_costs(Aq, Aa, g, y, overlap, max_iter):
    """:func:`fit`'s ``"lsq"`` costs (FITTED order) and residual on lane matrices ``Aq``,
    ``Aa`` (:func:`lane_matrices`), grouping ``g`` (:func:`obs_groups`) and reported
    times ``y`` (> 0)."""
    from scipy.optimize import nnls

    w = 1 / y

    def solve(A):
        x, _ = nnls(A * w[:, None], y * w, maxiter=50 * A.shape[1])
        return x

    def err(x):
        q, a = Aq @ x, Aa @ x
        t = g @ (np.maximum(q, a) if overlap else q + a)
        return float(np.sqrt(np.sum(((t - y) * w) ** 2)))

    x_sum = solve(g @ (Aq + Aa))
    best = x_sum
    if overlap:
        best_err = np.inf
        for start in ("query", "ahead", "sum"):
            if start == "sum":
                on_q = (Aq @ x_sum) >= (Aa @ x_sum)
            else:
                on_q = np.full(len(Aq), start == "query")
            for _ in range(max_iter):
                A = g @ np.where(on_q[:, None], Aq, Aa)
                x = solve(A)
                new = (Aq @ x) >= (Aa @ x)
                if (new == on_q).all():
                    break
                on_q = new
            e = err(x)
            if e < best_err - 1e-12:
                best, best_err = x, e
    residual = err(best)
    return best, residual


@contextlib.contextmanager
def quiet_fd1():
    """The process's standard output (file descriptor 1) goes to the null device inside.

    HiGHS, the solver behind ``scipy.optimize.milp``, prints some internal lines (e.g.
    ``HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();``) straight
    to descriptor 1 even with ``disp`` off, and Jupyter shows those in the cell's output.
    The result and any error still come back through ``milp``'s return value.  Where
    descriptor 1 cannot be duplicated, nothing is redirected."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


class ExactProgram:
    """The mixed-integer program behind :func:`minimax` and
    :func:`~bufsim.experiments.ssb_cpu_ranges.prediction_range`.

    Row ``r`` of ``Aq``/``Aa`` (a statement, or an observation) takes ``v_r``: the sum of
    its lanes without ``overlap`` or where one lane has no feature; else their max, by one
    binary ``b_r`` (``v_r >= q_r, a_r``; ``v_r <= q_r + M b_r``; ``v_r <= a_r + M (1 - b_r)``,
    so ``M`` must bound every lane).  Observation ``o`` (``g``'s row) predicts
    ``sum v_r`` with relative error ``e_o`` (``e_o >= |sum v_r / y_o - 1|``) and
    ``e_o <= tau`` for each observation ``linked`` (default: all; the others' ``e_o`` are
    bounded through ``ub`` alone).  Variables: the costs (ns), ``v``, ``b``, ``e``, ``tau``.
    Rows with the same features share one ``v`` (and ``b``) unless ``merge`` is False;
    :attr:`g` counts them per observation; :meth:`prediction` is the objective of an
    observation's predicted time over ``y_o``.
    ``big`` is ``M``: one number, or one per observation (it must bound the lanes of that
    observation's rows; a row in several takes the largest).
    """

    def __init__(self, Aq, Aa, g, y, overlap, big, linked=None, merge=True):
        nc, no = Aq.shape[1], len(y)
        linked = np.ones(no, bool) if linked is None else np.asarray(linked, bool)
        big_o = np.broadcast_to(np.asarray(big, float), (no,))
        # rows with the same features (e.g. a statement two configurations run alike) take
        # one v: max and sum of the same lanes are the same number, so the program is the
        # same with fewer binaries; g counts each row's repeats in an observation
        ids: dict = {}
        rep = np.array([ids.setdefault(np.concatenate([Aq[r], Aa[r]]).tobytes() if merge else r,
                                       len(ids)) for r in range(Aq.shape[0])], dtype=np.int64)
        first = np.unique(rep, return_index=True)[1]
        Aq, Aa = Aq[first], Aa[first]
        gu = np.zeros((no, len(first)))
        for r, u in enumerate(rep):
            gu[:, u] += g[:, r]
        n = len(first)
        two = np.nonzero((Aq.any(axis=1) & Aa.any(axis=1)) if overlap else np.zeros(n, bool))[0]
        self.g, self.y = gu, np.asarray(y, float)
        self.nc, self.iv, self.ib = nc, nc, nc + n
        self.ie = self.ib + len(two)
        self.it = self.ie + no
        nv = self.it + 1
        rows, lo, hi = [], [], []

        def add(z, lower, upper):
            rows.append(z), lo.append(lower), hi.append(upper)

        for r in np.setdiff1d(np.arange(n), two):              # v_r = (q_r + a_r) . costs
            z = np.zeros(nv); z[:nc] = -(Aq[r] + Aa[r]); z[self.iv + r] = 1; add(z, 0.0, 0.0)
        for j, r in enumerate(two):
            m = float(big_o[gu[:, r] != 0].max())
            for lane, other in ((Aq[r], 0.0), (Aa[r], 1.0)):
                z = np.zeros(nv); z[:nc] = -lane; z[self.iv + r] = 1; add(z, 0.0, np.inf)
                z = z.copy(); z[self.ib + j] = m if other else -m
                add(z, -np.inf, m * other)
        for o in range(no):
            members = np.nonzero(gu[o])[0]
            for sign in (1.0, -1.0):
                z = np.zeros(nv); z[self.iv + members] = -sign * gu[o, members] / y[o]
                z[self.ie + o] = 1; add(z, -sign, np.inf)
            if linked[o]:
                z = np.zeros(nv); z[self.ie + o] = 1; z[self.it] = -1; add(z, -np.inf, 0.0)
        self.a, self.lo, self.hi = np.array(rows), lo, hi
        self.lb, self.ub = np.zeros(nv), np.full(nv, np.inf)
        self.ub[self.ib:self.ie] = 1
        self.integrality = np.zeros(nv)
        self.integrality[self.ib:self.ie] = 1
        self.nv = nv

    def prediction(self, o) -> np.ndarray:
        """The objective whose value is observation ``o``'s prediction over its time."""
        cost = np.zeros(self.nv)
        members = np.nonzero(self.g[o])[0]
        cost[self.iv + members] = self.g[o, members] / self.y[o]
        return cost

    def key(self, cost, time_limit) -> bytes:
        """A digest of everything :meth:`solve` passes the solver: equal keys, the same
        program, so the same answer."""
        h = hashlib.sha256()
        h.update(np.array(self.a.shape, np.int64).tobytes())
        for v in (self.a, self.lo, self.hi, self.lb, self.ub, self.integrality, cost,
                  [float(time_limit)]):
            b = np.ascontiguousarray(v, dtype=np.float64)
            h.update(np.int64(b.size).tobytes())
            h.update(b.tobytes())
        return h.digest()

    def solve(self, cost, time_limit):
        """The optimal variables for objective ``cost`` (HiGHS, deterministic); the same
        program solved before in this process (:meth:`key`) is answered from
        :data:`SOLVED` instead (notebook 01 asks for some of them twice: the minimax
        fit of a leave-one-out fold is also :func:`~bufsim.experiments.ssb_cpu_ranges.band_floor`'s
        floor)."""
        from scipy.optimize import Bounds, LinearConstraint, milp

        key = self.key(cost, time_limit)
        if key in SOLVED:
            SOLVED.move_to_end(key)
            return SOLVED[key].copy()
        with quiet_fd1():
            res = milp(cost, constraints=LinearConstraint(self.a, self.lo, self.hi),
                       integrality=self.integrality, bounds=Bounds(self.lb, self.ub),
                       options=dict(time_limit=float(time_limit), mip_rel_gap=1e-9))
        if res.status != 0:
            raise RuntimeError(f"cost program: {res.message} (time_limit = {time_limit} s)")
        SOLVED[key] = res.x.copy()
        while len(SOLVED) > SOLVED_MAX:
            SOLVED.popitem(last=False)
        return res.x


#: programs :meth:`ExactProgram.solve` solved (key -> optimal variables), the least
#: recently used dropped beyond :data:`SOLVED_MAX` (a few hundred floats each)
SOLVED: "OrderedDict[bytes, np.ndarray]" = OrderedDict()
SOLVED_MAX = 256


def minimax(Aq, Aa, g, y, overlap, tau_start, time_limit):
    """The costs (ns, >= 0) whose largest relative error over the observations is the
    smallest, and that error: exact, by ``scipy.optimize.milp`` (HiGHS) over
    :class:`ExactProgram`.  First ``tau`` is minimised; then, with ``tau`` held at its
    minimum, the sum of the errors (the minimum has many costs in general; this picks
    one, deterministically).  ``tau_start`` is an error some costs reach (a little more
    than the least-squares fit's): the minimum is no larger, and it bounds ``M``.
    """
    # rows not merged: merging finds the same tau, but the second stage's costs (one of many
    # at that tau) then move in the 9th-10th digit, and the fits are quick enough unmerged
    pr = ExactProgram(Aq, Aa, g, y, overlap, (1 + tau_start) * float(y.max()) * 1.01 + 1.0,
                      merge=False)
    pr.ub[pr.it] = tau_start
    c1 = np.zeros(pr.nv); c1[pr.it] = 1
    tau = float(pr.solve(c1, time_limit)[pr.it])
    c2 = np.zeros(pr.nv); c2[pr.ie:pr.it] = 1
    slack = max(1e-7, 1e-6 * tau)
    for attempt in range(4):           # the solver's tolerances may need a looser tau
        pr.ub[pr.it] = tau + slack
        try:
            x = pr.solve(c2, time_limit)
            break
        except RuntimeError:
            if attempt == 3:
                raise
            slack *= 10
    costs = np.maximum(x[:pr.nc], 0.0)
    q, a = Aq @ costs, Aa @ costs
    pred = g @ (np.maximum(q, a) if overlap else q + a)
    return costs, float(np.max(np.abs(pred / y - 1)))
