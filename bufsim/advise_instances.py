"""Instances in :func:`bufsim.advise.advise`, only on evidence (its module docstring,
point 4): whether the contention model runs for a server and a trace, and the model itself
(per-instance demand from replays at the recommended size, exact MVA)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .advise_report import mib
from .config import MIN_POOL_PAGES, PAGE_SIZE
from .versions import RECORDS as _RECORDS

__all__ = ["assessed", "modelled", "CONTENTION_SERVERS", "INSTANCE_COUNTS",
           "DEFAULT_GETS_PER_TXN"]

#: the servers whose mutex rules the contention model follows
CONTENTION_SERVERS = tuple(r.server for r in _RECORDS.values() if r.contention_modelled)
INSTANCE_COUNTS = (1, 2, 4, 8, 16, 32, 64)
#: Gets per transaction assumed when a trace has no statement marks.
DEFAULT_GETS_PER_TXN = 100


def assessed(base, rec, threads, cores, n_threads, min_pages):
    """Whether the contention model runs: ``(instances or None, note, counts to model)``."""
    evidence = threads is not None or cores is not None or n_threads > 1
    server = base.server
    if server.single_pool:
        return 1, (f"**1**: {server.server} has a single buffer pool "
                   "(innodb_buffer_pool_instances is ignored from 10.5 on), so there is "
                   "nothing to choose."), []
    if server.instances_rule != "one" and rec < 2**30 // PAGE_SIZE:
        return 1, (f"**1**: {server.server} uses one instance whatever "
                   "innodb_buffer_pool_instances says when the pool is below 1 GiB "
                   f"(the recommended pool is {mib(rec)}), so there is nothing to choose."), []
    if not server.contention_modelled:
        return None, (f"**not assessed**: the contention model follows the mutex rules of "
                      f"{', '.join(CONTENTION_SERVERS)} only, not {server.server}'s."), []
    if not evidence:
        return None, ("**not assessed**: the trace has one thread and no `--threads`/`--cores` "
                      "were given, so there is no evidence of concurrency to model; give them "
                      "to run the contention model."), []
    return None, "", [n for n in INSTANCE_COUNTS if rec // n >= MIN_POOL_PAGES]


def modelled(trace, per_n, threads, cores, n_threads, base, gets, stmt_ends,
                        gets_per_txn, costs, rec):
    """The contention model's table, recommended count, its note and assumptions."""
    th = threads if threads is not None else n_threads
    co = cores if cores is not None else th
    inst, rec_n, assumptions = _model(trace, per_n, th, co, base, gets, stmt_ends,
                                          gets_per_txn, costs)
    src_t = "given" if threads is not None else f"the trace's {n_threads} threads"
    src_c = "given" if cores is not None else "assumed one per thread"
    assumptions.insert(0, f"{th} closed-loop user threads ({src_t}) on {co} cores "
                          f"({src_c}), no think time")
    row_n = inst[inst["instances"] == rec_n].iloc[0]
    best = inst["throughput_tps"].max()
    if len(inst) == 1:
        note = f"**1**: at {mib(rec)} more instances would leave one below 320 pages."
    else:
        note = (f"**{rec_n}**: the smallest count within 95% of the best modelled "
                f"throughput ({row_n['throughput_tps']:,.0f} of {best:,.0f} tx/s); "
                f"there the busiest station is {row_n['bottleneck']} (utilization "
                f"{row_n['utilization']:.0%}), the hottest instance carries "
                f"{row_n['hottest_share']:.0%} of the pool-mutex demand.")
    return inst, rec_n, note, assumptions


def _model(trace, per_n, threads, cores, base, gets, stmt_ends, gets_per_txn, costs=None):
    """The contention model (module docstring, point 4); ``per_n`` maps an instance count to
    the per-instance counters of its replay at the recommended size."""
    from .contention import Costs, instance_demand, instances_for_fraction
    src_costs = "given" if costs is not None else "bufsim.contention.Costs defaults, not calibrated"
    costs = costs if costs is not None else Costs()
    version = base.version
    server = base.server
    if stmt_ends:
        n_txn = float(stmt_ends)
        g_txn = gets / n_txn
        txn_note = (f"a transaction is a statement: the trace marks {stmt_ends:,} statement "
                    f"ends, {g_txn:,.1f} gets each on average")
    else:
        g_txn = float(gets_per_txn or DEFAULT_GETS_PER_TXN)
        n_txn = gets / g_txn
        txn_note = (f"a transaction is {g_txn:g} page gets (the trace has no statement "
                    f"marks; `--gets-per-txn` changes it), so the trace is {n_txn:,.0f} "
                    "transactions")
    hold = costs.hold(g_txn, 1.0)
    rows = []
    for n, stats in sorted(per_n.items()):
        d = instance_demand(trace, n_instances=n, version=version, hold=hold,
                            n_transactions=n_txn, replay=stats)
        net = d.network(cores, 0.0)
        m = net.mva(threads)
        u = m.utilization[-1]
        k = int(np.argmax(u))
        tot = d.pool_demand.sum()
        rows.append({"instances": n, "throughput_tps": round(float(m.throughput[-1]), 1),
                     "hottest_share": round(float(d.pool_demand.max() / tot), 3)
                     if tot > 0 else 0.0,
                     "bottleneck": net.names[k], "utilization": round(float(u[k]), 3)})
    inst = pd.DataFrame(rows)
    rec_n = instances_for_fraction(dict(zip(inst["instances"], inst["throughput_tps"])), 0.95)
    assumptions = [
        txn_note,
        f"mutex rules of MySQL {version}: " + ("every page get takes its instance's mutex, "
                                               "as do make-young moves and reads"
                                               if server.get_takes_pool_mutex else
                                               "only make-young moves and page reads take the "
                                               "instance mutex (hits use the page-hash "
                                               "rw-lock)"),
        f"hold times per acquisition ({src_costs}): get {costs.get_ns:g} ns, make-young move "
        f"{costs.move_ns:g} ns, page read {costs.miss_ns:g} ns, adaptive-hash-index lookup "
        f"{costs.ahi_ns:g} ns, kernel mutex {costs.kernel_ns:g} ns per transaction",
        f"CPU per transaction: {costs.stmt_cpu_ns:g} ns + {costs.get_cpu_ns:g} ns per get = "
        f"{hold.cpu_ns / 1000:,.1f} us, outside every mutex",
        "a page's instance is InnoDB's fold(space, page_no >> 6) mod N",
        "product-form queueing: FIFO mutexes with exponential holds, a waiting thread uses no "
        "core, no spinning; I/O time is not in the network (the threads never wait for disk)",
        "instance counts 1, 2, 4, ... 64 with at least 320 pages per instance",
    ]
    return inst, int(rec_n), assumptions
