"""Plain-text parser: strict UTF-8, title from the file name, chunks cut at the text's own
headings (``text_headings``: numbered, underlined or boxed titles) and packed by paragraph.

It reads ``.txt`` files and the files that are text by name (``README``, ``NEWS``,
``README.Debian``, ...: ``is_text_name``); those must prove they are text: a NUL byte or
invalid UTF-8 refuses the file with a one-line reason (decision 0048).
"""

from __future__ import annotations

from dataclasses import replace

from kbmcp_adapters.parsers.chunking import (
    decode_text,
    indexed_text,
    join_lines,
    merge_tiny,
    split_lines,
    split_range,
    token_count,
)
from kbmcp_adapters.parsers.headings import title_from_path
from kbmcp_adapters.parsers.sections import Section, chunk_sections, sections_of
from kbmcp_adapters.parsers.text_headings import rule_above, text_headings
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ChunkDraft, ParsedDocument, is_text_name
from kbmcp_core.outline import HeadingMark
from kbmcp_core.ports import ChunkBudget

__all__ = ["TextParser"]

#: A preamble of at most this many lines (a title, an author, a date) is no section of its
#: own: it is read with the first section.
TITLE_BLOCK_LINES = 3


class TextParser:
    """Parses ``.txt`` files: paragraphs (blank-line separated) packed under the budget.

    A file with headings (``text_headings``) is cut into sections as Markdown is: each
    chunk stays inside one section and carries its heading path. Without headings, chunks
    have heading ``""`` and an empty heading path. An over-long paragraph is split on
    lines, then words. A paragraph chunk below ``min_tokens`` joins a neighbour when the
    result fits. An empty or whitespace-only file gives zero chunks.
    """

    extensions: tuple[str, ...] = ("txt",)

    def extract_text(self, path: str, data: bytes) -> str:
        return decode_text(data)

    def headings(self, path: str, text: str) -> tuple[HeadingMark, ...]:
        lines = split_lines(text.replace("\x00", " "))
        return tuple(HeadingMark(h.line + 1, h.level, h.text) for h in text_headings(lines))

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        if b"\x00" in data and is_text_name(path.rsplit("/", 1)[-1]):
            raise ParseError("not a text file (it holds NUL bytes), though its name is one "
                             "kb-mcp reads as text")
        text, warnings = indexed_text(data)
        lines = split_lines(text)
        headings = text_headings(lines)
        if headings:
            sections = _preamble_read_with_first(
                lines, _rules_left_out(lines, sections_of(lines, 0, headings, budget)), budget)
            return ParsedDocument(
                title=title_from_path(path),
                chunks=chunk_sections(lines, [False] * len(lines), sections, budget),
                warnings=warnings)
        units = split_range(lines, 0, len(lines) - 1, (), budget, 0)

        def render(start: int, end: int, label: int) -> str:
            while start <= end and not lines[start].strip():
                start += 1
            return join_lines(lines, start, end)

        units = merge_tiny(units, budget, render=render, path_of=lambda label: ())
        chunks = tuple(
            ChunkDraft(
                ordinal=n,
                heading="",
                heading_path=(),
                content=unit.text,
                start_line=unit.start + 1,
                end_line=unit.end + 1,
            )
            for n, unit in enumerate(units)
        )
        return ParsedDocument(title=title_from_path(path), chunks=chunks, warnings=warnings)


def _rules_left_out(lines: list[str], sections: list[Section]) -> list[Section]:
    """``sections`` with the rule right above a title (the top of a boxed title's box, or a
    separator) left out of the section before it: it is no part of that section's text,
    and where that section's chunks were full it became a chunk of its own, a hit citing a
    line of dashes (decision 0056, eighth addendum). A preamble that was only that rule is
    gone."""
    out: list[Section] = []
    for n, section in enumerate(sections):
        nxt = sections[n + 1] if n + 1 < len(sections) else None
        if nxt is not None and section.end == nxt.start - 1 and rule_above(lines, nxt.start):
            section = replace(section, end=section.end - 1)
        if section.level == 0 and section.end < section.start:
            continue
        out.append(section)
    return out


def _preamble_read_with_first(lines: list[str], sections: list[Section], budget: ChunkBudget,
                              ) -> list[Section]:
    """``sections`` with a preamble that is no section (a title block of at most
    ``TITLE_BLOCK_LINES`` lines, or text too small to be a chunk) read as the start of the
    first section, heading lines included: alone it would be a chunk of a title, nearer
    every question about the file than the section that answers it."""
    if len(sections) < 2 or sections[0].level != 0:
        return sections
    pre, first = sections[0], sections[1]
    text = join_lines(lines, pre.start, pre.end).strip()
    title_block = sum(1 for line in text.split("\n") if line.strip()) <= TITLE_BLOCK_LINES
    if not title_block and token_count(budget, (), text) >= budget.min_tokens:
        return sections
    joined = Section(first.level, first.heading, first.path, pre.start, pre.start, first.end,
                     frozenset())
    return [joined, *sections[2:]]
