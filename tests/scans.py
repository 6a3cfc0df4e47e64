"""Scanned pages the OCR tests make (decision 0053): text rendered with PyMuPDF to a PNG,
and PDFs whose pages are typed text, such an image (no text layer), or an oversized
image-only page. Small pages keep the recognition cheap (well under a second each)."""

from __future__ import annotations

from collections.abc import Sequence

from kbmcp_adapters.parsers.mupdf import pymupdf

#: The largest page a PDF may have (points): at 200 dpi it is 40,000 x 40,000 pixels.
HUGE_PAGE = 14_400.0


def scan_png(lines: Sequence[str], dpi: int = 150) -> bytes:
    """``lines`` set in 14 pt on a small page, rendered to a grey PNG at ``dpi``."""
    with pymupdf.open() as doc:
        page = doc.new_page(width=360, height=40 + 22 * len(lines))
        for number, line in enumerate(lines):
            page.insert_text((20, 30 + 22 * number), line, fontsize=14)
        png: bytes = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY).tobytes("png")
        return png


def scanned_pdf(pages: Sequence[str | bytes | None]) -> bytes:
    """A PDF, one page per entry: a str is typed text (a text layer), bytes a PNG placed
    over the whole page (no text layer), None an image-only page of ``HUGE_PAGE`` square."""
    with pymupdf.open() as doc:
        for entry in pages:
            if isinstance(entry, str):
                page = doc.new_page(width=360, height=120)
                page.insert_text((20, 40), entry, fontsize=12)
            elif entry is None:
                page = doc.new_page(width=HUGE_PAGE, height=HUGE_PAGE)
                page.insert_image(page.rect, stream=scan_png(["far too large"], dpi=50))
            else:
                page = doc.new_page(width=360, height=120)
                page.insert_image(page.rect, stream=entry)
        data: bytes = doc.tobytes()
        return data
