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

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from bufsim import paths
from bufsim import provenance as _prov
from bufsim.paths import atomic_path

__all__ = [
    "LIVE_NOTEBOOKS",
    "NotebookRun",
    "PARAMETER_RULES",
    "check_parameters",
    "check_injected_parameters",
    "choice_rule",
    "claims_count_text",
    "claims_counts",
    "float_rule",
    "int_rule",
    "list_rule",
    "discover_notebooks",
    "format_runs",
    "live_server_status",
    "run_notebooks",
    "select_notebooks",
    "setup",
    "write_html_summary",
    "write_summary",
]


# ---------------------------------------------------------------- parameters

def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) or type(v).__name__.startswith("int")


def _int(lo: int, hi: int) -> Callable[[str, object], object]:
    def check(name: str, v: object) -> object:
        if not _is_int(v) or not lo <= int(v) <= hi:  # type: ignore[arg-type]
            raise ValueError(f"parameter {name} must be an integer in [{lo}, {hi}], got {v!r}")
        return int(v)  # type: ignore[arg-type]
    check.allowed = f"an integer in [{lo}, {hi}]"  # type: ignore[attr-defined]
    return check


def _float(lo: float, hi: float) -> Callable[[str, object], object]:
    def check(name: str, v: object) -> object:
        ok = (_is_int(v) or isinstance(v, float)) and not isinstance(v, bool)
        if not ok or not lo <= float(v) <= hi:  # type: ignore[arg-type]
            raise ValueError(f"parameter {name} must be a number in [{lo}, {hi}], got {v!r}")
        return float(v)  # type: ignore[arg-type]
    return check


def _bool(name: str, v: object) -> object:
    if not isinstance(v, bool):
        raise ValueError(f"parameter {name} must be True or False, got {v!r}")
    return v


def _choice(options: Sequence[str]) -> Callable[[str, object], object]:
    def check(name: str, v: object) -> object:
        if v not in options:
            raise ValueError(f"parameter {name} must be one of {', '.join(map(repr, options))}, "
                             f"got {v!r}")
        return v
    return check


def _pool_size(name: str, v: object) -> object:
    from bufsim.config import pages_from_bytes

    if _is_int(v):
        pages = int(v)  # type: ignore[arg-type]
    elif isinstance(v, str):
        try:
            pages = pages_from_bytes(v)
        except ValueError:
            pages = -1
    else:
        pages = -1
    if not 320 <= pages <= 2**31:  # InnoDB's smallest pool: 5M = 320 pages of 16 KiB
        raise ValueError(f"parameter {name} must be a pool size: pages (an integer in "
                         f"[320, 2**31]) or bytes as '128M', '4G' (at least 5M), got {v!r}")
    return v


def _list_of(item: Callable[[str, object], object], *, max_len: int = 64,
             unique: bool = True) -> Callable[[str, object], object]:
    def check(name: str, v: object) -> object:
        if isinstance(v, str):  # papermill -p passes "[0, 250]" as a string
            import ast
            try:
                v = ast.literal_eval(v.strip())
            except (ValueError, SyntaxError):
                raise ValueError(f"parameter {name} must be a list such as [0, 250], "
                                 f"got {v!r}") from None
        if isinstance(v, (str, bytes)) or not isinstance(v, (list, tuple)) or not v:
            raise ValueError(f"parameter {name} must be a non-empty list, got {v!r}")
        if len(v) > max_len:
            raise ValueError(f"parameter {name} must have at most {max_len} values, got {len(v)}")
        out = [item(f"{name}[{i}]", x) for i, x in enumerate(v)]
        if unique and len(set(map(str, out))) != len(out):
            raise ValueError(f"parameter {name} must not repeat a value, got {v!r}")
        return out
    return check


def _output_dir(name: str, v: object) -> object:
    if v is None:
        return None
    if not isinstance(v, (str, os.PathLike)) or not str(v).strip():
        raise ValueError(f"parameter {name} must be None or a directory path, got {v!r}")
    p = Path(v).expanduser()
    if p.exists() and not p.is_dir():
        raise ValueError(f"parameter {name} must be a directory, but {p} is a file")
    return str(p)


def _presets() -> tuple[str, ...]:
    from bufsim.config import PRESETS
    return tuple(PRESETS)


def _devices() -> tuple[str, ...]:
    from bufsim.config import DEVICES
    return tuple(DEVICES)


def _preset(name: str, v: object) -> object:
    return _choice(_presets())(name, v)


def _device(name: str, v: object) -> object:
    return _choice(_devices())(name, v)


