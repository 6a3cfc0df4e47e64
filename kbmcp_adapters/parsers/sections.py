"""A text's headings as nested sections, and the chunks cut from them: one chunker shared by
Markdown (and every format converted to Markdown), plain text with titles (``text_headings``)
and the source-cited formats (reST, AsciiDoc, notebooks), which differ only in how a chunk's
lines are cited.

Each section runs from its heading to the next one; its body is packed under the token
budget (paragraphs, then lines; ``kept`` lines — fenced code, literal blocks, tables — are
never split at a blank line); a heading with no body of its own is merged into what follows
(``merge_tiny``). A chunk carries its heading path and its line range.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kbmcp_adapters.parsers.chunking import (
    Unit,
    fit_heading_path,
    join_lines,
    merge_tiny,
    split_range,
)
from kbmcp_core.models import ChunkDraft
from kbmcp_core.ports import ChunkBudget

__all__ = ["Cite", "Heading", "Section", "chunk_sections", "sections_of"]

#: The 1-based (first, last) lines to cite for the 0-based text lines ``start..end``.
Cite = Callable[[int, int], tuple[int, int]]


@dataclass(frozen=True, slots=True)
class Heading:
    """A heading at ``line`` (0-based) taking ``lines`` lines (1 for ``# Title``, 2 with an
    underline), with its level (1 = outermost) and text."""

    line: int
    lines: int
    level: int
    text: str


@dataclass(frozen=True, slots=True)
class Section:
    level: int
    heading: str
    path: tuple[str, ...]
    start: int
    body_start: int
    end: int
    path_lines: frozenset[int]


def sections_of(
    lines: Sequence[str], first: int, headings: Sequence[Heading], budget: ChunkBudget
) -> list[Section]:
    """The sections of ``lines`` from line ``first`` on: the text before the first heading
    (level 0), then one per heading, each with the path of headings it sits under."""
    sections: list[Section] = []
    if lines[first:] and (not headings or headings[0].line > first):
        end = headings[0].line - 1 if headings else len(lines) - 1
        sections.append(Section(0, "", (), first, first, end, frozenset()))
    stack: list[Heading] = []
    for n, head in enumerate(headings):
        while stack and stack[-1].level >= head.level:
            stack.pop()
        stack.append(head)
        end = headings[n + 1].line - 1 if n + 1 < len(headings) else len(lines) - 1
        path = fit_heading_path(tuple(h.text for h in stack), budget)
        path_lines = frozenset(h.line + k for h in stack for k in range(h.lines))
        sections.append(
            Section(head.level, path[-1], path, head.line, head.line + head.lines, end, path_lines)
        )
    return sections


def _own_lines(start: int, end: int) -> tuple[int, int]:
    return start + 1, end + 1


def chunk_sections(
    lines: Sequence[str],
    kept: Sequence[bool],
    sections: Sequence[Section],
    budget: ChunkBudget,
    cite: Cite = _own_lines,
) -> tuple[ChunkDraft, ...]:
    """The chunks of ``sections``, cited by ``cite`` (default: the 1-based lines of
    ``lines`` themselves)."""
    units: list[Unit] = []
    for label, section in enumerate(sections):
        pieces = split_range(
            lines, section.body_start, section.end, section.path, budget, label, kept
        )
        if section.level == 0:
            units.extend(pieces)
        elif pieces:
            pieces[0].start = section.start
            units.extend(pieces)
        else:
            units.append(Unit(section.start, section.body_start - 1, label, "", 0))

    def render(start: int, end: int, label: int) -> str:
        skip = sections[label].path_lines
        while start <= end and (start in skip or not lines[start].strip()):
            start += 1
        return join_lines(lines, start, end) if start <= end else ""

    def absorbs(tiny: int, nxt: int) -> bool:
        return nxt == tiny + 1 and sections[nxt].level > sections[tiny].level

    merged = merge_tiny(
        units, budget, render=render, path_of=lambda i: sections[i].path, absorbs=absorbs
    )
    final: list[Unit] = []
    for unit in merged:
        if unit.text:
            final.append(unit)
        else:  # a lone heading: its own lines are the content
            path = sections[unit.label].path
            final.extend(split_range(lines, unit.start, unit.end, path, budget, unit.label))
    drafts: list[ChunkDraft] = []
    for n, u in enumerate(final):
        first, last = cite(u.start, u.end)
        drafts.append(ChunkDraft(ordinal=n, heading=sections[u.label].heading,
                                 heading_path=sections[u.label].path, content=u.text,
                                 start_line=first, end_line=last))
    return tuple(drafts)
