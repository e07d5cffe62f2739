"""A result cache on disk: replays are pure functions of what they read.

A replay's result depends on the trace's events, the configuration, the replay's own
arguments and bufsim's source, and on nothing else (every random draw takes a seed).
:func:`cached` stores a result under the SHA-256 of all of them, so a rerun of a
notebook with one parameter changed replays only the configurations that changed, and
an edit to any ``.py`` file of the package makes every earlier entry unreachable (the
key holds :func:`package_hash`, a hash of all of them).

Entries are pickles under ``build/cache/`` of the checkout (``$BUFSIM_CACHE_DIR``
overrides), ``build/cache/<2 hex>/<64 hex>.pkl``, written to a temporary name and moved
into place. The folder is bounded: after a write, the least recently used entries (by
modification time, refreshed on every hit) go until it holds at most
``$BUFSIM_CACHE_BYTES`` bytes (default 2 GiB). ``$BUFSIM_NO_CACHE=1`` (``bufsim
notebooks run --no-cache``, ``make reproduce NO_CACHE=1``) turns it off: nothing is
read or written; ``make clean`` removes the folder.  ``$BUFSIM_CACHE_LOG=FILE`` appends a
line per hit, miss and store (event, namespace, process id) to ``FILE``: a batch run's hit
rates per namespace and notebook kernel.

Keys are built by :func:`digest` from plain values: numbers, strings, bytes, None,
NumPy arrays (dtype, shape and bytes), ranges, tuples, lists, dicts, dataclasses and
objects with ``__slots__`` (their fields, by name), each tagged with its type, so that
``1``, ``1.0``, ``"1"`` and ``np.int32(1)`` differ. A value it cannot encode raises
:class:`Uncacheable`; the callers then compute without the cache.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import os
import pickle
import tempfile
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

__all__ = ["OFF_ENV_VAR", "DIR_ENV_VAR", "BYTES_ENV_VAR", "LOG_ENV_VAR", "DEFAULT_BYTES",
           "Uncacheable", "cached", "cache_dir", "clear", "digest", "enabled", "package_hash", "stats"]

OFF_ENV_VAR = "BUFSIM_NO_CACHE"
DIR_ENV_VAR = "BUFSIM_CACHE_DIR"
#: a file to which every load (hit or miss) and store appends a line ``event namespace
#: pid`` (tab-separated): the hit rates of a batch run, per namespace and notebook kernel
LOG_ENV_VAR = "BUFSIM_CACHE_LOG"
BYTES_ENV_VAR = "BUFSIM_CACHE_BYTES"
DEFAULT_BYTES = 2 * 2**30

_PACKAGE = Path(__file__).resolve().parent
T = TypeVar("T")

#: this process's hits and misses (for tests and for a notebook's own report)
_stats = {"hits": 0, "misses": 0, "stores": 0}


class Uncacheable(TypeError):
    """A value :func:`digest` cannot encode (its result is computed, not cached)."""


def enabled() -> bool:
    """False when ``$BUFSIM_NO_CACHE`` is set to anything but ``""`` or ``"0"``."""
    return os.environ.get(OFF_ENV_VAR, "") in ("", "0")


def cache_dir() -> Path:
    """``$BUFSIM_CACHE_DIR``, else ``ROOT/build/cache`` of the checkout (not created)."""
    override = os.environ.get(DIR_ENV_VAR, "")
    if override:
        return Path(override).expanduser().resolve()
    from bufsim import paths
    return paths.repo_root() / "build" / "cache"


def max_bytes() -> int:
    """The folder's bound, ``$BUFSIM_CACHE_BYTES`` (an integer >= 0) or 2 GiB."""
    text = os.environ.get(BYTES_ENV_VAR, "")
    if not text:
        return DEFAULT_BYTES
    try:
        v = int(text)
    except ValueError:
        raise ValueError(f"{BYTES_ENV_VAR}={text!r} is not an integer; allowed: "
                         "a number of bytes >= 0") from None
    if v < 0:
        raise ValueError(f"{BYTES_ENV_VAR}={v} is negative; allowed: a number of bytes >= 0")
    return v


@lru_cache(maxsize=8)
def package_hash(package: Path = _PACKAGE) -> str:
    """SHA-256 (hex) of every ``.py`` file of the package, with its relative path, in
    sorted order (computed once per process: an edit needs a new process to count)."""
    h = hashlib.sha256()
    for f in sorted(package.rglob("*.py"), key=lambda p: p.relative_to(package).as_posix()):
        h.update(f.relative_to(package).as_posix().encode() + b"\0")
        h.update(f.read_bytes() + b"\0")
    return h.hexdigest()


