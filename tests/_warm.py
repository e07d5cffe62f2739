"""Compile the Numba kernels the test suite uses once, before the test workers start.

``python -m tests._warm [JOBS]`` (``make test`` runs it before pytest) calls each group
of kernels below once, on tiny inputs through the package's public functions (so the
argument types are the ones every caller passes), in ``JOBS`` processes at once
(default: one per core), and saves them to ``NUMBA_CACHE_DIR``. A test worker or a
notebook kernel then loads them from the cache instead of compiling them itself, or
waiting, idle, for the lock of :class:`bufsim._pool_state.first_call` while another
process compiles (with a cold cache, both pytest-xdist workers start on notebooks that
need InnoDB's kernel, about a minute of compiling). With a warm cache each group costs
only the import and a cache load. The result cache (:mod:`bufsim.cache`) is off here:
a replay it served would not run, so not compile, its kernel.

InnoDB's kernel ``run`` is the fast loop and the general loop, two kernels of about
half a minute of compiling each (``run`` alone, cold: 67 s CPU). They are compiled in two
groups side by side, and ``run`` itself only after both are in the cache (it then loads
them, 2.5 s): on two cores the longest group is then half a minute, not over a minute.

Prints one line per group: its name, the kernels it compiled (not found in the cache)
and the CPU seconds it took. A group that raises is reported in its line and the others
still run (exit status 0: the tests, not this step, say what is broken).
"""
from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, wait


def _replay(policy: str, kernel=None) -> None:
    """A replay of ``policy`` on a small trace; with ``kernel``, that function in place
    of the policy's kernel (the one :class:`bufsim._pool_state.PoolState` would call)."""
    import numpy as np

    import bufsim
    from bufsim import _pool_state

    rng = np.random.default_rng(0)
    page = np.concatenate([rng.integers(0, 300, 2000), np.arange(300, 1300)])
    trace = bufsim.Trace.from_arrays(page, cpu_ns=1000, name="warm")
    cfg = bufsim.mysql56(pool_pages=512)
    if policy != "innodb":
        cfg = bufsim.PoolConfig(policy=policy, pool_pages=512)
    if kernel is None:
        bufsim.replay(trace, cfg)
        return
    registry = _pool_state.registry
    saved = registry.kernel
    registry.kernel = lambda name: kernel if name == policy else saved(name)
    try:
        bufsim.replay(trace, cfg)
    finally:
        registry.kernel = saved


def _innodb_general() -> None:
    """InnoDB's general loop, with the argument types ``run`` passes it (``run``'s own)."""
    from bufsim.policies import innodb

    _replay("innodb", innodb.run_general)


def _innodb_fast() -> None:
    """InnoDB's fast loop, with the argument types ``run`` passes it: ``run``'s first 14
    arguments, then its int64 budget left and ``room``. The arguments are those
    :class:`~bufsim._pool_state.PoolState` gives the kernel (taken by a stand-in that
    ends the replay)."""
    import numba

    from bufsim.policies.innodb.fast import fast_loop

    calls = []

    def take(*args):
        calls.append(args)
        return 0                                    # DONE: every stream is exhausted

    try:
        _replay("innodb", take)
    except Exception:       # the replay's end after a stand-in's DONE does not matter here
        if not calls:
            raise
    a = calls[0]
    fast_loop.compile(tuple(numba.typeof(x) for x in a[:14] + (a[15], a[16])))


def _analytic() -> None:
    import numpy as np

    import bufsim
    from bufsim import analytic

    rng = np.random.default_rng(0)
    page = rng.integers(0, 500, 3000)
    trace = bufsim.Trace.from_arrays(page, name="warm")
    analytic.exact_mrc(trace, [64, 128])
    analytic.shards_mrc(trace, [64, 128], rate=0.5)
    analytic.exact_mva([0.01, 0.02], 0.1, 4)
    analytic.schweitzer_mva([0.01, 0.02], 0.1, 4)


