"""Load a module of benchmarks/ (not a package) by path, for the tests that share its code."""
import importlib.util
import sys
from pathlib import Path


def load_benchmark(stem: str):
    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{stem}.py"
    spec = importlib.util.spec_from_file_location(f"bufsim_bench_{stem}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod
