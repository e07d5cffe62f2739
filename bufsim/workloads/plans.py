"""Plan operators: how a query's rows become page gets, as trace chunks in bounded memory.

The page gets each operator issues follow what InnoDB's row-search code does
(``row0sel``; spec §14 of ``design/innodb-buffer-pool.md``):

* **Full clustered-index scan** (``type: ALL``): a descent from the root to the
  first leaf (one get per level), then one get per row (MySQL 5.5/5.6 restore the
  cursor with an optimistic get for every row fetched, counted as a page get) and
  one get to step onto each following leaf.  Gets of one leaf are consecutive,
  so a leaf is one event of ``rows + 1`` gets.
* **Index lookup** (``eq_ref``/``ref`` probe, primary-key point select): a
  root-to-leaf descent, one get per level; with the adaptive hash index a probe
  that the hash answers is one get of the leaf carrying :data:`bufsim.FLAG_AHI`
  (``ahi=True``: the engine counts it twice and runs the make-young check twice,
  §3.2) or :data:`bufsim.FLAG_SHORTCUT` (``ahi="shortcut"``: a unique lookup of a
  consistent read under the held search latch, one get and no check); the engine
  treats either as a normal get when the page is not resident.
* **Index range scan**: a descent to the first entry, then one get per entry and
  one per leaf step, as the full scan; on a secondary index each entry is
  followed by the clustered lookup of its row (a descent by primary key or row id).
* **Batched Key Access** and **Disk-Sweep MRR** reorder lookups: keys (or row
  ids) are collected into a buffer of ``buffer_bytes`` and sorted before they are
  probed, batch by batch (:func:`batch_sort`).
* **Updates** carry :data:`bufsim.FLAG_MODIFY` on the leaf they change.

Every operator is a :class:`Operator`: a generator factory of :class:`bufsim.Chunk`
(bounded: at most ``batch`` rows are expanded at a time) and the rows and page
gets it issues, computed from the plan's arithmetic, so tests can check the trace
against its plan without the engine.  CPU: each row costs ``CpuCost.row_ns`` and
each get ``CpuCost.get_ns``; an event of ``k`` gets covering ``r`` rows charges
``get_ns + (r * row_ns) // k`` per get.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Iterator, Sequence

import numpy as np

from .._validation import check_int, check_int_fields
from ..pages import Tablespaces
from ..trace import (FLAG_AHI, FLAG_DESCENT, FLAG_MODIFY, FLAG_NO_RA, FLAG_SHORTCUT, FLAG_STEP,
                     FLAG_STMT_END, Chunk, Trace)
from ._kernels import kept_runs
from .geometry import SpaceLayout, Table, layout_space, table_geometry

__all__ = ["CpuCost", "Database", "Operator", "full_scan", "lookups", "range_scan",
           "secondary_range", "scan_join", "batch_sort", "dedupe_consecutive", "sequence",
           "statement", "EXECUTORS", "relatch_flag", "mariadb1011_scan_events"]

#: rows expanded into events at a time
BATCH = 1 << 16


@dataclass(frozen=True)
class CpuCost:
    """CPU charged by the executor: per row produced and per page get (nanoseconds, >= 0)."""

    row_ns: int = 0
    get_ns: int = 0

    def __post_init__(self):
        check_int_fields(self, ("row_ns", "get_ns"), 0)


class Database:
    """Tables laid out one per tablespace, and the dense page map over all of them.

    Parameters
    ----------
    tables : sequence of Table
        Space ids are ``first_space_id, first_space_id + 1, ...`` in this order.
    first_space_id : int
    seed : int
        Orders the leaves of randomly filled indexes (:func:`layout_space`).
    """

    def __init__(self, tables: Sequence[Table], *, first_space_id: int = 1, seed: int = 0):
        tables = list(tables)
        if not tables:
            raise ValueError("tables must name at least one Table")
        names = [t.name for t in tables]
        if len(set(names)) != len(names):
            raise ValueError(f"table names must be unique, got {names}")
        self.layouts = {t.name: layout_space(table_geometry(t), first_space_id + k, seed=seed + k)
                        for k, t in enumerate(tables)}
        self.tablespaces = Tablespaces([lay.space_spec() for lay in self.layouts.values()])
        self._base = dict(zip(names, self.tablespaces.bases.tolist()))

    def table(self, name: str) -> SpaceLayout:
        try:
            return self.layouts[name]
        except KeyError:
            raise KeyError(f"no table {name!r}; tables: {list(self.layouts)}") from None

    def index(self, table: str, index: str | None = None):
        lay = self.table(table)
        return lay.clustered if index is None else lay.index(index)

    def dense(self, table: str, page_no) -> np.ndarray:
        """Dense page indices of ``table``'s page numbers."""
        return np.asarray(page_no, dtype=np.int64) + self._base[table]


