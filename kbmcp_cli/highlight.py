"""Search output for people: a snippet around the first match, with the matches marked.

On a terminal the matched words are bold (ANSI); elsewhere (a pipe, a file, ``NO_COLOR``
set) they are wrapped in ``[[`` and ``]]``, so the marks survive where escapes would not.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # not at run time: `kb-mcp search` answered by a server stays light
    from kbmcp_core.context import Context

#: Characters of a hit shown in text output, and how many come before the first match.
SNIPPET_CHARS = 200
LEAD_CHARS = 60
BOLD = ("\x1b[1m", "\x1b[0m")
BRACKETS = ("[[", "]]")
_SPACE = re.compile(r"\s+")


def highlight_marks() -> tuple[str, str]:
    """Bold on a terminal that allows colour, ``[[ ]]`` otherwise."""
    if os.environ.get("NO_COLOR") or not sys.stdout.isatty():
        return BRACKETS
    return BOLD


def snippet(content: str, matches: Sequence[tuple[int, int]],
            marks: tuple[str, str] = BRACKETS, width: int = SNIPPET_CHARS) -> str:
    """About ``width`` characters of ``content`` (white space folded), starting a little
    before the first match, with every match inside wrapped in ``marks``."""
    start = max(0, matches[0][0] - LEAD_CHARS) if matches else 0
    if start:  # begin at a word boundary
        space = content.rfind(" ", 0, start)
        start = space + 1 if space >= 0 else 0
    end = min(len(content), start + width)
    for m_start, m_end in matches:  # a match the cut would split is shown whole
        if m_start < end < m_end:
            end = m_end
    out: list[str] = []
    at = start
    for m_start, m_end in matches:
        if m_end <= start or m_start >= end:
            continue
        m_start, m_end = max(m_start, start), min(m_end, end)
        out.append(_SPACE.sub(" ", content[at:m_start]))
        out.append(marks[0] + _SPACE.sub(" ", content[m_start:m_end]) + marks[1])
        at = m_end
    out.append(_SPACE.sub(" ", content[at:end]))
    text = "".join(out).strip()
    return ("…" if start else "") + text + ("…" if end < len(content) else "")


def context_lines(context: Context) -> str:
    """The context of a hit, indented under it, with where it comes from."""
    if context.start_page is not None:
        where = f"p.{context.start_page}-{context.end_page}"
    else:
        where = f"L{context.start_line}-{context.end_line}"
    cut = ", cut at the size cap" if context.truncated else ""
    head = f"   context ({context.kind}, {where}, {len(context.chunk_ids)} chunks{cut}):"
    body = "\n".join(f"   | {line}" for line in context.text.splitlines())
    return f"{head}\n{body}"
