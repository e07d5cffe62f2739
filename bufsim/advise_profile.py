"""Per-stream profile of a trace, for :func:`bufsim.advise.advise`: which thread bears latency.

One pass over the chunks computes, for every stream (thread) of a trace:

``gets``, ``events``, ``visits``, ``pages``
    Page gets, events (runs of gets of one page), visits (runs of the stream's
    events on one page: other threads' events in between split a run of rows into
    several events) and distinct pages touched.
``sequential``
    Fraction of the stream's visits whose page is the page after the stream's
    previous visit's page (dense index + 1): a scan walking a table leaf by leaf.
``one_touch``
    Fraction of the stream's gets that fall on pages it visits once (a page read
    once by a scan, all its rows in one visit).
``rereference``
    Fraction of its visits that return to a page it visited before.
``reuse_p50``, ``reuse_p90``
    Median and 90th percentile of the LRU stack distance (distinct pages of *this
    stream* touched in between) of its re-references, in pages: the pool a
    stream would need alone to hit on half (nine tenths) of its returns.  The
    rest of a visit (distance 1) is not a re-reference.
``lru``
    The stream's own exact LRU stack-distance counter (SHARDS-sampled with
    ``shards``), for choosing where the InnoDB replays go.

:func:`classify` adds the replay's read-ahead share (pages read ahead because of
the stream's gets over all pages read for it) and says, with its reason, whether
a stream is *latency-bound* (point and short range lookups that wait for every
miss) or *scan/batch* (reads pages once or in order; read-ahead serves it and a
larger pool buys it little until the whole table fits).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["stream_profile", "classify", "SCAN_THRESHOLD"]

#: A stream is scan/batch when its sequential fraction, its one-touch fraction or its
#: read-ahead share reaches this.
SCAN_THRESHOLD = 0.5


def _quantile(hist: np.ndarray, q: float) -> int:
    """Smallest distance d with at least a fraction q of the mass at <= d (hist[d])."""
    tot = hist.sum()
    if tot <= 0:
        return 0
    return int(np.searchsorted(np.cumsum(hist), q * tot))


def stream_profile(trace, *, shards: float | None = None, seed: int = 0,
                   progress: bool = False) -> tuple[pd.DataFrame, dict]:
    """The per-stream profile of a trace (module docstring) and each stream's LRU counter.

    Returns
    -------
    (DataFrame, dict)
        One row per stream id (ascending): ``stream`` (id), ``name``, ``gets``,
        ``events``, ``visits``, ``pages``, ``sequential``, ``one_touch``, ``rereference``,
        ``reuse_p50``, ``reuse_p90``; and ``{stream id: counter}``.
    """
    from .analytic.mrc import PageIds, ShardsCounter, StackDistanceCounter, infer_n_pages
    n = infer_n_pages(trace, None)  # None for a large page map: pages renumbered
    ids = PageIds()   # dense ids of the pages touched: memory follows them, not the largest
    names = trace.stream_names
    acc: dict[int, dict] = {}
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(desc="profile", unit="chunk")
    for c in trace:
        if not len(c):
            continue
        for s in np.unique(c.stream):
            s = int(s)
            m = c.stream == s
            p = c.page[m]
            k = c.count[m]
            a = acc.get(s)
            if a is None:
                # touches per page saturate at 2: 0 never, 1 once, 2 more than once
                a = acc[s] = dict(gets=0, events=0, visits=0, seq=0, last=-2,
                                  touch=np.zeros(0, dtype=np.uint8), once=0,
                                  lru=StackDistanceCounter() if shards is None else
                                  ShardsCounter(n, rate=shards, seed=seed),
                                  runs=0)
            a["gets"] += int(k.sum())
            a["events"] += len(p)
            prev = np.concatenate(([a["last"]], p[:-1]))
            # a visit: a run of the stream's events on one page (another thread's events
            # in between split a run of rows into several events)
            new = p != prev
            a["visits"] += int(new.sum())
            a["seq"] += int((p[new] == prev[new] + 1).sum())
            a["last"] = int(p[-1])
            dense = ids(p[new])
            t = a["touch"] = _grown(a["touch"], int(ids.st[0]))
            # pages visited once within this chunk and never before stay at 1
            uniq, cnt = np.unique(dense, return_counts=True)
            t[uniq] = np.minimum(t[uniq].astype(np.int64) + cnt, 2).astype(np.uint8)
            # gets at LRU distance 1 that are not re-references: the rest of a run
            a["runs"] += int((k - 1).sum()) + int((~new).sum())
            a["lru"].update(p, k)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    for c in trace:  # second pass: gets on pages the stream touched in one event only
        if not len(c):
            continue
        for s in np.unique(c.stream):
            a = acc[int(s)]
            m = c.stream == s
            t = a["touch"] = _grown(a["touch"], int(ids.st[0]))
            a["once"] += int(c.count[m][t[ids(c.page[m])] == 1].sum())
    rows, counters = [], {}
    for s in sorted(acc):
        a = acc[s]
        t = a["touch"]
        one_touch = a["once"] / a["gets"] if a["gets"] else 0.0
        distinct = int((t > 0).sum())
        lru = a["lru"]
        hist = lru.histogram.astype(np.int64) if shards is None else None
        if hist is not None:
            hist[1] -= a["runs"]          # run-length repeats are not re-references
            rh = hist.copy()
            rh[0] = 0
            p50, p90 = _quantile(rh, 0.5), _quantile(rh, 0.9)
        else:
            p50 = p90 = -1
        ev, vis = a["events"], a["visits"]
        rows.append({"stream": s, "name": names[s] if names and s < len(names) else str(s),
                     "gets": a["gets"], "events": ev, "visits": vis, "pages": distinct,
                     "sequential": a["seq"] / vis if vis else 0.0,
                     "one_touch": one_touch,
                     "rereference": (vis - distinct) / vis if vis else 0.0,
                     "reuse_p50": p50, "reuse_p90": p90})
        counters[s] = lru
        a.clear()
    return pd.DataFrame(rows), counters


def classify(profile: pd.DataFrame, read_ahead_share: dict | None = None) -> pd.DataFrame:
    """Add ``read_ahead_share``, ``kind`` (``'latency-bound'`` or ``'scan/batch'``) and
    ``why`` (the figures the verdict rests on) to a :func:`stream_profile` frame.

    ``read_ahead_share`` maps a stream's name to the pages read ahead because of its
    gets over all pages read for it (read-ahead plus synchronous reads) in a replay at
    a small pool; missing streams get 0.
    """
    out = profile.copy()
    ras = read_ahead_share or {}
    out["read_ahead_share"] = [float(ras.get(n, 0.0)) for n in out["name"]]
    kinds, whys = [], []
    thr = SCAN_THRESHOLD
    for r in out.itertuples(index=False):
        figs = (f"{r.sequential:.0%} of its visits go to the next page, {r.one_touch:.0%} of "
                f"its gets fall on pages it touches once, read-ahead brings "
                f"{r.read_ahead_share:.0%} of the pages read for it")
        reuse = (f"; its re-references come back after {r.reuse_p50:,} distinct pages "
                 f"(median; 90%: {r.reuse_p90:,})" if r.reuse_p50 >= 0 else "")
        if r.sequential >= thr or r.one_touch >= thr or r.read_ahead_share >= thr:
            main = ("walks pages in order" if r.sequential >= thr else
                    "reads most pages once" if r.one_touch >= thr else
                    "is served by read-ahead")
            kinds.append("scan/batch")
            whys.append(f"scan/batch: it {main} ({figs}{reuse}); a larger pool buys it little "
                        "until its whole table fits")
        else:
            kinds.append("latency-bound")
            whys.append(f"latency-bound (point/range lookups): {r.rereference:.0%} of its "
                        f"visits return to pages it visited ({figs}{reuse}); every "
                        "synchronous read is a wait")
    out["kind"] = kinds
    out["why"] = whys
    return out


def _grown(a: np.ndarray, n: int) -> np.ndarray:
    """``a`` zero-extended to at least ``n`` entries (doubling, so amortised O(1))."""
    if a.shape[0] >= n:
        return a
    out = np.zeros(max(n, 2 * a.shape[0], 1024), dtype=a.dtype)
    out[:a.shape[0]] = a
    return out
