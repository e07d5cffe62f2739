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

The exact curve is here; SHARDS is in :mod:`bufsim.analytic.shards` and the
state both share (the Fenwick tree over time slots, the page renumbering, the
input checks) in :mod:`bufsim.analytic.mrc_base`; ``ShardsCounter``, ``shards_mrc``
and ``page_hash`` are importable from here too.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from numba import njit

from .mrc_base import (MIN_SLOTS, PageIds, SlotStack, as_events, check_n_pages, check_sizes,

                       compact, fen_add, fen_prefix, infer_n_pages, iter_events, mrc_frame,
                       push)
from .shards import ShardsCounter, page_hash, shards_mrc

__all__ = [
    "StackDistanceCounter", "ShardsCounter", "stack_distances", "exact_mrc",
    "shards_mrc", "mrc_error", "page_hash", "distinct_pages",
]


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
            t = compact(last, owner, tree)
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
            d = live - fen_prefix(tree, lp + 1) + 1
            hist[d] += 1
            fen_add(tree, lp + 1, -1)
            owner[lp] = -1
        if lp < 0 or lp != t - 1:
            t = push(tree, owner, last, p, t)
        hist[1] += counts[i] - 1
        if record:
            out[i] = d
    st[0] = t
    st[1] = live
    return n


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
        n = MIN_SLOTS if n_pages is None else check_n_pages(n_pages)
        self._fixed = n_pages is not None
        self._s = SlotStack(n, max(MIN_SLOTS, 2 * n))
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
        p, c = as_events(pages, counts)
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
        sizes = check_sizes(sizes)
        cs = np.concatenate(([0], np.cumsum(self._hist[1:])))
        return cs[np.minimum(sizes, cs.shape[0] - 1)]

    def mrc(self, sizes) -> pd.DataFrame:
        """The curve at ``sizes``: columns size, hits, misses, gets, hit_ratio."""
        sizes = check_sizes(sizes)
        cs = np.concatenate(([0], np.cumsum(self._hist[1:])))
        return mrc_frame(cs, int(self.n_gets), sizes)


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
    p, c = as_events(pages, counts)
    n = int(p.max()) + 1 if p.size else 1
    if use_jit:
        cnt = StackDistanceCounter(n)
        return cnt.update(p, c, return_distances=True)
    s = SlotStack(n, max(MIN_SLOTS, 2 * n))
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
    sizes = check_sizes(sizes)
    cnt = StackDistanceCounter(infer_n_pages(trace_or_chunks, n_pages))
    for p, c in iter_events(trace_or_chunks):
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
