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

from ..config import CostModel, mysql55, pages_from_bytes
from ..contention import (Costs, PageCounts, instances_for_fraction, max_throughput,
                          workload_network)
from ..contention.instances import COUNT_SCALE
from ..pool import Pool
from ..workloads import rein as R
from .contention import DbStress

__all__ = ["USERS", "Rein", "mva_peaks", "des_peaks", "instance_sensitivity",
           "instances_needed", "update_flush_counts", "update_series", "users_chart"]

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
        self._freq, self._counts = {}, {}

    def freq(self, kind: str, dist: str, ahi: bool = True, hot_rows: int = R.HOT_ROWS,
             undo: bool = False):
        """:func:`bufsim.workloads.rein.page_frequency`, computed once per arguments."""
        key = (kind, dist, ahi, hot_rows, undo)
        if key not in self._freq:
            self._freq[key] = R.page_frequency(self.db, kind=kind, dist=dist, ahi=ahi,
                                               hot_rows=hot_rows, undo=undo)
        return self._freq[key]

    def network(self, kind: str, dist: str, n: int, ahi: bool = True,
                hot_rows: int = R.HOT_ROWS, cores: int | None = None, c: Costs | None = None,
                flush_per_instance=None, undo: bool = False):
        """The closed network of one workload over ``n`` instances (idle stations dropped);
        ``flush_per_instance``: expected ``(dirtied, flushed)`` per instance and
        transaction, the flush-list mutex's acquisitions (:func:`update_flush_counts`);
        ``undo``: an UPDATE's undo-log gets too (``page_frequency(..., undo=True)``)."""
        key = (kind, dist, ahi, hot_rows, undo)
        f = self.freq(*key)
        if key not in self._counts:      # the same for every instance count and cost
            self._counts[key] = PageCounts(f, COUNT_SCALE)
        return workload_network(f, n, c or self.costs, cores=cores or self.cores,
                                adaptive_hash_index=ahi, drop_idle=True,
                                flush_per_instance=flush_per_instance, scale=COUNT_SCALE,
                                counts=self._counts[key])


def mva_peaks(rein: Rein, instances, users=USERS):
    """Exact-MVA curves of PK SELECT / UPDATE, hot / uniform, AHI on / off, for MySQL 5.1
    (one instance) and 5.5 at each instance count: ``(peaks, curves)`` DataFrames
    (peaks: the maximum and the fewest users reaching 95% of it)."""
    curves, peaks = [], []
    for kind in ("select", "update"):
        for dist in ("hot", "uniform"):
            for ahi in (True, False):
                for version, n in [("5.1", 1)] + [("5.5", k) for k in instances]:
                    x = np.asarray(rein.network(kind, dist, n, ahi).throughput(256))
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


#: the document's server: innodb_buffer_pool_size = 20G (MySQL 5.5.8)
POOL_SIZE = "20G"


def update_flush_counts(rein: Rein, dist: str, n: int, *, n_updates: int, tps: float,
                        io_capacity: int = 200, max_dirty_pages_pct: int = 75,
                        seed: int = 0) -> dict:
    """Flush-list work of the PK UPDATE series by a replay on MySQL 5.5 rules.

    Two runs of ``n_updates`` UPDATEs (ids from ``dist``, AHI on) on a 20G pool of
    ``n`` instances, one statement every ``1/tps`` virtual seconds (the rate the
    contention model gives: the flushing passes are once a virtual second), on an
    instant device (the document's runs are from memory).  As the document, the second
    run is counted: per instance, its first modifications of clean pages
    (``flush_list_inserts``) and page writes (``NUMBER_PAGES_WRITTEN``, every one a
    flush-list removal), divided by ``n_updates``.

    Returns
    -------
    dict
        ``dirtied``, ``flushed`` (arrays per instance, per UPDATE), ``seconds`` (the
        counted run's virtual length), ``dirty_pages`` (flush-list pages at its end).
    """
    if not (np.isfinite(tps) and tps > 0):
        raise ValueError(f"tps={tps!r} is out of range; allowed: > 0")
    cfg = mysql55(pool_pages=pages_from_bytes(POOL_SIZE, "5.5", instances=n), instances=n,
                  device="instant", io_capacity=io_capacity,
                  max_dirty_pages_pct=max_dirty_pages_pct,
                  cost=CostModel(clock_read_ns=0, make_young_ns=0, miss_cpu_ns=0, evict_ns=0))
    txn_ns = max(1, int(round(1e9 / tps)))
    pool = Pool(cfg, rein.db.tablespaces)
    runs = [R.rein_stream(rein.db, n_updates, kind="update", dist=dist, ahi=True, seed=seed + r,
                          txn_ns=txn_ns).trace() for r in (0, 1)]
    pool.run(runs[0])
    before = pool.stats()
    t0 = pool.clock_ns
    pool.run(runs[1])
    after = pool.stats()

    def delta(col):
        return (after[col] - before[col]).to_numpy(np.int64)

    return dict(dirtied=delta("flush_list_inserts") / n_updates,
                flushed=delta("NUMBER_PAGES_WRITTEN") / n_updates,
                seconds=(pool.clock_ns - t0) / 1e9,
                dirty_pages=int(after["MODIFIED_DATABASE_PAGES"].sum()))


