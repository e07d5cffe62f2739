"""bufsim.notebooks.setup: parameter checks, output directories, provenance; the HTML
summary; the committed figures; the one numba cache folder."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

import bufsim
from bufsim import _numba_cache, figures, notebooks, paths, provenance
from bufsim.cli import _run_outputs
from bufsim.results import write_claims, write_results, write_table


@pytest.fixture(autouse=True)
def _no_context():
    yield
    provenance.set_context(None)


@pytest.mark.parametrize(("params", "message"), [
    ({"old_blocks_time_ms": [0, -5]}, r"parameter old_blocks_time_ms\[1\] must be an integer in \[0, 4294967295\], got -5"),
    ({"old_blocks_time_ms": "[0, x]"}, r"parameter old_blocks_time_ms must be a list such as \[0, 250\]"),
    ({"old_blocks_time_ms": []}, "parameter old_blocks_time_ms must be a non-empty list"),
    ({"old_blocks_time_ms": [5, 5]}, "must not repeat"),
    ({"pool_sizes": ["128M", "12Q"]}, r"parameter pool_sizes\[1\] must be a pool size"),
    ({"pool_sizes": [100]}, r"\[320, 2\*\*31\]"),
    ({"old_blocks_pct": 99}, r"parameter old_blocks_pct must be an integer in \[5, 95\], got 99"),
    ({"instances": True}, "parameter instances must be an integer"),
    ({"device": "floppy"}, "parameter device must be one of 'hdd7200', 'ssd'"),
    ({"versions": ["mysql56", "mysql99"]}, r"parameter versions\[1\] must be one of 'mysql55'"),
    ({"seed": -1}, "parameter seed must be an integer"),
    ({"scale_factor": 0.0}, "parameter scale_factor must be a number"),
    ({"colour": 1}, "parameter colour has no rule"),
])
def test_bad_parameters_are_named(params, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        notebooks.setup("99_t", output_dir=str(tmp_path), **params)
    assert provenance.current_context() is None, "nothing is set up after a bad value"


def test_quick_must_be_a_bool_and_output_dir_a_directory(tmp_path):
    with pytest.raises(ValueError, match="parameter quick must be True or False, got 1"):
        notebooks.setup("99_t", quick=1)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="parameter output_dir must be a directory"):
        notebooks.setup("99_t", output_dir=str(tmp_path / "file"))


def test_good_parameters_are_normalised_and_defaults_filled(tmp_path):
    ctx = notebooks.setup(
        "99_t", quick=True, seed=3, output_dir=str(tmp_path / "o"),
        old_blocks_time_ms="[0, 250]", pool_sizes=None, old_blocks_pct=20,
        rules={"knob": notebooks.choice_rule(("a", "b"))}, knob="b",
        defaults={"pool_sizes": (["1G"], ["64M", 400])})
    assert ctx["old_blocks_time_ms"] == [0, 250], "papermill -p passes lists as text"
    assert ctx["pool_sizes"] == ["64M", 400], "None takes the quick default in quick mode"
    assert ctx["knob"] == "b" and ctx["old_blocks_pct"] == 20 and ctx["seed"] == 3
    assert ctx.figures_dir == (tmp_path / "o" / "figures").resolve()
    assert ctx.results_dir == (tmp_path / "o" / "results").resolve()
    assert ctx.figures_dir.is_dir() and ctx.results_dir.is_dir()
    full = notebooks.setup("99_t", quick=False, output_dir=str(tmp_path / "o"), pool_sizes=None,
                           defaults={"pool_sizes": (["1G"], ["64M"])})
    assert full["pool_sizes"] == ["1G"]


def test_outputs_follow_the_context_and_carry_provenance(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path / "env-build"))
    monkeypatch.delenv(paths.FIGURES_ENV_VAR, raising=False)
    notebooks.setup("99_t", seed=5, output_dir=str(tmp_path / "o"), users=[1, 2])
    csv = write_results("99_t", [{"experiment": "e", "metric": "m", "config": "c",
                                  "reported": 1.0, "simulated": 2.0, "fitted": False}])
    assert csv == (tmp_path / "o" / "results" / "99_t.csv").resolve()
    meta = json.loads(csv.with_name("99_t.csv.provenance.json").read_text())
    assert meta["parameters"]["users"] == [1, 2] and meta["notebook"] == "99_t"
    assert meta["bufsim_version"] == bufsim.__version__ and meta["quick"] is False
    assert not (tmp_path / "env-build").exists()


def test_without_output_dir_the_environment_then_build_decide(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.ROOT_ENV_VAR, str(tmp_path))
    monkeypatch.delenv(paths.FIGURES_ENV_VAR, raising=False)
    monkeypatch.delenv(paths.BUILD_ENV_VAR, raising=False)
    ctx = notebooks.setup("99_t")
    assert ctx.figures_dir == tmp_path / "build" / "figures"
    assert ctx.results_dir == tmp_path / "build" / "results"
    monkeypatch.setenv(paths.FIGURES_ENV_VAR, str(tmp_path / "runner-figures"))
    assert notebooks.setup("99_t").figures_dir == tmp_path / "runner-figures"


def test_full_batch_run_is_the_one_that_writes_committed_figures(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.ROOT_ENV_VAR, str(tmp_path))
    monkeypatch.delenv(paths.FIGURES_ENV_VAR, raising=False)
    monkeypatch.delenv(paths.BUILD_ENV_VAR, raising=False)
    with _run_outputs(quick=False):
        assert os.environ[paths.FIGURES_ENV_VAR] == str(tmp_path / "figures")
    with _run_outputs(quick=True):
        assert os.environ[paths.FIGURES_ENV_VAR] == str(tmp_path / "build" / "quick" / "figures")
    # a run at the user's own parameters (-p) keeps the committed figures too
    with _run_outputs(quick=False, custom=True):
        assert os.environ[paths.FIGURES_ENV_VAR] == str(tmp_path / "build" / "custom" / "figures")
        assert os.environ[paths.BUILD_ENV_VAR] == str(tmp_path / "build" / "custom")
    with _run_outputs(quick=True, custom=True):
        assert os.environ[paths.FIGURES_ENV_VAR] == str(
            tmp_path / "build" / "quick" / "custom" / "figures")
    assert paths.FIGURES_ENV_VAR not in os.environ
    assert paths.BUILD_ENV_VAR not in os.environ


def test_run_parameters_are_checked_against_each_notebook_before_any_runs():
    nb01 = paths.notebooks_dir() / "01_ssb_old_blocks_time.ipynb"
    nb04 = next(paths.notebooks_dir().glob("04_*.ipynb"))
    assert notebooks.notebook_parameters(nb01)[:3] == ["quick", "seed", "scale_factor"]
    assert "old_blocks_time_ms" in notebooks.notebook_parameters(nb01)
    ok = {"old_blocks_time_ms": notebooks.parse_parameter("[0, 1, 100, 1000, 3000]")}
    assert notebooks.check_run_parameters([nb01], ok) == {
        "old_blocks_time_ms": [0, 1, 100, 1000, 3000]}
    with pytest.raises(ValueError, match=r"'old_blocks_time' is not a parameter of "
                       r"01_ssb_old_blocks_time; did you mean 'old_blocks_time_ms'"):
        notebooks.check_run_parameters([nb01], {"old_blocks_time": [0]})
    if "old_blocks_time_ms" not in notebooks.notebook_parameters(nb04):
        with pytest.raises(ValueError, match="is not a parameter of 04_"):
            notebooks.check_run_parameters([nb01, nb04], ok)
    with pytest.raises(ValueError, match=r"old_blocks_time_ms\[1\] must be an integer in "
                       r"\[0, 4294967295\], got -5"):
        notebooks.check_run_parameters([nb01], {"old_blocks_time_ms": [0, -5]})
    with pytest.raises(ValueError, match="set by --quick"):
        notebooks.check_run_parameters([nb01], {"quick": True})


@pytest.mark.parametrize("text, value", [
    ("1000", 1000), ("0.5", 0.5), ("True", True), ("None", None), ("[0, 1000]", [0, 1000]),
    ("'4G'", "4G"), ("4G", "4G"), ("mysql57", "mysql57"), ("[0, 1", "[0, 1")])
def test_parse_parameter_reads_a_literal_or_keeps_the_text(text, value):
    assert notebooks.parse_parameter(text) == value


def test_cli_refuses_a_bad_parameter_before_running_anything(tmp_path, monkeypatch, capsys):
    from bufsim.cli import main
    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path / "build"))
    rc = main(["notebooks", "run", "--no-progress", "-p", "old_blocks_pct", "[5]", "01"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "'old_blocks_pct' is not a parameter of 01_ssb_old_blocks_time" in err
    assert "did you mean 'old_blocks_pcts'" in err
    assert not (tmp_path / "build" / "notebooks").exists()   # nothing ran


def test_html_summary_shows_claims_tables_and_embedded_figures(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path))
    write_claims("01_x", [{"claim": "Q1.1 gets within 10%", "holds": True},
                          {"claim": "4G Run1 within 25% <b>", "holds": False}])
    write_claims("02_x", [{"claim": "a", "holds": True, "document_excludes": False},
                          {"claim": "b", "holds": False, "document_excludes": True},
                          {"claim": "c", "holds": False, "document_excludes": False}])
    write_table("06_x", pd.DataFrame({"check": ["a", "b"], "holds": [True, None]}))
    import altair as alt
    figs = tmp_path / "figs"
    figures.write_figure(alt.Chart(pd.DataFrame({"a": [1, 2]})).mark_point().encode(x="a"),
                         "f1", directory=figs)
    md = notebooks.write_summary(None, path=tmp_path / "summary.md",
                                 results_dir=tmp_path / "results", figures_dir=figs)
    html = md.with_suffix(".html").read_text()
    assert "1 held, 0 excluded by the document, 1 do not hold, of 2 claims." in html
    assert "1 held, 0 excluded by the document, 0 do not hold, of 1 claims." in html, \
        "a row without a verdict is not counted"
    assert "1 held, 1 excluded by the document, 1 do not hold, of 3 claims." in html
    assert ('<tr class="excluded"><td>b</td><td>true</td>'
            '<td class="verdict">excluded by the document</td></tr>') in html
    assert '<tr class="fails"><td>c</td>' in html
    assert "1 held, 1 excluded by the document, 1 do not hold, of 3 claims." in md.read_text()
    assert '<tr class="unjudged"><td>b</td><td class="verdict"></td></tr>' in html
    assert '<tr class="holds"><td>Q1.1 gets within 10%</td><td class="verdict">holds</td></tr>' in html
    assert "4G Run1 within 25% &lt;b&gt;</td><td class=\"verdict\">does not hold" in html
    assert html.count('src="data:image/png;base64,') == 1 and 'id="f1"' in html


def test_committed_figures_are_at_most_2000_px_wide():
    pngs = sorted(paths.committed_figures_dir().glob("*.png"))
    assert pngs, "no committed figures"
    wide = {p.name: figures.png_size(p.read_bytes())[0] for p in pngs}
    assert {k: w for k, w in wide.items() if w > 2000} == {}


def test_one_numba_cache_folder_for_make_jupyter_and_papermill():
    folder = _numba_cache.cache_dir()
    assert folder.parent == paths.repo_root() / ".numba_cache"
    script = subprocess.run([sys.executable, str(paths.repo_root() / "bufsim" / "_numba_cache.py")],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert script == str(folder), "the Makefile runs this script"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    kernel = subprocess.run([sys.executable, "-c", "import os, bufsim; print(os.environ['NUMBA_CACHE_DIR'])"],
                            capture_output=True, text=True, check=True, env=env).stdout.strip()
    assert kernel == str(folder), "a JupyterLab kernel (no NUMBA_CACHE_DIR) uses the same folder"
    makefile = (paths.repo_root() / "Makefile").read_text()
    assert "NUMBA_CACHE_DIR := $(shell $(PYTHON) bufsim/_numba_cache.py)" in makefile


def test_cache_folder_follows_kernel_sources(tmp_path):
    pkg = tmp_path / "bufsim"
    pkg.mkdir()
    (pkg / "k.py").write_text("import numba\n")
    (pkg / "w.py").write_text("x = 1\n")
    h1 = _numba_cache.source_hash(pkg)
    (pkg / "w.py").write_text("x = 2\n")
    assert _numba_cache.source_hash(pkg) == h1, "a module without numba does not count"
    (pkg / "k.py").write_text("import numba  # edited\n")
    assert _numba_cache.source_hash(pkg) != h1


def test_setup_says_when_the_first_replay_will_compile(tmp_path, monkeypatch, capsys):
    """Under the setup cell, one line says that the first replay compiles its kernel
    when it is not compiled yet (a minute of silence otherwise), and nothing when it is."""
    from bufsim import engine
    monkeypatch.setattr(engine, "compiled", lambda c: c == "lru")
    notebooks.setup("99_t", output_dir=str(tmp_path))
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("bufsim: the innodb replay kernel is not compiled")
    monkeypatch.setattr(engine, "compiled", lambda c: c == "innodb")   # lru: not every notebook's
    notebooks.setup("99_t", output_dir=str(tmp_path))
    assert capsys.readouterr().out == ""
    monkeypatch.setattr(engine, "compiled", lambda c: True)
    notebooks.setup("99_t", output_dir=str(tmp_path))
    assert capsys.readouterr().out == ""


def test_batch_run_says_when_its_first_notebook_will_compile(tmp_path, monkeypatch, capsys):
    """``bufsim notebooks run`` (run_notebooks) says on stderr, before the first
    notebook, that its first replay compiles the kernels when they are not compiled
    yet, where the progress bar would otherwise sit still for a minute."""
    import nbformat

    from bufsim import engine
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nbformat.write(nb, str(tmp_path / "99_tiny.ipynb"))
    for answer, shown in ((False, True), (True, False)):
        monkeypatch.setattr(engine, "compiled", lambda c, a=answer: a)
        runs = notebooks.run_notebooks(["99"], progress=False, notebooks_dir=tmp_path,
                                       output_dir=tmp_path / "out")
        assert [r.ok for r in runs] == [True]
        lines = [ln for ln in capsys.readouterr().err.splitlines() if "not compiled yet" in ln]
        assert len(lines) == (1 if shown else 0)
        assert not shown or "the innodb replay kernel is not compiled yet" in lines[0]


def test_batch_run_kernels_talk_over_unix_sockets(tmp_path, capfd):
    """The runner's kernels use IPC transport in a temporary folder (no TCP port, and
    no ipykernel warning about unencrypted TCP on the terminal at every notebook)."""
    import nbformat
    src = ("from ipykernel.kernelapp import IPKernelApp\n"
           "app = IPKernelApp.instance()\n"
           "print(app.transport, app.ip)")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src)])
    nbformat.write(nb, str(tmp_path / "98_transport.ipynb"))
    runs = notebooks.run_notebooks(["98"], progress=False, notebooks_dir=tmp_path,
                                   output_dir=tmp_path / "out")
    assert [r.ok for r in runs] == [True], runs[0].error
    out = nbformat.read(str(runs[0].output), as_version=4).cells[0].outputs[0]["text"].split()
    assert out[0] == "ipc" and os.path.isabs(out[1]) and "bufsim-ipc-" in out[1]
    assert not os.path.exists(os.path.dirname(out[1]))   # removed after the run
    assert "without encryption" not in capfd.readouterr().err
