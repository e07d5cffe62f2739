"""Transactions as page gets: the event builder shared by the OLTP workloads.

sysbench, rein and dbSTRESS transactions are short sequences of statements, each a
few B-tree descents and short range scans.  :class:`_Events` collects the gets of
many transactions at once (vectorised over transactions), :func:`txn_operator`
turns a per-batch builder into an :class:`~bufsim.workloads.plans.Operator`, and
:class:`PageFrequency` holds the expected gets per page of a workload, for the
contention models (per-instance demand) without expanding a trace.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .._validation import check_int
from ..pages import Tablespaces
from ..trace import FLAG_AHI, FLAG_MODIFY, FLAG_STMT_END, Chunk
from .plans import CpuCost, Database, Operator

__all__ = ["PageFrequency"]


# --------------------------------------------------------------------------------------
# shared: events of a batch of transactions
# --------------------------------------------------------------------------------------
def stmt_key(stmt, j, p):
    """Order of an event inside its transaction: statement, step, position."""
    return (np.asarray(stmt, np.int64) << 32) | (np.asarray(j, np.int64) << 8) | np.asarray(p, np.int64)


class _Events:
    """Events of a batch of transactions, added out of order and sorted on finish.

    Every event belongs to a transaction ``txn`` and has a key (:func:`stmt_key`);
    :meth:`chunk` sorts by (txn, key) and charges CPU: ``get_ns + rows *
    row_ns // count`` per get, plus ``query_ns`` on the first event of every
    statement and ``txn_ns`` on the first event of every transaction (the
    builders make those events single gets, so the charge is exact).  The last
    event of every statement (a run of equal (txn, ``key >> 32``)) carries
    :data:`bufsim.FLAG_STMT_END`, as :func:`bufsim.workloads.plans.statement`
    marks a one-statement operator: every statement of a transaction ends with
    its own call to the server's activity count.
    """

    def __init__(self):
        self.parts = []

    def add(self, mask, txn, key, page, count=1, rows=0, flags=0):
        mask = np.asarray(mask, dtype=bool)
        shape = mask.shape
        cols = [np.broadcast_to(np.asarray(a, dtype=np.int64), shape)[mask]
                for a in (txn, key, page, count, rows, flags)]
        if cols[0].size:
            self.parts.append(cols)

    def chunk(self, cpu: CpuCost, stream: int, query_ns: int = 0, txn_ns: int = 0) -> Chunk:
        if not self.parts:
            return Chunk.empty()
        txn, key, page, count, rows, flags = (np.concatenate(c) for c in zip(*self.parts))
        order = np.lexsort((key, txn))
        txn, key, page, count, rows, flags = (a[order] for a in (txn, key, page, count, rows, flags))
        cpu_ns = cpu.get_ns + (rows * cpu.row_ns) // count
        stmt = key >> 32
        new_txn = np.ones(txn.size, dtype=bool)
        new_txn[1:] = txn[1:] != txn[:-1]
        new_stmt = new_txn.copy()
        new_stmt[1:] |= stmt[1:] != stmt[:-1]
        if query_ns or txn_ns:
            cpu_ns = cpu_ns + (query_ns * new_stmt + txn_ns * new_txn) // count
        stmt_end = np.empty(txn.size, dtype=bool)
        stmt_end[:-1] = new_stmt[1:]
        stmt_end[-1:] = True
        flags = flags | np.where(stmt_end, FLAG_STMT_END, 0)
        return Chunk(page, count, cpu_ns, np.full(page.size, stream, dtype=np.int64),
                     flags.astype(np.uint8))


def leaf_descents(ev: _Events, db: Database, table: str, ix, entries, txn, stmt, j=0, p0=0, *,
              ahi: bool = False, modify: bool = False, rows: int = 1, mask=None) -> None:
    """Root-to-leaf descents to key-order ``entries`` of ``ix`` (or one FLAG_AHI leaf get
    each with ``ahi``), the leaf carrying ``rows``; ``modify`` adds the optimistic
    cursor restore of ``row_upd_clust_step``: one more leaf get with FLAG_MODIFY."""
    entries = np.asarray(entries, dtype=np.int64)
    shape = entries.shape
    mask = np.ones(shape, dtype=bool) if mask is None else np.broadcast_to(mask, shape)
    txn = np.broadcast_to(np.asarray(txn, np.int64), shape)
    j = np.broadcast_to(np.asarray(j, np.int64), shape)
    stmt = np.broadcast_to(np.asarray(stmt, np.int64), shape)
    paths = db.dense(table, ix.paths(ix.leaf_of(entries.ravel()))).reshape(shape + (ix.height,))
    if ahi:
        paths = paths[..., -1:]
    w = paths.shape[-1]
    for lvl in range(w):
        last = lvl == w - 1
        ev.add(mask, txn, stmt_key(stmt, j, p0 + lvl), paths[..., lvl], 1, rows if last else 0,
               FLAG_AHI if (ahi and last) else 0)
    if modify:
        ev.add(mask, txn, stmt_key(stmt, j, p0 + w), paths[..., -1], 1, 0, FLAG_MODIFY)


def descent_width(ix, ahi: bool, modify: bool) -> int:
    return (1 if ahi else ix.height) + int(modify)


def clustered_ranges(ev: _Events, db: Database, table: str, ix, first, n, txn, stmt) -> None:
    """Range scans of ``n`` entries from key-order ``first`` (arrays over statements),
    with the gets of :func:`bufsim.workloads.plans.range_scan` (read past the end)."""
    first = np.asarray(first, dtype=np.int64)
    n = np.broadcast_to(np.asarray(n, np.int64), first.shape)
    txn = np.broadcast_to(np.asarray(txn, np.int64), first.shape)
    g = ix.geometry
    pl, h, total = g.per_leaf, ix.height, g.rows
    extra = (first + n < total).astype(np.int64)
    l0 = first // pl
    l1 = (first + n + extra - 1) // pl
    if h > 1:
        up = db.dense(table, ix.paths(l0)[:, :-1])
        for lvl in range(h - 1):
            ev.add(np.ones(first.shape, bool), txn, stmt_key(stmt, 0, lvl), up[:, lvl])
    L = int((l1 - l0).max()) + 1 if first.size else 0
    leaf = l0[:, None] + np.arange(L)
    valid = leaf <= l1[:, None]
    lo = np.maximum(first[:, None], leaf * pl)
    k = np.clip(np.minimum((first + n)[:, None], (leaf + 1) * pl) - lo, 0, None)
    past = valid & (extra[:, None] == 1) & (leaf == l1[:, None])
    pages = db.dense(table, ix.leaves[np.minimum(leaf, g.leaf_pages - 1)])
    t2, j = txn[:, None], 1 + np.arange(L)[None, :]
    ev.add(valid, t2, stmt_key(stmt, j, 0), pages)
    ev.add(valid & (k > 0), t2, stmt_key(stmt, j, 1), pages, k, k)
    ev.add(past, t2, stmt_key(stmt, j, 2), pages)


def range_gets(ix, first, n) -> np.ndarray:
    """Gets of each clustered range scan: (h-1) + leaves touched + n + past-end entry."""
    first = np.asarray(first, np.int64)
    g = ix.geometry
    extra = (first + n < g.rows).astype(np.int64)
    leaves = (first + n + extra - 1) // g.per_leaf - first // g.per_leaf + 1
    return (ix.height - 1) + leaves + n + extra


# --------------------------------------------------------------------------------------
# shared: a stream of transactions as an Operator
# --------------------------------------------------------------------------------------
def txn_operator(name: str, db: Database, n_txn: int, batch: int, seed: int,
                  draw: Callable, build: Callable, count: Callable, cpu: CpuCost,
                  query_ns: int, txn_ns: int) -> Operator:
    """An Operator over ``n_txn`` transactions drawn ``batch`` at a time.

    ``draw(rng, b, lo)`` returns the random parameters of transactions ``lo..lo+b-1``,
    ``build(ev, params)`` adds their events, ``count(params)`` returns their
    (rows, gets) by plan arithmetic, independently of the events.  Counting
    draws the whole stream once (cheap: no events are built).
    """
    for f, v in (("n_txn", n_txn), ("batch", batch), ("query_ns", query_ns), ("txn_ns", txn_ns)):
        check_int(f, v, 1 if f == "batch" else 0)

    def batches():
        rng = np.random.default_rng(seed)
        for lo in range(0, n_txn, batch):
            yield draw(rng, min(batch, n_txn - lo), lo)

    rows = gets = 0
    for params in batches():
        r, g = count(params)
        rows += int(r)
        gets += int(g)

    def chunks(stream):
        for params in batches():
            ev = _Events()
            build(ev, params)
            yield ev.chunk(cpu, stream, query_ns, txn_ns)

    return Operator(name, chunks, rows, gets, db.tablespaces)


# --------------------------------------------------------------------------------------
# shared: expected page frequencies (for the contention models)
# --------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PageFrequency:
    """Expected gets per dense page for one transaction of a workload.

    Attributes
    ----------
    gets : numpy.ndarray of float64
        Expected page gets per transaction, one per dense page (an AHI lookup
        counted once, as in a trace).
    ahi_lookups : numpy.ndarray of float64
        The part of ``gets`` that are AHI lookups (FLAG_AHI).
    tablespaces : Tablespaces
    name : str
    optimistic : numpy.ndarray of float64, optional
        The part of ``gets`` that are optimistic re-latches of a stored cursor
        position (``btr_pcur_restore_position`` -> ``buf_page_optimistic_get``, e.g. an
        UPDATE's restore of the row it found): they take the block mutex, not the
        pool mutex (:func:`bufsim.contention.instance_demand`).  Zero if not given.
    """

    gets: np.ndarray
    ahi_lookups: np.ndarray
    tablespaces: Tablespaces
    name: str = ""
    optimistic: np.ndarray | None = None

    def __post_init__(self):
        if self.optimistic is None:
            object.__setattr__(self, "optimistic", np.zeros_like(self.gets, dtype=np.float64))

    @property
    def gets_per_txn(self) -> float:
        return float(self.gets.sum())

    def counts(self, n_transactions: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Integer gets, AHI lookups and optimistic gets per page for ``n_transactions``
        (rounded), for :func:`bufsim.contention.instance_demand` (``source=gets,
        ahi_lookups=ahi, optimistic=opt, n_transactions=n_transactions``)."""
        t = float(n_transactions)
        gets = np.rint(self.gets * t).astype(np.int64)
        ahi = np.rint(self.ahi_lookups * t).astype(np.int64)
        # (rounded apart, the parts could exceed their whole by one)
        return gets, ahi, np.minimum(np.rint(self.optimistic * t).astype(np.int64), gets - ahi)

    def per_instance(self, n_instances: int) -> np.ndarray:
        """Expected gets per transaction of each buffer-pool instance."""
        inst = self.tablespaces.instance_of(n_instances)
        return np.bincount(inst, weights=self.gets, minlength=n_instances)

    def __add__(self, other: "PageFrequency") -> "PageFrequency":
        return PageFrequency(self.gets + other.gets, self.ahi_lookups + other.ahi_lookups,
                             self.tablespaces, f"{self.name} + {other.name}",
                             self.optimistic + other.optimistic)

    def scale(self, w: float) -> "PageFrequency":
        return PageFrequency(self.gets * w, self.ahi_lookups * w, self.tablespaces, self.name,
                             self.optimistic * w)


def freq_zero(db: Database, name: str = "") -> PageFrequency:
    n = db.tablespaces.n_pages
    return PageFrequency(np.zeros(n), np.zeros(n), db.tablespaces, name)


def add_descent_freq(freq: PageFrequency, db: Database, table: str, ix, leaf_w, *,
                      ahi: bool = False, modify: bool = False, leaf: bool = True) -> None:
    """Add descents ending on each leaf position with weights ``leaf_w`` (length
    ``leaf_pages``): every level of the path (or the leaf alone with ``ahi``), plus
    the restore get of an update with ``modify``; ``leaf=False`` adds the levels
    above the leaves only."""
    w = np.asarray(leaf_w, dtype=np.float64)
    leaves = db.dense(table, ix.leaves)
    if leaf:
        np.add.at(freq.gets, leaves, w * (1 + int(modify)))
        if modify:   # the restore: btr_pcur_restore_position -> buf_page_optimistic_get
            np.add.at(freq.optimistic, leaves, w)
    if ahi:
        if leaf:
            np.add.at(freq.ahi_lookups, leaves, w)
        return
    pn = ix.geometry.per_node
    for lvl in range(1, ix.height):
        w = np.bincount(np.arange(w.size) // pn, weights=w)
        np.add.at(freq.gets, db.dense(table, ix.levels[lvl]), w[:len(ix.levels[lvl])])


def leaf_weights_uniform(ix, lo: int, hi: int) -> np.ndarray:
    """Probability that a uniformly random entry of ``[lo, hi)`` lies on each leaf."""
    pl = ix.geometry.per_leaf
    leaf = np.arange(ix.geometry.leaf_pages, dtype=np.int64)
    k = np.clip(np.minimum(hi, (leaf + 1) * pl) - np.maximum(lo, leaf * pl), 0, None)
    return k / max(hi - lo, 1)