#: Rule builders for a notebook's own parameters (``setup(..., rules={...})``).
int_rule = _int
float_rule = _float
choice_rule = _choice
list_rule = _list_of

#: How :func:`setup` checks each parameter a notebook may take, by name. Each rule is
#: called as ``rule(name, value)`` and returns the value (normalised) or raises
#: ``ValueError`` naming the parameter and the allowed values.
PARAMETER_RULES: dict[str, Callable[[str, object], object]] = {
    "quick": _bool,
    "seed": _int(0, 2**32 - 1),
    "output_dir": _output_dir,
    "pool_size": _pool_size,
    "pool_sizes": _list_of(_pool_size),
    "old_blocks_time_ms": _list_of(_int(0, 2**32 - 1)),
    "old_blocks_pct": _int(5, 95),
    "old_blocks_pcts": _list_of(_int(5, 95)),
    "instances": _int(1, 64),
    "instances_list": _list_of(_int(1, 64)),
    "scale_factor": _float(0.001, 100.0),
    "scale": _int(1, 1024),
    "device": _device,
    "version": _preset,
    "versions": _list_of(_preset),
    "users": _list_of(_int(1, 4096)),
    "n_gets": _int(1_000, 10**10),
    "n_pages": _int(100, 10**9),
    "zipf_alpha": _float(0.0, 3.0),
    "transactions": _int(100, 10**7),
    "cores": _int(1, 1024),
}


def check_parameters(
    rules: Mapping[str, Callable[[str, object], object]] | None = None, /, **params: object
) -> dict[str, object]:
    """Check notebook parameters against their rules and return them normalised.

    Parameters
    ----------
    rules : mapping, optional
        Extra or overriding rules (``name -> rule(name, value)``) for this notebook.
    **params
        The parameters, by name.

    Returns
    -------
    dict
        The checked values, in the given order.

    Raises
    ------
    ValueError
        On the first bad value (the message names the parameter and the allowed range)
        or an unknown parameter name.
    """
    table = {**PARAMETER_RULES, **(rules or {})}
    out: dict[str, object] = {}
    for name, value in params.items():
        if name not in table:
            raise ValueError(
                f"parameter {name} has no rule; known: {', '.join(sorted(table))} "
                "(pass rules={name: check} to setup for a notebook's own parameter)"
            )
        out[name] = table[name](name, value)
    return out


#: First line of the cell papermill injects after the ``parameters`` cell
#: (``papermill.translators.PythonTranslator.codify``).
_INJECTED_MARK = "# Parameters"


def _assigned_names(source: str) -> list[str]:
    """Names assigned at the top level of a cell's source (empty if it does not parse)."""
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names: list[str] = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name) and n.id not in names:
                    names.append(n.id)
    return names


def check_injected_parameters(history: Sequence[str] | None = None) -> None:
    """Refuse a parameter that papermill injected but the notebook does not have.

    ``papermill nb.ipynb out.ipynb -p zipf_alpah 1.1`` adds a cell that assigns
    ``zipf_alpah`` after the ``parameters`` cell; papermill only warns, and the
    notebook would run to the end with its default ``zipf_alpha``.  :func:`setup`
    calls this first: the injected cell (the last executed cell whose first line is
    papermill's ``# Parameters``) may only assign names that the cell executed just
    before it (the notebook's ``parameters`` cell) assigns.

    Parameters
    ----------
    history : sequence of str, optional
        The sources of the cells executed so far, in order; by default the IPython
        kernel's input history (nothing is checked outside IPython).

    Raises
    ------
    ValueError
        Naming the unknown parameter, the closest known name and the known ones.
    """
    if history is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return
        ip = get_ipython()
        if ip is None or getattr(ip, "history_manager", None) is None:
            return
        history = list(ip.history_manager.input_hist_raw)
    marks = [i for i, src in enumerate(history)
             if isinstance(src, str) and src.lstrip().startswith(_INJECTED_MARK + "\n")]
    if not marks or marks[-1] == 0:
        return
    i = marks[-1]
    known = _assigned_names(history[i - 1])
    if not known:   # the cell before is not a parameters cell: nothing to compare with
        return
    import difflib
    for name in _assigned_names(history[i]):
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"parameter {name!r} is not a parameter of this notebook "
                             f"(injected by papermill -p); {hint}known parameters: "
                             f"{', '.join(known)}")