# --------------------------------------------------------------------------------------
# keys
# --------------------------------------------------------------------------------------
def _feed(h, v: Any) -> None:
    """Feed ``v`` to the hash ``h``, tagged with its type (see the module docstring)."""
    if v is None or isinstance(v, (bool, str, bytes)):
        h.update(f"{type(v).__name__}:{len(v) if isinstance(v, (str, bytes)) else ''}:".encode())
        h.update(v if isinstance(v, bytes) else (v.encode() if isinstance(v, str) else
                                                  repr(v).encode()))
    elif isinstance(v, enum.Enum):
        h.update(f"enum:{type(v).__qualname__}:".encode())
        _feed(h, v.value)
    elif isinstance(v, (int, float, np.integer, np.floating)):
        h.update(f"{type(v).__name__}:{v!r};".encode())
    elif isinstance(v, np.ndarray):
        if v.dtype.hasobject:
            raise Uncacheable("an object array cannot be hashed by content")
        a = np.ascontiguousarray(v)
        h.update(f"ndarray:{a.dtype.str}:{a.shape}:".encode())
        h.update(memoryview(a).cast("B"))
    elif isinstance(v, range):
        h.update(f"range:{v.start}:{v.stop}:{v.step};".encode())
    elif isinstance(v, (tuple, list)):
        h.update(f"{type(v).__name__}:{len(v)}[".encode())
        for x in v:
            _feed(h, x)
        h.update(b"]")
    elif isinstance(v, dict):
        h.update(f"dict:{len(v)}{{".encode())
        for k in sorted(v, key=repr):
            _feed(h, k)
            _feed(h, v[k])
        h.update(b"}")
    elif dataclasses.is_dataclass(v) and not isinstance(v, type):
        h.update(f"dc:{type(v).__module__}.{type(v).__qualname__}(".encode())
        for f in dataclasses.fields(v):
            _feed(h, f.name)
            _feed(h, getattr(v, f.name))
        h.update(b")")
    elif hasattr(type(v), "__slots__") and not isinstance(v, type):
        h.update(f"slots:{type(v).__module__}.{type(v).__qualname__}(".encode())
        names = [n for c in type(v).__mro__ for n in getattr(c, "__slots__", ())]
        for n in sorted(set(names)):
            if "cache" in n or not hasattr(v, n):   # memos of derived values
                continue
            _feed(h, n)
            _feed(h, getattr(v, n))
        h.update(b")")
    else:
        raise Uncacheable(f"cannot key a cache entry on a {type(v).__name__}")


class Key:
    """An incremental key: ``Key("replay").add(config).add_chunks(chunks).hexdigest()``.
    Every key starts with :func:`package_hash` and a namespace."""

    def __init__(self, namespace: str):
        self.namespace = namespace
        self._h = hashlib.sha256()
        _feed(self._h, package_hash())
        _feed(self._h, namespace)

    def add(self, *values: Any) -> Key:
        for v in values:
            _feed(self._h, v)
        return self

    def hexdigest(self) -> str:
        h = self._h.copy().hexdigest()
        if os.environ.get(LOG_ENV_VAR):
            _namespace_of[h] = self.namespace
        return h


def digest(namespace: str, *values: Any) -> str:
    """The key of ``values`` under ``namespace`` (64 hex digits); raises Uncacheable."""
    return Key(namespace).add(*values).hexdigest()


# --------------------------------------------------------------------------------------
# the store
# --------------------------------------------------------------------------------------
def _entry(key: str) -> Path:
    if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        raise ValueError(f"key must be 64 lowercase hex digits, got {key!r}")
    return cache_dir() / key[:2] / f"{key}.pkl"


MISSING = object()
#: key -> namespace of the keys made in this process while ``$BUFSIM_CACHE_LOG`` is set
_namespace_of: dict = {}


def _log(event: str, key: str) -> None:
    """Append ``event`` for ``key`` to ``$BUFSIM_CACHE_LOG`` when it is set."""
    path = os.environ.get(LOG_ENV_VAR)
    if path:
        with open(path, "a") as fh:
            fh.write(f"{event}\t{_namespace_of.get(key, '?')}\t{os.getpid()}\n")


def load(key: str) -> Any:
    """The entry stored under ``key``, or the module's ``MISSING`` marker; a hit
    refreshes the entry's time (it is used: pruned last)."""
    path = _entry(key)
    try:
        with open(path, "rb") as fh:
            value = pickle.load(fh)
    except FileNotFoundError:
        _stats["misses"] += 1
        _log("miss", key)
        return MISSING
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError):
        path.unlink(missing_ok=True)        # unreadable: treated as absent
        _stats["misses"] += 1
        _log("miss", key)
        return MISSING
    try:
        os.utime(path)
    except OSError:
        pass
    _stats["hits"] += 1
    _log("hit", key)
    return value


