"""The live tier's one error type, shared by the server, the client and the geometry reader.

It lives in a module of its own, below the three, so that none of them imports another
to raise it (``server -> client -> geometry`` is the only direction of the live tier's
imports).
"""
from __future__ import annotations

__all__ = ["LiveError"]


class LiveError(RuntimeError):
    """A live-server step failed; the message names the step and the cause."""