def setup(
    notebook: str | None = None,
    /,
    *,
    quick: bool = False,
    seed: int | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    rules: Mapping[str, Callable[[str, object], object]] | None = None,
    defaults: Mapping[str, tuple[object, object]] | None = None,
    **params: object,
) -> _prov.RunContext:
    """Check a notebook's parameters and direct its outputs; call it once, after the
    ``parameters`` cell.

    Parameters
    ----------
    notebook : str, optional
        The notebook's stem (recorded in every output).
    quick : bool
        Quick mode: small sizes; figure titles say so.
    seed : int, optional
        The notebook's seed, if it draws random numbers.
    output_dir : str or os.PathLike, optional
        Figures go to ``output_dir/figures``, result tables to ``output_dir/results``.
        None (the default): ``$BUFSIM_FIGURES_DIR`` and ``$BUFSIM_BUILD_DIR/results``
        when set (the batch runner sets them), else ``build/figures`` and
        ``build/results`` of the checkout. Never ``figures/`` unless
        ``$BUFSIM_FIGURES_DIR`` says so (``make reproduce``).
    rules : mapping, optional
        Rules for parameters not in :data:`PARAMETER_RULES`.
    defaults : mapping, optional
        ``name -> (full, quick)``: a parameter passed as None takes the full-run or the
        quick-mode value (then is checked like any other).
    **params
        Every other knob of the notebook, checked by its rule.

    Returns
    -------
    bufsim.provenance.RunContext
        The installed context: ``.figures_dir``, ``.results_dir``, ``.parameters``
        (the checked values, defaults filled in; also ``ctx["name"]``).

    Raises
    ------
    ValueError
        If a parameter is bad (the message names it) or has no rule.
    """
    check_injected_parameters()
    everything: dict[str, object] = {"quick": quick, "output_dir": output_dir}
    if seed is not None:
        everything["seed"] = seed
    everything.update(params)
    for name, (full, small) in (defaults or {}).items():
        if everything.get(name) is None:
            everything[name] = small if quick else full
    checked = check_parameters(rules, **everything)
    if checked["output_dir"] is not None:
        base = Path(str(checked["output_dir"])).resolve()
        figs, results = base / "figures", base / "results"
    else:
        figs, results = paths.figures_dir(), paths.results_dir()
    ctx = _prov.RunContext(notebook=notebook, quick=bool(quick), figures_dir=figs,
                           results_dir=results, parameters=checked)
    _prov.set_context(ctx)
    _prov.output_dirs()
    import altair as alt

    from bufsim import figures
    from bufsim.engine import compile_notice

    line = compile_notice(("innodb", "lru"))
    if line:  # under the setup cell, before the first replay's minute of silence
        print(line)
    figures._enable_theme()  # charts shown inline look like the saved figures
    # application/vnd.vegalite.v5+json: JupyterLab renders it itself, offline (the html
    # renderer would fetch vega from a CDN)
    alt.renderers.enable("mimetype")
    return ctx


def _ipc_kernel_manager(folder: str) -> type:
    """A kernel manager whose kernel talks over unix sockets in ``folder`` (an
    absolute path: the kernel resolves a relative one against its own working folder),
    not loopback TCP: runner and kernel are on one machine, nothing listens on a port,
    and ipykernel >= 7.3 no longer warns at every start that its TCP is unencrypted."""
    from jupyter_client import AsyncKernelManager

    class IPCKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            super().__init__(transport="ipc", ip=os.path.join(folder, "kernel"), **kwargs)

    return IPCKernelManager


@dataclass(frozen=True)
class NotebookRun:
    """Outcome of executing one notebook.

    Attributes
    ----------
    name : str
        Notebook stem, e.g. ``"00_quickstart"``.
    source : pathlib.Path
        The notebook that was executed.
    output : pathlib.Path or None
        The executed notebook, written also when a cell failed; None when
        papermill wrote nothing (e.g. the kernel did not start).
    ok : bool
        True when every cell ran without error.
    seconds : float
        Wall-clock time of the execution.
    error : str or None
        ``"ExceptionName: message"`` of the failure, None on success.
    cpu_seconds : float or None
        CPU time (user + system) of the kernel and of the papermill client that ran
        it: the work, which does not grow when other processes share the cores as
        ``seconds`` does; None when not measured.
    """

    name: str
    source: Path
    output: Path | None
    ok: bool
    seconds: float
    error: str | None = None
    cpu_seconds: float | None = None


