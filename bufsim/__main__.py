"""Command line: ``bufsim notebooks run [--quick] [NAME ...]``.

Also reachable as ``python -m bufsim``. Exit status: 0 when every notebook
ran, 1 when one failed (or none was found), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

from bufsim import notebooks, paths


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bufsim", description="bufsim: buffer-pool modelling suite."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    nb = commands.add_parser("notebooks", help="work with the notebooks in notebooks/")
    nb_commands = nb.add_subparsers(dest="action", required=True, metavar="ACTION")
    run = nb_commands.add_parser(
        "run",
        help="execute notebooks with papermill and write build/summary.md and .html",
        description=(
            "Execute notebooks/*.ipynb (sorted) with papermill into build/notebooks/, "
            "then write build/summary.md and build/summary.html with every build/results/*.csv "
            "and every figure. A full run (no --quick) is the one command that refreshes the "
            "committed figures/. Exits 1 if any notebook failed."
        ),
    )
    run.add_argument(
        "--quick",
        action="store_true",
        help="inject quick = True into each notebook's parameters cell (small sizes, for "
        "tests); outputs go to build/quick/ so that full-run figures are kept",
    )
    run.add_argument(
        "--no-progress", action="store_true", help="do not show the progress bar"
    )
    run.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="notebook stems or prefixes, e.g. 00 or 00_quickstart (default: all)",
    )
    return parser


@contextlib.contextmanager
def _run_outputs(quick: bool):
    """Direct the outputs of a batch run through the environment (the kernels inherit it),
    unless ``BUFSIM_BUILD_DIR`` / ``BUFSIM_FIGURES_DIR`` say otherwise; restored afterwards.

    A full run is the one way to refresh the committed ``figures/``; a quick run writes
    under ``build/quick/`` (figures in ``build/quick/figures``) so that it never
    overwrites the figures and results of a full run."""
    saved = {k: os.environ.get(k) for k in (paths.BUILD_ENV_VAR, paths.FIGURES_ENV_VAR)}
    if quick:
        build = (paths.build_dir() / "quick" if saved[paths.BUILD_ENV_VAR] is None
                 else paths.build_dir())
        os.environ[paths.BUILD_ENV_VAR] = str(build)
        figures = build / "figures"
    else:
        figures = paths.committed_figures_dir()
    if saved[paths.FIGURES_ENV_VAR] is None:
        os.environ[paths.FIGURES_ENV_VAR] = str(figures)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run_notebooks(args: argparse.Namespace) -> int:
    with _run_outputs(args.quick):
        return _run_and_summarise(args)


def _run_and_summarise(args: argparse.Namespace) -> int:
    try:
        runs = notebooks.run_notebooks(
            args.names, quick=args.quick, progress=not args.no_progress
        )
    except (ValueError, FileNotFoundError) as exc:
        print(f"bufsim notebooks run: {exc}", file=sys.stderr)
        return 2
    if not runs:
        print("bufsim notebooks run: no notebooks to run", file=sys.stderr)
        return 1
    summary = notebooks.write_summary(runs, quick=args.quick)
    print(notebooks.format_runs(runs))
    print(f"summary: {summary}")
    return 0 if all(r.ok for r in runs) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``bufsim`` command line.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        The exit status.
    """
    args = _parser().parse_args(argv)
    if args.command == "notebooks" and args.action == "run":
        return _run_notebooks(args)
    raise AssertionError(f"unhandled command {args.command} {args.action}")  # argparse guards this


if __name__ == "__main__":
    sys.exit(main())
