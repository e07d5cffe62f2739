"""B-tree arithmetic over a live index, and the statement's event list, for the compiler.

Key-order ranks -> leaves -> root-to-leaf paths of a :class:`bufsim.live.geometry.LiveIndex`;
the pages a records-in-range estimate and a unique lookup read (the rules of
:mod:`bufsim.live.compile`); :class:`Events`, the page accesses of one statement; the
modelled undo tablespace that carries a write transaction's undo-log gets.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from ..pages import SpaceSpec, Tablespaces
from ..trace import FLAG_DESCENT, FLAG_MODIFY, FLAG_NO_RA, FLAG_STEP
from ..workloads.plans import RANGE_DIVE_PAGES
from .errors import LiveError
from .geometry import LiveGeometry, LiveIndex

__all__ = ["Events", "IndexColumns", "quote_ident", "entry_starts", "leaf_of", "search_leaf",
           "path_of", "path_kinds", "dive_pages", "unique_lookup", "unique_lookup_pages",
           "with_undo_space", "TRX_UNDO_GETS", "ROW_UNDO_GETS", "UNDO_SPACE_ID", "UNDO_PAGES"]

#: Page gets of a write transaction's undo log bookkeeping beyond its rows (assigning an
#: undo log from a rollback segment, and at commit marking it finished and adding it to
#: the history list: rollback-segment header, undo segment header, undo log pages).
#: MEASURED on MariaDB 10.11 (not derived from the source): an UPDATE of one row by
#: primary key counts 8 read requests where its read counts 2, and of n rows 5 + n more
#: (n = 2, 3, 6, 10); the same 5 + n holds for DELETE and INSERT, which were not used to
#: measure it (tests/live/test_compile.py).
TRX_UNDO_GETS = 5
#: Page gets per changed row beyond its B-tree pages: the undo page its undo record is
#: written to (trx_undo_report_row_operation).  Measured as TRX_UNDO_GETS.
ROW_UNDO_GETS = 1
#: The tablespace the undo gets are put on (the system tablespace, id 0): pages 0..4 for
#: the transaction's bookkeeping, page 5 for the rows' undo records.
UNDO_SPACE_ID = 0
UNDO_PAGES = 6


def with_undo_space(ts: Tablespaces) -> Tablespaces:
    """``ts`` with the modelled undo tablespace (UNDO_SPACE_ID, UNDO_PAGES pages, no leaf
    links so no read-ahead) appended: the tables' dense pages do not move."""
    if UNDO_SPACE_ID in set(int(s.space_id) for s in ts.spaces):
        raise LiveError(f"space id {UNDO_SPACE_ID} is a table's; cannot add the undo space")
    none = np.full(UNDO_PAGES, -1)
    return Tablespaces(list(ts.spaces) + [SpaceSpec(UNDO_SPACE_ID, UNDO_PAGES, "undo (modelled)",
                                                     leaf_links=(none, none))])


def path_kinds(n: int) -> np.ndarray:
    """Access kinds of a root-to-leaf descent of ``n`` pages (``btr_cur_t::search_leaf``):
    the pages above the leaf FLAG_NO_RA, the leaf FLAG_DESCENT (its level-1 parent is the
    get just before it); a root that is the leaf is FLAG_NO_RA (the read-ahead of a
    descent is tried when the level-1 page is in hand: ``if (!--height)``, MariaDB 10.11.18
    btr/btr0cur.cc:1640, which a height-0 tree never reaches)."""
    k = np.full(n, FLAG_NO_RA, dtype=np.uint8)
    if n > 1:
        k[-1] = FLAG_DESCENT
    return k


class Events:
    """Page accesses of one statement, in order: page numbers per table, flags.

    Every access carries its kind (trace flags FLAG_STEP / FLAG_DESCENT / FLAG_NO_RA,
    where MariaDB 10.11.7+ may try linear read-ahead): :meth:`descent`, :meth:`step` and
    :meth:`other` name it; :meth:`add` takes it in ``flag``.
    """

    def __init__(self, geo: LiveGeometry, undo_base: int):
        self.geo = geo
        self.undo_base = undo_base
        self.pages: list = []
        self.flags: list = []

    def add(self, table: str, page_no, flag: int = 0) -> None:
        p = np.atleast_1d(np.asarray(page_no, dtype=np.int64))
        if p.size:
            self.pages.append(self.geo.dense(table, p))
            self.flags.append(np.full(p.size, flag, dtype=np.uint8))

    def descent(self, table: str, path, leaf_flag: int = 0) -> None:
        """A root-to-leaf descent (page numbers, root first): the pages above the leaf
        FLAG_NO_RA, the leaf FLAG_DESCENT (FLAG_NO_RA where the root is the leaf) and
        ``leaf_flag``."""
        p = np.atleast_1d(np.asarray(path, dtype=np.int64))
        if p.size:
            k = path_kinds(p.size)
            k[-1] |= np.uint8(leaf_flag)
            self.pages.append(self.geo.dense(table, p))
            self.flags.append(k)

    def lookup(self, table: str, pages_kinds) -> None:
        """The ``(page numbers, kinds)`` of :func:`unique_lookup`."""
        pages, kinds = pages_kinds
        if len(pages):
            self.pages.append(self.geo.dense(table, np.asarray(pages, dtype=np.int64)))
            self.flags.append(np.asarray(kinds, dtype=np.uint8).copy())

    def step(self, table: str, page_no, flag: int = 0) -> None:
        """Leaves reached by forward leaf steps (``btr_pcur_move_to_next_page``)."""
        self.add(table, page_no, flag | FLAG_STEP)

    def other(self, table: str, page_no, flag: int = 0) -> None:
        """Accesses that are never a read-ahead site: non-leaf pages, cursor re-latches,
        the records-in-range estimate's pages (``btr_block_get`` without ``first``)."""
        self.add(table, page_no, flag | FLAG_NO_RA)

    def undo(self, page_no) -> None:
        """Undo-log gets on the modelled undo space (no read-ahead site: FLAG_NO_RA)."""
        p = np.atleast_1d(np.asarray(page_no, dtype=np.int64))
        self.pages.append(p + self.undo_base)
        self.flags.append(np.full(p.size, FLAG_MODIFY | FLAG_NO_RA, dtype=np.uint8))

    def mark(self) -> int:
        return len(self.pages)

    def arrays(self):
        if not self.pages:
            return np.empty(0, np.int64), np.empty(0, np.uint8)
        return np.concatenate(self.pages), np.concatenate(self.flags)


