"""The ``ocr`` format (decision 0053): image-only PDF pages and images read by RapidOCR in
the parser workers, cited by page and by the lines of the recognised text; a page over
the OCR budget is refused by name with the rest kept; a missing engine is a one-line
error naming the extra."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kbmcp_adapters.parsers.ocr import IMAGE_EXTENSIONS, ImageParser
from kbmcp_adapters.parsers.pdf import PdfParser
from kbmcp_adapters.parsers.registry import build_registry
from kbmcp_core.errors import ConfigError, ParseError
from kbmcp_core.ports import ChunkBudget
from kbmcp_core.reading import IMAGE_FORMATS
from tests.conftest import OpenKb, write_files
from tests.scans import scan_png, scanned_pdf

LIGHTHOUSE = ["The lighthouse keeper records", "every passing ship at dawn."]
BUDGET = ChunkBudget(max_tokens=200, min_tokens=8, counter=lambda text: len(text.split()) + 2)


def test_a_scanned_pdf_page_is_found_by_a_phrase_and_cited_by_page_and_line(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    root = tmp_path / "kb"
    write_files(root, {
        "harbour.pdf": scanned_pdf(["Harbour dues are paid monthly.", scan_png(LIGHTHOUSE)]),
        "notes.md": "# Notes\n\nThe harbour office opens at nine.\n",
    })  # fmt: skip
    kb = open_kb(root, enabled_formats=("md", "pdf", "ocr"))
    summary = kb.index()
    assert (summary.added, summary.failed) == (2, 0)
    top = kb.search("lighthouse keeper records every passing ship", limit=3).results[0]
    assert (top.path, top.page) == ("harbour.pdf", 2)
    served = kb.get_document("harbour.pdf").content
    assert served.startswith("Harbour dues are paid monthly.")  # the text layer is kept
    assert top.start_line is not None and top.end_line is not None
    assert served.split("\n")[top.start_line - 1 : top.end_line] == LIGHTHOUSE
    typed = kb.search("harbour dues paid monthly", limit=3).results[0]
    assert (typed.path, typed.page, typed.start_line) == ("harbour.pdf", 1, None)


def test_an_image_is_a_document_whose_recognised_lines_are_served(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    root = tmp_path / "kb"
    write_files(root, {"whiteboard.png": scan_png(["Sprint goals:", "ship the tide tables"])})
    assert set(IMAGE_EXTENSIONS) == IMAGE_FORMATS  # the read path knows them as bytes
    kb = open_kb(root, enabled_formats=("md", "ocr"))
    assert kb.index().added == 1
    hit = kb.search("tide tables", limit=1).results[0]
    assert (hit.path, hit.start_line, hit.end_line) == ("whiteboard.png", 1, 2)
    assert kb.get_document("whiteboard.png").content == "Sprint goals:\nship the tide tables"


def test_a_page_over_the_ocr_budget_is_refused_by_name_and_the_rest_kept() -> None:
    data = scanned_pdf(["A typed cover page.", None, scan_png(LIGHTHOUSE)])
    doc = PdfParser(ocr=True).parse("mixed.pdf", data, BUDGET)
    assert doc.warnings == ("page 2 not recognised: 40,000 x 40,000 pixels is over the "
                            "40,000,000 an OCR page may have",)
    assert [c.page for c in doc.chunks] == [1, 3]
    assert doc.chunks[1].content == "\n".join(LIGHTHOUSE)


def test_without_ocr_a_scan_says_which_format_reads_it() -> None:
    with pytest.raises(ParseError, match=r"image-only PDF\?\); the ocr format reads scanned "
                                         r"pages \(pip install 'kb-mcp\[ocr\]'"):
        PdfParser().parse("scan.pdf", scanned_pdf([scan_png(LIGHTHOUSE)]), BUDGET)
    with pytest.raises(ParseError, match=r"^not a readable image \("):
        ImageParser().parse("broken.png", b"\x89PNG\r\n\x1a\nnot really", BUDGET)


def test_enabling_ocr_without_the_engine_names_the_extra_in_one_line(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "rapidocr", None)  # not importable
    with pytest.raises(ConfigError) as raised:
        build_registry(["md", "ocr"])
    assert str(raised.value) == ("[parsers].enabled: the ocr format needs RapidOCR, which "
                                 "is not installed: pip install 'kb-mcp[ocr]'")
