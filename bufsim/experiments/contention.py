"""Notebook 03's driver: dbSTRESS over 16 (and 64) buffer pool instances
(``003_f5b5e10f3e82aee0.txt``).

:class:`DbStress` holds the dbSTRESS database, its page frequencies (computed once
per workload), the fitted :class:`~bufsim.contention.Costs` and the run settings
(cores, DES transactions, seed, spin time); its methods build the contention
network of one workload and run it (MVA maximum, DES at several user counts).
The functions below it are the notebook's sweeps, each returning plain rows or a
DataFrame.  :func:`dbstress_costs` is also notebook 04's cost fit.
"""
from __future__ import annotations

import concurrent.futures as cf

import numpy as np
import pandas as pd

from .._cores import default_jobs
from ..contention import (Costs, PageCounts, fit_costs, instance_map, max_throughput,
                          wait_shares, workload_network)
from ..contention.instances import COUNT_SCALE
from ..workloads import dbstress as D

__all__ = ["STATEMENTS", "CASES", "FITTED", "RATIOS", "DbStress", "label", "dbstress_costs",
           "frequency_table", "max_tps_levels", "mva_curves", "sim_waits", "doc_waits",
           "section_sensitivity", "uniform_like", "instance_change", "what_if", "des_vs_mva",
           "SEL1_CONFIGS", "listing_configs", "pool_gets", "sel1_listing_range", "wait_layouts"]

#: statements per transaction of each dbSTRESS transaction kind (SEL1+SEL2 = "read": two)
STATEMENTS = {"sel1": 1, "sel2": 1, "read": 2}
#: the workloads of the document's throughput table: SEL1, SEL1+SEL2, SEL2 variants 1..9
CASES = [("sel1", 1), ("read", 1)] + [("sel2", v) for v in range(1, 10)]
#: the three reported maxima the costs are fitted on (the others are predictions)
FITTED = {"sel2_v1", "sel2_v7", "sel1_sel2_ahi0"}
#: throughput ratios between the document's experiments that the notebook checks
RATIOS = [("sel1", "sel1_sel2"), ("sel1", "sel2_v1"), ("sel2_v4", "sel2_v1"),
          ("sel2_v6", "sel2_v1"), ("sel2_v7", "sel1_sel2"), ("sel2_v8", "sel2_v1"),
          ("sel1_sel2", "sel2_v1")]


#: the document's SEL1-only run: its four configurations in the order they were run (#1..#4),
#: each as (``innodb_flush_method`` = O_DIRECT, ``innodb_adaptive_hash_index``); #4 also sets
#: ``innodb_thread_concurrency=32``
SEL1_CONFIGS = ((False, False), (False, True), (True, True), (True, True))


def label(kind: str, v: int) -> str:
    """``'sel2_v3'`` for SEL2 variant 3, else the kind."""
    return kind if kind != "sel2" else f"sel2_v{v}"


def in_threads(fn, items) -> list:
    """``[fn(x) for x in items]``, the calls spread over one thread per core
    (:func:`bufsim._cores.default_jobs`).  For
    independent DES runs (each with its own seed; the simulation kernel releases the GIL):
    the same results, in the same order, as one after another."""
    items = list(items)
    jobs = min(len(items), default_jobs())
    if jobs <= 1:
        return [fn(x) for x in items]
    with cf.ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(fn, items))


