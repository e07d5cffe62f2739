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

Prints one line per group: its name, the kernels it compiled (not found in the cache)
and the CPU seconds it took. A group that raises is reported in its line and the others
still run (exit status 0: the tests, not this step, say what is broken).
"""
from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor


def _replay(policy: str) -> None:
    import numpy as np

    import bufsim

    rng = np.random.default_rng(0)
    page = np.concatenate([rng.integers(0, 300, 2000), np.arange(300, 1300)])
    trace = bufsim.Trace.from_arrays(page, cpu_ns=1000, name="warm")
    cfg = bufsim.mysql56(pool_pages=512)
    if policy != "innodb":
        cfg = bufsim.PoolConfig(policy=policy, pool_pages=512)
    bufsim.replay(trace, cfg)


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


def _contention() -> None:
    from bufsim.contention import des

    des.simulate([0.001, 0.002], 0.01, 4, n_transactions=2000)


#: group name -> function; the InnoDB kernel (the longest, over a minute of CPU) first,
#: so that with two processes the others fill the second core beside it; LRU's last:
#: its kernel is also named ``run``, and first_call's lock file is named after the
#: kernel's ``__name__``, so its compile waits for InnoDB's to end
GROUPS = {
    "innodb replay": lambda: _replay("innodb"),
    "fifo/clock/2q/arc replay": lambda: _replay("fifo"),
    "analytic (MRC, MVA)": _analytic,
    "contention (DES)": _contention,
    "lru replay": lambda: _replay("lru"),
}


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
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(GROUPS)))) as ex:
        for name, compiled, cpu in ex.map(_run, GROUPS):
            what = ", ".join(compiled) if compiled else "all in the cache"
            print(f"tests._warm: {name}: {cpu:.1f} s CPU; compiled: {what}", flush=True)
    print(f"tests._warm: {time.perf_counter() - t0:.0f} s "
          f"(NUMBA_CACHE_DIR={os.environ.get('NUMBA_CACHE_DIR', '?')})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
