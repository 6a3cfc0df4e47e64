"""PDF parser (pymupdf, imported lazily): page-aware chunks, title and date from metadata.

* Opened from bytes; an encrypted (password-protected), damaged or non-PDF file is a
  ``ParseError`` with a one-line reason, as is a PDF with fewer than
  ``MIN_TEXT_CHARS`` non-space characters in all (a scan without a text layer).
* Each page's text blocks become paragraphs, packed under the budget; a page never shares
  a chunk with another page, so every chunk has one ``page`` (1-based). Chunks carry no
  line numbers.
* Heading: the section the text is under. Sections start at text blocks: from the outline
  (bookmarks) when the PDF has one, else from headings set in a larger font
  (``pdfheadings``); a page's text is cut where a section starts, so the end of one
  section that shares a page with the start of the next keeps its own heading. Text
  before the first section is headed ``"Page N"``.
* Work is budgeted (``budget.Meter``): pages count as elements, their text as produced
  characters. ``convert`` reads the PDF (in a parser worker process when isolation is on)
  into a picklable ``PdfPages``; ``text_of`` and ``document`` serve and chunk it.
* Title from the metadata title, else the file name; date from the creation date.
* With OCR on (the ``ocr`` format enabled, decision 0053), a page that has no text but
  holds an image is rendered and recognised (``ocr``): its lines are one block, and its
  chunks cite the page and the lines of the served text they hold. A page over the OCR
  budgets is refused by a warning naming it; the rest of the document is kept.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kbmcp_adapters.parsers.budget import DEFAULT_LIMITS, Meter, ParserLimits
from kbmcp_adapters.parsers.chunking import (
    Unit,
    fit_heading_path,
    join_lines,
    merge_tiny,
    split_range,
)
from kbmcp_adapters.parsers.headings import title_from_path
from kbmcp_adapters.parsers.ocr import INSTALL_HINT, OCR_DPI, OcrBudget
from kbmcp_adapters.parsers.pdfheadings import (
    Block,
    Section,
    font_sections,
    outline_sections,
    section_paths,
    titles_found,
)
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ChunkDraft, ParsedDocument
from kbmcp_core.ports import ChunkBudget

__all__ = ["MIN_TEXT_CHARS", "PdfPages", "PdfParser", "open_mupdf"]

#: A PDF with less extractable text than this (non-space characters) is refused.
MIN_TEXT_CHARS = 20
_PDF_DATE = re.compile(r"^(?:D:)?(\d{4})(\d{2})(\d{2})")
_SPACE = re.compile(r"\s+")
#: pymupdf's LINK_NAMED: an outline entry that points at a named destination.
_LINK_NAMED = 4


@dataclass(frozen=True, slots=True)
class PdfPages:
    """A PDF converted: each page's text blocks, its metadata and where its sections
    start (``pdfheadings.Section``: level, title, page index, first block)."""

    blocks: tuple[tuple[str, ...], ...]
    title: str
    creation_date: str
    sections: tuple[Section, ...]
    #: the 0-based indexes of the pages read by OCR, and the pages OCR refused
    ocr_pages: tuple[int, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def pages(self) -> tuple[str, ...]:
        """Each page's text: its blocks separated by blank lines."""
        return tuple("\n\n".join(blocks) for blocks in self.blocks)


