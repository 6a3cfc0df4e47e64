"""PowerPoint parser (python-pptx, imported lazily): one Markdown section per slide, with the
slide number kept on every chunk like a PDF page.

* The bytes pass ``zipguard.check_archive`` first (not a ZIP, encrypted, ZIP bomb are
  refused); a file python-pptx cannot open is a ``ParseError`` with a one-line reason.
* Slide N becomes ``# Slide N: <title>`` (``# Slide N`` when it has no title), then the
  text of every other shape in the slide's order (grouped shapes included; indented
  paragraphs as ``- `` items), each table as one ``a | b | c`` line per row (empty and
  merged-over cells kept as empty, so columns stay in place), each chart as
  ``Chart: <title>`` and a ``category | series ...`` table of its values (``slidecharts``),
  a picture's (or any shape's) alt text as ``[image: ...]``, and the speaker notes under
  ``## Notes on slide N`` (a heading that names its slide, so a notes hit is unambiguous
  at section level).
* ``extract_text`` returns that Markdown. ``parse`` chunks each slide's lines on their own
  with ``markdown_chunks`` (so a chunk never spans two slides), shifts their line ranges to
  the whole text and sets ``page`` to the slide number on every chunk: a hit carries the
  slide and the line range. A slide with no
  title and no text (a picture) is served as its ``# Slide N`` line but gives no chunk.
* A slide show (``.ppsx``) or template (``.potx``) saved as ``.pptx`` is read like a
  presentation: the same parts under another content type.
* Work is budgeted (``budget.Meter``): slides and shapes count as elements, their text as
  produced characters. ``convert`` reads the deck (in a parser worker process when
  isolation is on) into a picklable ``_Deck``; ``text_of`` and ``document`` serve and
  chunk it.
* Title from the core properties title (PowerPoint's default title "PowerPoint
  Presentation" does not count), else the first slide title, else the file name; date from
  the core properties creation date.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from kbmcp_adapters.parsers.budget import DEFAULT_LIMITS, Meter, ParserLimits
from kbmcp_adapters.parsers.headings import title_from_path
from kbmcp_adapters.parsers.markdown import markdown_chunks, markdown_headings
from kbmcp_adapters.parsers.slidecharts import alt_text, chart_lines
from kbmcp_adapters.parsers.word import (
    core_title_and_date,
    markdown_block,
    markdown_heading,
    office_kind,
    translated,
)
from kbmcp_adapters.parsers.zipguard import check_archive
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ChunkDraft, ParsedDocument
from kbmcp_core.outline import HeadingMark
from kbmcp_core.ports import ChunkBudget

__all__ = ["PptxParser"]

_SPACE = re.compile(r"\s+")
#: The core title PowerPoint gives every new deck; it names no presentation.
_PLACEHOLDER_TITLE = "powerpoint presentation"
#: Main-part content types python-pptx reads as a deck: presentation, macro-enabled
#: presentation, slide show, template.
_DECK_TYPES = frozenset(
    "application/vnd." + kind
    for kind in (
        "openxmlformats-officedocument.presentationml.presentation.main+xml",
        "ms-powerpoint.presentation.macroEnabled.main+xml",
        "openxmlformats-officedocument.presentationml.slideshow.main+xml",
        "openxmlformats-officedocument.presentationml.template.main+xml",
    )
)


class PptxParser:
    """Parses ``.pptx`` files through python-pptx."""

    extensions: tuple[str, ...] = ("pptx",)

    def __init__(self, limits: ParserLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits

    def convert(self, path: str, data: bytes) -> _Deck:
        return _convert(data, Meter(self.limits))

    def text_of(self, deck: _Deck) -> str:
        return deck.text()

    def extract_text(self, path: str, data: bytes) -> str:
        return self.text_of(self.convert(path, data))

    def headings(self, path: str, text: str) -> tuple[HeadingMark, ...]:
        return markdown_headings(text)  # the Markdown it was converted to

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        return self.document(path, self.convert(path, data), budget)

    def document(self, path: str, deck: _Deck, budget: ChunkBudget) -> ParsedDocument:
        chunks: list[ChunkDraft] = []
        offset = 0
        for slide in deck.slides:
            if not slide.title and len(slide.lines) == 1:  # nothing on it but its number
                offset += len(slide.lines) + 1
                continue
            drafts, _ = markdown_chunks("\n".join(slide.lines) + "\n", budget)
            for draft in drafts:
                chunks.append(
                    dataclasses.replace(
                        draft,
                        ordinal=len(chunks),
                        start_line=_shift(draft.start_line, offset),
                        end_line=_shift(draft.end_line, offset),
                        page=slide.number,
                    )
                )
            offset += len(slide.lines) + 1  # the blank line between slides
        first_title = next((s.title for s in deck.slides if s.title), None)
        return ParsedDocument(
            title=deck.title or first_title or title_from_path(path),
            chunks=tuple(chunks),
            date=deck.date,
            text=deck.text(),
        )


@dataclass(frozen=True, slots=True)
class _Slide:
    number: int
    title: str
    lines: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Deck:
    slides: tuple[_Slide, ...]
    title: str | None
    date: str | None

    def text(self) -> str:
        """The whole deck: the slides' lines, a blank line between slides."""
        if not self.slides:
            return ""
        return "\n\n".join("\n".join(slide.lines) for slide in self.slides) + "\n"


