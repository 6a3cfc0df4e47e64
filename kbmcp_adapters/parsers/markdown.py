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

import base64
import datetime as dt
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import yaml

from kbmcp_adapters.parsers.chunking import (
    decode_text,
    indexed_text,
    split_lines,
)
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
        fields, body_from = _read_frontmatter(lines)
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
    text: str, budget: ChunkBudget
) -> tuple[tuple[ChunkDraft, ...], str | None]:
    """Chunks of Markdown with no frontmatter (the text a converted format becomes), and
    its first level-1 heading. Line ranges are 1-based lines of ``text`` itself."""
    lines = blank_noise(split_lines(text))
    fenced, headings = _scan(lines, 0)
    sections = sections_of(lines, 0, headings, budget)
    chunks = chunk_sections(lines, fenced, sections, budget)
    return chunks, next((h.text for h in headings if h.level == 1 and h.text), None)


def markdown_headings(text: str, *, frontmatter: bool = False) -> tuple[HeadingMark, ...]:
    """The headings of Markdown ``text`` as ``parse`` (``frontmatter``: a file's, with its
    block skipped) or ``markdown_chunks`` (a converted format's text) finds them, each at
    its 1-based line of ``text``."""
    lines = split_lines(text.replace("\x00", " ") if "\x00" in text else text)
    first = _frontmatter_end(lines) if frontmatter else 0
    _, headings = _scan(blank_noise(lines, first), first)
    return tuple(HeadingMark(h.line + 1, h.level, h.text) for h in headings)


# -- frontmatter --------------------------------------------------------------------------

_KNOWN_KEYS = ("title", "date", "tags", "topic", "category")
_DATE_TEXT = re.compile(r"^\s*(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?:$|[T\s])")
_YAML_KEY = re.compile(r"^[A-Za-z_][\w-]*\s*:(\s|$)")
_MAX_NODES = 10_000
_MAX_DEPTH = 32


#: libyaml's parser when PyYAML was built with it (about ten times faster), else Python's
_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _FrontmatterLoader(_SAFE_LOADER):  # type: ignore[valid-type,misc]
    """SafeLoader that leaves dates as text, so one bad date cannot sink the whole block."""


_FrontmatterLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True, slots=True)
class _Frontmatter:
    title: str | None = None
    date: str | None = None
    tags: tuple[str, ...] = ()
    topic: str | None = None
    category: str | None = None
    metadata: Mapping[str, object] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def normalise_date(value: object) -> str | None:
    """YYYY-MM-DD from a date, a datetime or text starting with a date; else None."""
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str) and (match := _DATE_TEXT.match(value)):
        try:
            return dt.date(*(int(part) for part in match.groups())).isoformat()
        except ValueError:
            return None
    return None


