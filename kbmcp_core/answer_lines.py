"""``answer_lines``: the smallest run of a hit's lines that answers the query (decision 0056).

A hit is a chunk, often a whole section of 15-40 lines, and the answer is usually one
paragraph of it (a lead-in and its example, an option's description among several). So
each hit also cites the paragraph that answers: the chunk's lines are cut into blocks at
blank lines (a fenced code block stays whole, blank lines and all), each prose block is
scored against the query with what search already has, and the best one is kept:

* **keywords** (``keyword_scores``): the share of the query's word stems (``spans``: the
  stems the lexical leg compares, stop words left out) the block holds, each weighed by
  how few of the chunk's blocks hold it;
* **meaning** (when the hybrid search read the chunk's paragraphs: ``passages``): the
  cosine similarity of the block's paragraph to the query, weighed by
  ``SEMANTIC_WEIGHT``.

A block that ends with a colon introduces what follows (a command, a list), and so does a
title (a short line with no sentence end, or one underlined by a rule: plain-text
files): the next block joins it (and the one after, while each introduces the next); a
code block the keywords pick brings the sentence that introduces it. A rule of tildes
under a plain-text title opens no code block (nothing closes it). A span shorter than
``MIN_LINES`` then grows by whole neighbouring blocks, the next one first (a FAQ's
answer often runs on past the paragraph that names the question's words), up to
``MAX_LINES`` lines.

Lines are counted from the chunk's end: a chunk's text is its cited lines less the
heading and blank lines that open it (the parsers trim the start, never the end), so the
last line of ``content`` is ``end_line``. When nothing in the chunk scores (no word of
the query, no paragraph read), the span is the chunk's own lines.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from kbmcp_core.models import StoredChunk
from kbmcp_core.passages import paragraphs_of
from kbmcp_core.spans import QueryTerms, word_pieces, word_stem

#: The most lines a cited span holds (the chunk's own range when that is shorter).
MAX_LINES = 20
#: A span shorter than this grows by its neighbouring blocks (measured: decision 0056).
MIN_LINES = 10
#: How much a paragraph's cosine similarity counts beside the share of query stems it
#: holds (measured: decision 0056).
SEMANTIC_WEIGHT = 2.0
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class Block:
    """Lines ``first``..``last`` (0-based, inclusive) of a chunk's text."""

    first: int
    last: int
    code: bool
    text: str


def blocks_of(content: str) -> list[Block]:
    """The chunk's text cut at blank lines; a fenced code block is one block."""
    lines = content.split("\n")
    out: list[Block] = []
    start: int | None = None
    fence: str | None = None
    code = False

    def close(end: int) -> None:
        nonlocal start, code
        if start is not None:
            out.append(Block(start, end, code, "\n".join(lines[start:end + 1])))
        start, code = None, False

    for i, line in enumerate(lines):
        opened = _FENCE.match(line)
        if opened and fence is None and not _closed(lines, i, opened.group(1)):
            opened = None  # a rule of tildes or backticks under a plain-text title
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
                close(i)
            continue
        if opened:
            close(i - 1)
            start, code, fence = i, True, opened.group(1)
            continue
        if not line.strip():
            close(i - 1)
        elif start is None:
            start = i
    close(len(lines) - 1)
    return out


def _closed(lines: Sequence[str], at: int, fence: str) -> bool:
    """Whether the fence opened on line ``at`` is closed by a later line."""
    for line in lines[at + 1:]:
        found = _FENCE.match(line)
        if found and found.group(1)[0] == fence[0] and len(found.group(1)) >= len(fence):
            return True
    return False


def _leads_in(block: Block) -> bool:
    """A block that introduces the next: it ends with a colon, or it is a title (at most
    two lines, no sentence end, or a line of rule characters under it)."""
    text = block.text.rstrip()
    if text.endswith(":"):
        return True
    rows = [row.strip() for row in text.split("\n")]
    if len(rows) > 2 or block.code:
        return False
    ruled = len(rows) == 2 and bool(rows[1]) and set(rows[1]) <= set("=-~^*#_")
    return ruled or (len(rows) == 1 and len(rows[0].split()) <= 8
                     and not rows[0].endswith((".", "?", "!")))


def stems_of(text: str) -> set[str]:
    """The word stems of ``text`` as the lexical leg compares them (CJK left out)."""
    return {word_stem(text[s:e]) for s, e, cjk in word_pieces(text) if not cjk}


def keyword_scores(texts: Sequence[str], terms: QueryTerms) -> list[float]:
    """Each text's keyword score, 0 to 1: the weight of the query's stems and CJK pieces
    it holds over the weight of all of them, a term weighing more the fewer of the
    ``texts`` hold it (the lexical leg's IDF, inside one chunk's blocks or one document's
    headings: a word every paragraph has says little about which one answers)."""
    if not terms or not texts:
        return [0.0] * len(texts)
    held: list[set[str]] = []
    for text in texts:
        found = {f"s:{stem}" for stem in terms.stems & stems_of(text)}
        found |= {f"c:{sub}" for sub in terms.substrings if sub in text}
        held.append(found)
    wanted = [f"s:{stem}" for stem in terms.stems] + [f"c:{sub}" for sub in terms.substrings]
    n = len(texts)
    weight = {t: math.log(1.0 + n / (1 + sum(1 for h in held if t in h))) for t in wanted}
    total = sum(weight.values()) or 1.0
    return [sum(weight[t] for t in h) / total for h in held]


