"""Load a module of benchmarks/ (not a package), for the tests that share its code.

It is imported under its own name with benchmarks/ on ``sys.path``, as ``make bench``
(benchmarks/run.py) and the scripts themselves import their siblings: numba's cache
records the module that compiled a kernel, and a kernel the tests compiled must load
in a bench run too (and the other way round)."""
import importlib
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(stem: str):
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module(stem)
