"""Every notebook runs in quick mode with non-default parameters, and its outputs follow them.

Each notebook is executed once (papermill, quick mode) with parameters that differ from its
defaults; the test then reads the figures' data from the executed notebook (every figure is
an inline ``application/vnd.vegalite.v5+json`` output named by ``usermeta.bufsim_figure``)
or the tables it wrote, and checks that they hold the requested settings. 00 is run as a
user would by hand (plain papermill, no runner, no environment variables) in a copy of the
checkout, which must be left with a clean ``git status``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from bufsim import figures, notebooks, paths

NOTEBOOKS = notebooks.discover_notebooks()
VEGALITE = "application/vnd.vegalite.v5+json"


def test_there_are_notebooks():
    assert any(p.stem == "00_quickstart" for p in NOTEBOOKS)
    assert any(p.stem == "08_explorer" for p in NOTEBOOKS)


def _charts(executed: Path) -> dict[str, dict]:
    """Figure name -> Vega-Lite spec of every chart output of an executed notebook."""
    nb = nbformat.read(str(executed), as_version=4)
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            spec = o.get("data", {}).get(VEGALITE)
            if spec is not None:
                name = spec.get("usermeta", {}).get("bufsim_figure")
                assert name, f"a chart output without a figure name: {str(spec)[:200]}"
                out[name] = spec
    return out


def _rows(spec: dict) -> pd.DataFrame:
    """Every inline data row of a spec, as one frame."""
    frames = [pd.DataFrame(rows) for rows in spec.get("datasets", {}).values()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _check_outputs(executed: Path, figures_dir: Path, notebook: str) -> dict[str, dict]:
    """The acceptance points every notebook shares; returns the charts."""
    nb = nbformat.read(str(executed), as_version=4)
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            assert o.get("output_type") != "error", f"cell {i}: {o.get('ename')}: {o.get('evalue')}"
            text = o.get("data", {}).get("text/plain", "")
            assert "PosixPath(" not in text, f"cell {i} shows a bare dict of paths: {text[:200]}"
    charts = _charts(executed)
    saved = {p.stem for p in figures_dir.glob("*.png")}
    assert saved, "the notebook saved no figure"
    assert set(charts) == saved, "every saved figure is shown inline, and only those"
    for png in figures_dir.glob("*.png"):
        data = png.read_bytes()
        assert figures.png_size(data)[0] <= figures.MAX_PNG_WIDTH
        meta = json.loads(figures.read_png_text(data)[figures.PROVENANCE_KEY])
        assert meta["quick"] is True and meta["notebook"] == notebook
        assert png.with_suffix(".svg").is_file()
    for name, spec in charts.items():
        title = json.dumps(spec.get("title", ""))
        assert figures.QUICK_MARK in title, f"{name}: a quick-mode figure must say so"
    return charts


def _values(spec: dict, column: str) -> set:
    return set(_rows(spec)[column].dropna().tolist())


# notebook -> (non-default parameters, check(charts, results_dir))
def _check_01(charts, results):
    assert _values(charts["01_sensitivity_old_blocks_time"], "x") == {0.0, 250.0}
    assert _values(charts["01_sensitivity_pool_size"], "x") == {"64M", "1G"}
    oos = pd.read_csv(results / "01_ssb_table_out_of_sample.csv")
    assert len(oos) == 10 and not oos.fitted.any() and set(oos.metric) == {"cold", "run1-3"}
    assert set(_rows(charts["01_ssb_out_of_sample"]).phase) == {"cold", "run1-3"}
    ranges = pd.read_csv(results / "01_ssb_prediction_ranges.csv")
    assert len(ranges) == 20 and not ranges.fitted.any()
    assert set(ranges.metric) == {f"{p} {e}" for p in ("cold", "run1-3") for e in ("low", "high")}
    ranges["phase"] = ranges.metric.str.split().str[0]
    ranges["end"] = ranges.metric.str.split().str[1]
    ends = ranges.pivot(index=["config", "phase"], columns="end", values="simulated")
    assert len(ends) == 10 and (ends["low"] <= ends["high"] + 1e-9).all()
    assert set(_rows(charts["01_ssb_prediction_ranges"]).fit) == {"least squares", "minimax"}
    twins = _rows(charts["01_ssb_twins"])
    assert set(twins["held out"]) == {"alone", "with its twin"}
    assert {"5.5.30 4G t=0", "5.6.10 4G t=1000"} <= set(twins.config)     # the same counts at any scale
    req = _rows(charts["01_ssb_twin_requirement"])
    assert set(req.estimator) == {"least squares", "minimax"} and set(req.phase) == {"cold", "run1-3"}
    assert {"5.5.30 4G t=0", "5.6.10 4G t=1000"} <= set(req.config)
    assert (req.twin_needs_low < req.twin_needs_high).all()


def _check_02(charts, results):
    rows = _rows(charts["02_side_load_old_blocks_time_sweep"])
    assert set(rows.old_blocks_time_ms) == {0, 5, 1000}


def _check_03(charts, results):
    assert _values(charts["03_tps_vs_users"], "users") == {1, 8, 64}
    assert pd.read_csv(results / "03_bp_instance_contention.claims.csv")["holds"].dtype == bool


def _check_04(charts, results):
    assert _values(charts["04_instance_sensitivity"], "instances") == {1, 2, 8}
    servers = _values(charts["04_rein_tps_vs_users"], "server")
    assert servers == {"MySQL 5.1, innodb_buffer_pool_instances=1",
                       "MySQL 5.5, innodb_buffer_pool_instances=1",
                       "MySQL 5.5, innodb_buffer_pool_instances=2"}


def _check_05(charts, results):
    rows = _rows(charts["05_bka_sensitivity"])
    assert set(rows[rows.axis == "pool size (MB)"].x) == {16, 50, 128}
    assert set(rows[rows.axis.notna() & (rows.axis != "pool size (MB)")].x) == {64, 256}


def _check_06(charts, results):
    rows = _rows(charts["06_mva_vs_des"])
    assert set(rows.users) == {1, 4, 16}
    assert _values(charts["06_che_vs_replay"], "alpha") == {1.1}


def _check_08(charts, results):
    counters = pd.read_csv(results / "08_explorer.csv").iloc[0]
    assert counters["innodb_old_blocks_time (ms)"] == 0 and counters["pool (pages)"] == 1500
    assert counters["innodb_buffer_pool_instances"] == 2
    # InnoDB counts "not made young" only while old_blocks_time > 0
    assert counters["PAGES_NOT_MADE_YOUNG"] == 0 and counters["PAGES_MADE_YOUNG"] > 0
    assert "innodb_old_blocks_time=0" in json.dumps(charts["08_explorer_timeline"]["title"])


CASES = {
    "01_ssb_old_blocks_time": ({"old_blocks_time_ms": "[0, 250]", "pool_sizes": ["64M", "1G"],
                                "old_blocks_pcts": [20]}, _check_01),
    "02_side_load_mysqldump": ({"old_blocks_time_ms": [0, 5, 1000]}, _check_02),
    "03_bp_instance_contention": ({"users": [1, 8, 64], "transactions": 2_000}, _check_03),
    "04_bp_instances_hot_uniform": ({"instances": [1, 2], "instance_sweep": [1, 2, 8]}, _check_04),
    "05_dbt3_mrr_bka": ({"pool_sizes_mb": [16, 128], "join_buffer_sizes_kb": [64, 256]}, _check_05),
    "06_analytic_vs_simulated": ({"users": [1, 4, 16], "zipf_alphas": [1.1]}, _check_06),
    "08_explorer": ({"old_blocks_time": 0, "pool_size": 1500, "instances": 2}, _check_08),
}


def test_every_notebook_has_a_case():
    assert {p.stem for p in NOTEBOOKS} - {"00_quickstart"} <= set(CASES) | {
        p.stem for p in NOTEBOOKS if p.stem.startswith(("07_", "09_"))}, \
        "add a case for the new notebook"


@pytest.mark.parametrize("stem", sorted(CASES))
def test_notebook_follows_its_parameters(stem, tmp_path, monkeypatch):
    if not (paths.notebooks_dir() / f"{stem}.ipynb").is_file():
        pytest.skip(f"{stem} is not in this checkout")
    params, check = CASES[stem]
    out = tmp_path / "out"
    monkeypatch.setenv(paths.FIGURES_ENV_VAR, str(tmp_path / "never-figures"))
    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path / "build"))
    runs = notebooks.run_notebooks([stem], quick=True, progress=False,
                                   parameters={**params, "output_dir": str(out)})
    assert [r.ok for r in runs] == [True], runs[0].error
    charts = _check_outputs(runs[0].output, out / "figures", stem)
    assert not (tmp_path / "never-figures").exists(), "output_dir wins over the environment"
    check(charts, out / "results")


def test_bad_parameter_stops_the_notebook_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path / "build"))
    runs = notebooks.run_notebooks(["00_quickstart"], quick=True, progress=False,
                                   parameters={"pool_sizes": "[400, -3]"})
    assert not runs[0].ok
    assert "pool_sizes[1]" in runs[0].error and "pool size" in runs[0].error


def _copy_checkout(dest: Path) -> None:
    root = paths.repo_root()
    files = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True,
                           check=True).stdout.decode().split("\0")
    for f in filter(None, files):
        src = root / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    git = ["git", "-C", str(dest), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "copy"], check=True)


def test_hand_run_leaves_git_status_clean(tmp_path):
    """00 with plain papermill, as a user would run it, in a copy of the checkout."""
    if shutil.which("git") is None or not (paths.repo_root() / ".git").exists():
        pytest.skip("not a git checkout")
    pm = pytest.importorskip("papermill")
    copy = tmp_path / "checkout"
    _copy_checkout(copy)
    before = {p.name: p.read_bytes() for p in (copy / "figures").glob("*")}
    env = {k: v for k, v in os.environ.items()
           if k not in (paths.FIGURES_ENV_VAR, paths.BUILD_ENV_VAR)}
    env[paths.ROOT_ENV_VAR] = str(copy)
    executed = tmp_path / "00_out.ipynb"
    code = (
        "import papermill as pm, sys; pm.execute_notebook(sys.argv[1], sys.argv[2], "
        "parameters={'quick': True, 'pool_sizes': [400, 3000], 'n_gets': 100000}, "
        "kernel_name='python3', cwd=sys.argv[3], progress_bar=False)"
    )
    assert pm is not None
    subprocess.run([sys.executable, "-c", code, str(copy / "notebooks/00_quickstart.ipynb"),
                    str(executed), str(copy / "notebooks")], env=env, check=True, timeout=600)
    status = subprocess.run(["git", "-C", str(copy), "status", "--porcelain"],
                            capture_output=True, text=True, check=True).stdout
    assert status == "", f"a hand run changed the checkout:\n{status}"
    assert {p.name: p.read_bytes() for p in (copy / "figures").glob("*")} == before
    charts = _check_outputs(executed, copy / "build" / "figures", "00_quickstart")
    assert set(_rows(charts["00_quickstart_hit_ratio"]).pool_pages) == {400, 3000}


@pytest.mark.live
def test_live_notebook_writes_its_validation_rows(tmp_path, monkeypatch):
    """07 against a private MariaDB server (quick grid), with a non-default preset: the rows
    carry the issue-16 columns, at least 40 of them, and the figures follow the house rules."""
    from tests._live import require_server

    require_server()
    out = tmp_path / "out"
    monkeypatch.setenv(paths.FIGURES_ENV_VAR, str(tmp_path / "never-figures"))
    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path / "build"))
    runs = notebooks.run_notebooks(["07_live_server_validation"], quick=True, progress=False,
                                   parameters={"preset": "mysql57", "output_dir": str(out),
                                               "recheck": 1})
    assert [r.ok for r in runs] == [True], runs[0].error
    charts = _check_outputs(runs[0].output, out / "figures", "07_live_server_validation")
    # the repeat check ran (quick mode: 2 runs of each setting), one point per server run
    repeats = _rows(charts["07_live_repeats"])
    assert set(repeats.repeat) == {0, 1} and set(repeats.plan) == {"scan", "star"}
    rows = pd.read_csv(out / "results" / "07_live_validation.csv")
    assert len(rows) >= 40 and not rows.fitted.any() and rows.holds.dtype == bool
    for counter in ("NUMBER_PAGES_GET", "NUMBER_PAGES_READ", "PAGES_MADE_YOUNG",
                    "PAGES_NOT_MADE_YOUNG"):
        assert rows.metric.str.endswith(counter).any(), counter
    # the rows that miss, run again once (the quick grid's 20 runs are within RECHECK_LIMIT):
    # one claim for the grid, one per missing row
    claims = pd.read_csv(out / "results" / "07_live_validation.claims.csv")
    assert claims.claim[0].startswith("every row of the grid holds in its run")
    assert len(claims) == 1 + int((~rows.holds).sum()) and claims.holds.dtype == bool
    assert claims.holds[0] == claims.holds[1:].all()
    print(rows.assign(counter=rows.metric.str.split().str[-1])
          .groupby("counter").holds.agg(["size", "sum"]))


def test_bad_live_parameter_stops_notebook_07(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path / "build"))
    runs = notebooks.run_notebooks(["07_live_server_validation"], quick=True, progress=False,
                                   parameters={"grid": "huge"})
    assert not runs[0].ok and "grid" in runs[0].error and "'quick'" in runs[0].error


@pytest.mark.live
def test_live_trace_notebook_writes_rows_that_hold(tmp_path, monkeypatch):
    """09 against a private MariaDB server (quick mode): per-statement gets of the compiled
    SQL beside the server's, and the compiled reads replayed at two pool sizes; every row
    holds, and both figures follow the house rules."""
    from tests._live import require_server

    require_server()
    out = tmp_path / "out"
    monkeypatch.setenv(paths.FIGURES_ENV_VAR, str(tmp_path / "never-figures"))
    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path / "build"))
    runs = notebooks.run_notebooks(["09_live_trace"], quick=True, progress=False,
                                   parameters={"output_dir": str(out), "pool_sizes": ["6M", "10M"]})
    assert [r.ok for r in runs] == [True], runs[0].error
    charts = _check_outputs(runs[0].output, out / "figures", "09_live_trace")
    assert set(_rows(charts["09_live_trace_pools"]).pool) == {"6M", "10M"}
    rows = pd.read_csv(out / "results" / "09_live_trace.csv")
    assert rows.holds.dtype == bool and rows.holds.all(), rows[~rows.holds]
    assert not rows.fitted.any() and len(rows) >= 10
    assert rows.metric.str.contains("point_select page gets").any()
    assert rows.metric.str.startswith("replay NUMBER_PAGES_READ").sum() == 2


def test_bad_parameter_stops_notebook_09(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path / "build"))
    runs = notebooks.run_notebooks(["09_live_trace"], quick=True, progress=False,
                                   parameters={"statements": 0})
    assert not runs[0].ok and "statements" in runs[0].error
