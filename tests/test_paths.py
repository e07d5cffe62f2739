"""Tests for bufsim.paths: the repository root and atomic writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from bufsim import paths

CHECKOUT = Path(__file__).resolve().parents[1]


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_repo_root_is_the_checkout(monkeypatch):
    monkeypatch.delenv(paths.ROOT_ENV_VAR, raising=False)
    root = paths.repo_root()
    assert root == CHECKOUT
    assert (root / "pyproject.toml").is_file()
    assert (root / "bufsim" / "paths.py").is_file()


def test_repo_root_independent_of_working_directory(monkeypatch, tmp_path):
    monkeypatch.delenv(paths.ROOT_ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    assert paths.repo_root() == CHECKOUT


def test_env_var_overrides_root_and_every_directory(monkeypatch, tmp_path):
    monkeypatch.setenv(paths.ROOT_ENV_VAR, str(tmp_path))
    assert paths.repo_root() == tmp_path.resolve()
    assert paths.data_dir() == tmp_path / "data"
    assert paths.notebooks_dir() == tmp_path / "notebooks"
    assert paths.figures_dir() == tmp_path / "build" / "figures", "hand runs never write figures/"
    assert paths.committed_figures_dir() == tmp_path / "figures"
    assert paths.build_dir() == tmp_path / "build"
    assert paths.results_dir() == tmp_path / "build" / "results"


def test_output_dirs_are_created_input_dirs_are_not(monkeypatch, tmp_path):
    monkeypatch.setenv(paths.ROOT_ENV_VAR, str(tmp_path))
    paths.results_dir()
    paths.figures_dir()
    paths.data_dir()
    paths.notebooks_dir()
    assert (tmp_path / "build" / "results").is_dir()
    assert (tmp_path / "build" / "figures").is_dir()
    assert not (tmp_path / "figures").exists()
    assert not (tmp_path / "data").exists()
    assert not (tmp_path / "notebooks").exists()


def test_env_var_must_be_an_existing_directory(monkeypatch, tmp_path):
    missing = tmp_path / "nope"
    monkeypatch.setenv(paths.ROOT_ENV_VAR, str(missing))
    with pytest.raises(ValueError, match="BUFSIM_ROOT"):
        paths.repo_root()


def test_empty_env_var_falls_back_to_discovery(monkeypatch):
    monkeypatch.setenv(paths.ROOT_ENV_VAR, "")
    assert paths.repo_root() == CHECKOUT


def test_atomic_path_replaces_on_success(tmp_path):
    target = tmp_path / "sub" / "out.txt"
    with paths.atomic_path(target) as tmp:
        assert tmp.parent == target.parent
        assert tmp != target
        assert not tmp.exists()
        tmp.write_text("new")
        assert not target.exists(), "target must not appear before the body ends"
    assert target.read_text() == "new"
    assert _leftovers(target.parent) == []


def test_atomic_path_keeps_old_file_and_removes_temp_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="boom"):
        with paths.atomic_path(target) as tmp:
            tmp.write_text("half-writ")
            raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert _leftovers(tmp_path) == []


def test_atomic_path_requires_the_body_to_write(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(FileNotFoundError, match="nothing was written"):
        with paths.atomic_path(target):
            pass
    assert target.read_text() == "old"


def test_atomic_path_overwrites_existing_file(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with paths.atomic_path(target) as tmp:
        tmp.write_bytes(b"\x00new")
    assert target.read_bytes() == b"\x00new"


def test_atomic_write_returns_path_and_propagates_errors(tmp_path):
    target = tmp_path / "note.txt"
    out = paths.atomic_write(str(target), lambda p: p.write_text("hi"))
    assert out == target
    assert target.read_text() == "hi"

    def broken(p: Path) -> None:
        p.write_text("partial")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        paths.atomic_write(target, broken)
    assert target.read_text() == "hi"
    assert _leftovers(tmp_path) == []


def test_atomic_path_temp_names_are_unique(tmp_path):
    target = tmp_path / "x.txt"
    with paths.atomic_path(target) as a, paths.atomic_path(target) as b:
        assert a != b
        a.write_text("a")
        b.write_text("b")
    # the outer context finishes last, so its content wins
    assert target.read_text() == "a"
