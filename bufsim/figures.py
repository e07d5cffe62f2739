"""Export Altair charts to ``figures/NAME.png`` and ``figures/NAME.svg``.

Every figure of the notebooks goes through :func:`save_figure`, so all of
them share one size, one resolution and one theme, and are rendered by
vl-convert (no browser needed). The theme is registered with Altair under the
name :data:`THEME` when this module is imported; notebooks may enable it for
inline display with ``alt.theme.enable("bufsim")``, and :func:`save_figure`
applies it whatever theme is active.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import altair as alt
import vl_convert as vlc

from bufsim.paths import atomic_path, figures_dir

__all__ = ["MAX_ROWS", "THEME", "save_figure", "theme_config"]

#: Name under which the project theme is registered with Altair.
THEME = "bufsim"

#: Largest number of inline data rows a saved chart may hold (Altair's limit).
MAX_ROWS = 5000

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_MAX_SIZE = 8000
_FONT = "sans-serif"


def theme_config() -> dict[str, Any]:
    """Return the project theme as a Vega-Lite top-level config.

    Returns
    -------
    dict
        White background, readable font sizes and a colour-blind-safe
        categorical scheme.
    """
    return {
        "background": "white",
        "padding": 8,
        "config": {
            "font": _FONT,
            "view": {"stroke": "#cccccc"},
            "title": {"fontSize": 16, "anchor": "start", "offset": 10},
            "axis": {
                "labelFontSize": 12,
                "titleFontSize": 13,
                "gridColor": "#e6e6e6",
                "domainColor": "#555555",
                "tickColor": "#555555",
            },
            "header": {"labelFontSize": 12, "titleFontSize": 13},
            "legend": {"labelFontSize": 12, "titleFontSize": 13},
            "range": {"category": {"scheme": "tableau10"}},
            "line": {"strokeWidth": 2},
            "point": {"size": 40},
        },
    }


def _register_theme() -> None:
    api = getattr(alt, "theme", None)
    if api is not None and hasattr(api, "register"):  # Altair >= 5.5
        api.register(THEME, enable=False)(theme_config)
    else:  # Altair 5.2 - 5.4
        alt.themes.register(THEME, theme_config)


def _enable_theme():
    api = getattr(alt, "theme", None)
    if api is not None and hasattr(api, "enable"):
        return api.enable(THEME)
    return alt.themes.enable(THEME)


_register_theme()


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name) or len(name) > 120:
        raise ValueError(
            f"name must be a safe file stem (letters, digits, '_', '-', '.', "
            f"starting with a letter or digit, at most 120 characters, no "
            f"extension needed), got {name!r}"
        )
    if name.lower().endswith((".png", ".svg")):
        raise ValueError(f"name must not carry an extension, got {name!r}")
    return name


def _check_size(field: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{field} must be an integer in [{low}, {high}], got {value!r}")
    return value


def _inline_row_counts(spec: Any) -> Iterator[int]:
    """Yield the length of every inline dataset in a Vega-Lite spec."""
    if isinstance(spec, dict):
        datasets = spec.get("datasets")
        if isinstance(datasets, dict):
            for rows in datasets.values():
                if isinstance(rows, list):
                    yield len(rows)
        data = spec.get("data")
        if isinstance(data, dict) and isinstance(data.get("values"), list):
            yield len(data["values"])
        for key, value in spec.items():
            if key not in ("datasets", "data"):
                yield from _inline_row_counts(value)
    elif isinstance(spec, list):
        for item in spec:
            yield from _inline_row_counts(item)


def _too_many_rows(rows: int | None) -> ValueError:
    found = f"{rows} rows" if rows is not None else f"more than {MAX_ROWS} rows"
    return ValueError(
        f"chart data has {found}; save_figure accepts at most {MAX_ROWS} inline "
        "rows. Pre-aggregate the data (for example group and average, or bin, "
        "in pandas) before building the chart"
    )


def _to_spec(chart: alt.TopLevelMixin, width: int, height: int) -> dict[str, Any]:
    if isinstance(chart, (alt.Chart, alt.LayerChart)):
        chart = chart.properties(
            width=width,
            height=height,
            autosize=alt.AutoSizeParams(type="fit", contains="padding"),
        )
    try:
        with _enable_theme():
            spec = chart.to_dict()
    except alt.MaxRowsError as exc:
        match = re.search(r"\((\d+)\)", str(exc))
        raise _too_many_rows(int(match.group(1)) if match else None) from None
    rows = max(_inline_row_counts(spec), default=0)
    if rows > MAX_ROWS:
        raise _too_many_rows(rows)
    return spec


def save_figure(
    chart: alt.TopLevelMixin,
    name: str,
    *,
    width: int = 640,
    height: int = 360,
    ppi: int = 144,
    directory: str | os.PathLike[str] | None = None,
) -> dict[str, Path]:
    """Render an Altair chart to ``NAME.png`` and ``NAME.svg``.

    Both files are rendered in memory first and then written atomically, so
    an error leaves any earlier figure of the same name untouched.

    Parameters
    ----------
    chart : altair.Chart or other top-level Altair chart
        The chart. A single or layered chart is resized so that the whole
        figure, axes and legend included, is ``width`` x ``height`` CSS
        pixels; a concatenated, faceted or repeated chart keeps the sizes of
        its views.
    name : str
        File stem: letters, digits, ``_``, ``-`` and ``.``, starting with a
        letter or digit, no extension.
    width, height : int, optional
        Size of the figure in CSS pixels (1 to 8000), 640 x 360 by default.
    ppi : int, optional
        Pixels per inch of the PNG (36 to 600); the PNG is
        ``width * ppi / 72`` pixels wide. The SVG keeps CSS pixels.
    directory : str or os.PathLike, optional
        Where to write; :func:`bufsim.paths.figures_dir` by default.

    Returns
    -------
    dict of str to pathlib.Path
        ``{"png": ..., "svg": ...}``.

    Raises
    ------
    ValueError
        If ``name``, ``width``, ``height`` or ``ppi`` is invalid, or if the
        chart holds more than :data:`MAX_ROWS` rows of inline data.
    TypeError
        If ``chart`` is not an Altair top-level chart.

    Examples
    --------
    >>> chart = alt.Chart(df).mark_line().encode(x="size", y="hit_ratio")  # doctest: +SKIP
    >>> save_figure(chart, "quickstart_hit_ratio")  # doctest: +SKIP
    {'png': PosixPath('.../figures/quickstart_hit_ratio.png'), 'svg': ...}
    """
    name = _check_name(name)
    width = _check_size("width", width, 1, _MAX_SIZE)
    height = _check_size("height", height, 1, _MAX_SIZE)
    ppi = _check_size("ppi", ppi, 36, 600)
    if not isinstance(chart, alt.TopLevelMixin):
        raise TypeError(
            f"chart must be an Altair chart (alt.Chart, alt.LayerChart, ...), "
            f"got {type(chart).__name__}"
        )
    spec = _to_spec(chart, width, height)
    png = vlc.vegalite_to_png(spec, ppi=ppi)
    svg = vlc.vegalite_to_svg(spec)

    out_dir = Path(directory) if directory is not None else figures_dir()
    written: dict[str, Path] = {}
    for ext, payload in (("png", png), ("svg", svg.encode("utf-8"))):
        target = out_dir / f"{name}.{ext}"
        with atomic_path(target) as tmp:
            tmp.write_bytes(payload)
        written[ext] = target
    return written
