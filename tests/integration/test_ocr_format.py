"""The ``ocr`` format (decision 0053): image-only PDF pages and images read by RapidOCR in
the parser workers, cited by page and by the lines of the recognised text; a page over
the OCR budget is refused by name with the rest kept; a missing engine is a one-line
error naming the extra."""

from __future__ import annotations

import struct
import sys
import zlib
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


def _png_header_only(width: int, height: int) -> bytes:
    """A grey PNG that says it is ``width`` x ``height``: its pixels are never decoded when
    the budget refuses the page, so a few bytes stand in for a huge scan."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b""))


def test_an_image_with_no_text_is_skipped_as_such_and_a_refused_one_still_fails(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    # a folder of HTML docs ships its navigation arrows as PNGs: read whole, no text in
    # them, they are skipped like an empty file, not counted as files kb-mcp failed to read
    root = tmp_path / "kb"
    write_files(root, {
        "whiteboard.png": scan_png(["Sprint goals:", "ship the tide tables"]),
        "left.png": scan_png([]),
        "huge.png": _png_header_only(7_000, 7_000),
    })  # fmt: skip
    kb = open_kb(root, enabled_formats=("md", "ocr"))
    summary = kb.index()
    assert summary.added == 1
    assert summary.skipped_files == {"no text to index": ["left.png"]}
    assert summary.failed_files == {"could not be read as its format": ["huge.png"]}
    assert any(w.startswith("huge.png: no text recognised in this image: page 1 not "
                            "recognised: 7,000 x 7,000 pixels") for w in summary.warnings)
    assert kb.search("tide tables", limit=3).results[0].path == "whiteboard.png"


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
