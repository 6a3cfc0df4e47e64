"""Where a PDF's sections start: from its outline (bookmarks), else from its font sizes.

A section is located at a text block, not only at a page, so text that runs onto the page
where the next section starts stays under its own heading (issue 26: the end of 2.12 was
labelled 2.13).

* Outline: each entry's destination point (``to``, top-left coordinates) on its page. The
  section starts at the first block on that page whose text starts with the entry's title;
  failing that, at the first block reaching below the destination (a destination at the
  top of a page, as bookmarks without a point have, starts at the first block). Titles
  are compared on letters and digits only; a named destination's point is in PDF
  coordinates (bottom-up) and is turned over first.
* Font sizes, when there is no outline: the body size is the size that sets the most
  characters; a short block (at most ``MAX_HEADING_CHARS`` characters, three lines) set
  at least ``HEADING_RATIO`` times larger is a heading, its level the rank of its size
  among the heading sizes (largest first, at most six). When such blocks are more than
  half of all blocks (a slide deck, a poster), the sizes say nothing: no headings.

``Section`` = (level, title, page index, block index): the section's first block.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["HEADING_RATIO", "MAX_HEADING_CHARS", "Block", "Section", "font_sections",
           "outline_sections", "section_paths", "titles_found"]  # fmt: skip

#: How much larger than the body text a block must be set to be read as a heading.
HEADING_RATIO = 1.15
#: A longer block is a paragraph, whatever its size.
MAX_HEADING_CHARS = 150
_SPACE = re.compile(r"\s+")
_NOT_WORD = re.compile(r"[\W_]+")

Section = tuple[int, str, int, int]


@dataclass(frozen=True, slots=True)
class Block:
    """One text block of a page: its text, vertical extent, dominant font size, lines."""

    text: str
    top: float
    bottom: float
    size: float
    lines: int


def _key(text: str) -> str:
    """Letters and digits only, case-folded: ``2.13. Nonregular files`` in an outline
    finds ``2.13. Non-regular files`` on the page."""
    return _NOT_WORD.sub("", text).casefold()


def outline_sections(
    toc: Sequence[tuple[int, str, int, float | None]], pages: Sequence[Sequence[Block]]
) -> list[Section]:
    """The outline's entries located at blocks (entries pointing off the document are
    left out). ``toc`` rows: level, title, 1-based page, destination y or None."""
    sections: list[Section] = []
    for level, raw_title, page_number, y in toc:
        title = _SPACE.sub(" ", raw_title).strip()
        index = page_number - 1
        if not title or not 0 <= index < len(pages):
            continue
        sections.append((level, title, index, _start_block(title, y, pages[index])))
    return sections


def titles_found(
    toc: Sequence[tuple[int, str, int, float | None]], pages: Sequence[Sequence[Block]]
) -> bool:
    """Whether every entry's title is found on its page (then no destination point is
    needed: resolving them costs pymupdf a walk of the document's name tree)."""
    for _, title, page_number, _ in toc:
        wanted = _key(title)[:32]
        index = page_number - 1
        on_page = pages[index] if 0 <= index < len(pages) else ()
        if wanted and on_page and not any(_key(b.text).startswith(wanted) for b in on_page):
            return False
    return True


def _start_block(title: str, y: float | None, blocks: Sequence[Block]) -> int:
    wanted = _key(title)[:32]
    matches = [
        n for n, block in enumerate(blocks) if wanted and _key(block.text).startswith(wanted)
    ]
    if matches:
        if y is None:
            return matches[0]
        return min(matches, key=lambda n: abs(blocks[n].top - y))
    if y is None:
        return 0
    for n, block in enumerate(blocks):
        if block.bottom > y + 1:
            return n
    return len(blocks)


def font_sections(pages: Sequence[Sequence[Block]]) -> list[Section]:
    """Headings read from font sizes (see the module docstring)."""
    weights: Counter[float] = Counter()
    total = 0
    for blocks in pages:
        for block in blocks:
            weights[round(block.size * 2) / 2] += len(block.text)
            total += 1
    if not weights:
        return []
    body = weights.most_common(1)[0][0]
    found = [
        (page, n, block)
        for page, blocks in enumerate(pages)
        for n, block in enumerate(blocks)
        if _is_heading(block, body)
    ]
    if not found or len(found) * 2 > total:
        return []
    sizes = sorted({round(block.size * 2) / 2 for _, _, block in found}, reverse=True)
    rank = {size: min(6, n + 1) for n, size in enumerate(sizes)}
    return [
        (rank[round(block.size * 2) / 2], _SPACE.sub(" ", block.text).strip(), page, n)
        for page, n, block in found
    ]


def _is_heading(block: Block, body: float) -> bool:
    text = block.text.strip()
    return (
        block.size >= body * HEADING_RATIO
        and 0 < len(text) <= MAX_HEADING_CHARS
        and block.lines <= 3
        and any(ch.isalpha() for ch in text)
    )


def section_paths(
    sections: Sequence[Section], block_counts: Sequence[int]
) -> list[list[tuple[int, tuple[str, ...]]]]:
    """For each page (``block_counts``: its number of blocks), where its text changes
    section: (first block, heading path) pairs, the first at block 0 with the path
    carried over from earlier pages (empty before the first section)."""
    starts: dict[tuple[int, int], list[tuple[int, str]]] = {}
    for level, title, page, block in sections:
        starts.setdefault((page, block), []).append((level, title))
    stack: list[tuple[int, str]] = []
    result: list[list[tuple[int, tuple[str, ...]]]] = []
    for page, count in enumerate(block_counts):
        here: list[tuple[int, tuple[str, ...]]] = [(0, tuple(t for _, t in stack))]
        for block in range(count + 1):
            for level, title in starts.get((page, block), ()):
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, title))
            if (page, block) in starts:
                path = tuple(t for _, t in stack)
                if here[-1][0] == block:
                    here[-1] = (block, path)
                else:
                    here.append((block, path))
        result.append(here)
    return result