def best_block(blocks: Sequence[Block], terms: QueryTerms,
               similarities: Sequence[float | None] | None = None) -> int | None:
    """The index of the block that answers best (None when none scores at all):
    ``keyword_scores`` plus ``SEMANTIC_WEIGHT`` × its similarity when known; code counts
    by its keywords only."""
    best, best_score = None, 0.0
    scores = keyword_scores([b.text for b in blocks], terms)
    for i, (block, score) in enumerate(zip(blocks, scores, strict=True)):
        sim = similarities[i] if similarities is not None else None
        if sim is not None and not block.code:
            score += SEMANTIC_WEIGHT * max(sim, 0.0)
        if score > best_score:
            best, best_score = i, score
    return best


def _widened(blocks: Sequence[Block], first: int, last: int) -> tuple[int, int]:
    """The span grown by whole neighbouring blocks, the next one first, while it holds
    fewer than ``MIN_LINES`` lines (and the neighbour keeps it within ``MAX_LINES``): a
    paragraph next to the one the query named often carries the rest of the answer."""
    at = {b.first: i for i, b in enumerate(blocks)}
    ends = {b.last: i for i, b in enumerate(blocks)}
    lo, hi = at.get(first), ends.get(last)
    if lo is None or hi is None:
        return first, last
    while last - first + 1 < MIN_LINES:
        grown = False
        if hi + 1 < len(blocks) and blocks[hi + 1].last - first < MAX_LINES:
            hi += 1
            last, grown = blocks[hi].last, True
        if last - first + 1 < MIN_LINES and lo > 0 and last - blocks[lo - 1].first < MAX_LINES:
            lo -= 1
            first, grown = blocks[lo].first, True
        if not grown:
            break
    return first, last


def answer_span(content: str, start_line: int | None, end_line: int | None,
                terms: QueryTerms,
                similarities: Sequence[float | None] | None = None,
                ) -> tuple[int, int] | None:
    """The hit's answering lines ``(first, last)`` in the file, inside its own range
    (None when the hit has no line range). ``similarities``: one per block of
    ``blocks_of(content)`` (None for a block not read), when the search read them."""
    if start_line is None or end_line is None:
        return None
    blocks = blocks_of(content)
    pick = best_block(blocks, terms, similarities) if blocks else None
    if pick is None:
        return start_line, end_line
    first, last = blocks[pick].first, blocks[pick].last
    if _leads_in(blocks[pick]):
        nxt = pick + 1
        while nxt < len(blocks) and blocks[nxt].last - first < MAX_LINES:
            last = blocks[nxt].last
            if not _leads_in(blocks[nxt]):
                break
            nxt += 1
    elif blocks[pick].code and pick > 0 and blocks[pick - 1].text.rstrip().endswith(":"):
        first = blocks[pick - 1].first
    first, last = _widened(blocks, first, last)
    last = min(last, first + MAX_LINES - 1)
    offset = first_line_of(content, end_line)
    lo, hi = max(first + offset, start_line), max(min(last + offset, end_line), start_line)
    return lo, max(lo, hi)


def first_line_of(content: str, end_line: int) -> int:
    """The file line of a chunk's first text line: its last is ``end_line``."""
    return end_line - content.count("\n")


def lines_of(content: str, end_line: int, first: int, last: int) -> str:
    """File lines ``first``..``last`` as a chunk ending on ``end_line`` holds them."""
    top = first_line_of(content, end_line)
    return "\n".join(content.split("\n")[max(first - top, 0):max(last - top + 1, 0)])


def block_similarities(blocks: Sequence[Block], content: str,
                       paragraphs: Sequence[float | None]) -> list[float | None]:
    """Each block's similarity to the query from its paragraphs' (``paragraphs``: one per
    ``paragraphs_of(content)``, as the search read them): the best of those it holds."""
    out: list[float | None] = [None] * len(blocks)
    for para, sim in zip(paragraphs_of(content), paragraphs, strict=False):
        if sim is None:
            continue
        head = para.split("\n", 1)[0].strip()
        for i, block in enumerate(blocks):
            if head and head in block.text:
                out[i] = sim if out[i] is None else max(sim, out[i] or 0.0)
                break
    return out


def chunk_answer(chunk: StoredChunk, terms: QueryTerms,
                 paragraphs: Sequence[float | None] | None = None) -> tuple[int, int] | None:
    """``answer_span`` of a stored chunk, with its paragraphs' similarities when the search
    read them."""
    sims = (block_similarities(blocks_of(chunk.content), chunk.content, paragraphs)
            if paragraphs else None)
    return answer_span(chunk.content, chunk.start_line, chunk.end_line, terms, sims)
