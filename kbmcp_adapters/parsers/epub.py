"""EPUB parser (pymupdf, imported lazily): each chapter as a Markdown section, then chunked.

* The archive is checked first (``zipguard.check_archive``): a damaged, encrypted or
  bomb-like ZIP is a ``ParseError`` before pymupdf sees a byte; so is a ZIP pymupdf
  cannot open as a book, or a book with no text at all.
* Every chapter of the reading order (spine) becomes ``# <chapter title>`` followed by its
  text: the headings pymupdf finds inside it one level deeper (``##``..``######``),
  paragraphs separated by blank lines (``htmlpage.html_blocks`` does the conversion).
  ``extract_text`` returns exactly that Markdown and ``parse`` chunks it with
  ``markdown_chunks``, so a hit's heading path starts with its chapter and its line range
  points into what ``get_document`` returns.
* Chapter title: the table-of-contents entry that points into the chapter, else its first
  heading, else ``Chapter N``. A chapter's first heading that repeats its title is not
  repeated. Chapters without text (a cover picture) are left out.
* A chapter the book lists but does not hold (a broken link in its reading order) is
  left out with a warning: pymupdf renders it as a page saying ``ERROR: cannot find
  chapter "<path>"``, which is never book text.
* Work is budgeted (``budget.Meter``): each chapter's markup is read under the book's
  element and character budgets. ``convert`` reads the book (in a parser worker process
  when isolation is on) into a picklable ``EpubBook``; ``text_of`` and ``document`` serve
  and chunk it.
* Book title from the metadata, else the first chapter title, else the file name.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kbmcp_adapters.parsers.budget import DEFAULT_LIMITS, Meter, ParserLimits
from kbmcp_adapters.parsers.headings import clean_heading, title_from_path
from kbmcp_adapters.parsers.htmlpage import html_blocks
from kbmcp_adapters.parsers.markdown import markdown_chunks
from kbmcp_adapters.parsers.pdf import open_mupdf
from kbmcp_adapters.parsers.zipguard import check_archive
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ParsedDocument
from kbmcp_core.ports import ChunkBudget

__all__ = ["EpubBook", "EpubParser"]

_SPACE = re.compile(r"\s+")
_HEADING = re.compile(r"^#{1,6} (.*)$")
#: The page pymupdf (MuPDF) renders for a chapter the book lists but does not hold.
_MISSING_CHAPTER = re.compile(r'^\*{0,2}_?ERROR: cannot find chapter "(.*)"_?\*{0,2}$')


@dataclass(frozen=True, slots=True)
class EpubBook:
    """A book converted: its Markdown, metadata title and warnings."""

    markdown: str
    title: str | None
    warnings: tuple[str, ...] = ()


class EpubParser:
    """Parses ``.epub`` books through pymupdf."""

    extensions: tuple[str, ...] = ("epub",)

    def __init__(self, limits: ParserLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits

    def convert(self, path: str, data: bytes) -> EpubBook:
        return _book(data, Meter(self.limits))

    def text_of(self, book: EpubBook) -> str:
        return book.markdown

    def extract_text(self, path: str, data: bytes) -> str:
        return self.text_of(self.convert(path, data))

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        return self.document(path, self.convert(path, data), budget)

    def document(self, path: str, book: EpubBook, budget: ChunkBudget) -> ParsedDocument:
        if not book.markdown.strip():
            raise ParseError("no extractable text in this EPUB")
        chunks, first_chapter = markdown_chunks(book.markdown, budget)
        return ParsedDocument(
            title=book.title or first_chapter or title_from_path(path),
            chunks=chunks,
            warnings=book.warnings,
            text=book.markdown,
        )


def _book(data: bytes, meter: Meter) -> EpubBook:
    """The book as Markdown (one ``#`` section per chapter), its metadata title, and a
    warning per chapter it lists but does not hold."""
    check_archive(data)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        entries = frozenset(archive.namelist())
    sections: list[str] = []
    warned: list[str] = []
    with _open(data) as doc:
        titles = _chapter_titles(doc)
        for chapter in range(doc.chapter_count):
            meter.clock()
            blocks, _ = html_blocks(_chapter_markup(doc, chapter), heading_shift=1, meter=meter)
            missing = _missing_chapter(blocks, entries)
            if missing is not None:
                warned.append(
                    f"chapter {chapter + 1} ({missing[:120]!r}) is listed by the "
                    "book but missing from it; left out"
                )
                continue
            sections.append(_chapter(blocks, titles.get(chapter), chapter))
        metadata: dict[str, Any] = dict(doc.metadata or {})
    title = _SPACE.sub(" ", str(metadata.get("title") or "")).strip()
    text = "\n\n".join(section for section in sections if section)
    return EpubBook(text + "\n" if text else "", title or None, tuple(warned))


def _missing_chapter(blocks: list[str], entries: frozenset[str]) -> str | None:
    """The archive path of a chapter pymupdf could not find, when ``blocks`` are its
    stand-in page (and that path really is absent), else None."""
    if len(blocks) != 1:
        return None
    match = _MISSING_CHAPTER.match(blocks[0].strip())
    if match is None or match.group(1) in entries:
        return None
    return match.group(1)


@contextmanager
def _open(data: bytes) -> Iterator[Any]:
    """Open an EPUB from bytes, translating every pymupdf failure into ParseError."""
    with open_mupdf(data, "epub", "EPUB", "encrypted EPUB (DRM); not indexed") as doc:
        yield doc


def _chapter_titles(doc: Any) -> dict[int, str]:
    """For each chapter, the shallowest table-of-contents entry that points into it."""
    best: dict[int, tuple[int, str]] = {}
    for entry in doc.get_toc(simple=True):
        level, title, page = int(entry[0]), _SPACE.sub(" ", str(entry[1])).strip(), int(entry[2])
        if not title or not 1 <= page <= doc.page_count:
            continue
        chapter = int(doc.location_from_page_number(page - 1)[0])
        if chapter not in best or level < best[chapter][0]:
            best[chapter] = (level, title)
    return {chapter: title for chapter, (_, title) in best.items()}


def _chapter_markup(doc: Any, chapter: int) -> str:
    """The chapter's text as XHTML (pymupdf marks headings by their type size)."""
    import pymupdf as _pymupdf

    pymupdf: Any = _pymupdf
    flags = pymupdf.TEXTFLAGS_XHTML & ~pymupdf.TEXT_PRESERVE_IMAGES
    return "".join(
        doc.load_page((chapter, number)).get_text("xhtml", flags=flags)
        for number in range(doc.chapter_page_count(chapter))
    )


def _chapter(blocks: list[str], toc_title: str | None, chapter: int) -> str:
    """``# <title>`` and the chapter's blocks (its own headings one level deeper)."""
    if not blocks:
        return ""
    first = _HEADING.match(blocks[0])
    first_heading = clean_heading(first.group(1)) if first else None
    title = toc_title or first_heading or f"Chapter {chapter + 1}"
    if first_heading is not None and first_heading.casefold() == clean_heading(title).casefold():
        blocks = blocks[1:]
    return "\n\n".join([f"# {title}", *blocks])