def store(key: str, value: Any) -> Path:
    """Write ``value`` under ``key`` (temporary name, then :func:`os.replace`), then
    prune the folder to :func:`max_bytes`."""
    path = _entry(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".pkl", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _stats["stores"] += 1
    _log("store", key)
    _bound_after_store(path)
    return path


#: a full scan of the folder (:func:`prune`) after at most this many stores: between two
#: scans a process adds the sizes it writes to the total the last scan found, and scans
#: again as soon as that passes :func:`max_bytes` (a scan per store cost O(entries): 4.6 s
#: of 11.8 s of a live-grid process's CPU, quadratic in a notebook's ~1,600 stores)
SCAN_EVERY = 256
_known = {"root": None, "bytes": 0, "stores": 0}


def _bound_after_store(path: Path) -> None:
    """Keep the folder within :func:`max_bytes` after a store without listing it each
    time: prune at the first store, when the estimated total would pass the bound, when
    the folder changed, and at least every :data:`SCAN_EVERY` stores (entries written by
    other processes are counted at the next scan)."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    k = _known
    if (k["root"] != str(cache_dir()) or k["stores"] + 1 >= SCAN_EVERY
            or k["bytes"] + size > max_bytes()):
        prune()
    else:
        k["bytes"] += size
        k["stores"] += 1


def _entries() -> list[tuple[float, int, Path]]:
    out = []
    root = cache_dir()
    if not root.is_dir():
        return out
    for p in root.glob("*/*.pkl"):
        try:
            st = p.stat()
        except OSError:
            continue
        out.append((st.st_mtime, st.st_size, p))
    return out


def prune(limit: int | None = None) -> int:
    """Remove the least recently used entries until the folder holds at most ``limit``
    bytes (default :func:`max_bytes`); the number of entries removed."""
    limit = max_bytes() if limit is None else limit
    entries = _entries()
    total = sum(s for _, s, _ in entries)
    removed = 0
    for _, size, p in sorted(entries, key=lambda e: e[0]):
        if total <= limit:
            break
        p.unlink(missing_ok=True)
        total -= size
        removed += 1
    _known.update(root=str(cache_dir()), bytes=total, stores=0)
    return removed


def clear() -> int:
    """Remove every entry; the number removed."""
    entries = _entries()
    for _, _, p in entries:
        p.unlink(missing_ok=True)
    return len(entries)


def stats() -> dict:
    """This process's ``hits``, ``misses`` and ``stores`` so far."""
    return dict(_stats)


def cached(key: Callable[[], str] | str, compute: Callable[[], T]) -> T:
    """``compute()``'s result, served from the cache when an entry for ``key`` exists.

    ``key`` is a key of :func:`digest` or a function returning one (called only when the
    cache is on); a key that raises :class:`Uncacheable` means compute, uncached.
    """
    if not enabled():
        return compute()
    try:
        k = key() if callable(key) else key
    except Uncacheable:
        return compute()
    value = load(k)
    if value is not MISSING:
        return value
    value = compute()
    store(k, value)
    return value


def trace_key(key: Key, trace) -> Key:
    """Add one :class:`bufsim.Trace` to ``key``: its tablespaces, stream names and
    starts, and its events chunk by chunk when it is held in memory; a generated trace
    counts only when it carries ``cache_key``, the parameters that fully determine its
    generator (set by the workload that made it), else it raises :class:`Uncacheable`
    (hashing it would mean generating it once more)."""
    key.add("trace", trace.tablespaces, trace.stream_names, trace.stream_start_ns)
    if trace.is_materialized:
        for c in trace:
            key.add(c.page, c.count, c.cpu_ns, c.stream, c.flags)
        return key.add(len(trace._chunks))
    params = getattr(trace, "cache_key", None)
    if params is None:
        raise Uncacheable("a generated trace without cache_key")
    return key.add("generated", params)


def replay_key(sources, starts, names, config, sample_every_ns,
               old_blocks_time_ms_at) -> str | None:
    """The key of an :func:`bufsim.replay` call (its streams after splitting, their
    start times and names, the effective configuration, the sampling interval and the
    old_blocks_time switches), or None when the cache is off or a stream cannot be keyed."""
    if not enabled():
        return None
    try:
        key = Key("replay").add(config, [int(s) for s in starts], list(names), sample_every_ns,
                                [tuple(int(x) for x in e) for e in (old_blocks_time_ms_at or ())])
        for t in sources:
            trace_key(key, t)
        return key.hexdigest()
    except (Uncacheable, TypeError, ValueError):
        return None
