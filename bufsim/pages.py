"""Pages and tablespaces: (space id, page number) <-> dense page indices.

A page is addressed as in InnoDB by a tablespace id and a page number inside
that tablespace.  The replay kernels work on dense ``int64`` page indices
instead; :class:`Tablespaces` maps between the two.  Every tablespace occupies
one contiguous dense range ``[base, base + n_pages)``, so
``page_no = dense - base``, and the per-page arrays the kernels need (space,
page number, group for pool contents, B-tree leaf neighbours, buffer-pool
instance) are computed once and cached as read-only NumPy arrays.

References
----------
``docs/semantics.md`` §5 (read-ahead areas are aligned
64-page ranges of one tablespace, and linear read-ahead follows
FIL_PAGE_PREV/FIL_PAGE_NEXT) and §6.1 (the instance of a page is
``fold(space, page_no >> 6) mod innodb_buffer_pool_instances``,
``buf_pool_get`` in ``include/buf0buf.ic``).
"""
from __future__ import annotations

import json
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._units import MAX_INSTANCES, instance_fold
from ._validation import check_int

__all__ = ["IndexSpec", "SpaceSpec", "Tablespaces", "MAX_SPACE_ID"]

#: Space ids are 32-bit unsigned in InnoDB.
MAX_SPACE_ID = 2**32 - 1
#: up to this many pages in all, :meth:`Tablespaces.group_of` reads a per-page group array
#: (8 bytes a page: 32 MiB at most) instead of searching the index page lists
GROUP_ARRAY_PAGES = 1 << 22
_JSON_FORMAT = "bufsim.tablespaces"
_JSON_VERSION = 1


# --------------------------------------------------------------------------------------
# integer coercion shared with bufsim.trace
# --------------------------------------------------------------------------------------
def as_int64(values, name: str) -> np.ndarray:
    """Cast ``values`` to an ``int64`` array without silent truncation.

    Integer arrays are cast (unsigned values above 2**63 - 1 are refused); float
    arrays must hold finite integral values; booleans and other dtypes are
    refused.  The error names ``name`` and the first bad element.
    """
    a = np.asarray(values)
    if a.dtype == np.int64:
        return a
    kind = a.dtype.kind
    if kind == "b":
        raise ValueError(f"{name} must hold integers, got booleans")
    if kind in "iu":
        if kind == "u" and a.dtype.itemsize == 8 and a.size and a.max() > np.iinfo(np.int64).max:
            i = int(np.flatnonzero(a.ravel() > np.iinfo(np.int64).max)[0])
            raise ValueError(f"{name}{_where(a, i)} = {a.ravel()[i]} is out of range; "
                             f"allowed: integers up to 2**63 - 1")
        return a.astype(np.int64)
    if kind == "f":
        flat = a.ravel()
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(flat) | (flat != np.floor(flat)) | (np.abs(flat) >= 2.0**63)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{name}{_where(a, i)} = {float(flat[i])!r} is not an integer "
                             "(floats must be finite and integral)")
        return a.astype(np.int64)
    if kind == "O":
        flat = a.ravel()
        for i, x in enumerate(flat):
            if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral):
                if isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_)) \
                        and np.isfinite(x) and float(x).is_integer():
                    continue
                raise ValueError(f"{name}{_where(a, i)} = {x!r} is not an integer")
        try:
            return np.array([int(x) for x in flat], dtype=np.int64).reshape(a.shape)
        except OverflowError:
            raise ValueError(f"{name} holds a value outside the int64 range") from None
    raise ValueError(f"{name} must hold integers, got dtype {a.dtype}")


def _where(a: np.ndarray, i: int) -> str:
    return "" if a.ndim == 0 else f" row {i}"


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


def _pages_to_json(pages):
    """A page set as ``{"start","stop","step"}`` when it is an arithmetic run, else a list."""
    if isinstance(pages, range):
        return {"start": pages.start, "stop": pages.stop, "step": pages.step}
    p = np.asarray(pages)
    if p.size >= 2:
        d = np.diff(p)
        if d[0] != 0 and np.all(d == d[0]):
            step = int(d[0])
            return {"start": int(p[0]), "stop": int(p[-1]) + step, "step": step}
    return [int(x) for x in p]


def _pages_from_json(obj):
    if isinstance(obj, dict):
        return range(int(obj["start"]), int(obj["stop"]), int(obj.get("step", 1)))
    return np.asarray(obj, dtype=np.int64)


