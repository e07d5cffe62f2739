"""Tests for the notebook batch runner (bufsim.notebooks, bufsim.__main__).

One module-scoped run executes two tiny notebooks (one passing, one failing)
through ``main``; every other test works without a kernel.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from bufsim import notebooks, paths
from bufsim.__main__ import main
from bufsim.notebooks import NotebookRun, format_runs, select_notebooks, write_summary

OK_SOURCE = """\
import json, os, sys
import bufsim
try:
    import rfc3987_syntax
    shadow = None
except ImportError as e:
    shadow = str(e)
with open("out.json", "w") as fh:
    json.dump({"quick": quick, "cwd": os.getcwd(), "prefix": sys.prefix,
               "executable": sys.executable, "bufsim": bufsim.__file__, "shadow": shadow,
               "shadows": [p for p in sys.path if os.path.basename(p) == "shadow"]}, fh)
"""


def _write_notebook(path: Path, *cells: tuple[str, list[str]]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for source, tags in cells:
        cell = nbformat.v4.new_code_cell(source)
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    root = tmp_path_factory.mktemp("root")
    nbdir = root / "notebooks"
    _write_notebook(nbdir / "00_ok.ipynb", ("quick = False", ["parameters"]), (OK_SOURCE, []))
    _write_notebook(
        nbdir / "01_fail.ipynb",
        ("quick = False", ["parameters"]),
        ("raise RuntimeError('deliberate failure 42')", []),
    )
    quick = root / "build" / "quick"        # where --quick sends its outputs
    (quick / "results").mkdir(parents=True)
    (quick / "results" / "00_ok.csv").write_text(
        "experiment,metric,config,reported,simulated,ratio,fitted\n"
        "ssb,q1.1 time,5.6 128M,12.5,12.123456,0.96987648,false\n"
    )
    (quick / "figures").mkdir()
    (quick / "figures" / "hit_ratio.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (root / "figures").mkdir()
    (root / "figures" / "full_run.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    stdout = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(stdout):
        mp.setenv("BUFSIM_ROOT", str(root))
        code = main(["notebooks", "run", "--quick", "--no-progress"])
    return SimpleNamespace(root=root, nbdir=nbdir, code=code, stdout=stdout.getvalue())


def test_exit_code_is_one_when_a_notebook_fails(executed):
    assert executed.code == 1


def test_passing_notebook_got_parameters_cwd_and_this_interpreter(executed):
    out = json.loads((executed.nbdir / "out.json").read_text())
    assert out["quick"] is True, "--quick must override the parameters cell"
    assert Path(out["cwd"]).resolve() == executed.nbdir.resolve()
    assert out["prefix"] == sys.prefix, "kernel must run in the same environment"
    assert out["executable"] == sys.executable
    import bufsim
    assert Path(out["bufsim"]).resolve() == Path(bufsim.__file__).resolve(), \
        "the kernel imports the bufsim under test"
    executed_nb = nbformat.read(str(executed.root / "build/quick/notebooks/00_ok.ipynb"), as_version=4)
    injected = [c for c in executed_nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "quick = True" in injected[0].source


def test_kernel_runs_with_rfc3987_syntax_shadowed(executed):
    """The runner's kernels import jsonschema without rfc3987-syntax (runner._shadow_folder):
    its folder, a temporary one, first on the kernel's path; gone after the run."""
    out = json.loads((executed.nbdir / "out.json").read_text())
    assert "shadowed in the kernels of bufsim.notebooks.runner" in out["shadow"]
    assert len(out["shadows"]) == 1 and not Path(out["shadows"][0]).exists()


def test_one_more_lane_while_a_live_notebook_runs():
    from bufsim.notebooks.runner import lanes
    live, other = sorted(notebooks.LIVE_NOTEBOOKS)[0], "02_side_load_mysqldump"
    assert lanes(2, 1, []) == lanes(2, 1, [other]) == lanes(2, 1, [other, other]) == 2
    assert lanes(2, 1, [live]) == lanes(2, 1, [other, live]) == 3
    assert lanes(2, 0, [live]) == 2             # --jobs N: exactly N
    assert lanes(1, 1, [live]) == 2


def test_vega_lite_schema_needs_no_iri_format_checker():
    """Why the shadow changes no chart: altair validates with the draft's format
    checker, and without rfc3987-syntax only the ``iri`` and ``iri-reference`` checkers
    are missing; the Vega-Lite schema altair ships uses neither."""
    import altair
    from jsonschema import FormatChecker

    def formats(node):
        if isinstance(node, dict):
            if isinstance(node.get("format"), str):
                yield node["format"]
            for v in node.values():
                yield from formats(v)
        elif isinstance(node, list):
            for v in node:
                yield from formats(v)
    schema = json.loads((Path(altair.__file__).parent / "vegalite" / "v5" / "schema"
                         / "vega-lite-schema.json").read_text())
    used = set(formats(schema))
    assert {"uri", "uri-reference"} <= used, used            # the walk finds formats
    assert not used & {"iri", "iri-reference"}, used
    assert used - {"color-hex"} <= set(FormatChecker().checkers), used


