"""What a reader sees on a slide is kept: chart titles, categories, series and values; a
picture's alt text; empty table cells (so columns stay in place); and a slide hit carries
both its slide number and its line range (decks written by the tests with python-pptx)."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path
from typing import Any

from kbmcp_adapters.parsers.slides import PptxParser
from tests.conftest import OpenKb
from tests.integration.test_parsers_office import pptx_bytes


def png() -> bytes:
    """A 1x1 PNG."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


def charted(deck: Any) -> None:
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Harvest"
    data = CategoryChartData()
    data.categories = ["Orchard north", "Orchard south"]
    data.add_series("Quinces", (12.5, 30))
    data.add_series("Medlars", (4, 7))
    frame = slide.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(1), Inches(5), Inches(3), data
    )
    frame.chart.has_title = True
    frame.chart.chart_title.text_frame.text = "Tonnes picked per orchard"
    picture = slide.shapes.add_picture(io.BytesIO(png()), Inches(6), Inches(1))
    picture._element._nvXxPr.cNvPr.set("descr", "Aerial photo of the walled garden")
    grid = slide.shapes.add_table(3, 3, Inches(1), Inches(5), Inches(6), Inches(1)).table
    for (i, j), value in {(0, 0): "Crop", (0, 1): "Grade", (0, 2): "Buyer",
                          (1, 0): "Quince", (1, 2): "Market hall",
                          (2, 1): "B", (2, 2): "Cannery"}.items():  # fmt: skip
        grid.cell(i, j).text = value


def test_pptx_charts_alt_text_and_empty_cells_are_kept() -> None:
    text = PptxParser().extract_text("harvest.pptx", pptx_bytes(charted))
    assert (
        "Chart: Tonnes picked per orchard\n"
        "category | Quinces | Medlars\n"
        "Orchard north | 12.5 | 4\n"
        "Orchard south | 30 | 7"
    ) in text
    assert "[image: Aerial photo of the walled garden]" in text
    assert "Crop | Grade | Buyer\nQuince |  | Market hall\n| B | Cannery" in text


def test_pptx_merged_cells_keep_the_columns_after_them_in_place() -> None:
    def build(deck: Any) -> None:
        from pptx.util import Inches

        slide = deck.slides.add_slide(deck.slide_layouts[5])
        grid = slide.shapes.add_table(2, 3, Inches(1), Inches(2), Inches(6), Inches(1)).table
        grid.cell(0, 0).merge(grid.cell(0, 1))
        grid.cell(0, 0).text = "Both"
        grid.cell(0, 2).text = "Third"
        for j, value in enumerate(("one", "two", "three")):
            grid.cell(1, j).text = value

    text = PptxParser().extract_text("m.pptx", pptx_bytes(build))
    assert "Both |  | Third\none | two | three" in text


def test_a_slide_hit_carries_its_slide_and_its_line_range(tmp_path: Path, open_kb: OpenKb) -> None:
    (tmp_path / "harvest.pptx").write_bytes(pptx_bytes(charted))
    kb = open_kb(tmp_path, enabled_formats=("pptx",))
    assert kb.index().added == 1
    hit = next(h for h in kb.search("Medlars quinces tonnes per orchard").results)
    shown = hit.as_dict()
    assert shown["page"] == 1
    assert isinstance(shown["start_line"], int) and isinstance(shown["end_line"], int)
    lines = kb.get_document("harvest.pptx").content.split("\n")
    assert any("Medlars" in line for line in lines[shown["start_line"] - 1 : shown["end_line"]])


def test_pptx_scatter_charts_keep_their_x_and_y_values() -> None:
    def build(deck: Any) -> None:
        from pptx.chart.data import XyChartData
        from pptx.enum.chart import XL_CHART_TYPE
        from pptx.util import Inches

        slide = deck.slides.add_slide(deck.slide_layouts[5])
        data = XyChartData()
        series = data.add_series("Tide height")
        for x, y in ((6.5, 1.25), (12.75, 3.5)):
            series.add_data_point(x, y)
        slide.shapes.add_chart(
            XL_CHART_TYPE.XY_SCATTER, Inches(1), Inches(1), Inches(5), Inches(3), data
        )

    text = PptxParser().extract_text("tides.pptx", pptx_bytes(build))
    assert "Chart\nx | Tide height\n6.5 | 1.25\n12.75 | 3.5" in text
