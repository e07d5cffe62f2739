"""The policy registry: names -> modules, and the jitted dispatch the engine calls.

Adding a comparison policy touches only its own module and this file: import it,
add it to ``MODULES`` with the code of :data:`bufsim.policies._state.POLICY_CODES`,
and add a branch to :func:`policy_hit` and :func:`policy_miss`.
"""
from numba import njit

from . import lru

#: comparison-policy modules by name; ``'innodb'`` is handled by the engine itself.
MODULES = {"lru": lru}


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


@njit(cache=True, inline="always")
def policy_hit(code, pst, ist, i, p):
    if code == 1:
        lru.hit(pst, ist, i, p)


@njit(cache=True, inline="always")
def policy_miss(code, pst, ist, i, p):
    if code == 1:
        return lru.miss(pst, ist, i, p)
    return -1
