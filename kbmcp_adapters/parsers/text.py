"""Plain-text parser: strict UTF-8, title from the file name, paragraph chunks with lines."""

from __future__ import annotations

from kbmcp_adapters.parsers.chunking import (
    decode_text,
    indexed_text,
    join_lines,
    merge_tiny,
    split_lines,
    split_range,
)
from kbmcp_adapters.parsers.headings import title_from_path
from kbmcp_core.models import ChunkDraft, ParsedDocument
from kbmcp_core.outline import HeadingMark
from kbmcp_core.ports import ChunkBudget

__all__ = ["TextParser"]


class TextParser:
    """Parses ``.txt`` files: paragraphs (blank-line separated) packed under the budget.

    Chunks have heading ``""`` and an empty heading path; an over-long paragraph is split
    on lines, then words. A paragraph chunk below ``min_tokens`` joins a neighbour when the
    result fits. An empty or whitespace-only file gives zero chunks.
    """

    extensions: tuple[str, ...] = ("txt",)

    def extract_text(self, path: str, data: bytes) -> str:
        return decode_text(data)

    def headings(self, path: str, text: str) -> tuple[HeadingMark, ...]:
        return ()  # plain text has no headings

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        text, warnings = indexed_text(data)
        lines = split_lines(text)
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