def _frontmatter_end(lines: Sequence[str]) -> int:
    """The index of the first line after a closed frontmatter block (0 without one), as
    ``_read_frontmatter`` finds it."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    close = next((j for j in range(1, len(lines)) if lines[j].rstrip() in ("---", "...")), None)
    return 0 if close is None else close + 1


def _read_frontmatter(lines: Sequence[str]) -> tuple[_Frontmatter, int]:
    """The frontmatter fields and the index of the first line after the block."""
    if not lines or lines[0].rstrip() != "---":
        return _Frontmatter(), 0
    close = next((j for j in range(1, len(lines)) if lines[j].rstrip() in ("---", "...")), None)
    if close is None:
        if len(lines) > 1 and _YAML_KEY.match(lines[1]):  # meant as frontmatter, never closed
            reason = "frontmatter not closed (no second '---' line); read as ordinary text"
            return _Frontmatter(warnings=(reason,)), 0
        return _Frontmatter(), 0
    simple = _simple_block(lines[1:close])
    if simple is not None:  # what YAML would load, read without it
        return _fields(simple), close + 1
    try:
        loaded = yaml.load("\n".join(lines[1:close]), Loader=_FrontmatterLoader)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 2 if exc.problem_mark is not None else 1
        return _Frontmatter(
            warnings=(f"frontmatter ignored: invalid YAML near line {line}",)
        ), close + 1
    except Exception as exc:  # any other loader failure is a broken block, not a crash
        reason = f"frontmatter ignored: invalid YAML ({type(exc).__name__})"
        return _Frontmatter(warnings=(reason,)), close + 1
    if loaded is None:
        return _Frontmatter(), close + 1
    if not isinstance(loaded, dict):
        reason = "frontmatter ignored: it is not a mapping of keys to values"
        return _Frontmatter(warnings=(reason,)), close + 1
    return _fields(loaded), close + 1


#: One line of the usual frontmatter: ``key: value``, the value plain text, one quoted
#: string without escapes, a one-line list of plain words, or nothing.
_SIMPLE_LINE = re.compile(
    r"([A-Za-z_][\w-]*):(?: +(?:"
    r"\"([^\"\\]*)\"|'([^']*)'|\[([^\[\]{}#\"'`]*)\]"
    r"|([^-?:,\[\]{}#&*!|>'\"%@` ][^#\[\]{}]*?)"
    r"))? *",
    re.ASCII,
)
_PRINTABLE_ASCII = re.compile(r"[ -~]*")
#: A plain list item: no indicator first, no ``:`` at all (a flow context ends on it).
_SIMPLE_ITEM = re.compile(r"[^-?:,\[\]{}#&*!|>'\"%@` ][^:]*")
#: A plain scalar that is text only when no ``: `` and no trailing ``:`` are in it.
_MAPPING_INSIDE = re.compile(r":(?: |$)")


def _plain_text(value: str) -> bool:
    """True when YAML reads the plain scalar ``value`` as a string: none of the loader's
    own implicit resolvers (numbers, booleans, null, ...) claims it."""
    table = _FrontmatterLoader.yaml_implicit_resolvers
    resolvers = [*table.get(value[0] if value else "", []), *table.get(None, [])]
    return (
        bool(value)
        and _MAPPING_INSIDE.search(value) is None
        and not any(regexp.match(value) for _, regexp in resolvers)
    )


def _simple_block(lines: Sequence[str]) -> dict[object, object] | None:
    """The mapping of a frontmatter block whose every line is a simple ``key: value`` (see
    ``_SIMPLE_LINE``) of printable ASCII, exactly as the YAML loader gives it; None for
    anything else, which the loader then reads. Most frontmatter is this simple, and the
    loader builds every value through a chain of Python calls."""
    out: dict[object, object] = {}
    for line in lines:
        if not line.strip(" "):
            continue
        match = _SIMPLE_LINE.fullmatch(line)
        if match is None or not _PRINTABLE_ASCII.fullmatch(line):
            return None
        key, double, single, items, plain = match.groups()
        if not _plain_text(key):
            return None
        value: object
        if double is not None:
            value = double
        elif single is not None:
            value = single
        elif items is not None:
            words = [w.strip(" ") for w in items.split(",")] if items.strip(" ") else []
            if not all(_SIMPLE_ITEM.fullmatch(w) and _plain_text(w) for w in words):
                return None
            value = words
        elif plain is not None:
            value = plain.rstrip(" ")
            if not _plain_text(value):
                return None
        else:
            value = None
        out[key] = value
    return out or None


def _text(value: object) -> str | None:
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value).strip() or None
    return None


def _fields(data: Mapping[object, object]) -> _Frontmatter:
    known: dict[str, object] = {}
    metadata: dict[str, object] = {}
    warnings: list[str] = []
    nodes = [_MAX_NODES]  # shared by all keys: aliases cannot multiply the metadata
    for key, value in data.items():
        name = str(key)
        if name.lower() in _KNOWN_KEYS and name.lower() not in known:
            known[name.lower()] = value
            continue
        before = nodes[0]
        try:
            metadata[name] = _json_safe(value, nodes, 0)
        except _TooLarge:
            nodes[0] = before
            warnings.append(f"frontmatter key {name!r} is too large or too nested; dropped")
    title, topic, category = (_text(known.get(k)) for k in ("title", "topic", "category"))
    for k, got in (("title", title), ("topic", topic), ("category", category)):
        if got is None and known.get(k) not in (None, ""):
            warnings.append(f"frontmatter {k} is not text; ignored")
    date = normalise_date(known.get("date"))
    if date is None and known.get("date") not in (None, ""):
        warnings.append(f"frontmatter date {str(known['date'])[:40]!r} is not a date; ignored")
    tags, tag_warning = _tags(known.get("tags"))
    if tag_warning:
        warnings.append(tag_warning)
    return _Frontmatter(title, date, tags, topic, category, metadata, tuple(warnings))


def _tags(value: object) -> tuple[tuple[str, ...], str | None]:
    if value is None:
        return (), None
    items: list[object]
    if isinstance(value, str):
        items = list(value.split(","))
    elif isinstance(value, list | tuple | set):
        items = list(value)
    elif _text(value) is not None:
        items = [value]
    else:
        return (), "frontmatter tags are not a list or a comma-separated string; ignored"
    tags: list[str] = []
    skipped = False
    for item in items:
        text = _text(item) if not isinstance(item, bool) else str(item)
        if text is None:
            skipped = skipped or item is not None
            continue
        if text not in tags:
            tags.append(text)
    return tuple(tags), ("frontmatter tags: non-text entries ignored" if skipped else None)


class _TooLarge(Exception):
    pass


def _json_safe(value: object, nodes: list[int], depth: int) -> object:
    """A JSON-serialisable copy; YAML aliases cannot blow it up (node and depth caps)."""
    nodes[0] -= 1
    if nodes[0] < 0 or depth > _MAX_DEPTH:
        raise _TooLarge
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {str(k): _json_safe(v, nodes, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v, nodes, depth + 1) for v in value]
    if isinstance(value, set | frozenset):
        return [_json_safe(v, nodes, depth + 1) for v in sorted(value, key=str)]
    return str(value)