# --------------------------------------------------------------------------------------
# specifications
# --------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class IndexSpec:
    """The pages of one index inside a tablespace.

    Parameters
    ----------
    name : str
        Index name, e.g. ``"PRIMARY"``.  The pool-contents group of the index is
        named ``"<space label>.<name>"``.
    pages : numpy.ndarray or range
        Page numbers of the index inside its space (distinct, in
        ``[0, n_pages)`` of the space; checked by :class:`SpaceSpec`).  A range is
        kept as a range (compact JSON); an array is stored as a read-only
        ``int64`` copy.
    """

    name: str
    pages: np.ndarray | range

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"IndexSpec.name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.pages, range):
            p = as_int64(self.pages, f"IndexSpec({self.name!r}).pages")
            if p.ndim != 1:
                raise ValueError(f"IndexSpec({self.name!r}).pages must be one-dimensional, "
                                 f"got shape {p.shape}")
            object.__setattr__(self, "pages", _readonly(p.copy()))

    def page_array(self) -> np.ndarray:
        """The page numbers as an ``int64`` array."""
        if isinstance(self.pages, range):
            return np.arange(self.pages.start, self.pages.stop, self.pages.step, dtype=np.int64)
        return self.pages

    def __eq__(self, other):
        if not isinstance(other, IndexSpec):
            return NotImplemented
        return self.name == other.name and np.array_equal(self.page_array(), other.page_array())

    __hash__ = None  # holds arrays

    def __repr__(self):
        p = self.pages if isinstance(self.pages, range) else f"<{len(self.pages)} pages>"
        return f"IndexSpec({self.name!r}, {p})"


def _name_the_repeated_page(where: str, indexes: tuple) -> None:
    """Raise the error for the first index (in order) that lists a page twice or shares
    one with an earlier index.  Called only once one sort of every index's pages has
    found a repeat, so that a valid geometry pays one sort, not one merge per index."""
    seen = np.zeros(0, dtype=np.int64)  # pages of the earlier indexes, sorted
    for j, ix in enumerate(indexes):
        p = ix.page_array()
        u, c = np.unique(p, return_counts=True)
        if (c > 1).any():
            raise ValueError(f"{where}.indexes[{j}] ({ix.name!r}).pages lists page "
                             f"{int(u[c > 1][0])} twice; pages must be distinct")
        dup = np.isin(p, seen, assume_unique=True)
        if dup.any():
            k = int(p[dup][0])
            raise ValueError(f"{where}.indexes[{j}] ({ix.name!r}).pages overlaps an earlier "
                             f"index at page {k}; index pages must not overlap")
        seen = np.union1d(seen, u)


