"""PDF chunks are headed by the section their text is under, located within the page:
from the outline (bookmarks) when there is one, from font sizes otherwise (issue 26,
item 2). Real pymupdf on PDFs generated here."""

from __future__ import annotations

import math
from typing import Any

import pytest

from kbmcp_adapters.parsers.pdf import PdfParser
from kbmcp_core.models import ParsedDocument
from kbmcp_core.ports import ChunkBudget

H212 = "2.12. Recommended checking order"
H213 = "2.13. Non-regular files"


def budget() -> ChunkBudget:
    return ChunkBudget(
        max_tokens=256, min_tokens=0, counter=lambda t: math.ceil(len(t.split()) * 1.3) + 2
    )


def spec_pdf(outline: str) -> bytes:
    """Two pages shaped like the shared-mime-info spec: 2.12 starts on page 1 and its text
    runs onto page 2, where 2.13 starts half-way down. ``outline``: ``"points"``
    (bookmarks with destination points), ``"points-only"`` (the same, 2.13's bookmark
    titled unlike its heading: only its point places it), ``"pages"`` (bookmarks to the
    page only; the title on the page is spelled differently) or ``"none"`` (headings by
    font size)."""
    import pymupdf

    pdf: Any = pymupdf
    doc = pdf.open()
    page = doc.new_page()
    page.insert_text((72, 60), "Shared MIME-info Database", fontsize=10)
    page.insert_text((72, 110), "2. Unified system", fontsize=20)
    page.insert_text((72, 160), H212, fontsize=15)
    page.insert_textbox(pdf.Rect(72, 180, 540, 700),
                        "Because different applications have different requirements, "
                        "they may choose to use only some of the methods. checkorderstart "
                        "However, the RECOMMENDED order to perform the checks is:",
                        fontsize=10)  # fmt: skip
    page = doc.new_page()
    page.insert_textbox(pdf.Rect(72, 60, 540, 200),
                        "There are several reasons for checking the glob patterns before "
                        "the magic: globweightsdecide the result of the match.",
                        fontsize=10)  # fmt: skip
    page.insert_text((72, 400), H213, fontsize=15)
    page.insert_textbox(pdf.Rect(72, 420, 540, 700),
                        "Sometimes it is useful to assign MIME types to other objects in "
                        "the filesystem, such as directories and sockets: inodeobjects.",
                        fontsize=10)  # fmt: skip
    if outline in ("points", "points-only"):
        doc.set_toc([
            [1, "2. Unified system", 1, {"kind": 1, "to": pdf.Point(72, 92), "page": 0}],
            [2, "2.12. Recommended checking order", 1,
             {"kind": 1, "to": pdf.Point(72, 146), "page": 0}],
            [2, "2.13. Nonregular files" if outline == "points" else "Special objects", 2,
             {"kind": 1, "to": pdf.Point(72, 386), "page": 1}],
        ])  # fmt: skip
    elif outline == "pages":
        doc.set_toc([[1, "2. Unified system", 1], [2, "2.12. Recommended checking order", 1],
                     [2, "2.13. Nonregular files", 2]])  # fmt: skip
    data: bytes = doc.tobytes()
    doc.close()
    return data


def chunk_with(doc: ParsedDocument, word: str) -> Any:
    return next(c for c in doc.chunks if word in c.content)


@pytest.mark.parametrize("outline", ["points", "points-only", "pages", "none"])
def test_the_end_of_a_section_on_the_page_where_the_next_starts_keeps_its_heading(
    outline: str,
) -> None:
    doc = PdfParser().parse("spec.pdf", spec_pdf(outline), budget())
    title_212 = H212 if outline == "none" else "2.12. Recommended checking order"
    title_213 = {"none": H213, "points-only": "Special objects"}.get(
        outline, "2.13. Nonregular files"
    )
    end_of_212 = chunk_with(doc, "globweightsdecide")
    assert end_of_212.page == 2
    assert end_of_212.heading_path == ("2. Unified system", title_212)
    assert "inodeobjects" not in end_of_212.content
    start_of_212 = chunk_with(doc, "checkorderstart")
    assert (start_of_212.page, start_of_212.heading) == (1, title_212)
    body_213 = chunk_with(doc, "inodeobjects")
    assert (body_213.page, body_213.heading_path) == (2, ("2. Unified system", title_213))
    assert H213 in body_213.content


def test_a_pdf_in_one_font_size_keeps_page_headings() -> None:
    import pymupdf

    pdf: Any = pymupdf
    doc = pdf.open()
    for n in range(2):
        page = doc.new_page()
        page.insert_textbox(pdf.Rect(50, 50, 550, 800), f"Plain words on page {n} here.\n"
                            "A second paragraph with more words.", fontsize=9)  # fmt: skip
    data: bytes = doc.tobytes()
    doc.close()
    parsed = PdfParser().parse("plain.pdf", data, budget())
    assert [c.heading_path for c in parsed.chunks] == [("Page 1",), ("Page 2",)]
