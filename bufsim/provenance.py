"""Where a notebook's outputs go and what they say about how they were made.

A notebook calls :func:`bufsim.notebooks.setup` once, right after its ``parameters``
cell. That checks the parameters and installs a :class:`RunContext` here; from then on
:func:`bufsim.figures.save_figure` and :func:`bufsim.results.write_results` write into
the context's directories, mark quick-mode figures in their title and stamp every file
with :func:`provenance` (bufsim version, git commit, notebook and parameters).

Without a context (a script, a test) they write under :func:`bufsim.paths.figures_dir`
and :func:`bufsim.paths.results_dir` and record only the version and commit.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bufsim import paths

__all__ = ["RunContext", "current_context", "git_commit", "provenance", "provenance_json",
           "set_context"]


@dataclass(frozen=True)
class RunContext:
    """The outputs and parameters of one notebook run.

    Attributes
    ----------
    notebook : str or None
        The notebook's stem, e.g. ``"01_ssb_old_blocks_time"``.
    quick : bool
        Quick mode (small sizes): figure titles say so.
    figures_dir, results_dir : pathlib.Path
        Where figures and result tables go.
    parameters : dict
        The checked parameters, as recorded in every output.
    """

    notebook: str | None
    quick: bool
    figures_dir: Path
    results_dir: Path
    parameters: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        """The checked value of parameter ``name``."""
        return self.parameters[name]


_CONTEXT: RunContext | None = None


def set_context(context: RunContext | None) -> None:
    """Install ``context`` for the outputs that follow (None removes it)."""
    global _CONTEXT
    _CONTEXT = context


def current_context() -> RunContext | None:
    """Return the context installed by :func:`set_context`, or None."""
    return _CONTEXT


@functools.cache
def _git_commit(root: str) -> str:
    try:
        out = subprocess.run(
            ["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True,
            timeout=10, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--", "bufsim"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out + ("+dirty" if dirty else "") if out else "unknown"


def git_commit() -> str:
    """Return the checkout's ``HEAD`` commit (``+dirty`` if ``bufsim/`` has uncommitted
    edits), or ``"unknown"`` outside a git checkout."""
    try:
        root = paths.repo_root()
    except (FileNotFoundError, ValueError):
        return "unknown"
    return _git_commit(str(root))


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return repr(value)


def provenance(**extra: Any) -> dict[str, Any]:
    """Return what every output records about how it was made.

    Parameters
    ----------
    **extra
        Added as they are (e.g. ``figure="01_x"``).

    Returns
    -------
    dict
        ``bufsim_version``, ``git_commit``, and with a context installed ``notebook``,
        ``quick`` and ``parameters``; JSON-serialisable.
    """
    from bufsim import __version__

    out: dict[str, Any] = {"bufsim_version": __version__, "git_commit": git_commit()}
    ctx = current_context()
    if ctx is not None:
        out.update(notebook=ctx.notebook, quick=ctx.quick, parameters=_plain(ctx.parameters))
    out.update(_plain(extra))
    return out


def provenance_json(**extra: Any) -> str:
    """:func:`provenance` as one line of ASCII JSON."""
    return json.dumps(provenance(**extra), sort_keys=True, ensure_ascii=True)


def output_dirs() -> tuple[Path, Path]:
    """Return ``(figures_dir, results_dir)`` of the current context, or the defaults of
    :mod:`bufsim.paths`; both created if missing."""
    ctx = current_context()
    if ctx is None:
        return paths.figures_dir(), paths.results_dir()
    ctx.figures_dir.mkdir(parents=True, exist_ok=True)
    ctx.results_dir.mkdir(parents=True, exist_ok=True)
    return ctx.figures_dir, ctx.results_dir