@dataclass(frozen=True, eq=False)
class SpaceSpec:
    """One tablespace.

    Parameters
    ----------
    space_id : int
        InnoDB space id, ``0 <= space_id < 2**32``, unique in a :class:`Tablespaces`.
    n_pages : int
        Size of the tablespace in pages, ``1..2**32`` (page numbers are 32-bit);
        page numbers are ``0..n_pages-1``.
    name : str, optional
        Name (e.g. the table).  Labels the space's groups; ``"space <id>"`` if empty.
    indexes : tuple of IndexSpec, optional
        Indexes of the space, each owning a set of pages (no overlaps).  Pages
        not covered by any index form an implicit group named after the space.
    leaf_links : (numpy.ndarray, numpy.ndarray) or None, optional
        ``(prev_page_no, next_page_no)``, each of length ``n_pages``: the page
        numbers of the B-tree neighbour leaves stored in FIL_PAGE_PREV and
        FIL_PAGE_NEXT of every page, ``-1`` for none.  None (default) links the
        pages of the space sequentially: ``prev = p - 1``, ``next = p + 1``,
        ``-1`` at the edges.
    unused_pages : numpy.ndarray or None, optional
        Page numbers of pages that hold no data (FIL_PAGE_TYPE_ALLOCATED: allocated
        but never written, or freed).  MariaDB 10.11 frees such a page from the pool
        as soon as a read-ahead has read it (design doc §13).  None (default): none.
    """

    space_id: int
    n_pages: int
    name: str = ""
    indexes: tuple = ()
    leaf_links: tuple | None = None
    unused_pages: np.ndarray | None = None

    def __post_init__(self):
        sid = check_int("SpaceSpec.space_id", self.space_id, 0, MAX_SPACE_ID)
        object.__setattr__(self, "space_id", sid)
        n = check_int(f"SpaceSpec(space_id={sid}).n_pages", self.n_pages, 1, 2**32)
        object.__setattr__(self, "n_pages", n)
        if not isinstance(self.name, str):
            raise ValueError(f"SpaceSpec(space_id={sid}).name must be a string, got {self.name!r}")
        indexes = tuple(self.indexes)
        where = f"SpaceSpec(space_id={sid})"
        names = set()
        arrays = []
        for j, ix in enumerate(indexes):
            if not isinstance(ix, IndexSpec):
                raise ValueError(f"{where}.indexes[{j}] must be an IndexSpec, got {type(ix).__name__}")
            if ix.name in names:
                raise ValueError(f"{where}.indexes[{j}]: duplicate index name {ix.name!r}")
            names.add(ix.name)
            p = ix.page_array()
            if p.size:
                bad = (p < 0) | (p >= n)
                if bad.any():
                    k = int(np.flatnonzero(bad)[0])
                    raise ValueError(f"{where}.indexes[{j}] ({ix.name!r}).pages row {k} = {int(p[k])} "
                                     f"is out of range; allowed: 0..{n - 1}")
                arrays.append(p)
        if arrays:
            every = np.sort(np.concatenate(arrays))
            if (every[1:] == every[:-1]).any():
                _name_the_repeated_page(where, indexes)
        object.__setattr__(self, "indexes", indexes)
        if self.leaf_links is not None:
            try:
                prev, nxt = self.leaf_links
            except (TypeError, ValueError):
                raise ValueError(f"{where}.leaf_links must be a pair (prev_page_no, next_page_no) "
                                 "of arrays or None") from None
            links = []
            for col, arr in (("prev_page_no", prev), ("next_page_no", nxt)):
                a = as_int64(arr, f"{where}.leaf_links {col}")
                if a.shape != (n,):
                    raise ValueError(f"{where}.leaf_links {col} must have shape ({n},), got {a.shape}")
                bad = (a < -1) | (a >= n)
                if bad.any():
                    k = int(np.flatnonzero(bad)[0])
                    raise ValueError(f"{where}.leaf_links {col} row {k} = {int(a[k])} is out of range; "
                                     f"allowed: -1 (none) or 0..{n - 1}")
                links.append(_readonly(a.copy()))
            object.__setattr__(self, "leaf_links", tuple(links))
        if self.unused_pages is not None:
            u = as_int64(self.unused_pages, f"{where}.unused_pages").ravel()
            bad = (u < 0) | (u >= n)
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise ValueError(f"{where}.unused_pages row {k} = {int(u[k])} is out of range; "
                                 f"allowed: 0..{n - 1}")
            object.__setattr__(self, "unused_pages", _readonly(np.unique(u)))

    @property
    def label(self) -> str:
        """The name, or ``"space <id>"`` when the name is empty."""
        return self.name or f"space {self.space_id}"

    def __eq__(self, other):
        if not isinstance(other, SpaceSpec):
            return NotImplemented
        if (self.space_id, self.n_pages, self.name, self.indexes) != \
                (other.space_id, other.n_pages, other.name, other.indexes):
            return False
        if (self.leaf_links is None) != (other.leaf_links is None):
            return False
        if (self.unused_pages is None) != (other.unused_pages is None) or (
                self.unused_pages is not None
                and not np.array_equal(self.unused_pages, other.unused_pages)):
            return False
        return self.leaf_links is None or all(
            np.array_equal(a, b) for a, b in zip(self.leaf_links, other.leaf_links))

    __hash__ = None

    def __repr__(self):
        extra = f", indexes={list(self.indexes)}" if self.indexes else ""
        extra += ", leaf_links=<custom>" if self.leaf_links is not None else ""
        return f"SpaceSpec({self.space_id}, {self.n_pages}, {self.name!r}{extra})"


