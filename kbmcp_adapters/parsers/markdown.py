"""Markdown parser: YAML frontmatter, heading sections, and chunks that fit the budget.

Rules (what a user sees in search results):

* The text must be UTF-8 (a BOM is dropped, CRLF is fine). An empty or whitespace-only
  file is a document with zero chunks, not an error. NUL characters are indexed as
  spaces, with one warning.
* Frontmatter is a ``---`` block on the very first line, closed by ``---`` or ``...``.
  ``title``, ``date`` (normalised to YYYY-MM-DD), ``tags`` (list or comma string), ``topic``
  and ``category`` are lifted out; every other key is kept, JSON-safe, in ``metadata``.
  YAML never turns values into dates by itself: a bad date is one warning, not a lost
  frontmatter. Broken YAML or a non-mapping gives one warning and no frontmatter fields;
  the block is still left out of the chunks. An opening ``---`` followed by ``key:`` lines
  but never closed is read as ordinary text, with one warning. Line numbers are those of
  the original file.
* Title: frontmatter ``title``, else the first H1, else the file name.
* Headings are ATX (``#``..``######``) or setext (a one-line paragraph underlined with
  ``===`` or ``---``), recognised only outside fenced code blocks. A section is a heading
  and the lines up to the next heading of any level; text before the first heading is a
  section with heading ``""``. Heading text is cleaned by ``headings.clean_heading``.
* A chunk carries its section's heading and heading path; its content is the original
  text of its line range without the leading heading lines that are already in its
  heading path. ``start_line`` is the section's heading line, ``end_line`` its last
  non-blank line. An over-long section is split (paragraphs, then lines, then words) into
  several chunks with the same heading and their own line ranges.
* Merging keeps section-level search precise. A chunk under ``min_tokens`` is merged,
  when the result fits the budget: first with another chunk of its own section; a
  heading-only (or near-empty) parent folds forward into the section right below it, which
  keeps the *child's* heading and a path that still names the parent; otherwise it joins
  the previous chunk (keeping that chunk's heading; the small section's heading line stays
  visible in the content), or the next one when it is first. A heading with no body and
  nothing to join becomes a chunk whose content is the heading line itself.
* Link-reference definitions (``[x]: https://...``) and HTML comments (``<!-- ... -->``)
  outside code blocks are read as blank lines (``markdown_noise``): no chunk holds them, so
  they are neither embedded nor weighed by keywords; other lines keep their numbers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kbmcp_adapters.parsers.chunking import (
    decode_text,
    indexed_text,
    split_lines,
)
from kbmcp_adapters.parsers.frontmatter import frontmatter_end, normalise_date, read_frontmatter
from kbmcp_adapters.parsers.headings import clean_heading, title_from_path
from kbmcp_adapters.parsers.markdown_noise import blank_noise
from kbmcp_adapters.parsers.sections import Heading, chunk_sections, sections_of
from kbmcp_core.models import ChunkDraft, ParsedDocument
from kbmcp_core.outline import HeadingMark
from kbmcp_core.ports import ChunkBudget

__all__ = ["MarkdownParser", "markdown_chunks", "markdown_headings", "normalise_date"]

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?=[ \t]|$)(.*)$")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-{2,})[ \t]*$")
_NOT_SETEXT_TEXT = re.compile(r"^(?: {4}|\t|[ ]{0,3}(?:[-*+>|<]|\d{1,9}[.)]\s|`{3}|~{3}))")


#: The first characters (after spaces and tabs) of every line that can open or close a
#: fence, be an ATX heading or underline a setext one. Every other line is plain text.
_MARK_CHARS = frozenset("`~#=-")
_UNDERLINE_CHARS = frozenset("=-")
#: Characters some rule of ``clean_heading`` acts on; a heading without any is only
#: whitespace-collapsed.
_HEADING_MARKUP = re.compile(r"[#{`\\!\[<*_~\x00]")
_WHITESPACE = re.compile(r"\s+")


def _clean(text: str) -> str:
    """``clean_heading``, without its fifteen passes for the usual heading of plain words."""
    if _HEADING_MARKUP.search(text):
        return clean_heading(text)
    return _WHITESPACE.sub(" ", text).strip()


def _marked(lines: Sequence[str], first: int) -> list[int]:
    """The lines, from ``first`` on, that ``_scan`` must look at: those that start with a
    mark character, and the line above each possible setext underline."""
    marks = [k for k in range(first, len(lines)) if lines[k].lstrip(" \t")[:1] in _MARK_CHARS]
    above = [k - 1 for k in marks
             if k > first and lines[k].lstrip(" \t")[0] in _UNDERLINE_CHARS]
    return sorted({*marks, *above}) if above else marks


def _scan(lines: Sequence[str], first: int) -> tuple[list[bool], list[Heading]]:
    """Mark fenced lines and find headings outside fences, from line ``first`` on.

    Only the lines ``_marked`` returns can change anything (a line of plain text is no
    fence, no heading and no underline), so only those are classified; the lines between
    a fence's opening and closing lines are marked fenced in one step."""
    fenced = [False] * len(lines)
    headings: list[Heading] = []
    fence: str | None = None
    opened = 0
    i = first  # the first line not yet consumed (a setext heading consumes two)
    for k in _marked(lines, first):
        if k < i:
            continue
        line = lines[k]
        match = _FENCE.match(line)
        i = k + 1
        if fence is not None:
            if (
                match
                and match.group(1)[0] == fence[0]
                and len(match.group(1)) >= len(fence)
                and not match.group(2).strip()
            ):
                fenced[opened : k + 1] = [True] * (k + 1 - opened)
                fence = None
            continue
        if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
            fence = match.group(1)
            opened = k
            continue
        atx = _ATX.match(line)
        if atx:
            text = _ATX_CLOSING.sub("", atx.group(2)).strip()
            headings.append(Heading(k, 1, len(atx.group(1)), _clean(text)))
            continue
        if _is_setext(lines, k, first, headings):
            level = 1 if lines[k + 1].strip().startswith("=") else 2
            headings.append(Heading(k, 2, level, _clean(line.strip())))
            i = k + 2
    if fence is not None:  # never closed: fenced to the end
        fenced[opened:] = [True] * (len(lines) - opened)
    return fenced, headings


