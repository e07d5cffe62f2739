"""Reported-versus-simulated tables that every notebook leaves in ``build/results/``.

Each notebook compares numbers a document reported with numbers bufsim computed and
writes them, one row per compared number, to ``build/results/NAME.csv`` with the
columns of :data:`COLUMNS`. The batch runner (:mod:`bufsim.notebooks`) gathers these
files into ``build/summary.md``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from bufsim import paths
from bufsim import provenance as _prov
from bufsim._validation import check_bool, check_number, describe

__all__ = ["COLUMNS", "OPTIONAL_COLUMNS", "claims_frame", "results_frame", "write_claims",
           "write_results", "write_table"]

#: The columns of a results table, in order. ``ratio`` is simulated / reported
#: (computed here, NaN where reported is 0 or missing); ``fitted`` is True where
#: the number was used to calibrate a constant and False where it was predicted.
COLUMNS = ("experiment", "metric", "config", "reported", "simulated", "ratio", "fitted")
#: Columns a notebook may add after :data:`COLUMNS` (all rows or none): ``holds`` (bool)
#: says whether the simulated number is within the tolerance the notebook states.
OPTIONAL_COLUMNS = ("holds",)


def _cell(field: str, row: int, check, value, **kw):
    """``check(field, value)`` with the row and column named in the error."""
    try:
        return check(field, value, **kw)
    except ValueError as e:
        raise ValueError(f"results row {row}, column {field!r}: {e}") from None


def _text(field: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a non-empty string, got {describe(value)}")
    return value


def results_frame(rows: Iterable[Mapping[str, object]] | pd.DataFrame) -> pd.DataFrame:
    """Check rows of reported-versus-simulated numbers and add their ratio.

    Parameters
    ----------
    rows : iterable of mappings, or pandas.DataFrame
        Each row has ``experiment``, ``metric``, ``config`` (strings),
        ``reported`` and ``simulated`` (numbers; ``reported`` may be NaN where
        the document gives none; never infinite, bool or None) and ``fitted``
        (bool). Extra keys are an error, so that a misspelt column is not
        silently dropped, except the :data:`OPTIONAL_COLUMNS` (``holds``, a
        bool), which every row or none has.

    Returns
    -------
    pandas.DataFrame
        The rows with the columns of :data:`COLUMNS` (then any optional column
        the rows carry), ``ratio`` = simulated / reported.

    Raises
    ------
    ValueError
        Naming the row and column, if a column is missing or unknown, a text
        column is not a non-empty string, a number is not a real number (bool
        and None are not), is infinite, the simulated value is NaN, or
        ``fitted`` is not a bool.
    """
    records = rows.to_dict("records") if isinstance(rows, pd.DataFrame) else list(rows)
    base = set(COLUMNS) - {"ratio"}
    optional = [c for c in OPTIONAL_COLUMNS if records and c in records[0]]
    wanted = base | set(optional)
    out = []
    for i, rec in enumerate(records):
        if not isinstance(rec, Mapping):
            raise ValueError(f"results row {i} must be a mapping of column to value, got "
                             f"{describe(rec)}")
        keys = set(rec) - {"ratio"}
        if keys != wanted:
            missing, extra = sorted(wanted - keys), sorted(keys - wanted)
            raise ValueError(
                f"results row {i}: columns must be {sorted(wanted)}"
                + (f"; missing {missing}" if missing else "")
                + (f"; unknown {extra}" if extra else "")
            )
        text = {c: _cell(c, i, _text, rec[c])
                for c in ("experiment", "metric", "config")}
        reported = _cell("reported", i, check_number, rec["reported"], allow_nan=True)
        simulated = _cell("simulated", i, check_number, rec["simulated"])
        fitted = _cell("fitted", i, check_bool, rec["fitted"])
        ratio = simulated / reported if reported != 0.0 and not math.isnan(reported) else math.nan
        row = {**text, "reported": reported, "simulated": simulated,
               "ratio": ratio, "fitted": fitted}
        for c in optional:
            row[c] = _cell(c, i, check_bool, rec[c])
        out.append(row)
    return pd.DataFrame(out, columns=list(COLUMNS) + optional)


def write_results(name: str, rows: Iterable[Mapping[str, object]] | pd.DataFrame) -> Path:
    """Write a notebook's reported-versus-simulated rows to ``RESULTS/NAME.csv``.

    ``RESULTS`` is the run's results directory (:func:`bufsim.notebooks.setup`; else
    ``build/results/``). The rows are checked by :func:`results_frame` before anything is
    written, and the file is written to a temporary name and moved into place, with its
    provenance in ``NAME.csv.provenance.json`` beside it.

    Parameters
    ----------
    name : str
        The notebook's stem, e.g. ``"01_ssb_old_blocks_time"``.
    rows : iterable of mappings, or pandas.DataFrame
        See :func:`results_frame`.

    Returns
    -------
    pathlib.Path
        The CSV written.
    """
    _check_stem(name)
    frame = results_frame(rows)
    return _write_csv(frame, f"{name}.csv")


def _check_stem(name: object) -> None:
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise ValueError(f"name must be a notebook stem such as '01_ssb', got {name!r}")


def _write_csv(frame: pd.DataFrame, filename: str) -> Path:
    """Write ``frame`` and its provenance sidecar ``FILENAME.provenance.json`` (atomically)
    into the run's results directory."""
    target = _prov.output_dirs()[1] / filename
    meta = _prov.provenance_json(table=filename, rows=len(frame))
    paths.atomic_write(target.with_name(target.name + ".provenance.json"),
                       lambda p: p.write_text(meta + "\n", encoding="utf-8"))
    return paths.atomic_write(target, lambda p: frame.to_csv(p, index=False))


