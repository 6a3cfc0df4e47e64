"""PDF parser (pymupdf, imported lazily): page-aware chunks, title and date from metadata.

* Opened from bytes; an encrypted (password-protected), damaged or non-PDF file is a
  ``ParseError`` with a one-line reason, as is a PDF with fewer than
  ``MIN_TEXT_CHARS`` non-space characters in all (a scan without a text layer).
* Each page's text blocks become paragraphs, packed under the budget; a page never shares
  a chunk with another page, so every chunk has one ``page`` (1-based). Chunks carry no
  line numbers.
* Heading: the outline (table of contents) entry for the page when the PDF has one (the
  first entry starting on that page, else the last one started before it), with its
  outline path; otherwise ``"Page N"``.
* Work is budgeted (``budget.Meter``): pages count as elements, their text as produced
  characters. ``convert`` reads the PDF (in a parser worker process when isolation is on)
  into a picklable ``PdfPages``; ``text_of`` and ``document`` serve and chunk it.
* Title from the metadata title, else the file name; date from the creation date.
"""

from __future__ import annotations

import datetime as dt
import re
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
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ChunkDraft, ParsedDocument
from kbmcp_core.ports import ChunkBudget

__all__ = ["MIN_TEXT_CHARS", "PdfPages", "PdfParser", "open_mupdf"]

#: A PDF with less extractable text than this (non-space characters) is refused.
MIN_TEXT_CHARS = 20
_PDF_DATE = re.compile(r"^(?:D:)?(\d{4})(\d{2})(\d{2})")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class PdfPages:
    """A PDF converted: each page's text, its metadata and its outline."""

    pages: tuple[str, ...]
    title: str
    creation_date: str
    toc: tuple[tuple[int, str, int], ...]


class PdfParser:
    """Parses ``.pdf`` files through pymupdf."""

    extensions: tuple[str, ...] = ("pdf",)

    def __init__(self, limits: ParserLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits

    def convert(self, path: str, data: bytes) -> PdfPages:
        meter = Meter(self.limits)
        with _open(data) as doc:
            pages = _page_texts(doc, meter)
            metadata: dict[str, Any] = dict(doc.metadata or {})
            toc = tuple(
                (int(e[0]), str(e[1]), int(e[2])) for e in doc.get_toc(simple=True) if len(e) >= 3
            )
        return PdfPages(
            tuple(pages),
            str(metadata.get("title") or ""),
            str(metadata.get("creationDate") or ""),
            toc,
        )

    def text_of(self, converted: PdfPages) -> str:
        return "\n\n".join(text for text in converted.pages if text)

    def extract_text(self, path: str, data: bytes) -> str:
        return self.text_of(self.convert(path, data))

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        return self.document(path, self.convert(path, data), budget)

    def document(self, path: str, converted: PdfPages, budget: ChunkBudget) -> ParsedDocument:
        pages = converted.pages
        outline = _outline_paths(converted.toc, len(pages))
        if not pages:
            raise ParseError("not a readable PDF (it has no pages)")
        if sum(len(_SPACE.sub("", text)) for text in pages) < MIN_TEXT_CHARS:
            raise ParseError("no extractable text (image-only PDF?)")
        chunks: list[ChunkDraft] = []
        for index, text in enumerate(pages):
            path_here = fit_heading_path(outline[index] or (f"Page {index + 1}",), budget)
            for unit in _page_units(text, path_here, budget, index):
                chunks.append(
                    ChunkDraft(
                        ordinal=len(chunks),
                        heading=path_here[-1],
                        heading_path=path_here,
                        content=unit.text,
                        page=index + 1,
                    )
                )
        title = _SPACE.sub(" ", converted.title).strip()
        return ParsedDocument(
            title=title or title_from_path(path),
            chunks=tuple(chunks),
            date=_pdf_date(converted.creation_date),
            text=self.text_of(converted),
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
    import pymupdf as _pymupdf

    pymupdf: Any = _pymupdf
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


def _page_texts(doc: Any, meter: Meter) -> list[str]:
    """Each page's text blocks, stripped and separated by blank lines."""
    pages: list[str] = []
    for page in doc:
        meter.clock()
        blocks = page.get_text("blocks")
        meter.elements(1 + len(blocks))
        parts = [str(block[4]).strip() for block in blocks if block[6] == 0]
        pages.append(meter.text("\n\n".join(part for part in parts if part)))
    return pages


def _page_units(text: str, path: tuple[str, ...], budget: ChunkBudget, index: int) -> list[Unit]:
    lines = text.split("\n")
    units = split_range(lines, 0, len(lines) - 1, path, budget, index)

    def render(start: int, end: int, label: int) -> str:
        return join_lines(lines, start, end)

    return merge_tiny(units, budget, render=render, path_of=lambda label: path, across_labels=False)


def _outline_paths(toc: Sequence[tuple[int, str, int]], page_count: int) -> list[tuple[str, ...]]:
    """For each page, the outline path that covers it (empty before the first entry)."""
    first_on: dict[int, tuple[str, ...]] = {}
    last_on: dict[int, tuple[str, ...]] = {}
    stack: list[tuple[int, str]] = []
    for level, title, page in toc:
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, _SPACE.sub(" ", title).strip()))
        path = tuple(t for _, t in stack)
        if 1 <= page <= page_count and any(path):
            first_on.setdefault(page, path)
            last_on[page] = path
    paths: list[tuple[str, ...]] = []
    carried: tuple[str, ...] = ()
    for number in range(1, page_count + 1):
        paths.append(first_on.get(number, carried))
        carried = last_on.get(number, carried)
    return paths


def _pdf_date(value: str) -> str | None:
    """YYYY-MM-DD from a PDF date such as ``D:20230115123000+01'00'``."""
    match = _PDF_DATE.match(value.strip())
    if not match:
        return None
    try:
        return dt.date(*(int(part) for part in match.groups())).isoformat()
    except ValueError:
        return None
