"""Shared chunking helpers: split line ranges under a token budget and merge tiny chunks.

Every parser works on a list of lines (0-based indices here; parsers report 1-based line
numbers). A *unit* is a candidate chunk: an inclusive line range, a label (the section or
page it belongs to) and its text. Budgets are always checked on the chunk's whole text
(``whole_text_of``: heading trail + content), which holds all the embedder is given (its
prose, decision 0020), so a unit that passes here is never truncated by the embedder. A
chunk is also capped at ``MAX_CHARS_PER_TOKEN`` characters per budget token, so a blob that
tokenizes to a handful of unknown-word tokens cannot become a megabyte-sized search hit.

Splitting prefers, in order: paragraph boundaries (blank lines, but never inside a fenced
code block), then line boundaries, then word or CJK sentence boundaries, then characters.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kbmcp_core.errors import ParseError
from kbmcp_core.models import whole_text_of
from kbmcp_core.ports import ChunkBudget

__all__ = [
    "MAX_CHARS_PER_TOKEN",
    "Unit",
    "decode_text",
    "fit_heading_path",
    "indexed_text",
    "join_lines",
    "measured",
    "merge_tiny",
    "paragraph_blocks",
    "split_lines",
    "split_range",
    "token_count",
]


#: A chunk holds at most this many characters per budget token (4,096 for 256 tokens);
#: natural text and code stay under 6.
MAX_CHARS_PER_TOKEN = 16
#: Where an over-long line may be cut: after white space or a CJK sentence end.
_WORD_BREAK = re.compile(r"(?<=[\s。！？])(?=\S)")
#: Text up to this many characters per budget token is first counted whole.
_SHORT_CHARS_PER_TOKEN = 6


@dataclass(slots=True)
class Unit:
    """A candidate chunk covering lines ``start..end`` (0-based, inclusive)."""

    start: int
    end: int
    label: int
    text: str
    tokens: int
    #: False when the text is only part of one line (a word or character split):
    #: such units are never merged, since their text is not their line range.
    exact: bool = True


def decode_text(data: bytes) -> str:
    """Strict UTF-8 with an optional BOM; raises ParseError for anything else."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"not valid UTF-8 (byte {exc.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


NUL_WARNING = "NUL bytes in the text were indexed as spaces"


def indexed_text(data: bytes) -> tuple[str, tuple[str, ...]]:
    """The text a parser indexes, with its warnings: ``decode_text``, and NUL characters
    (valid UTF-8, but never meant as text, and cut short by C-string consumers) read as
    spaces so that line numbers and the words around them stay as they are."""
    text = decode_text(data)
    if "\x00" not in text:
        return text, ()
    return text.replace("\x00", " "), (NUL_WARNING,)


def split_lines(text: str) -> list[str]:
    """Lines as editors number them: split on LF, a CR before it dropped."""
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def measured(budget: ChunkBudget, text: str) -> int:
    """The budget count of ``text``: its tokens, but at least one per
    ``MAX_CHARS_PER_TOKEN`` characters, so text that tokenizes to a few unknown-word
    tokens (a base64 image, a minified bundle) still cannot make a huge chunk."""
    return max(budget.counter(text), -(-len(text) // MAX_CHARS_PER_TOKEN))


def token_count(budget: ChunkBudget, heading_path: tuple[str, ...], content: str) -> int:
    """The budget count of a chunk's whole text (``whole_text_of``)."""
    if not content:
        return _trail_count(budget, heading_path)
    return measured(budget, whole_text_of(heading_path, content))


def _trail_count(budget: ChunkBudget, heading_path: tuple[str, ...]) -> int:
    """The count of a heading trail alone (of the empty text for ``()``): asked for by
    every section and every fit of a trail, and the same for all the sections under it,
    so it is remembered, unless the budget cannot be a dictionary key (its counter is
    unhashable: the TypeError then comes again from the direct count only if real)."""
    try:
        return _cached_trail_count(budget, heading_path)
    except TypeError:
        return measured(budget, whole_text_of(heading_path, ""))


@functools.lru_cache(maxsize=4096)
def _cached_trail_count(budget: ChunkBudget, heading_path: tuple[str, ...]) -> int:
    return measured(budget, whole_text_of(heading_path, ""))


def join_lines(lines: Sequence[str], start: int, end: int) -> str:
    """Text of lines ``start..end``: joined with newlines, trailing whitespace dropped."""
    return "\n".join(lines[start : end + 1]).rstrip()


def _largest_fitting(offset: int, n: int, fits: Callable[[int, int], bool]) -> int:
    """Largest k in 1..n with ``fits(offset, k)``, or 0 when even 1 does not fit.

    Gallops (1, 2, 4, ...) then bisects, so long inputs cost O(log n) checks per chunk.
    """
    if n <= 0 or not fits(offset, 1):
        return 0
    good, step = 1, 2
    while True:
        k = min(step, n)
        if not fits(offset, k):
            bad = k
            break
        good = k
        if k == n:
            return n
        step *= 2
    while bad - good > 1:
        mid = (good + bad) // 2
        if fits(offset, mid):
            good = mid
        else:
            bad = mid
    return good


def paragraph_blocks(
    lines: Sequence[str], start: int, end: int, fenced: Sequence[bool] | None = None
) -> list[tuple[int, int]]:
    """Runs of non-blank lines in ``start..end``; blank lines inside a fence do not split."""
    blocks: list[tuple[int, int]] = []
    first: int | None = None
    last = start
    for i in range(start, end + 1):
        blank = not lines[i].strip()
        if blank and not (fenced is not None and fenced[i]):
            if first is not None:
                blocks.append((first, last))
                first = None
            continue
        if first is None:
            first = i
        if not blank:
            last = i
    if first is not None:
        blocks.append((first, last))
    return blocks


def _pack(
    n: int,
    cost: Callable[[int], int],
    base: int,
    measure: Callable[[int, int], int],
    limit: int,
) -> list[tuple[int, int]]:
    """Greedy runs ``(i, j)`` of items 0..n-1 whose exact count ``measure(i, j)`` fits.

    ``cost(i)`` estimates what item i adds (its own count less the special tokens) and
    ``base`` is the count of the empty embed text: for a BERT-style tokenizer items joined
    by whitespace add up exactly, so each run is confirmed by one exact count and bisected
    only when the estimate was wrong. ``(i, -1)`` marks an item too large on its own.
    """

    def fits(first: int, k: int) -> bool:
        return measure(first, first + k - 1) <= limit

    costs: dict[int, int] = {}
    runs: list[tuple[int, int]] = []
    i = 0
    while i < n:
        total, j = base, i
        while j < n:
            if j not in costs:
                costs[j] = cost(j)
            if total + costs[j] > limit:
                break
            total += costs[j]
            j += 1
        if j > i and not fits(i, j - i):
            j = i + _largest_fitting(i, j - i, fits)
        runs.append((i, j - 1) if j > i else (i, -1))
        i = max(j, i + 1)
    return runs


def split_range(
    lines: Sequence[str],
    start: int,
    end: int,
    heading_path: tuple[str, ...],
    budget: ChunkBudget,
    label: int,
    fenced: Sequence[bool] | None = None,
) -> list[Unit]:
    """Split lines ``start..end`` into units that each fit the budget under ``heading_path``.

    Blank lines at the edges are left out; a range with no text gives no unit.
    """
    limit = budget.max_tokens
    cache: dict[tuple[int, int], int] = {}

    def measure(first: int, last: int) -> int:
        """Exact count of lines first..last, blank edge lines left out."""
        while first < last and not lines[first].strip():
            first += 1
        while last > first and not lines[last].strip():
            last -= 1
        if (first, last) not in cache:
            text = join_lines(lines, first, last)
            cache[first, last] = token_count(budget, heading_path, text)
        return cache[first, last]

    def unit(first: int, last: int) -> list[Unit]:
        while first <= last and not lines[first].strip():
            first += 1
        while last >= first and not lines[last].strip():
            last -= 1
        if first > last:
            return []
        return [Unit(first, last, label, join_lines(lines, first, last), measure(first, last))]

    blocks = paragraph_blocks(lines, start, end, fenced)
    if not blocks:
        return []
    # Most sections fit whole: one count settles them. Counting a long one whole would
    # only repeat the per-block work below, so that shortcut is kept for short text.
    whole = blocks[0][0], blocks[-1][1]
    short = (
        sum(len(lines[i]) for i in range(whole[0], whole[1] + 1)) <= _SHORT_CHARS_PER_TOKEN * limit
    )
    if short and measure(*whole) <= limit:
        return unit(*whole)
    # Only a section that does not fit whole needs these (the trail alone is a count).
    special = _trail_count(budget, ())  # the special tokens: the count of ""
    base = token_count(budget, heading_path, "")

    def block_cost(b: int) -> int:
        return measured(budget, join_lines(lines, *blocks[b])) - special

    def block_measure(a: int, b: int) -> int:
        return measure(blocks[a][0], blocks[b][1])

    units: list[Unit] = []
    for a, b in _pack(len(blocks), block_cost, base, block_measure, limit):
        if b >= 0:
            units.extend(unit(blocks[a][0], blocks[b][1]))
            continue
        first, last = blocks[a]

        def line_cost(k: int, first: int = first) -> int:
            return measured(budget, lines[first + k]) - special

        def line_measure(x: int, y: int, first: int = first) -> int:
            return measure(first + x, first + y)

        for x, y in _pack(last - first + 1, line_cost, base, line_measure, limit):
            if y >= 0:
                units.extend(unit(first + x, first + y))
            else:
                units.extend(_split_line(lines[first + x], first + x, heading_path, budget, label))
    return units


def _split_line(
    line: str, index: int, heading_path: tuple[str, ...], budget: ChunkBudget, label: int
) -> list[Unit]:
    """Split one over-long line after spaces and CJK sentence ends (text without spaces,
    such as Japanese, is cut between sentences), and a piece still over the budget on
    characters. The pieces keep the line's own spacing."""
    parts = [part for part in _WORD_BREAK.split(line) if part.strip()]
    special = _trail_count(budget, ())

    def count(text: str) -> int:
        return token_count(budget, heading_path, text)

    def part_cost(w: int) -> int:
        return measured(budget, parts[w].strip()) - special

    def parts_measure(a: int, b: int) -> int:
        return count("".join(parts[a : b + 1]).strip())

    units: list[Unit] = []
    base = count("")
    for a, b in _pack(len(parts), part_cost, base, parts_measure, budget.max_tokens):
        if b >= 0:
            pieces = ["".join(parts[a : b + 1]).strip()]
        else:
            pieces = _split_word(parts[a].strip(), count, budget)
        units.extend(Unit(index, index, label, p, count(p), exact=False) for p in pieces)
    return units


def _split_word(word: str, count: Callable[[str], int], budget: ChunkBudget) -> list[str]:
    def chars_fit(c: int, n: int) -> bool:
        return count(word[c : c + n]) <= budget.max_tokens

    pieces: list[str] = []
    c = 0
    while c < len(word):
        n = _largest_fitting(c, len(word) - c, chars_fit)
        if n == 0:
            raise ValueError(f"a chunk budget of {budget.max_tokens} tokens cannot hold any text")
        pieces.append(word[c : c + n])
        c += n
    return pieces


def fit_heading_path(heading_path: tuple[str, ...], budget: ChunkBudget) -> tuple[str, ...]:
    """Shorten an absurdly long heading trail so it takes at most half the budget.

    Outer headings are dropped first, then the innermost heading is cut on characters.
    """
    limit = budget.max_tokens // 2

    def cost(path: tuple[str, ...]) -> int:
        return token_count(budget, path, "")

    path = heading_path
    if _surely_fits(budget, whole_text_of(path, ""), limit) or cost(path) <= limit:
        return path
    while len(path) > 1 and cost(path) > limit:
        path = path[1:]
    last = path[-1] if path else ""
    n = _largest_fitting(0, len(last), lambda _, n: cost((last[:n].rstrip(),)) <= limit)
    return (last[:n].rstrip(),)


def _surely_fits(budget: ChunkBudget, text: str, limit: int) -> bool:
    """True when ``text`` certainly counts at most ``limit``, without counting it: ASCII
    text is never more tokens than characters, plus one (a SentencePiece word-start mark)
    and the special tokens. A heading trail is checked for every section, and nearly all
    are far inside half the budget, so this spares a count per section."""
    return text.isascii() and len(text) + 1 + _trail_count(budget, ()) <= limit


def merge_tiny(
    units: Sequence[Unit],
    budget: ChunkBudget,
    *,
    render: Callable[[int, int, int], str],
    path_of: Callable[[int], tuple[str, ...]],
    absorbs: Callable[[int, int], bool] = lambda tiny, nxt: False,
    across_labels: bool = True,
) -> list[Unit]:
    """Merge units below ``budget.min_tokens`` into a neighbour when the result still fits.

    ``render(start, end, label)`` gives the content of a merged range under ``label``.
    A tiny unit tries, in order: the previous unit of its own label, the next unit of its
    own label, the next unit when ``absorbs(tiny_label, next_label)`` (a heading-only or
    near-empty parent folding into its first child, which keeps the child's label), then
    (when ``across_labels``) the previous unit and finally the next unit, each keeping that
    neighbour's label. A unit with no fitting neighbour stays as it is.
    """
    pending = list(units)
    out: list[Unit] = []

    def joined(first: Unit, second: Unit, label: int) -> Unit | None:
        if not (first.exact and second.exact):
            return None
        text = render(first.start, second.end, label)
        tokens = token_count(budget, path_of(label), text)
        if tokens > budget.max_tokens:
            return None
        return Unit(first.start, second.end, label, text, tokens)

    for i, unit in enumerate(pending):
        if not unit.exact or unit.tokens >= budget.min_tokens:
            out.append(unit)
            continue
        prev = out[-1] if out else None
        nxt = pending[i + 1] if i + 1 < len(pending) else None
        choices: list[tuple[str, Unit]] = []
        if prev is not None and prev.label == unit.label:
            choices.append(("back", prev))
        if nxt is not None and (nxt.label == unit.label or absorbs(unit.label, nxt.label)):
            choices.append(("forward", nxt))
        if across_labels and prev is not None and prev.label != unit.label:
            choices.append(("back", prev))
        if across_labels and nxt is not None and ("forward", nxt) not in choices:
            choices.append(("forward", nxt))
        for direction, other in choices:
            if direction == "back":
                merged = joined(other, unit, other.label)
                if merged is not None:
                    out[-1] = merged
                    break
            else:
                merged = joined(unit, other, other.label)
                if merged is not None:
                    pending[i + 1] = merged
                    break
        else:
            out.append(unit)
    return out