class PdfParser:
    """Parses ``.pdf`` files through pymupdf."""

    extensions: tuple[str, ...] = ("pdf",)

    def __init__(self, limits: ParserLimits = DEFAULT_LIMITS, ocr: bool = False) -> None:
        self.limits = limits
        #: whether pages without text are recognised (the ``ocr`` format is enabled)
        self.ocr = ocr

    def convert(self, path: str, data: bytes) -> PdfPages:
        meter = Meter(self.limits)
        budget = OcrBudget(meter) if self.ocr else None
        with _open(data) as doc:
            toc = [_toc_row(doc, entry) for entry in doc.get_toc(simple=True) if len(entry) >= 3]
            pages = _page_blocks(doc, meter, sizes=not toc)
            scanned = _recognise_pages(doc, pages, budget) if budget is not None else ()
            if toc and not titles_found(toc, pages):  # then destination points are needed
                toc = [_toc_row(doc, e) for e in doc.get_toc(simple=False) if len(e) >= 3]
            metadata: dict[str, Any] = dict(doc.metadata or {})
        sections = outline_sections(toc, pages) if toc else font_sections(pages)
        return PdfPages(
            tuple(tuple(block.text for block in blocks) for blocks in pages),
            str(metadata.get("title") or ""),
            str(metadata.get("creationDate") or ""),
            tuple(sections),
            scanned,
            budget.warnings() if budget is not None else (),
        )

    def text_of(self, converted: PdfPages) -> str:
        return "\n\n".join(text for text in converted.pages if text)

    def extract_text(self, path: str, data: bytes) -> str:
        return self.text_of(self.convert(path, data))

    def headings(self, path: str, text: str) -> None:
        return None  # a PDF's outline is its pages, which the index holds

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        return self.document(path, self.convert(path, data), budget)

    def document(self, path: str, converted: PdfPages, budget: ChunkBudget) -> ParsedDocument:
        pages = converted.pages
        if not pages:
            raise ParseError("not a readable PDF (it has no pages)")
        if sum(len(_SPACE.sub("", text)) for text in pages) < MIN_TEXT_CHARS:
            hint = _no_text_hint(converted, self.ocr)
            raise ParseError(f"no extractable text (image-only PDF?){hint}")
        chunks: list[ChunkDraft] = []
        firsts = _first_lines(pages)
        counts = [len(blocks) for blocks in converted.blocks]
        for index, changes in enumerate(section_paths(converted.sections, counts)):
            blocks = converted.blocks[index]
            ends = [start for start, _ in changes[1:]] + [len(blocks)]
            for (start, heading_path), end in zip(changes, ends, strict=True):
                text = "\n\n".join(blocks[start:end])
                if not text.strip():
                    continue
                path_here = fit_heading_path(heading_path or (f"Page {index + 1}",), budget)
                scanned = index in converted.ocr_pages  # one block: its lines are the page's
                for unit in _page_units(text, path_here, budget, index):
                    chunks.append(
                        ChunkDraft(
                            ordinal=len(chunks),
                            heading=path_here[-1],
                            heading_path=path_here,
                            content=unit.text,
                            page=index + 1,
                            start_line=firsts[index] + unit.start + 1 if scanned else None,
                            end_line=firsts[index] + unit.end + 1 if scanned else None,
                        )
                    )
        title = _SPACE.sub(" ", converted.title).strip()
        return ParsedDocument(
            title=title or title_from_path(path),
            chunks=tuple(chunks),
            date=_pdf_date(converted.creation_date),
            text=self.text_of(converted),
            warnings=converted.warnings,
        )


@contextmanager
def _open(data: bytes) -> Iterator[Any]:
    """Open a PDF from bytes, translating every pymupdf failure into ParseError."""
    with open_mupdf(data, "pdf", "PDF", "encrypted PDF (a password is needed to read it)") as doc:
        yield doc


@contextmanager
def open_mupdf(data: bytes, filetype: str, label: str, locked: str) -> Iterator[Any]:
    """Open a document PyMuPDF reads (PDF, EPUB) from bytes. Every pymupdf failure,
    while opening or while the caller reads it, becomes a one-line ``ParseError``;
    ``locked`` is the reason given for a password-protected file."""
    from kbmcp_adapters.parsers.mupdf import pymupdf  # without its layout analyser

    try:
        doc = pymupdf.open(stream=data, filetype=filetype)
    except MemoryError:
        raise
    except Exception as exc:  # pymupdf raises FileDataError, RuntimeError, ValueError, ...
        raise ParseError(f"not a readable {label} ({_reason(exc)})") from None
    try:
        if doc.needs_pass:
            raise ParseError(locked)
        try:
            yield doc
        except (ParseError, MemoryError):  # out of memory is not damage (the worker says so)
            raise
        except Exception as exc:
            raise ParseError(f"damaged {label} ({_reason(exc)})") from None
    finally:
        doc.close()
        pymupdf.TOOLS.reset_mupdf_warnings()


def _reason(exc: Exception) -> str:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return first[:120].rstrip(".")


def _page_blocks(doc: Any, meter: Meter, sizes: bool) -> list[list[Block]]:
    """Each page's text blocks (stripped, empty ones left out) with their position and,
    when ``sizes`` is asked for (no outline: headings come from font sizes), their
    dominant font size; images are not loaded. Without sizes the faster ``blocks``
    extraction is used."""
    from kbmcp_adapters.parsers.mupdf import pymupdf

    flags = int(pymupdf.TEXTFLAGS_TEXT) & ~int(pymupdf.TEXT_PRESERVE_IMAGES)
    pages: list[list[Block]] = []
    for page in doc:
        meter.clock()
        if not sizes:
            pages.append(_plain_blocks(page, meter))
            _forget_images(pages[-1])
            continue
        found: list[dict[str, Any]] = page.get_text("dict", flags=flags).get("blocks", [])
        meter.elements(1 + len(found))
        blocks: list[Block] = []
        for raw in found:
            if raw.get("type", 0) != 0:
                continue
            block = _block(raw)
            if block is not None:
                meter.chars(len(block.text) + 2)
                blocks.append(block)
        pages.append(blocks)
        _forget_images(blocks)
    return pages


