"""Export Altair charts to ``NAME.png`` and ``NAME.svg`` and show them inline.

Every figure of the notebooks goes through :func:`save_figure`, so all of
them share one size, one resolution and one theme, and are rendered by
vl-convert (no browser needed). :func:`save_figure` returns the chart, so a
notebook cell ending with it shows the chart in JupyterLab; the files are a
side effect. They go to the run's figures directory (see
:func:`bufsim.notebooks.setup`; ``build/figures/`` for a hand run, ``figures/``
only under ``make reproduce``), carry their provenance (bufsim version, git
commit, notebook parameters) in a PNG ``tEXt`` chunk and an SVG comment, and
a quick-mode figure says so in its title. The theme is registered with Altair under the
name :data:`THEME` when this module is imported; notebooks may enable it for
inline display with ``alt.theme.enable("bufsim")``, and :func:`save_figure`
applies it whatever theme is active.
"""

from __future__ import annotations

import os
import re
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import altair as alt
import vl_convert as vlc

from bufsim._validation import check_int
from bufsim import provenance as _prov
from bufsim.paths import atomic_path

__all__ = [
    "MAX_PNG_WIDTH", "MAX_ROWS", "PROVENANCE_KEY", "QUICK_MARK", "THEME", "read_png_text",
    "save_figure", "theme_config", "write_figure",
]

#: Name under which the project theme is registered with Altair.
THEME = "bufsim"

#: Largest number of inline data rows a saved chart may hold (Altair's limit).
MAX_ROWS = 5000

#: Widest PNG accepted (pixels at the export ``ppi``); wider charts must be faceted,
#: wrapped or split so that they stay readable in a report.
MAX_PNG_WIDTH = 2000

#: Keyword of the PNG ``tEXt`` chunk (and the SVG comment) holding the provenance JSON.
PROVENANCE_KEY = "bufsim-provenance"

#: Appended to the title of a figure made in quick mode.
QUICK_MARK = "[quick mode: small sizes, not the reported settings]"

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
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
    if not isinstance(name, str) or not NAME_RE.fullmatch(name) or len(name) > 120:
        raise ValueError(
            f"name must be a safe file stem (letters, digits, '_', '-', '.', "
            f"starting with a letter or digit, at most 120 characters, no "
            f"extension needed), got {name!r}"
        )
    if name.lower().endswith((".png", ".svg")):
        raise ValueError(f"name must not carry an extension, got {name!r}")
    return name


def _check_size(field: str, value: object, low: int, high: int) -> int:
    return check_int(field, value, low, high)


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


def _single_view(chart: alt.TopLevelMixin) -> bool:
    """True for a chart drawn as one view (a plain or layered chart without row, column or
    facet encodings): the figure size applies to it as a whole."""
    if isinstance(chart, alt.LayerChart):
        return True
    if not isinstance(chart, alt.Chart):
        return False
    enc = chart.encoding
    if enc is alt.Undefined:
        return True
    return all(getattr(enc, ch, alt.Undefined) is alt.Undefined for ch in ("row", "column", "facet"))


def _to_spec(chart: alt.TopLevelMixin, width: int, height: int) -> dict[str, Any]:
    if _single_view(chart):
        chart = chart.properties(
            width=width,
            height=height,
            autosize=alt.AutoSizeParams(type="fit", contains="padding"),
        )
    try:
        with _enable_theme():
            spec = chart.to_dict()
    except alt.MaxRowsError:
        data = getattr(chart, "data", None)
        raise _too_many_rows(len(data) if hasattr(data, "__len__") else None) from None
    rows = max(_inline_row_counts(spec), default=0)
    if rows > MAX_ROWS:
        raise _too_many_rows(rows)
    return spec


def _png_with_text(png: bytes, key: str, text: str) -> bytes:
    """Insert a ``tEXt`` chunk right after the PNG's ``IHDR`` chunk."""
    data = key.encode("latin-1") + b"\0" + text.encode("latin-1")
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data
    chunk += struct.pack(">I", zlib.crc32(b"tEXt" + data) & 0xFFFFFFFF)
    ihdr_end = 8 + 8 + 13 + 4
    return png[:ihdr_end] + chunk + png[ihdr_end:]


def read_png_text(data: bytes) -> dict[str, str]:
    """Return the ``tEXt`` chunks of a PNG as ``{keyword: text}``.

    Parameters
    ----------
    data : bytes
        The PNG file's content.

    Raises
    ------
    ValueError
        If ``data`` is not a PNG.
    """
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file (bad signature)")
    out, pos = {}, 8
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"tEXt":
            key, _, text = body.partition(b"\0")
            out[key.decode("latin-1")] = text.decode("latin-1")
        if kind == b"IEND":
            break
        pos += 12 + length
    return out