def _is_setext(lines: Sequence[str], i: int, first: int, headings: Sequence[Heading]) -> bool:
    """A one-line paragraph directly underlined with ``===`` or ``---``."""
    if i + 1 >= len(lines) or not lines[i].strip() or _NOT_SETEXT_TEXT.match(lines[i]):
        return False
    if not _SETEXT_UNDERLINE.match(lines[i + 1]) or _FENCE.match(lines[i + 1]):
        return False
    previous_is_heading = bool(headings) and headings[-1].line + headings[-1].lines == i
    return i == first or not lines[i - 1].strip() or previous_is_heading


class MarkdownParser:
    """Parses ``.md`` and ``.markdown`` files."""

    extensions: tuple[str, ...] = ("md", "markdown")

    def extract_text(self, path: str, data: bytes) -> str:
        return decode_text(data)

    def headings(self, path: str, text: str) -> tuple[HeadingMark, ...]:
        return markdown_headings(text, frontmatter=True)

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        text, text_warnings = indexed_text(data)
        lines = split_lines(text)
        fields, body_from = read_frontmatter(lines)
        lines = blank_noise(lines, body_from)
        fenced, headings = _scan(lines, body_from)
        sections = sections_of(lines, body_from, headings, budget)
        chunks = chunk_sections(lines, fenced, sections, budget)
        title = (
            fields.title
            or next((h.text for h in headings if h.level == 1 and h.text), None)
            or title_from_path(path)
        )
        return ParsedDocument(
            title=title,
            chunks=chunks,
            date=fields.date,
            tags=fields.tags,
            topic=fields.topic,
            category=fields.category,
            metadata=fields.metadata,
            warnings=text_warnings + fields.warnings,
        )


def markdown_chunks(
    text: str, budget: ChunkBudget, *, unsearched: Sequence[tuple[int, int]] = ()
) -> tuple[tuple[ChunkDraft, ...], str | None]:
    """Chunks of Markdown with no frontmatter (the text a converted format becomes), and
    its first level-1 heading. Line ranges are 1-based lines of ``text`` itself. The
    ``unsearched`` lines (0-based, first and last of each range: a page's lists of links)
    are read as blank: no chunk holds them, every other line keeps its number."""
    lines = blank_noise(split_lines(text))
    for first, last in unsearched:
        lines[first : last + 1] = [""] * len(lines[first : last + 1])
    fenced, headings = _scan(lines, 0)
    sections = sections_of(lines, 0, headings, budget)
    chunks = chunk_sections(lines, fenced, sections, budget)
    return chunks, next((h.text for h in headings if h.level == 1 and h.text), None)


def markdown_headings(text: str, *, frontmatter: bool = False) -> tuple[HeadingMark, ...]:
    """The headings of Markdown ``text`` as ``parse`` (``frontmatter``: a file's, with its
    block skipped) or ``markdown_chunks`` (a converted format's text) finds them, each at
    its 1-based line of ``text``."""
    lines = split_lines(text.replace("\x00", " ") if "\x00" in text else text)
    first = frontmatter_end(lines) if frontmatter else 0
    _, headings = _scan(blank_noise(lines, first), first)
    return tuple(HeadingMark(h.line + 1, h.level, h.text) for h in headings)