def update_series(rein: Rein, instances, *, n_updates: int, io_capacity: int = 200,
                  max_dirty_pages_pct: int = 75, rounds: int = 2, seed: int = 0,
                  ahi: bool = True, undo: bool = False) -> pd.DataFrame:
    """Maximum throughput of the PK UPDATE series (5.5 rules, ``ahi``: the adaptive hash
    index, on in the document) by instance count, without and with the flush-list
    mutex, hot and uniform.

    The flush-list work depends on the rate (flushing is per virtual second), the rate
    on the work: starting from the network without the flush list, each of ``rounds``
    rounds replays the series at the current maximum (:func:`update_flush_counts`) and
    solves the network with the flush-list mutex again.  With ``undo`` each UPDATE also
    gets its undo page and rollback-segment header (:func:`bufsim.workloads.rein.undo_gets`),
    under 5.5's ``buf_pool->mutex`` of their instances; the replay does not carry them (the
    flush counts are the table's: the 257 undo pages, modified several times a second
    each, stay dirty and add at most 257 flush-list insertions per run).

    Returns
    -------
    pandas.DataFrame
        One row per distribution and instance count: ``dist, ahi, instances,
        tps_no_flush, tps, dirtied_per_update, flushed_per_update,
        flush_list_visits_hottest, flush_list_util_hottest, bottleneck, seconds,
        dirty_pages, break_even_flush_ns, ratio_vs_1``.  ``break_even_flush_ns`` is
        the flush-list hold at which the hottest flush-list mutex would need as much
        time per UPDATE as the kernel mutex (a reading aid, used nowhere).
    """
    rows = []
    for dist in ("hot", "uniform"):
        for n in instances:
            x0 = max_throughput(rein.network("update", dist, n, ahi, undo=undo))[0]
            x, fc, net = x0, None, None
            for _ in range(rounds):
                fc = update_flush_counts(rein, dist, n, n_updates=n_updates, tps=x,
                                         io_capacity=io_capacity,
                                         max_dirty_pages_pct=max_dirty_pages_pct, seed=seed)
                net = rein.network("update", dist, n, ahi, undo=undo,
                                   flush_per_instance=(fc["dirtied"], fc["flushed"]))
                x = max_throughput(net)[0]
            m = net.mva(256)
            util = dict(zip(net.names, m.utilization[-1]))
            fl = {k: v for k, v in util.items() if k.startswith("flush_list")}
            hot = max(fl, key=fl.get) if fl else None
            visits = float(net.visits[net.names.index(hot)]) if hot else 0.0
            rows.append(dict(
                dist=dist, ahi=ahi, undo=undo, instances=n, tps_no_flush=x0, tps=x,
                dirtied_per_update=float(fc["dirtied"].sum()),
                flushed_per_update=float(fc["flushed"].sum()),
                flush_list_visits_hottest=visits,
                flush_list_util_hottest=float(fl[hot]) if hot else 0.0,
                bottleneck=max(util, key=util.get), seconds=fc["seconds"],
                dirty_pages=fc["dirty_pages"],
                break_even_flush_ns=rein.costs.kernel_ns / visits if visits > 0 else np.inf))
    out = pd.DataFrame(rows)
    one = out[out.instances == min(instances)].set_index("dist").tps
    out["ratio_vs_1"] = out.tps / out.dist.map(one)
    out["ratio_vs_1_no_flush"] = out.tps_no_flush / out.dist.map(
        out[out.instances == min(instances)].set_index("dist").tps_no_flush)
    return out


def users_chart(curves: pd.DataFrame):
    """Throughput by users of notebook 04 (the rows of ``mva_peaks``' curves with the
    adaptive hash index on), one line per server configuration and a panel per
    statement and distribution, as an Altair chart.  The subtitle says how far apart
    the servers' curves are at any user count (they may coincide, one line hiding
    the others)."""
    import altair as alt      # here: the drivers import without altair's start-up cost
    d = curves[curves.ahi].copy()
    spread = float((d.groupby(["kind", "dist", "users"]).tps.agg(lambda t: t.max() / t.min() - 1)).max())
    d["server"] = d.config.str.replace(" b", ", innodb_buffer_pool_instances=", regex=False).radd("MySQL ")
    d["panel"] = d.kind.map({"select": "PK SELECT", "update": "PK UPDATE"}) + ", " + d.dist.map(
        {"hot": "hot (first 1M ids)", "uniform": "uniform"})
    legend = alt.Legend(orient="bottom", columns=2, labelLimit=0)
    return alt.Chart(d).mark_line(point=True, strokeWidth=1.5).encode(
        x=alt.X("users:Q", title="users (log scale)", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("tps:Q", title="transactions per second (MVA)"),
        color=alt.Color("server:N", title=None, legend=legend),
        strokeDash=alt.StrokeDash("server:N", legend=None),
        facet=alt.Facet("panel:N", title=None, columns=2),
    ).properties(width=300, height=170, title=alt.TitleParams(
        "rein, 8 cores, adaptive hash index on: throughput by users",
        subtitle=(f"the {d.server.nunique()} servers' curves differ by at most {spread:.1%} "
                  "at any user count, so they are drawn over each other")))