class DbStress:
    """The dbSTRESS database of 003 with memoised page frequencies and run settings.

    Parameters
    ----------
    n_objects : int
        Objects of the database (the document's: 1,000,000).
    cores : int
        CPU servers of the network (the document's server: 32).
    transactions : int
        Transactions per DES run.
    seed : int
        A DES run at ``n`` users uses ``seed + n``.
    spin_ns : int
        Spin time of a mutex wait before the thread sleeps (an os_wait), DES runs.
    """

    def __init__(self, n_objects: int = 1_000_000, *, cores: int = 32,
                 transactions: int = 30_000, seed: int = 3, spin_ns: int = 10_000, **sizes):
        self.db = D.dbstress_database(n_objects, **sizes)
        self.n_objects, self.sizes = n_objects, dict(sizes)
        self.cores, self.transactions, self.seed, self.spin_ns = cores, transactions, seed, spin_ns
        self._freq, self._counts, self._des = {}, {}, {}

    def is_database(self, n_objects: int, n_sections: int) -> bool:
        """True if ``dbstress_database(n_objects, n_sections=n_sections)`` is ``self.db``
        (the same arguments)."""
        return (n_objects == self.n_objects and set(self.sizes) <= {"n_sections"}
                and self.sizes.get("n_sections", D.N_SECTIONS) == n_sections)

    def freq(self, kind: str, v: int = 1, ahi: bool = True):
        """:func:`bufsim.workloads.dbstress.page_frequency`, computed once per arguments."""
        key = (kind, v, ahi)
        if key not in self._freq:
            self._freq[key] = D.page_frequency(self.db, kind, variant=v, ahi=ahi)
        return self._freq[key]

    def network(self, kind: str, v: int, ahi: bool, costs: Costs, n: int = 16, **kw):
        """The closed network of one workload over ``n`` instances (``kw``: mapping,
        ahi_parts, drop_idle... of :func:`~bufsim.contention.workload_network`)."""
        key = (kind, v, ahi)
        f = self.freq(kind, v, ahi)
        if key not in self._counts:      # the same for every instance count and cost
            self._counts[key] = PageCounts(f, COUNT_SCALE)
        return workload_network(f, n, costs, cores=self.cores, scale=COUNT_SCALE,
                                counts=self._counts[key],
                                statements=STATEMENTS[kind], adaptive_hash_index=ahi, **kw)

    def max_tps(self, kind: str, v: int, ahi: bool, costs: Costs, n: int = 16, **kw) -> float:
        """Exact-MVA maximum throughput over 1..256 users."""
        return max_throughput(self.network(kind, v, ahi, costs, n, **kw))[0]

    def des(self, kind: str, ahi: bool, costs: Costs, users, *, n_inst: int = 16, v: int = 1,
            mapping=None, also=(), **sim_kw) -> list:
        """DES runs at each user count: ``[(users, SimResult, network), ...]``; ``sim_kw``
        go to :meth:`Network.simulate` (``spin_ns``, ``wakeup``...).  ``also``: other wait
        settings (``dict(spin_ns=..., wakeup=...)``) counted on the same runs, which are
        kept for a later call with them (:func:`~bufsim.contention.simulate_waits`: the
        settings change the counters, not the events).  Runs without a ``mapping`` are
        kept: the same arguments again return the same runs (seeded)."""
        users = list(users)
        rest = dict(sim_kw)
        wait = _wait_setting(rest)
        others = [_wait_setting(dict(a)) for a in also]

        def key_of(w):
            if mapping is not None:
                return None
            try:
                k = (kind, ahi, costs, tuple(users), n_inst, v, tuple(sorted(rest.items())), w)
                hash(k)
            except TypeError:                     # an argument that cannot be a key
                return None
            return k

        key = key_of(wait)
        if key is not None and key in self._des:
            return list(self._des[key])
        waits = [wait] + [w for w in dict.fromkeys(others) if w != wait
                          and (key_of(w) is None or key_of(w) not in self._des)]
        net = self.network(kind, v, ahi, costs, n_inst, mapping=mapping)
        runs = in_threads(lambda n: net.simulate_waits(n, waits, n_transactions=self.transactions,
                                                       seed=self.seed + n, **rest), users)
        for i, w in enumerate(waits):
            out = [(n, r[i], net) for n, r in zip(users, runs)]
            if key_of(w) is not None:
                self._des[key_of(w)] = out
            if i == 0:
                first = out
        return list(first)


def _wait_setting(kw: dict) -> tuple:
    """``(spin_ns, wakeup)`` taken out of simulation keywords (simulate's defaults: 0,
    ``"broadcast"``)."""
    return (kw.pop("spin_ns", 0), kw.pop("wakeup", "broadcast"))


def wait_layouts(ex: DbStress) -> dict:
    """The wait counts notebook 03 sets beside its DES runs' (``ex.spin_ns``, broadcast
    wake-ups): label -> the ``spin_ns`` and ``wakeup`` of :meth:`DbStress.des`."""
    return {"creation order, one os_wait per long wait (handoff)":
            dict(spin_ns=ex.spin_ns, wakeup="handoff"),
            "creation order, every wait counted (spin 0)": dict(spin_ns=0)}


