"""A dask.distributed scheduler address, checked before any work is sent to it.

``distributed.Client`` waits for its whole connect timeout on a port where a silent
service listens, reads a length of 2.8 EiB from one that speaks first in another
protocol (MemoryError), and retries a refused port for its whole timeout.
:func:`check_scheduler` connects once with a deadline and reads the handshake a
dask scheduler sends on every new connection (distributed's TCP framing: an 8-byte
little-endian length, then the frame count, the frame lengths and msgpack frames,
decoding to a dict with ``compression`` and ``python``).  Anything else is a clear
error naming the address, within the timeout.
"""
from __future__ import annotations

import socket
import struct
import time

__all__ = ["DEFAULT_TIMEOUT_S", "parse_address", "check_scheduler", "connect"]

#: Seconds allowed by default to connect to a scheduler and read its handshake.
DEFAULT_TIMEOUT_S = 10.0
#: A handshake is a few hundred bytes; more than this is not a dask scheduler.
_MAX_HANDSHAKE = 1 << 16


class SchedulerError(ValueError):
    """The address is not a dask scheduler that answers in time."""


def parse_address(spec: str) -> tuple[str, int]:
    """``(host, port)`` of ``dask://HOST:PORT`` (also ``tcp://HOST:PORT`` or
    ``HOST:PORT``; an IPv6 host in brackets).

    Raises
    ------
    SchedulerError
        Naming the address, for a missing host or a port outside 1..65535.
    """
    rest = spec
    for prefix in ("dask://", "tcp://"):
        if rest.startswith(prefix):
            rest = rest[len(prefix):]
            break
    rest = rest.rstrip("/")
    if rest.startswith("["):
        host, _, tail = rest[1:].partition("]")
        port = tail[1:] if tail.startswith(":") else ""
    else:
        host, _, port = rest.rpartition(":")
    if not host or not port:
        raise SchedulerError(f"{spec!r} must be dask://HOST:PORT (e.g. dask://10.0.0.5:8786)")
    try:
        p = int(port)
    except ValueError:
        raise SchedulerError(f"{spec!r}: port {port!r} is not a number") from None
    if not 1 <= p <= 65535:
        raise SchedulerError(f"{spec!r}: port {p} is out of range; allowed: 1..65535")
    return host, p


def _recv_exact(sock: socket.socket, n: int, deadline: float) -> bytes:
    parts, got = [], 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout()
        sock.settimeout(left)
        b = sock.recv(min(n - got, 1 << 16))
        if not b:
            raise ConnectionResetError("closed the connection")
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def check_scheduler(spec: str, timeout: float = DEFAULT_TIMEOUT_S) -> str:
    """Check that a dask scheduler answers at ``spec`` within ``timeout`` seconds.

    Parameters
    ----------
    spec : str
        ``dask://HOST:PORT``.
    timeout : float
        Seconds for the connection and the scheduler's handshake together (> 0).

    Returns
    -------
    str
        The scheduler's address for ``distributed.Client`` (``tcp://HOST:PORT``).

    Raises
    ------
    SchedulerError
        (a ValueError) naming the address: it cannot be resolved, the connection is
        refused, nothing answers within ``timeout`` seconds, or what answers is not a
        dask scheduler.
    """
    if not timeout > 0:
        raise SchedulerError(f"timeout must be > 0 seconds, got {timeout!r}")
    host, port = parse_address(spec)
    where = f"dask://{host}:{port}" if ":" not in host else f"dask://[{host}]:{port}"
    deadline = time.monotonic() + timeout
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except socket.gaierror as e:
        raise SchedulerError(f"{where}: cannot resolve host {host!r} ({e.strerror})") from None
    except ConnectionRefusedError:
        raise SchedulerError(f"{where}: connection refused (no scheduler listens on port "
                             f"{port})") from None
    except (socket.timeout, TimeoutError):
        raise SchedulerError(f"{where}: no connection within {timeout:g} s") from None
    except OSError as e:
        raise SchedulerError(f"{where}: cannot connect: {e.strerror or e}") from None
    try:
        with sock:
            head = _recv_exact(sock, 8, deadline)
            (n,) = struct.unpack("<Q", head)
            if not 16 <= n <= _MAX_HANDSHAKE:
                raise SchedulerError(f"{where}: the service there is not a dask scheduler (its "
                                     f"first bytes {head!r} are not a dask handshake)")
            body = _recv_exact(sock, n, deadline)
    except SchedulerError:
        raise
    except (socket.timeout, TimeoutError):
        raise SchedulerError(f"{where}: connected, but no dask handshake within {timeout:g} s "
                             "(is this the scheduler's port? it is 8786 by default)") from None
    except OSError as e:
        raise SchedulerError(f"{where}: the service there closed the connection before a dask "
                             f"handshake ({e.strerror or e}); it is not a dask scheduler") from None
    if not _is_handshake(body):
        raise SchedulerError(f"{where}: the service there is not a dask scheduler (its answer "
                             "is not a dask handshake)")
    return f"tcp://{host}:{port}" if ":" not in host else f"tcp://[{host}]:{port}"


def _is_handshake(body: bytes) -> bool:
    """``body`` is distributed's frames of a dict holding ``compression`` and ``python``."""
    try:
        (k,) = struct.unpack_from("<Q", body)
        if not 1 <= k <= 64 or len(body) < 8 * (1 + k):
            return False
        lengths = struct.unpack_from(f"<{k}Q", body, 8)
        if 8 * (1 + k) + sum(lengths) != len(body):
            return False
        import msgpack   # distributed's own serialisation of the message (its first frame)
        start = 8 * (1 + k)
        msg = msgpack.unpackb(body[start:start + lengths[0]], raw=False, strict_map_key=False)
    except Exception:
        return False
    return isinstance(msg, dict) and "compression" in msg and "python" in msg


def connect(spec: str, timeout: float = DEFAULT_TIMEOUT_S):
    """A ``distributed.Client`` of the scheduler at ``spec``, after
    :func:`check_scheduler` (same timeout)."""
    address = check_scheduler(spec, timeout)
    from distributed import Client
    return Client(address, timeout=timeout)