@dataclass(frozen=True, eq=False)
class Operator:
    """A plan fragment: its chunks (a generator factory) and what it should issue.

    Attributes
    ----------
    name : str
    factory : callable
        ``factory(stream)`` returns an iterator of Chunk for that stream id.
    rows : int
        Rows the operator reads (``Innodb_rows_read``).
    gets : int
        Page gets it issues (AHI hits counted once; the engine counts them twice).
    pages : callable or None
        ``pages()`` returns the dense pages the plan touches (with repeats), derived
        from the plan's entries and B-tree paths, not from the chunks; None where
        an operator does not provide it.
    """

    name: str
    factory: Callable[[int], Iterator[Chunk]]
    rows: int
    gets: int
    tablespaces: Tablespaces
    pages: Callable[[], np.ndarray] | None = None

    def chunks(self, stream: int = 0) -> Iterator[Chunk]:
        return self.factory(stream)

    def distinct_pages(self) -> int:
        """Distinct pages the plan touches (see ``pages``)."""
        if self.pages is None:
            raise ValueError(f"operator {self.name!r} does not list its pages")
        return int(np.unique(self.pages()).size)

    def renamed(self, name: str) -> Operator:
        return replace(self, name=name)

    def trace(self, stream: int = 0, name: str | None = None) -> Trace:
        """A lazily generated, re-iterable :class:`bufsim.Trace`."""
        return Trace(lambda: self.factory(stream), self.tablespaces, name or self.name)


def emit_chunk(pages, rows, cpu: CpuCost, stream: int, flags, breaks=None) -> Chunk:
    """One chunk from per-get arrays, consecutive gets of a page with equal flags merged.

    ``pages``: dense page of every get; ``rows``: rows attributed to each get;
    ``flags``: per get (array or scalar); ``breaks``: positions where a run must start
    (the gets of different segments are never merged).
    """
    pages = np.asarray(pages, dtype=np.int64)
    n = pages.size
    flags = np.broadcast_to(np.asarray(flags, dtype=np.uint8), (n,))
    rows = np.broadcast_to(np.asarray(rows, dtype=np.int64), (n,))
    if n == 0:
        return Chunk.empty()
    start = np.ones(n, dtype=bool)
    start[1:] = (pages[1:] != pages[:-1]) | (flags[1:] != flags[:-1])
    if breaks is not None:
        start[breaks] = True
    idx = np.flatnonzero(start)
    count = np.diff(np.append(idx, n))
    return _runs_chunk(pages[idx], count.astype(np.int64), np.add.reduceat(rows, idx),
                       flags[idx].copy(), cpu, stream)


def _runs_chunk(page, count, rows, flags, cpu: CpuCost, stream: int) -> Chunk:
    """The chunk of runs (a page's consecutive gets with equal flags: ``count`` of them,
    ``rows`` rows attributed to the run): each get costs ``get_ns`` plus its share of the
    run's rows."""
    per_get = cpu.get_ns + (rows * cpu.row_ns) // count
    return Chunk(page, count, per_get.astype(np.int64),
                 np.full(page.size, stream, dtype=np.int64), flags)


def _emit_kept(pg: np.ndarray, rw: np.ndarray, fl: np.ndarray, cpu: CpuCost,
               stream: int) -> Chunk:
    """``emit_chunk(pg.ravel()[keep], rw.ravel()[keep], cpu, stream, fl.ravel()[keep])`` with
    ``keep = pg.ravel() >= 0``, in one pass (:func:`bufsim.workloads._kernels.kept_runs`):
    the operators that lay out each row's gets in a row of ``pg`` (-1: none) emit their
    batches with it."""
    page, count, rows, flags = kept_runs(np.ascontiguousarray(pg, dtype=np.int64),
                                          np.ascontiguousarray(rw, dtype=np.int64),
                                          np.ascontiguousarray(fl, dtype=np.uint8))
    if page.size == 0:
        return Chunk.empty()
    return _runs_chunk(page, count, rows, flags, cpu, stream)


