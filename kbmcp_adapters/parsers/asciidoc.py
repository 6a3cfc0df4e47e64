"""AsciiDoc parser: a documented subset of the language, written here (no maintained
AsciiDoc parser that reports source lines exists on PyPI; decision 0029).

What is read, in the file's own lines (chunks hold them as they are, so a hit's line
range opens the same words in the file ``get_document`` serves):

* **Headings**, both styles. One-line: ``= Title`` (the document title, level 1),
  ``== Section`` (level 2) ... ``====== Section`` (level 6); a trailing run of ``=`` is
  dropped. Two-line, as git's documentation writes them: a title line underlined by
  ``=`` (level 1), ``-`` (2), ``~`` (3), ``^`` (4) or ``+`` (5), the underline within
  two characters of the title's length, the title not indented and not a list item or
  block attribute. A line such as ``[[anchor]]`` or ``[appendix]`` above a heading is
  not part of it.
* **Delimited blocks**, kept whole when they fit a chunk and never read for headings:
  listing ``----``, literal ``....``, example ``====``, sidebar ``****``, quote
  ``____``, passthrough ``++++``, comment ``////`` (four or more of the character, the
  closing line the same as the opening one), open ``--`` and fenced code (`````` ``` ``````).
* **Tables** ``|===`` ... ``|===`` (also ``,===``, ``:===``, ``!===``), kept whole the same way.
* Lists, paragraphs, attribute entries (``:name: value``) and everything else: text.
  Line comments (``// ...``) are never headings. Includes are not followed.

Title: the document title, else the first level-2 heading, else the file name.
"""

from __future__ import annotations

import re

from kbmcp_adapters.parsers.budget import Meter
from kbmcp_adapters.parsers.chunking import indexed_text, split_lines
from kbmcp_adapters.parsers.sourcechunks import Heading, Outline, SourceCitedParser

__all__ = ["AsciiDocParser"]

_ONE_LINE = re.compile(r"^(={1,6})[ \t]+(\S.*?)(?:[ \t]+=+)?[ \t]*$")
_UNDERLINE_LEVEL = {"=": 1, "-": 2, "~": 3, "^": 4, "+": 5}
_UNDERLINE = re.compile(r"^([=\-~^+])\1+[ \t]*$")
_DELIMITER = re.compile(r"^(?:(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,})|(--)|(```).*)[ \t]*$")
_TABLE = re.compile(r"^[|,:!]={3,}[ \t]*$")
_NOT_A_TITLE = re.compile(r"^(?:[ \t]|//|[*.\-]+[ \t]|\d+\.[ \t]|\[.*\][ \t]*$|:[\w-]+:|\+$|<\d+>)")
_SPACE = re.compile(r"\s+")


class AsciiDocParser(SourceCitedParser):
    """Parses ``.adoc`` and ``.asciidoc`` files (the subset in the module docstring)."""

    extensions: tuple[str, ...] = ("adoc", "asciidoc")

    def convert(self, path: str, data: bytes) -> Outline:
        text, warnings = indexed_text(data)
        meter = Meter(self.limits)
        meter.chars(len(text))
        lines = tuple(split_lines(text))
        headings, kept = scan(lines, meter)
        title = next((h.text for h in headings if h.level == 1), None) or next(
            (h.text for h in headings if h.level == 2), None
        )
        return Outline(lines, tuple(range(1, len(lines) + 1)), tuple(headings), kept, title,
                       warnings)  # fmt: skip



def scan(lines: tuple[str, ...], meter: Meter) -> tuple[list[Heading], tuple[bool, ...]]:
    """The headings outside blocks, and which lines belong to a block or table."""
    headings: list[Heading] = []
    kept = [False] * len(lines)
    closing: str | None = None  # the line that ends the block we are in
    opened = 0
    i = 0
    while i < len(lines):
        meter.elements()
        line = lines[i].rstrip()
        if closing is not None:
            if line == closing:
                kept[opened : i + 1] = [True] * (i + 1 - opened)
                closing = None
            i += 1
            continue
        opener = _opener(line)
        if opener is not None:
            closing, opened = opener, i
            i += 1
            continue
        heading = _heading_at(lines, i)
        if heading is not None:
            headings.append(heading)
            i += heading.lines
            continue
        i += 1
    if closing is not None:  # an unclosed block runs to the end of the file
        kept[opened:] = [True] * (len(lines) - opened)
    return headings, tuple(kept)


def _opener(line: str) -> str | None:
    """The closing line of the block ``line`` opens, or None if it opens none."""
    if _TABLE.match(line):
        return line
    match = _DELIMITER.match(line)
    if match is None:
        return None
    if match.group(3):
        return "```"
    return match.group(1) or match.group(2)


def _heading_at(lines: tuple[str, ...], i: int) -> Heading | None:
    line = lines[i].rstrip()
    match = _ONE_LINE.match(line)
    if match:
        return Heading(i, 1, len(match.group(1)), _SPACE.sub(" ", match.group(2)).strip())
    if i + 1 >= len(lines) or not line or _NOT_A_TITLE.match(line):
        return None
    if i > 0 and lines[i - 1].strip() and not lines[i - 1].lstrip().startswith(("[", "//")):
        return None  # a title line starts a block: after a blank line or an attribute
    under = _UNDERLINE.match(lines[i + 1].rstrip())
    if under is None or abs(len(lines[i + 1].rstrip()) - len(line)) > 2:
        return None
    return Heading(i, 2, _UNDERLINE_LEVEL[under.group(1)], _SPACE.sub(" ", line).strip())
