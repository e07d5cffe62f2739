"""Load a module of benchmarks/ (not a package), for the tests that share its code.

It is imported under its own name with benchmarks/ on ``sys.path``, as ``make bench``
(benchmarks/run.py) and the scripts themselves import their siblings: numba's cache
records the module that compiled a kernel, and a kernel the tests compiled must load
in a bench run too (and the other way round)."""
import importlib
import os
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(stem: str):
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module(stem)


def libcachesim():
    """libCacheSim's Python package, for the cross-checks against it: the test extra
    installs it; where it is missing the module's tests are skipped, except in CI
    (``CI=true``, as ``.ci/run`` runs), where they fail."""
    try:
        return importlib.import_module("libcachesim")
    except ImportError as exc:
        if os.environ.get("CI", "").lower() in ("1", "true"):
            pytest.fail(f"CI: libcachesim (the test extra) does not import: {exc}", pytrace=False)
        pytest.skip(f"libcachesim is not installed ({exc}): pip install -e '.[test]'",
                    allow_module_level=True)
