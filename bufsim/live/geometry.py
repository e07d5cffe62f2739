"""Table and index geometry read from a live server, as bufsim :class:`~bufsim.Tablespaces`.

The server names its tablespaces and indexes (INFORMATION_SCHEMA.INNODB_SYS_TABLES,
INNODB_SYS_INDEXES: space ids, index ids, root page numbers; INNODB_SYS_TABLESPACES:
file sizes; mysql.innodb_index_stats: leaf pages and sizes).  The page-level structure
of every B-tree (which page is on which level, its FIL_PAGE_PREV/NEXT neighbours, its
record count) is read from the table's own ``.ibd`` file after ``FLUSH TABLES ... FOR
EXPORT`` has written every dirty page of it (the file is only read, and only where the
server's data directory is readable, i.e. for a server started by
:class:`bufsim.live.MariaDBServer`).  The size of each tablespace is the server's
(``FSP_SIZE`` in the space header, which read-ahead checks against), not the largest
page number + 1.

References
----------
InnoDB file format: FIL header (``fil0fil.h``: FIL_PAGE_OFFSET 4, FIL_PAGE_PREV 8,
FIL_PAGE_NEXT 12, FIL_PAGE_TYPE 24, FIL_PAGE_DATA 38), index page header
(``page0page.h``: PAGE_N_RECS +16, PAGE_LEVEL +26, PAGE_INDEX_ID +28) and the space
header (``fsp0fsp.h``: FSP_SIZE at FIL_PAGE_DATA + 8).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..pages import IndexSpec, SpaceSpec, Tablespaces
from .errors import LiveError

__all__ = ["LiveIndex", "LiveTable", "LiveGeometry", "read_geometry", "parse_ibd"]

FIL_PAGE_INDEX = 17855
FIL_PAGE_TYPE_ALLOCATED = 0  # fil0fil.h: a freshly allocated page (never written)
FIL_NULL = 0xFFFFFFFF
_DATA = 38


@dataclass(frozen=True, eq=False)
class LiveIndex:
    """One B-tree as the server laid it out.

    ``levels[l]`` holds the page numbers of level ``l`` (0 = leaves) in key order
    (following FIL_PAGE_NEXT from the leftmost page); ``levels[-1]`` is ``[root]``.
    ``level_recs[l][j]`` is the number of records on page ``levels[l][j]`` (on a
    non-leaf page: its node pointers, one per child).
    """

    name: str
    index_id: int
    root: int
    levels: tuple
    level_recs: tuple
    n_leaf_pages_stat: int | None = None
    size_stat: int | None = None

    @property
    def height(self) -> int:
        return len(self.levels)

    @property
    def leaves(self) -> np.ndarray:
        return self.levels[0]

    @property
    def leaf_recs(self) -> np.ndarray:
        return self.level_recs[0]

    @property
    def rows(self) -> int:
        return int(self.leaf_recs.sum())

    def pages(self) -> np.ndarray:
        return np.concatenate(self.levels)

    def leaf_of_entry(self, entry) -> np.ndarray:
        """Key-order leaf position of the ``entry``-th record in key order."""
        ends = np.cumsum(self.leaf_recs)
        return np.searchsorted(ends, np.asarray(entry, dtype=np.int64), side="right")

    def path(self, leaf_pos: int) -> np.ndarray:
        """Root-to-leaf page numbers of leaf ``leaf_pos`` (by the parents' key order)."""
        return self._paths()[leaf_pos]

    def _paths(self) -> np.ndarray:
        cached = getattr(self, "_path_cache", None)
        if cached is not None:
            return cached
        # the children of a node pointer page are its n_recs next pages of the level
        # below, in key order (node pointers are sorted like the pages they point to)
        h = self.height
        n = len(self.leaves)
        out = np.empty((n, h), dtype=np.int64)
        pos = np.arange(n, dtype=np.int64)
        out[:, h - 1] = self.leaves
        for lvl in range(1, h):
            ends = np.cumsum(self.level_recs[lvl])
            pos = np.minimum(np.searchsorted(ends, pos, side="right"), len(self.levels[lvl]) - 1)
            out[:, h - 1 - lvl] = self.levels[lvl][pos]
        object.__setattr__(self, "_path_cache", out)
        return out


@dataclass(frozen=True, eq=False)
class LiveTable:
    """A table's tablespace: id, size from the server, name, indexes (clustered first)."""

    schema: str
    name: str
    space_id: int
    n_pages: int
    indexes: tuple
    page_type: np.ndarray
    page_index_id: np.ndarray
    prev: np.ndarray
    next: np.ndarray

    @property
    def clustered(self) -> LiveIndex:
        return self.indexes[0]

    def index(self, name: str) -> LiveIndex:
        for ix in self.indexes:
            if ix.name == name:
                return ix
        raise KeyError(f"no index {name!r} in {self.schema}.{self.name}; "
                       f"indexes: {[i.name for i in self.indexes]}")

    def space_spec(self) -> SpaceSpec:
        links = (np.where(self.prev == FIL_NULL, -1, self.prev).astype(np.int64),
                 np.where(self.next == FIL_NULL, -1, self.next).astype(np.int64))
        for a in links:
            a[(a < -1) | (a >= self.n_pages)] = -1
        specs = tuple(IndexSpec(ix.name, np.sort(ix.pages())) for ix in self.indexes)
        # pages never written (all zeros: FIL_PAGE_TYPE_ALLOCATED), which MariaDB 10.11
        # frees as soon as a read-ahead has read them (§13)
        unused = np.flatnonzero(self.page_type == FIL_PAGE_TYPE_ALLOCATED)
        return SpaceSpec(self.space_id, self.n_pages, self.name, specs, links, unused)

    def n_index_pages(self) -> int:
        return int((self.page_type == FIL_PAGE_INDEX).sum())


class LiveGeometry:
    """Tables read from a server and the :class:`bufsim.Tablespaces` over them."""

    def __init__(self, tables):
        self.tables = {t.name: t for t in tables}
        self.tablespaces = Tablespaces([t.space_spec() for t in tables])
        self._base = dict(zip(self.tables, self.tablespaces.bases.tolist()))

    def table(self, name: str) -> LiveTable:
        try:
            return self.tables[name]
        except KeyError:
            raise KeyError(f"no table {name!r}; tables: {list(self.tables)}") from None

    def dense(self, table: str, page_no) -> np.ndarray:
        """Dense page indices of ``table``'s page numbers."""
        return np.asarray(page_no, dtype=np.int64) + self._base[table]

    def summary(self) -> pd.DataFrame:
        """One row per index: pages, leaves, height, rows, root, and the server's statistics."""
        rows = []
        for t in self.tables.values():
            for ix in t.indexes:
                rows.append(dict(table=t.name, space_id=t.space_id, space_pages=t.n_pages,
                                 index=ix.name, index_id=ix.index_id, root=ix.root,
                                 height=ix.height, leaf_pages=len(ix.leaves),
                                 pages=len(ix.pages()), rows=ix.rows,
                                 stat_n_leaf_pages=ix.n_leaf_pages_stat, stat_size=ix.size_stat))
        return pd.DataFrame(rows)


def parse_ibd(path: str | os.PathLike, page_size: int = 16384):
    """Per-page header fields of an InnoDB ``.ibd`` file.

    Returns
    -------
    dict of numpy arrays (one entry per page): ``page_no``, ``type``, ``prev``,
    ``next``, ``level``, ``n_recs``, ``index_id``; and ``fsp_size`` (int), the
    tablespace size in pages recorded in page 0.
    """
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size < page_size or raw.size % page_size:
        raise LiveError(f"{path}: size {raw.size} is not a whole number of {page_size}-byte pages")
    pages = raw.reshape(-1, page_size)

    def u(off, n):
        b = pages[:, off:off + n].astype(np.uint64)
        v = np.zeros(len(pages), dtype=np.uint64)
        for k in range(n):
            v = (v << np.uint64(8)) | b[:, k]
        return v

    out = dict(page_no=u(4, 4).astype(np.int64), prev=u(8, 4).astype(np.int64),
               next=u(12, 4).astype(np.int64), type=u(24, 2).astype(np.int64),
               n_recs=u(_DATA + 16, 2).astype(np.int64), level=u(_DATA + 26, 2).astype(np.int64),
               index_id=u(_DATA + 28, 8).astype(np.int64))
    fsp = pages[0, _DATA + 8:_DATA + 12].astype(np.uint64)
    out["fsp_size"] = int((fsp[0] << 24) | (fsp[1] << 16) | (fsp[2] << 8) | fsp[3])
    return out


def _chain(first: int, nxt: np.ndarray, members: set, what: str) -> np.ndarray:
    order, p = [], first
    while p != FIL_NULL and p in members:
        order.append(p)
        members.discard(p)
        p = int(nxt[p])
    if members:
        raise LiveError(f"{what}: {len(members)} pages are not reachable by FIL_PAGE_NEXT "
                        f"from page {first} (the file may not be flushed)")
    return np.array(order, dtype=np.int64)


def read_geometry(conn, schema: str, tables=None, *, datadir: str | None = None) -> LiveGeometry:
    """Read the geometry of ``schema``'s InnoDB tables from a live server.

    Parameters
    ----------
    conn : bufsim.live.Connection
    schema : str
    tables : sequence of str, optional
        Table names (default: every InnoDB table of the schema, by name).
    datadir : str, optional
        The server's data directory (default ``@@datadir``); must be readable.

    Returns
    -------
    LiveGeometry
    """
    rows = conn.query(
        "SELECT t.NAME, t.SPACE, i.INDEX_ID, i.NAME, i.PAGE_NO, i.TYPE "
        "FROM INFORMATION_SCHEMA.INNODB_SYS_TABLES t JOIN INFORMATION_SCHEMA.INNODB_SYS_INDEXES i "
        "ON i.TABLE_ID = t.TABLE_ID WHERE t.NAME LIKE %s ORDER BY t.NAME, i.INDEX_ID",
        (schema + "/%",), doing="reading INFORMATION_SCHEMA.INNODB_SYS_INDEXES (needs PROCESS)")
    by_table: dict = {}
    for tname, space, iid, iname, root, itype in rows:
        name = tname.split("/", 1)[1]
        by_table.setdefault(name, dict(space=int(space), idx=[]))["idx"].append(
            (int(iid), iname, int(root), int(itype)))
    if tables is None:
        tables = sorted(by_table)
    missing = [t for t in tables if t not in by_table]
    if missing:
        raise LiveError(f"no InnoDB table(s) {missing} in schema {schema!r} "
                        f"(found: {sorted(by_table)})")
    page_size = int(conn.query("SELECT @@innodb_page_size", doing="reading innodb_page_size")[0][0])
    ddir = Path(datadir or conn.query("SELECT @@datadir", doing="reading @@datadir")[0][0])
    stats = {}
    for tn, ixn, stat, val in conn.query(
            "SELECT table_name, index_name, stat_name, stat_value FROM mysql.innodb_index_stats "
            "WHERE database_name = %s AND stat_name IN ('n_leaf_pages', 'size')", (schema,),
            doing="reading mysql.innodb_index_stats"):
        stats[(tn, ixn, stat)] = int(val)
    fsize = dict(conn.query(
        "SELECT NAME, FILE_SIZE FROM INFORMATION_SCHEMA.INNODB_SYS_TABLESPACES WHERE NAME LIKE %s",
        (schema + "/%",), doing="reading INFORMATION_SCHEMA.INNODB_SYS_TABLESPACES"))
    out = []
    for name in tables:
        info = by_table[name]
        conn.execute(f"FLUSH TABLES `{schema}`.`{name}` FOR EXPORT",
                     doing=f"flushing {schema}.{name} to its file (FLUSH TABLES ... FOR EXPORT)")
        try:
            path = ddir / schema / f"{name}.ibd"
            if not os.access(path, os.R_OK):
                raise LiveError(f"cannot read {path}: the geometry is read from the table's file, "
                                "which needs a server on this machine (bufsim.live.MariaDBServer)")
            f = parse_ibd(path, page_size)
        finally:
            conn.execute("UNLOCK TABLES", doing="UNLOCK TABLES")
        n_file = len(f["type"])
        n_pages = f["fsp_size"] or n_file
        server_bytes = fsize.get(f"{schema}/{name}")
        if server_bytes is not None and int(server_bytes) // page_size != n_file:
            raise LiveError(f"{schema}.{name}: INNODB_SYS_TABLESPACES.FILE_SIZE "
                            f"{server_bytes} bytes != file of {n_file} pages")
        n_pages = max(n_pages, 1)
        typ = np.zeros(n_pages, dtype=np.int64)
        k = min(n_pages, n_file)
        typ[:k] = f["type"][:k]
        is_ix = typ == FIL_PAGE_INDEX
        indexes = []
        for iid, iname, root, _ in info["idx"]:
            mine = np.flatnonzero(is_ix[:k] & (f["index_id"][:k] == iid))
            if root not in set(mine.tolist()):
                raise LiveError(f"{schema}.{name}.{iname}: root page {root} is not an index page "
                                "of this index in the file")
            height = int(f["level"][root]) + 1
            levels = []
            for lvl in range(height):
                at = mine[f["level"][mine] == lvl]
                firsts = at[f["prev"][at] == FIL_NULL]
                if len(firsts) != 1:
                    raise LiveError(f"{schema}.{name}.{iname}: level {lvl} has {len(firsts)} "
                                    "leftmost pages (expected 1)")
                levels.append(_chain(int(firsts[0]), f["next"], set(at.tolist()),
                                     f"{schema}.{name}.{iname} level {lvl}"))
            recs = tuple(f["n_recs"][lv].astype(np.int64) for lv in levels)
            indexes.append(LiveIndex(iname, iid, root, tuple(levels), recs,
                                     stats.get((name, iname, "n_leaf_pages")),
                                     stats.get((name, iname, "size"))))
        prev = np.full(n_pages, FIL_NULL, dtype=np.int64)
        nxt = np.full(n_pages, FIL_NULL, dtype=np.int64)
        prev[:k][is_ix[:k]] = f["prev"][:k][is_ix[:k]]
        nxt[:k][is_ix[:k]] = f["next"][:k][is_ix[:k]]
        iid_arr = np.zeros(n_pages, dtype=np.int64)
        iid_arr[:k] = np.where(is_ix[:k], f["index_id"][:k], 0)
        out.append(LiveTable(schema, name, info["space"], n_pages, tuple(indexes), typ, iid_arr,
                             prev, nxt))
    return LiveGeometry(out)
