"""Fixtures shared by the test files.

* ``child_env``: the environment of a fresh interpreter that imports this checkout's
  bufsim (its parent folder first on ``PYTHONPATH``).
* ``run_child``: run Python source in such an interpreter, with ``peak_rss_bytes()``
  defined, and return the JSON object its last stdout line holds (the memory tests
  measure peaks there, away from the test process's own allocations).

The result cache (bufsim.cache) is off for the whole session (``BUFSIM_NO_CACHE=1``,
inherited by child processes and notebook kernels): a test of a replay's work, time or
memory must replay, and the checkout's build/cache/ stays as the user left it.
tests/test_cache.py turns it on over a temporary folder.

Test order and xdist scheduling: the tests in ``LONG_FIRST`` (a notebook kernel, a browser,
a cluster: tens of seconds each) are collected first, longest first
(``pytest_collection_modifyitems``), so that on two workers they start first and the run
does not end on one of them; the files of ``BIG_FILES_NEXT`` follow, so that it ends on
files of under 2.5 s. Under ``--dist loadgroup`` (pyproject's addopts) the scheduler
of ``pytest_xdist_make_scheduler`` sends every other test file to one worker as a unit, in
collection order: the Numba kernels a file uses then compile once (the other worker loads
them from NUMBA_CACHE_DIR later) instead of in both workers at once. Tests marked
``xdist_group`` keep their group. (xdist's own loadgroup names groups by rewriting
``item._nodeid``, which pytest 9 no longer reads, so it would run as plain ``load``.)

CPU per test: with ``BUFSIM_TEST_CPU=FOLDER`` each process running tests appends one JSON
line per test to ``FOLDER/<worker>.jsonl``: node id, wall seconds, and CPU seconds of the
process itself and of the child processes it waited for (setup, call and teardown
together; a session fixture counts in the first test that uses it), and the Numba kernels
it compiled (not loaded from the cache) with their CPU seconds. Rank files by CPU with
``python -m tests._cpu FOLDER`` (the machine's other load inflates wall times, not CPU).

Hypothesis profiles: ``default`` (``make test``) runs each property test with
``tests._hypothesis.examples(n)`` = a quarter of its count ``n`` (at least 10) and 25
examples where a test names none; ``ci`` (``.ci/run``, through ``HYPOTHESIS_PROFILE=ci``
or ``--hypothesis-profile=ci``) runs every count as written and hypothesis's 100.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

import bufsim
from bufsim import cache as _cache

os.environ[_cache.OFF_ENV_VAR] = "1"

# the checkout under test first on every child's path: a notebook kernel (cwd notebooks/)
# and any child interpreter import this checkout's bufsim, not whichever one the
# interpreter's environment has installed (a git worktree run with another checkout's
# venv would otherwise test that checkout's package in its notebooks, and compile its
# kernels into this checkout's NUMBA_CACHE_DIR beside the ones tests._warm compiled)
_CHECKOUT = str(Path(bufsim.__file__).resolve().parents[1])
# tests/_imports second: it shadows rfc3987-syntax, whose import jsonschema makes (1.1 s of
# CPU in every kernel, papermill and JupyterLab process) only for "iri" formats nothing here
# checks (see tests/_imports/rfc3987_syntax.py); in this process too, before nbformat loads
_IMPORTS = str(Path(__file__).resolve().parent / "_imports")
os.environ["PYTHONPATH"] = os.pathsep.join(
    [_CHECKOUT, _IMPORTS] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                             if p and p not in (_CHECKOUT, _IMPORTS)])
if _IMPORTS not in sys.path:
    sys.path.insert(0, _IMPORTS)
#: not test modules: the shadowing module raises ImportError by design
collect_ignore = ["_imports"]

settings.register_profile("default", max_examples=25)
settings.register_profile("ci", max_examples=100)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

#: node-id prefixes of the longest tests of the default tier, longest first (CPU seconds,
#: own and children, measured with ``BUFSIM_TEST_CPU`` on 2 workers: 01 61, 03 37, 02 34,
#: 04 29, 07 against its server 26, 05 19, 06 14, the browser 13, then under 10 each; the
#: dask cluster's wall time is much more than its CPU); they run before everything else,
#: each on its own
LONG_FIRST = (
    "tests/test_notebooks.py::test_notebook_follows_its_parameters[01_",
    "tests/test_notebooks.py::test_notebook_follows_its_parameters[03_",
    "tests/test_notebooks.py::test_notebook_follows_its_parameters[02_",
    "tests/test_notebooks.py::test_notebook_follows_its_parameters[04_",
    "tests/test_notebooks.py::test_live_notebook_writes_its_validation_rows",
    "tests/test_notebooks.py::test_notebook_follows_its_parameters[05_",
    "tests/test_notebooks.py::test_notebook_follows_its_parameters[06_",
    "tests/test_browser.py::",
    "tests/test_sweep.py::test_dask_local_cluster_gives_identical_results",
    "tests/test_notebooks.py::test_live_trace_notebook_writes_rows_that_hold",
    "tests/test_reproduce_setup.py::test_two_notebooks_side_by_side_each_write_their_own_output",
    "tests/test_notebooks.py::test_hand_run_leaves_git_status_clean",
    "tests/test_notebooks.py::test_notebook_follows_its_parameters[08_",
    "tests/reliability/test_notebook_params.py::test_plain_papermill_run_stops_at_setup",
    "tests/test_notebooks.py::test_bad_parameter_stops_the_notebook_naming_it",
    "tests/test_notebooks.py::test_bad_live_parameter_stops_notebook_07",
)


def _cpu_seconds() -> tuple[float, float]:
    import resource
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


class _CompileLog:
    """Under ``BUFSIM_TEST_CPU``: the Numba compiles (cache misses) of this process, each
    as (kernel, argument types, seconds), outermost compiles only (a kernel's compile
    includes the functions it calls)."""

    def __init__(self):
        import time

        from numba.core import event

        class Listener(event.Listener):
            def on_start(_, ev):
                self.depth += 1
                if self.depth == 1:
                    self.t0 = time.process_time()

            def on_end(_, ev):
                self.depth -= 1
                if self.depth == 0:
                    d = ev.data["dispatcher"].py_func
                    self.compiles.append(dict(
                        kernel=f"{d.__module__}.{d.__qualname__}",
                        args=str(ev.data["args"])[:300], cpu=time.process_time() - self.t0))

        self.depth, self.t0, self.compiles = 0, 0.0, []
        event.register("numba:compile", Listener())

    def take(self) -> list[dict]:
        out, self.compiles = self.compiles, []
        return out


_compile_log = _CompileLog() if os.environ.get("BUFSIM_TEST_CPU") else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    folder = os.environ.get("BUFSIM_TEST_CPU")
    if not folder:
        yield
        return
    import time
    wall0, (me0, kids0) = time.perf_counter(), _cpu_seconds()
    yield
    wall1, (me1, kids1) = time.perf_counter(), _cpu_seconds()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    Path(folder).mkdir(parents=True, exist_ok=True)
    with open(Path(folder) / f"{worker}.jsonl", "a") as fh:
        fh.write(json.dumps(dict(nodeid=item.nodeid, wall=wall1 - wall0, cpu=me1 - me0,
                                 children=kids1 - kids0, t=wall1,
                                 compiles=_compile_log.take() if _compile_log else [])) + "\n")


def pytest_sessionfinish(session):
    """Under ``BUFSIM_TEST_CPU``: the process's whole CPU (start-up and collection too)."""
    folder = os.environ.get("BUFSIM_TEST_CPU")
    if folder:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        Path(folder).mkdir(parents=True, exist_ok=True)
        me, kids = _cpu_seconds()
        (Path(folder) / f"{worker}.session.json").write_text(json.dumps(dict(cpu=me,
                                                                             children=kids)))


