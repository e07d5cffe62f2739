"""How many cores one call of bufsim spreads its own work over by default.

A call that replays independent pools or runs in threads or processes (``run_ssb``'s pools,
the contention notebooks' DES runs, ``bufsim sweep``'s points) takes :func:`default_jobs`
workers when the caller names none.  That is every core of the machine, unless
``BUFSIM_JOBS`` says otherwise: ``bufsim notebooks run`` (``make reproduce``) sets it in
each kernel it starts to that kernel's share of the cores, because there the notebooks
themselves already keep every core busy and a notebook's own threads only add CPU
(notebook 01's ``run_ssb``, 5 pools x 13 queries at SF1 on a loaded 2-core machine: 7-14 %
more CPU with 2 threads than with 1, for 6-8 % less wall).
"""
from __future__ import annotations

import os

__all__ = ["JOBS_ENV", "default_jobs"]

#: the environment variable that caps :func:`default_jobs`
JOBS_ENV = "BUFSIM_JOBS"


def default_jobs() -> int:
    """Workers a call takes when its ``jobs`` is None: ``BUFSIM_JOBS`` if set (an
    integer >= 1), else ``os.cpu_count()`` (1 where that is unknown).

    Raises
    ------
    ValueError
        ``BUFSIM_JOBS`` is set to anything but an integer >= 1 (named, with its value).
    """
    raw = os.environ.get(JOBS_ENV)
    if raw is None or raw == "":
        return os.cpu_count() or 1
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{JOBS_ENV} must be an integer >= 1 (workers per call), got {raw!r}")
    return n
