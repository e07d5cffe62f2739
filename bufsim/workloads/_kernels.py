"""The workload generators' compiled loops, kept apart from the plans and schemas.

The Numba cache folder is named after a hash of every package source that mentions numba
(``bufsim/_numba_cache.py``), so a plan or schema edited while these loops live in its
module would make every kernel compile again; here, only an edit of these loops does.
"""
import numpy as np
from numba import njit


@njit(cache=True)
def probe_join(keys, alive, mask, masked, e):
    """One join of :meth:`bufsim.workloads.ssb.SSB.probes` in one pass over the lineorder
    rows: ``e[r]`` is the key row r probes, or -1 if r is not alive (filtered out by an
    earlier predicate) or its key repeats the previous alive row's (``eq_ref`` keeps the
    last row it read); then (``masked``) the rows whose dimension row fails the predicate
    leave ``alive``."""
    prev = -1
    for r in range(keys.shape[0]):
        if alive[r]:
            k = np.int64(keys[r])
            e[r] = k if k != prev else -1
            prev = k
            if masked and not mask[k]:
                alive[r] = False
        else:
            e[r] = -1


@njit(cache=True)
def kept_runs(pg, rw, fl):
    """The runs of :func:`bufsim.workloads.plans.emit_chunk` over the entries of ``pg`` that
    are >= 0, in row-major order (the others dropped first): consecutive gets of a page
    with equal flags are one run.  Returns each run's page, get count, rows and flags."""
    pgf, rwf, flf = pg.ravel(), rw.ravel(), fl.ravel()
    n = pgf.size
    page = np.empty(n, dtype=np.int64)
    count = np.empty(n, dtype=np.int64)
    rows = np.empty(n, dtype=np.int64)
    flags = np.empty(n, dtype=np.uint8)
    m = -1
    for i in range(n):
        p = pgf[i]
        if p < 0:
            continue
        f = flf[i]
        if m >= 0 and p == page[m] and f == flags[m]:
            count[m] += 1
            rows[m] += rwf[i]
        else:
            m += 1
            page[m] = p
            count[m] = 1
            rows[m] = rwf[i]
            flags[m] = f
    m += 1
    return page[:m].copy(), count[:m].copy(), rows[:m].copy(), flags[:m].copy()