def png_size(data: bytes) -> tuple[int, int]:
    """Return ``(width, height)`` of a PNG from its ``IHDR`` chunk."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file (bad signature)")
    return struct.unpack(">II", data[16:24])


def _svg_with_comment(svg: str, text: str) -> str:
    comment = f"<!-- {PROVENANCE_KEY}: {text.replace('--', '- -')} -->"
    head, sep, rest = svg.partition("<svg")
    return head + comment + "\n" + sep + rest if sep else comment + "\n" + svg


def _mark_quick(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """Return ``chart`` with :data:`QUICK_MARK` added to its title."""
    title = getattr(chart, "title", alt.Undefined)
    if title is alt.Undefined or title is None or title == "":
        return chart.properties(title=QUICK_MARK)
    if isinstance(title, str):
        return chart.properties(title=[title, QUICK_MARK])
    if isinstance(title, (list, tuple)):
        return chart.properties(title=[*title, QUICK_MARK])
    d = title.to_dict() if hasattr(title, "to_dict") else dict(title)
    text = d.get("text", "")
    d["text"] = [*text, QUICK_MARK] if isinstance(text, list) else [text, QUICK_MARK]
    return chart.properties(title=alt.TitleParams(**d))


def write_figure(
    chart: alt.TopLevelMixin,
    name: str,
    *,
    width: int = 640,
    height: int = 360,
    ppi: int = 144,
    directory: str | os.PathLike[str] | None = None,
) -> dict[str, Path]:
    """Render an Altair chart to ``NAME.png`` and ``NAME.svg`` and return their paths.

    Same parameters as :func:`save_figure`, which is this function returning the chart
    instead (for notebooks). The chart is drawn as given: the quick-mode title mark is
    added by :func:`save_figure`.

    Returns
    -------
    dict of str to pathlib.Path
        ``{"png": ..., "svg": ...}``.
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
    png_width = png_size(png)[0]
    if png_width > MAX_PNG_WIDTH:
        raise ValueError(
            f"figure {name!r} would be {png_width} px wide at ppi={ppi}, more than "
            f"{MAX_PNG_WIDTH}: facet with columns=, wrap, or split it into several figures"
        )
    svg = vlc.vegalite_to_svg(spec)
    meta = _prov.provenance_json(figure=name)
    png = _png_with_text(png, PROVENANCE_KEY, meta)
    svg = _svg_with_comment(svg, meta)

    out_dir = Path(directory) if directory is not None else _prov.output_dirs()[0]
    written: dict[str, Path] = {}
    for ext, payload in (("png", png), ("svg", svg.encode("utf-8"))):
        target = out_dir / f"{name}.{ext}"
        with atomic_path(target) as tmp:
            tmp.write_bytes(payload)
        written[ext] = target
    return written


def save_figure(
    chart: alt.TopLevelMixin,
    name: str,
    *,
    width: int = 640,
    height: int = 360,
    ppi: int = 144,
    directory: str | os.PathLike[str] | None = None,
) -> alt.TopLevelMixin:
    """Save an Altair chart to ``NAME.png`` and ``NAME.svg`` and return it for display.

    A notebook cell ending with ``save_figure(chart, "name")`` shows the chart inline
    (as ``application/vnd.vegalite`` output); writing the files is a side effect. In
    quick mode (:func:`bufsim.notebooks.setup` with ``quick=True``) the title of the
    saved and the returned chart ends with :data:`QUICK_MARK`. Both files are rendered
    in memory first and then written atomically, so an error leaves any earlier figure
    of the same name untouched; both record their provenance
    (:func:`bufsim.provenance.provenance`).

    Parameters
    ----------
    chart : altair.Chart or other top-level Altair chart
        The chart. A single or layered chart is resized so that the whole
        figure, axes and legend included, is ``width`` x ``height`` CSS
        pixels; a concatenated, faceted (also by ``row``/``column`` encodings)
        or repeated chart keeps the sizes of its views.
    name : str
        File stem: letters, digits, ``_``, ``-`` and ``.``, starting with a
        letter or digit, no extension.
    width, height : int, optional
        Size of the figure in CSS pixels (1 to 8000), 640 x 360 by default.
    ppi : int, optional
        Pixels per inch of the PNG (36 to 600); the PNG is
        ``width * ppi / 72`` pixels wide. The SVG keeps CSS pixels.
    directory : str or os.PathLike, optional
        Where to write; the run's figures directory by default (the one set by
        :func:`bufsim.notebooks.setup`, else :func:`bufsim.paths.figures_dir`).

    Returns
    -------
    altair.TopLevelMixin
        The chart as saved (quick-mode mark included).

    Raises
    ------
    ValueError
        If ``name``, ``width``, ``height`` or ``ppi`` is invalid, if the
        chart holds more than :data:`MAX_ROWS` rows of inline data, or if the
        PNG would be wider than :data:`MAX_PNG_WIDTH` pixels.
    TypeError
        If ``chart`` is not an Altair top-level chart.

    Examples
    --------
    >>> chart = alt.Chart(df).mark_line().encode(x="size", y="hit_ratio")  # doctest: +SKIP
    >>> save_figure(chart, "quickstart_hit_ratio")  # doctest: +SKIP
    alt.Chart(...)
    """
    if not isinstance(chart, alt.TopLevelMixin):
        raise TypeError(
            f"chart must be an Altair chart (alt.Chart, alt.LayerChart, ...), "
            f"got {type(chart).__name__}"
        )
    ctx = _prov.current_context()
    if ctx is not None and ctx.quick:
        chart = _mark_quick(chart)
    if _single_view(chart):  # shown inline as it is saved
        chart = chart.properties(width=width, height=height,
                                 autosize=alt.AutoSizeParams(type="fit", contains="padding"))
    # name the figure in the spec, so the executed notebook says which output is which
    chart = chart.properties(usermeta={"bufsim_figure": name})
    write_figure(chart, name, width=width, height=height, ppi=ppi, directory=directory)
    return chart
