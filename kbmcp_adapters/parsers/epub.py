"""EPUB parser: each chapter of the reading order as a Markdown section, then chunked.

* The archive is checked first (``zipguard.check_archive``): a damaged, encrypted or
  bomb-like ZIP is a ``ParseError`` before any XML is read; so is a ZIP that holds no
  EPUB package, and a book with no text at all.
* The book's own structure is read (``epubpackage``): the package document's spine gives
  the chapters in reading order, its navigation document (or NCX) their titles, its
  metadata the book's title. Each chapter's XHTML is converted from its markup
  (``epubtext``), not from a rendered layout: headings are the source's ``h1``..``h6``,
  paragraphs stay whole (CJK text is not cut at rendered line ends, combining marks stay
  on their letters), HTML's named entities (``&nbsp;``) read as their characters, ruby
  annotations are left out, text inside inline SVG and images'
  alt text are kept.
* Every chapter becomes ``# <chapter title>`` followed by its blocks; its own headings
  sit below the title, their source levels kept relative to each other (the chapter's
  shallowest heading becomes ``##``). ``extract_text`` returns exactly that Markdown and
  ``parse`` chunks it with ``markdown_chunks``, so a hit's heading path starts with its
  chapter and its line range points into what ``get_document`` returns.
* Chapter title: the shallowest table-of-contents entry that points into the chapter,
  else its first heading, else ``Chapter N``. A chapter's first heading that repeats its
  title is not repeated. Chapters without text (a cover picture) are left out.
* A chapter the book lists but does not hold (a broken link in its reading order) is left
  out with a warning.
* Work is budgeted (``budget.Meter``): every element of every chapter counts, and every
  character of text. ``convert`` reads the book (in a parser worker process when
  isolation is on) into a picklable ``EpubBook``; ``text_of`` and ``document`` serve and
  chunk it.
* Book title from the metadata, else the first chapter title, else the file name.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

from kbmcp_adapters.parsers.budget import DEFAULT_LIMITS, Meter, ParserLimits
from kbmcp_adapters.parsers.epubpackage import html_entities, read_package, xml_root
from kbmcp_adapters.parsers.epubtext import Block, chapter_blocks
from kbmcp_adapters.parsers.headings import clean_heading, title_from_path
from kbmcp_adapters.parsers.markdown import markdown_chunks, markdown_headings
from kbmcp_adapters.parsers.zipguard import check_archive
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ParsedDocument
from kbmcp_core.outline import HeadingMark
from kbmcp_core.ports import ChunkBudget

__all__ = ["EpubBook", "EpubParser"]


@dataclass(frozen=True, slots=True)
class EpubBook:
    """A book converted: its Markdown, metadata title and warnings."""

    markdown: str
    title: str | None
    warnings: tuple[str, ...] = ()


class EpubParser:
    """Parses ``.epub`` books from their own structure (lxml)."""

    extensions: tuple[str, ...] = ("epub",)

    def __init__(self, limits: ParserLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits

    def convert(self, path: str, data: bytes) -> EpubBook:
        return _book(data, Meter(self.limits))

    def text_of(self, book: EpubBook) -> str:
        return book.markdown

    def extract_text(self, path: str, data: bytes) -> str:
        return self.text_of(self.convert(path, data))

    def headings(self, path: str, text: str) -> tuple[HeadingMark, ...]:
        return markdown_headings(text)  # the Markdown it was converted to

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
    sections: list[str] = []
    warned: list[str] = []
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = frozenset(archive.namelist())
            package = read_package(archive)
            for number, path in enumerate(package.spine, start=1):
                meter.clock()
                if path not in names:
                    warned.append(
                        f"chapter {number} ({path[:120]!r}) is listed by the book but "
                        "missing from it; left out"
                    )
                    continue
                root = xml_root(html_entities(archive.read(path)))
                if root is None:
                    warned.append(f"chapter {number} ({path[:120]!r}) is not readable; left out")
                    continue
                toc = package.toc.get(path)
                blocks = chapter_blocks(root, meter)
                sections.append(_chapter(blocks, toc[1] if toc else None, number))
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        raise ParseError(f"not a readable EPUB ({type(exc).__name__})") from None
    text = "\n\n".join(section for section in sections if section)
    return EpubBook(text + "\n" if text else "", package.title, tuple(warned))


def _chapter(blocks: list[Block], toc_title: str | None, number: int) -> str:
    """``# <title>`` and the chapter's blocks, its own headings below the title at their
    source levels relative to each other."""
    if not blocks:
        return ""
    first = blocks[0]
    first_heading = clean_heading(first.text) if first.level is not None else None
    title = toc_title or first_heading or f"Chapter {number}"
    if first_heading is not None and first_heading.casefold() == clean_heading(title).casefold():
        blocks = blocks[1:]
    shallowest = min((b.level for b in blocks if b.level is not None), default=1)
    lines = [f"# {_heading_text(title)}"]
    for block in blocks:
        if block.level is None:
            lines.append(block.text)
        else:
            level = min(6, block.level - shallowest + 2)
            lines.append(f"{'#' * level} {_heading_text(block.text)}")
    return "\n\n".join(lines)


def _heading_text(text: str) -> str:
    """Heading text on one line; a trailing ``#`` escaped so it is not read as a closer."""
    text = " ".join(text.split())
    return text[:-1] + "\\#" if text.endswith("#") else text
