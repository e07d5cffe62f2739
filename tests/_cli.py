"""The ``bufsim`` command line in this process: :func:`bufsim.cli.main` with its output
captured, for tests that check output and exit status (no interpreter start, numba
import and kernel-cache load of a ``python -m bufsim`` child, 1-3 s of CPU each).

Tests of the entry point itself (the console script, a signal, a closed pipe, a fresh
interpreter's cache) still start a real process.
"""
from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass


@dataclass
class Completed:
    """What :func:`subprocess.run` would return, as far as the tests read it."""
    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args, cwd=None) -> Completed:
    """``bufsim ARGS`` in this process (from folder ``cwd`` if given): the exit status
    ``main`` returns or raises (``SystemExit``, as argparse does), stdout and stderr."""
    from bufsim.cli import main

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        os.chdir(here)
    return Completed(argv, code, out.getvalue(), err.getvalue())
