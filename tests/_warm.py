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

The groups and their scheduling are :mod:`bufsim.notebooks.warm`'s (``make reproduce``
warms InnoDB with them too): InnoDB's two loops side by side, ``run`` itself only after
both are in the cache; the other groups are the kernels the tests call.

Prints one line per group: its name, the kernels it compiled (not found in the cache)
and the CPU seconds it took. A group that raises is reported in its line and the others
still run (exit status 0: the tests, not this step, say what is broken).
"""
from __future__ import annotations

import os
import sys

from bufsim.notebooks import warm as W


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
    "innodb general loop": W.innodb_general,
    "innodb fast loop": W.innodb_fast,
    "fifo/clock/2q/arc replay": lambda: W.small_replay("fifo"),
    "analytic (MRC, MVA)": _analytic,
    "contention (DES)": _contention,
    "lru replay": lambda: W.small_replay("lru"),
    "kernels the tests call directly": _test_kernels,
    "innodb replay": W.innodb_replay,
}

#: group -> the groups that must end before it starts (a kernel compiled before the
#: kernels it calls are in the cache compiles them again)
AFTER = W.INNODB_AFTER


def main(argv: list[str]) -> int:
    jobs = int(argv[0]) if argv else (os.cpu_count() or 1)

    def report(name: str, compiled: list[str], cpu: float) -> None:
        what = ", ".join(compiled) if compiled else "all in the cache"
        print(f"tests._warm: {name}: {cpu:.1f} s CPU; compiled: {what}", flush=True)

    seconds = W.warm(__name__, list(GROUPS), AFTER, jobs, report)
    print(f"tests._warm: {seconds:.0f} s "
          f"(NUMBA_CACHE_DIR={os.environ.get('NUMBA_CACHE_DIR', '?')})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
