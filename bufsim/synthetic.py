"""Deterministic synthetic traces: Zipf/uniform IRM, sequential scans, hot set plus scans.

Every generator takes a ``seed`` and returns a lazily generated
:class:`bufsim.Trace` (a generator factory), so traces of billions of gets cost
bounded memory and can be iterated any number of times with identical results.

Random numbers are drawn in fixed blocks of :data:`BLOCK` gets, block ``b`` from
``np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1, b)))`` (the
rank-to-page permutation uses ``spawn_key=(0,)``).  The gets are therefore the
same for a given seed whatever ``chunk_size`` is, and a shorter trace is a
prefix of a longer one.

References
----------
.. [1] E. G. Coffman and P. J. Denning, *Operating Systems Theory*,
   Prentice-Hall, 1973 (the independent reference model).
.. [2] L. Breslau, P. Cao, L. Fan, G. Phillips and S. Shenker, "Web caching and
   Zipf-like distributions: evidence and implications", INFOCOM 1999.
.. [3] H.-C. Chen and Y. Asau, "On generating random variates from an empirical
   distribution", AIIE Transactions 6(2), 1974 (the guide table).
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Iterator

import numpy as np

from ._validation import check_int
from .pages import SpaceSpec, Tablespaces
from .trace import Chunk, Trace

__all__ = ["BLOCK", "zipf_trace", "zipf_probabilities", "uniform_trace", "scan_trace",
           "hot_and_scan_trace"]

#: Gets drawn per random block (fixes the sequence independently of chunk_size).
BLOCK = 1 << 16


def _check_alpha(alpha) -> float:
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, numbers.Real) \
            or not math.isfinite(alpha) or alpha < 0:
        raise ValueError(f"alpha={alpha!r} is out of range; allowed: a finite number >= 0 "
                         "(0 is uniform)")
    return float(alpha)


def _check_seed(seed) -> int:
    return check_int("seed", seed, 0)


def _rng(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


class _Zipf:
    """Inverse-CDF sampler of Zipf ranks mapped to pages."""

    def __init__(self, n_pages: int, alpha: float, seed: int, shuffle_ranks: bool):
        w = np.arange(1, n_pages + 1, dtype=np.float64) ** -alpha
        self.weights = w / w.sum()
        self.cdf = np.cumsum(w)
        self.cdf /= self.cdf[-1]  # cdf[-1] == 1.0 exactly, so every u in [0, 1) finds a rank
        # guide table (Chen and Asau): guide[j] = #{k: cdf[k] <= j/n}, a lower bound of the
        # answer for any u >= j/n, so most draws need one or two probes instead of a binary search
        self.guide = np.searchsorted(self.cdf, np.arange(n_pages) / n_pages, side="right")
        self.perm = (_rng(seed, 0).permutation(n_pages).astype(np.int64) if shuffle_ranks
                     else np.arange(n_pages, dtype=np.int64))
        self.seed = seed

    def probabilities(self) -> np.ndarray:
        p = np.empty_like(self.weights)
        p[self.perm] = self.weights
        return p

    def block(self, b: int, size: int) -> np.ndarray:
        return self.perm[self.ranks(_rng(self.seed, 1, b).random(size))]

    def ranks(self, u: np.ndarray) -> np.ndarray:
        """0-based ranks of uniforms ``u``: exactly ``np.searchsorted(cdf, u, side="right")``."""
        cdf, n = self.cdf, len(self.cdf)
        j = (u * n).astype(np.int64)
        j -= 1  # floor(u * n) may round up by one; one bucket lower is still a lower bound
        np.maximum(j, 0, out=j)
        k = self.guide[j]
        idx = np.flatnonzero(cdf[k] <= u)
        for _ in range(8):  # a short linear walk; long buckets (far tails) fall back below
            if not idx.size:
                break
            k[idx] += 1
            idx = idx[cdf[k[idx]] <= u[idx]]
        if idx.size:
            k[idx] = np.searchsorted(cdf, u[idx], side="right")
        return k

    def stream(self, n_gets: int) -> _Reader:
        def blocks():
            for b, start in enumerate(range(0, n_gets, BLOCK)):
                yield self.block(b, min(BLOCK, n_gets - start))
        return _Reader(blocks())


class _Reader:
    """Takes arrays of any length from a stream of blocks."""

    def __init__(self, blocks: Iterator[np.ndarray]):
        self._blocks, self._buf = blocks, np.zeros(0, dtype=np.int64)

    def take(self, n: int) -> np.ndarray:
        parts, have = [self._buf], len(self._buf)
        while have < n:
            b = next(self._blocks)
            parts.append(b)
            have += len(b)
        buf = np.concatenate(parts) if len(parts) > 1 else parts[0]
        out, self._buf = buf[:n], buf[n:]
        return out


def _chunk(page, count, cpu_ns, stream) -> Chunk:
    n = len(page)
    return Chunk(page, np.full(n, count, dtype=np.int64), np.full(n, cpu_ns, dtype=np.int64),
                 np.full(n, stream, dtype=np.int64), np.zeros(n, dtype=np.uint8))


def zipf_probabilities(n_pages: int, alpha: float, *, seed: int | None = None,
                       shuffle_ranks: bool = True) -> np.ndarray:
    """Exact per-page probabilities of :func:`zipf_trace`, in page order.

    ``P(rank k) = k**-alpha / sum_j j**-alpha`` for ranks ``k = 1..n_pages``;
    rank ``k`` is page ``perm[k-1]`` with the seeded permutation of
    :func:`zipf_trace` (identity when ``shuffle_ranks`` is False).

    Parameters
    ----------
    n_pages : int
        >= 1.
    alpha : float
        >= 0.
    seed : int
        The seed of the trace (required when ``shuffle_ranks``).
    shuffle_ranks : bool

    Returns
    -------
    numpy.ndarray of float64, length ``n_pages``, summing to 1
    """
    n_pages = check_int("n_pages", n_pages, 1)
    alpha = _check_alpha(alpha)
    if shuffle_ranks and seed is None:
        raise ValueError("seed is required when shuffle_ranks=True (the permutation depends on it)")
    return _Zipf(n_pages, alpha, 0 if seed is None else _check_seed(seed),
                 bool(shuffle_ranks)).probabilities()


def zipf_trace(n_gets: int, n_pages: int, alpha: float, *, seed: int, cpu_ns: int = 0,
               stream: int = 0, shuffle_ranks: bool = True, chunk_size: int = 1 << 20) -> Trace:
    """Independent reference model with Zipf-like popularity.

    Each get picks rank ``k`` with probability proportional to ``k**-alpha``
    by inverse-CDF sampling over the cumulative weights (the result of
    ``np.searchsorted(cdf, u, side="right")``, found through a guide table,
    Chen and Asau's method, reference [3] of the module), independently of all other gets.  With ``shuffle_ranks`` the ranks map to pages through a seeded
    permutation, so hot pages are spread over extents and buffer-pool instances
    rather than packed into the first extent.

    Parameters
    ----------
    n_gets : int
        Number of gets (>= 0); one event per get (``count`` 1).
    n_pages : int
        Pages of the single tablespace (>= 1).
    alpha : float
        Skew (>= 0; 0 is uniform, about 1 is classic Zipf).
    seed : int
        >= 0.  Same seed, same gets, whatever ``chunk_size``.
    cpu_ns : int
        CPU ns per get (>= 0).
    stream : int
        Stream id of every event (>= 0).
    shuffle_ranks : bool
        Map ranks to pages by a seeded permutation (default) or identically.
    chunk_size : int
        Events per chunk (>= 1).

    Returns
    -------
    Trace
        Generated lazily over ``Tablespaces.single(n_pages)``.

    See Also
    --------
    zipf_probabilities : the exact per-page probabilities, for analytic models.
    """
    n_gets = check_int("n_gets", n_gets, 0)
    n_pages = check_int("n_pages", n_pages, 1)
    alpha = _check_alpha(alpha)
    seed = _check_seed(seed)
    cpu_ns = check_int("cpu_ns", cpu_ns, 0)
    stream = check_int("stream", stream, 0)
    chunk_size = check_int("chunk_size", chunk_size, 1)
    zipf = _Zipf(n_pages, alpha, seed, bool(shuffle_ranks))

    def gen():
        reader = zipf.stream(n_gets)
        for start in range(0, n_gets, chunk_size):
            yield _chunk(reader.take(min(chunk_size, n_gets - start)), 1, cpu_ns, stream)
    name = f"zipf(n_gets={n_gets}, n_pages={n_pages}, alpha={alpha:g}, seed={seed})"
    t = Trace(gen, Tablespaces.single(n_pages), name)
    # every argument of the generator: a replay of it is served from the result cache
    t.cache_key = ("zipf_trace", n_gets, n_pages, alpha, seed, cpu_ns, stream,
                   bool(shuffle_ranks), chunk_size)
    return t


def uniform_trace(n_gets: int, n_pages: int, *, seed: int, cpu_ns: int = 0, stream: int = 0,
                  chunk_size: int = 1 << 20) -> Trace:
    """Independent reference model with uniform popularity: :func:`zipf_trace` with alpha 0."""
    t = zipf_trace(n_gets, n_pages, 0.0, seed=seed, cpu_ns=cpu_ns, stream=stream,
                   chunk_size=chunk_size)
    t.name = f"uniform(n_gets={n_gets}, n_pages={n_pages}, seed={seed})"
    return t


def scan_trace(n_pages: int, *, first_page: int = 0, gets_per_page: int = 1, repeat: int = 1,
               cpu_ns: int = 0, stream: int = 0, tablespaces: Tablespaces | None = None,
               chunk_size: int = 1 << 20) -> Trace:
    """Sequential scan of pages ``first_page .. first_page + n_pages - 1``, ``repeat`` times.

    Parameters
    ----------
    n_pages : int
        Pages scanned (>= 1).
    first_page : int
        Dense index of the first page (>= 0).
    gets_per_page : int
        Consecutive gets of each page (>= 1): one event with that ``count``
        (a scan reading many rows from each page).
    repeat : int
        Number of passes (>= 0).
    cpu_ns, stream, chunk_size : int
        As in :func:`zipf_trace`.
    tablespaces : Tablespaces, optional
        Default ``Tablespaces.single(first_page + n_pages)``; must hold the pages.

    Returns
    -------
    Trace
    """
    n_pages = check_int("n_pages", n_pages, 1)
    first_page = check_int("first_page", first_page, 0)
    gets_per_page = check_int("gets_per_page", gets_per_page, 1)
    repeat = check_int("repeat", repeat, 0)
    cpu_ns = check_int("cpu_ns", cpu_ns, 0)
    stream = check_int("stream", stream, 0)
    chunk_size = check_int("chunk_size", chunk_size, 1)
    end = first_page + n_pages
    if tablespaces is None:
        tablespaces = Tablespaces.single(end)
    elif end > tablespaces.n_pages:
        raise ValueError(f"first_page + n_pages = {end} is out of range for the tablespaces; "
                         f"allowed: <= {tablespaces.n_pages}")

    def gen():
        for _ in range(repeat):
            for s in range(first_page, end, chunk_size):
                page = np.arange(s, min(s + chunk_size, end), dtype=np.int64)
                yield _chunk(page, gets_per_page, cpu_ns, stream)
    name = f"scan(n_pages={n_pages}, first_page={first_page}, repeat={repeat})"
    t = Trace(gen, tablespaces, name)
    t.cache_key = ("scan_trace", n_pages, first_page, gets_per_page, repeat, cpu_ns, stream,
                   chunk_size)   # the tablespaces count too (bufsim.cache.trace_key)
    return t


def hot_and_scan_trace(n_gets_hot: int, hot_pages: int, alpha: float, scan_pages: int,
                       scan_every: int, *, seed: int, scan_gets_per_page: int = 1,
                       cpu_ns: int = 0, scan_cpu_ns: int | None = None, stream: int = 0,
                       scan_stream: int | None = None, shuffle_ranks: bool = True,
                       chunk_size: int = 1 << 20) -> Trace:
    """A Zipf hot set interrupted by full scans of a separate range of pages.

    The hot gets are exactly those of ``zipf_trace(n_gets_hot, hot_pages,
    alpha, seed=seed)``; after every ``scan_every`` of them (including after the
    last if ``n_gets_hot`` is a multiple) all ``scan_pages`` scan pages are read
    once in order.  This is the classic workload that motivates the midpoint LRU
    and ``innodb_old_blocks_time``: a one-off scan should not flush the hot set.

    Parameters
    ----------
    n_gets_hot : int
        Hot-set gets (>= 0).
    hot_pages : int
        Size of the hot space (>= 1), space id 1 named ``"hot"``, dense
        ``0..hot_pages-1``.
    alpha : float
        Zipf skew of the hot set (>= 0).
    scan_pages : int
        Size of the scanned space (>= 1), space id 2 named ``"scan"``, dense
        ``hot_pages..hot_pages+scan_pages-1``.
    scan_every : int
        Hot gets between scans (>= 1).
    seed : int
    scan_gets_per_page : int
        ``count`` of each scan event (>= 1).
    cpu_ns : int
        CPU ns per hot get; ``scan_cpu_ns`` per scan get (default ``cpu_ns``).
    stream : int
        Stream id of hot events; ``scan_stream`` of scan events (default the same).
    shuffle_ranks, chunk_size
        As in :func:`zipf_trace`.

    Returns
    -------
    Trace
    """
    n_gets_hot = check_int("n_gets_hot", n_gets_hot, 0)
    hot_pages = check_int("hot_pages", hot_pages, 1)
    alpha = _check_alpha(alpha)
    scan_pages = check_int("scan_pages", scan_pages, 1)
    scan_every = check_int("scan_every", scan_every, 1)
    seed = _check_seed(seed)
    scan_gets_per_page = check_int("scan_gets_per_page", scan_gets_per_page, 1)
    cpu_ns = check_int("cpu_ns", cpu_ns, 0)
    scan_cpu_ns = cpu_ns if scan_cpu_ns is None else check_int("scan_cpu_ns", scan_cpu_ns, 0)
    stream = check_int("stream", stream, 0)
    scan_stream = stream if scan_stream is None else check_int("scan_stream", scan_stream, 0)
    chunk_size = check_int("chunk_size", chunk_size, 1)
    ts = Tablespaces([SpaceSpec(1, hot_pages, "hot"), SpaceSpec(2, scan_pages, "scan")])
    zipf = _Zipf(hot_pages, alpha, seed, bool(shuffle_ranks))

    def pieces():
        """(page, count, cpu, stream) arrays in trace order, of at most chunk_size events."""
        reader = zipf.stream(n_gets_hot)
        done = 0
        while done < n_gets_hot:
            seg = min(scan_every, n_gets_hot - done)
            for s in range(0, seg, chunk_size):
                k = min(chunk_size, seg - s)
                yield reader.take(k), 1, cpu_ns, stream
            done += seg
            if seg == scan_every:
                for s in range(0, scan_pages, chunk_size):
                    page = np.arange(hot_pages + s, hot_pages + min(s + chunk_size, scan_pages),
                                     dtype=np.int64)
                    yield page, scan_gets_per_page, scan_cpu_ns, scan_stream

    def gen():
        buf, n = [], 0
        for page, count, cpu, st in pieces():
            buf.append(_chunk(page, count, cpu, st))
            n += len(page)
            if n >= chunk_size:
                c = Chunk.concat(buf)
                yield c.take(slice(0, chunk_size))
                rest = c.take(slice(chunk_size, None))
                buf, n = ([rest], len(rest)) if len(rest) else ([], 0)
        if n:
            yield Chunk.concat(buf)
    name = (f"hot_and_scan(n_gets_hot={n_gets_hot}, hot_pages={hot_pages}, alpha={alpha:g}, "
            f"scan_pages={scan_pages}, scan_every={scan_every}, seed={seed})")
    t = Trace(gen, ts, name)
    t.cache_key = ("hot_and_scan_trace", n_gets_hot, hot_pages, alpha, scan_pages, scan_every,
                   seed, scan_gets_per_page, cpu_ns, scan_cpu_ns, stream, scan_stream,
                   bool(shuffle_ranks), chunk_size)
    return t