def entry_starts(ix: LiveIndex) -> np.ndarray:
    """Key-order rank of each leaf's first record, and the total (cached on the index)."""
    c = getattr(ix, "_start_cache", None)
    if c is None:
        c = np.concatenate([[0], np.cumsum(ix.leaf_recs)]).astype(np.int64)
        object.__setattr__(ix, "_start_cache", c)
    return c


def leaf_of(ix: LiveIndex, entry: int) -> int:
    """Key-order position of the leaf holding the ``entry``-th record (the last leaf for
    an entry past the end): :meth:`LiveIndex.leaf_of_entry` of one entry, over the leaves'
    first ranks cached on the index (a join's compilation asks millions of times)."""
    starts = getattr(ix, "_start_list", None)
    if starts is None:
        starts = entry_starts(ix)[:-1].tolist()
        object.__setattr__(ix, "_start_list", starts)
    return min(max(bisect_right(starts, int(entry)) - 1, 0), len(starts) - 1)


def search_leaf(ix: LiveIndex, entry: int) -> int:
    """The leaf a search for the position just before ``entry`` lands on: the leaf of
    ``entry``, or the previous leaf where ``entry`` is the first record of a leaf (node
    pointers hold a leaf's first key; the search takes the last one below it)."""
    st = entry_starts(ix)
    total = int(st[-1])
    if entry <= 0:
        return 0
    if entry >= total:
        return len(ix.leaves) - 1
    lf = leaf_of(ix, entry)
    return lf - 1 if lf > 0 and st[lf] == entry else lf


def path_of(ix: LiveIndex, leaf: int) -> np.ndarray:
    """Root-to-leaf page numbers of leaf ``leaf``."""
    return ix._paths()[leaf]


def dive_pages(ix: LiveIndex, lo_leaf: int, hi_leaf: int) -> np.ndarray:
    """Pages a records-in-range estimate reads between two border leaves (page numbers).

    Both borders' paths from the root, level by level: a page once where they share it;
    where they differ, the left page, up to RANGE_DIVE_PAGES pages between them on that
    level, then the right page (btr_estimate_n_rows_in_range, MariaDB 10.11 btr0cur.cc;
    the rule :mod:`bufsim.live.workload` checks against the server)."""
    paths = ix._paths()
    p1, p2 = paths[lo_leaf], paths[hi_leaf]
    h = p1.size
    out = []
    for d in range(h):
        if p1[d] == p2[d]:
            out.append(p1[d])
            continue
        level = ix.levels[h - 1 - d]
        a = int(np.flatnonzero(level == p1[d])[0])
        b = int(np.flatnonzero(level == p2[d])[0])
        out.append(p1[d])
        out.extend(level[a + 1:min(b, a + 1 + RANGE_DIVE_PAGES)])
        out.append(p2[d])
    return np.asarray(out, dtype=np.int64)


def unique_lookup_pages(ix: LiveIndex, entry: int, step_past: bool = True) -> np.ndarray:
    """Page numbers of a unique exact-match lookup of the ``entry``-th record
    (:func:`unique_lookup` without the kinds)."""
    return unique_lookup(ix, entry, step_past)[0]


def unique_lookup(ix: LiveIndex, entry: int, step_past: bool = True):
    """Page numbers and access kinds of a unique exact-match lookup of the ``entry``-th
    record (see the module docstring; :func:`bufsim.live.workload.exact_lookup_pages` for
    the clustered index).

    A search for the first record of a leaf lands on the previous leaf (the non-leaf
    levels search PAGE_CUR_L for a PAGE_CUR_GE search: the last node pointer below the
    key) by that leaf's own path, then steps onto the record's leaf (FLAG_STEP); the
    landing leaf is the descent's (FLAG_DESCENT), the pages above it FLAG_NO_RA.

    ``step_past`` False: no step onto the next leaf after a leaf's last record, as in
    the locking read of an UPDATE or DELETE (measured on MariaDB 10.11: ``UPDATE ...
    WHERE id = v`` of a leaf's last record counts 8 read requests where ``SELECT``'s
    consistent read of it counts 3 and the UPDATE of the next row 9)."""
    st = entry_starts(ix)
    lf = leaf_of(ix, entry)
    land = lf - 1 if lf > 0 and entry == st[lf] else lf
    out = list(path_of(ix, land))
    kinds = list(path_kinds(len(out)))
    if land != lf:
        out.append(ix.leaves[lf])
        kinds.append(FLAG_STEP)
    if step_past and lf < len(ix.leaves) - 1 and entry == st[lf + 1] - 1:
        out.append(ix.leaves[lf + 1])
        kinds.append(FLAG_STEP)
    return np.asarray(out, dtype=np.int64), np.asarray(kinds, dtype=np.uint8)


@dataclass(frozen=True)
class IndexColumns:
    """An index's name, its columns in order, whether it is unique."""

    name: str
    columns: tuple
    unique: bool


def quote_ident(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return "`" + str(name).replace("`", "``") + "`"
