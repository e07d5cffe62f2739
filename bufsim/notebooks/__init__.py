"""Batch runner for the notebooks: execute them with papermill, then summarise.

``bufsim notebooks run [--quick] [NAME ...]`` (see :mod:`bufsim.__main__`)
executes every ``notebooks/*.ipynb`` in name order with the ``python3`` kernel
of the running interpreter, working directory ``notebooks/``, into
``build/notebooks/NAME.ipynb``. A failure does not stop the run: the executed
notebook, with the traceback in it, is kept for inspection. Afterwards
``build/summary.md`` and ``build/summary.html`` gather the run, every
``build/results/*.csv`` as a table (claims marked as holding or not) and every
figure.

Each notebook calls :func:`setup` right after its tagged ``parameters`` cell::

    # parameters
    quick = False
    seed = 1
    pool_sizes = ["128M", "1G"]
    output_dir = None

    P = bufsim.notebooks.setup("01_ssb_old_blocks_time", quick=quick, seed=seed,
                               pool_sizes=pool_sizes, output_dir=output_dir)

:func:`setup` checks every parameter against :data:`PARAMETER_RULES` (a bad value
stops the notebook with an error naming it) and sends the figures and result
tables to ``output_dir/figures`` and ``output_dir/results``; with ``output_dir =
None`` they go to ``$BUFSIM_FIGURES_DIR`` / ``$BUFSIM_BUILD_DIR/results`` when the
batch runner set them, else to ``build/figures`` and ``build/results``. Only a full
``bufsim notebooks run`` (``make reproduce``) writes the committed ``figures/``.
"""

from bufsim.notebooks.params import (
    PARAMETER_RULES,
    check_injected_parameters,
    check_parameters,
    check_run_parameters,
    choice_rule,
    float_rule,
    int_rule,
    list_rule,
    notebook_parameters,
    parse_parameter,
    setup,
)
from bufsim.notebooks.runner import (  # noqa: F401 - the runner's steps: cli and tests
    LIVE_NOTEBOOKS,
    TYPICAL_SECONDS,
    NotebookRun,
    longest_first,
    not_run,
    save_seconds,
    discover_notebooks,
    live_server_status,
    run_notebooks,
    select_notebooks,
)
from bufsim.notebooks.summary import (
    claims_count_text,
    claims_counts,
    format_runs,
    write_html_summary,
    write_summary,
)

__all__ = [
    "LIVE_NOTEBOOKS",
    "NotebookRun",
    "PARAMETER_RULES",
    "check_parameters",
    "check_injected_parameters",
    "check_run_parameters",
    "choice_rule",
    "claims_count_text",
    "claims_counts",
    "float_rule",
    "int_rule",
    "list_rule",
    "notebook_parameters",
    "parse_parameter",
    "discover_notebooks",
    "format_runs",
    "live_server_status",
    "run_notebooks",
    "select_notebooks",
    "setup",
    "write_html_summary",
    "write_summary",
]
