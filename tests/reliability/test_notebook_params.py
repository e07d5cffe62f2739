"""A misspelt papermill parameter stops the notebook at once (issue 42, item 9), for a plain
``papermill`` run too: :func:`bufsim.notebooks.setup` compares papermill's injected cell with
the notebook's ``parameters`` cell."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import bufsim
from bufsim import paths
from bufsim.notebooks import check_injected_parameters

PARAMS = "# parameters\nquick = False\nseed = 1\nzipf_alpha = 0.9  # skew\noutput_dir = None\n"


def test_misspelt_name_is_refused_with_the_closest_one():
    history = ["", PARAMS, "# Parameters\nzipf_alpah = 1.1\n", "import bufsim", "P = setup()"]
    with pytest.raises(ValueError) as e:
        check_injected_parameters(history)
    msg = str(e.value)
    assert "'zipf_alpah'" in msg and "did you mean 'zipf_alpha'?" in msg, msg
    assert "quick, seed, zipf_alpha, output_dir" in msg


def test_misspelt_quick_is_refused():
    history = ["", PARAMS, "# Parameters\nquik = True\n", "P = setup()"]
    with pytest.raises(ValueError, match="'quik'.*did you mean 'quick'"):
        check_injected_parameters(history)


def test_known_names_pass_and_no_injection_passes():
    check_injected_parameters(["", PARAMS, "# Parameters\nquick = True\nseed = 3\n", "x"])
    check_injected_parameters(["", PARAMS, "P = setup()"])     # run by hand: nothing injected
    check_injected_parameters([])


def test_a_name_far_from_every_known_one_lists_them():
    with pytest.raises(ValueError) as e:
        check_injected_parameters(["", PARAMS, "# Parameters\nbanana = 2\n", "x"])
    assert "did you mean" not in str(e.value) and "known parameters: quick" in str(e.value)


@pytest.mark.parametrize("bad, close", [
    ("zipf_alpah", "zipf_alpha"),
    pytest.param("quik", "quick", marks=pytest.mark.slow)])   # a kernel start each (~20 s)
def test_plain_papermill_run_stops_at_setup(tmp_path, bad, close):
    """``papermill notebooks/00_quickstart.ipynb out.ipynb -p zipf_alpah 1.1`` fails in the
    setup cell: nothing replayed, nothing written under output_dir."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(Path(bufsim.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH"))
        if p)}
    nb = paths.notebooks_dir() / "00_quickstart.ipynb"
    out = tmp_path / "out.ipynb"
    t = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "papermill", str(nb), str(out), "-p", bad, "1",
                        "-p", "output_dir", str(tmp_path / "o"), "-k", "python3",
                        "--cwd", str(nb.parent)],
                       capture_output=True, text=True, timeout=600, env=env)
    took = time.monotonic() - t
    assert r.returncode != 0
    assert f"parameter {bad!r} is not a parameter of this notebook" in r.stderr, r.stderr[-3000:]
    assert f"did you mean {close!r}" in r.stderr
    assert not (tmp_path / "o").exists()       # stopped before any output
    print(f"-p {bad}: refused after {took:.1f} s (kernel start included)")
