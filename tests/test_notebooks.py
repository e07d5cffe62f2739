"""Every notebook runs end to end in quick mode (outputs go to a temporary folder)."""
import pytest

from bufsim import notebooks, paths

NOTEBOOKS = notebooks.discover_notebooks()


def _params(paths_):
    """Notebook 07 needs a live MariaDB server: marked ``live``, skipped without one."""
    out = []
    for p in paths_:
        marks = [pytest.mark.live] if p.stem.startswith("07_live") else []
        out.append(pytest.param(p, id=p.stem, marks=marks))
    return out


def test_there_are_notebooks():
    assert any(p.stem == "00_quickstart" for p in NOTEBOOKS)


@pytest.mark.parametrize("path", _params(NOTEBOOKS))
def test_notebook_runs_in_quick_mode(path, tmp_path, monkeypatch):
    if path.stem.startswith("07_live"):
        from _live import require_server
        require_server()
    monkeypatch.setenv(paths.FIGURES_ENV_VAR, str(tmp_path / "figures"))
    monkeypatch.setenv(paths.BUILD_ENV_VAR, str(tmp_path / "build"))
    runs = notebooks.run_notebooks([path.stem], quick=True, progress=False)
    assert [r.ok for r in runs] == [True], runs[0].error
    figures = list((tmp_path / "figures").glob("*.png"))
    assert figures, "the notebook saved no figure"
    assert {f.with_suffix(".svg").exists() for f in figures} == {True}