# --------------------------------------------------------------------------------------
# the map
# --------------------------------------------------------------------------------------
class Tablespaces:
    """An immutable map between (space id, page number) and dense page indices.

    Spaces are laid out in the order given: the first occupies dense indices
    ``[0, n_pages_0)``, the next follows, and so on.

    Parameters
    ----------
    spaces : sequence of SpaceSpec
        At least one; space ids and non-empty names must be unique.

    Examples
    --------
    >>> ts = Tablespaces([SpaceSpec(5, 200, "t1"), SpaceSpec(9, 100, "t2")])
    >>> ts.dense([9, 5], [3, 130]).tolist()
    [203, 130]
    >>> [a.tolist() for a in ts.locate([203])]
    [[9], [3]]
    """

    __slots__ = ("_spaces", "_ids", "_bases", "_sizes", "_order", "_n", "_cache")

    def __init__(self, spaces: Sequence[SpaceSpec]):
        spaces = tuple(spaces)
        if not spaces:
            raise ValueError("spaces must hold at least one SpaceSpec")
        ids, names = set(), set()
        for j, s in enumerate(spaces):
            if not isinstance(s, SpaceSpec):
                raise ValueError(f"spaces[{j}] must be a SpaceSpec, got {type(s).__name__}")
            if s.space_id in ids:
                raise ValueError(f"spaces[{j}].space_id={s.space_id} is a duplicate; space ids must "
                                 "be unique")
            ids.add(s.space_id)
            if s.name and s.name in names:
                raise ValueError(f"spaces[{j}].name={s.name!r} is a duplicate; space names must be "
                                 "unique")
            names.add(s.name)
        self._spaces = spaces
        self._ids = _readonly(np.array([s.space_id for s in spaces], dtype=np.int64))
        self._sizes = _readonly(np.array([s.n_pages for s in spaces], dtype=np.int64))
        self._bases = _readonly(np.concatenate([[0], np.cumsum(self._sizes)[:-1]]).astype(np.int64))
        self._n = int(self._sizes.sum())
        self._order = np.argsort(self._ids, kind="stable")
        self._cache = {}

    # ---- construction helpers ------------------------------------------------------
    @classmethod
    def single(cls, n_pages: int, space_id: int = 1, name: str = "synthetic") -> Tablespaces:
        """One tablespace of ``n_pages`` pages, no indexes, sequential leaf links."""
        return cls([SpaceSpec(space_id, n_pages, name)])

    @classmethod
    def from_sizes(cls, space_ids, n_pages) -> Tablespaces:
        """Unnamed spaces from parallel sequences of ids and sizes (in that order)."""
        ids = as_int64(space_ids, "space_ids").ravel()
        sizes = as_int64(n_pages, "n_pages").ravel()
        if ids.shape != sizes.shape:
            raise ValueError(f"space_ids and n_pages must have the same length, got {ids.size} and "
                             f"{sizes.size}")
        return cls([SpaceSpec(int(i), int(n)) for i, n in zip(ids, sizes)])

    # ---- shape ---------------------------------------------------------------------
    @property
    def spaces(self) -> tuple:
        """The :class:`SpaceSpec` objects, in dense order."""
        return self._spaces

    @property
    def n_pages(self) -> int:
        """Total number of dense pages."""
        return self._n

    @property
    def n_spaces(self) -> int:
        return len(self._spaces)

    @property
    def space_ids(self) -> np.ndarray:
        """Space id of every space (``int64``, dense order)."""
        return self._ids

    @property
    def bases(self) -> np.ndarray:
        """First dense index of every space."""
        return self._bases

    @property
    def sizes(self) -> np.ndarray:
        """Pages in every space."""
        return self._sizes

    space_base = bases
    space_size = sizes

    @property
    def space_names(self) -> list:
        """Label of every space (name, or ``"space <id>"``)."""
        return [s.label for s in self._spaces]

    def space_index(self, space_id: int) -> int:
        """Position (0..n_spaces-1) of a space id; ValueError if unknown."""
        idx = self._space_idx(np.asarray([space_id], dtype=np.int64))[0]
        if idx < 0:
            raise ValueError(f"space={space_id} is not a known tablespace; known space ids: "
                             f"{self._ids.tolist()[:20]}")
        return int(idx)

    def _space_idx(self, space: np.ndarray) -> np.ndarray:
        """Space position per element, -1 where the id is unknown."""
        sorted_ids = self._ids[self._order]
        pos = np.searchsorted(sorted_ids, space)
        pos_c = np.minimum(pos, len(sorted_ids) - 1)
        ok = sorted_ids[pos_c] == space
        return np.where(ok, self._order[pos_c], -1)

    # ---- conversions ---------------------------------------------------------------
    def dense(self, space, page_no) -> np.ndarray:
        """Dense indices of (space id, page number) pairs.

        Parameters
        ----------
        space, page_no : array_like of int
            Broadcast against each other.

        Returns
        -------
        numpy.ndarray of int64
            Same shape as the broadcast inputs.

        Raises
        ------
        ValueError
            Naming the column (``space`` or ``page_no``) and the first offending
            row, if a space id is unknown or a page number is outside its space.
        """
        s = as_int64(space, "space")
        p = as_int64(page_no, "page_no")
        s, p = np.broadcast_arrays(s, p)
        sf, pf = s.ravel(), p.ravel()
        idx = self._space_idx(sf)
        if (idx < 0).any():
            i = int(np.flatnonzero(idx < 0)[0])
            raise ValueError(f"space row {i} = {int(sf[i])} is not a known tablespace; known space "
                             f"ids: {self._ids.tolist()[:20]}")
        size = self._sizes[idx]
        bad = (pf < 0) | (pf >= size)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"page_no row {i} = {int(pf[i])} is out of range for space "
                             f"{int(sf[i])}; allowed: 0..{int(size[i]) - 1}")
        return (self._bases[idx] + pf).reshape(s.shape)

    def locate(self, dense) -> tuple[np.ndarray, np.ndarray]:
        """(space id, page number) arrays of dense indices (ValueError if out of range)."""
        d = as_int64(dense, "dense")
        flat = d.ravel()
        bad = (flat < 0) | (flat >= self._n)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"dense row {i} = {int(flat[i])} is out of range; allowed: "
                             f"0..{self._n - 1}")
        idx = np.searchsorted(self._bases, d, side="right") - 1
        return self._ids[idx], d - self._bases[idx]

    # ---- kernel arrays (cached, read-only) -----------------------------------------
    def _cached(self, key, fn):
        v = self._cache.get(key)
        if v is None:
            v = fn()
            self._cache[key] = v
        return v

    @property
    def page_space_idx(self) -> np.ndarray:
        """Space position (0..n_spaces-1) of every dense page."""
        return self._cached("space_idx", lambda: _readonly(
            np.repeat(np.arange(self.n_spaces, dtype=np.int64), self._sizes)))

    @property
    def page_space_id(self) -> np.ndarray:
        """Space id of every dense page."""
        return self._cached("space_id", lambda: _readonly(self._ids[self.page_space_idx]))

    @property
    def page_no(self) -> np.ndarray:
        """Page number inside its space of every dense page."""
        return self._cached("page_no", lambda: _readonly(
            np.arange(self._n, dtype=np.int64) - self._bases[self.page_space_idx]))

    def _group_table(self):
        """Groups without per-page arrays: names, space of each group, the sorted dense
        indices of every index page with its group, and each space's rest group (-1 if
        its indexes cover it)."""
        names, gspace, keys, vals = [], [], [], []
        rest = np.full(self.n_spaces, -1, dtype=np.int64)
        for k, s in enumerate(self._spaces):
            base = int(self._bases[k])
            covered = 0
            for ix in s.indexes:
                p = ix.page_array()
                keys.append(base + p)
                vals.append(np.full(len(p), len(names), dtype=np.int64))
                covered += len(p)
                names.append(f"{s.label}.{ix.name}")
                gspace.append(k)
            if covered < s.n_pages:
                rest[k] = len(names)
                names.append(s.label)
                gspace.append(k)
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise ValueError(f"group name {dup!r} occurs twice; rename the space or index")
        keys = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
        vals = np.concatenate(vals) if vals else np.zeros(0, dtype=np.int64)
        order = np.argsort(keys, kind="stable")
        return (tuple(names), _readonly(np.array(gspace, dtype=np.int64)),
                _readonly(keys[order]), _readonly(vals[order]), _readonly(rest))

    def _groups(self):
        names, gspace, keys, vals, rest = self._cached("group_table", self._group_table)
        group = np.repeat(rest, self._sizes)
        group[keys] = vals
        return _readonly(group), names, gspace

    def group_of(self, dense) -> np.ndarray:
        """Group of each dense page.  Up to :data:`GROUP_ARRAY_PAGES` pages in all it reads
        the per-page array :attr:`page_group` (built once: a pool's contents are counted
        by group at every sample); above, it is computed from the index page lists, so
        that no array of the whole map is built."""
        d = as_int64(dense, "dense")
        if self._n <= GROUP_ARRAY_PAGES:
            return self.page_group[d]
        _, _, keys, vals, rest = self._cached("group_table", self._group_table)
        out = rest[np.searchsorted(self._bases, d, side="right") - 1]
        if len(keys):
            pos = np.minimum(np.searchsorted(keys, d), len(keys) - 1)
            hit = keys[pos] == d
            out = np.where(hit, vals[pos], out)
        return out

    def leaf_links_of(self, dense) -> tuple[np.ndarray, np.ndarray]:
        """(prev, next) dense leaf neighbours of each dense page, -1 for none, as
        :attr:`prev_leaf` / :attr:`next_leaf` but computed for these pages only."""
        d = as_int64(dense, "dense")
        k = np.searchsorted(self._bases, d, side="right") - 1
        base = self._bases[k]
        pn = d - base
        prev = np.where(pn > 0, d - 1, -1)
        nxt = np.where(pn < self._sizes[k] - 1, d + 1, -1)
        custom = [j for j, s in enumerate(self._spaces) if s.leaf_links is not None]
        for j in (np.unique(k) if custom else ()):
            s = self._spaces[int(j)]
            if s.leaf_links is None:
                continue
            m = k == j
            lp, ln = s.leaf_links
            b = int(self._bases[j])
            a, c = lp[pn[m]], ln[pn[m]]
            prev[m] = np.where(a >= 0, a + b, -1)
            nxt[m] = np.where(c >= 0, c + b, -1)
        return prev, nxt

    @property
    def page_group(self) -> np.ndarray:
        """Group (0..n_groups-1) of every dense page: its index, or its space's rest."""
        return self._cached("groups", self._groups)[0]

    @property
    def group_names(self) -> list:
        """Group names: ``"<space label>.<index>"`` per index, ``"<space label>"`` for the
        pages of a space outside every index (present only if there are such pages)."""
        return list(self._cached("group_table", self._group_table)[0])

    @property
    def group_space(self) -> np.ndarray:
        """Space position of every group."""
        return self._cached("group_table", self._group_table)[1]

    @property
    def n_groups(self) -> int:
        return len(self._cached("group_table", self._group_table)[0])

    @property
    def group_sizes(self) -> np.ndarray:
        """Pages in every group."""
        def compute():
            _, gspace, _, vals, rest = self._cached("group_table", self._group_table)
            sizes = np.bincount(vals, minlength=self.n_groups).astype(np.int64)
            for k, g in enumerate(rest):
                if g >= 0:
                    sizes[g] = int(self._sizes[k]) - int(sizes[gspace == k].sum())
            return _readonly(sizes)

        return self._cached("group_sizes", compute)

    def _links(self):
        prev = np.arange(-1, self._n - 1, dtype=np.int64)
        nxt = np.arange(1, self._n + 1, dtype=np.int64)
        for k, s in enumerate(self._spaces):
            b, n = int(self._bases[k]), s.n_pages
            if s.leaf_links is None:
                prev[b] = -1
                nxt[b + n - 1] = -1
            else:
                lp, ln = s.leaf_links
                prev[b:b + n] = np.where(lp >= 0, lp + b, -1)
                nxt[b:b + n] = np.where(ln >= 0, ln + b, -1)
        return _readonly(prev), _readonly(nxt)

    @property
    def leaf_link_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The spaces' own leaf links for the kernels: ``(offset, prev, next)``, where
        ``offset[k]`` is where space k's links start in ``prev``/``next`` (page numbers,
        -1 for none), or -1 for a space without its own links (page n's neighbours are
        n - 1 and n + 1).  Read-only int64 arrays."""
        def compute():
            off, prev, nxt, o = [], [], [], 0
            for s in self._spaces:
                if s.leaf_links is None:
                    off.append(-1)
                    continue
                off.append(o)
                prev.append(np.asarray(s.leaf_links[0], dtype=np.int64))
                nxt.append(np.asarray(s.leaf_links[1], dtype=np.int64))
                o += s.n_pages
            cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(1, dtype=np.int64))
            return tuple(_readonly(np.ascontiguousarray(a, dtype=np.int64))
                         for a in (np.array(off, dtype=np.int64), cat(prev), cat(nxt)))
        return self._cached("leaf_link_table", compute)

    @property
    def unused_dense(self) -> np.ndarray:
        """Sorted dense indices of every space's ``unused_pages`` (int64, read-only)."""
        def compute():
            parts = [s.unused_pages + b for s, b in zip(self._spaces, self._bases.tolist())
                     if s.unused_pages is not None]
            return _readonly(np.concatenate(parts).astype(np.int64) if parts
                             else np.zeros(0, dtype=np.int64))
        return self._cached("unused", compute)

    @property
    def prev_leaf(self) -> np.ndarray:
        """Dense index of the previous leaf (FIL_PAGE_PREV) of every page, -1 for none."""
        return self._cached("links", self._links)[0]

    @property
    def next_leaf(self) -> np.ndarray:
        """Dense index of the next leaf (FIL_PAGE_NEXT) of every page, -1 for none."""
        return self._cached("links", self._links)[1]

    def instance_of(self, n_instances: int) -> np.ndarray:
        """Buffer-pool instance of every dense page.

        ``fold(space, page_no >> 6) mod n_instances`` with
        ``fold(a, b) = (a << 20) + a + b`` in unsigned 64-bit arithmetic, as
        ``buf_pool_get`` (spec §6.1).  All 64 pages of an aligned area share
        one instance; for a power-of-two ``n_instances`` this equals
        ``(space + page_no // 64) mod n_instances``.

        Parameters
        ----------
        n_instances : int
            innodb_buffer_pool_instances, ``1..64``.

        Returns
        -------
        numpy.ndarray of int64, read-only
        """
        n = check_int("n_instances", n_instances, 1, MAX_INSTANCES)

        def compute():
            return _readonly(instance_fold(self.page_space_id, self.page_no, n))

        return self._cached(("instance", n), compute)

    # ---- equality, JSON ------------------------------------------------------------
    def __eq__(self, other):
        if not isinstance(other, Tablespaces):
            return NotImplemented
        return self is other or self._spaces == other._spaces

    __hash__ = None

    def __repr__(self):
        body = ", ".join(f"{s.label}(id={s.space_id}, {s.n_pages} pages)" for s in self._spaces[:6])
        more = f", ... {self.n_spaces - 6} more" if self.n_spaces > 6 else ""
        return f"Tablespaces([{body}{more}], n_pages={self._n})"

    def to_dict(self) -> dict:
        """A JSON-ready dict (see :meth:`to_json`)."""
        spaces = []
        for s in self._spaces:
            d = {"space_id": s.space_id, "n_pages": s.n_pages, "name": s.name}
            if s.indexes:
                d["indexes"] = [{"name": ix.name, "pages": _pages_to_json(ix.pages)}
                                for ix in s.indexes]
            if s.leaf_links is not None:
                d["leaf_links"] = {"prev": s.leaf_links[0].tolist(), "next": s.leaf_links[1].tolist()}
            if s.unused_pages is not None:
                d["unused_pages"] = s.unused_pages.tolist()
            spaces.append(d)
        return {"format": _JSON_FORMAT, "version": _JSON_VERSION, "spaces": spaces}

    def to_json(self) -> str:
        """Serialize to a deterministic JSON string (equal maps give equal strings)."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, obj: dict) -> Tablespaces:
        """Inverse of :meth:`to_dict`.  Other top-level members are ignored."""
        if not isinstance(obj, dict) or obj.get("format") != _JSON_FORMAT:
            raise ValueError(f"not a bufsim tablespaces document (expected format {_JSON_FORMAT!r})")
        if obj.get("version") != _JSON_VERSION:
            raise ValueError(f"tablespaces document version {obj.get('version')!r} is not supported; "
                             f"allowed: {_JSON_VERSION}")
        spaces = []
        for d in obj["spaces"]:
            indexes = tuple(IndexSpec(ix["name"], _pages_from_json(ix["pages"]))
                            for ix in d.get("indexes", ()))
            links = d.get("leaf_links")
            if links is not None:
                links = (np.asarray(links["prev"], dtype=np.int64),
                         np.asarray(links["next"], dtype=np.int64))
            unused = d.get("unused_pages")
            if unused is not None:
                unused = np.asarray(unused, dtype=np.int64)
            spaces.append(SpaceSpec(d["space_id"], d["n_pages"], d.get("name", ""), indexes, links,
                                    unused))
        return cls(spaces)

    @classmethod
    def from_json(cls, text: str | bytes) -> Tablespaces:
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(json.loads(text))
