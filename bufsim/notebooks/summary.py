"""The run's summaries: ``build/summary.md`` and ``build/summary.html`` with every
result table (claims marked as holding or not) and every figure, and the plain-text
table of a run (see :mod:`bufsim.notebooks`)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from bufsim import paths
from bufsim import provenance as _prov
from bufsim.notebooks.runner import NotebookRun, describe_error
from bufsim.paths import atomic_path

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
            lines += [f"Could not read it: {describe_error(exc)}", ""]
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
                body.append(f'<p class="error">Could not read it: {html.escape(describe_error(exc))}</p>')
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
