"""The InnoDB policy's replay kernel, :func:`run` (the contract of
:mod:`bufsim.policies.loop`): the fast loop where it applies, the general one for the
gets it leaves."""
from numba import njit

from .._state import (
    I_SIZE, K_DEV_SCHED, K_DEV_SKIP, K_RA_BTR, K_RA_NEXT_AREA, K_REFILL_DEMAND, K_TEMP_UNLOGGED,
    OLD_MIN_LEN,
)
from ..loop import FALLBACK, ONLY, YIELD
from .general import run_general
from .fast import fast_loop


@njit(_nrt=False, cache=True, nogil=True)
def run(pages, counts, cpus, flags, pst, stat, ist, cnt, sst, glob, cfg, pm,
        exhausted, stop_ns, max_events, budget, room):
    """The InnoDB kernel (the contract of :mod:`bufsim.policies.loop`): the fast loop
    :func:`~bufsim.policies.innodb.fast.fast_loop` where it applies, the general one
    (:func:`~bufsim.policies.innodb.general.run_general`) for the gets it leaves."""
    if sst.shape[0] != 1 or ist.shape[0] != 1 or max_events >= 0 or \
            cfg[K_DEV_SCHED] != 0 or cfg[K_DEV_SKIP] != 0 or cfg[K_REFILL_DEMAND] != 0 \
            or cfg[K_TEMP_UNLOGGED] != 0 or cfg[K_RA_NEXT_AREA] != 0 or cfg[K_RA_BTR] != 0 \
            or ist[ONLY, I_SIZE] <= OLD_MIN_LEN:
        # (the fast loop has neither the on-demand refill, nor unlogged temporary pages,
        # nor MariaDB 10.11's read-ahead sites and middle-page rule: every version with
        # those has the first two)
        return run_general(pages, counts, cpus, flags, pst, stat, ist, cnt, sst, glob,
                           cfg, pm, exhausted, stop_ns, max_events, budget, room)
    left = budget
    while True:
        code, n, want = fast_loop(pages, counts, cpus, flags, pst, stat, ist, cnt, sst,
                                  glob, cfg, pm, exhausted, stop_ns, left, room)
        left -= n
        if code != FALLBACK:
            return code
        # max_events (< 0 here: no limit) rather than the constant -1, which numba would
        # type as Literal[int](-1) and compile the general kernel a second time for
        code = run_general(pages, counts, cpus, flags, pst, stat, ist, cnt, sst, glob,
                           cfg, pm, exhausted, stop_ns, max_events, want, room)
        left -= want
        if code != YIELD:
            return code
        if left <= 0:
            return YIELD
