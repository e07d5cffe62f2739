"""The policy registry: names -> modules, and the one interface the engine calls.

The engine calls a policy through one kernel, :func:`kernel` ``(name)``, of the
signature and return codes of :mod:`bufsim.policies.loop`: the policy module's own
``run`` if it has one (``innodb``: its general and fast loops; ``lru``: a fast path),
else :func:`run_generic`, the general kernel of the comparison policies, which calls
the policy's ``hit`` and ``miss`` through :func:`policy_hit` and :func:`policy_miss`
(the engine's part of a get, :func:`generic_get`, counts, hands out frames and
charges the miss).  The engine itself has no policy code: it feeds events, keeps
the clock between calls, samples and reads the counters.

Adding a comparison policy touches only its own module and this file: write its
module (``init``, ``hit``, ``miss`` and a pure-Python twin; see
:mod:`bufsim.policies.lru`'s docstring), add its name to
:data:`bufsim.config.POLICIES`, a row to :data:`TABLE` and to ``_TWIN_NAMES``, and a
branch to :func:`policy_hit` and :func:`policy_miss`; a policy with its own fast
kernel gives its module a ``run`` of :mod:`bufsim.policies.loop`'s contract.
"""
from numba import njit

from ..config import POLICIES
from . import arc, clock, fifo, innodb, lru, two_q
from ._state import (
    C_EVICT, C_GETS, C_READ, C_READS, FLAG_RELATCH, G_ACTIVE, G_LEFT, G_MID, I_CLOCK, I_DROP,
    K_COST_MISS,
    K_POLICY, PM_FFREE, PM_FMAP, PM_SMISS, P_WHERE, T_CLOCK, T_CPU, T_IOWAIT,
    T_MISSES, T_POS, space_pos,
)
from .device import device_read
from .innodb import instance_of, release_frame, take_frame
from .loop import CLOCK_OVERFLOW, YIELD, end_event, start_event

#: each policy's module by name, in the order
#: of :data:`bufsim.config.POLICIES`, the one list of names: a policy's code in the
#: kernels (``cfg[K_POLICY]``) is its place there
TABLE = {"innodb": innodb, "lru": lru, "fifo": fifo, "clock": clock, "two_q": two_q, "arc": arc}
assert tuple(TABLE) == POLICIES, "bufsim.config.POLICIES and TABLE name the same policies"
#: the codes, a constant each for the jitted dispatch
INNODB, LRU, FIFO, CLOCK, TWO_Q, ARC = range(len(POLICIES))
#: policy name -> code
CODES = {name: code for code, name in enumerate(POLICIES)}
#: comparison-policy modules by name (those :func:`run_generic` can run)
MODULES = {name: mod for name, mod in TABLE.items() if name != "innodb"}


def kernel(name: str):
    """The replay kernel of policy ``name`` (the contract of :mod:`bufsim.policies.loop`):
    its module's ``run`` if it has one (``innodb``; ``lru``'s fast path, which returns
    FALLBACK, state untouched, where :func:`run_generic` must run instead), else
    :func:`run_generic`."""
    return getattr(TABLE[name], "run", run_generic)


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


@njit(_nrt=False, cache=True, inline="always")
def generic_get(pst, stat, ist, cnt, sst, glob, cfg, pm, code, p, fl, k, t_ns):
    """A get of page p (local id) under a comparison policy: the policy decides the
    lists (over frames), the engine counts, hands out and takes back frames, and
    charges the miss."""
    fmap = pm[PM_FMAP]
    ffree = pm[PM_FFREE]
    i = instance_of(stat, cfg, p)
    if (fl & FLAG_RELATCH) == 0:
        cnt[i, C_GETS] += 1
    glob[G_ACTIVE] = 1
    f = fmap[p]
    if f >= 0:
        w = pst[P_WHERE][f]
        if w == 1 or w == 2:
            policy_hit(code, pst, ist, i, f)
            return t_ns
    else:
        f = take_frame(pst, glob, fmap, ffree, p)
    sst[k, T_MISSES] += 1
    pm[PM_SMISS][space_pos(stat, pm, p)] += 1
    cnt[i, C_READS] += 1
    cnt[i, C_READ] += 1
    ist[i, I_DROP] = -1
    victim = policy_miss(code, pst, ist, i, f)
    if victim >= 0:
        cnt[i, C_EVICT] += 1
        ist[i, I_CLOCK] += 1
        if pst[P_WHERE][victim] == 0:
            release_frame(pst, glob, fmap, ffree, victim)
    d = ist[i, I_DROP]
    if d >= 0:
        release_frame(pst, glob, fmap, ffree, d)
    done = device_read(stat, pm, sst, glob, cfg, p, k, t_ns)
    sst[k, T_IOWAIT] += done - t_ns
    sst[k, T_CPU] += cfg[K_COST_MISS]
    return done + cfg[K_COST_MISS]


@njit(_nrt=False, cache=True, nogil=True)
def run_generic(pages, counts, cpus, flags, pst, stat, ist, cnt, sst, glob, cfg, pm,
                 exhausted, stop_ns, max_events, budget, room):
    """The kernel of the comparison policies (the contract of
    :mod:`bufsim.policies.loop`; they register no pages, so never NEED_ROOM): each get
    is :func:`generic_get`, which calls the policy's ``hit`` or ``miss``."""
    code = cfg[K_POLICY]
    n_done = 0
    left = budget
    while True:
        if left <= 0:
            return YIELD
        resume = glob[G_MID] > 0
        best, stop = start_event(sst, glob, exhausted, stop_ns, max_events, n_done)
        if best < 0:
            return stop
        t = sst[best, T_CLOCK]
        e = sst[best, T_POS]
        p = pages[e]
        c = glob[G_LEFT] if resume else counts[e]
        cpu = cpus[e]
        fl = flags[e]
        n = c if c <= left else left
        for _ in range(n):
            t = generic_get(pst, stat, ist, cnt, sst, glob, cfg, pm, code, p, fl, best, t)
            t += cpu
            if t < 0:
                sst[best, T_CLOCK] = t
                return CLOCK_OVERFLOW
        left -= n
        if end_event(sst, glob, best, e, n, c, cpu, fl, t):
            return YIELD
        n_done += 1
