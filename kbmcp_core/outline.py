"""A document's outline from the chunks its parser made: headings (or PDF pages) with the
line ranges a ranged read (``ranges``) cuts, and the lookup of one section or page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbmcp_core.errors import InvalidRange
from kbmcp_core.models import StoredChunk

#: The most entries one outline carries; a longer one is cut, and the reply says so.
OUTLINE_MAX_ENTRIES = 500
#: Characters of a PDF chunk's first line used to find its page in the served text.
_ANCHOR_CHARS = 60
#: Trails shown when a section name is ambiguous.
_SHOWN_TRAILS = 5


@dataclass(frozen=True, slots=True)
class OutlineEntry:
    """One heading (its trail from the top, its level) or one PDF page, with the lines of
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


def outline_of(chunks: Sequence[StoredChunk], text: str, total: int
               ) -> tuple[OutlineEntry, ...]:
    """Headings with line ranges when the chunks carry lines (Markdown, text, the
    converted formats); pages located in ``text`` when they carry pages only (PDF).
    ``chunks``: the document's chunks in document order."""
    if any(c.start_line is not None for c in chunks):
        return _headings(chunks, total)[:OUTLINE_MAX_ENTRIES]
    return _pages(chunks, text, total)[:OUTLINE_MAX_ENTRIES]


def _headings(chunks: Sequence[StoredChunk], total: int) -> tuple[OutlineEntry, ...]:
    """Every heading trail (and each of its parents) in document order; a section spans
    its own chunks and those of its subsections."""
    spans: dict[tuple[str, ...], list[int]] = {}
    for c in chunks:
        if c.start_line is None:
            continue
        end = min(c.end_line if c.end_line is not None else c.start_line, total)
        trail = tuple(h for h in c.heading_path if h)
        for depth in range(1, len(trail) + 1):
            span = spans.setdefault(trail[:depth], [c.start_line, end])
            span[0], span[1] = min(span[0], c.start_line), max(span[1], end)
    return tuple(OutlineEntry(t[-1], len(t), t, s, e)
                 for t, (s, e) in sorted(spans.items(), key=lambda kv: (kv[1][0], len(kv[0]))))


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


def section_lines(path: str, entries: Sequence[OutlineEntry], name: str, total: int
                  ) -> tuple[int, int]:
    """The lines of the section ``name``: a heading, or a trail written ``A > B``."""
    want = _norm(name)
    by_trail = [e for e in entries if e.trail and _norm(" > ".join(e.trail)) == want]
    found = by_trail or [e for e in entries if e.trail and _norm(e.heading) == want]
    if not found:
        raise InvalidRange(f"{path!r} has no section {name!r}; outline=true lists its "
                           "headings", total)
    if len(found) > 1:
        trails = "; ".join(" > ".join(e.trail) for e in found[:_SHOWN_TRAILS])
        raise InvalidRange(f"{len(found)} sections of {path!r} are called {name!r}: name one "
                           f"by its trail, e.g. {trails}", total)
    return found[0].start_line, found[0].end_line


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
