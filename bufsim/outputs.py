"""Outputs of a command: checked before any work, written together or not at all.

:func:`check_output` refuses an output path before anything runs (an unknown
suffix, a directory, a parent that is a file or cannot be written, the command's
own input).  :class:`Staged` writes every output of one command to temporary
names beside their targets and moves them into place only when all of them were
written; if anything fails, or the command is interrupted, every temporary is
removed and the user's files are left as they were.
"""
from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["check_output", "Staged"]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def check_output(path: str | os.PathLike | None, allowed: Sequence[str], what: str = "-o",
                 inputs: Iterable[str | os.PathLike] = ()) -> Path | None:
    """The output ``path`` as a Path, after checking that it can be written.

    Parameters
    ----------
    path : str or path-like or None
        The output file (None: no output, returned as None).
    allowed : sequence of str
        Allowed suffixes, lower case with the dot (``(".csv", ".parquet")``).
    what : str
        The option naming the path, for the message (``"-o"``, ``"--chart"``).
    inputs : iterable of paths
        The command's input files; the output may not be one of them.

    Raises
    ------
    ValueError
        Naming ``what`` and the path: a suffix not in ``allowed``; a directory;
        a missing folder whose nearest existing ancestor is a file; a folder
        that is not writable; an output that is one of ``inputs``.  Missing
        folders under a writable one are fine (they are created when writing).
    """
    if path is None:
        return None
    p = Path(path)
    if p.suffix.lower() not in allowed:
        raise ValueError(f"{what}: {str(path)!r} must end with {', '.join(allowed)}")
    if p.is_dir():
        raise ValueError(f"{what}: {str(path)!r} is a directory")
    for src in inputs:
        if src is not None and _same_file(p, Path(src)):
            raise ValueError(f"{what}: {str(path)!r} is the input {str(src)!r}; writing it "
                             "would overwrite the input (choose another file name)")
    parent = p.parent if str(p.parent) else Path(".")
    top = parent
    while not top.exists() and top != top.parent:
        top = top.parent
    if not top.is_dir():
        raise ValueError(f"{what}: cannot write {str(path)!r}: {str(top)!r} is a file, not a "
                         "folder")
    if not os.access(top, os.W_OK | os.X_OK):
        raise ValueError(f"{what}: cannot write {str(path)!r}: the folder {str(top)!r} is not "
                         "writable")
    return p


class Staged:
    """Every output of one command, written to temporary names and moved into
    place together.

    Use as a context manager: ask :meth:`file` for the temporary name of each
    output (or :meth:`folder` for a scratch folder beside it and :meth:`move` for
    the files in it), write them, and leave the block.  On a normal exit every
    temporary is moved onto its target (:func:`os.replace`, same folder, so each
    move is atomic); on an exception (KeyboardInterrupt included) nothing is moved
    and every temporary is removed.

    Examples
    --------
    >>> with Staged() as st:  # doctest: +SKIP
    ...     df.to_csv(st.file("out.csv"))
    ...     fig = st.folder("out.png")
    ...     save_figure(chart, "out", directory=fig)
    ...     st.move(fig / "out.png", "out.png"); st.move(fig / "out.svg", "out.svg")
    """

    def __init__(self):
        self._moves: list[tuple[Path, Path]] = []
        self._trash: list[Path] = []

    def file(self, final: str | os.PathLike) -> Path:
        """A temporary path beside ``final`` (created folders included); it is
        moved onto ``final`` when the block ends without an error."""
        final = Path(final)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(f".{final.name}.{secrets.token_hex(6)}.tmp")
        self._moves.append((tmp, final))
        self._trash.append(tmp)
        return tmp

    def folder(self, near: str | os.PathLike) -> Path:
        """A new empty scratch folder beside the file ``near`` (removed at the end)."""
        parent = Path(near).parent
        parent.mkdir(parents=True, exist_ok=True)
        d = Path(tempfile.mkdtemp(prefix=".bufsim-", suffix=".tmp", dir=parent))
        self._trash.append(d)
        return d

    def move(self, src: str | os.PathLike, final: str | os.PathLike) -> None:
        """Move ``src`` (written in a :meth:`folder`) onto ``final`` at the end."""
        self._moves.append((Path(src), Path(final)))

    def __enter__(self) -> Staged:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                for tmp, final in self._moves:
                    if not tmp.is_file():
                        raise FileNotFoundError(f"nothing was written for {final}; no output "
                                                "was changed")
                for tmp, final in self._moves:
                    os.replace(tmp, final)
        finally:
            for t in self._trash:
                if t.is_dir():
                    shutil.rmtree(t, ignore_errors=True)
                else:
                    try:
                        t.unlink()
                    except FileNotFoundError:
                        pass
