"""Miss-ratio curves: exact LRU curves from Mattson stack distances, and SHARDS.

The LRU stack distance of a get is the 1-based position of its page in the LRU
stack just before the get (1 = the most recently used page); a get of a page
never seen before has an infinite distance, stored as ``-1``.  An LRU pool of
``C`` pages hits exactly the gets whose distance is at most ``C`` (Mattson et
al., 1970), so one pass over a trace gives the hit counts at every size.

Distances are counted with a Fenwick (binary indexed) tree over access time
slots: every page holds a mark at the slot of its latest access, and the
distance of a get is one plus the number of marks after the page's previous
slot (Bennett and Kruskal, 1975; Almasi et al., 2002).  When the slots run out,
the live marks are renumbered in order (compaction), so memory is
``O(n_pages)`` whatever the trace length and a trace can be fed in chunks.
Unless ``n_pages`` is given (or read from a small page map), pages are first
renumbered in order of first appearance through an open-addressing hash, so that
memory follows the distinct pages a trace touches, not its largest page number
(a trace naming page 10**9 costs what one naming page 10 does).

Traces are run-length encoded: an event ``(page, count)`` stands for ``count``
consecutive gets of ``page``; gets ``2..count`` of an event have distance 1.

SHARDS (Waldspurger et al., 2015) samples pages spatially, keeping the pages
whose hash is below a threshold ``T`` out of ``P = 2**32``, and scales the
distances of the sampled stream by ``1/R`` with ``R = T / P``.  The fixed-size
variant keeps at most ``max_samples`` sampled pages, lowering ``T`` to the
largest hash in the set each time the set overflows.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pandas as pd
from numba import njit

from .._validation import check_int

__all__ = [
    "StackDistanceCounter", "ShardsCounter", "stack_distances", "exact_mrc",
    "shards_mrc", "mrc_error", "page_hash", "distinct_pages",
]

_MIN_SLOTS = 1024
#: page maps (``.tablespaces.n_pages``) up to this many pages are indexed directly (at
#: most 32 MiB per per-page array); larger ones, and traces without one, are renumbered
_DIRECT_MAX_PAGES = 1 << 22
_P_BITS = 32
_P = 1 << _P_BITS          # hash space of SHARDS (hash values are in 0..P-1)

_SM_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_SM_M1 = np.uint64(0xBF58476D1CE4E5B9)
_SM_M2 = np.uint64(0x94D049BB133111EB)
_SH30 = np.uint64(30)
_SH27 = np.uint64(27)
_SH31 = np.uint64(31)
_SH32 = np.uint64(64 - _P_BITS)


# --------------------------------------------------------------------------
# jitted kernels
# --------------------------------------------------------------------------
@njit(cache=True)
def _fen_add(tree, i, v):
    n = tree.shape[0]
    while i < n:
        tree[i] += v
        i += i & -i


@njit(cache=True)
def _push(tree, owner, last, p, t):
    """Put page p on top of the stack at time slot t; return the next free slot."""
    _fen_add(tree, t + 1, 1)
    owner[t] = p
    last[p] = t
    return t + 1


@njit(cache=True)
def _fen_prefix(tree, i):
    s = 0
    while i > 0:
        s += tree[i]
        i &= i - 1
    return s


@njit(cache=True)
def _compact(last, owner, tree):
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
def _stack_kernel(pages, counts, start, last, owner, tree, st, hist, out, record):
    """Exact stack distances of events ``start..``; returns where it stopped.

    ``st = [next time slot, live pages]``.  Stops early (returning the index of
    the next event) when compaction leaves less than half the slots free; the
    caller then enlarges the slot arrays and calls again.
    """
    n_slots = owner.shape[0]
    t = st[0]
    live = st[1]
    n = pages.shape[0]
    for i in range(start, n):
        p = pages[i]
        if t == n_slots:
            t = _compact(last, owner, tree)
            if 2 * t > n_slots:
                st[0] = t
                st[1] = live
                return i
        lp = last[p]
        if lp < 0:
            d = -1
            hist[0] += 1
            live += 1
        elif lp == t - 1:       # the most recent page: it stays where it is
            d = 1
            hist[1] += 1
        else:
            d = live - _fen_prefix(tree, lp + 1) + 1
            hist[d] += 1
            _fen_add(tree, lp + 1, -1)
            owner[lp] = -1
        if lp < 0 or lp != t - 1:
            t = _push(tree, owner, last, p, t)
        hist[1] += counts[i] - 1
        if record:
            out[i] = d
    st[0] = t
    st[1] = live
    return n


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
        self.hk = np.full(2 * _MIN_SLOTS, -1, dtype=np.int64)
        self.hv = np.zeros(2 * _MIN_SLOTS, dtype=np.int64)
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


@njit(cache=True)
def _splitmix64(x):
    z = x + _SM_GAMMA
    z = (z ^ (z >> _SH30)) * _SM_M1
    z = (z ^ (z >> _SH27)) * _SM_M2
    return z ^ (z >> _SH31)


@njit(cache=True)
def _page_hash(page, seed):
    """Hash of a page in 0..2**32-1: top bits of splitmix64(page ^ seed)."""
    return np.int64(_splitmix64(np.uint64(page) ^ seed) >> _SH32)


@njit(cache=True)
def _page_hashes(pages, seed):
    out = np.empty(pages.shape[0], dtype=np.int64)
    for i in range(pages.shape[0]):
        out[i] = _page_hash(pages[i], seed)
    return out


@njit(cache=True)
def _heap_push(heap_h, heap_p, n, h, p):
    i = n
    while i > 0:
        parent = (i - 1) >> 1
        if heap_h[parent] >= h:
            break
        heap_h[i] = heap_h[parent]
        heap_p[i] = heap_p[parent]
        i = parent
    heap_h[i] = h
    heap_p[i] = p
    return n + 1


@njit(cache=True)
def _heap_pop(heap_h, heap_p, n):
    """Remove the root of a max-heap of ``n`` items; returns the new size."""
    n -= 1
    h = heap_h[n]
    p = heap_p[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and heap_h[c + 1] > heap_h[c]:
            c += 1
        if heap_h[c] <= h:
            break
        heap_h[i] = heap_h[c]
        heap_p[i] = heap_p[c]
        i = c
    heap_h[i] = h
    heap_p[i] = p
    return n


@njit(cache=True)
def _shards_kernel(pages, ids, counts, start, seed, smax, last, owner, tree, st,
                   heap_h, heap_p, hist, fst):
    """SHARDS over events ``start..``; returns where it stopped (see _stack_kernel).

    ``pages`` are hashed; ``ids`` (the pages themselves, or their dense ids) index
    the per-page state.

    ``st = [next slot, live sampled pages, threshold T, heap size]``,
    ``fst = [total weight, sampled gets]``; ``smax = 0`` is fixed-rate SHARDS.
    Each sampled get adds ``P / T`` (one over the sampling rate) to the bucket
    ``ceil(d * P / T)`` of ``hist`` (0 = cold; clamped to the last bucket).
    """
    n_slots = owner.shape[0]
    maxb = hist.shape[0] - 1
    t = st[0]
    live = st[1]
    thr = st[2]
    hn = st[3]
    n = pages.shape[0]
    for i in range(start, n):
        h = _page_hash(pages[i], seed)
        if h >= thr:
            continue
        p = ids[i]
        if t == n_slots:
            t = _compact(last, owner, tree)
            if 2 * t > n_slots:
                st[0] = t
                st[1] = live
                st[2] = thr
                st[3] = hn
                return i
        c = counts[i]
        w = _P / thr
        lp = last[p]
        if lp < 0:
            hist[0] += w
            live += 1
            if smax > 0:
                hn = _heap_push(heap_h, heap_p, hn, h, p)
        elif lp == t - 1:
            hist[1] += w
        else:
            d = live - _fen_prefix(tree, lp + 1) + 1
            b = (d * _P + thr - 1) // thr
            if b > maxb:
                b = maxb
            hist[b] += w
            _fen_add(tree, lp + 1, -1)
            owner[lp] = -1
        if lp < 0 or lp != t - 1:
            t = _push(tree, owner, last, p, t)
        hist[1] += (c - 1) * w
        fst[0] += c * w
        fst[1] += c
        if smax > 0 and hn > smax:
            # evict the largest hash; the threshold drops to it (and ties go too)
            thr = heap_h[0]
            while hn > 0 and heap_h[0] >= thr:
                q = heap_p[0]
                hn = _heap_pop(heap_h, heap_p, hn)
                s = last[q]
                if s >= 0:
                    _fen_add(tree, s + 1, -1)
                    owner[s] = -1
                    last[q] = -1
                    live -= 1
    st[0] = t
    st[1] = live
    st[2] = thr
    st[3] = hn
    return n


# --------------------------------------------------------------------------
# input handling
# --------------------------------------------------------------------------
def _as_events(pages, counts, name="pages"):
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
        yield _as_events(obj[0], obj[1])
        return
    if isinstance(obj, np.ndarray):
        yield _as_events(obj, None)
        return
    if hasattr(obj, "page") and hasattr(obj, "count"):
        yield _as_events(obj.page, obj.count, "page")
        return
    if not isinstance(obj, Iterable):
        raise TypeError("trace_or_chunks must be a (pages, counts) tuple, a chunk with "
                        f".page and .count, or an iterable of chunks; got {type(obj).__name__}")
    for ch in obj:
        if hasattr(ch, "page") and hasattr(ch, "count"):
            yield _as_events(ch.page, ch.count, "page")
        elif isinstance(ch, tuple) and len(ch) == 2:
            yield _as_events(ch[0], ch[1])
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


def _check_sizes(sizes) -> np.ndarray:
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


def _mrc_frame(hit_cumsum, gets, sizes):
    """Build the curve from ``hit_cumsum[d]`` = gets with distance 1..d."""
    idx = np.minimum(sizes, hit_cumsum.shape[0] - 1)
    hits = hit_cumsum[idx]
    misses = gets - hits
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = hits / gets if gets > 0 else np.full(sizes.shape, np.nan)
    return pd.DataFrame({"size": sizes, "hits": hits, "misses": misses,
                         "gets": np.full(sizes.shape, gets, dtype=type(gets)),
                         "hit_ratio": np.asarray(ratio, dtype=np.float64)})


class _SlotStack:
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
        return _compact(self.last, self.owner, self.tree)


# --------------------------------------------------------------------------
# exact stack distances
# --------------------------------------------------------------------------
class StackDistanceCounter:
    """Histogram of LRU stack distances, fed chunk by chunk.

    Parameters
    ----------
    n_pages : int, optional
        Pages are dense indices ``0..n_pages-1``.  Memory is ``O(n_pages)``:
        the time of the latest access per page, and a Fenwick tree over
        ``2 * n_pages`` time slots that is compacted when the slots fill up.
        Without it pages may be any integers >= 0: they are renumbered in order
        of first appearance, and the arrays grow with the distinct pages seen
        (memory follows the pages the trace touches, not the largest one).

    Attributes
    ----------
    histogram : numpy.ndarray of int64
        ``histogram[0]`` counts cold gets (first reference), ``histogram[d]``
        the gets at stack distance ``d``.
    n_gets, n_events : int
        Gets and events seen so far.

    Notes
    -----
    Each event costs ``O(log n_pages)``; compaction costs ``O(n_pages)`` once
    every ``n_pages`` or more events at least.  An event of ``count`` gets adds
    one get at its distance and ``count - 1`` gets at distance 1.

    References
    ----------
    .. [1] R. L. Mattson, J. Gecsei, D. R. Slutz and I. L. Traiger, "Evaluation
       techniques for storage hierarchies", IBM Systems Journal 9(2), 1970.
    .. [2] B. T. Bennett and V. J. Kruskal, "LRU stack processing", IBM Journal
       of Research and Development 19(4), 1975.
    .. [3] G. Almasi, C. Cascaval and D. A. Padua, "Calculating stack distances
       efficiently", MSP 2002.

    Examples
    --------
    >>> c = StackDistanceCounter(3)
    >>> c.update([0, 1, 0, 2, 1], return_distances=True).tolist()
    [-1, -1, 2, -1, 3]
    >>> c.hits([1, 2, 3]).tolist()
    [0, 1, 2]
    """

    def __init__(self, n_pages: int | None = None):
        n = _MIN_SLOTS if n_pages is None else check_n_pages(n_pages)
        self._fixed = n_pages is not None
        self._s = _SlotStack(n, max(_MIN_SLOTS, 2 * n))
        self._hist = np.zeros(n + 1, dtype=np.int64)
        self._ids = None if self._fixed else PageIds()
        self.n_gets = 0
        self.n_events = 0

    @property
    def n_pages(self) -> int:
        return self._s.last.shape[0]

    @property
    def histogram(self) -> np.ndarray:
        return self._hist.copy()

    def _ensure_pages(self, pages: np.ndarray) -> None:
        if pages.size == 0:
            return
        top = int(pages.max())
        if top < self.n_pages:
            return
        if self._fixed:
            raise ValueError(f"page index {top} is out of range; allowed: 0..{self.n_pages - 1}")
        n = max(top + 1, 2 * self.n_pages)
        self._s.grow_pages(n)
        hist = np.zeros(n + 1, dtype=np.int64)
        hist[:self._hist.shape[0]] = self._hist
        self._hist = hist

    def update(self, pages, counts=None, *, return_distances: bool = False):
        """Account the events ``(pages, counts)`` that follow those seen so far.

        Parameters
        ----------
        pages : array_like of int
            Page index of each event.
        counts : array_like of int, optional
            Consecutive gets per event (>= 1); default 1.
        return_distances : bool
            Return the distance of each event's first get (``-1`` = cold).

        Returns
        -------
        numpy.ndarray of int64 or None
        """
        p, c = _as_events(pages, counts)
        if self._ids is not None:
            p = self._ids(p)
        self._ensure_pages(p)
        out = np.empty(p.shape[0] if return_distances else 0, dtype=np.int64)
        s = self._s
        i = 0
        while True:
            i = _stack_kernel(p, c, i, s.last, s.owner, s.tree, s.st, self._hist, out,
                              return_distances)
            if i == p.shape[0]:
                break
            s.st[0] = s.grow_slots()
        self.n_events += int(p.shape[0])
        self.n_gets += int(c.sum())
        return out if return_distances else None

    def hits(self, sizes) -> np.ndarray:
        """Hits of an LRU pool of each size: gets at distance <= size."""
        sizes = _check_sizes(sizes)
        cs = np.concatenate(([0], np.cumsum(self._hist[1:])))
        return cs[np.minimum(sizes, cs.shape[0] - 1)]

    def mrc(self, sizes) -> pd.DataFrame:
        """The curve at ``sizes``: columns size, hits, misses, gets, hit_ratio."""
        sizes = _check_sizes(sizes)
        cs = np.concatenate(([0], np.cumsum(self._hist[1:])))
        return _mrc_frame(cs, int(self.n_gets), sizes)


def distinct_pages(trace_or_chunks) -> int:
    """Distinct pages of a trace (as ``trace_or_chunks`` of :func:`exact_mrc`), in one
    pass whose memory follows those pages, not the largest page number.

    >>> distinct_pages(([10**12, 5, 10**12, 7], None))
    3
    """
    ids = PageIds()
    for p, _ in iter_events(trace_or_chunks):
        ids(p)
    return int(ids.st[0])


def stack_distances(pages, counts=None, *, use_jit: bool = True) -> np.ndarray:
    """LRU stack distance of the first get of every event.

    Parameters
    ----------
    pages : array_like of int
        Dense page indices (>= 0).
    counts : array_like of int, optional
        Consecutive gets per event (>= 1); gets ``2..count`` of an event have
        distance 1 and are not returned.
    use_jit : bool
        ``False`` runs the same kernel as plain Python (a slow reference).

    Returns
    -------
    numpy.ndarray of int64
        The 1-based position of the page in the LRU stack before the event, or
        ``-1`` for the first reference to the page.

    References
    ----------
    .. [1] R. L. Mattson, J. Gecsei, D. R. Slutz and I. L. Traiger, "Evaluation
       techniques for storage hierarchies", IBM Systems Journal 9(2), 1970.
    .. [2] B. T. Bennett and V. J. Kruskal, "LRU stack processing", IBM Journal
       of Research and Development 19(4), 1975.

    Examples
    --------
    >>> stack_distances([5, 7, 5, 5, 9, 7]).tolist()
    [-1, -1, 2, 1, -1, 3]
    """
    p, c = _as_events(pages, counts)
    n = int(p.max()) + 1 if p.size else 1
    if use_jit:
        cnt = StackDistanceCounter(n)
        return cnt.update(p, c, return_distances=True)
    s = _SlotStack(n, max(_MIN_SLOTS, 2 * n))
    hist = np.zeros(n + 1, dtype=np.int64)
    out = np.empty(p.shape[0], dtype=np.int64)
    _stack_kernel.py_func(p, c, 0, s.last, s.owner, s.tree, s.st, hist, out, True)
    return out


def exact_mrc(trace_or_chunks, sizes, *, n_pages: int | None = None) -> pd.DataFrame:
    """Exact LRU miss-ratio curve of a trace, in one pass.

    Parameters
    ----------
    trace_or_chunks : tuple, chunk, or iterable of chunks
        A ``(pages, counts)`` tuple (``counts`` may be None), an object with
        ``.page`` and ``.count`` int arrays (a :class:`bufsim.Chunk`), or an
        iterable of such objects (a :class:`bufsim.Trace`, a generator).
    sizes : sequence of int
        Pool sizes in pages (>= 1).
    n_pages : int, optional
        Number of distinct page indices; taken from ``.tablespaces.n_pages``
        when the trace has it and it is at most 2**22, otherwise pages are
        renumbered in order of first appearance and the state grows with the
        distinct pages seen.

    Returns
    -------
    pandas.DataFrame
        Columns ``size, hits, misses, gets, hit_ratio``: ``hits`` are the gets
        an LRU pool of ``size`` pages, empty at the start, would hit.

    References
    ----------
    .. [1] R. L. Mattson, J. Gecsei, D. R. Slutz and I. L. Traiger, "Evaluation
       techniques for storage hierarchies", IBM Systems Journal 9(2), 1970.

    Examples
    --------
    >>> exact_mrc(([0, 1, 0, 2, 1], [3, 1, 1, 1, 1]), [1, 2, 3])["hits"].tolist()
    [2, 3, 4]
    """
    sizes = _check_sizes(sizes)
    cnt = StackDistanceCounter(infer_n_pages(trace_or_chunks, n_pages))
    for p, c in iter_events(trace_or_chunks):
        cnt.update(p, c)
    return cnt.mrc(sizes)


# --------------------------------------------------------------------------
# SHARDS
# --------------------------------------------------------------------------
def _mix_seed(seed) -> np.uint64:
    check_int("seed", seed)
    mask = (1 << 64) - 1
    z = (int(seed) + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return np.uint64(z ^ (z >> 31))


def page_hash(pages, seed: int = 0) -> np.ndarray:
    """SHARDS hash of pages: ``splitmix64(page ^ mix(seed)) >> 32``, in 0..2**32-1."""
    p, _ = _as_events(pages, None)
    return _page_hashes(p, _mix_seed(seed))


class ShardsCounter:
    """SHARDS sampled histogram of LRU stack distances, fed chunk by chunk.

    Parameters
    ----------
    n_pages : int, optional
        As in :class:`StackDistanceCounter`; the histogram has ``n_pages``
        buckets (without it: as many as distinct pages seen so far) and scaled
        distances beyond are clamped to the last one.
    rate : float, optional
        Sampling rate ``R`` in (0, 1] (the initial rate when ``max_samples`` is
        given; default 1.0 then).
    max_samples : int, optional
        Fixed-size SHARDS: keep at most this many sampled pages.
    seed : int
        Seed of the page hash.
    adjust : bool
        Fixed-rate only: SHARDS_adj, add the difference between the expected
        and the actual sampled gets to distance 1 (off by default: on IRM
        Zipf traces, where the surplus or deficit of sampled gets is spread
        over all distances, it made the error larger).

    References
    ----------
    .. [1] C. A. Waldspurger, N. Park, A. Garthwaite and I. Ahmad, "Efficient
       MRC construction with SHARDS", USENIX FAST 2015.
    """

    def __init__(self, n_pages: int | None = None, *, rate: float | None = None,
                 max_samples: int | None = None, seed: int = 0, adjust: bool = False):
        if rate is None and max_samples is None:
            raise ValueError("give rate (fixed-rate SHARDS) or max_samples (fixed-size SHARDS)")
        if rate is None:
            rate = 1.0
        rate = float(rate)
        if not (0.0 < rate <= 1.0):
            raise ValueError(f"rate must be in (0, 1]; got {rate!r}")
        thr = int(round(rate * _P))
        if thr < 1:
            raise ValueError(f"rate must be at least 2**-{_P_BITS}; got {rate!r}")
        if max_samples is not None:
            smax = check_int("max_samples", max_samples, 1)
            n_slots = max(_MIN_SLOTS, 2 * smax + 2)
        else:
            smax = 0
        n = _MIN_SLOTS if n_pages is None else check_n_pages(n_pages)
        if smax == 0:
            n_slots = max(_MIN_SLOTS, 2 * int(np.ceil(1.25 * rate * n)))
        self._fixed = n_pages is not None
        self._seed = _mix_seed(seed)
        self._smax = smax
        self._adjust = bool(adjust) and smax == 0
        self._s = _SlotStack(n, n_slots)
        self._st = np.array([0, 0, thr, 0], dtype=np.int64)
        self._heap_h = np.zeros(smax + 1, dtype=np.int64)
        self._heap_p = np.zeros(smax + 1, dtype=np.int64)
        self._hist = np.zeros(n + 1, dtype=np.float64)
        self._fst = np.zeros(2, dtype=np.float64)
        self._ids = None if self._fixed else PageIds()
        self.n_gets = 0

    @property
    def rate(self) -> float:
        """The current sampling rate ``T / P``."""
        return float(self._st[2]) / _P

    @property
    def sampled_gets(self) -> int:
        return int(self._fst[1])

    def _ensure_pages(self, pages: np.ndarray) -> None:
        if pages.size == 0:
            return
        top = int(pages.max())
        n_pages = self._s.last.shape[0]
        if top < n_pages:
            return
        if self._fixed:
            raise ValueError(f"page index {top} is out of range; allowed: 0..{n_pages - 1}")
        n = max(top + 1, 2 * n_pages)
        self._s.grow_pages(n)
        hist = np.zeros(n + 1, dtype=np.float64)
        hist[:self._hist.shape[0]] = self._hist
        self._hist = hist

    def update(self, pages, counts=None) -> None:
        """Account the events ``(pages, counts)`` that follow those seen so far."""
        p, c = _as_events(pages, counts)
        self.n_gets += int(c.sum())
        # every page gets an id (the histogram's buckets reach the distinct pages seen)
        ids = p if self._ids is None else self._ids(p)
        self._ensure_pages(ids)
        s = self._s
        st = self._st
        i = 0
        while True:
            i = _shards_kernel(p, ids, c, i, self._seed, self._smax, s.last, s.owner, s.tree,
                               st, self._heap_h, self._heap_p, self._hist, self._fst)
            if i == p.shape[0]:
                break
            st[0] = s.grow_slots()

    def histogram(self) -> np.ndarray:
        """Estimated gets per scaled distance (index 0 = cold), SHARDS_adj applied."""
        h = self._hist.copy()
        if self._adjust and self.n_gets > 0:
            h[min(1, h.shape[0] - 1)] += self.n_gets - self._fst[0]
        return h

    def mrc(self, sizes) -> pd.DataFrame:
        """Estimated curve at ``sizes``; hits and misses are scaled to all gets."""
        sizes = _check_sizes(sizes)
        h = self.histogram()
        total = h.sum()
        gets = int(self.n_gets)
        cs = np.concatenate(([0.0], np.cumsum(h[1:])))
        if total > 0:
            cs = cs * (gets / total)
        df = _mrc_frame(cs, float(gets), sizes)
        df["gets"] = gets
        df.attrs["rate"] = self.rate
        df.attrs["sampled_gets"] = self.sampled_gets
        return df


def shards_mrc(chunks, sizes, *, rate: float | None = None, max_samples: int | None = None,
               seed: int = 0, adjust: bool = False, n_pages: int | None = None) -> pd.DataFrame:
    """Approximate LRU miss-ratio curve by SHARDS spatial sampling.

    Parameters
    ----------
    chunks : tuple, chunk, or iterable of chunks
        As ``trace_or_chunks`` of :func:`exact_mrc`.
    sizes : sequence of int
        Pool sizes in pages (>= 1).
    rate : float, optional
        Fixed-rate SHARDS with sampling rate ``R`` in (0, 1]: a page is sampled
        when ``hash(page) < R * 2**32``.  With ``max_samples`` it is the
        initial rate.
    max_samples : int, optional
        Fixed-size SHARDS: at most this many distinct pages are tracked; when
        one more is sampled, the page with the largest hash is dropped and the
        threshold lowered to its hash.  Gets sampled at rate ``R`` weigh
        ``1/R``, which is the paper's rescaling of the histogram by
        ``R_new / R_old`` up to a common factor.
    seed : int
        Seed of the page hash (splitmix64 of ``page ^ mix(seed)``).
    adjust : bool
        Fixed-rate SHARDS_adj correction (default False; see
        :class:`ShardsCounter`).
    n_pages : int, optional
        As in :func:`exact_mrc`.

    Returns
    -------
    pandas.DataFrame
        Columns ``size, hits, misses, gets, hit_ratio`` as :func:`exact_mrc`,
        with hits and misses estimated (float) and ``gets`` exact;
        ``df.attrs`` holds the final ``rate`` and the ``sampled_gets``.

    References
    ----------
    .. [1] C. A. Waldspurger, N. Park, A. Garthwaite and I. Ahmad, "Efficient
       MRC construction with SHARDS", USENIX FAST 2015.

    Examples
    --------
    >>> pages = np.arange(100).repeat(2)
    >>> shards_mrc((pages, None), [1], rate=1.0)["hit_ratio"].tolist()
    [0.5]
    """
    sizes = _check_sizes(sizes)
    cnt = ShardsCounter(infer_n_pages(chunks, n_pages), rate=rate, max_samples=max_samples,
                        seed=seed, adjust=adjust)
    for p, c in iter_events(chunks):
        cnt.update(p, c)
    return cnt.mrc(sizes)


def mrc_error(approx: pd.DataFrame, exact: pd.DataFrame) -> float:
    """Mean absolute error of the miss ratio over the sizes both curves have.

    References
    ----------
    .. [1] C. A. Waldspurger, N. Park, A. Garthwaite and I. Ahmad, "Efficient
       MRC construction with SHARDS", USENIX FAST 2015 (the MAE of section 5).
    """
    for name, df in (("approx", approx), ("exact", exact)):
        missing = {"size", "hit_ratio"} - set(df.columns)
        if missing:
            raise ValueError(f"{name} lacks the columns {sorted(missing)}")
    m = approx[["size", "hit_ratio"]].merge(exact[["size", "hit_ratio"]], on="size",
                                            suffixes=("_a", "_e"))
    if m.empty:
        raise ValueError("approx and exact have no size in common")
    return float(np.mean(np.abs(m["hit_ratio_a"] - m["hit_ratio_e"])))