def ahi_flag(ahi) -> int:
    """The flag of a probe answered by the adaptive hash index: ``True`` (or ``"guess"``)
    for ``btr_search_guess_on_hash`` (FLAG_AHI), ``"shortcut"`` for the unique-lookup
    shortcut of a consistent read (FLAG_SHORTCUT), False for none."""
    if ahi is False or ahi is None:
        return 0
    if ahi is True or ahi == "guess":
        return FLAG_AHI
    if ahi == "shortcut":
        return FLAG_SHORTCUT
    raise ValueError(f"ahi = {ahi!r} is not an AHI mode; allowed: False, True/'guess', 'shortcut'")


def batch_bounds(n: int, batch: int):
    for lo in range(0, n, batch):
        yield lo, min(n, lo + batch)


#: Executors whose row-to-page rules the scan operators follow: ``"mysql"`` (5.5/5.6:
#: every cursor restore is a counted page get) and ``"mariadb1011"`` (spec §14).
EXECUTORS = ("mysql", "mariadb1011")
#: MariaDB's row prefetch: rows fetched one by one before the fetch cache starts
#: (MYSQL_FETCH_CACHE_THRESHOLD), and rows the fetch cache holds (MYSQL_FETCH_CACHE_SIZE).
FETCH_CACHE_THRESHOLD = 4
FETCH_CACHE_SIZE = 8
#: Rows one prefetching handler call reads: the first into the caller's record buffer,
#: then FETCH_CACHE_SIZE more into the cache.  Source: MariaDB
#: storage/innobase/row/row0sel.cc, row_search_mvcc, "Decide whether to prefetch extra
#: rows": ``next_buf = next_buf ? row_sel_fetch_last_buf(prebuilt) : buf`` stores the
#: call's first row in ``buf`` without enqueueing it, and the loop continues
#: (``goto next_rec``) while ``n_fetch_cached < MYSQL_FETCH_CACHE_SIZE``.  Checked on
#: MariaDB 10.11.19: a clustered scan's PAGES_NOT_MADE_YOUNG (one per re-latch of an
#: old page) is 2,910 on the server and 2,910 in the replay with 9 rows per call
#: (3,258 with 8); see tests/test_live.py.
FETCH_ROWS_PER_CALL = FETCH_CACHE_SIZE + 1
#: Rows one prefetching handler call reads under index condition pushdown ("Using index
#: condition", e.g. a range of a secondary index with clustered lookups): every row goes
#: to the fetch cache (``row_sel_enqueue_cache_row_for_mysql(buf, prebuilt)`` when
#: ``prebuilt->idx_cond``) while ``n_fetch_cached < MYSQL_FETCH_CACHE_SIZE``, and the
#: first is dequeued into the caller's buffer at the end ("When ICP is active we don't
#: write to the MySQL buffer directly"): MYSQL_FETCH_CACHE_SIZE rows.  Source: MariaDB
#: 10.11.18 storage/innobase/row/row0sel.cc, row_search_mvcc.
FETCH_ROWS_PER_CALL_ICP = FETCH_CACHE_SIZE
#: Pages the records-in-range estimate reads between the range's two border pages on a
#: level (``n_pages_read_limit`` in btr_estimate_n_rows_in_range_on_level, MariaDB
#: 10.11.18 storage/innobase/btr/btr0cur.cc)
RANGE_DIVE_PAGES = 9


def relatch_flag() -> int | None:
    """The trace flag of a cursor re-latch ("checked, not counted"), or None.

    The flag is ``bufsim.trace.FLAG_RELATCH`` (16) once the trace vocabulary (and the
    replay kernel) knows it; until then a trace cannot carry re-latches and the
    operators leave them out.
    """
    from .. import trace as _trace
    flag = getattr(_trace, "FLAG_RELATCH", None)
    if flag is None or not (_trace.FLAG_MASK & flag):
        return None
    return int(flag)