def dbstress_costs(ex: DbStress, tps: pd.DataFrame) -> Costs:
    """The three cost constants fitted on the document's maxima (SEL2 #7 -> kernel_ns,
    SEL2 #1 -> ahi_ns, SEL1+SEL2 AHI off -> get_ns), 16 instances, ``ex.cores`` cores.

    ``tps``: ``data/dbstress_tps.csv`` indexed by experiment.
    """
    return fit_costs(
        [("kernel_ns", ex.freq("sel2", 7, True), 1, True, tps.loc["sel2_v7", "tps"]),
         ("ahi_ns", ex.freq("sel2", 1, True), 1, True, tps.loc["sel2_v1", "tps"]),
         ("get_ns", ex.freq("read", 1, False), 2, False, tps.loc["sel1_sel2_ahi0", "tps"])],
        Costs(get_ns=1_000, ahi_ns=1_000, kernel_ns=10_000), n_instances=16, cores=ex.cores)


def frequency_table(ex: DbStress, cases=CASES) -> pd.DataFrame:
    """Gets and AHI lookups per transaction of each workload, and the three instances
    with the most pool gets (16 instances)."""
    rows = []
    for kind, v in cases:
        for ahi in (True, False):
            f = ex.freq(kind, v, ahi)
            pool = np.bincount(ex.db.tablespaces.instance_of(16),
                               weights=f.gets - f.ahi_lookups - f.optimistic, minlength=16)
            top = np.argsort(-pool)[:3]
            rows.append(dict(workload=label(kind, v), ahi=ahi, gets=f.gets.sum(),
                             ahi_lookups=f.ahi_lookups.sum(),
                             hottest=", ".join(f"{i}:{pool[i]:.1f}" for i in top)))
    return pd.DataFrame(rows)


def max_tps_levels(ex: DbStress, costs: Costs, tps: pd.DataFrame, cases=CASES):
    """Maximum throughput of every case, AHI on and off: ``(levels, results)`` with
    levels by experiment name and result rows for those the document reports."""
    results, levels = [], {}
    for kind, v in cases:
        for ahi in (True, False):
            name = label(kind, v) if kind != "read" else "sel1_sel2"
            name = name + ("" if ahi else "_ahi0")
            levels[name] = ex.max_tps(kind, v, ahi, costs)
            if name in tps.index:
                results.append(dict(experiment="max_tps", metric="tps", config=name,
                                    reported=float(tps.loc[name, "tps"]),
                                    simulated=levels[name], fitted=name in FITTED))
    return levels, results


def mva_curves(ex: DbStress, costs: Costs, cases, users) -> list:
    """Exact-MVA throughput rows (workload, ahi, users, method, tps), 16 instances."""
    rows = []
    for kind, v in cases:
        for ahi in (True, False):
            x = ex.network(kind, v, ahi, costs).throughput(max(users))
            for n in users:
                rows.append(dict(workload=label(kind, v), ahi=ahi, users=n, method="MVA",
                                 tps=float(x[n - 1])))
    return rows


def sim_waits(runs, attr: str = "os_waits") -> np.ndarray:
    """Per-instance pool-mutex waits per second of DES runs, summed over the runs."""
    w = 0
    for n, s, net in runs:
        pools = [i for i, nm in enumerate(net.names) if nm.startswith("pool[")]
        w = w + getattr(s, attr)[pools] / s.sim_time
    return np.asarray(w)


def doc_waits(listings: pd.DataFrame, name: str) -> np.ndarray:
    """The os_waits of the buffer pool mutex (``buf/buf0buf.c:1208``) in one of the
    document's listings (``data/dbstress_mutex_listings.csv``)."""
    x = listings[(listings.listing == name) & (listings.mutex == "buf/buf0buf.c:1208")]
    return x.os_waits.to_numpy(float)


