"""Issue 36's acceptance on document 004 (hot vs uniform: instances): ``advise`` on traces of
the rein table's PK SELECT and UPDATE, with the document's 8 cores and 64 users (its peak
concurrency), recommends the instance count the document states and notebook 04's model
gives (docs/findings.md, "04"): UPDATE needs several instances ("ein MUST": one instance's
pool mutex carries the UPDATE's undo-log gets), SELECT does not ("Keine großen Sprünge":
the kernel mutex binds at every count); without threads/cores the count is not assessed.

The traces are :func:`bufsim.workloads.rein.rein_stream`'s statements (adaptive hash index
on, as on the document's server) with, per UPDATE, the undo-log gets notebook 04 models
(:func:`bufsim.workloads.rein.undo_gets`: 3 gets of its rollback segment's update undo page,
1 of the segment's header, round-robin over 128 segments, the TRX_SYS page once per 256),
as events of space 0.  The contention costs are notebook 04's: fitted on document 003
(:func:`bufsim.experiments.contention.dbstress_costs`), nothing fitted on 004.  The pool is
sized by the default rule (the document's 20G pool holds the hot set): the UPDATE's reads
have two cliffs, at 6 MiB, where the 257 undo pages and the upper levels start to fit
(there no second instance would hold 320 pages), and where the hot leaves fit; the rule
takes the first cliff that ends where the statement stream's own working set (its LRU
curve) fits, the second; the uniform UPDATE's reads have no such cliff, and the rule
takes the smallest size within the margin of the footprint's reads.

Default tier: the table scaled to 3M rows (hot = the document's first 1M ids, 3,650
leaves), 20,000 statements; slow: 300M rows, 100,000 statements.  A Trace cannot mark the
UPDATE's cursor restore as an optimistic get, so the contention model charges it to the
pool mutex: one instance then carries five pool-mutex gets per UPDATE (notebook 04: four).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bufsim import paths
from bufsim.advise import advise
from bufsim.experiments import contention as C
from bufsim.trace import FLAG_MODIFY, FLAG_STMT_END, Trace
from bufsim.workloads import rein as R

CORES, USERS = 8, 64                  # 004: 2 x 4-core X5550; peak throughput at 64 users


@pytest.fixture(scope="module")
def costs():
    tps003 = pd.read_csv(paths.data_dir() / "dbstress_tps.csv").set_index("experiment")
    return C.dbstress_costs(C.DbStress(1_000_000, cores=32), tps003)


def rein_trace(db, n, kind, dist, seed=0) -> Trace:
    """``n`` PK statements of ``kind`` over ``dist`` ids, each UPDATE followed by its undo-log
    gets (module docstring), over ``with_system_space(db)``; a statement ends on its last
    get (FLAG_STMT_END)."""
    c = R.rein_stream(db, n, kind=kind, dist=dist, ahi=True, seed=seed).trace().materialize()
    pages, _, n_sys = R.undo_gets()
    ts = R.with_system_space(db, n_sys)
    page, flags = c.page + n_sys, c.flags.copy()          # space 0 comes first
    end = np.flatnonzero(flags & FLAG_STMT_END)
    assert len(end) == n
    if kind == "select":
        return Trace.from_arrays(page, c.count, c.cpu_ns, 0, flags, tablespaces=ts,
                                 name=f"rein {kind} {dist}")
    stmt = np.repeat(np.arange(n), np.diff(np.concatenate([[-1], end])))
    k = np.arange(n) % R.N_RSEGS                          # trx_assign_rseg: round-robin
    header = np.where(k == 0, R.FIRST_RSEG_PAGE, R.SYSTEM_FREE_PAGE + k - 1)
    undo = R.SYSTEM_FREE_PAGE + (R.N_RSEGS - 1) + k
    trx = np.flatnonzero(np.arange(n) % 256 == 0)
    xs = np.concatenate([np.arange(n), np.arange(n), trx])
    xp = np.concatenate([undo, header, np.full(trx.size, R.TRX_SYS_PAGE)])
    xc = np.concatenate([np.full(n, R.UNDO_PAGE_GETS), np.full(n, R.RSEG_HEADER_GETS),
                         np.ones(trx.size, np.int64)])
    flags &= ~np.uint8(FLAG_STMT_END)
    o = np.argsort(np.concatenate([stmt, xs]), kind="stable")   # each statement's own, then its undo
    allp = np.concatenate([page, xp])[o]
    alls = np.concatenate([stmt, xs])[o]
    allf = np.concatenate([flags, np.full(xs.size, FLAG_MODIFY, np.uint8)])[o]
    allf[np.flatnonzero(np.diff(np.append(alls, n)))] |= np.uint8(FLAG_STMT_END)
    return Trace.from_arrays(allp, np.concatenate([c.count, xc])[o],
                             np.concatenate([c.cpu_ns, np.zeros(xs.size, np.int64)])[o], 0, allf,
                             tablespaces=ts, name=f"rein {kind} {dist}")


def _check(db, n, costs, dists):
    for kind in ("update", "select"):
        for dist in dists:
            tr = rein_trace(db, n, kind, dist)
            rep = advise(tr, preset="mysql55", threads=USERS, cores=CORES, costs=costs, jobs=1)
            inst = rep.instances.set_index("instances")
            first = rep.markdown().split("\n")[:3]
            line = next(x for x in first if "innodb_buffer_pool_instances" in x)
            best = inst["throughput_tps"].max()
            assert "64 closed-loop user threads (given) on 8 cores (given)" in rep.markdown()
            if kind == "update":
                assert len(inst) >= 3, (dist, rep.recommended_pages)      # 1, 2, 4 at least
                # one instance: its pool mutex binds, below 95% of the best; more spread
                # the undo pages and the kernel mutex binds, as in notebook 04
                assert inst.loc[1, "bottleneck"] == "pool[0]"
                assert inst.loc[1, "throughput_tps"] < 0.9 * best
                assert rep.recommended_instances > 1
                assert inst.loc[rep.recommended_instances, "bottleneck"] == "kernel"
                assert "pool-mutex demand" in line and "kernel" in line
            else:
                # the kernel mutex binds at every count: nothing to gain from instances (at
                # full size 100,000 uniform SELECTs touch each leaf about once: no stream is
                # latency-bound, the pool is 5 MiB and one instance is the only count)
                assert (inst["bottleneck"] == "kernel").all()
                assert inst["throughput_tps"].min() > 0.99 * best
                assert rep.recommended_instances == 1
                assert ("**1**: the smallest count within 95%" in line if len(inst) > 1
                        else "more instances would leave one below 320 pages" in line)
    # without threads/cores evidence (one-thread trace): not assessed
    rep = advise(rein_trace(db, n, "update", "hot"), preset="mysql55", costs=costs, jobs=1)
    assert rep.recommended_instances is None and rep.instances.empty
    assert "**not assessed**" in next(x for x in rep.markdown().split("\n")[:3]
                                      if "innodb_buffer_pool_instances" in x)


def test_document_004_instances_scaled(costs):
    """3M rows (hot: the document's first 1M ids), 20,000 statements: 9 s (3 s the costs'
    fit on 003's database, 6 s five advice runs) with warm caches; 45 s at load average 10."""
    _check(R.rein_database(3_000_000), 20_000, costs, ("hot", "uniform"))


@pytest.mark.slow
def test_document_004_instances_full_size(costs):
    """The document's 300M-row table and 100,000 statements per series."""
    _check(R.rein_database(), 100_000, costs, ("hot", "uniform"))
