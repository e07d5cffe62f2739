"""Outputs are refused before any work, written together or not at all (issue 42, item 10),
and the small CLI probes of its "also" list: a directory given as a trace, a closed pipe."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bufsim.cli import main
from tests._cli import run_cli


import bufsim

#: the environment of a child that imports this checkout's bufsim from any folder
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    p for p in (str(Path(bufsim.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH"))
    if p)}


def cli(*args, cwd=None):
    """``bufsim ARGS`` in this process (tests._cli); test_closed_pipe_exits_quietly starts
    the real program."""
    return run_cli(*args, cwd=cwd)


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("out") / "trace.csv"
    rng = np.random.default_rng(3)
    pd.DataFrame({"space": 1, "page": rng.integers(0, 300, 2000)}).to_csv(path, index=False)
    return path


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("command", [
    ["replay", "--pool", "1M", "-o"],
    ["sweep", "--pool", "1M,2M", "--jobs", "1", "-o"],
    ["mrc", "-o"],
    ["advise", "-o"],
])
def test_output_under_a_file_is_refused_before_work(trace, tmp_path, command):
    blocker = tmp_path / "notadir"
    blocker.write_text("x")
    sfx = {"replay": ".json", "sweep": ".csv", "mrc": ".csv", "advise": ".md"}[command[0]]
    target = blocker / ("out" + sfx)
    r = cli(command[0], trace, *command[1:], target)
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert "-o" in line and "notadir" in line and "not a folder" in line, line
    assert "Error" not in line and ".tmp" not in line, line   # no raw exception, no temp name
    assert "compile" not in r.stderr   # refused before the replay (and its compile notice)
    assert blocker.read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_output_in_read_only_folder_is_refused(trace, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        r = cli("mrc", trace, "-o", ro / "curve.csv")
    finally:
        ro.chmod(0o755)
    assert r.returncode == 2
    assert "not writable" in r.stderr and str(ro) in r.stderr


@pytest.mark.parametrize("command", [["sweep", "--pool", "1M,2M", "--jobs", "1"], ["mrc"]])
def test_output_naming_the_input_trace_is_refused(trace, tmp_path, command):
    copy = tmp_path / "t.csv"
    copy.write_bytes(trace.read_bytes())
    before = copy.read_bytes()
    r = cli(command[0], copy, *command[1:], "-o", copy, "--no-chart", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "input" in r.stderr and "overwrite" in r.stderr
    assert copy.read_bytes() == before
    # the same file under another spelling
    r = cli(command[0], "./t.csv", *command[1:], "-o", str(tmp_path / "." / "t.csv"),
            "--no-chart", cwd=tmp_path)
    assert r.returncode == 2 and copy.read_bytes() == before


def test_failed_chart_leaves_no_table(trace, tmp_path, monkeypatch, capsys):
    """mrc writes a table and a chart: a chart that fails leaves neither (nor a temp file),
    and an earlier table of the same name is kept."""
    import bufsim.figures

    def broken(*a, **k):
        raise RuntimeError("renderer gone")
    out = tmp_path / "curve.csv"
    out.write_text("earlier\n")
    monkeypatch.setattr(bufsim.figures, "save_figure", broken)
    code = main(["mrc", str(trace), "-o", str(out)])
    assert code == 1
    assert "renderer gone" in capsys.readouterr().err
    assert out.read_text() == "earlier\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curve.csv"]


def test_table_and_chart_written_together(trace, tmp_path):
    out = tmp_path / "sub" / "curve.csv"     # a missing folder under a writable one is made
    r = cli("mrc", trace, "-o", out)
    assert r.returncode == 0, r.stderr
    assert pd.read_csv(out)["size"].size > 0
    assert (tmp_path / "sub" / "curve.png").stat().st_size > 0
    assert (tmp_path / "sub" / "curve.svg").stat().st_size > 0
    assert _leftovers(tmp_path / "sub") == []


def test_directory_as_trace_is_named_a_directory(tmp_path):
    r = cli("mrc", tmp_path)
    assert r.returncode == 2
    assert "is a directory" in r.stderr and "no such file" not in r.stderr


def test_closed_pipe_exits_quietly(trace):
    """``bufsim mrc ... | head -1``: no traceback, no 'failed' line; status 141 (SIGPIPE)."""
    p = subprocess.Popen([sys.executable, "-m", "bufsim", "mrc", str(trace), "--sizes", "1:9000:+1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    first = p.stdout.readline()
    p.stdout.close()          # the reader goes away, as head does
    err = p.stderr.read().decode()
    code = p.wait(timeout=300)
    assert first.startswith(b"# exact LRU")
    assert err == "", err
    assert code == 141


def test_convert_refuses_its_input_as_output(tmp_path):
    src = tmp_path / "blk.csv"
    src.write_text("8,0 1 1 0.0 10 Q R 0 + 32 [mysqld]\n")
    r = cli("convert", "blktrace", src, "-o", src)
    assert r.returncode == 2 and "input" in r.stderr, r.stderr
    assert src.read_text() == "8,0 1 1 0.0 10 Q R 0 + 32 [mysqld]\n"