def section_sensitivity(ex: DbStress, costs: Costs, users,
                        sizes=((1_000_000, 100), (1_000_000, 90), (10_000_000, 100),
                               (10_000_000, 90))) -> pd.DataFrame:
    """SEL1 AHI off at 16 instances over databases of (objects, sections): the hottest
    instances' gets and DES wait shares, and the pool-mutex gets per transaction with the
    AHI off and on (:func:`pool_gets`)."""
    rows = []
    for n_obj, n_sec in sizes:
        if ex.is_database(n_obj, n_sec):
            # ex's own database: its frequencies and its DES runs of the same network
            # (SEL1, AHI off, 16 instances, seeds ex.seed + n), made once
            dbs, fs, fs_ahi = ex.db, ex.freq("sel1", 1, False), ex.freq("sel1", 1, True)
            w = sim_waits(ex.des("sel1", False, costs, users, spin_ns=ex.spin_ns))
        else:
            dbs = D.dbstress_database(n_obj, n_sections=n_sec)
            fs = D.page_frequency(dbs, "sel1", variant=1, ahi=False)
            fs_ahi = D.page_frequency(dbs, "sel1", variant=1, ahi=True)
            nets = workload_network(fs, 16, costs, cores=ex.cores, adaptive_hash_index=False)
            runs = in_threads(lambda n: nets.simulate(n, n_transactions=ex.transactions,
                                                      seed=ex.seed + n, spin_ns=ex.spin_ns),
                              users)
            w = sim_waits([(n, r, nets) for n, r in zip(users, runs)])
        pool = np.bincount(dbs.tablespaces.instance_of(16), weights=fs.gets, minlength=16)
        sh = np.sort(w)[::-1] / np.sum(w)
        rows.append(dict(objects=n_obj, sections=n_sec,
                         section_leaves=dbs.index("SECTION").geometry.leaf_pages,
                         pool_gets_ahi_off=float(pool_gets(fs).sum()),
                         pool_gets_ahi_on=float(pool_gets(fs_ahi).sum()),
                         gets_top3=", ".join(f"{x:.2f}" for x in np.sort(pool)[::-1][:3]),
                         shares_top3=", ".join(f"{x:.2f}" for x in sh[:3]),
                         n90=wait_shares(w)["n_for_fraction"]))
    return pd.DataFrame(rows)


def pool_gets(f) -> np.ndarray:
    """Gets per transaction of each page that take its instance's ``buf_pool->mutex`` in
    5.5: all but the AHI hits (``btr_search_guess_on_hash`` fixes the page through
    ``buf_page_get_known_nowait``, block mutex only) and the optimistic cursor restores."""
    return f.gets - f.ahi_lookups - f.optimistic


def listing_configs(configs=SEL1_CONFIGS) -> list[int]:
    """1-based numbers of the configurations whose ``os_waits`` a listing printed after the
    last one can hold: the last one and those before it back to the last change of
    ``innodb_flush_method``.  That variable is read-only in 5.5 (``PLUGIN_VAR_READONLY``
    in ``ha_innodb.cc``): changing it restarts the server, and a restart zeroes every
    mutex's ``count_os_wait`` (kept in memory only).  ``innodb_adaptive_hash_index`` and
    ``innodb_thread_concurrency`` are dynamic (``SET GLOBAL``), so runs after the restart
    may be summed; a restart before each run would leave only the last.  The widest set
    is returned.

    >>> listing_configs(((False, False), (False, True), (True, True), (True, True)))
    [3, 4]
    """
    configs = list(configs)
    if not configs:
        raise ValueError("configs is empty; allowed: one or more (o_direct, ahi) pairs")
    last = len(configs) - 1
    first = last
    while first > 0 and bool(configs[first - 1][0]) == bool(configs[last][0]):
        first -= 1
    return list(range(first + 1, last + 2))