def claims_frame(claims: Iterable[Mapping[str, object]] | pd.DataFrame) -> pd.DataFrame:
    """Check a table of claims: one row per claim, a ``holds`` column of booleans.

    Parameters
    ----------
    claims : iterable of mappings, or pandas.DataFrame
        Rows with a ``holds`` column (True / False) and at least one other column that
        says what is claimed; any further columns (reported, simulated, target) are kept.

    Returns
    -------
    pandas.DataFrame
        The claims, ``holds`` as bool.

    Raises
    ------
    ValueError
        If there is no row, no ``holds`` column, no other column, or a ``holds`` value
        that is not a boolean.
    """
    frame = claims.copy() if isinstance(claims, pd.DataFrame) else pd.DataFrame(list(claims))
    if frame.empty:
        raise ValueError("claims table has no row")
    if "holds" not in frame.columns or len(frame.columns) < 2:
        raise ValueError(f"claims table needs a 'holds' column and a column naming each claim, "
                         f"got columns {list(frame.columns)}")
    for i, v in enumerate(frame["holds"]):
        try:
            check_bool("holds", v)
        except ValueError as e:
            raise ValueError(f"claims row {i}: {e}") from None
    frame["holds"] = frame["holds"].astype(bool)
    return frame.reset_index(drop=True)


def write_claims(name: str, claims: Iterable[Mapping[str, object]] | pd.DataFrame) -> Path:
    """Write a notebook's claims table to ``RESULTS/NAME.claims.csv``.

    ``build/summary.md`` and ``build/summary.html`` show it with each claim marked as
    holding or not.

    Parameters
    ----------
    name : str
        The notebook's stem.
    claims : iterable of mappings, or pandas.DataFrame
        See :func:`claims_frame`.

    Returns
    -------
    pathlib.Path
        The CSV written.
    """
    _check_stem(name)
    return _write_csv(claims_frame(claims), f"{name}.claims.csv")


def write_table(name: str, frame: pd.DataFrame) -> Path:
    """Write any table of a notebook to ``RESULTS/NAME.csv`` with its provenance sidecar.

    For tables that are neither reported-versus-simulated rows (:func:`write_results`) nor
    claims (:func:`write_claims`); written atomically into the run's results directory.

    Parameters
    ----------
    name : str
        File stem, e.g. ``"06_analytic_vs_simulated"``.
    frame : pandas.DataFrame
        The table.

    Returns
    -------
    pathlib.Path
        The CSV written.
    """
    _check_stem(name)
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    return _write_csv(frame, f"{name}.csv")
