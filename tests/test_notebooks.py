"""Every notebook runs end to end in quick mode (outputs go to a temporary folder)."""
import pytest

from bufsim import notebooks, paths

NOTEBOOKS = notebooks.discover_notebooks()


def test_there_are_notebooks():
    assert any(p.stem == "00_quickstart" for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_quick_mode(path, tmp_path, monkeypatch):
    monkeypatch.setenv(paths.FIGURES_ENV_VAR, str(tmp_path / "figures"))
    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path / "build"))
    runs = notebooks.run_notebooks([path.stem], quick=True, progress=False)
    assert [r.ok for r in runs] == [True], runs[0].error
    figures = list((tmp_path / "figures").glob("*.png"))
    assert figures, "the notebook saved no figure"
    assert {f.with_suffix(".svg").exists() for f in figures} == {True}
