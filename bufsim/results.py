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

import numpy as np
import pandas as pd

from bufsim import paths

__all__ = ["COLUMNS", "OPTIONAL_COLUMNS", "results_frame", "write_results"]

#: The columns of a results table, in order. ``ratio`` is simulated / reported
#: (computed here, NaN where reported is 0 or missing); ``fitted`` is True where
#: the number was used to calibrate a constant and False where it was predicted.
COLUMNS = ("experiment", "metric", "config", "reported", "simulated", "ratio", "fitted")
#: Columns a notebook may add after :data:`COLUMNS` (all rows or none): ``holds`` (bool)
#: says whether the simulated number is within the tolerance the notebook states.
OPTIONAL_COLUMNS = ("holds",)


def _number(field: str, row: int, value: object) -> float:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"results row {row}: {field} must be a number, got {value!r}") from None
    return x


def results_frame(rows: Iterable[Mapping[str, object]] | pd.DataFrame) -> pd.DataFrame:
    """Check rows of reported-versus-simulated numbers and add their ratio.

    Parameters
    ----------
    rows : iterable of mappings, or pandas.DataFrame
        Each row has ``experiment``, ``metric``, ``config`` (strings),
        ``reported`` and ``simulated`` (numbers; ``reported`` may be NaN where
        the document gives none) and ``fitted`` (bool). Extra keys are an error,
        so that a misspelt column is not silently dropped, except the
        :data:`OPTIONAL_COLUMNS` (``holds``, a bool), which every row or none has.

    Returns
    -------
    pandas.DataFrame
        The rows with the columns of :data:`COLUMNS` (then any optional column
        the rows carry), ``ratio`` = simulated / reported.

    Raises
    ------
    ValueError
        If a column is missing or unknown, a number is not numeric, the
        simulated value is NaN, or ``fitted`` is not a bool.
    """
    records = rows.to_dict("records") if isinstance(rows, pd.DataFrame) else list(rows)
    base = set(COLUMNS) - {"ratio"}
    optional = [c for c in OPTIONAL_COLUMNS if records and c in records[0]]
    wanted = base | set(optional)
    out = []
    for i, rec in enumerate(records):
        keys = set(rec) - {"ratio"}
        if keys != wanted:
            missing, extra = sorted(wanted - keys), sorted(keys - wanted)
            raise ValueError(
                f"results row {i}: columns must be {sorted(wanted)}"
                + (f"; missing {missing}" if missing else "")
                + (f"; unknown {extra}" if extra else "")
            )
        reported = _number("reported", i, rec["reported"])
        simulated = _number("simulated", i, rec["simulated"])
        if math.isnan(simulated):
            raise ValueError(f"results row {i}: simulated is NaN ({rec['metric']!r})")
        fitted = rec["fitted"]
        if not isinstance(fitted, (bool, np.bool_)):
            raise ValueError(f"results row {i}: fitted must be True or False, got {fitted!r}")
        ratio = simulated / reported if reported != 0.0 and not math.isnan(reported) else math.nan
        row = {
            "experiment": str(rec["experiment"]), "metric": str(rec["metric"]),
            "config": str(rec["config"]), "reported": reported, "simulated": simulated,
            "ratio": ratio, "fitted": bool(fitted),
        }
        for c in optional:
            if not isinstance(rec[c], (bool, np.bool_)):
                raise ValueError(f"results row {i}: {c} must be True or False, got {rec[c]!r}")
            row[c] = bool(rec[c])
        out.append(row)
    return pd.DataFrame(out, columns=list(COLUMNS) + optional)


def write_results(name: str, rows: Iterable[Mapping[str, object]] | pd.DataFrame) -> Path:
    """Write a notebook's reported-versus-simulated rows to ``build/results/NAME.csv``.

    The rows are checked by :func:`results_frame` before anything is written, and
    the file is written to a temporary name and moved into place.

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
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"name must be a notebook stem such as '01_ssb', got {name!r}")
    frame = results_frame(rows)
    target = paths.results_dir() / f"{name}.csv"
    return paths.atomic_write(target, lambda p: frame.to_csv(p, index=False))
