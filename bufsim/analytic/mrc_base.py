"""What the exact and the SHARDS miss-ratio curves share: the Fenwick tree over
access-time slots and its compaction, the renumbering of pages in order of first
appearance (:class:`PageIds`), the checks of events and sizes, and the curve's
table (see :mod:`bufsim.analytic.mrc` for the method)."""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pandas as pd
from numba import njit

from .._validation import check_int

MIN_SLOTS = 1024


#: page maps (``.tablespaces.n_pages``) up to this many pages are indexed directly (at
#: most 32 MiB per per-page array); larger ones, and traces without one, are renumbered
_DIRECT_MAX_PAGES = 1 << 22


@njit(cache=True)
def fen_add(tree, i, v):
    n = tree.shape[0]
    while i < n:
        tree[i] += v
        i += i & -i


@njit(cache=True)
def push(tree, owner, last, p, t):
    """Put page p on top of the stack at time slot t; return the next free slot."""
    fen_add(tree, t + 1, 1)
    owner[t] = p
    last[p] = t
    return t + 1


@njit(cache=True)
def fen_prefix(tree, i):
    s = 0
    while i > 0:
        s += tree[i]
        i &= i - 1
    return s


@njit(cache=True)
def compact(last, owner, tree):
    """Renumber the live slots 0..k-1 in time order; rebuild the tree; return k."""
    n_slots = owner.shape[0]
    k = 0
    for s in range(n_slots):
        p = owner[s]
        if p >= 0:
            owner[s] = -1
            owner[k] = p
            last[p] = k
            k += 1
    for i in range(1, n_slots + 1):
        lo = i - (i & -i)
        v = min(i, k) - lo
        tree[i] = v if v > 0 else 0
    return k


