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


def test_every_long_first_prefix_names_a_test_that_exists():
    """A renamed test would silently drop out of conftest's LONG_FIRST order."""
    from tests.conftest import LONG_FIRST
    root = Path(__file__).resolve().parents[1]
    for prefix in LONG_FIRST:
        path, _, name = prefix.partition("::")
        src = (root / path).read_text()
        func = name.split("[", 1)[0]
        assert func == "" or f"def {func}(" in src, prefix
        if "[" in name:      # a parametrized case: its id's start is a key of the file
            assert f'"{name.split("[", 1)[1]}' in src, prefix


def test_big_files_exist_and_follow_the_long_tests():
    from tests.conftest import BIG_FILES_NEXT, LONG_FIRST, _order
    root = Path(__file__).resolve().parents[1]
    assert all((root / f).is_file() for f in BIG_FILES_NEXT)
    ranks = [_order(f"{f}::test_x") for f in BIG_FILES_NEXT]
    assert ranks == sorted(ranks) and min(ranks) == len(LONG_FIRST)
    assert _order("tests/test_pages.py::test_x") == len(LONG_FIRST) + len(BIG_FILES_NEXT)
    assert _order(LONG_FIRST[0] + "x]") == 0


def test_test_processes_leave_out_the_iri_format_checkers(run_child):
    """tests/_imports shadows rfc3987-syntax in this process and in every child (a notebook
    kernel inherits the same PYTHONPATH): jsonschema imports without building its grammars,
    with every other format checker it had."""
    import sys

    import jsonschema
    assert sys.modules.get("rfc3987_syntax") is None
    assert "iri" not in jsonschema.FormatChecker().checkers
    out = run_child("import json, sys, jsonschema\n"
                    "json.dump(dict(loaded='rfc3987_syntax' in sys.modules and "
                    "sys.modules['rfc3987_syntax'] is not None, "
                    "formats=sorted(jsonschema.FormatChecker().checkers)), sys.stdout)",
                    timeout=120)
    assert out["loaded"] is False
    assert "iri" not in out["formats"] and {"uri", "date", "email"} <= set(out["formats"])


def test_the_plugins_the_suite_needs_are_loaded(pytestconfig):
    """pyproject's addopts name the plugins (--disable-plugin-autoload): pytest-timeout for
    the ini's ``timeout``, xdist for ``-n`` and the scheduler, hypothesis's for its
    ``--hypothesis-profile`` option and reports."""
    pm = pytestconfig.pluginmanager
    assert pm.has_plugin("timeout") and pytestconfig.getini("timeout") == "900"
    assert pm.has_plugin("xdist") and pm.has_plugin("hypothesispytest")
    assert pytestconfig.getoption("hypothesis_profile", None) in (None, "default", "ci")
