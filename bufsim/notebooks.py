"""Batch runner for the notebooks: execute them with papermill, then summarise.

``bufsim notebooks run [--quick] [NAME ...]`` (see :mod:`bufsim.__main__`)
executes every ``notebooks/*.ipynb`` in name order with the ``python3`` kernel
of the running interpreter, working directory ``notebooks/``, into
``build/notebooks/NAME.ipynb``. A failure does not stop the run: the executed
notebook, with the traceback in it, is kept for inspection. Afterwards
``build/summary.md`` gathers the run, every ``build/results/*.csv`` as a
table and a link to every figure in ``figures/``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from bufsim import paths
from bufsim.paths import atomic_path

__all__ = [
    "NotebookRun",
    "discover_notebooks",
    "format_runs",
    "run_notebooks",
    "select_notebooks",
    "write_summary",
]


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
    """

    name: str
    source: Path
    output: Path | None
    ok: bool
    seconds: float
    error: str | None = None


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
) -> list[NotebookRun]:
    """Execute notebooks with papermill, one after the other.

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

    Returns
    -------
    list of NotebookRun
        One per notebook, in execution order. Failures are reported here,
        never raised.
    """
    try:
        import papermill as pm
    except ImportError as exc:  # the `notebooks` extra is missing
        raise ImportError(
            "running notebooks needs papermill: pip install -e '.[notebooks]'"
        ) from exc

    selected = select_notebooks(names, notebooks_dir)
    out_dir = Path(output_dir) if output_dir is not None else paths.build_dir() / "notebooks"
    out_dir.mkdir(parents=True, exist_ok=True)
    parameters = {"quick": True} if quick else {}
    runs: list[NotebookRun] = []
    bar = tqdm(selected, unit="notebook", disable=not progress, desc="notebooks")
    for source in bar:
        bar.set_description(source.stem)
        output = out_dir / source.name
        output.unlink(missing_ok=True)  # never report a stale notebook of an earlier run
        start = time.perf_counter()
        error = None
        try:
            pm.execute_notebook(
                str(source),
                str(output),
                parameters=parameters,
                kernel_name=kernel_name,
                cwd=str(source.parent),
                progress_bar=False,
            )
        except Exception as exc:  # noqa: BLE001 - every failure is reported, the run goes on
            error = _describe(exc)
        seconds = time.perf_counter() - start
        written = output if output.is_file() else None
        runs.append(NotebookRun(source.stem, source, written, error is None, seconds, error))
        bar.write(f"{'ok' if error is None else 'FAILED':6} {source.stem} ({seconds:.1f} s)")
    bar.close()
    return runs


def format_runs(runs: Sequence[NotebookRun]) -> str:
    """Plain-text table of a run: notebook, status, seconds, output or error."""
    rows = [("notebook", "status", "seconds", "executed notebook / error")]
    for r in runs:
        where = str(r.output) if r.output is not None else "(no executed notebook)"
        detail = where if r.ok else f"{where}\n{r.error}"
        first, *rest = detail.splitlines() or [""]
        rows.append((r.name, "ok" if r.ok else "FAILED", f"{r.seconds:.1f}", first))
        rows.extend(("", "", "", line) for line in rest[:3])
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[3] for row in rows]
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


def write_summary(
    runs: Sequence[NotebookRun] | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    results_dir: str | os.PathLike[str] | None = None,
    figures_dir: str | os.PathLike[str] | None = None,
    quick: bool = False,
    max_rows: int = 200,
) -> Path:
    """Write a markdown summary of a run, its result tables and its figures.

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

    out = Path(path) if path is not None else paths.build_dir() / "summary.md"
    res = Path(results_dir) if results_dir is not None else paths.results_dir()
    figs = Path(figures_dir) if figures_dir is not None else paths.figures_dir()
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
    return out
