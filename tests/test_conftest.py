"""The shared fixtures of tests/conftest.py."""
from pathlib import Path

import bufsim


def test_run_child_imports_this_checkout_and_reports_json(run_child):
    out = run_child("import json, sys\nimport bufsim\n"
                    "json.dump(dict(pkg=bufsim.__file__, rss=peak_rss_bytes(), arg=sys.argv[1]),"
                    " sys.stdout)", "x", timeout=300)
    assert Path(out["pkg"]).resolve() == Path(bufsim.__file__).resolve()
    assert out["rss"] > 10_000_000 and out["arg"] == "x"


def test_child_env_puts_the_checkout_first(child_env):
    first = child_env["PYTHONPATH"].split(":")[0]
    assert Path(first) == Path(bufsim.__file__).resolve().parents[1]
