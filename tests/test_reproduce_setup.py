"""``make reproduce`` sets up what notebook 07 needs, or says in one line how to.

The machine is injected (whether a server is available, the uid, password-less sudo,
the install script), so these run anywhere, with or without MariaDB installed.
"""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import nbformat
import pytest

from bufsim import notebooks
from bufsim.__main__ import main

MISSING = (False, "no mariadbd binary (install MariaDB: `make mariadb`, or "
                  "apt-get install mariadb-server)")


def _never(*_):
    raise AssertionError("must not try to install without root")


def test_non_root_without_sudo_names_the_command_and_installs_nothing():
    ok, why = notebooks.live_server_status(available=lambda: MISSING, uid=1000,
                                           can_sudo=lambda: False, install=_never)
    assert not ok
    assert why == "no mariadbd binary; install it with `sudo make mariadb`"


def test_root_installs_with_the_shared_script_then_checks_again():
    calls, answers = [], iter([MISSING, (True, "")])
    ok, why = notebooks.live_server_status(available=lambda: next(answers), uid=0,
                                           can_sudo=_never, install=lambda s: calls.append(s) or 0)
    assert (ok, why) == (True, "")
    assert [p.name for p in calls] == ["mariadb-server.sh"] and calls[0].is_file()
    assert calls[0].parent.name == "scripts"


def test_password_less_sudo_installs_too():
    answers = iter([MISSING, (True, "")])
    calls = []
    ok, _ = notebooks.live_server_status(available=lambda: next(answers), uid=1000,
                                         can_sudo=lambda: True, install=calls.append)
    assert ok and len(calls) == 1


def test_a_failed_install_is_reported_with_its_status():
    ok, why = notebooks.live_server_status(available=lambda: MISSING, uid=0, install=lambda s: 100)
    assert not ok and "exited with status 100" in why and "`make mariadb`" in why


def test_available_server_needs_nothing():
    assert notebooks.live_server_status(available=lambda: (True, ""), uid=1000,
                                        can_sudo=_never, install=_never) == (True, "")


def _notebook(path: Path, source: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    cell = nbformat.v4.new_code_cell("quick = False")
    cell.metadata["tags"] = ["parameters"]
    nb.cells += [cell, nbformat.v4.new_code_cell(source)]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def test_reproduce_runs_the_others_and_reports_07_in_one_line(tmp_path, monkeypatch):
    """As a user without root and without MariaDB: the other notebook runs, 07 is
    not started, one stderr line names it and the command, and the exit status is 1."""
    root = tmp_path / "root"
    _notebook(root / "notebooks" / "00_ok.ipynb", "x = 1")
    _notebook(root / "notebooks" / "07_live_server_validation.ipynb",
              "raise SystemExit('07 must not be started')")
    (root / "figures").mkdir()
    monkeypatch.setenv("BUFSIM_ROOT", str(root))
    for var in ("BUFSIM_BUILD_DIR", "BUFSIM_FIGURES_DIR"):
        monkeypatch.delenv(var, raising=False)
    real = notebooks.live_server_status
    monkeypatch.setattr(notebooks, "live_server_status", lambda: real(
        available=lambda: MISSING, uid=1000, can_sudo=lambda: False, install=_never))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["notebooks", "run", "--quick", "--no-progress", "--jobs", "1"])
    assert code == 1
    lines = [ln for ln in err.getvalue().splitlines() if "07_live" in ln]
    assert lines == ["07_live_server_validation: not run: no mariadbd binary; install it "
                     "with `sudo make mariadb`, then `make reproduce NOTEBOOKS=07`"]
    table = out.getvalue().splitlines()
    row07 = [ln for ln in table if ln.startswith("07_live")]
    assert len(row07) == 1 and "NOT RUN" in row07[0] and "sudo make mariadb" in row07[0]
    assert any(ln.startswith("00_ok") and " ok " in ln for ln in table)
    assert (root / "build" / "quick" / "notebooks" / "00_ok.ipynb").is_file()
    assert not (root / "build" / "quick" / "notebooks" / "07_live_server_validation.ipynb").exists()
    summary = (root / "build" / "quick" / "summary.md").read_text()
    assert "07_live_server_validation" in summary and "sudo make mariadb" in summary


