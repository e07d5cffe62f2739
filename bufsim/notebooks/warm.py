"""Compile Numba kernels before the work that needs them, several at once.

A kernel compiles on its first call and is then saved to ``NUMBA_CACHE_DIR``
(:mod:`bufsim._numba_cache`); a process that needs one another process is compiling waits,
idle, for its lock (:class:`bufsim._pool_state.first_call`).  InnoDB's kernel ``run`` is
the fast loop and the general loop, two kernels of about half a minute of compiling each
(``run`` alone, cold: 67 s CPU): called first by a replay, one process compiles both, one
after the other, while every other process that replays InnoDB waits.  :func:`warm`
compiles named groups of kernels in several processes at once, each group by calling
the package's public functions on tiny inputs (so the argument types are the ones every
caller passes); :data:`INNODB_GROUPS` are InnoDB's two loops, then ``run`` itself, which
loads them (2.5 s).

``bufsim notebooks run`` (``make reproduce``) warms InnoDB this way before its notebooks
start, where it is not compiled yet (:func:`warm_innodb`); ``make test`` runs
``python -m tests._warm``, these groups and the ones its tests need.  The result cache
(:mod:`bufsim.cache`) is off in a warming process: a replay it served would not run, so
not compile, its kernel.
"""
from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, wait

__all__ = ["INNODB_GROUPS", "INNODB_AFTER", "small_replay", "innodb_general", "innodb_fast",
           "innodb_replay", "run_group", "warm", "warm_innodb"]


def small_replay(policy: str, kernel=None) -> None:
    """A replay of ``policy`` on a small trace (3,000 gets, 512 pages); with ``kernel``,
    that function in place of the policy's kernel (the one the replay would call)."""
    import numpy as np

    import bufsim
    from bufsim.policies import registry

    rng = np.random.default_rng(0)
    page = np.concatenate([rng.integers(0, 300, 2000), np.arange(300, 1300)])
    trace = bufsim.Trace.from_arrays(page, cpu_ns=1000, name="warm")
    cfg = bufsim.mysql56(pool_pages=512)
    if policy != "innodb":
        cfg = bufsim.PoolConfig(policy=policy, pool_pages=512)
    if kernel is None:
        bufsim.replay(trace, cfg)
        return
    saved = registry.kernel
    registry.kernel = lambda name: kernel if name == policy else saved(name)
    try:
        bufsim.replay(trace, cfg)
    finally:
        registry.kernel = saved


def innodb_general() -> None:
    """InnoDB's general loop, with the argument types ``run`` passes it (``run``'s own)."""
    from bufsim.policies import innodb

    small_replay("innodb", innodb.run_general)


def innodb_fast() -> None:
    """InnoDB's fast loop, with the argument types ``run`` passes it: ``run``'s first 14
    arguments, then its int64 budget left and ``room``, as a replay gives them to the
    kernel (taken by a stand-in that ends the replay)."""
    import numba

    from bufsim.policies.innodb.fast import fast_loop

    calls = []

    def take(*args):
        calls.append(args)
        return 0                                    # DONE: every stream is exhausted

    try:
        small_replay("innodb", take)
    except Exception:       # the replay's end after a stand-in's DONE does not matter here
        if not calls:
            raise
    a = calls[0]
    fast_loop.compile(tuple(numba.typeof(x) for x in a[:14] + (a[15], a[16])))


def innodb_replay() -> None:
    """InnoDB's kernel ``run`` (it loads the two loops once they are in the cache)."""
    small_replay("innodb")


#: InnoDB's groups, the two loops first (side by side), then ``run``
INNODB_GROUPS: dict[str, Callable[[], None]] = {
    "innodb general loop": innodb_general,
    "innodb fast loop": innodb_fast,
    "innodb replay": innodb_replay,
}
#: group -> the groups that must end before it starts (a kernel compiled before the
#: kernels it calls are in the cache compiles them again)
INNODB_AFTER: dict[str, tuple[str, ...]] = {
    "innodb replay": ("innodb general loop", "innodb fast loop")}

_COMPILED: list[str] | None = None


def _listen() -> list[str]:
    """The kernels this process compiled (outermost compiles: a kernel's includes the
    functions it calls), from numba's compile events; registered once per process."""
    global _COMPILED
    if _COMPILED is None:
        from numba.core import event

        _COMPILED = []
        depth = [0]

        class Listener(event.Listener):
            def on_start(self, ev):
                depth[0] += 1

            def on_end(self, ev):
                depth[0] -= 1
                if depth[0] == 0:
                    _COMPILED.append(ev.data["dispatcher"].py_func.__qualname__)

        event.register("numba:compile", Listener())
    return _COMPILED


def run_group(module: str, name: str) -> tuple[str, list[str], float]:
    """Call group ``name`` of ``module``'s ``GROUPS`` (in this process, the result cache
    off); return ``(name, the kernels it compiled, CPU seconds)``.  A group that raises
    is reported in the list (``stopped by ...``), not raised."""
    from bufsim import cache

    os.environ[cache.OFF_ENV_VAR] = "1"
    groups = importlib.import_module(module).GROUPS
    compiled = _listen()
    before = len(compiled)
    t0 = time.process_time()
    error = []
    try:
        groups[name]()
    except Exception as e:      # noqa: BLE001 - the work that needs it will show it
        error = [f"stopped by {type(e).__name__}: {e}"]
    return name, compiled[before:] + error, time.process_time() - t0


GROUPS = INNODB_GROUPS


def warm(module: str, names: Sequence[str], after: Mapping[str, Sequence[str]], jobs: int,
         report: Callable[[str, list[str], float], None] | None = None) -> float:
    """Run the groups ``names`` of ``module``'s ``GROUPS`` in ``jobs`` processes, in
    their order, each group of ``after`` only once the groups it names have ended;
    ``report(name, compiled, cpu)`` as each ends.  Returns the wall seconds."""
    t0 = time.perf_counter()
    if jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")

    def done(future) -> None:
        if report is not None:
            report(*future.result())

    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(names)))) as ex:
        running = {n: ex.submit(run_group, module, n) for n in names if n not in after}
        waiting = [n for n in names if n in after]
        for f in running.values():
            f.add_done_callback(done)
        while waiting:
            wait([running[n] for n in after[waiting[0]] if n in running])
            name = waiting.pop(0)
            running[name] = ex.submit(run_group, module, name)
            running[name].add_done_callback(done)
        wait(list(running.values()))
    return time.perf_counter() - t0


def warm_innodb(jobs: int) -> float:
    """Compile InnoDB's kernel (:data:`INNODB_GROUPS`: its two loops in up to two processes,
    then ``run``) into ``NUMBA_CACHE_DIR``; the wall seconds it took."""
    return warm(__name__, list(INNODB_GROUPS), INNODB_AFTER, min(jobs, 2))