def mariadb1011_scan_events(leaves, recs, *, relatch: bool = True,
                            threshold: int = FETCH_CACHE_THRESHOLD,
                            batch: int = FETCH_ROWS_PER_CALL, first_kind: int = FLAG_DESCENT):
    """Page accesses of a forward scan over ``leaves`` as MariaDB 10.11 issues them (§14).

    The first leaf is counted as arrived at (the descent's last get, of access kind
    ``first_kind``: FLAG_DESCENT after a search, FLAG_NO_RA after ``open_leaf``'s walk
    to the leftmost leaf); each later leaf costs one counted get when the cursor steps
    onto it (FLAG_STEP, ``btr_pcur_move_to_next_page``).  Rows go to the SQL
    layer one per handler call for the first ``threshold`` rows, then ``batch`` rows
    per call (one into the caller's buffer and eight into the row prefetch cache,
    :data:`FETCH_ROWS_PER_CALL`); every call after the first restores the
    stored cursor position, a re-latch of the leaf holding the previous row, which
    is checked for make-young but not counted (flag :func:`relatch_flag`; left out
    when ``relatch`` is False).  A final call finds the end.

    Parameters
    ----------
    leaves : array of int
        The scanned leaf pages (dense indices), in key order.
    recs : array of int
        Records on each leaf (>= 0).

    Returns
    -------
    page : int64 array
        One entry per access.
    flags : uint8 array
        The access kind (FLAG_STEP, FLAG_DESCENT, FLAG_NO_RA) of every access, with the
        re-latch flag on re-latches (FLAG_NO_RA: a cursor restore is never a read-ahead
        site, ``buf_page_optimistic_get``).
    row_pos : int64 array
        For every row, the number of accesses issued when it has been read (rows
        are read after access ``row_pos[r] - 1``).
    """
    leaves = np.asarray(leaves, dtype=np.int64)
    recs = np.asarray(recs, dtype=np.int64)
    if leaves.shape != recs.shape or (recs < 0).any():
        raise ValueError("leaves and recs must have one non-negative record count per leaf")
    check_int("threshold", threshold, 0)
    check_int("batch", batch, 1)
    flag = relatch_flag() if relatch else None
    if relatch and flag is None:
        raise ValueError("the trace vocabulary has no FLAG_RELATCH: call with relatch=False")
    n_rows = int(recs.sum())
    leaf_of_row = np.repeat(np.arange(leaves.size), recs)
    # rows that start a handler call touching InnoDB
    r = np.arange(n_rows)
    starts = (r < threshold) | ((r - threshold) % batch == 0)
    page, flags, row_pos = [], [], np.empty(n_rows, dtype=np.int64)
    if leaves.size:
        page.append(leaves[0])
        flags.append(first_kind)
    rel = None if flag is None else flag | FLAG_NO_RA
    cur = 0
    for i in range(n_rows):
        lf = leaf_of_row[i]
        if starts[i] and i > 0 and rel is not None:
            page.append(leaves[leaf_of_row[i - 1]])
            flags.append(rel)
        while cur < lf:                       # step onto the next leaf(s), empty ones too
            cur += 1
            page.append(leaves[cur])
            flags.append(FLAG_STEP)
        row_pos[i] = len(page)
    if n_rows and rel is not None:            # the call that finds the end
        page.append(leaves[leaf_of_row[-1]])
        flags.append(rel)
    while cur < leaves.size - 1:              # trailing empty leaves are stepped over
        cur += 1
        page.append(leaves[cur])
        flags.append(FLAG_STEP)
    return (np.asarray(page, dtype=np.int64), np.asarray(flags, dtype=np.uint8), row_pos)


# --------------------------------------------------------------------------------------
# operators
# --------------------------------------------------------------------------------------
def lookups(db: Database, table: str, entries, *, index: str | None = None,
            cpu: CpuCost = CpuCost(), ahi: bool = False, modify: bool = False,
            rows_per_lookup: int = 1, batch: int = BATCH) -> Operator:
    """One index probe per entry: a root-to-leaf descent of ``index`` (clustered by default).

    ``entries`` are key-order positions of the probed records in the index
    (a primary-key lookup of row ``r`` of a table loaded in key order is entry
    ``r``).  With ``ahi`` each probe is one get of the leaf with FLAG_AHI;
    ``modify`` marks the leaf get as modifying.  Each probe reads
    ``rows_per_lookup`` rows.
    """
    ix = db.index(table, index)
    entries = np.asarray(entries, dtype=np.int64)
    n, h = entries.size, ix.height
    if n and (entries.min() < 0 or entries.max() >= max(ix.geometry.rows, 1)):
        raise ValueError(f"entries of {table}.{ix.name} must be in 0..{ix.geometry.rows - 1}")
    leaf_flag = ahi_flag(ahi) | (FLAG_MODIFY if modify else 0)

    def chunks(stream):
        for lo, hi in batch_bounds(n, batch):
            paths = db.dense(table, ix.paths(ix.leaf_of(entries[lo:hi])))
            if ahi:
                paths = paths[:, -1:]
            rows = np.zeros(paths.shape, dtype=np.int64)
            rows[:, -1] = rows_per_lookup
            flags = np.zeros(paths.shape, dtype=np.uint8)
            flags[:, -1] = leaf_flag
            yield emit_chunk(paths.ravel(), rows.ravel(), cpu, stream, flags.ravel())

    def pages():
        leaves = np.unique(ix.leaf_of(entries))
        p = db.dense(table, ix.paths(leaves))
        return p[:, -1] if ahi else p.ravel()

    per = 1 if ahi else h
    return Operator(f"lookups {table}.{ix.name}", chunks, n * rows_per_lookup, n * per,
                    db.tablespaces, pages)