#: the test files of 3 s of CPU or more but their LONG_FIRST tests, most first (own and
#: children, measured with ``BUFSIM_TEST_CPU`` on 2 workers; test_engine_twin 4-19 s as
#: hypothesis draws), each one unit of work, sent after the LONG_FIRST tests: the run then
#: ends on files under 2.5 s (87 files, 42 s in all), and the last unit a worker takes, and
#: the one queued behind it, bound the time the other core idles at the end (in collection
#: order the run ended on workloads/test_workloads.py, 4.3 s, after the tiny doctests)
BIG_FILES_NEXT = (
    "tests/test_cli.py",                                # 22.4
    "tests/live/test_live.py",                          # 18.2
    "tests/experiments/test_analytic_vs_engine.py",     # 17.5
    "tests/test_engine_twin.py",                        # 15.5
    "tests/test_advise.py",                             # 8.1
    "tests/experiments/test_ssb_cpu_model.py",          # 7.9
    "tests/experiments/test_ssb_chunk_memo.py",         # 6.6
    "tests/experiments/test_side_load.py",              # 6.1
    "tests/live/test_compile.py",                       # 6.0
    "tests/test_advise_rein.py",                        # 6.0
    "tests/analytic/test_midpoint.py",                  # 5.9
    "tests/test_layout.py",                             # 5.2
    "tests/test_engine_v2.py",                          # 5.1
    "tests/experiments/test_dbt3_runs.py",              # 4.5
    "tests/reliability/test_sweep_interrupt.py",        # 4.4
    "tests/test_notebooks_runner.py",                   # 4.3
    "tests/workloads/test_workloads.py",                # 4.3
    "tests/experiments/test_ssb_experiment.py",         # 3.8
    "tests/policies/test_cleaner_lag.py",               # 3.8
    "tests/contention/test_des.py",                     # 3.6
    "tests/policies/test_libcachesim.py",               # 3.4
    "tests/policies/test_readahead_sites.py",           # 3.2
    "tests/policies/test_device.py",                    # 3.1
    "tests/test_thread_memory.py",                      # 3.0
)