@njit(cache=True)
def _id_slot(hk, p):
    """The slot of page ``p`` in the hash ``hk`` (keys -1 when empty; linear probing)."""
    mask = hk.shape[0] - 1
    h = np.int64((np.uint64(p) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(29)) & mask
    while hk[h] >= 0 and hk[h] != p:
        h = (h + 1) & mask
    return h


@njit(cache=True)
def _map_ids(pages, hk, hv, st, out, start):
    """Ids of ``pages[start:]`` into ``out``, new pages numbered ``st[0], st[0]+1...``
    in order of first appearance; stops (returning the index reached) before the
    hash would be more than half full."""
    n = st[0]
    cap = hk.shape[0] // 2
    for i in range(start, pages.shape[0]):
        h = _id_slot(hk, pages[i])
        if hk[h] < 0:
            if n >= cap:
                st[0] = n
                return i
            hk[h] = pages[i]
            hv[h] = n
            n += 1
        out[i] = hv[h]
    st[0] = n
    return pages.shape[0]


@njit(cache=True)
def _rehash_ids(hk, hv, nk, nv):
    for j in range(hk.shape[0]):
        if hk[j] >= 0:
            h = _id_slot(nk, hk[j])
            nk[h] = hk[j]
            nv[h] = hv[j]


class PageIds:
    """Dense ids ``0, 1, ...`` of pages in order of first appearance (16 bytes per
    hash slot, at most two slots per distinct page)."""

    def __init__(self):
        self.hk = np.full(2 * MIN_SLOTS, -1, dtype=np.int64)
        self.hv = np.zeros(2 * MIN_SLOTS, dtype=np.int64)
        self.st = np.zeros(1, dtype=np.int64)

    def __call__(self, pages: np.ndarray) -> np.ndarray:
        out = np.empty(pages.shape[0], dtype=np.int64)
        i = 0
        while True:
            i = _map_ids(pages, self.hk, self.hv, self.st, out, i)
            if i == pages.shape[0]:
                return out
            nk = np.full(2 * self.hk.shape[0], -1, dtype=np.int64)
            nv = np.zeros(nk.shape[0], dtype=np.int64)
            _rehash_ids(self.hk, self.hv, nk, nv)
            self.hk, self.hv = nk, nv


def as_events(pages, counts, name="pages"):
    p = np.ascontiguousarray(pages)
    if p.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {p.shape}")
    if p.size and not np.issubdtype(p.dtype, np.integer):
        raise ValueError(f"{name} must hold integers; got dtype {p.dtype}")
    p = p.astype(np.int64, copy=False)
    if not p.flags.writeable:  # one compiled kernel: numba specialises on read-only arrays
        p = p.copy()
    if p.size and p.min() < 0:
        raise ValueError(f"{name} must be >= 0; got {int(p.min())}")
    if counts is None:
        c = np.ones(p.shape[0], dtype=np.int64)
    else:
        c = np.ascontiguousarray(counts)
        if c.shape != p.shape:
            raise ValueError(f"counts must have the shape of {name} {p.shape}; got {c.shape}")
        if c.size and not np.issubdtype(c.dtype, np.integer):
            raise ValueError(f"counts must hold integers; got dtype {c.dtype}")
        c = c.astype(np.int64, copy=False)
        if not c.flags.writeable:
            c = c.copy()
        if c.size and c.min() < 1:
            raise ValueError(f"counts must be >= 1; got {int(c.min())}")
    return p, c


def iter_events(trace_or_chunks) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield ``(pages, counts)`` int64 pairs from a tuple, a chunk or chunks."""
    obj = trace_or_chunks
    if isinstance(obj, tuple) and len(obj) == 2 and not hasattr(obj[0], "page"):
        yield as_events(obj[0], obj[1])
        return
    if isinstance(obj, np.ndarray):
        yield as_events(obj, None)
        return
    if hasattr(obj, "page") and hasattr(obj, "count"):
        yield as_events(obj.page, obj.count, "page")
        return
    if not isinstance(obj, Iterable):
        raise TypeError("trace_or_chunks must be a (pages, counts) tuple, a chunk with "
                        f".page and .count, or an iterable of chunks; got {type(obj).__name__}")
    for ch in obj:
        if hasattr(ch, "page") and hasattr(ch, "count"):
            yield as_events(ch.page, ch.count, "page")
        elif isinstance(ch, tuple) and len(ch) == 2:
            yield as_events(ch[0], ch[1])
        else:
            raise TypeError("each chunk must have .page and .count arrays or be a "
                            f"(pages, counts) tuple; got {type(ch).__name__}")


def infer_n_pages(obj, n_pages):
    if n_pages is not None:
        return check_n_pages(n_pages)
    ts = getattr(obj, "tablespaces", None)
    n = getattr(ts, "n_pages", None)
    # a large page map (page numbers up to 10**9...) is not allocated: pages are renumbered
    return int(n) if n is not None and int(n) <= _DIRECT_MAX_PAGES else None


def check_n_pages(n_pages):
    return check_int("n_pages", n_pages, 1, 2**30 - 1)


def check_sizes(sizes) -> np.ndarray:
    s = np.atleast_1d(np.asarray(sizes))
    if s.ndim != 1 or s.size == 0:
        raise ValueError("sizes must be a non-empty one-dimensional sequence of integers >= 1")
    if not np.issubdtype(s.dtype, np.integer):
        if not np.all(np.isfinite(s)) or np.any(s != np.round(s)):
            raise ValueError(f"sizes must be integers >= 1; got {s!r}")
    s = s.astype(np.int64)
    if s.min() < 1:
        raise ValueError(f"sizes must be integers >= 1; got {int(s.min())}")
    return s


def mrc_frame(hit_cumsum, gets, sizes):
    """Build the curve from ``hit_cumsum[d]`` = gets with distance 1..d."""
    idx = np.minimum(sizes, hit_cumsum.shape[0] - 1)
    hits = hit_cumsum[idx]
    misses = gets - hits
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = hits / gets if gets > 0 else np.full(sizes.shape, np.nan)
    return pd.DataFrame({"size": sizes, "hits": hits, "misses": misses,
                         "gets": np.full(sizes.shape, gets, dtype=type(gets)),
                         "hit_ratio": np.asarray(ratio, dtype=np.float64)})


class SlotStack:
    """The array state shared by the exact and the SHARDS counters."""

    def __init__(self, n_pages: int, n_slots: int):
        self.last = np.full(n_pages, -1, dtype=np.int64)
        self.owner = np.full(n_slots, -1, dtype=np.int64)
        self.tree = np.zeros(n_slots + 1, dtype=np.int32)   # counts <= n_pages
        self.st = np.zeros(2, dtype=np.int64)      # [next slot, live pages]

    def grow_pages(self, n_pages: int) -> None:
        old = self.last
        self.last = np.full(n_pages, -1, dtype=np.int64)
        self.last[:old.shape[0]] = old

    def grow_slots(self) -> int:
        """Double the time slots and compact; returns the next free slot."""
        n_slots = 2 * self.owner.shape[0]
        owner = np.full(n_slots, -1, dtype=np.int64)
        owner[:self.owner.shape[0]] = self.owner
        self.owner = owner
        self.tree = np.zeros(n_slots + 1, dtype=np.int32)
        return compact(self.last, self.owner, self.tree)
