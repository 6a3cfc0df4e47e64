"""Ranged reads: some lines, one section or one page of a document, each reply under the
read cap, and the outline (headings or pages with their line ranges) that finds them.

A range is cut from the text the guard chain loaded (``reading.load_clean``, once per
read). The outline's headings come from that text's own structure, found by the format's
parser as an index run finds them (``Parser.headings``), so a section is exactly its
heading's lines whatever the chunks merged; a PDF's pages come from the chunks the index
holds (decision 0033 and its addendum).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from kbmcp_core.errors import IndexNotFound, InvalidRange, KbError
from kbmcp_core.models import MIB, StoredChunk, StoredDocument, extension_of
from kbmcp_core.outline import (
    OUTLINE_MAX_ENTRIES,
    OutlineEntry,
    heading_outline,
    page_lines,
    page_outline,
    section_lines,
)
from kbmcp_core.ports import ConvertedTexts, FileSystem, Parser, ParserRegistry
from kbmcp_core.reading import (
    BINARY_FORMATS,
    EXTRACTED_TEXT_CAP,
    RANGE_HINT,
    TEXT_READ_CAP,
    TRUNCATION_NOTICE,
    ConversionGate,
    RequestPath,
    load_clean,
)
from kbmcp_core.uris import doc_range_uri

#: Lines a range holds when ``max_lines`` is not given.
DEFAULT_LINES = 1000
#: The most lines one request may ask for.
MAX_LINES = 100_000
#: A document longer than this many lines comes back with its outline unasked.
LONG_DOCUMENT_LINES = 400
#: The text of one reply, in UTF-8 bytes: the read cap, as for a whole read.
REPLY_TEXT_BUDGET = TEXT_READ_CAP

#: Bytes kept free for ``NEXT_NOTICE`` in a resource body, so it too stays under the cap.
NOTICE_ROOM = 1024
NEXT_NOTICE = ("\n\n---\n[kb-mcp: lines {start}-{end} of {total} of this document are "
               "shown. Read {next_uri} for the lines after them.]\n")


@dataclass(frozen=True, slots=True)
class RangeRequest:
    """What part of a document to read. No field set: the whole document."""

    start_line: int | None = None
    max_lines: int | None = None
    section: str | None = None
    page: int | None = None
    max_chars: int | None = None
    outline: bool = False
    #: a whole read that serves the first lines of a document past the read cap (with a
    #: notice) instead of refusing it: what ``kb://doc/<path>`` does
    whole_or_first: bool = False
    #: the outline of a long document comes with its first lines unasked; a reader that
    #: shows none (a resource body) turns that off, so no headings are looked for
    outline_unasked: bool = True

    @property
    def names_part(self) -> bool:
        return (self.start_line is not None or self.max_lines is not None
                or self.section is not None or self.page is not None)


@dataclass(frozen=True, slots=True)
class TextRange:
    """What a (ranged) read returns. ``is_range`` is true whenever ``text`` is not the
    whole document; ``next_start_line`` is None at the end. ``total_lines`` is None only
    for a whole read of a converted document whose text was cut (``truncated``): its
    length is not known without converting it again, which a range from
    ``next_start_line`` does."""

    path: str
    text: str
    media_type: str
    total_lines: int | None
    start_line: int
    end_line: int
    next_start_line: int | None
    is_range: bool
    truncated: bool
    #: fewer lines came back than were asked for (the reply budget or max_chars)
    cut_short: bool = False
    outline: tuple[OutlineEntry, ...] | None = None
    #: why the outline is missing or cut when one was due (not indexed, changed since)
    outline_note: str | None = None


class OutlineIndex(Protocol):
    """The index, as far as an outline needs it (``IndexReader`` is one)."""

    def get_document(self, path: str) -> StoredDocument | None: ...

    def chunk_ids_for(self, paths: Collection[str]) -> list[int]: ...

    def chunk_windows(self, ids: Collection[int], radius: int
                      ) -> dict[int, list[StoredChunk]]: ...


def check_request(ask: RangeRequest) -> None:
    """Refuse what no document can answer, before anything is read."""
    given = [n for n, v in (("start_line", ask.start_line), ("section", ask.section),
                            ("page", ask.page)) if v is not None]
    if len(given) > 1:
        raise InvalidRange(f"give one of start_line, section and page, not {' and '.join(given)}")
    for name, value, most in (("start_line", ask.start_line, None),
                              ("max_lines", ask.max_lines, MAX_LINES),
                              ("page", ask.page, None), ("max_chars", ask.max_chars, None)):
        if value is not None and (value < 1 or (most is not None and value > most)):
            bound = f" and at most {most}" if most else ""
            raise InvalidRange(f"{name} must be at least 1{bound} (got {value})")
    if ask.section is not None and not ask.section.strip():
        raise InvalidRange("section must name a heading")


def read_range(path: RequestPath, ask: RangeRequest, fs: FileSystem, registry: ParserRegistry,
               conversions: ConvertedTexts | None = None, gate: ConversionGate | None = None,
               index: OutlineIndex | None = None) -> TextRange:
    """THE ranged read: the guard chain once (``reading.load_clean``), then the lines asked
    for, cut to ``REPLY_TEXT_BUDGET`` bytes (and ``max_chars``) at a line end.

    A whole read (no part named) of a document past the read cap is refused with how to
    read it in ranges, unless ``max_chars``, ``outline`` or ``whole_or_first`` asks for its
    first lines (as a range that says so).
    The outline comes back when asked for, and unasked with the first lines of a document
    longer than ``LONG_DOCUMENT_LINES`` (not again with every later range).
    """
    check_request(ask)
    ranged = ask.names_part or ask.max_chars is not None or ask.outline or (
        ask.whole_or_first and extension_of(path) not in BINARY_FORMATS)  # those are cut
    by_part = ask.section is not None or ask.page is not None
    first = ask.start_line or 1
    loaded = load_clean(path, fs, registry, conversions, gate, whole=not ranged)
    breaks = loaded.text.count("\n")  # line ``k`` ends in a line break when k <= breaks
    total = breaks if loaded.text.endswith("\n") or not loaded.text else breaks + 1
    show = ask.outline or (ask.outline_unasked and total > LONG_DOCUMENT_LINES
                           and first == 1 and not by_part)
    entries: tuple[OutlineEntry, ...] | None = None
    note: str | None = None
    parser = registry.parser_for(extension_of(path))
    if parser is not None and (show or by_part):
        entries, note = _outline(path, parser, loaded.content_hash, loaded.text, index,
                                 total)
    if by_part:
        first, last = _part_lines(path, ask, entries, note, total)
        if ask.max_lines is not None:
            last = min(last, first + ask.max_lines - 1)
    else:
        want = ask.max_lines or (DEFAULT_LINES if ask.start_line is not None else total)
        last = min(total, first + want - 1)
    if first > max(total, 1):
        raise InvalidRange(f"start_line {first} is past the end of {path!r}, which has "
                           f"{total} lines", total)
    # a resource's first lines leave room for the notice that says they are a range
    budget = REPLY_TEXT_BUDGET - (NOTICE_ROOM if ask.whole_or_first and ranged else 0)
    lines = loaded.text.split("\n", last)  # lines past ``last`` stay one string, unsplit
    text, end = _cut(lines, breaks, first, last, ask.max_chars, path, budget)
    if not ranged and end < last:  # a whole read that does not fit: never cut silently
        raise InvalidRange(f"{path!r} ({total} lines) is longer than one reply may be"
                           + RANGE_HINT, total)
    # a cut kept conversion ends inside its last line: read on from that line, whole
    nxt = (max(end, first) if loaded.truncated else end + 1) if (
        end < total or loaded.truncated) else None
    return TextRange(
        path=path, text=text, media_type=loaded.media_type,
        total_lines=None if loaded.truncated else total,
        start_line=first, end_line=end, next_start_line=nxt,
        is_range=first > 1 or end < total or loaded.truncated, truncated=loaded.truncated,
        cut_short=end < last, outline=entries if show else None,
        outline_note=note if show else None)


def _cut(lines: Sequence[str], breaks: int, first: int, last: int, max_chars: int | None,
         path: str, budget: int) -> tuple[str, int]:
    """Lines ``first``..``last`` (1-based) of ``lines`` with their line ends (line ``k``
    has one when ``k <= breaks``), stopped at the last whole line within ``budget`` bytes
    and ``max_chars``; returns the text and its last line."""
    if last < first:
        return "", first - 1
    whole = "\n".join(lines[first - 1:last]) + ("\n" if last <= breaks else "")
    if (max_chars is None or len(whole) <= max_chars) and (
            len(whole) <= budget // 4 or len(whole.encode("utf-8")) <= budget):
        return whole, last  # the common case: all of it fits
    chars = max_chars
    out: list[str] = []
    end = first - 1
    for k in range(first - 1, last):
        line = lines[k] + ("\n" if k < breaks else "")
        size = len(line) if line.isascii() else len(line.encode("utf-8"))
        if size > budget or (chars is not None and len(line) > chars):
            break
        budget -= size
        if chars is not None:
            chars -= len(line)
        out.append(line)
        end = k + 1
    if end < first:
        raise InvalidRange(f"line {first} of {path!r} alone is longer than a reply may be "
                           f"({'max_chars' if max_chars is not None else 'the read cap'}); "
                           "it cannot be read in line ranges")
    return "".join(out), end


def _outline(path: str, parser: Parser, digest: str | None, text: str,
             index: OutlineIndex | None, total: int
             ) -> tuple[tuple[OutlineEntry, ...] | None, str | None]:
    """The headings ``parser`` finds in ``text``; for a format without them in its text
    (PDF), the pages the index holds, when it holds this version of the file."""
    try:
        marks = parser.headings(path, text)
    except KbError as exc:
        return None, f"its headings cannot be read ({exc})"
    if marks is not None:
        entries = heading_outline(marks, text.split("\n"))
    else:
        pages, note = _pages(path, digest, text, index, total)
        if pages is None:
            return None, note
        entries = pages
    if len(entries) == OUTLINE_MAX_ENTRIES:
        return entries, f"the first {OUTLINE_MAX_ENTRIES} headings only"
    return entries, None


def _pages(path: str, digest: str | None, text: str, index: OutlineIndex | None, total: int
           ) -> tuple[tuple[OutlineEntry, ...] | None, str | None]:
    if index is None:
        return None, "read without an index: a PDF's pages come from the index"
    try:
        row = index.get_document(path)
    except IndexNotFound:
        row = None
    if row is None:
        return None, "not indexed: a PDF's pages come from the index"
    if digest is not None and digest != row.content_hash:
        return None, ("changed since it was indexed: run `kb-mcp index` (or rebuild_index) "
                      "for the pages of this version")
    ids = index.chunk_ids_for([path])
    in_order = index.chunk_windows(ids[:1], len(ids)).get(ids[0], []) if ids else []
    return page_outline(in_order, text, total), None


def _part_lines(path: str, ask: RangeRequest, entries: tuple[OutlineEntry, ...] | None,
                note: str | None, total: int) -> tuple[int, int]:
    if entries is None:
        raise InvalidRange(f"{path!r} has no outline to find a section or page in: {note}",
                           total)
    if ask.section is not None:
        return section_lines(path, entries, ask.section, total)
    assert ask.page is not None
    return page_lines(path, entries, ask.page, total)


def resource_text(got: TextRange, uri_path: str | None = None, *,
                  collection: str | None = None) -> str:
    """A resource body: the text, plus a visible notice when a whole read was cut short
    (a URI that named lines gets exactly them, and a notice only if they did not fit);
    the next URI in ``collection``'s form when one is given."""
    if got.truncated:  # a converted document's kept text, cut as ADR-0004 describes
        return got.text + TRUNCATION_NOTICE.format(cap=EXTRACTED_TEXT_CAP // MIB)
    if not got.cut_short or got.next_start_line is None:
        return got.text
    span = got.end_line - got.start_line + 1
    nxt = doc_range_uri(uri_path or got.path, got.next_start_line,
                        min(got.total_lines or 0, got.next_start_line + max(span, 1) - 1),
                        collection)
    return got.text + NEXT_NOTICE.format(start=got.start_line, end=got.end_line,
                                         total=got.total_lines, next_uri=nxt)


def range_fields(got: TextRange) -> dict[str, object]:
    """Where a read's text sits in its document, as ``get_document`` reports it."""
    out: dict[str, object] = {
        "total_lines": got.total_lines, "start_line": got.start_line,
        "end_line": got.end_line, "next_start_line": got.next_start_line,
        "is_range": got.is_range,
    }
    if got.outline is not None:
        out["outline"] = [e.as_dict() for e in got.outline]
    if got.outline_note is not None:
        out["outline_note"] = got.outline_note
    return out
