"""The policy registry: names -> modules, and the jitted dispatch the engine calls.

Adding a comparison policy touches only its own module and this file: import it,
add its name to :data:`bufsim.config.POLICIES` and a row to :data:`TABLE`, and add a
branch to :func:`policy_hit` and :func:`policy_miss`.
"""
from numba import njit

from ..config import POLICIES
from . import arc, clock, fifo, lru, two_q

#: each policy's module by name (None for InnoDB, the engine's own kernel), in the order
#: of :data:`bufsim.config.POLICIES`, the one list of names: a policy's code in the
#: kernels (``cfg[K_POLICY]``) is its place there
TABLE = {"innodb": None, "lru": lru, "fifo": fifo, "clock": clock, "two_q": two_q, "arc": arc}
assert tuple(TABLE) == POLICIES, "bufsim.config.POLICIES and TABLE name the same policies"
#: the codes, a constant each for the jitted dispatch
INNODB, LRU, FIFO, CLOCK, TWO_Q, ARC = range(len(POLICIES))
#: policy name -> code
CODES = {name: code for code, name in enumerate(POLICIES)}
#: comparison-policy modules by name; ``'innodb'`` is handled by the engine itself.
MODULES = {name: mod for name, mod in TABLE.items() if mod is not None}

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
    if code == LRU:
        lru.hit(pst, ist, i, p)
    elif code == FIFO:
        fifo.hit(pst, ist, i, p)
    elif code == CLOCK:
        clock.hit(pst, ist, i, p)
    elif code == TWO_Q:
        two_q.hit(pst, ist, i, p)
    elif code == ARC:
        arc.hit(pst, ist, i, p)


@njit(_nrt=False, cache=True, inline="always")
def policy_miss(code, pst, ist, i, p):
    if code == LRU:
        return lru.miss(pst, ist, i, p)
    if code == FIFO:
        return fifo.miss(pst, ist, i, p)
    if code == CLOCK:
        return clock.miss(pst, ist, i, p)
    if code == TWO_Q:
        return two_q.miss(pst, ist, i, p)
    if code == ARC:
        return arc.miss(pst, ist, i, p)
    return -1