def test_failure_is_reported_with_message_and_kept_notebook(executed):
    failed_nb = executed.root / "build" / "quick" / "notebooks" / "01_fail.ipynb"
    assert failed_nb.is_file()
    assert "deliberate failure 42" in failed_nb.read_text()
    lines = executed.stdout.splitlines()
    row = next(line for line in lines if line.startswith("01_fail"))
    assert "FAILED" in row and str(failed_nb) in row
    assert "RuntimeError: deliberate failure 42" in executed.stdout
    assert "notebooks: 1 ok, 1 failed" in lines


def test_summary_gathers_run_results_and_figures(executed):
    summary = (executed.root / "build" / "quick" / "summary.md").read_text()
    assert "2 notebooks executed in quick mode, 1 failed." in summary
    assert "| 00_ok | ok |" in summary
    assert "| 01_fail | FAILED |" in summary and "RuntimeError: deliberate failure 42" in summary
    assert "(notebooks/01_fail.ipynb)" in summary
    assert "| experiment | metric | config | reported | simulated | ratio | fitted |" in summary
    assert "| ssb | q1.1 time | 5.6 128M | 12.5 | 12.12 | 0.9699 | false |" in summary
    assert "- [hit_ratio](figures/hit_ratio.png)" in summary
    assert "full_run" not in summary, "a quick run reports its own figures only"


def test_quick_run_leaves_full_outputs_and_environment_alone(executed):
    assert [p.name for p in (executed.root / "figures").iterdir()] == ["full_run.png"]
    assert not (executed.root / "build" / "summary.md").exists()
    assert paths.BUILD_ENV_VAR not in os.environ and paths.FIGURES_ENV_VAR not in os.environ