def _leaf_runs(ix, first: int, last: int):
    """Per leaf touched by key-order entries ``[first, last)``: (leaf position, entries on it)."""
    pl = ix.geometry.per_leaf
    if last <= first:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    leaf = np.arange(first // pl, (last - 1) // pl + 1, dtype=np.int64)
    n = np.minimum(last, (leaf + 1) * pl) - np.maximum(first, leaf * pl)
    return leaf, n


def range_scan(db: Database, table: str, first: int, n_entries: int, *, index: str | None = None,
               cpu: CpuCost = CpuCost(), read_past_end: bool = True, modify: bool = False,
               batch: int = BATCH, executor: str = "mysql") -> Operator:
    """Scan ``n_entries`` entries of ``index`` (clustered by default) from key-order position ``first``.

    Gets (``executor="mysql"``, 5.5/5.6): a descent to the first entry's leaf
    (``height``), one get per entry, one to arrive on each further leaf, and with
    ``read_past_end`` one more entry to see that the range ended (none at the end of
    the index).  Rows read: ``n_entries``.  A full clustered scan is
    ``range_scan(db, t, 0, rows)``.

    ``executor="mariadb1011"`` (spec §14): the descent, then one counted get per
    further leaf; cursor restores are re-latches, checked but not counted
    (:func:`mariadb1011_scan_events`, present when the trace vocabulary has
    FLAG_RELATCH).  ``Operator.gets`` counts the counted gets only.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"executor={executor!r} is unknown; allowed: {', '.join(EXECUTORS)}")
    if executor == "mariadb1011":
        return _range_scan_mariadb(db, table, first, n_entries, index=index, cpu=cpu,
                                   read_past_end=read_past_end, modify=modify,
                                   open_leaf=False)
    ix, extra, leaf, n, upper = _range_leaves(db, table, first, n_entries, index, read_past_end)
    rows = n.copy()
    if extra:
        rows[-1] -= 1
    count = n + 1                                        # each leaf: its entries and the arrival
    leaves = db.dense(table, ix.leaves[leaf])
    flag = FLAG_MODIFY if modify else 0

    def chunks(stream):
        if upper.size:
            yield emit_chunk(upper, 0, cpu, stream, 0)
        for lo, hi in batch_bounds(leaf.size, max(1, batch // ix.geometry.per_leaf)):
            c = count[lo:hi]
            yield Chunk(leaves[lo:hi], c, cpu.get_ns + (rows[lo:hi] * cpu.row_ns) // c,
                        np.full(hi - lo, stream, dtype=np.int64),
                        np.full(hi - lo, flag, dtype=np.uint8))

    gets = int(upper.size + count.sum())
    return Operator(f"range {table}.{ix.name}", chunks, int(n_entries), gets, db.tablespaces,
                    lambda: np.concatenate([upper, leaves]))


def _range_leaves(db, table, first, n_entries, index, read_past_end):
    """The leaves a range of ``n_entries`` entries from ``first`` visits (one more entry when
    ``read_past_end`` and the range ends inside the index), for both executors: the index,
    whether that extra entry is read, the leaf positions, the entries per leaf and the dense
    pages of the descent above the first leaf."""
    ix = db.index(table, index)
    total = ix.geometry.rows
    if not (0 <= first <= total and 0 <= n_entries <= total - first):
        raise ValueError(f"range {first}..{first + n_entries} is outside {table}.{ix.name} "
                         f"(entries 0..{total})")
    last = first + n_entries
    extra = 1 if read_past_end and last < total else 0
    leaf, n = _leaf_runs(ix, first, last + extra)
    if leaf.size == 0:                                   # an empty index or range: one descent
        leaf, n = np.array([first // ix.geometry.per_leaf]), np.array([0])
    upper = db.dense(table, ix.paths(leaf[:1])[0, :-1])
    return ix, extra, leaf, n, upper


def _range_scan_mariadb(db, table, first, n_entries, *, index, cpu, read_past_end, modify,
                        open_leaf):
    """The mariadb1011 executor's range (``open_leaf``: a full scan from the leftmost
    leaf, ``btr_cur_t::open_leaf``, whose leaf is never a read-ahead site)."""
    ix, _, leaf, n, upper = _range_leaves(db, table, first, n_entries, index, read_past_end)
    leaves = db.dense(table, ix.leaves[leaf])
    flag = FLAG_MODIFY if modify else 0
    relatch = relatch_flag() is not None
    # a one-page tree: the root is the leaf, no level-1 page: never a read-ahead site
    first_kind = FLAG_NO_RA if open_leaf or upper.size == 0 else FLAG_DESCENT

    def events():
        page, flags, _ = mariadb1011_scan_events(leaves, n, relatch=relatch,
                                                 first_kind=first_kind)
        return (np.concatenate([upper, page]),
                np.concatenate([np.full(upper.size, FLAG_NO_RA, np.uint8),
                                flags | np.uint8(flag)]))

    def chunks(stream):
        page, flags = events()
        rows = np.zeros(page.size, dtype=np.int64)
        rows[upper.size:upper.size + 1] = n_entries      # CPU of the rows on the first leaf get
        yield emit_chunk(page, rows, cpu, stream, flags)

    gets = int(upper.size + leaves.size)
    return Operator(f"range {table}.{ix.name} (mariadb1011)", chunks, int(n_entries), gets,
                    db.tablespaces, lambda: np.concatenate([upper, leaves]))


def full_scan(db: Database, table: str, *, cpu: CpuCost = CpuCost(), modify: bool = False,
              batch: int = BATCH, executor: str = "mysql") -> Operator:
    """Scan the whole clustered index of ``table`` in key order (module docstring).

    Gets: ``height - 1`` above the first leaf, then ``rows + 1`` per leaf (one
    per row and the arrival) with ``executor="mysql"``; one per leaf with
    ``executor="mariadb1011"`` (see :func:`range_scan`).  ``modify`` marks every
    leaf get as modifying.
    """
    if executor == "mariadb1011":
        op = _range_scan_mariadb(db, table, 0, db.index(table).geometry.rows, index=None,
                                 cpu=cpu, read_past_end=True, modify=modify, open_leaf=True)
    else:
        op = range_scan(db, table, 0, db.index(table).geometry.rows, cpu=cpu, modify=modify,
                        batch=batch, executor=executor)
    return op.renamed(f"full scan {table}")


def secondary_range(db: Database, table: str, index: str, first: int, rowids, *,
                    cpu: CpuCost = CpuCost(), ahi: bool = False, mrr_bytes: int = 0,
                    rowid_bytes: int = 6, read_past_end: bool = True,
                    batch: int = BATCH) -> Operator:
    """A secondary-index range scan from entry ``first`` with a clustered lookup per entry.

    ``rowids[j]`` is the clustered key-order position of the row of entry
    ``first + j``.  Without MRR every entry get is followed by the row's
    clustered descent (or AHI probe).  With Disk-Sweep MRR (``mrr_bytes`` > 0,
    ``read_rnd_buffer_size``) the scan fills a buffer of ``mrr_bytes //
    (rowid_bytes + 8)`` row ids, sorts them, fetches the rows in clustered order
    and goes on scanning.  Rows read: one per entry.
    """
    sec = db.index(table, index)
    cl = db.index(table)
    rowids = np.asarray(rowids, dtype=np.int64)
    n = rowids.size
    total = sec.geometry.rows
    if not (0 <= first <= total - n):
        raise ValueError(f"range {first}..{first + n} is outside {table}.{sec.name} (0..{total})")
    last = first + n
    extra = 1 if read_past_end and last < total else 0
    pl = sec.geometry.per_leaf
    h_cl = 1 if ahi else cl.height
    cl_flag = ahi_flag(ahi)
    upper = db.dense(table, sec.paths([first // pl])[0, :-1])
    if mrr_bytes:
        per_buf = max(1, int(mrr_bytes) // (rowid_bytes + 8))
    else:
        per_buf = 0

    def entry_gets(e):
        """Secondary gets for entries e (sorted): an arrival get on each new leaf."""
        leaf = e // pl
        new = np.ones(e.size, dtype=bool)
        new[1:] = leaf[1:] != leaf[:-1]
        new[0] = e[0] == first or e[0] % pl == 0   # the descent's leaf get, or an arrival
        return db.dense(table, sec.leaves[leaf]), new

    def cl_paths(r):
        p = db.dense(table, cl.paths(cl.leaf_of(r)))
        return p[:, -1:] if ahi else p

    def chunks(stream):
        if upper.size:
            yield emit_chunk(upper, 0, cpu, stream, 0)
        step = per_buf if per_buf else batch
        for lo, hi in batch_bounds(n + extra, step):
            e = np.arange(first + lo, first + hi, dtype=np.int64)
            spage, new = entry_gets(e)
            r = rowids[lo:min(hi, n)]
            # secondary entry gets, with the arrival get merged before the entry's own
            sec_cnt = 1 + new.astype(np.int64)
            if per_buf:
                yield emit_chunk(np.repeat(spage, sec_cnt), 0, cpu, stream, 0)
                r = np.sort(r)
                paths = cl_paths(r)
                rows = np.zeros(paths.shape, dtype=np.int64)
                rows[:, -1] = 1
                flags = np.zeros(paths.shape, dtype=np.uint8)
                flags[:, -1] = cl_flag
                yield emit_chunk(paths.ravel(), rows.ravel(), cpu, stream, flags.ravel())
            else:
                k = e.size
                width = 2 + h_cl
                pg = np.full((k, width), -1, dtype=np.int64)
                pg[:, 0] = np.where(new, spage, -1)
                pg[:, 1] = spage
                fl = np.zeros((k, width), dtype=np.uint8)
                rw = np.zeros((k, width), dtype=np.int64)
                if r.size:
                    pg[:r.size, 2:] = cl_paths(r)
                    fl[:r.size, -1] = cl_flag
                    rw[:r.size, -1] = 1
                yield _emit_kept(pg, rw, fl, cpu, stream)

    leaves_touched = ((last + extra - 1) // pl - first // pl + 1) if n + extra else 1
    gets = int(upper.size + (n + extra) + leaves_touched + n * h_cl)

    def pages():
        sl = np.arange(first // pl, (last + extra - 1) // pl + 1) if n + extra else []
        cl_leaves = np.unique(cl.leaf_of(rowids))
        p = db.dense(table, cl.paths(cl_leaves))
        return np.concatenate([upper, db.dense(table, sec.leaves[sl]),
                               p[:, -1] if ahi else p.ravel()])

    return Operator(f"range {table}.{sec.name} + rows", chunks, n, gets, db.tablespaces, pages)


def batch_sort(keys, buffer_entries: int) -> np.ndarray:
    """The order in which a Batched Key Access join probes ``keys``.

    Keys fill a join buffer of ``buffer_entries`` outer rows; each full buffer
    (and the last, partial one) is sorted before probing (MRR on the inner
    index).  Returns the keys in probe order.
    """
    keys = np.asarray(keys)
    b = int(buffer_entries)
    if b < 1:
        raise ValueError(f"buffer_entries = {buffer_entries} is out of range; allowed: >= 1")
    out = keys.copy()
    for lo in range(0, keys.size, b):
        out[lo:lo + b].sort(kind="stable")
    return out


def dedupe_consecutive(keys) -> np.ndarray:
    """Keys with consecutive repeats dropped: an ``eq_ref`` join skips a probe whose
    key equals the previous probe's (it keeps the last row, spec §14)."""
    keys = np.asarray(keys)
    if keys.size == 0:
        return keys
    keep = np.ones(keys.size, dtype=bool)
    keep[1:] = keys[1:] != keys[:-1]
    return keys[keep]


