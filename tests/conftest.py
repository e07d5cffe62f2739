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

settings.register_profile("default", max_examples=25)
settings.register_profile("ci", max_examples=100)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

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