def _long_rank(nodeid: str) -> int:
    return next((i for i, p in enumerate(LONG_FIRST) if nodeid.startswith(p)), len(LONG_FIRST))


def _order(nodeid: str) -> int:
    """LONG_FIRST tests first, then BIG_FILES_NEXT, then the rest."""
    rank = _long_rank(nodeid)
    if rank < len(LONG_FIRST):
        return rank
    path = nodeid.split("::", 1)[0]
    return rank + (BIG_FILES_NEXT.index(path) if path in BIG_FILES_NEXT else len(BIG_FILES_NEXT))


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: _order(item.nodeid))      # stable: the rest keep their order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup``: a test file is one unit of work, a ``LONG_FIRST`` test one unit
    of its own, units in collection order."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class FileScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.rfind("@") > nodeid.rfind("]"):            # an xdist_group mark
                return super()._split_scope(nodeid)
            if _long_rank(nodeid) < len(LONG_FIRST):
                return nodeid
            return nodeid.split("::", 1)[0]

    config.option.loadscopereorder = False      # keep the long tests at the front
    return FileScheduling(config, log)


#: defined at the top of every ``run_child`` program
PEAK_RSS_SOURCE = r'''
import resource


def peak_rss_bytes():
    """The process's peak resident set (VmHWM), bytes."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024   # KiB on Linux
'''


@pytest.fixture(scope="session")
def child_env() -> dict:
    pkg_parent = str(Path(bufsim.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_parent, env.get("PYTHONPATH")) if p)
    return env


@pytest.fixture(scope="session")
def run_child(child_env):
    def run(source: str, *args: str, timeout: float) -> dict:
        proc = subprocess.run([sys.executable, "-c", PEAK_RSS_SOURCE + source, *args],
                              env=child_env, capture_output=True, text=True, timeout=timeout)
        assert proc.returncode == 0, proc.stderr[-4000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])
    return run
