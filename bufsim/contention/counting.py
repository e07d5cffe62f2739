"""Page counts for :mod:`bufsim.contention.demand`: gets per page, per instance, per AHI part.

A trace's gets (and its :data:`bufsim.FLAG_AHI` gets) summed per dense page, chunk by
chunk (:func:`page_counts`), or over only the pages it touches (:func:`touched_counts`);
a page-frequency vector's counts checked (:func:`per_page`, :func:`frequency_vectors`);
the instance of each counted page (:func:`page_instances`, :func:`instances_of`), the
sums per instance (:func:`instance_sums`, :func:`per_instance`, or a replay's own
per-instance counters, :func:`per_instance_from_replay`) and the adaptive hash index
latches' acquisitions (:func:`ahi_acquisitions`).  Nothing here knows hold times or
versions: :func:`bufsim.contention.demand.instance_demand` and
:class:`bufsim.contention.demand.PageCounts` turn these counts into demands.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..pages import Tablespaces, as_int64
from ..trace import FLAG_AHI

__all__ = ["page_counts", "touched_counts", "instances_of", "per_page", "frequency_vectors",
           "page_instances", "per_instance", "instance_sums", "per_instance_from_replay",
           "ahi_acquisitions"]


def page_counts(source, n_pages: int) -> tuple[np.ndarray, np.ndarray]:
    """Gets and AHI-flagged gets per dense page, chunk by chunk (O(n_pages) memory)."""
    gets = np.zeros(n_pages, dtype=np.int64)
    ahi = np.zeros(n_pages, dtype=np.int64)
    for chunk in source:
        if not len(chunk):
            continue
        gets += np.bincount(chunk.page, weights=chunk.count, minlength=n_pages).astype(np.int64)
        sel = (chunk.flags & np.uint8(FLAG_AHI)) != 0
        if sel.any():
            ahi += np.bincount(chunk.page[sel], weights=chunk.count[sel],
                               minlength=n_pages).astype(np.int64)
    return gets, ahi


def touched_counts(source) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pages, gets, ahi)``: the distinct dense pages a trace touches and their gets
    and AHI-flagged gets, in memory that follows those pages (not the largest one)."""
    from ..analytic.mrc import PageIds
    ids = PageIds()
    pages = np.zeros(0, dtype=np.int64)
    gets = np.zeros(0, dtype=np.int64)
    ahi = np.zeros(0, dtype=np.int64)
    for chunk in source:
        if not len(chunk):
            continue
        page = np.ascontiguousarray(chunk.page, dtype=np.int64)
        n0 = int(ids.st[0])
        local = ids(page)
        n = int(ids.st[0])
        if n > n0:
            new = local >= n0
            pages = np.concatenate([pages, np.zeros(n - n0, dtype=np.int64)])
            pages[local[new]] = page[new]
            gets = np.concatenate([gets, np.zeros(n - n0, dtype=np.int64)])
            ahi = np.concatenate([ahi, np.zeros(n - n0, dtype=np.int64)])
        gets += np.bincount(local, weights=chunk.count, minlength=n).astype(np.int64)
        sel = (chunk.flags & np.uint8(FLAG_AHI)) != 0
        if sel.any():
            ahi += np.bincount(local[sel], weights=chunk.count[sel], minlength=n).astype(np.int64)
    return pages, gets, ahi


def instances_of(tablespaces: Tablespaces, pages: np.ndarray, n: int) -> np.ndarray:
    """:meth:`bufsim.Tablespaces.instance_of` for some dense pages only."""
    from .._units import instance_fold
    sidx = np.searchsorted(tablespaces.bases, pages, side="right") - 1
    return instance_fold(tablespaces.space_ids[sidx], pages - tablespaces.bases[sidx], n)


def per_page(values, n_pages: int, name: str) -> np.ndarray:
    """``values`` as int64 counts, one >= 0 per dense page (a ValueError names ``name``
    and the first bad row)."""
    a = as_int64(values, name)
    if a.shape != (n_pages,):
        raise ValueError(f"{name} must hold one count per dense page, shape ({n_pages},); "
                         f"got {a.shape}")
    if a.size and a.min() < 0:
        i = int(np.flatnonzero(a < 0)[0])
        raise ValueError(f"{name} row {i} = {int(a[i])} is out of range; allowed: >= 0")
    return a


