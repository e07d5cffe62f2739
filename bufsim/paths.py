"""Where bufsim reads its inputs and writes its outputs.

Every path the package, the notebooks and the tests use goes through this
module, so that they work from any working directory. The repository root is
found once, by walking up from this file to the directory whose
``pyproject.toml`` names the ``bufsim`` project; the environment variable
``BUFSIM_ROOT`` overrides it (the Makefile sets it, and so can a user whose
package is installed outside a checkout).

Outputs are written atomically: :func:`atomic_path` hands out a temporary
sibling name and moves the finished file into place with :func:`os.replace`,
so a reader never sees a half-written file and a failed write leaves the
previous file untouched.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = [
    "ROOT_ENV_VAR",
    "atomic_path",
    "atomic_write",
    "build_dir",
    "committed_figures_dir",
    "data_dir",
    "figures_dir",
    "notebooks_dir",
    "repo_root",
    "results_dir",
]

#: Name of the environment variable that overrides the repository root.
ROOT_ENV_VAR = "BUFSIM_ROOT"

_PROJECT_NAME = "bufsim"


def _is_project_root(directory: Path) -> bool:
    """Tell whether ``directory`` holds the ``pyproject.toml`` of bufsim."""
    candidate = directory / "pyproject.toml"
    if not candidate.is_file():
        return False
    try:
        with candidate.open("rb") as fh:
            meta = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return meta.get("project", {}).get("name") == _PROJECT_NAME


def _walk_up(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if _is_project_root(directory):
            return directory
    return None


@functools.cache
def _discovered_root() -> Path:
    """Walk up from this file (then from the working directory) once."""
    found = _walk_up(Path(__file__).resolve().parent)
    if found is None:
        found = _walk_up(Path.cwd().resolve())
    if found is None:
        raise FileNotFoundError(
            "could not find the bufsim repository root: no pyproject.toml with "
            f"name = {_PROJECT_NAME!r} above {Path(__file__).resolve().parent} or "
            f"the working directory; set the environment variable {ROOT_ENV_VAR} "
            "to the checkout's directory"
        )
    return found


def repo_root() -> Path:
    """Return the root directory of the bufsim checkout.

    Returns
    -------
    pathlib.Path
        The absolute path in the environment variable ``BUFSIM_ROOT`` when it
        is set and non-empty, else the directory holding bufsim's
        ``pyproject.toml`` (found once per process by walking up from this
        file, then from the working directory).

    Raises
    ------
    ValueError
        If ``BUFSIM_ROOT`` is set but is not an existing directory.
    FileNotFoundError
        If ``BUFSIM_ROOT`` is unset and no bufsim ``pyproject.toml`` is found.
    """
    override = os.environ.get(ROOT_ENV_VAR, "")
    if override:
        root = Path(override).expanduser()
        if not root.is_dir():
            raise ValueError(
                f"{ROOT_ENV_VAR}={override!r} is not an existing directory; "
                "set it to the bufsim checkout or unset it"
            )
        return root.resolve()
    return _discovered_root()


def _output_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def data_dir() -> Path:
    """Return ``ROOT/data``: reported numbers (CSV) and small inputs."""
    return repo_root() / "data"


def notebooks_dir() -> Path:
    """Return ``ROOT/notebooks``: one notebook per experiment."""
    return repo_root() / "notebooks"


#: Environment variables that redirect the outputs (the tests run the notebooks in
#: quick mode with these pointing at a temporary folder, so that the figures and
#: results of a full run are left as they are).
FIGURES_ENV_VAR = "BUFSIM_FIGURES_DIR"
BUILD_ENV_VAR = "BUFSIM_BUILD_DIR"


def committed_figures_dir() -> Path:
    """Return ``ROOT/figures``: the committed figures, refreshed only by ``make reproduce``
    (``bufsim notebooks run`` without ``--quick``). Not created."""
    return repo_root() / "figures"


def figures_dir() -> Path:
    """Return where figures are exported; created if missing.

    ``$BUFSIM_FIGURES_DIR`` when set (the batch runner sets it to ``ROOT/figures`` for a full
    run), else ``BUILD/figures`` with ``BUILD`` from :func:`build_dir`: a notebook run by hand
    (JupyterLab, plain papermill) never overwrites the committed figures.
    """
    override = os.environ.get(FIGURES_ENV_VAR, "")
    return _output_dir(Path(override).resolve() if override else build_dir() / "figures")


def build_dir() -> Path:
    """Return ``ROOT/build`` (or ``$BUFSIM_BUILD_DIR``), for executed notebooks, results and
    the summary; created if missing."""
    override = os.environ.get(BUILD_ENV_VAR, "")
    return _output_dir(Path(override).resolve() if override else repo_root() / "build")


def results_dir() -> Path:
    """Return ``ROOT/build/results``, one CSV per notebook; created if missing."""
    return _output_dir(build_dir() / "results")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary sibling of ``path`` and move it into place on success.

    The temporary name is in the same directory as ``path`` (so the final
    :func:`os.replace` is atomic) and starts with a dot. The parent directory
    is created if missing. If the body raises, the temporary file is removed,
    ``path`` is left as it was and the exception propagates.

    Parameters
    ----------
    path : str or os.PathLike
        The final location of the file.

    Yields
    ------
    pathlib.Path
        The temporary path to write to. It does not exist yet; the body must
        create it as a regular file.

    Raises
    ------
    FileNotFoundError
        If the body finished without creating the temporary file (``path`` is
        then left untouched).

    Examples
    --------
    >>> with atomic_path(tmp / "table.csv") as tmp_csv:  # doctest: +SKIP
    ...     frame.to_csv(tmp_csv, index=False)
    """
    final = Path(path)
    if final.name in ("", ".", ".."):
        raise ValueError(f"path must name a file, got {str(path)!r}")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.{secrets.token_hex(6)}.tmp")
    try:
        yield tmp
        if not tmp.is_file():
            raise FileNotFoundError(
                f"nothing was written to the temporary file {tmp} for {final}; "
                f"{final} was left unchanged"
            )
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def atomic_write(
    path: str | os.PathLike[str], write_fn: Callable[[Path], object]
) -> Path:
    """Write a file through ``write_fn`` and move it into place atomically.

    Parameters
    ----------
    path : str or os.PathLike
        The final location of the file.
    write_fn : callable
        Called once with a temporary :class:`pathlib.Path` in the same
        directory; it must create that file. Its return value is ignored.

    Returns
    -------
    pathlib.Path
        ``path`` as a :class:`pathlib.Path`.

    See Also
    --------
    atomic_path : the context-manager form.

    Examples
    --------
    >>> atomic_write(tmp / "note.txt", lambda p: p.write_text("hi"))  # doctest: +SKIP
    """
    with atomic_path(path) as tmp:
        write_fn(tmp)
    return Path(path)
