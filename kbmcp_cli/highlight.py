"""Search output for people: a snippet around the first match, with the matches marked.

With colour on (a terminal without ``NO_COLOR``, or ``--color``) the matched words are
bold (ANSI); otherwise (a pipe, a file, ``NO_COLOR``, ``--no-color``) they are wrapped in
``⟦`` and ``⟧``: marks that survive where escapes would not and that no wiki link
(``[[on-call]]``) or Markdown syntax uses, so a mark is never mistaken for the text.
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
#: The marks without colour: white square brackets (U+27E6, U+27E7).
PLAIN = ("\u27e6", "\u27e7")
_SPACE = re.compile(r"\s+")


def use_color(color: bool | None = None) -> bool:
    """``--color``/``--no-color`` when given; else colour on a terminal unless ``NO_COLOR``
    is set to anything but "" (https://no-color.org)."""
    if color is not None:
        return color
    if os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def highlight_marks(color: bool | None = None) -> tuple[str, str]:
    """Bold when colour is on (``use_color``), ``⟦ ⟧`` otherwise."""
    return BOLD if use_color(color) else PLAIN


def snippet(content: str, matches: Sequence[tuple[int, int]],
            marks: tuple[str, str] = PLAIN, width: int = SNIPPET_CHARS) -> str:
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
