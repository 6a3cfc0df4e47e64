"""Chunks cited by the lines of the source file: the shared back half of the reST,
AsciiDoc and notebook parsers (decision 0029).

Those parsers read a file a reader can open as it is (``get_document`` serves the file
itself), so a hit's line range must be lines of that file. Each parser's ``convert``
(which runs in a parser worker) finds the headings and the blocks to keep whole, and
returns an ``Outline``: the text lines to chunk, the source line each of them sits on,
the headings, and which lines belong to a literal block, table or code cell.
``outline_chunks`` then cuts sections at the headings, packs each under the budget
(paragraphs, then lines; blank lines inside a kept block do not separate paragraphs)
and cites each chunk by the first and last source line its lines come from.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from kbmcp_adapters.parsers.budget import DEFAULT_LIMITS, ParserLimits
from kbmcp_adapters.parsers.headings import title_from_path
from kbmcp_adapters.parsers.sections import Heading, chunk_sections, sections_of
from kbmcp_core.models import ChunkDraft, ParsedDocument
from kbmcp_core.outline import HeadingMark
from kbmcp_core.ports import ChunkBudget

__all__ = ["Heading", "Outline", "SourceCitedParser", "outline_chunks"]


@dataclass(frozen=True, slots=True)
class Outline:
    """What a source-cited format's ``convert`` returns (picklable).

    ``source_lines[i]`` is the 1-based line of the file that ``lines[i]`` comes from (for
    reST and AsciiDoc, ``i + 1``); ``kept[i]`` marks lines of a block kept whole."""

    lines: tuple[str, ...]
    source_lines: tuple[int, ...]
    headings: tuple[Heading, ...]
    kept: tuple[bool, ...]
    title: str | None
    warnings: tuple[str, ...] = ()


def outline_chunks(outline: Outline, budget: ChunkBudget) -> tuple[ChunkDraft, ...]:
    """The outline's chunks, each with its heading path and source line range."""
    sections = sections_of(outline.lines, 0, outline.headings, budget)

    def cite(start: int, end: int) -> tuple[int, int]:
        found = _source(outline.source_lines, start, end)
        return min(found), max(found)

    return chunk_sections(outline.lines, outline.kept, sections, budget, cite)


def _source(source_lines: Sequence[int], start: int, end: int) -> Sequence[int]:
    """The source lines of outline lines ``start..end`` (a notebook's JSON puts a cell's
    outputs before its source, so they need not rise: the range is their min..max)."""
    found = source_lines[max(start, 0) : end + 1]
    return found if found else (start + 1,)


class SourceCitedParser(ABC):
    """What the reST, AsciiDoc and notebook parsers share: each has its own ``convert``
    (the file to an ``Outline``, run in a parser worker); the served text is the outline's
    lines and the chunks are cut by ``outline_chunks``."""

    extensions: tuple[str, ...] = ()

    def __init__(self, limits: ParserLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits

    @abstractmethod
    def convert(self, path: str, data: bytes) -> Outline:
        """The file as an outline (runs in a parser worker)."""

    def text_of(self, outline: Outline) -> str:
        return "\n".join(outline.lines)

    def extract_text(self, path: str, data: bytes) -> str:
        return self.text_of(self.convert(path, data))

    def headings(self, path: str, text: str) -> tuple[HeadingMark, ...]:
        """The headings of the file whose text ``text`` is (a read serves the file)."""
        return self.headings_of(self.convert(path, text.encode("utf-8")))

    def headings_of(self, outline: Outline) -> tuple[HeadingMark, ...]:
        """Each heading at the line of the source file it sits on."""
        return tuple(HeadingMark(outline.source_lines[h.line], h.level, h.text)
                     for h in outline.headings if 0 <= h.line < len(outline.source_lines))

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        return self.document(path, self.convert(path, data), budget)

    def document(self, path: str, outline: Outline, budget: ChunkBudget) -> ParsedDocument:
        return ParsedDocument(
            title=outline.title or title_from_path(path),
            chunks=outline_chunks(outline, budget),
            warnings=outline.warnings,
        )
