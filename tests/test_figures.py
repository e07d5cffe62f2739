"""Tests for bufsim.figures.save_figure."""

from __future__ import annotations

import struct
import xml.etree.ElementTree as ET

import json
import re

import altair as alt
import pandas as pd
import pytest

import bufsim
import bufsim.notebooks
from bufsim import figures, provenance
from bufsim.figures import MAX_ROWS, save_figure, write_figure

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_MAGIC
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    return struct.unpack(">II", data[16:24])


def _chart(rows: int = 12) -> alt.Chart:
    df = pd.DataFrame(
        {
            "pool_pages": list(range(rows)),
            "hit_ratio": [i / max(rows, 1) for i in range(rows)],
            "policy": ["lru", "midpoint"] * (rows // 2) + ["lru"] * (rows % 2),
        }
    )
    return (
        alt.Chart(df)
        .mark_line()
        .encode(x="pool_pages:Q", y="hit_ratio:Q", color="policy:N")
        .properties(title="hit ratio")
    )


def test_writes_png_and_svg_of_fixed_size(tmp_path):
    out = write_figure(_chart(), "hit_ratio", width=320, height=200, ppi=144, directory=tmp_path)
    assert out == {"png": tmp_path / "hit_ratio.png", "svg": tmp_path / "hit_ratio.svg"}
    assert _png_size(out["png"].read_bytes()) == (640, 400)
    root = ET.fromstring(out["svg"].read_text(encoding="utf-8"))
    assert root.tag.endswith("svg")
    assert float(root.get("width")) == pytest.approx(320)
    assert float(root.get("height")) == pytest.approx(200)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hit_ratio.png", "hit_ratio.svg"]


def test_default_size_and_ppi(tmp_path):
    out = write_figure(_chart(), "defaults", directory=tmp_path)
    assert _png_size(out["png"].read_bytes()) == (1280, 720)


def test_layered_chart_gets_the_same_size(tmp_path):
    base = _chart()
    layered = base + base.mark_point()
    out = write_figure(layered, "layered", width=300, height=150, ppi=72, directory=tmp_path)
    assert _png_size(out["png"].read_bytes()) == (300, 150)


def test_theme_applied_and_active_theme_restored(tmp_path):
    active_before = alt.theme.active if hasattr(alt, "theme") else alt.themes.active
    out = write_figure(_chart(), "themed", directory=tmp_path)
    svg = out["svg"].read_text(encoding="utf-8")
    # the white background rectangle of the theme
    assert 'fill="white"' in svg or "fill=\"#ffffff\"" in svg.lower()
    assert figures.THEME in (alt.theme.names() if hasattr(alt, "theme") else alt.themes.names())
    active_after = alt.theme.active if hasattr(alt, "theme") else alt.themes.active
    assert active_after == active_before


def test_overwrites_previous_figure(tmp_path):
    (tmp_path / "same.png").write_bytes(b"old")
    out = write_figure(_chart(), "same", directory=tmp_path)
    assert out["png"].read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize(
    "bad",
    ["", "../escape", "a/b", "with space", ".hidden", "fig.png", "x" * 121, 3, None],
)
def test_rejects_unsafe_names(tmp_path, bad):
    with pytest.raises(ValueError, match="name"):
        save_figure(_chart(), bad, directory=tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [("width", 0), ("height", -5), ("ppi", 10), ("width", 12.5), ("ppi", True)],
)
def test_rejects_bad_sizes(tmp_path, field, value):
    with pytest.raises(ValueError, match=field):
        save_figure(_chart(), "ok", directory=tmp_path, **{field: value})


def test_rejects_non_charts(tmp_path):
    with pytest.raises(TypeError, match="Altair chart"):
        save_figure({"mark": "point"}, "ok", directory=tmp_path)


def test_too_many_rows_asks_to_pre_aggregate(tmp_path):
    with pytest.raises(ValueError, match=r"(?s)5001 rows.*[Pp]re-aggregate"):
        save_figure(_chart(MAX_ROWS + 1), "big", directory=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_too_many_rows_caught_even_with_altair_limit_disabled(tmp_path):
    with alt.data_transformers.disable_max_rows():
        with pytest.raises(ValueError, match="5001 rows"):
            save_figure(_chart(MAX_ROWS + 1), "big", directory=tmp_path)


def test_exactly_max_rows_is_accepted(tmp_path):
    out = write_figure(_chart(MAX_ROWS), "edge", width=200, height=100, ppi=72, directory=tmp_path)
    assert _png_size(out["png"].read_bytes()) == (200, 100)


def test_default_directory_is_figures_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("BUFSIM_ROOT", str(tmp_path))
    out = write_figure(_chart(), "rooted", ppi=72)
    assert out["png"] == tmp_path / "build" / "figures" / "rooted.png", "never figures/ by default"
    assert out["png"].is_file() and out["svg"].is_file()


def test_save_figure_returns_the_chart_for_inline_display(tmp_path):
    chart = _chart()
    shown = save_figure(chart, "inline", width=300, height=200, directory=tmp_path)
    assert isinstance(shown, alt.Chart)
    spec = shown.to_dict()
    assert spec["width"] == 300 and spec["height"] == 200 and spec["title"] == "hit ratio"
    with alt.renderers.enable("mimetype"):
        bundle = shown._repr_mimebundle_()
    bundle = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.vegalite.v5+json" in bundle, "JupyterLab 4 renders Vega-Lite 5"
    assert (tmp_path / "inline.png").is_file() and (tmp_path / "inline.svg").is_file()


def test_provenance_in_png_and_svg(tmp_path):
    out = write_figure(_chart(), "prov", directory=tmp_path)
    meta = json.loads(figures.read_png_text(out["png"].read_bytes())[figures.PROVENANCE_KEY])
    assert meta["figure"] == "prov" and meta["bufsim_version"] == bufsim.__version__
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?|unknown", meta["git_commit"])
    svg = out["svg"].read_text(encoding="utf-8")
    comment = re.search(r"<!-- bufsim-provenance: (.*?) -->", svg).group(1)
    assert json.loads(comment) == meta
    ET.fromstring(svg)  # still well-formed XML


def test_quick_context_marks_the_title_and_records_parameters(tmp_path, monkeypatch):
    monkeypatch.setenv("BUFSIM_BUILD_DIR", str(tmp_path / "b"))
    monkeypatch.delenv("BUFSIM_FIGURES_DIR", raising=False)
    ctx = bufsim.notebooks.setup("99_t", quick=True, seed=3, output_dir=str(tmp_path / "o"),
                                 old_blocks_time_ms=[0, 250])
    try:
        shown = save_figure(_chart(), "quick")
    finally:
        provenance.set_context(None)
    assert shown.to_dict()["title"] == ["hit ratio", figures.QUICK_MARK]
    png = tmp_path / "o" / "figures" / "quick.png"
    assert ctx.figures_dir == png.parent and png.is_file()
    meta = json.loads(figures.read_png_text(png.read_bytes())[figures.PROVENANCE_KEY])
    assert meta["notebook"] == "99_t" and meta["quick"] is True
    assert meta["parameters"]["old_blocks_time_ms"] == [0, 250] and meta["parameters"]["seed"] == 3
    assert not (tmp_path / "b").exists()


def test_too_wide_figure_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"px wide.*more than 2000"):
        write_figure(_chart(), "wide", width=1200, height=100, ppi=144, directory=tmp_path)
    assert list(tmp_path.iterdir()) == []
