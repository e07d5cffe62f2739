"""``bufsim notebooks run``: execute the notebooks with papermill and write the summary."""
from __future__ import annotations

import contextlib
import os
import sys

from .. import paths
from ._common import Parser, int_type


def add_notebooks(commands) -> None:
    """The ``notebooks`` subcommand and its actions."""
    nb = commands.add_parser("notebooks", help="work with the notebooks in notebooks/")
    nb_commands = nb.add_subparsers(dest="action", required=True, metavar="ACTION",
                                    parser_class=Parser)
    run = nb_commands.add_parser(
        "run", help="execute notebooks with papermill and write build/summary.md and .html",
        description=("Execute notebooks/*.ipynb (sorted) with papermill into build/notebooks/, "
                     "then write build/summary.md and build/summary.html with every "
                     "build/results/*.csv and every figure. A full run (no --quick) is the one "
                     "command that refreshes the committed figures/. Exits 1 if any notebook "
                     "failed."))
    run.add_argument("--quick", action="store_true",
                     help="inject quick = True into each notebook's parameters cell (small "
                     "sizes, for tests); outputs go to build/quick/ so that full-run figures "
                     "are kept")
    run.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    run.add_argument("--jobs", type=int_type("--jobs", 1, 256), default=None, metavar="N",
                     help="notebooks executed side by side, each in its own kernel "
                     "(default: one per core)")
    run.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                     metavar=("NAME", "VALUE"),
                     help="set a parameter of the selected notebooks, as papermill -p does "
                     "(VALUE a Python literal such as 1000 or \"[0, 1000, 3000]\", else text "
                     "such as 4G); checked before any notebook runs; outputs then go to "
                     "build/custom/ (build/quick/custom/ with --quick), so the committed "
                     "figures/ are kept, while replays still share the result cache")
    run.add_argument("--no-cache", action="store_true",
                     help="replay everything: neither use nor fill the result cache "
                     "(build/cache/)")
    run.add_argument("names", nargs="*", metavar="NAME",
                     help="notebook stems or prefixes, e.g. 00 or 00_quickstart (default: all)")
    run.set_defaults(func=_cmd_notebooks)


@contextlib.contextmanager
def run_outputs(quick: bool, custom: bool = False):
    """Direct the outputs of a batch run through the environment (the kernels inherit it),
    unless ``BUFSIM_BUILD_DIR`` / ``BUFSIM_FIGURES_DIR`` say otherwise; restored afterwards.

    A full run at the notebooks' own settings is the one way to refresh the committed
    ``figures/``; a quick run writes under ``build/quick/`` (figures in
    ``build/quick/figures``) and a run with parameters of the user's (``custom``) under
    ``build/custom/`` (``build/quick/custom/`` if both), so that neither overwrites the
    figures and results of a full run."""
    saved = {k: os.environ.get(k) for k in (paths.BUILD_ENV_VAR, paths.FIGURES_ENV_VAR)}
    if quick or custom:
        build = paths.build_dir()
        if saved[paths.BUILD_ENV_VAR] is None:
            build = build / "quick" if quick else build
            build = build / "custom" if custom else build
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


def _cmd_notebooks(args) -> int:
    from .. import notebooks
    given = {name: notebooks.parse_parameter(value) for name, value in args.parameter}
    with run_outputs(args.quick, custom=bool(given)), cache_switch(args.no_cache):
        try:
            selected = notebooks.select_notebooks(args.names)
            given = notebooks.check_run_parameters(selected, given)
        except (ValueError, FileNotFoundError) as exc:
            print(f"bufsim notebooks run: {exc}", file=sys.stderr)
            return 2
        if not selected:
            print("bufsim notebooks run: no notebooks to run", file=sys.stderr)
            return 1
        not_run = _live_not_run(notebooks, selected)
        names = [p.stem for p in selected if p.stem not in {r.name for r in not_run}]
        runs = notebooks.run_notebooks(names, quick=args.quick, progress=not args.no_progress,
                                       jobs=args.jobs, parameters=given) if names else []
        runs = sorted([*runs, *not_run], key=lambda r: r.name)
        summary = notebooks.write_summary(runs, quick=args.quick)
        print(notebooks.format_runs(runs))
        print(f"summary: {summary}")
        for r in not_run:       # last, where the eye lands: one line with the command
            print(f"{r.name}: {r.error}", file=sys.stderr)
        return 0 if all(r.ok for r in runs) else 1


def _live_not_run(notebooks, selected) -> list:
    """The live notebooks among ``selected`` that cannot run here (no MariaDB server and
    none can be installed), as NotebookRuns whose error names the command to run."""
    live = [p for p in selected if p.stem in notebooks.LIVE_NOTEBOOKS]
    if not live:
        return []
    ok, why = notebooks.live_server_status()
    return [] if ok else [notebooks.not_run(p, why) for p in live]


@contextlib.contextmanager
def cache_switch(off: bool):
    """``--no-cache``: the result cache neither serves nor stores (the kernels inherit
    the environment variable); restored afterwards."""
    from .. import cache
    saved = os.environ.get(cache.OFF_ENV_VAR)
    if off:
        os.environ[cache.OFF_ENV_VAR] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(cache.OFF_ENV_VAR, None)
        else:
            os.environ[cache.OFF_ENV_VAR] = saved
