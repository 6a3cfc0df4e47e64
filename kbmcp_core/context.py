"""Parent context: the text around a hit (its neighbours, or its whole section), capped.

A hit is one chunk; a client often needs what comes before and after it to answer. The
context is built from the chunks of the hit's document in order (``IndexReader.chunk_windows``):

* ``adjacent`` — up to ``chunks`` chunks before and after the hit;
* ``section`` — the run of chunks around the hit that sit under the hit's heading (its
  subsections included); a document without headings is one section.

The hit's own chunk is always included; neighbours are added nearest first, alternating
after and before, while the text stays within ``MAX_CONTEXT_CHARS``. ``truncated`` says
a neighbour was left out for the cap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from kbmcp_core.models import StoredChunk

ContextKind = Literal["none", "adjacent", "section"]
CONTEXT_KINDS: tuple[ContextKind, ...] = ("none", "adjacent", "section")

#: Most characters of context returned with one hit (about 1,500 tokens): five hits with
#: context stay a readable page for a model.
MAX_CONTEXT_CHARS = 6000
#: Most neighbours on each side ``adjacent`` may ask for.
MAX_ADJACENT = 5
#: How far a section is looked for on each side of the hit, in chunks; the character cap
#: cuts long sections well before this.
SECTION_RADIUS = 24
_JOIN = "\n\n"


@dataclass(frozen=True, slots=True)
class Context:
    kind: ContextKind
    text: str
    chunk_ids: tuple[int, ...]
    start_line: int | None
    end_line: int | None
    start_page: int | None
    end_page: int | None
    truncated: bool

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "kind": self.kind,
            "expanded": True,
            "text": self.text,
            "chunk_ids": list(self.chunk_ids),
            "truncated": self.truncated,
        }
        if self.start_page is not None:
            out["start_page"], out["end_page"] = self.start_page, self.end_page
        elif self.start_line is not None:
            out["start_line"], out["end_line"] = self.start_line, self.end_line
        return out


def radius_for(kind: ContextKind, chunks: int) -> int:
    """How many chunks on each side the store must return for this kind of context."""
    if kind == "adjacent":
        return max(0, min(chunks, MAX_ADJACENT))
    return SECTION_RADIUS if kind == "section" else 0


def build_context(
    hit_id: int,
    window: Sequence[StoredChunk],
    kind: ContextKind,
    chunks: int = 1,
    max_chars: int = MAX_CONTEXT_CHARS,
) -> Context | None:
    """The context of the chunk ``hit_id`` from ``window`` (its document's chunks around
    it, in order), or None when ``kind`` is ``none`` or the hit is not in the window."""
    if kind == "none":
        return None
    at = next((i for i, c in enumerate(window) if c.id == hit_id), None)
    if at is None:
        return None
    lo, hi = _bounds(window, at, kind, chunks)
    picked = [at]
    size = len(window[at].content)
    left, right = at - 1, at + 1
    truncated = False
    while left >= lo or right <= hi:
        for side in ("after", "before"):
            i = right if side == "after" else left
            if not (lo <= i <= hi):
                continue
            extra = len(window[i].content) + len(_JOIN)
            if size + extra > max_chars:
                truncated = True
                lo, hi = (lo, right - 1) if side == "after" else (left + 1, hi)
                continue
            size += extra
            picked.append(i)
            if side == "after":
                right += 1
            else:
                left -= 1
    parts = [window[i] for i in sorted(picked)]
    lines = [(c.start_line, c.end_line) for c in parts if c.start_line is not None]
    pages = [c.page for c in parts if c.page is not None]
    return Context(
        kind=kind,
        text=_JOIN.join(c.content for c in parts),
        chunk_ids=tuple(c.id for c in parts),
        start_line=min(s for s, _ in lines) if lines else None,
        end_line=max(e for _, e in lines if e is not None) if lines else None,
        start_page=min(pages) if pages else None,
        end_page=max(pages) if pages else None,
        truncated=truncated,
    )


def _bounds(window: Sequence[StoredChunk], at: int, kind: ContextKind,
            chunks: int) -> tuple[int, int]:
    """First and last index of ``window`` the context may take."""
    if kind == "adjacent":
        n = radius_for(kind, chunks)
        return max(0, at - n), min(len(window) - 1, at + n)
    prefix = window[at].heading_path
    lo = at
    while lo > 0 and window[lo - 1].heading_path[: len(prefix)] == prefix:
        lo -= 1
    hi = at
    while hi < len(window) - 1 and window[hi + 1].heading_path[: len(prefix)] == prefix:
        hi += 1
    return lo, hi