def _test_kernels() -> None:
    """The kernels the tests call directly, with the argument types they pass: the
    comparison policies' ``hit``/``miss`` over the twin harness's state
    (tests/policies/test_policies_twins.py, test_libcachesim.py), the device
    (tests/policies/test_device.py), and the convolution MVA (a multi-server station:
    writable demands as tests/analytic/test_mva.py passes them, read-only ones as a
    :class:`bufsim.contention.Network` holds them)."""
    import numpy as np

    from bufsim.analytic import che, exact_mva
    from tests.policies.test_device import Kernel, dev
    from tests.policies.test_policies_twins import POLICIES, replay

    for name in POLICIES:
        replay(name, 3, [0, 1, 2, 0, 3, 4, 1, 0, 5, 2, 6, 0])
    k = Kernel(dev("fifo"))
    k.read(0, 0, 0)
    k.write(0)
    d = np.array([0.01, 0.02, 0.005])
    exact_mva(d, 0.1, 4, servers=[2, 1, 1])
    d.setflags(write=False)
    exact_mva(d, 0.1, 4, servers=[2, 1, 1])
    rates = 1.0 / np.arange(1, 201) ** 0.9
    che.innodb_midpoint_lru(rates / rates.sum(), 50, 37)


def _contention() -> None:
    from bufsim.contention import des

    des.simulate([0.001, 0.002], 0.01, 4, n_transactions=2000)


#: group name -> function, longest first, so that with two processes the others fill the
#: second core beside the long ones; "innodb replay" (``run``) is submitted only once both
#: of its loops are in the cache (:data:`AFTER`)
GROUPS = {
    "innodb general loop": _innodb_general,
    "innodb fast loop": _innodb_fast,
    "fifo/clock/2q/arc replay": lambda: _replay("fifo"),
    "analytic (MRC, MVA)": _analytic,
    "contention (DES)": _contention,
    "lru replay": lambda: _replay("lru"),
    "kernels the tests call directly": _test_kernels,
    "innodb replay": lambda: _replay("innodb"),
}

#: group -> the groups that must end before it starts (a kernel compiled before the
#: kernels it calls are in the cache compiles them again)
AFTER = {"innodb replay": ("innodb general loop", "innodb fast loop")}


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


def _run(name: str) -> tuple[str, list[str], float]:
    from bufsim import cache

    # a replay served from the result cache (build/cache/) would not call its kernel
    os.environ[cache.OFF_ENV_VAR] = "1"
    compiled = _listen()
    before = len(compiled)
    t0 = time.process_time()
    error = []
    try:
        GROUPS[name]()
    except Exception as e:      # pytest will show it where it matters; warm the others
        error = [f"stopped by {type(e).__name__}: {e}"]
    return name, compiled[before:] + error, time.process_time() - t0


def main(argv: list[str]) -> int:
    jobs = int(argv[0]) if argv else (os.cpu_count() or 1)
    t0 = time.perf_counter()

    def report(future) -> None:
        name, compiled, cpu = future.result()
        what = ", ".join(compiled) if compiled else "all in the cache"
        print(f"tests._warm: {name}: {cpu:.1f} s CPU; compiled: {what}", flush=True)

    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(GROUPS)))) as ex:
        running = {name: ex.submit(_run, name) for name in GROUPS if name not in AFTER}
        waiting = [name for name in GROUPS if name in AFTER]
        for f in running.values():
            f.add_done_callback(report)
        while waiting:
            wait([running[n] for n in AFTER[waiting[0]]])
            name = waiting.pop(0)
            running[name] = ex.submit(_run, name)
            running[name].add_done_callback(report)
        wait(list(running.values()))
    print(f"tests._warm: {time.perf_counter() - t0:.0f} s "
          f"(NUMBA_CACHE_DIR={os.environ.get('NUMBA_CACHE_DIR', '?')})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
