"""Refuse a pool whose state cannot fit in memory, before anything is allocated.

A replay's state is frame-major (:class:`bufsim._pool_state.PoolState`): every frame of the
pool costs the bytes of one entry of each per-frame array, allocated up front, so a
valid but huge ``pool_pages`` (the range reaches 2**40 pages, 16 PiB) would be
killed by the kernel's OOM killer or fail deep inside NumPy.  :func:`check_pool_memory`
compares what the pool needs with what the process may still take: the smaller of
``MemAvailable`` (``/proc/meminfo``) and the address-space limit ``RLIMIT_AS`` less
the address space in use (``VmSize`` of ``/proc/self/status``).  Where neither can be
read (no ``/proc``), nothing is refused.
"""
from __future__ import annotations

import resource

import numpy as np

from ._units import PAGE_SIZE

__all__ = ["PoolMemoryError", "memory_available", "pool_state_bytes", "check_pool_memory"]


class PoolMemoryError(ValueError):
    """A pool whose engine state needs more memory than the process can take."""


def _proc_kib(path: str, key: str) -> int | None:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _fmt(nbytes: float) -> str:
    for unit, k in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= k:
            return f"{nbytes / k:,.1f} {unit}"
    return f"{int(nbytes)} bytes"


def memory_available() -> tuple[int | None, str]:
    """Bytes this process may still allocate, and how that figure was found.

    The smaller of ``MemAvailable`` and ``RLIMIT_AS`` (soft limit) less ``VmSize``;
    ``(None, ...)`` when neither is known."""
    parts = []
    avail = None
    mem = _proc_kib("/proc/meminfo", "MemAvailable")
    if mem is not None:
        avail = mem
        parts.append(f"MemAvailable {_fmt(mem)}")
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        used = _proc_kib("/proc/self/status", "VmSize") or 0
        left = max(int(soft) - used, 0)
        parts.append(f"address-space limit RLIMIT_AS {_fmt(soft)} with {_fmt(used)} of it "
                     "in use")
        avail = left if avail is None else min(avail, left)
    return avail, "; ".join(parts)


def pool_state_bytes(frames: int, frame_dtypes, page_map_bytes: int = 0) -> tuple[int, int]:
    """``(total bytes, bytes per frame)`` of a pool state of ``frames`` frames: one entry
    of each per-frame array plus the free-frame stack's int32, and the page map."""
    per = sum(np.dtype(t).itemsize for t in frame_dtypes) + np.dtype(np.int32).itemsize
    return frames * per + page_map_bytes, per


def check_pool_memory(config, frames: int, frame_dtypes, page_map_bytes: int = 0) -> int:
    """Raise :class:`PoolMemoryError` if a pool of ``frames`` frames (``config``'s) needs
    more memory than :func:`memory_available`; returns the bytes it needs."""
    need, per = pool_state_bytes(frames, frame_dtypes, page_map_bytes)
    avail, how = memory_available()
    if avail is not None and need > avail:
        fit = max((avail - page_map_bytes) // per, 0) * config.pool_pages // frames
        pm = f" + {_fmt(page_map_bytes)} of page map" if page_map_bytes else ""
        raise PoolMemoryError(
            f"pool_pages={config.pool_pages:,} ({_fmt(config.pool_pages * PAGE_SIZE)} of "
            f"pages) would need {_fmt(need)} of memory for its state ({frames:,} frames x "
            f"{per} bytes{pm}), more than the {_fmt(avail)} available ({how}); allowed "
            f"here: pool_pages up to about {fit:,}")
    return need