def test_scripts_share_the_if_root_mode():
    """.ci/run and make use the same two scripts; --if-root never asks for a password."""
    from bufsim import paths
    root = paths.repo_root()
    ci = (root / ".ci" / "run").read_text()
    make = (root / "Makefile").read_text()
    assert "scripts/mariadb-server.sh" in ci and "scripts/chromium.sh --if-root" in ci
    assert "scripts/chromium.sh --if-root" in make and "scripts/mariadb-server.sh" in make
    for name in ("mariadb-server.sh", "chromium.sh"):
        text = (root / "scripts" / name).read_text()
        assert "--if-root" in text and "sudo -n true" in text and "exit 3" in text


@pytest.mark.parametrize("bad", ["0", "x"])
def test_jobs_must_be_a_positive_integer(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["notebooks", "run", "--jobs", bad])
    assert exc.value.code == 2
    assert "--jobs" in capsys.readouterr().err


def test_longest_notebook_starts_first_and_times_are_remembered(tmp_path):
    srcs = [tmp_path / f"{n}.ipynb" for n in ("00_a", "01_b", "02_c", "03_new")]
    out = tmp_path / "out"
    out.mkdir()
    assert notebooks.longest_first(srcs, out) == srcs          # nothing known: name order
    runs = [notebooks.NotebookRun("00_a", srcs[0], None, True, 5.0),
            notebooks.NotebookRun("01_b", srcs[1], None, True, 190.0),
            notebooks.NotebookRun("02_c", srcs[2], None, True, 40.0)]
    notebooks.save_seconds(out, runs)
    # unknown first (it may be long), then the longest
    assert [p.stem for p in notebooks.longest_first(srcs, out)] == ["03_new", "01_b", "02_c", "00_a"]
    notebooks.save_seconds(out, [notebooks.NotebookRun("00_a", srcs[0], None, False, 999.0)])
    assert [p.stem for p in notebooks.longest_first(srcs, out)][1] == "01_b", "failures not kept"
    (out / ".seconds.json").write_text("not json")
    assert notebooks.longest_first(srcs, out) == srcs


def test_a_first_run_starts_the_shipped_notebooks_longest_first(tmp_path):
    """No times recorded yet (a fresh clone): the shipped notebooks go in the order of
    their typical times, 07 (the live server) first; one recorded time counts over it."""
    srcs = notebooks.discover_notebooks()
    assert {p.stem for p in srcs} == set(notebooks.TYPICAL_SECONDS)
    order = [p.stem for p in notebooks.longest_first(srcs, tmp_path)]
    assert order[:2] == ["07_live_server_validation", "01_ssb_old_blocks_time"]
    assert order[-1] == "08_explorer"
    notebooks.save_seconds(tmp_path, [notebooks.NotebookRun("08_explorer", srcs[-1], None,
                                                             True, 999.0)])
    assert [p.stem for p in notebooks.longest_first(srcs, tmp_path)][0] == "08_explorer"


def test_two_notebooks_side_by_side_each_write_their_own_output(tmp_path):
    nbdir = tmp_path / "nb"
    for n in ("00_x", "01_y"):
        _notebook(nbdir / f"{n}.ipynb", f"import os; open('{n}.txt', 'w').write(str(os.getpid()))"
                  # 00_x's kernel burns 0.6 s of CPU: counted in its cpu_seconds
                  + ("\nimport time\nt = time.process_time()\n"
                     "while time.process_time() - t < 0.6: pass" if n == "00_x" else ""))
    runs = notebooks.run_notebooks([], notebooks_dir=nbdir, output_dir=tmp_path / "out",
                                   progress=False, jobs=2)
    assert [(r.name, r.ok) for r in runs] == [("00_x", True), ("01_y", True)]
    assert runs[0].cpu_seconds >= 0.6 and runs[1].cpu_seconds > 0
    assert all(r.output.is_file() for r in runs)
    pids = {(nbdir / f"{n}.txt").read_text() for n in ("00_x", "01_y")}
    assert len(pids) == 2
    with pytest.raises(ValueError, match="jobs"):
        notebooks.run_notebooks([], notebooks_dir=nbdir, jobs=0)