def _forget_images(blocks: list[Block]) -> None:
    """After a page without text (a scan): empty MuPDF's store, its cache of decoded
    images (and fonts), which kept each scanned page's image, about 4 MB a page of a
    200 dpi A4 scan, for the rest of the conversion (0053). A page with text keeps the
    cache: its fonts serve the next pages."""
    if not blocks:
        from kbmcp_adapters.parsers.mupdf import pymupdf

        pymupdf.TOOLS.store_shrink(100)


def _plain_blocks(page: Any, meter: Meter) -> list[Block]:
    found = page.get_text("blocks")
    meter.elements(1 + len(found))
    blocks: list[Block] = []
    for raw in found:
        text = str(raw[4]).strip() if raw[6] == 0 else ""
        if text:
            meter.chars(len(text) + 2)
            blocks.append(Block(text, float(raw[1]), float(raw[3]), 0.0, text.count("\n") + 1))
    return blocks


def _recognise_pages(doc: Any, pages: list[list[Block]], budget: OcrBudget) -> tuple[int, ...]:
    """Recognise each page without text that holds an image, in place: its lines become
    its one block. The indexes of the pages read."""
    scans = [index for index, page in enumerate(doc)
             if not pages[index] and page.get_images(full=False)]
    budget.plan(len(scans))
    read: list[int] = []
    scale = OCR_DPI / 72
    for index in scans:
        page = doc[index]
        if not budget.allows(index + 1, page.rect.width * scale, page.rect.height * scale):
            continue
        lines = budget.read(index + 1, _page_image(page))
        if lines:
            pages[index] = [Block("\n".join(lines), 0.0, float(page.rect.height), 0.0,
                                  len(lines))]
            read.append(index)
    return tuple(read)


def _page_image(page: Any) -> Any:
    """``page`` rendered at ``OCR_DPI`` as a grey Pillow image (its decoded image then
    let go: ``_forget_images``)."""
    from PIL import Image

    from kbmcp_adapters.parsers.mupdf import pymupdf

    pix = page.get_pixmap(dpi=OCR_DPI, colorspace=pymupdf.csGRAY)
    image = Image.frombytes("L", (pix.width, pix.height), pix.samples)
    del pix
    _forget_images([])
    return image


def _first_lines(pages: Sequence[str]) -> list[int]:
    """Each page's first line in the served text (0-based; pages without text skipped)."""
    firsts: list[int] = []
    line = 0
    for text in pages:
        firsts.append(line)
        if text:
            line += text.count("\n") + 2
    return firsts


def _no_text_hint(converted: PdfPages, ocr: bool) -> str:
    if converted.warnings:
        return f": {converted.warnings[0]}"
    if not ocr:
        return (f"; the ocr format reads scanned pages ({INSTALL_HINT}, then add ocr to "
                "[parsers].enabled)")
    return ""


def _block(raw: dict[str, Any]) -> Block | None:
    sizes: Counter[float] = Counter()
    lines: list[str] = []
    for line in raw.get("lines", ()):
        parts: list[str] = []
        for span in line.get("spans", ()):
            text = str(span.get("text", ""))
            parts.append(text)
            sizes[float(span.get("size", 0.0))] += len(text.strip())
        lines.append("".join(parts))
    text = "\n".join(lines).strip()
    if not text:
        return None
    top, bottom = float(raw["bbox"][1]), float(raw["bbox"][3])
    size = sizes.most_common(1)[0][0] if sizes else 0.0
    return Block(text, top, bottom, size, len(lines))


def _toc_row(doc: Any, entry: Sequence[Any]) -> tuple[int, str, int, float | None]:
    """An outline row: level, title, 1-based page, destination y from the top of the
    page (None if it has none). pymupdf gives a named destination's point in PDF
    coordinates (from the bottom), a direct one's from the top."""
    level, title, page = int(entry[0]), str(entry[1]), int(entry[2])
    dest = entry[3] if len(entry) > 3 and isinstance(entry[3], dict) else {}
    target = dest.get("to")
    if target is None or not hasattr(target, "y") or not 1 <= page <= doc.page_count:
        return level, title, page, None
    y = float(target.y)
    if dest.get("kind") == _LINK_NAMED:
        y = float(doc[page - 1].rect.height) - y
    return level, title, page, y


def _page_units(text: str, path: tuple[str, ...], budget: ChunkBudget, index: int) -> list[Unit]:
    lines = text.split("\n")
    units = split_range(lines, 0, len(lines) - 1, path, budget, index)

    def render(start: int, end: int, label: int) -> str:
        return join_lines(lines, start, end)

    return merge_tiny(units, budget, render=render, path_of=lambda label: path, across_labels=False)


def _pdf_date(value: str) -> str | None:
    """YYYY-MM-DD from a PDF date such as ``D:20230115123000+01'00'``."""
    match = _PDF_DATE.match(value.strip())
    if not match:
        return None
    try:
        return dt.date(*(int(part) for part in match.groups())).isoformat()
    except ValueError:
        return None
