"""The budgets of OCR on long scans (decision 0053, addendum): each page to recognise
gives its conversion more time (also to the pool's clock in the parent), at most
``MAX_OCR_PAGES`` pages of one document are recognised and the rest are refused by
name, a blank page is not recognised, and MuPDF's cache of decoded images does not grow
with the pages of a scan."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.parsers.budget import Meter, ParserLimits
from kbmcp_adapters.parsers.isolation import Isolation
from kbmcp_adapters.parsers.ocr import MAX_OCR_PAGES, OCR_PAGE_SECONDS, OcrBudget
from kbmcp_adapters.parsers.pdf import PdfParser
from kbmcp_adapters.parsers.registry import FormatRegistry, build_registry
from kbmcp_core.ports import ChunkBudget
from tests.scans import scan_png, scanned_pdf

LIGHTHOUSE = ["The lighthouse keeper records", "every passing ship at dawn."]
BUDGET = ChunkBudget(max_tokens=200, min_tokens=8, counter=lambda text: len(text.split()) + 2)


def blank_pages(count: int, side: int = 64) -> list[bytes]:
    """``count`` different near-blank grey PNGs (white, one light-grey dot each)."""
    from PIL import Image

    pages = []
    for number in range(count):
        image = Image.new("L", (side, side), 255)
        image.putpixel((number % side, (number // side) % side), 240)
        out = io.BytesIO()
        image.save(out, "PNG")
        pages.append(out.getvalue())
    return pages


@pytest.fixture
def ocr_pool() -> Iterator[list[FormatRegistry]]:
    made: list[FormatRegistry] = []
    yield made
    for registry in made:
        registry.close()


def test_each_scanned_page_gives_the_conversion_more_time_up_to_the_page_cap() -> None:
    meter = Meter(ParserLimits(timeout_seconds=60))
    OcrBudget(meter).plan(3)
    assert meter.seconds == 60 + 3 * OCR_PAGE_SECONDS
    capped = Meter(ParserLimits(timeout_seconds=60))
    OcrBudget(capped).plan(10_000)
    assert capped.seconds == 60 + MAX_OCR_PAGES * OCR_PAGE_SECONDS


def test_a_scan_longer_than_its_timeout_is_read_whole_in_a_worker(
    ocr_pool: list[FormatRegistry]
) -> None:
    """One second is less than four pages of OCR: each page's extra time reaches the
    worker's clock and the pool's, and no page is refused."""
    registry = build_registry(["pdf", "ocr"], ParserLimits(timeout_seconds=1),
                              Isolation(workers=1))
    ocr_pool.append(registry)
    parser = registry.parser_for("pdf")
    assert parser is not None
    pages = [scan_png([f"Tide table {n}", *LIGHTHOUSE]) for n in range(1, 5)]
    doc = parser.parse("tides.pdf", scanned_pdf(pages), BUDGET)
    assert doc.warnings == ()
    assert [c.page for c in doc.chunks] == [1, 2, 3, 4]
    assert doc.chunks[3].content.startswith("Tide table 4")


def test_pages_past_the_cap_are_refused_by_name_and_blank_pages_are_not_read() -> None:
    """A hostile PDF of many blank image pages ends quickly: blank pages are not
    recognised, and the pages past ``MAX_OCR_PAGES`` are not even rendered."""
    data = scanned_pdf([scan_png(LIGHTHOUSE), *blank_pages(MAX_OCR_PAGES + 4)])
    doc = PdfParser(ocr=True).parse("hostile.pdf", data, BUDGET)
    first, last = MAX_OCR_PAGES + 1, MAX_OCR_PAGES + 5
    assert doc.warnings == (f"pages {first}-{last} not recognised: kb-mcp recognises at "
                            f"most {MAX_OCR_PAGES} scanned pages of one document",)
    assert [(c.page, c.content) for c in doc.chunks] == [(1, "\n".join(LIGHTHOUSE))]


_PEAK = """
import json, sys
import PIL.Image
from kbmcp_adapters.parsers.mupdf import pymupdf
from kbmcp_adapters.parsers.pdf import PdfParser
def mib(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) // 1024
data = open(sys.argv[1], "rb").read()
PdfParser(ocr=True).convert("one.pdf", open(sys.argv[2], "rb").read())  # libraries warm
before = mib("VmRSS")
PdfParser(ocr=True).convert("scan.pdf", data)
print(json.dumps({"grew": mib("VmHWM") - before}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_the_decoded_images_of_a_scan_are_not_kept_page_after_page(tmp_path: Path) -> None:
    """40 scanned pages of 2,000 x 2,000 pixels (4 MB each once decoded): MuPDF kept
    every one in its cache, 160 MB by the last page; now the conversion's peak stays
    near one page's."""
    pdf = tmp_path / "scan.pdf"
    pdf.write_bytes(scanned_pdf(blank_pages(40, side=2000)))
    one = tmp_path / "one.pdf"
    one.write_bytes(scanned_pdf(blank_pages(1, side=2000)))
    ran = subprocess.run([sys.executable, "-c", _PEAK, str(pdf), str(one)], capture_output=True,
                         text=True, timeout=300, check=True)
    assert json.loads(ran.stdout)["grew"] < 60, ran.stdout
