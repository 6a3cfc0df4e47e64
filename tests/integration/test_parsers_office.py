"""Integration tests of the Word (.docx) and PowerPoint (.pptx) parsers, on files the tests
write with python-docx and python-pptx, and end to end through the library."""

from __future__ import annotations

import datetime as dt
import functools
import io
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kbmcp_adapters.parsers.slides import PptxParser
from kbmcp_adapters.parsers.word import DocxParser
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ChunkDraft, ParsedDocument
from kbmcp_core.uris import doc_uri
from tests.conftest import OpenKb
from tests.integration.test_parsers import budget


def docx_bytes(build: Callable[[Any], None]) -> bytes:
    import docx

    document = docx.Document()
    build(document)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx_bytes(build: Callable[[Any], None]) -> bytes:
    import pptx

    deck = pptx.Presentation()
    build(deck)
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def table(document: Any, rows: list[tuple[str, ...]]) -> None:
    grid = document.add_table(rows=len(rows), cols=len(rows[0]))
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            grid.cell(i, j).text = value


def handbook(document: Any) -> None:
    """A spec with a title, nested headings, a table between paragraphs, and a list."""
    document.core_properties.created = dt.datetime(2024, 5, 6, 9, 30)
    document.add_paragraph("Supplier handbook", style="Title")
    document.add_paragraph("How we choose and pay suppliers.")
    document.add_heading("Contracts", level=1)
    document.add_paragraph("Every contract is reviewed by legal before signature.")
    document.add_heading("Payment terms", level=2)
    document.add_paragraph("Invoices are paid in the order they arrive.")
    table(document, [("Vendor", "Terms", "Region"), ("Acme Widgets", "net 45 days", "Nordics")])
    document.add_paragraph("Late fees are negotiated case by case.")
    document.add_heading("Onboarding", level=1)
    document.add_paragraph("Collect the tax form", style="List Bullet")
    document.add_paragraph("Open a vendor account", style="List Bullet")
    document.add_paragraph("# an ordinary line that starts with a hash sign")


def chunk_with(doc: ParsedDocument, needle: str) -> ChunkDraft:
    return next(c for c in doc.chunks if needle in c.content)


def assert_ranges_point_into(text: str, doc: ParsedDocument) -> None:
    """Every content line of every chunk is inside that chunk's line range of ``text``."""
    lines = text.split("\n")
    for chunk in doc.chunks:
        assert chunk.start_line is not None and chunk.end_line is not None
        window = lines[chunk.start_line - 1 : chunk.end_line]
        for line in chunk.content.split("\n"):
            assert line in window, (line, chunk)


# -- Word ----------------------------------------------------------------------------------


def test_docx_headings_become_the_heading_path_and_tables_stay_under_theirs() -> None:
    data = docx_bytes(handbook)
    doc = DocxParser().parse("specs/suppliers.docx", data, budget())
    assert doc.title == "Supplier handbook"
    assert doc.date == "2024-05-06"
    terms = chunk_with(doc, "Acme Widgets | net 45 days | Nordics")
    assert terms.heading_path == ("Contracts", "Payment terms")
    # body order: the paragraphs around the table are in the same section, in order
    assert terms.content.index("arrive") < terms.content.index("Acme") < terms.content.index(
        "Late fees"
    )
    onboarding = chunk_with(doc, "Open a vendor account")
    assert onboarding.heading_path == ("Onboarding",)
    assert "- Collect the tax form\n- Open a vendor account" in onboarding.content
    # a paragraph starting with '#' is text, not a new heading
    assert "an ordinary line" in onboarding.content
    assert all("an ordinary line" not in c.heading for c in doc.chunks)


def test_docx_line_ranges_point_into_the_served_text() -> None:
    data = docx_bytes(handbook)
    text = DocxParser().extract_text("s.docx", data)
    assert text.startswith("# Supplier handbook\n")
    assert "## Payment terms" in text
    doc = DocxParser().parse("s.docx", data, budget())
    assert len(doc.chunks) >= 3
    assert_ranges_point_into(text, doc)


def test_docx_title_falls_back_from_core_title_to_first_heading_to_file_name() -> None:
    def titled(document: Any) -> None:
        document.core_properties.title = "Procurement policy 2025"
        handbook(document)

    def heading_only(document: Any) -> None:
        document.add_paragraph("Preface text.")
        document.add_heading("Travel rules", level=1)
        document.add_paragraph("Book economy class.")

    def untitled(document: Any) -> None:
        document.add_paragraph("Just a paragraph of notes about the offsite.")

    parser = DocxParser()
    assert parser.parse("a.docx", docx_bytes(titled), budget()).title == "Procurement policy 2025"
    assert parser.parse("a.docx", docx_bytes(heading_only), budget()).title == "Travel rules"
    assert parser.parse("team/offsite-notes.docx", docx_bytes(untitled), budget()).title == (
        "offsite notes"
    )