def discover_notebooks(notebooks_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Return the notebooks of ``notebooks_dir`` (default ``notebooks/``), sorted by name."""
    directory = Path(notebooks_dir) if notebooks_dir is not None else paths.notebooks_dir()
    if not directory.is_dir():
        raise FileNotFoundError(f"notebooks directory {directory} does not exist")
    return sorted(p for p in directory.glob("*.ipynb") if not p.name.startswith("."))


def select_notebooks(
    names: Iterable[str] = (), notebooks_dir: str | os.PathLike[str] | None = None
) -> list[Path]:
    """Pick notebooks by stem or stem prefix (``"00"`` selects ``00_quickstart``).

    Parameters
    ----------
    names : iterable of str
        Stems or prefixes; a trailing ``.ipynb`` is ignored. Empty selects all.
    notebooks_dir : str or os.PathLike, optional
        Where to look; :func:`bufsim.paths.notebooks_dir` by default.

    Returns
    -------
    list of pathlib.Path
        Matching notebooks in name order, each once.

    Raises
    ------
    ValueError
        If a name matches no notebook; the message lists the available ones.
    """
    available = discover_notebooks(notebooks_dir)
    names = [n.removesuffix(".ipynb") for n in names]
    if not names:
        return available
    chosen: set[Path] = set()
    for name in names:
        hits = [p for p in available if p.stem == name] or [
            p for p in available if p.stem.startswith(name)
        ]
        if not name or not hits:
            stems = ", ".join(p.stem for p in available) or "none"
            raise ValueError(f"NAME {name!r} matches no notebook; available: {stems}")
        chosen.update(hits)
    return sorted(chosen)


def _describe(exc: BaseException) -> str:
    ename = getattr(exc, "ename", None)
    if ename is not None:  # papermill.PapermillExecutionError: the notebook's own error
        return f"{ename}: {getattr(exc, 'evalue', '')}".strip()
    return f"{type(exc).__name__}: {exc}".strip()


def run_notebooks(
    names: Iterable[str] = (),
    *,
    quick: bool = False,
    notebooks_dir: str | os.PathLike[str] | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    kernel_name: str = "python3",
    progress: bool = True,
    parameters: Mapping[str, object] | None = None,
    jobs: int | None = 1,
) -> list[NotebookRun]:
    """Execute notebooks with papermill, ``jobs`` of them side by side.

    Parameters
    ----------
    names : iterable of str, optional
        Stems or prefixes (see :func:`select_notebooks`); empty runs all.
    quick : bool, optional
        Inject ``quick = True`` into each notebook's ``parameters`` cell.
    notebooks_dir : str or os.PathLike, optional
        Source notebooks and working directory of the kernels;
        ``notebooks/`` by default.
    output_dir : str or os.PathLike, optional
        Where executed notebooks go; ``build/notebooks/`` by default.
    kernel_name : str, optional
        Jupyter kernel; ``python3`` resolves to the running interpreter.
    progress : bool, optional
        Show a progress bar naming the notebook being executed.
    parameters : mapping, optional
        More values to inject into every selected notebook's ``parameters`` cell
        (papermill ``-p``), e.g. ``{"seed": 2}``.
    jobs : int or None, optional
        Notebooks executed at once, each in its own process and kernel (the notebooks
        are independent and write their own outputs); None: one per core
        (``os.cpu_count()``). The longest (by the last run's times) start first.

    Returns
    -------
    list of NotebookRun
        One per notebook, in name order. Failures are reported here, never raised.
    """
    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
        raise ValueError(f"jobs must be an integer >= 1 or None, got {jobs!r}")
    try:
        import papermill  # noqa: F401
    except ImportError as exc:  # the `notebooks` extra is missing
        raise ImportError(
            "running notebooks needs papermill: pip install -e '.[notebooks]'"
        ) from exc

    selected = select_notebooks(names, notebooks_dir)
    out_dir = Path(output_dir) if output_dir is not None else paths.build_dir() / "notebooks"
    out_dir.mkdir(parents=True, exist_ok=True)
    parameters = {**({"quick": True} if quick else {}), **(parameters or {})}
    from bufsim.engine import compile_notice

    line = compile_notice(("innodb", "lru"))
    if line and selected:  # the first notebook's kernel compiles them, a minute in silence
        print(line, file=sys.stderr, flush=True)
    for source in selected:  # never report a stale notebook of an earlier run
        (out_dir / source.name).unlink(missing_ok=True)
    n_jobs = min(len(selected), jobs or os.cpu_count() or 1)
    bar = tqdm(total=len(selected), unit="notebook", disable=not progress, desc="notebooks")
    done: dict[Path, NotebookRun] = {}

    def report(run: NotebookRun) -> None:
        done[run.source] = run
        bar.update(1)
        bar.write(f"{'ok' if run.ok else 'FAILED':6} {run.name} ({run.seconds:.1f} s)")

    if n_jobs <= 1:
        for source in selected:
            bar.set_description(source.stem)
            report(_execute(source, out_dir / source.name, parameters, kernel_name))
    else:
        import concurrent.futures as cf
        import multiprocessing

        order = _longest_first(selected, out_dir)
        ctx = multiprocessing.get_context("spawn")  # a clean interpreter per worker
        with cf.ProcessPoolExecutor(max_workers=n_jobs, mp_context=ctx) as ex:
            futures = {ex.submit(_execute, src, out_dir / src.name, parameters, kernel_name): src
                       for src in order}
            for fut in cf.as_completed(futures):
                src = futures[fut]
                try:
                    report(fut.result())
                except Exception as exc:  # noqa: BLE001 - the worker died: reported, run goes on
                    report(NotebookRun(src.stem, src, None, False, 0.0, _describe(exc)))
    bar.close()
    _save_seconds(out_dir, done.values())
    return [done[source] for source in selected]


def _execute(source: Path, output: Path, parameters: Mapping[str, object],
             kernel_name: str) -> NotebookRun:
    """Execute one notebook with papermill into ``output`` (a worker of run_notebooks)."""
    import papermill as pm

    start = time.perf_counter()
    cpu_start = _cpu_seconds()
    error = None
    try:
        with tempfile.TemporaryDirectory(prefix="bufsim-ipc-") as sockets:
            pm.execute_notebook(
                str(source),
                str(output),
                parameters=dict(parameters),
                kernel_name=kernel_name,
                cwd=str(source.parent),
                progress_bar=False,
                kernel_manager_class=_ipc_kernel_manager(sockets),
            )
    except Exception as exc:  # noqa: BLE001 - every failure is reported, the run goes on
        error = _describe(exc)
    seconds = time.perf_counter() - start
    cpu = _cpu_seconds() - cpu_start
    written = output if output.is_file() else None
    return NotebookRun(source.stem, source, written, error is None, seconds, error, cpu)


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its children that ended (the
    kernel papermill started and shut down counts once it is reaped)."""
    import resource

    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


_SECONDS_FILE = ".seconds.json"   # in the output folder: each notebook's last time


#: Seconds of the shipped notebooks' full runs on an idle 2-core machine, the order of a
#: first run, before build/notebooks/.seconds.json holds this machine's times: 07 (a
#: MariaDB server, then its grid) starts first, not after the others.  Measured by one
#: ``make reproduce`` on a fresh clone after its ``.ci/run`` (numba cache warm, 2 side by
#: side, 2026-11-28, commit 2d3fdd4); 07 and 01 were cut since (the standby server, the
#: one-pass replays, run_ssb's chunk memo) and measured only on the loaded machine, where
#: they keep their places at the head of the order.
TYPICAL_SECONDS = {"00_quickstart": 10, "01_ssb_old_blocks_time": 213,
                   "02_side_load_mysqldump": 93, "03_bp_instance_contention": 55,
                   "04_bp_instances_hot_uniform": 36, "05_dbt3_mrr_bka": 89,
                   "06_analytic_vs_simulated": 36, "07_live_server_validation": 407,
                   "08_explorer": 6, "09_live_trace": 50}


def _longest_first(selected: Sequence[Path], out_dir: Path) -> list[Path]:
    """``selected`` ordered by the last run's seconds, longest first (unknown ones first,
    in name order): the long poles start at once and the short ones fill the gaps. A
    notebook this folder has no time for takes its :data:`TYPICAL_SECONDS`, if any."""
    import json

    try:
        last = json.loads((out_dir / _SECONDS_FILE).read_text())
    except (OSError, ValueError):
        last = {}
    if not isinstance(last, dict):
        last = {}

    def known(p: Path) -> float:
        v = last.get(p.stem, TYPICAL_SECONDS.get(p.stem))
        return float(v) if isinstance(v, (int, float)) else math.inf
    return sorted(selected, key=lambda p: -known(p))


def _save_seconds(out_dir: Path, runs: Iterable[NotebookRun]) -> None:
    """Remember each successful notebook's time for the next run's order."""
    import json

    path = out_dir / _SECONDS_FILE
    try:
        last = json.loads(path.read_text())
        last = last if isinstance(last, dict) else {}
    except (OSError, ValueError):
        last = {}
    last.update({r.name: round(r.seconds, 1) for r in runs if r.ok})
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(last, indent=1, sort_keys=True))


#: notebooks that run against a MariaDB server started by the notebook (bufsim.live)
LIVE_NOTEBOOKS = frozenset({"07_live_server_validation", "09_live_trace"})


def _can_sudo() -> bool:
    """Whether ``sudo`` runs here without asking for a password."""
    import shutil
    import subprocess

    if shutil.which("sudo") is None:
        return False
    try:
        return subprocess.run(["sudo", "-n", "true"], capture_output=True,
                              timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _install_server(script: Path) -> int:
    """Run ``scripts/mariadb-server.sh --if-root`` (apt-get, output shown); its exit status."""
    import subprocess

    return subprocess.run([str(script), "--if-root"], stdout=sys.stderr).returncode


def live_server_status(*, available: Callable[[], tuple[bool, str]] | None = None,
                       uid: int | None = None, can_sudo: Callable[[], bool] = _can_sudo,
                       install: Callable[[Path], int] = _install_server) -> tuple[bool, str]:
    """Whether the live notebooks can start their MariaDB server, installing Debian's
    ``mariadb-server`` first when it is missing and we are root or have password-less
    sudo (``scripts/mariadb-server.sh``, the script ``.ci/run`` uses).

    Returns ``(True, "")``, or ``(False, why)`` where ``why`` names the command that
    installs the server. The keywords stand in for the machine in tests: ``available``
    (default :func:`bufsim.live.server_available`), ``uid`` (default the effective
    uid), ``can_sudo`` and ``install`` (runs the script, returns its exit status).
    """
    if available is None:
        from bufsim.live import server_available as available
    ok, why = available()
    if ok:
        return True, ""
    why = why.split(" (")[0]
    root = (os.geteuid() if uid is None else uid) == 0
    script = Path(__file__).resolve().parents[1] / "scripts" / "mariadb-server.sh"  # checkout
    if not script.is_file():
        return False, f"{why}; install mariadb-server (Debian: apt-get install mariadb-server)"
    command = "make mariadb" if root else "sudo make mariadb"
    if root or can_sudo():
        print(f"bufsim: {why}: installing Debian's mariadb-server ({script.name})",
              file=sys.stderr, flush=True)
        code = install(script)
        ok, why2 = available()
        if ok:
            return True, ""
        return False, (f"{why2.split(' (')[0]} (the install exited with status {code}); "
                       f"see `{command}`")
    return False, f"{why}; install it with `{command}`"


def _not_run(source: Path, why: str) -> NotebookRun:
    line = f"not run: {why}, then `make reproduce NOTEBOOKS={source.stem[:2]}`"
    return NotebookRun(source.stem, source, None, False, 0.0, line)


def format_runs(runs: Sequence[NotebookRun]) -> str:
    """Plain-text table of a run: notebook, status, wall-clock seconds, CPU seconds
    (``-`` where not measured), output or error."""
    rows = [("notebook", "status", "seconds", "cpu s", "executed notebook / error")]
    for r in runs:
        where = str(r.output) if r.output is not None else "(no executed notebook)"
        detail = where if r.ok else f"{where}\n{r.error}"
        if r.output is None and (r.error or "").startswith("not run: "):
            detail = r.error     # one line: why, and the command that fixes it
        first, *rest = detail.splitlines() or [""]
        status = "ok" if r.ok else ("NOT RUN" if detail == r.error else "FAILED")
        cpu = "-" if r.cpu_seconds is None else f"{r.cpu_seconds:.1f}"
        rows.append((r.name, status, f"{r.seconds:.1f}", cpu, first))
        rows.extend(("", "", "", "", line) for line in rest[:3])
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[4] for row in rows]
    lines.insert(1, "-" * max(len(line) for line in lines))
    failed = sum(not r.ok for r in runs)
    lines.append(f"notebooks: {len(runs) - failed} ok, {failed} failed")
    return "\n".join(line.rstrip() for line in lines)


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}"
    return " ".join(str(value).split()).replace("|", "\\|")


