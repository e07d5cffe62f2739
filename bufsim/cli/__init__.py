"""The ``bufsim`` command line: replay, sweep, mrc, advise, convert, notebooks.

Each subcommand has ``--help``.  Exit status: 0 when it worked, 2 for bad input
or usage (a missing or malformed trace, an unknown column, a value out of
range, conflicting options, an output that cannot be written), 1 for a failure
while running, 130 after Ctrl-C, 141 when the reader of stdout went away
(``| head``).  An error is one line on stderr that names the argument (and, for
a file, the row and column); nothing is written then.  Outputs are checked
before any work (:func:`bufsim.outputs.check_output`) and the outputs of one
command are written to temporary names and moved into place together
(:class:`bufsim.outputs.Staged`), so an existing file is replaced only by a
complete new one, and a failure leaves none of them.

``bufsim.__main__`` is a thin door to :func:`main`.  One module per subcommand
group (``_replay.py``: replay and sweep; ``_mrc.py``, ``_advise.py``, ``_convert.py``,
``_live.py``, ``_notebooks.py``), each with its parser and its command; what they
share (argument types, output checks) is in ``_common.py``.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ._advise import add_advise
from ._common import CANONICAL_COLUMNS, TRACE_FORMATS, Parser, UsageError
from ._convert import add_convert
from ._live import add_live
from ._mrc import add_mrc
from ._notebooks import add_notebooks, cache_switch, run_outputs
from ._replay import add_replay, add_sweep

__all__ = ["main", "UsageError", "CANONICAL_COLUMNS", "TRACE_FORMATS"]

#: the names the notebooks' runner helpers had when this was one module (tests use them)
_run_outputs, _cache_switch = run_outputs, cache_switch


def _parser() -> argparse.ArgumentParser:
    from .. import __version__
    parser = Parser(prog="bufsim", description="bufsim: buffer-pool modelling suite. "
                    "Exit status: 0 ok, 1 a failure while running, 2 bad input or usage.")
    parser.add_argument("--version", action="version", version=f"bufsim {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     parser_class=Parser)
    for add in (add_replay, add_sweep, add_mrc, add_advise, add_convert, add_live,
                add_notebooks):
        add(commands)
    return parser


def _exit_now(code: int) -> None:
    """End the program at once after Ctrl-C.  Every output was already discarded and
    every worker ended on the way out; what remains is the interpreter's teardown of
    numba, pandas and pyarrow, which takes seconds on a loaded machine, so it is
    skipped (``os._exit``) once stdout and stderr are flushed."""
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _broken_pipe() -> int:
    """The reader of stdout went away (``bufsim ... | head``): stop quietly, as Unix
    tools do, with the status of a process ended by SIGPIPE (128 + 13).  stdout is
    pointed at /dev/null so that the interpreter's final flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout without a file descriptor (captured)
        pass
    return 141


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``bufsim`` command line.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        The exit status: 0 ok, 1 a failure while running, 2 bad input, 130
        interrupted (Ctrl-C; called without ``argv``, as the program, the process
        then ends at once), 141 stdout closed by its reader.  A usage
        error found while parsing the arguments raises ``SystemExit(2)`` after
        printing its line, as argparse does (``--help`` and ``--version`` exit 0).
    """
    as_program = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = ("replay", "sweep", "mrc", "advise", "convert", "notebooks", "live")
    prog = "bufsim" + (f" {argv[0]}" if argv and argv[0] in commands else "")
    try:
        args = _parser().parse_args(argv)
    except UsageError as e:  # as argparse itself does for usage errors: SystemExit(2)
        print(f"{prog}: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    try:
        code = int(args.func(args))
        sys.stdout.flush()   # a closed pipe shows here, not at the interpreter's exit
        return code
    except UsageError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # the engine's message says how far the replay got
        print(f"{prog}: interrupted" + (f": {e}" if str(e) else "") + "; nothing written",
              file=sys.stderr)
        if as_program:
            _exit_now(130)
        return 130
    except BrokenPipeError:
        return _broken_pipe()
    except Exception as e:  # a failure while running: one line, status 1
        msg = " ".join(str(e).split())
        print(f"{prog}: failed: {type(e).__name__}: {msg}", file=sys.stderr)
        return 1