W_NS = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
MC_NS = 'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"'


def word_markup(document: Any) -> None:
    """What Word writes and python-docx's own paragraph list leaves out: a content control
    around a paragraph, tracked changes, a text box (with its legacy VML copy)."""
    from docx.oxml import parse_xml

    document.add_heading("Review notes", level=1)
    body = document.element.body
    body.append(parse_xml(
        f'<w:sdt {W_NS}><w:sdtContent><w:p><w:r><w:t>Clause inside a content control'
        "</w:t></w:r></w:p></w:sdtContent></w:sdt>"))
    body.append(parse_xml(
        f"<w:p {W_NS}><w:r><w:t xml:space='preserve'>The fee is </w:t></w:r>"
        '<w:del w:id="1" w:author="a"><w:r><w:delText>ninety</w:delText></w:r></w:del>'
        '<w:ins w:id="2" w:author="a"><w:r><w:t>seventy</w:t></w:r></w:ins>'
        "<w:r><w:t xml:space='preserve'> crowns.</w:t></w:r></w:p>"))
    box = ("<w:txbxContent><w:p><w:r><w:t>Boxed reminder about the kestrel audit</w:t>"
           "</w:r></w:p></w:txbxContent>")
    body.append(parse_xml(
        f"<w:p {W_NS} {MC_NS}><w:r><w:t>Anchor paragraph.</w:t></w:r><w:r>"
        f"<mc:AlternateContent><mc:Choice Requires='wps'><w:drawing><w:txbx>{box}</w:txbx>"
        f"</w:drawing></mc:Choice><mc:Fallback><w:pict><w:txbx>{box}</w:txbx></w:pict>"
        "</mc:Fallback></mc:AlternateContent></w:r></w:p>"))
    body.append(body.sectPr)  # the section properties stay last


def test_docx_content_controls_tracked_changes_and_text_boxes_are_read_once() -> None:
    data = docx_bytes(word_markup)
    text = DocxParser().extract_text("r.docx", data)
    assert "Clause inside a content control" in text
    assert "The fee is seventy crowns." in text
    assert "ninety" not in text
    assert text.count("Boxed reminder about the kestrel audit") == 1
    assert text.index("Anchor paragraph.") < text.index("Boxed reminder")
    doc = DocxParser().parse("r.docx", data, budget())
    assert chunk_with(doc, "kestrel audit").heading_path == ("Review notes",)


def test_an_empty_docx_has_no_chunks() -> None:
    doc = DocxParser().parse("empty.docx", docx_bytes(lambda d: None), budget())
    assert doc.chunks == ()


# -- PowerPoint ----------------------------------------------------------------------------


def review_deck(deck: Any) -> None:
    from pptx.util import Inches

    deck.core_properties.title = "PowerPoint Presentation"  # PowerPoint's default: ignored
    first = deck.slides.add_slide(deck.slide_layouts[0])
    first.shapes.title.text = "Quarterly review"
    first.placeholders[1].text = "Team Falcon, spring edition"
    budget_slide = deck.slides.add_slide(deck.slide_layouts[1])
    budget_slide.shapes.title.text = "Budget"
    frame = budget_slide.placeholders[1].text_frame
    frame.text = "Spending stayed flat this quarter"
    sub = frame.add_paragraph()
    sub.text = "travel costs went down"
    sub.level = 1
    notes = budget_slide.notes_slide.notes_text_frame
    notes.text = "Mention the heron contingency fund before questions"
    numbers = deck.slides.add_slide(deck.slide_layouts[5])
    numbers.shapes.title.text = "Numbers by region"
    grid = numbers.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for (i, j), value in {(0, 0): "Region", (0, 1): "Revenue",
                          (1, 0): "Nordics", (1, 1): "12 MEUR"}.items():
        grid.cell(i, j).text = value
    wide = numbers.shapes.add_table(2, 3, Inches(1), Inches(3), Inches(6), Inches(1)).table
    wide.cell(0, 0).merge(wide.cell(0, 1))
    wide.cell(0, 0).text = "Merged header"
    wide.cell(0, 2).text = "Note"
    for j, value in enumerate(("alpha", "beta", "gamma")):
        wide.cell(1, j).text = value
    group = numbers.shapes.add_group_shape()
    box = group.shapes.add_textbox(Inches(1), Inches(4), Inches(3), Inches(1))
    box.text_frame.text = "grouped footnote about currency conversion"
    closing = deck.slides.add_slide(deck.slide_layouts[5])
    closing.shapes.title.text = "Questions"