def _markdown_table(header: Sequence[object], rows: Iterable[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |"]
    lines.append("|" + "---|" * len(header))
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _link(target: Path, start: Path) -> str:
    rel = Path(os.path.relpath(target, start)).as_posix()
    return f"<{rel}>" if " " in rel else rel


def _summary_paths(path, results_dir, figures_dir, default_name: str) -> tuple[Path, Path, Path]:
    """The summary file, the results folder and the figures folder of a summary, each the
    caller's or the run's default."""
    return (Path(path) if path is not None else paths.build_dir() / default_name,
            Path(results_dir) if results_dir is not None else paths.results_dir(),
            Path(figures_dir) if figures_dir is not None else paths.figures_dir())


def write_summary(
    runs: Sequence[NotebookRun] | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    results_dir: str | os.PathLike[str] | None = None,
    figures_dir: str | os.PathLike[str] | None = None,
    quick: bool = False,
    max_rows: int = 200,
) -> Path:
    """Write a markdown summary of a run, its result tables and its figures, and the
    HTML summary beside it (:func:`write_html_summary`, same name with ``.html``).

    Parameters
    ----------
    runs : sequence of NotebookRun, optional
        The run to report; the section is left out when None.
    path : str or os.PathLike, optional
        Output file; ``build/summary.md`` by default. Written atomically.
    results_dir : str or os.PathLike, optional
        Every ``*.csv`` here becomes a table; ``build/results/`` by default.
    figures_dir : str or os.PathLike, optional
        Every ``*.png`` here is linked; ``figures/`` by default.
    quick : bool, optional
        Whether the run was in quick mode (stated in the summary).
    max_rows : int, optional
        Longest table shown per CSV; longer ones are cut with a note.

    Returns
    -------
    pathlib.Path
        The summary file.
    """
    import pandas as pd

    out, res, figs = _summary_paths(path, results_dir, figures_dir, "summary.md")
    lines = ["# bufsim reproduction summary", ""]
    if runs is not None:
        failed = sum(not r.ok for r in runs)
        mode = "quick" if quick else "full"
        lines += [f"{len(runs)} notebooks executed in {mode} mode, {failed} failed.", ""]
        lines += ["## Notebooks", ""]
        lines += _markdown_table(
            ("notebook", "status", "seconds", "executed notebook", "error"),
            (
                (r.name, "ok" if r.ok else "FAILED", f"{r.seconds:.1f}",
                 f"[{r.output.name}]({_link(r.output, out.parent)})" if r.output else "",
                 r.error or "")
                for r in runs
            ),
        )
        lines.append("")
    lines += ["## Results", ""]
    csvs = sorted(res.glob("*.csv")) if res.is_dir() else []
    if not csvs:
        lines += [f"No result tables in {_link(res, out.parent)}.", ""]
    for csv in csvs:
        lines += [f"### {csv.stem}", "", f"From [{csv.name}]({_link(csv, out.parent)}).", ""]
        try:
            frame = pd.read_csv(csv)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            lines += [f"Could not read it: {_describe(exc)}", ""]
            continue
        if csv.name.endswith(".claims.csv") and "holds" in frame.columns:
            lines += [claims_count_text(frame), ""]
        rows = list(frame.itertuples(index=False, name=None))
        lines += _markdown_table(list(frame.columns), rows[:max_rows])
        if len(rows) > max_rows:
            lines.append(f"\nFirst {max_rows} of {len(rows)} rows.")
        lines.append("")
    lines += ["## Figures", ""]
    pngs = sorted(figs.glob("*.png")) if figs.is_dir() else []
    lines += [f"- [{p.stem}]({_link(p, out.parent)})" for p in pngs]
    if not pngs:
        lines.append(f"No figures in {_link(figs, out.parent)}.")
    with atomic_path(out) as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_html_summary(runs, path=out.with_suffix(".html"), results_dir=res, figures_dir=figs,
                       quick=quick, max_rows=max_rows)
    return out


_CSS = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1700px; padding: 0 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
th { background: #f0f0f0; }
tr.holds td.verdict { background: #dff0d8; }
tr.fails td.verdict { background: #f2dede; font-weight: bold; }
tr.excluded td.verdict { background: #fcf8e3; }
figure { margin: 1em 0 2em; }
figure img { max-width: 100%; border: 1px solid #eee; }
.error { color: #a94442; }
"""


def _html_cell(value: object) -> str:
    import html

    return html.escape(_cell(value).replace("\\|", "|"))


def _truthy(v: object) -> bool:
    """A CSV cell read back as a flag: True, "True", "true" or 1."""
    return str(v).strip().lower() in ("true", "1")


def claims_counts(frame) -> dict[str, int]:
    """Verdict counts of one claims table (:func:`bufsim.results.write_claims`):
    ``held`` (``holds`` true), ``excluded`` (does not hold, and the document's own numbers
    exclude it: ``document_excludes`` true), ``failed`` (neither) and ``total`` (rows with
    a verdict; a row without one is not counted)."""
    verdicts = frame["holds"].astype(str).str.strip().str.lower()
    judged = verdicts.isin(["true", "1", "false", "0"])
    held = verdicts.isin(["true", "1"])
    if "document_excludes" in frame.columns:
        excl = frame["document_excludes"].map(_truthy) & judged & ~held
    else:
        excl = held & False
    total, n_held, n_excl = int(judged.sum()), int(held.sum()), int(excl.sum())
    return dict(held=n_held, excluded=n_excl, failed=total - n_held - n_excl, total=total)


def claims_count_text(frame) -> str:
    """``"33 held, 8 excluded by the document, 0 do not hold, of 41 claims."``"""
    c = claims_counts(frame)
    return (f"{c['held']} held, {c['excluded']} excluded by the document, "
            f"{c['failed']} do not hold, of {c['total']} claims.")


def _html_table(frame, max_rows: int) -> list[str]:
    import html

    claims = "holds" in frame.columns
    cols = [c for c in frame.columns if c != "holds"]
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cols)
    out = ["<table>", f"<tr>{head}{'<th>verdict</th>' if claims else ''}</tr>"]
    for rec in frame.head(max_rows).itertuples(index=False):
        row = dict(zip(frame.columns, rec))
        cells = "".join(f"<td>{_html_cell(row[c])}</td>" for c in cols)
        if claims:
            v = str(row["holds"]).strip().lower()
            excluded = _truthy(row.get("document_excludes"))
            verdict, cls = (("holds", "holds") if v in ("true", "1") else
                            ("excluded by the document", "excluded")
                            if v in ("false", "0") and excluded else
                            ("does not hold", "fails") if v in ("false", "0") else
                            ("", "unjudged"))   # a row reported without a verdict
            out.append(f'<tr class="{cls}">{cells}<td class="verdict">{verdict}</td></tr>')
        else:
            out.append(f"<tr>{cells}</tr>")
    out.append("</table>")
    if len(frame) > max_rows:
        out.append(f"<p>First {max_rows} of {len(frame)} rows.</p>")
    return out


def write_html_summary(
    runs: Sequence[NotebookRun] | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    results_dir: str | os.PathLike[str] | None = None,
    figures_dir: str | os.PathLike[str] | None = None,
    quick: bool = False,
    max_rows: int = 200,
) -> Path:
    """Write a self-contained HTML summary: the run, every table, every figure.

    Tables whose CSV has a ``holds`` column (claims tables, see
    :func:`bufsim.results.write_claims`) get a verdict column, "holds", "excluded by the
    document" (``document_excludes`` true) or "does not hold", and the counts
    (:func:`claims_count_text`). Figures are embedded (base64 PNG), so
    the file can be mailed or archived on its own.

    Parameters
    ----------
    runs, results_dir, figures_dir, quick, max_rows
        As for :func:`write_summary`.
    path : str or os.PathLike, optional
        Output file; ``build/summary.html`` by default. Written atomically.

    Returns
    -------
    pathlib.Path
        The HTML file.
    """
    import base64
    import html

    import pandas as pd

    out, res, figs = _summary_paths(path, results_dir, figures_dir, "summary.html")
    mode = "quick" if quick else "full"
    body = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
            "<title>bufsim reproduction summary</title>", f"<style>{_CSS}</style></head><body>",
            "<h1>bufsim reproduction summary</h1>",
            f"<p>{html.escape(_prov.provenance_json())}</p>"]
    if runs is not None:
        failed = sum(not r.ok for r in runs)
        body.append(f"<p>{len(runs)} notebooks executed in {mode} mode, {failed} failed.</p>")
        frame = pd.DataFrame(
            [(r.name, "ok" if r.ok else "FAILED", f"{r.seconds:.1f}", r.error or "")
             for r in runs], columns=["notebook", "status", "seconds", "error"])
        body += ["<h2>Notebooks</h2>", *_html_table(frame, len(frame))]
    csvs = sorted(res.glob("*.csv")) if res.is_dir() else []
    claims = [c for c in csvs if c.name.endswith(".claims.csv")]
    tables = [c for c in csvs if c not in claims]
    for title, group in (("Claims", claims), ("Results", tables)):
        body.append(f"<h2>{title}</h2>")
        if not group:
            body.append(f"<p>No {title.lower()} tables in {html.escape(str(res))}.</p>")
        for csv in group:
            body.append(f'<h3 id="{html.escape(csv.stem)}">{html.escape(csv.stem)}</h3>')
            try:
                frame = pd.read_csv(csv)
            except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
                body.append(f'<p class="error">Could not read it: {html.escape(_describe(exc))}</p>')
                continue
            if "holds" in frame.columns:
                body.append(f"<p>{html.escape(claims_count_text(frame))}</p>")
            body += _html_table(frame, max_rows)
    body.append("<h2>Figures</h2>")
    pngs = sorted(figs.glob("*.png")) if figs.is_dir() else []
    if not pngs:
        body.append(f"<p>No figures in {html.escape(str(figs))}.</p>")
    for png in pngs:
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        body.append(f'<figure id="{html.escape(png.stem)}"><img alt="{html.escape(png.stem)}" '
                    f'src="data:image/png;base64,{data}"><figcaption>{html.escape(png.stem)}'
                    "</figcaption></figure>")
    body.append("</body></html>")
    with atomic_path(out) as tmp:
        tmp.write_text("\n".join(body) + "\n", encoding="utf-8")
    return out
