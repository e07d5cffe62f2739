"""Table and index geometry in InnoDB's COMPACT row format, and the page layout of a tablespace.

A workload needs to know, for every row and every index entry, which page holds
it and which pages a B-tree descent to it passes through.  This module derives
that from column types, a row count and a fill factor, the way InnoDB stores
them, and lays the pages out in a file-per-table tablespace.

Record sizes (COMPACT format, ``rem0rec``)
-------------------------------------------
A record is a 5-byte header (``REC_N_NEW_EXTRA_BYTES``), a null bitmap of one bit
per *nullable* field of the index, rounded up to bytes, one length byte per
variable-length field (two when its maximum exceeds 255 bytes), and the field
data.  Fixed-length types store their size (``int`` 4, ``bigint`` 8, ``decimal(M,D)``
4 bytes per 9 digits on each side of the point plus 0-4 bytes for the rest,
``char(n)`` n bytes in a single-byte character set); ``varchar`` stores its actual
length, so a column is given an average stored length.

* Clustered-index leaf records hold the primary-key columns, the 6-byte
  transaction id (``DB_TRX_ID``), the 7-byte roll pointer (``DB_ROLL_PTR``) and
  every other column.  A table with no primary key gets the hidden 6-byte row id
  (``DB_ROW_ID``) as its key and its clustered index is called
  ``GEN_CLUST_INDEX``.
* Secondary-index records hold the key columns and then the primary-key
  columns not already in the key (or the row id).
* Node-pointer records of the levels above the leaves hold the key prefix that
  identifies the child (the primary key for the clustered index, key plus
  primary key for a non-unique secondary index) and the 4-byte child page number.

Records per page
----------------
A 16 KiB page keeps 38 bytes of file header, 8 of trailer, 56 of index-page
header and 26 of infimum/supremum records, leaving 16,256 bytes.  The page
directory costs 2 bytes per owner slot, one slot per 4-8 records (about one per
six: 1/3 byte per record).  A page is filled to ``fill`` of that space: about
15/16 when rows arrive in key order (InnoDB leaves 1/16 free on a sequential
split) and about ln 2 = 0.69 when they arrive in random key order (Yao's result
for random B-tree insertion), which is how the secondary indexes of a table
loaded in primary-key order are filled.  Leaves = ceil(rows / records per leaf);
each level above has ceil(children / node records per page) pages, up to a
single root.  Height = number of levels.

Check against 000_fe2813b876a91991.txt: SSB SF1 ``lineorder`` (6,001,171 rows,
no primary key) has 97.7-byte leaf records (see :mod:`bufsim.workloads.ssb`),
156 per page at 15/16, 38,470 leaves and 39 pages above them; the document's
full scan read 38,960 pages, and its buffer pool held 6,909 clustered pages
with 1,083,172 records: 156.8 per page.

Page layout of a tablespace (``fsp0fsp``)
-----------------------------------------
A file-per-table tablespace starts with the space header (page 0), the insert
buffer bitmap (page 1) and the segment inode page (page 2); page 3 is the root
of the clustered index and the secondary-index roots follow in creation order
(pages 4, 5, ...).  Pages 0 and 1 of every further 16,384-page stretch are
again descriptor and bitmap pages and hold no index data.  Each index has two
file segments, leaves and non-leaf levels.  A segment takes its first 32 pages
one by one from shared fragment extents and then whole 64-page extents.  While
a table is loaded all its segments grow together, so their pages and extents
interleave in the order they are needed: :func:`layout_space` replays that
growth (a page of level ``l`` of an index is needed when the load has inserted
the share of rows that fills the pages before it) and allocates pages in that
order.  Leaves of an index filled in key order lie in key order; those of an
index filled in random order lie in a seeded random order (a split puts the new
page wherever the next free page is).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numba import njit

from .._validation import check_int
from .._units import PAGE_SIZE

__all__ = [
    "PAGE_SIZE", "PAGE_USABLE", "EXTENT_PAGES", "FILL_ORDERED", "FILL_RANDOM",
    "Column", "Index", "Table", "IndexGeometry", "TableGeometry", "IndexLayout", "SpaceLayout",
    "record_bytes", "index_geometry", "table_geometry", "layout_space",
]

#: bytes of a page left for records: 16384 - FIL header 38 - trailer 8 - page header 56
#: - infimum and supremum 26
PAGE_USABLE = PAGE_SIZE - 38 - 8 - 56 - 26
#: page-directory bytes per record: a 2-byte slot owns 4-8 records, about 6
DIR_BYTES_PER_RECORD = 1 / 3
EXTENT_PAGES = 64
#: pages per descriptor stretch: pages 0 and 1 of each hold XDES and ibuf bitmap
XDES_PAGES = 16384
#: a segment's first pages come one by one from fragment extents
FRAG_PAGES = 32
#: fill of pages written in key order (InnoDB leaves 1/16 free on a sequential split)
FILL_ORDERED = 15 / 16
#: mean fill of a B-tree filled in random key order (Yao 1978: ln 2)
FILL_RANDOM = math.log(2)
REC_HEADER = 5
TRX_ID, ROLL_PTR, ROW_ID, CHILD_PTR = 6, 7, 6, 4

_FIXED = {"tinyint": 1, "smallint": 2, "mediumint": 3, "int": 4, "integer": 4, "bigint": 8,
          "float": 4, "double": 8, "date": 3, "time": 3, "datetime": 5, "timestamp": 4, "year": 1}
_DEC_LEFTOVER = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_TYPE_RE = re.compile(r"^\s*(\w+)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*(unsigned)?\s*$", re.I)


def _decimal_bytes(m: int, d: int) -> int:
    """Binary size of DECIMAL(M,D): 4 bytes per 9 digits on each side, plus the rest."""
    def part(n):
        return 4 * (n // 9) + _DEC_LEFTOVER[n % 9]
    return part(m - d) + part(d)


@dataclass(frozen=True)
class Column:
    """One column: a MySQL type string and, for variable-length types, the mean stored length.

    Parameters
    ----------
    name : str
    type : str
        ``tinyint``, ``smallint``, ``mediumint``, ``int``, ``bigint``, ``float``,
        ``double``, ``decimal[(M[,D])]`` (default ``(10,0)``), ``date``, ``time``,
        ``datetime``, ``timestamp``, ``year``, ``char(n)``, ``varchar(n)``.
        Character columns are single-byte (latin1): ``char(n)`` is fixed.
    nullable : bool
        Nullable columns cost a bit in the null bitmap of every record holding them.
    avg_len : float, optional
        Mean stored bytes of a ``varchar``; default half its maximum.
    """

    name: str
    type: str
    nullable: bool = True
    avg_len: float | None = None

    def __post_init__(self):
        m = _TYPE_RE.match(self.type)
        if not m:
            raise ValueError(f"Column({self.name!r}).type {self.type!r} is not a type; allowed: "
                             f"{', '.join(sorted(_FIXED))}, decimal(M,D), char(n), varchar(n)")
        base = m.group(1).lower()
        if base not in _FIXED and base not in ("decimal", "numeric", "char", "varchar"):
            raise ValueError(f"Column({self.name!r}).type {self.type!r}: unknown type {base!r}")
        if base in ("char", "varchar") and m.group(2) is None:
            raise ValueError(f"Column({self.name!r}).type {self.type!r} needs a length, e.g. {base}(10)")
        if self.avg_len is not None and not (0 <= self.avg_len <= self.max_bytes):
            raise ValueError(f"Column({self.name!r}).avg_len = {self.avg_len} is out of range; "
                             f"allowed: 0..{self.max_bytes}")

    @property
    def _parts(self):
        m = _TYPE_RE.match(self.type)
        return m.group(1).lower(), m.group(2), m.group(3)

    @property
    def variable(self) -> bool:
        """True for variable-length storage (varchar)."""
        return self._parts[0] == "varchar"

    @property
    def max_bytes(self) -> int:
        base, a, b = self._parts
        if base in _FIXED:
            return _FIXED[base]
        if base in ("decimal", "numeric"):
            return _decimal_bytes(int(a) if a else 10, int(b) if b else 0)
        return int(a)

    @property
    def bytes(self) -> float:
        """Mean stored bytes of the field data."""
        if self.variable:
            return self.max_bytes / 2 if self.avg_len is None else float(self.avg_len)
        return float(self.max_bytes)

    @property
    def length_bytes(self) -> int:
        """Bytes of the variable-length header for this field (0 if fixed)."""
        return (2 if self.max_bytes > 255 else 1) if self.variable else 0


def record_bytes(columns: Sequence[Column], extra_fixed: int = 0) -> float:
    """Mean bytes of one COMPACT record holding ``columns`` plus ``extra_fixed`` system bytes."""
    nullable = sum(c.nullable for c in columns)
    return (REC_HEADER + math.ceil(nullable / 8) + sum(c.length_bytes for c in columns)
            + sum(c.bytes for c in columns) + extra_fixed)


@dataclass(frozen=True)
class Index:
    """A secondary index (``KEY name (cols)``); ``unique`` for a UNIQUE key."""

    name: str
    columns: tuple
    unique: bool = False
    #: True when rows arrive in this index's key order during the load (it is then
    #: filled at :data:`FILL_ORDERED`, else at the table's ``random_fill``)
    ordered: bool = False

    def __post_init__(self):
        object.__setattr__(self, "columns", tuple(self.columns))
        if not self.columns:
            raise ValueError(f"Index({self.name!r}).columns must name at least one column")


@dataclass(frozen=True)
class Table:
    """A table: columns, row count, primary key and secondary indexes.

    Parameters
    ----------
    name : str
    columns : sequence of Column
    rows : int
        Row count, >= 0.
    primary_key : tuple of str, optional
        Empty: the hidden row id and ``GEN_CLUST_INDEX``.
    indexes : sequence of Index
        Secondary indexes in creation order.
    fill : float
        Fill of clustered-index pages (rows loaded in key order), 0.05..1.
    random_fill : float
        Fill of secondary indexes whose key order is not the load order, 0.05..1.
    """

    name: str
    columns: tuple
    rows: int
    primary_key: tuple = ()
    indexes: tuple = ()
    fill: float = FILL_ORDERED
    random_fill: float = FILL_RANDOM

    def __post_init__(self):
        object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "primary_key", tuple(self.primary_key))
        object.__setattr__(self, "indexes", tuple(self.indexes))
        object.__setattr__(self, "rows", check_int(f"Table({self.name!r}).rows", self.rows, 0))
        for f in ("fill", "random_fill"):
            v = getattr(self, f)
            if not 0.05 <= v <= 1:
                raise ValueError(f"Table({self.name!r}).{f} = {v} is out of range; allowed: 0.05..1")
        names = [c.name.lower() for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"Table({self.name!r}).columns has duplicate names")
        for ix in ((Index("PRIMARY", self.primary_key),) if self.primary_key else ()) + self.indexes:
            for c in ix.columns:
                if c.lower() not in names:
                    raise ValueError(f"Table({self.name!r}) index {ix.name!r} names unknown column {c!r}")
        ixn = [ix.name for ix in self.indexes]
        if len(set(ixn)) != len(ixn) or {"PRIMARY", "GEN_CLUST_INDEX"} & set(ixn):
            raise ValueError(f"Table({self.name!r}).indexes: names must be unique and not PRIMARY")

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name.lower() == name.lower():
                return c
        raise KeyError(name)

    @property
    def clustered_name(self) -> str:
        return "PRIMARY" if self.primary_key else "GEN_CLUST_INDEX"


@dataclass(frozen=True)
class IndexGeometry:
    """Sizes of one B-tree.

    Attributes
    ----------
    name : str
    leaf_record_bytes, node_record_bytes : float
        Mean record bytes on leaf and non-leaf pages.
    fill : float
    per_leaf : int
        Records per leaf page.
    per_node : int
        Node pointers per non-leaf page.
    level_pages : tuple of int
        Pages per level, leaves first; the last is 1 (the root).
    """

    name: str
    leaf_record_bytes: float
    node_record_bytes: float
    fill: float
    rows: int
    per_leaf: int
    per_node: int
    level_pages: tuple
    clustered: bool = False
    ordered: bool = True

    @property
    def height(self) -> int:
        return len(self.level_pages)

    @property
    def leaf_pages(self) -> int:
        return self.level_pages[0]

    @property
    def n_pages(self) -> int:
        return int(sum(self.level_pages))


def _per_page(record: float, fill: float) -> int:
    # in thirds of a byte, so that exact quotients stay exact in floating point
    return max(2, int(3 * PAGE_USABLE * fill // (3 * record + 3 * DIR_BYTES_PER_RECORD)))


def index_geometry(name: str, leaf_columns: Sequence[Column], node_columns: Sequence[Column],
                   rows: int, fill: float, *, leaf_extra: int = 0, node_extra: int = 0,
                   clustered: bool = False, ordered: bool = True,
                   node_fill: float = FILL_ORDERED) -> IndexGeometry:
    """Geometry of one B-tree of ``rows`` records (see the module docstring)."""
    leaf = record_bytes(leaf_columns, leaf_extra)
    node = record_bytes(node_columns, node_extra + CHILD_PTR)
    per_leaf, per_node = _per_page(leaf, fill), _per_page(node, node_fill)
    levels = [max(1, -(-rows // per_leaf))]
    while levels[-1] > 1:
        levels.append(-(-levels[-1] // per_node))
    return IndexGeometry(name, leaf, node, fill, int(rows), per_leaf, per_node, tuple(levels),
                         clustered, ordered)


@dataclass(frozen=True)
class TableGeometry:
    """The clustered index first, then the secondary indexes in creation order."""

    table: Table
    indexes: tuple

    @property
    def clustered(self) -> IndexGeometry:
        return self.indexes[0]

    def index(self, name: str) -> IndexGeometry:
        return _by_name(self.indexes, name, self.table)


def _by_name(indexes, name: str, table: Table):
    """The index called ``name`` (case-insensitive, as MySQL), or a KeyError listing them."""
    for ix in indexes:
        if ix.name.lower() == name.lower():
            return ix
    raise KeyError(f"table {table.name!r} has no index {name!r}; it has "
                   f"{[ix.name for ix in indexes]}")




def table_geometry(table: Table) -> TableGeometry:
    """Geometry of every index of ``table`` (module docstring)."""
    cols = {c.name.lower(): c for c in table.columns}
    pk = [cols[c.lower()] for c in table.primary_key]
    pk_bytes_extra = 0 if pk else ROW_ID
    rest = [c for c in table.columns if c.name.lower() not in {p.name.lower() for p in pk}]
    clustered = index_geometry(table.clustered_name, pk + rest, pk, table.rows, table.fill,
                               leaf_extra=pk_bytes_extra + TRX_ID + ROLL_PTR,
                               node_extra=pk_bytes_extra, clustered=True, ordered=True)
    out = [clustered]
    for ix in table.indexes:
        key = [cols[c.lower()] for c in ix.columns]
        key_names = {c.name.lower() for c in key}
        ref = [p for p in pk if p.name.lower() not in key_names]
        node = key if ix.unique else key + ref
        fill = FILL_ORDERED if ix.ordered else table.random_fill
        out.append(index_geometry(ix.name, key + ref, node, table.rows, fill,
                                  leaf_extra=pk_bytes_extra,
                                  node_extra=0 if ix.unique else pk_bytes_extra,
                                  ordered=ix.ordered))
    return TableGeometry(table, tuple(out))


@dataclass(frozen=True, eq=False)
class IndexLayout:
    """Where the pages of one B-tree lie in its tablespace.

    ``levels[l]`` holds the page numbers of level ``l`` (0 = leaves) in key
    order; ``levels[-1]`` is ``[root]``.
    """

    geometry: IndexGeometry
    levels: tuple

    @property
    def name(self) -> str:
        return self.geometry.name

    @property
    def root(self) -> int:
        return int(self.levels[-1][0])

    @property
    def height(self) -> int:
        return len(self.levels)

    @property
    def leaves(self) -> np.ndarray:
        return self.levels[0]

    def pages(self) -> np.ndarray:
        """Every page of the index (all levels)."""
        return np.concatenate(self.levels)

    def leaf_of(self, entry) -> np.ndarray:
        """Key-order leaf position of the ``entry``-th record in key order."""
        return np.asarray(entry, dtype=np.int64) // self.geometry.per_leaf

    def paths(self, leaf_pos) -> np.ndarray:
        """Page numbers of root-to-leaf descents, shape ``(len(leaf_pos), height)``."""
        pos = np.asarray(leaf_pos, dtype=np.int64)
        h = self.height
        out = np.empty((pos.size, h), dtype=np.int64)
        node = pos.copy()
        for lvl in range(h):
            out[:, h - 1 - lvl] = self.levels[lvl][node]
            node //= self.geometry.per_node
        return out


@dataclass(frozen=True, eq=False)
class SpaceLayout:
    """A table's tablespace: the layout of each index and the size of the file."""

    space_id: int
    table: Table
    indexes: tuple
    n_pages: int

    def index(self, name: str) -> IndexLayout:
        return _by_name(self.indexes, name, self.table)

    @property
    def clustered(self) -> IndexLayout:
        return self.indexes[0]

    def space_spec(self):
        """The :class:`bufsim.SpaceSpec`: index groups and the leaf links of every index."""
        from ..pages import IndexSpec, SpaceSpec
        prev = np.full(self.n_pages, -1, dtype=np.int64)
        nxt = np.full(self.n_pages, -1, dtype=np.int64)
        for ix in self.indexes:
            for lv in ix.levels:
                prev[lv[1:]] = lv[:-1]
                nxt[lv[:-1]] = lv[1:]
        specs = tuple(IndexSpec(ix.name, np.sort(ix.pages())) for ix in self.indexes)
        return SpaceSpec(self.space_id, self.n_pages, self.table.name, specs, (prev, nxt))