def sequence(ops: Sequence[Operator], name: str = "", tablespaces=None) -> Operator:
    """Operators run one after another in one stream.

    No operators is a plan with no gets (a range with no driving rows) over
    ``tablespaces``, which must then be given."""
    ops = list(ops)
    if not ops and tablespaces is None:
        raise ValueError("sequence: no operators and no tablespaces (pass tablespaces= for an "
                         "empty plan)")
    ts = ops[0].tablespaces if ops else tablespaces

    def chunks(stream):
        for op in ops:
            yield from op.factory(stream)

    def pages():
        return np.concatenate([o.pages() for o in ops] or [np.zeros(0, dtype=np.int64)])

    listed = all(o.pages is not None for o in ops)
    return Operator(name or " ; ".join(o.name for o in ops), chunks, sum(o.rows for o in ops),
                    sum(o.gets for o in ops), ts, pages if listed else None)


def statement(op: Operator, name: str | None = None) -> Operator:
    """``op`` run as one SQL statement: its last event carries :data:`bufsim.FLAG_STMT_END`.

    The statement's end moves InnoDB's server activity count, which is what lets
    the 5.6+ page cleaner run its LRU batch (``PoolConfig(cleaner_activity=
    "statement")``).  Rows, gets and pages are those of ``op``.
    """
    def chunks(stream):
        held = None
        for c in op.factory(stream):
            if len(c) == 0:
                continue
            if held is not None:
                yield held
            held = c
        if held is not None:
            flags = held.flags.copy()
            flags[-1] |= FLAG_STMT_END
            yield Chunk(held.page, held.count, held.cpu_ns, held.stream, flags)

    return Operator(name or op.name, chunks, op.rows, op.gets, op.tablespaces, op.pages)


