"""Notebook 04's driver: ``innodb_buffer_pool_instances`` with hot and uniform
primary-key access on the ``rein`` table (``004_d3c7a2c1c8f1e06e.txt``), and the
instance-count sensitivity of rein and dbSTRESS.

:class:`Rein` holds the rein database, its page frequencies (computed once per
workload) and the costs fitted on 003 (:func:`bufsim.experiments.contention.dbstress_costs`);
:meth:`Rein.network` is the closed network of one workload.  The functions are the
notebook's sweeps.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..contention import Costs, instances_for_fraction, max_throughput, workload_network
from ..workloads import rein as R
from .contention import DbStress

__all__ = ["USERS", "Rein", "mva_peaks", "des_peaks", "instance_sensitivity",
           "instances_needed"]

#: user counts of the throughput curves (the document's x axis)
USERS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


class Rein:
    """The 300M-row rein table of 004 on a server with ``cores`` cores.

    Parameters
    ----------
    costs : Costs
        The contention costs (notebook 04 uses those fitted on 003).
    cores : int
        CPU servers (the document's server: 8).
    """

    def __init__(self, costs: Costs, *, cores: int):
        self.db = R.rein_database()
        self.costs, self.cores = costs, cores
        self._freq = {}

    def freq(self, kind: str, dist: str, ahi: bool = True, hot_rows: int = R.HOT_ROWS):
        """:func:`bufsim.workloads.rein.page_frequency`, computed once per arguments."""
        key = (kind, dist, ahi, hot_rows)
        if key not in self._freq:
            self._freq[key] = R.page_frequency(self.db, kind=kind, dist=dist, ahi=ahi,
                                               hot_rows=hot_rows)
        return self._freq[key]

    def network(self, kind: str, dist: str, n: int, ahi: bool = True,
                hot_rows: int = R.HOT_ROWS, cores: int | None = None, c: Costs | None = None):
        """The closed network of one workload over ``n`` instances (idle stations dropped)."""
        return workload_network(self.freq(kind, dist, ahi, hot_rows), n, c or self.costs,
                                cores=cores or self.cores, adaptive_hash_index=ahi,
                                drop_idle=True)


def mva_peaks(rein: Rein, instances, users=USERS):
    """Exact-MVA curves of PK SELECT / UPDATE, hot / uniform, AHI on / off, for MySQL 5.1
    (one instance) and 5.5 at each instance count: ``(peaks, curves)`` DataFrames
    (peaks: the maximum and the fewest users reaching 95% of it)."""
    curves, peaks = [], []
    for kind in ("select", "update"):
        for dist in ("hot", "uniform"):
            for ahi in (True, False):
                for version, n in [("5.1", 1)] + [("5.5", k) for k in instances]:
                    r = rein.network(kind, dist, n, ahi).mva(256)
                    x = np.asarray(r.throughput)
                    knee = int(np.argmax(x >= 0.95 * x.max()) + 1)
                    peaks.append(dict(kind=kind, dist=dist, ahi=ahi, version=version,
                                      instances=n, max_tps=x.max(), users_95pct=knee))
                    curves += [dict(kind=kind, dist=dist, ahi=ahi, config=f"{version} b{n}",
                                    users=u, tps=float(x[u - 1])) for u in users]
    return pd.DataFrame(peaks), pd.DataFrame(curves)


def des_peaks(rein: Rein, users, *, transactions: int, seed: int) -> pd.DataFrame:
    """DES throughput of PK SELECT hot, one instance, with and without spinning holding
    a core (run at ``u`` users uses seed ``seed + u``)."""
    rows = []
    for hold in (False, True):
        for u in users:
            s = rein.network("select", "hot", 1).simulate(u, n_transactions=transactions,
                                                          seed=seed + u, hold_core=hold)
            rows.append(dict(hold_core=hold, users=u, tps=s.throughput))
    return pd.DataFrame(rows)


def instance_sensitivity(rein: Rein, dbstress: DbStress, instances) -> pd.DataFrame:
    """Maximum throughput by instance count: rein AHI off over hot sets from one extent
    to the whole table (with and without the kernel mutex), four dbSTRESS workloads
    (``dbstress.cores`` cores) and rein as 004 ran it.  Columns: workload, instances,
    max_tps, line, style, group, relative (to the workload's best)."""
    costs = rein.costs
    ix = rein.db.index("rein")
    extent_rows = 64 * ix.geometry.per_leaf
    hot = {"one extent": extent_rows, "1M rows (004 hot)": R.HOT_ROWS, "10M rows": 10_000_000,
           "whole table": R.REIN_ROWS}
    sens = []
    no_kernel = Costs(**{**costs.__dict__, "kernel_ns": 0.0})
    for name, rows in hot.items():
        for n in instances:
            for kind in ("select", "update"):
                for kname, c in (("", costs), (", no kernel mutex", no_kernel)):
                    dist = "uniform" if rows == R.REIN_ROWS else "hot"
                    x = max_throughput(rein.network(kind, dist, n, ahi=False, hot_rows=rows,
                                                    c=c))[0]
                    sens.append(dict(workload=f"rein {kind} AHI off{kname}, hot set {name}",
                                     instances=n, max_tps=x, line=f"hot set {name}, AHI off",
                                     style=kind))
    seed_wl = {"dbSTRESS SEL1": ("sel1", 1), "dbSTRESS SEL1+SEL2": ("read", 1),
               "dbSTRESS SEL2 #1": ("sel2", 1), "dbSTRESS SEL2 #6": ("sel2", 6)}
    for name, (kind, v) in seed_wl.items():
        for ahi in (True, False):
            for n in instances:
                x = max_throughput(dbstress.network(kind, v, ahi, costs, n, drop_idle=True))[0]
                sens.append(dict(workload=f"{name} AHI {'on' if ahi else 'off'}", instances=n,
                                 max_tps=x, line=name.replace("dbSTRESS ", ""),
                                 style=f"AHI {'on' if ahi else 'off'}"))
    for kind in ("select", "update"):
        for dist in ("hot", "uniform"):
            for n in instances:
                line = f"{'hot set 1M rows' if dist == 'hot' else 'uniform'}, AHI on (004 as run)"
                sens.append(dict(workload=f"rein {kind} {dist} AHI on (004 as run)", instances=n,
                                 max_tps=max_throughput(rein.network(kind, dist, n))[0],
                                 line=line, style=kind))
    sens = pd.DataFrame(sens)
    sens["group"] = np.where(sens.workload.str.startswith("dbSTRESS"), "dbSTRESS, 32 cores",
                             np.where(sens.workload.str.contains("no kernel"),
                                      "rein AHI off, no kernel mutex", "rein, 8 cores"))
    sens["relative"] = sens.max_tps / sens.groupby("workload").max_tps.transform("max")
    return sens


def instances_needed(sens: pd.DataFrame, fraction: float = 0.95) -> pd.DataFrame:
    """Per workload of :func:`instance_sensitivity`: the fewest instances reaching
    ``fraction`` of the best maximum, the best, and the gain over one instance."""
    rec = []
    for (grp, w), g in sens.groupby(["group", "workload"], sort=False):
        m = dict(zip(g.instances, g.max_tps))
        k = instances_for_fraction(m, fraction)
        rec.append(dict(group=grp, workload=w, instances_95pct=k, best_tps=max(m.values()),
                        tps_1_instance=m[1], gain_vs_1=max(m.values()) / m[1]))
    return pd.DataFrame(rec)