def layout_space(geometry: TableGeometry, space_id: int, *, seed: int = 0) -> SpaceLayout:
    """Lay out the pages of a table's indexes in a file-per-table tablespace.

    See the module docstring.  Roots are pages 3, 4, ... in index order; the
    other pages are allocated in the order the load needs them, the first
    ``FRAG_PAGES`` of every segment (leaf or non-leaf, per index) page by page
    from fragment extents, then in whole extents.  ``seed`` orders the leaves
    of indexes filled in random key order.
    """
    ixs = geometry.indexes
    n_ix = len(ixs)
    roots = np.arange(3, 3 + n_ix, dtype=np.int64)
    # every non-root page: (birth, segment, ordinal within its level) - a page of level l
    # (l pages counted from the left) is needed when the load has inserted ordinal/size
    # of its rows
    births, segs, lvls, ords = [], [], [], []
    for i, g in enumerate(ixs):
        for lvl, n in enumerate(g.level_pages):
            k = n if lvl < g.height - 1 else 0       # the root is placed apart
            if k == 0:
                continue
            births.append((np.arange(k, dtype=np.float64) + 0.5) / k)
            segs.append(np.full(k, 2 * i + (lvl > 0), dtype=np.int64))
            lvls.append(np.full(k, lvl, dtype=np.int64))
            ords.append(np.arange(k, dtype=np.int64))
    if births:
        birth = np.concatenate(births)
        seg = np.concatenate(segs)
        lvl_all = np.concatenate(lvls)
        ord_all = np.concatenate(ords)
        order = np.lexsort((ord_all, seg, birth))
        seg, lvl_all, ord_all = seg[order], lvl_all[order], ord_all[order]
        page_of = _allocate(seg, 2 * n_ix, first_free=3 + n_ix)
    else:
        seg = lvl_all = ord_all = page_of = np.empty(0, dtype=np.int64)
    rng = np.random.default_rng(seed)
    layouts = []
    for i, g in enumerate(ixs):
        levels = []
        for lvl in range(g.height):
            if lvl == g.height - 1:
                levels.append(roots[i:i + 1].copy())
                continue
            m = (seg == 2 * i + (lvl > 0)) & (lvl_all == lvl)
            pages = np.empty(g.level_pages[lvl], dtype=np.int64)
            pages[ord_all[m]] = page_of[m]
            if not g.ordered and lvl == 0:
                pages = pages[rng.permutation(pages.size)]
            levels.append(pages)
        layouts.append(IndexLayout(g, tuple(levels)))
    top = int(page_of.max()) + 1 if page_of.size else 3 + n_ix
    n_pages = max(-(-top // EXTENT_PAGES) * EXTENT_PAGES, EXTENT_PAGES)
    return SpaceLayout(int(space_id), geometry.table, tuple(layouts), n_pages)


@njit(cache=True, inline="always")
def _usable(p: int) -> bool:
    return p % XDES_PAGES >= 2


@njit(cache=True)
def _allocate(seg: np.ndarray, n_segs: int, first_free: int) -> np.ndarray:
    """Page numbers for a sequence of page requests by segment (module docstring).

    Fragment pages come from a shared cursor over fragment extents; a segment
    past ``FRAG_PAGES`` takes the next whole free extent and fills it before
    taking another.  Extents are handed out in file order.
    """
    out = np.empty(seg.size, dtype=np.int64)
    used = np.zeros(n_segs, dtype=np.int64)
    cur = np.full(n_segs, -1, dtype=np.int64)      # next page in the segment's extent
    end = np.full(n_segs, -1, dtype=np.int64)
    frag_next, frag_end = first_free, EXTENT_PAGES  # the first extent is a fragment extent
    next_extent = EXTENT_PAGES
    for j in range(seg.size):
        s = seg[j]
        if used[s] < FRAG_PAGES:
            while True:
                if frag_next >= frag_end:             # a new fragment extent
                    frag_next, frag_end = next_extent, next_extent + EXTENT_PAGES
                    next_extent += EXTENT_PAGES
                p = frag_next
                frag_next += 1
                if _usable(p):
                    break
        else:
            while True:
                if cur[s] < 0 or cur[s] >= end[s]:
                    cur[s], end[s] = next_extent, next_extent + EXTENT_PAGES
                    next_extent += EXTENT_PAGES
                p = cur[s]
                cur[s] += 1
                if _usable(p):
                    break
        out[j] = p
        used[s] += 1
    return out
