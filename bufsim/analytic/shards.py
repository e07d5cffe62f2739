"""SHARDS (Waldspurger et al., 2015): miss-ratio curves from a spatial sample of
the pages, at a fixed rate or a fixed number of sampled pages (see
:mod:`bufsim.analytic.mrc` for the method)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from numba import njit

from .._validation import check_int
from .mrc_base import (MIN_SLOTS, PageIds, SlotStack, as_events, check_n_pages, check_sizes,

                       compact, fen_add, fen_prefix, infer_n_pages, iter_events, mrc_frame,
                       push)

_P_BITS = 32


_P = 1 << _P_BITS          # hash space of SHARDS (hash values are in 0..P-1)


_SM_GAMMA = np.uint64(0x9E3779B97F4A7C15)


_SM_M1 = np.uint64(0xBF58476D1CE4E5B9)


_SM_M2 = np.uint64(0x94D049BB133111EB)


_SH30 = np.uint64(30)


_SH27 = np.uint64(27)


_SH31 = np.uint64(31)


_SH32 = np.uint64(64 - _P_BITS)


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
            t = compact(last, owner, tree)
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
            d = live - fen_prefix(tree, lp + 1) + 1
            b = (d * _P + thr - 1) // thr
            if b > maxb:
                b = maxb
            hist[b] += w
            fen_add(tree, lp + 1, -1)
            owner[lp] = -1
        if lp < 0 or lp != t - 1:
            t = push(tree, owner, last, p, t)
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
                    fen_add(tree, s + 1, -1)
                    owner[s] = -1
                    last[q] = -1
                    live -= 1
    st[0] = t
    st[1] = live
    st[2] = thr
    st[3] = hn
    return n


def _mix_seed(seed) -> np.uint64:
    check_int("seed", seed)
    mask = (1 << 64) - 1
    z = (int(seed) + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return np.uint64(z ^ (z >> 31))


def page_hash(pages, seed: int = 0) -> np.ndarray:
    """SHARDS hash of pages: ``splitmix64(page ^ mix(seed)) >> 32``, in 0..2**32-1."""
    p, _ = as_events(pages, None)
    return _page_hashes(p, _mix_seed(seed))


class ShardsCounter:
    """SHARDS sampled histogram of LRU stack distances, fed chunk by chunk.

    Parameters
    ----------
    n_pages : int, optional
        As in :class:`~bufsim.analytic.mrc.StackDistanceCounter`; the histogram has
        ``n_pages`` buckets (without it: as many as distinct pages seen so far) and scaled
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
            n_slots = max(MIN_SLOTS, 2 * smax + 2)
        else:
            smax = 0
        n = MIN_SLOTS if n_pages is None else check_n_pages(n_pages)
        if smax == 0:
            n_slots = max(MIN_SLOTS, 2 * int(np.ceil(1.25 * rate * n)))
        self._fixed = n_pages is not None
        self._seed = _mix_seed(seed)
        self._smax = smax
        self._adjust = bool(adjust) and smax == 0
        self._s = SlotStack(n, n_slots)
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
        p, c = as_events(pages, counts)
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
        sizes = check_sizes(sizes)
        h = self.histogram()
        total = h.sum()
        gets = int(self.n_gets)
        cs = np.concatenate(([0.0], np.cumsum(h[1:])))
        if total > 0:
            cs = cs * (gets / total)
        df = mrc_frame(cs, float(gets), sizes)
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
        As ``trace_or_chunks`` of :func:`~bufsim.analytic.mrc.exact_mrc`.
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
        As in :func:`~bufsim.analytic.mrc.exact_mrc`.

    Returns
    -------
    pandas.DataFrame
        Columns ``size, hits, misses, gets, hit_ratio`` as
        :func:`~bufsim.analytic.mrc.exact_mrc`, with hits and misses estimated (float) and ``gets`` exact;
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
    sizes = check_sizes(sizes)
    cnt = ShardsCounter(infer_n_pages(chunks, n_pages), rate=rate, max_samples=max_samples,
                        seed=seed, adjust=adjust)
    for p, c in iter_events(chunks):
        cnt.update(p, c)
    return cnt.mrc(sizes)