def _touch_notebooks(directory: Path, *stems: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for stem in stems:
        _write_notebook(directory / f"{stem}.ipynb", ("quick = False", ["parameters"]))


def test_select_by_stem_prefix_and_order(tmp_path):
    _touch_notebooks(tmp_path, "01_b", "00_a", "00_ab", "10_c")
    stems = lambda ps: [p.stem for p in ps]  # noqa: E731
    assert stems(select_notebooks([], tmp_path)) == ["00_a", "00_ab", "01_b", "10_c"]
    assert stems(select_notebooks(["00"], tmp_path)) == ["00_a", "00_ab"]
    assert stems(select_notebooks(["00_a"], tmp_path)) == ["00_a"], "an exact stem wins over prefixes"
    assert stems(select_notebooks(["10_c.ipynb", "0"], tmp_path)) == ["00_a", "00_ab", "01_b", "10_c"]
    with pytest.raises(ValueError, match=r"NAME '2' matches no notebook; available: 00_a, 00_ab"):
        select_notebooks(["2"], tmp_path)
    with pytest.raises(ValueError, match="NAME ''"):
        select_notebooks([""], tmp_path)


def test_hidden_and_checkpoint_notebooks_ignored(tmp_path):
    _touch_notebooks(tmp_path, "00_a", ".hidden")
    _touch_notebooks(tmp_path / ".ipynb_checkpoints", "00_a-checkpoint")
    assert [p.stem for p in select_notebooks([], tmp_path)] == ["00_a"]


def test_main_usage_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BUFSIM_ROOT", str(tmp_path))
    assert main(["notebooks", "run", "anything"]) == 2
    assert "does not exist" in capsys.readouterr().err
    _touch_notebooks(tmp_path / "notebooks", "00_a")
    assert main(["notebooks", "run", "99"]) == 2
    assert "NAME '99' matches no notebook; available: 00_a" in capsys.readouterr().err
    for bad in ([], ["notebooks"], ["notebooks", "run", "--fast"]):
        with pytest.raises(SystemExit) as exc:
            main(bad)
        assert exc.value.code == 2


def test_main_with_no_notebooks_fails(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BUFSIM_ROOT", str(tmp_path))
    (tmp_path / "notebooks").mkdir()
    assert main(["notebooks", "run", "--no-progress"]) == 1
    assert "no notebooks" in capsys.readouterr().err


def test_summary_escapes_and_formats_cells(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "a.csv").write_text('name,value,flag\n"x|y",,true\nz,1e-07,false\n')
    (results / "empty.csv").write_text("")
    (results / "long.csv").write_text("i\n" + "\n".join(map(str, range(5))) + "\n")
    out = write_summary(
        None, path=tmp_path / "out" / "summary.md", results_dir=results,
        figures_dir=tmp_path / "nofigs", max_rows=3,
    )
    text = out.read_text()
    assert "## Notebooks" not in text
    assert "| x\\|y |  | true |" in text
    assert "| z | 1e-07 | false |" in text
    assert "From [a.csv](../results/a.csv)." in text
    assert "### empty" in text and "Could not read it: EmptyDataError" in text
    assert "First 3 of 5 rows." in text and "| 3 |" not in text
    assert "No figures in ../nofigs." in text
    assert sorted(p.name for p in out.parent.iterdir()) == ["summary.html", "summary.md"]


def test_format_runs_table():
    runs = [
        NotebookRun("00_a", Path("n/00_a.ipynb"), Path("b/00_a.ipynb"), True, 1.25,
                    cpu_seconds=2.46),
        NotebookRun("01_b", Path("n/01_b.ipynb"), None, False, 0.5, "NoSuchKernel: python3"),
    ]
    text = format_runs(runs)
    lines = text.splitlines()
    assert lines[0].split() == ["notebook", "status", "seconds", "cpu", "s", "executed",
                                "notebook", "/", "error"]
    assert lines[2].split() == ["00_a", "ok", "1.2", "2.5", "b/00_a.ipynb"]
    assert lines[3].split()[:4] == ["01_b", "FAILED", "0.5", "-"]
    assert "(no executed notebook)" in lines[3]
    assert lines[4].strip() == "NoSuchKernel: python3"
    assert lines[-1] == "notebooks: 1 ok, 1 failed"


def test_module_exports():
    assert set(notebooks.__all__) >= {"run_notebooks", "write_summary", "select_notebooks"}


def test_default_jobs_reads_bufsim_jobs(monkeypatch):
    from bufsim._cores import default_jobs

    monkeypatch.delenv("BUFSIM_JOBS", raising=False)
    assert default_jobs() == (os.cpu_count() or 1)
    monkeypatch.setenv("BUFSIM_JOBS", "3")
    assert default_jobs() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("BUFSIM_JOBS", bad)
        with pytest.raises(ValueError, match="BUFSIM_JOBS must be an integer >= 1"):
            default_jobs()


def test_a_worker_gives_its_kernels_their_share_of_the_cores(monkeypatch):
    from bufsim.notebooks import runner

    monkeypatch.setenv("BUFSIM_JOBS", "9")   # restored after the test, whatever _init_worker sets
    monkeypatch.delenv("BUFSIM_JOBS")
    runner._init_worker(1)
    assert os.environ["BUFSIM_JOBS"] == "1"
    runner._init_worker(4)      # the caller's (here: the first call's) value stays
    assert os.environ["BUFSIM_JOBS"] == "1"


def test_lower_priority_raises_a_process_niceness():
    """A kernel beside a live notebook runs at BACKGROUND_NICE: the process's niceness, and
    and its autogroup's where the system has them."""
    import subprocess

    from bufsim.notebooks import runner

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"],
                             start_new_session=True)   # a session, hence an autogroup, of its own
    try:
        before = os.getpriority(os.PRIO_PROCESS, child.pid)
        runner.lower_priority(child.pid, before + 3)
        assert os.getpriority(os.PRIO_PROCESS, child.pid) == before + 3
        group = Path(f"/proc/{child.pid}/autogroup")
        if group.exists():
            assert group.read_text().split()[-1] == str(before + 3)
    finally:
        child.kill()
        child.wait()
    assert os.getpriority(os.PRIO_PROCESS, 0) == before     # ours is left alone


def test_warm_runs_each_group_once_and_a_dependent_group_after_its_groups(tmp_path,
                                                                        monkeypatch):
    """bufsim.notebooks.warm (make reproduce's and make test's compile step): every group
    runs once, in a process of its own pool, a group of ``after`` only once the groups
    it names have ended; a group that raises is reported, not raised."""
    from bufsim.notebooks import warm as W
    (tmp_path / "warm_groups_x.py").write_text(
        "import os, time\n"
        f"LOG = {str(tmp_path / 'log')!r}\n"
        "def mark(name, pause):\n"
        "    def run():\n"
        "        with open(LOG, 'a') as f: f.write(f'start {name}\\n')\n"
        "        time.sleep(pause)\n"
        "        with open(LOG, 'a') as f: f.write(f'end {name}\\n')\n"
        "    return run\n"
        "def bad():\n"
        "    raise RuntimeError('no compiler')\n"
        "GROUPS = {'a': mark('a', 0.3), 'b': mark('b', 0.1), 'bad': bad, 'c': mark('c', 0)}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    got = []
    W.warm("warm_groups_x", ["a", "b", "bad", "c"], {"c": ("a", "b")}, 2,
           lambda name, compiled, cpu: got.append((name, compiled)))
    assert sorted(n for n, _ in got) == ["a", "b", "bad", "c"]
    assert dict(got)["bad"] == ["stopped by RuntimeError: no compiler"]
    log = (tmp_path / "log").read_text().split("\n")
    assert log.index("start c") > max(log.index("end a"), log.index("end b"))
    assert log.count("start a") == 1
    with pytest.raises(ValueError, match="jobs must be an integer >= 1"):
        W.warm("warm_groups_x", ["a"], {}, 0)