def frequency_vectors(source, n_pages, ahi_lookups, optimistic):
    """Gets, AHI lookups and optimistic gets per dense page of a frequency vector,
    each within the page's gets."""
    page_gets = per_page(source, n_pages, "source")
    page_ahi = (np.zeros(n_pages, dtype=np.int64) if ahi_lookups is None
                else per_page(ahi_lookups, n_pages, "ahi_lookups"))
    if np.any(page_ahi > page_gets):
        i = int(np.flatnonzero(page_ahi > page_gets)[0])
        raise ValueError(f"ahi_lookups row {i} = {int(page_ahi[i])} is out of range; "
                         f"allowed: 0..{int(page_gets[i])} (the page's gets)")
    page_opt = (np.zeros(n_pages, dtype=np.int64) if optimistic is None
                else per_page(optimistic, n_pages, "optimistic"))
    if np.any(page_opt > page_gets - page_ahi):
        i = int(np.flatnonzero(page_opt > page_gets - page_ahi)[0])
        raise ValueError(f"optimistic row {i} = {int(page_opt[i])} is out of range; "
                         f"allowed: 0..{int(page_gets[i] - page_ahi[i])} (the page's "
                         "gets that are not AHI lookups)")
    return page_gets, page_ahi, page_opt


def page_instances(tablespaces, touched, instance_map, n, n_pages):
    """The instance of every counted page: of the pages a trace touches, of every page
    of the map, or as ``instance_map`` says (checked)."""
    if touched is not None:
        return instances_of(tablespaces, touched, n)
    if instance_map is None:
        return tablespaces.instance_of(n)
    inst = per_page(instance_map, n_pages, "instance_map")
    if inst.size and inst.max() >= n:
        i = int(np.argmax(inst >= n))
        raise ValueError(f"instance_map row {i} = {int(inst[i])} is out of range; "
                         f"allowed: 0..{n - 1}")
    return inst


def per_instance(inst, a, n):
    """Sum of the per-page counts ``a`` per instance."""
    return np.bincount(inst, weights=a, minlength=n).astype(np.int64)


def instance_sums(page_gets, page_ahi, page_opt, inst, n):
    """Gets, AHI lookups and optimistic gets per instance.  Over the pages with gets only
    (AHI lookups and optimistic gets are parts of them): their terms in page order, so
    the same float sums as over every page."""
    got = np.flatnonzero(page_gets)
    inst_got = inst[got]
    return tuple(np.bincount(inst_got, weights=a[got], minlength=n).astype(np.int64)
                 for a in (page_gets, page_ahi, page_opt))


def per_instance_from_replay(replay, n: int) -> tuple[np.ndarray, ...]:
    """Per instance: pages read, made young, first dirtied, written (the last two 0 for
    stats without those columns)."""
    stats = getattr(replay, "stats", replay)
    if not isinstance(stats, pd.DataFrame):
        raise ValueError("replay must be a ReplayResult or its per-instance stats DataFrame; "
                         f"got {type(replay).__name__}")
    for col in ("NUMBER_PAGES_READ", "PAGES_MADE_YOUNG"):
        if col not in stats.columns:
            raise ValueError(f"replay stats lack the column {col!r}")
    if len(stats) != n:
        raise ValueError(f"replay has {len(stats)} instances but n_instances={n}; replay with "
                         f"instances={n}")
    def col(name):
        return stats[name].to_numpy(np.int64) if name in stats.columns else np.zeros(n, np.int64)

    return (stats["NUMBER_PAGES_READ"].to_numpy(np.int64),
            stats["PAGES_MADE_YOUNG"].to_numpy(np.int64),
            col("flush_list_inserts"), col("NUMBER_PAGES_WRITTEN"))


def ahi_acquisitions(parts, page_ahi, tablespaces, touched):
    """The global latches' names (the AHI latch or its parts, then the kernel mutex) and
    the AHI latches' acquisitions."""
    if parts == 1:
        ahi_acq = np.array([page_ahi.sum()], dtype=np.int64)
        names = ("ahi", "kernel")
    else:
        part = (tablespaces.page_group if touched is None else
                tablespaces.group_of(touched)) % parts
        ahi_acq = np.bincount(part, weights=page_ahi, minlength=parts).astype(np.int64)
        names = tuple(f"ahi[{p}]" for p in range(parts)) + ("kernel",)
    return names, ahi_acq