def test_pptx_slides_are_sections_with_their_number_on_every_chunk() -> None:
    data = pptx_bytes(review_deck)
    doc = PptxParser().parse("decks/review.pptx", data, budget())
    assert doc.title == "Quarterly review"
    assert {c.page for c in doc.chunks} == {1, 2, 3, 4}
    for chunk in doc.chunks:
        assert chunk.heading_path[0].startswith(f"Slide {chunk.page}")
    body = chunk_with(doc, "Spending stayed flat")
    assert (body.page, body.heading_path) == (2, ("Slide 2: Budget",))
    assert "- travel costs went down" in body.content
    notes = chunk_with(doc, "heron contingency fund")
    assert (notes.page, notes.heading_path) == (2, ("Slide 2: Budget", "Notes on slide 2"))
    cells = chunk_with(doc, "Nordics | 12 MEUR")
    assert cells.page == 3
    assert "Region | Revenue" in cells.content
    assert chunk_with(doc, "grouped footnote").page == 3
    assert "Merged header |  | Note\nalpha | beta | gamma" in chunk_with(doc, "Merged").content


def test_pptx_a_tiny_slide_keeps_its_own_number_even_when_chunks_merge() -> None:
    # with a minimum chunk size the one-word "Questions" slide would join slide 3 if the
    # deck were chunked as one text; it must keep page 4
    doc = PptxParser().parse("r.pptx", pptx_bytes(review_deck), budget(256, min_tokens=40))
    last = [c for c in doc.chunks if "Questions" in c.heading]
    assert [c.page for c in last] == [4]
    assert all(c.heading_path[0].startswith(f"Slide {c.page}") for c in doc.chunks)


def test_pptx_line_ranges_point_into_the_served_text() -> None:
    data = pptx_bytes(review_deck)
    text = PptxParser().extract_text("r.pptx", data)
    assert text.startswith("# Slide 1: Quarterly review\n")
    assert "# Slide 2: Budget" in text and "## Notes on slide 2" in text
    doc = PptxParser().parse("r.pptx", data, budget())
    assert_ranges_point_into(text, doc)
    lines = text.split("\n")
    for chunk in doc.chunks:
        assert chunk.start_line is not None
        above = [ln for ln in lines[: chunk.start_line] if ln.startswith("# Slide ")]
        assert above[-1].startswith(f"# Slide {chunk.page}")


def test_pptx_core_title_wins_and_untitled_decks_use_the_file_name() -> None:
    def titled(deck: Any) -> None:
        review_deck(deck)
        deck.core_properties.title = "Falcon review Q2"

    def blank(deck: Any) -> None:
        slide = deck.slides.add_slide(deck.slide_layouts[6])
        from pptx.util import Inches

        slide.shapes.add_textbox(Inches(1), Inches(1), Inches(3), Inches(1)).text_frame.text = (
            "an untitled slide with words"
        )

    parser = PptxParser()
    assert parser.parse("a.pptx", pptx_bytes(titled), budget()).title == "Falcon review Q2"
    doc = parser.parse("talks/lightning-talk.pptx", pptx_bytes(blank), budget())
    assert doc.title == "lightning talk"
    assert [(c.heading, c.page) for c in doc.chunks] == [("Slide 1", 1)]


def without_core_properties(data: bytes) -> bytes:
    """The package with docProps/core.xml and its relationship removed."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        rels = z.read("_rels/.rels").decode()
    rels = re.sub(r"<Relationship [^>]*core-properties[^>]*/>", "", rels)
    return rezip(data, {"docProps/core.xml": None, "_rels/.rels": rels.encode()})


def test_files_without_core_properties_take_their_title_from_the_content() -> None:
    def titled(document: Any) -> None:
        document.core_properties.title = "Procurement policy 2025"
        handbook(document)

    def titled_deck(deck: Any) -> None:
        review_deck(deck)
        deck.core_properties.title = "Falcon review Q2"

    docx_doc = DocxParser().parse("a.docx", without_core_properties(docx_bytes(titled)), budget())
    assert (docx_doc.title, docx_doc.date) == ("Supplier handbook", None)
    assert len(docx_doc.chunks) >= 3
    deck = PptxParser().parse("a.pptx", without_core_properties(pptx_bytes(titled_deck)), budget())
    assert (deck.title, deck.date) == ("Quarterly review", None)


# -- hostile and broken files --------------------------------------------------------------


def rezip(data: bytes, replace: dict[str, bytes | None]) -> bytes:
    """A copy of the ZIP ``data`` with some entries replaced or added (None drops one)."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as src,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            if info.filename in replace:
                new = replace[info.filename]
                if new is not None:
                    dst.writestr(info.filename, new)
            else:
                dst.writestr(info, src.read(info.filename))
        for name, new in replace.items():
            if new is not None and name not in src.namelist():
                dst.writestr(name, new)
    return out.getvalue()


OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(range(256)) * 8


@functools.cache
def hostile_cases(kind: str) -> dict[str, bytes]:
    if kind == "docx":
        good, other, part = docx_bytes(handbook), pptx_bytes(review_deck), "word/document.xml"
    else:
        good, other, part = pptx_bytes(review_deck), docx_bytes(handbook), "ppt/slides/slide1.xml"
    return {
        "truncated": good[: len(good) // 2],
        "encrypted": OLE,
        "not a zip": b"Quarterly numbers, exported as plain text.\n" * 20,
        "broken xml": rezip(good, {part: b"<?xml version='1.0'?><unclosed"}),
        "missing part": rezip(good, {part: None}),
        "no content types": rezip(good, {"[Content_Types].xml": b"<Types/>"}),
        "other office format": other,
        "zip bomb": rezip(good, {"customXml/filler.xml": b"<a/>" + b" " * (51 * 1024 * 1024)}),
        "too many entries": rezip(good, {f"customXml/x{i}.xml": b"<a/>" for i in range(10_001)}),
    }


HOSTILE = ["truncated", "encrypted", "not a zip", "broken xml", "missing part",
           "no content types", "other office format", "zip bomb", "too many entries"]


@pytest.mark.parametrize("case", HOSTILE)
@pytest.mark.parametrize("kind", ["docx", "pptx"])
def test_corrupt_encrypted_and_renamed_files_are_refused_with_one_line(
    kind: str, case: str
) -> None:
    parser: DocxParser | PptxParser = DocxParser() if kind == "docx" else PptxParser()
    data = hostile_cases(kind)[case]
    with pytest.raises(ParseError) as parsing:
        parser.parse(f"x.{kind}", data, budget())
    with pytest.raises(ParseError) as extracting:
        parser.extract_text(f"x.{kind}", data)
    message = str(parsing.value)
    assert str(extracting.value) == message
    assert message and "\n" not in message and len(message) < 200
    assert "BytesIO" not in message
    if case == "encrypted":
        assert "encrypted" in message
    if case in ("zip bomb", "too many entries"):
        assert "ZIP bomb" in message
    if case == "other office format":
        assert "check the file extension" in message


# -- end to end ----------------------------------------------------------------------------


def test_office_files_index_search_with_their_locators_and_read(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "decks").mkdir()
    (tmp_path / "specs/suppliers.docx").write_bytes(docx_bytes(handbook))
    (tmp_path / "decks/review.pptx").write_bytes(pptx_bytes(review_deck))
    (tmp_path / "decks/locked.pptx").write_bytes(OLE)
    (tmp_path / "notes.md").write_text("# Notes\n\nA note about gardening.\n", encoding="utf-8")
    kb = open_kb(tmp_path, enabled_formats=("md", "docx", "pptx"))
    summary = kb.index()
    assert (summary.added, summary.failed) == (3, 1)

    hits = kb.search("heron contingency fund").results
    notes = next(h for h in hits if h.path == "decks/review.pptx")
    assert notes.page == 2
    assert notes.heading_path == ("Slide 2: Budget", "Notes on slide 2")
    assert "heron contingency fund" in notes.content

    hits = kb.search("Acme Widgets payment terms net 45 days").results
    terms = next(h for h in hits if h.path == "specs/suppliers.docx")
    assert terms.heading_path == ("Contracts", "Payment terms")
    assert "Acme Widgets | net 45 days" in terms.content
    assert terms.start_line is not None and terms.end_line is not None

    doc = kb.get_document("specs/suppliers.docx")
    assert doc.title == "Supplier handbook"
    lines = doc.content.split("\n")
    assert "## Payment terms" in lines[terms.start_line - 1 : terms.end_line]
    assert any("Acme Widgets" in ln for ln in lines[terms.start_line - 1 : terms.end_line])

    body = kb.read_resource(doc_uri("decks/review.pptx"))
    assert body.media_type == "text/markdown"
    assert "# Slide 2: Budget" in body.text and "heron contingency fund" in body.text
    assert kb.get_document("decks/review.pptx").content == body.text