def scan_join(db: Database, outer: str, joins: Sequence[tuple], *, cpu: CpuCost = CpuCost(),
              batch: int = BATCH) -> Operator:
    """A full scan of ``outer``'s clustered index joined by nested loops to inner tables.

    ``joins`` is a sequence of ``(table, index, entries, ahi)``: for every outer
    row (in clustered order) ``entries[row]`` is the key-order entry of
    ``index`` (None: the clustered index) that the row probes, or -1 when the
    row does not reach that join (filtered out earlier, or its key repeats the
    previous probe's, see :func:`dedupe_consecutive`).  The probes of a row
    follow its own get, in the order of ``joins`` (the plan's join order).
    Rows read: outer rows plus one per probe.
    """
    ix = db.index(outer)
    g = ix.geometry
    rows_n, pl = g.rows, g.per_leaf
    inner = []
    for t, iname, entries, ahi in joins:
        jx = db.index(t, iname)
        e = np.asarray(entries, dtype=np.int64)
        if e.shape != (rows_n,):
            raise ValueError(f"scan_join: entries for {t}.{jx.name} must have one value per "
                             f"{outer} row ({rows_n}), got shape {e.shape}")
        inner.append((t, jx, e, ahi_flag(ahi)))
    upper = db.dense(outer, ix.paths([0])[0, :-1])
    width = 2 + sum(1 if a else jx.height for _, jx, _, a in inner)

    def chunks(stream):
        if upper.size:
            yield emit_chunk(upper, 0, cpu, stream, 0)
        for lo, hi in batch_bounds(rows_n, batch):
            r = np.arange(lo, hi, dtype=np.int64)
            k = r.size
            pg = np.full((k, width), -1, dtype=np.int64)
            fl = np.zeros((k, width), dtype=np.uint8)
            rw = np.zeros((k, width), dtype=np.int64)
            leafpage = db.dense(outer, ix.leaves[r // pl])
            pg[:, 0] = np.where(r % pl == 0, leafpage, -1)   # descent's leaf get / arrival on a leaf
            pg[:, 1] = leafpage
            rw[:, 1] = 1
            col = 2
            for t, jx, e, ahi in inner:
                w = 1 if ahi else jx.height
                sel = np.flatnonzero(e[lo:hi] >= 0)
                if sel.size:
                    p = db.dense(t, jx.paths(jx.leaf_of(e[lo:hi][sel])))
                    pg[sel, col:col + w] = p[:, -1:] if ahi else p
                    rw[sel, col + w - 1] = 1
                    if ahi:
                        fl[sel, col] = ahi
                col += w
            yield _emit_kept(pg, rw, fl, cpu, stream)

    probes = [(int((e >= 0).sum()), 1 if a else jx.height) for _, jx, e, a in inner]
    rows = rows_n + sum(p for p, _ in probes)
    gets = int(upper.size + rows_n + g.leaf_pages + sum(p * w for p, w in probes))

    def pages():
        out = [upper, db.dense(outer, ix.leaves)]
        for t, jx, e, ahi in inner:
            p = db.dense(t, jx.paths(np.unique(jx.leaf_of(e[e >= 0]))))
            out.append(p[:, -1] if ahi else p.ravel())
        return np.concatenate(out)

    return Operator(f"scan {outer} join " + ", ".join(t for t, *_ in inner), chunks, rows, gets,
                    db.tablespaces, pages)
