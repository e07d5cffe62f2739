"""The policy registry: names -> modules, and the jitted dispatch the engine calls.

Adding a comparison policy touches only its own module and this file: import it,
add it to ``MODULES`` with the code of :data:`bufsim.policies._state.POLICY_CODES`,
and add a branch to :func:`policy_hit` and :func:`policy_miss`.
"""
from numba import njit

from . import arc, clock, fifo, lru, two_q

#: comparison-policy modules by name; ``'innodb'`` is handled by the engine itself.
MODULES = {"lru": lru, "fifo": fifo, "clock": clock, "two_q": two_q, "arc": arc}


def twin(name: str):
    """The pure-Python twin class of a comparison policy."""
    return getattr(module(name), _TWIN_NAMES[name])


_TWIN_NAMES = {"lru": "LRUTwin", "fifo": "FIFOTwin", "clock": "ClockTwin",
               "two_q": "TwoQTwin", "arc": "ARCTwin"}


def module(name: str):
    """The module of a comparison policy, or None for ``'innodb'``."""
    if name == "innodb":
        return None
    if name not in MODULES:
        raise ValueError(f"policy={name!r} is unknown; allowed: innodb, {', '.join(MODULES)}")
    return MODULES[name]


@njit(_nrt=False, cache=True, inline="always")
def policy_hit(code, pst, ist, i, p):
    if code == 1:
        lru.hit(pst, ist, i, p)
    elif code == 2:
        fifo.hit(pst, ist, i, p)
    elif code == 3:
        clock.hit(pst, ist, i, p)
    elif code == 4:
        two_q.hit(pst, ist, i, p)
    elif code == 5:
        arc.hit(pst, ist, i, p)


@njit(_nrt=False, cache=True, inline="always")
def policy_miss(code, pst, ist, i, p):
    if code == 1:
        return lru.miss(pst, ist, i, p)
    if code == 2:
        return fifo.miss(pst, ist, i, p)
    if code == 3:
        return clock.miss(pst, ist, i, p)
    if code == 4:
        return two_q.miss(pst, ist, i, p)
    if code == 5:
        return arc.miss(pst, ist, i, p)
    return -1