def _shift(line: int | None, offset: int) -> int | None:
    return None if line is None else line + offset


def _convert(data: bytes, meter: Meter) -> _Deck:
    check_archive(data)
    from pptx.package import Package

    with translated("PowerPoint file"):
        package: Any = Package.open(BytesIO(data))
        part: Any = package.main_document_part
        if part.content_type not in _DECK_TYPES:
            raise ParseError(f"not a PowerPoint presentation ({office_kind(part.content_type)})")
        presentation: Any = part.presentation
        slides = tuple(
            _slide(number, slide, meter)
            for number, slide in enumerate(presentation.slides, start=1)
        )
        title, date = core_title_and_date(package, lambda part: part)
    if title is not None and title.lower() == _PLACEHOLDER_TITLE:
        title = None
    return _Deck(slides, title, date)


def _slide(number: int, slide: Any, meter: Meter) -> _Slide:
    title_shape = slide.shapes.title
    title = ""
    if title_shape is not None and title_shape.has_text_frame:
        title = _SPACE.sub(" ", title_shape.text_frame.text).strip()
    heading = f"Slide {number}: {title}" if title else f"Slide {number}"
    blocks: list[list[str]] = []
    skip = title_shape.shape_id if title_shape is not None else None
    for top in slide.shapes:
        if skip is not None and top.shape_id == skip:
            continue
        for shape in _shapes(top):
            meter.elements()
            block = _shape_lines(shape)
            if block:
                meter.chars(sum(len(line) for line in block))
                blocks.append(block)
    notes = _notes_lines(slide)
    meter.elements()
    meter.chars(len(title) + sum(len(line) for line in notes))
    if notes:
        blocks.append([f"## Notes on slide {number}"])
        blocks.append(notes)
    lines = [markdown_heading(1, heading)]
    for block in blocks:
        lines.append("")
        lines.extend(block)
    return _Slide(number, title, tuple(lines))


def _shapes(shape: Any) -> Iterator[Any]:
    """The shape itself, or for a group every member in order (nested groups too)."""
    from pptx.shapes.group import GroupShape

    if isinstance(shape, GroupShape):
        for member in shape.shapes:
            yield from _shapes(member)
    else:
        yield shape


def _shape_lines(shape: Any) -> list[str]:
    lines = _content_lines(shape)
    alt = alt_text(shape)
    if alt and alt not in " ".join(lines):
        lines.insert(0, f"[image: {alt}]")
    return lines


def _content_lines(shape: Any) -> list[str]:
    if getattr(shape, "has_table", False):
        rows: list[str] = []
        for row in shape.table.rows:
            cells = [
                "" if cell.is_spanned else _SPACE.sub(" ", cell.text).strip() for cell in row.cells
            ]
            if any(cells):
                rows.extend(markdown_block(" | ".join(cells).strip()))
        return rows
    if getattr(shape, "has_chart", False):
        return chart_lines(shape)
    if getattr(shape, "has_text_frame", False):
        return _frame_lines(shape.text_frame)
    return []


def _frame_lines(frame: Any) -> list[str]:
    lines: list[str] = []
    for paragraph in frame.paragraphs:
        level = int(paragraph.level or 0)
        prefix = "  " * (level - 1) + "- " if level > 0 else ""
        lines.extend(markdown_block(paragraph.text, prefix))
    return lines


def _notes_lines(slide: Any) -> list[str]:
    if not slide.has_notes_slide:
        return []
    frame = slide.notes_slide.notes_text_frame
    return _frame_lines(frame) if frame is not None else []
