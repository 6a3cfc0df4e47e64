"""A document's outline: its headings from the file's own structure (the parser finds them
in the text a read serves), or a PDF's pages from the chunks the index holds, each with
the line range a ranged read (``ranges``) cuts; and the lookup of one section or page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbmcp_core.errors import InvalidRange
from kbmcp_core.models import StoredChunk

#: The most entries one outline carries; a longer one is cut, and the reply says so.
OUTLINE_MAX_ENTRIES = 500
#: Characters of a PDF chunk's first line used to find its page in the served text.
_ANCHOR_CHARS = 60
#: Sections an ambiguous or unknown section name lists.
_SHOWN_SECTIONS = 20
#: How a section's trail is written: its headings from the top, joined by this.
TRAIL_SEPARATOR = " > "


@dataclass(frozen=True, slots=True)
class HeadingMark:
    """One heading of a document as its parser finds it in the served text: the 1-based
    ``line`` it starts on, its ``level`` (1 = outermost) and its text."""

    line: int
    level: int
    text: str


@dataclass(frozen=True, slots=True)
class OutlineEntry:
    """One heading (its trail from the top, its depth) or one PDF page, with the lines of
    the served text it spans (1-based, inclusive)."""

    heading: str
    level: int
    trail: tuple[str, ...]
    start_line: int
    end_line: int
    page: int | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"heading": self.heading, "level": self.level,
                                  "trail": list(self.trail), "start_line": self.start_line,
                                  "end_line": self.end_line}
        if self.page is not None:
            out["page"] = self.page
        return out


def heading_outline(marks: Sequence[HeadingMark], lines: Sequence[str]
                    ) -> tuple[OutlineEntry, ...]:
    """Every heading of ``marks`` (in document order) with the lines its section spans:
    from its heading line to the last non-blank line before the next heading of the same
    or a higher level (so with its subsections, never with a neighbour's text).
    ``lines``: the served text's lines. A heading with no text closes the section above
    it but is not an entry of its own."""
    total = len(lines)
    opened: list[tuple[HeadingMark, tuple[str, ...], int]] = []  # the stack: mark, trail, slot
    spans: list[tuple[HeadingMark, tuple[str, ...], int] | None] = []
    ends: list[int] = []

    def close(until: int) -> None:
        _, _, slot = opened.pop()
        ends[slot] = until

    for mark in marks:
        if not 1 <= mark.line <= total:
            continue
        while opened and opened[-1][0].level >= mark.level:
            close(mark.line - 1)
        trail = (opened[-1][1] if opened else ()) + ((mark.text,) if mark.text else ())
        opened.append((mark, trail, len(spans)))
        spans.append((mark, trail, len(spans)) if mark.text else None)
        ends.append(total)
    while opened:
        close(total)
    entries: list[OutlineEntry] = []
    for span, end in zip(spans, ends, strict=True):
        if span is None:
            continue
        mark, trail, _ = span
        while end > mark.line and not lines[end - 1].strip():
            end -= 1
        entries.append(OutlineEntry(mark.text, len(trail), trail, mark.line, end))
        if len(entries) == OUTLINE_MAX_ENTRIES:
            break
    return tuple(entries)


def page_outline(chunks: Sequence[StoredChunk], text: str, total: int
                 ) -> tuple[OutlineEntry, ...]:
    """A PDF's pages, located in ``text`` from the chunks the index holds (``chunks``: the
    document's chunks in document order)."""
    return _pages(chunks, text, total)[:OUTLINE_MAX_ENTRIES]


def _pages(chunks: Sequence[StoredChunk], text: str, total: int) -> tuple[OutlineEntry, ...]:
    """Each page starts at the first line, after the page before, that begins with the
    start of its first chunk (``chunks`` are in document order); a page not found is left
    out (never guessed)."""
    firsts: dict[int, str] = {}
    for c in chunks:
        line = next((ln.strip() for ln in c.content.split("\n") if ln.strip()), "")
        if c.page is not None and c.page not in firsts and line:
            firsts[c.page] = line[:_ANCHOR_CHARS]
    lines = text.split("\n")
    starts: list[tuple[int, int]] = []
    at = 0
    for page in sorted(firsts):
        anchor = firsts[page]
        found = next((k for k in range(at, len(lines)) if lines[k].lstrip().startswith(anchor)),
                     None)
        if found is None:
            continue
        starts.append((page, found + 1))
        at = found + 1
    if not starts:
        return ()
    starts[0] = (starts[0][0], 1)  # the first page starts at the top, whatever is before
    ends = [s - 1 for _, s in starts[1:]] + [total]
    return tuple(OutlineEntry(f"Page {p}", 1, (), s, max(s, e), page=p)
                 for (p, s), e in zip(starts, ends, strict=True))


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _written(entry: OutlineEntry) -> str:
    return TRAIL_SEPARATOR.join(entry.trail)


def section_lines(path: str, entries: Sequence[OutlineEntry], name: str, total: int
                  ) -> tuple[int, int]:
    """The lines of the section ``name``, looked for in this order, the first that names
    any section deciding: a heading's own text (even one holding `` > ``), its whole
    trail written ``A > B > C``, the last parts of its trail (``B > C``). Letter case and
    runs of spaces do not count. None, or more than one in that step, is
    ``InvalidRange`` naming the sections (with their lines, so any can be read)."""
    want = _norm(name)
    headed = [e for e in entries if e.trail]
    for found in ([e for e in headed if _norm(e.heading) == want],
                  [e for e in headed if _norm(_written(e)) == want],
                  [e for e in headed if len(e.trail) > 1 and any(
                      _norm(TRAIL_SEPARATOR.join(e.trail[k:])) == want
                      for k in range(1, len(e.trail) - 1))]):
        if len(found) == 1:
            return found[0].start_line, found[0].end_line
        if found:
            raise InvalidRange(f"{len(found)} sections of {path!r} are called {name!r}: "
                               f"{_listed(found)}; name one by its trail, or read its "
                               "lines", total)
    if not headed:
        raise InvalidRange(f"{path!r} has no sections (no headings); read it by lines",
                           total)
    raise InvalidRange(f"{path!r} has no section {name!r}; its sections: "
                       f"{_listed(headed)}", total)


def _listed(entries: Sequence[OutlineEntry]) -> str:
    shown = "; ".join(f"{_written(e)} (lines {e.start_line}-{e.end_line})"
                      for e in entries[:_SHOWN_SECTIONS])
    more = len(entries) - _SHOWN_SECTIONS
    return shown + (f"; and {more} more (outline=true lists them all)" if more > 0 else "")


def page_lines(path: str, entries: Sequence[OutlineEntry], page: int, total: int
               ) -> tuple[int, int]:
    pages = [e for e in entries if e.page is not None]
    if not pages:
        raise InvalidRange(f"{path!r} has no pages (only PDFs do); read it by start_line "
                           "or section", total)
    for e in pages:
        if e.page == page:
            return e.start_line, e.end_line
    last = max(e.page or 0 for e in pages)
    if page > last:
        raise InvalidRange(f"page {page} is past the end of {path!r}, which has {last} "
                           "pages", total)
    raise InvalidRange(f"page {page} of {path!r} has no text to read", total)