def sel1_listing_range(sens: pd.DataFrame, listed_waits, configs=SEL1_CONFIGS) -> dict:
    """What the model family allows for the SEL1-only listing: the configurations it holds
    (:func:`listing_configs`), their AHI settings, and over every database of ``sens``
    (:func:`section_sensitivity`: objects x sections) the pool-mutex gets per SEL1
    transaction in those configurations.  With no pool-mutex get there is no pool-mutex
    wait on any instance, whatever the page-to-instance map, so no count of "instances
    holding 90%" exists for those runs.  ``excludes``: the listing has pool-mutex waits
    (``listed_waits``, per instance) while every listed configuration of every database
    takes no pool mutex.  ``n90_ahi_off``: the AHI-off run's range over ``sens`` (run #1,
    which the listing does not hold)."""
    listed = listing_configs(configs)
    ahi = sorted({bool(configs[i - 1][1]) for i in listed})
    col = {True: "pool_gets_ahi_on", False: "pool_gets_ahi_off"}
    gets = np.concatenate([sens[col[a]].to_numpy(float) for a in ahi])
    doc = wait_shares(listed_waits)
    return dict(listed=listed, ahi=ahi, pool_gets_min=float(gets.min()),
                pool_gets_max=float(gets.max()), doc_waits=doc["total"],
                doc_n90=doc["n_for_fraction"],
                n90_ahi_off=(int(sens.n90.min()), int(sens.n90.max())),
                excludes=bool(doc["total"] > 0 and gets.max() == 0.0))


def uniform_like(ex: DbStress, f):
    """A page frequency with ``f``'s total gets spread evenly over HISTORY, no AHI."""
    g = np.zeros_like(f.gets)
    ts = ex.db.tablespaces
    sl = ts.page_space_idx == ts.space_names.index("HISTORY")
    g[sl] = f.gets.sum() / sl.sum()
    return type(f)(g, np.zeros_like(g), f.tablespaces, "uniform")


def instance_change(ex: DbStress, costs: Costs) -> pd.DataFrame:
    """Maximum throughput at 16 and 64 instances: SEL2 #1 AHI off and a uniform
    workload with its gets."""
    rows = []
    f1 = ex.freq("sel2", 1, False)
    for name, f in (("SEL2 #1 AHI off", f1), ("uniform, same gets", uniform_like(ex, f1))):
        x = {n: max_throughput(workload_network(f, n, costs, cores=ex.cores,
                                                adaptive_hash_index=False))[0] for n in (16, 64)}
        rows.append(dict(workload=name, tps16=x[16], tps64=x[64], change=x[64] / x[16] - 1))
    return pd.DataFrame(rows)


def what_if(ex: DbStress, costs: Costs) -> pd.DataFrame:
    """SEL1+SEL2 maxima under other page-to-instance maps and AHI partitions."""
    ts = ex.db.tablespaces
    colocated = instance_map(ts, 16, space_ids={"STAT": 4 + 16})
    rows = []
    for name, kw in [("STAT on HISTORY's instance (space ids 16 apart)", dict(mapping=colocated)),
                     ("hot tables spread over spaces (creation order)", {}),
                     ("finer hash: every page on its own",
                      dict(mapping=instance_map(ts, 16, page_shift=0)))]:
        rows.append(dict(whatif=name, ahi=False, tps=ex.max_tps("read", 1, False, costs, **kw)))
    for parts in (1, 8):
        rows.append(dict(whatif=f"{parts} AHI partition(s) (5.7 style)", ahi=True,
                         tps=ex.max_tps("read", 1, True, costs, ahi_parts=parts)))
    return pd.DataFrame(rows)


def des_vs_mva(ex: DbStress, costs: Costs, users) -> pd.DataFrame:
    """SEL1+SEL2 AHI off: DES throughput beside exact MVA at each user count, for the
    product-form network, spinning that holds a core, and deterministic holds on a
    fixed route (every run with seed ``ex.seed``)."""
    net = ex.network("read", 1, False, costs)
    mva = net.throughput(256)
    vnet = ex.network("read", 1, False, costs, drop_idle=True)
    v = vnet.visits
    vnet = type(vnet)(vnet.names, vnet.service * np.rint(v), np.rint(v), vnet.servers, 0.0)
    models = [("product form", net, {}), ("spinning holds a core", net, dict(hold_core=True)),
              ("deterministic holds, fixed route", vnet,
               dict(service_dist="deterministic", routing="fixed"))]
    cases = [(n, name, nw, kw) for n in users for name, nw, kw in models]
    runs = in_threads(lambda c: c[2].simulate(c[0], n_transactions=ex.transactions,
                                              seed=ex.seed, **c[3]), cases)
    rows = [dict(users=n, model=name, des=s.throughput, mva=float(mva[n - 1]),
                 diff=s.throughput / mva[n - 1] - 1)
            for (n, name, _, _), s in zip(cases, runs)]
    return pd.DataFrame(rows)
