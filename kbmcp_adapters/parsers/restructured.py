"""reStructuredText parser (docutils, imported lazily): sections from docutils' own reading
of the file, chunks and citations from the file's lines.

* The file is strict UTF-8, like Markdown. docutils parses it with everything that could
  reach outside the file turned off: no ``include`` or other file insertion
  (``file_insertion_enabled``), no ``raw`` (``raw_enabled``), no configuration files
  (``_disable_config``), no report output; unknown directives and roles (Sphinx's
  ``toctree``, ``:ref:``) are parsed as docutils reads them and change nothing here.
* Headings are docutils' section titles at any adornment style, levels by nesting.
  docutils reports a title at its underline; the title line (and an overline) is found
  from there. Literal blocks (``::``, ``code-block``) and tables (grid and simple) are
  kept whole when they fit a chunk.
* Chunks hold the file's own lines (markup and all), so a hit's line range opens the
  same words in the file ``get_document`` serves. Title: the first top-level heading,
  else the file name.
* ``convert`` runs under the ``[parsers]`` budgets (in a parser worker when isolation is
  on): the text counts as produced characters (before docutils sees it), every doctree
  node as an element. Text nested deeper than docutils can recurse, or that docutils
  fails on, is a ``ParseError`` with a one-line reason.
"""

from __future__ import annotations

import io
import re
from typing import Any

from kbmcp_adapters.parsers.budget import Meter
from kbmcp_adapters.parsers.chunking import indexed_text, split_lines
from kbmcp_adapters.parsers.sourcechunks import Heading, Outline, SourceCitedParser
from kbmcp_core.errors import ParseError

__all__ = ["RstParser"]

_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1+\s*$")
_SPACE = re.compile(r"\s+")


class RstParser(SourceCitedParser):
    """Parses ``.rst`` and ``.rest`` files."""

    extensions: tuple[str, ...] = ("rst", "rest")

    def convert(self, path: str, data: bytes) -> Outline:
        text, warnings = indexed_text(data)
        meter = Meter(self.limits)
        meter.chars(len(text))
        lines = tuple(split_lines(text))
        try:
            doctree = _parse(path, text)
            headings, kept = _structure(doctree, lines, meter)
        except RecursionError:
            raise ParseError("not readable reStructuredText (nested too deeply)") from None
        top = next((h.text for h in headings if h.level == 1), None)
        return Outline(lines, tuple(range(1, len(lines) + 1)), tuple(headings), kept, top,
                       warnings)  # fmt: skip



def _parse(path: str, text: str) -> Any:
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    settings: Any = get_default_settings(Parser)
    settings.file_insertion_enabled = False
    settings.raw_enabled = False
    settings._disable_config = True
    settings.report_level = 5  # nothing reported ...
    settings.halt_level = 5  # ... and nothing stops the parse
    settings.warning_stream = io.StringIO()
    settings.doctitle_xform = False
    settings.input_encoding = "unicode"
    document = new_document(path.rsplit("/", 1)[-1], settings)
    try:
        Parser().parse(text, document)
    except (ParseError, MemoryError, RecursionError):  # RecursionError: see ``convert``
        raise
    except Exception as exc:  # docutils raises its own errors on malformed input
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ParseError(f"not readable reStructuredText ({first[:120]})") from None
    return document


def _structure(
    doctree: Any, lines: tuple[str, ...], meter: Meter
) -> tuple[list[Heading], tuple[bool, ...]]:
    """Headings (from section titles) and the lines of literal blocks and tables."""
    from docutils import nodes

    headings: list[Heading] = []
    kept = [False] * len(lines)
    for node in doctree.findall():
        meter.elements()
        if isinstance(node, nodes.title) and isinstance(node.parent, nodes.section):
            heading = _heading(node, lines)
            if heading is not None:
                headings.append(heading)
        elif isinstance(node, (nodes.literal_block, nodes.table)) and node.line:
            _mark_block(kept, lines, int(node.line))
    headings.sort(key=lambda h: h.line)
    return _unique(headings), tuple(kept)


def _heading(title: Any, lines: tuple[str, ...]) -> Heading | None:
    """The heading a section title stands for: docutils reports the underline's line."""
    from docutils import nodes

    text = _SPACE.sub(" ", title.astext()).strip()
    level = sum(1 for parent in _ancestors(title) if isinstance(parent, nodes.section))
    if not text or not title.line:
        return None
    under = int(title.line) - 1  # 0-based index of the underline
    for at in (under - 1, under - 2, under, under + 1):  # the title line, wherever it is
        if 0 <= at < len(lines) and _SPACE.sub(" ", lines[at]).strip() == text:
            over = at > 0 and _ADORNMENT.match(lines[at - 1]) is not None
            start = at - 1 if over else at
            return Heading(start, at - start + 2, level, text)
    return None


def _ancestors(node: Any) -> list[Any]:
    found: list[Any] = []
    while node.parent is not None:
        node = node.parent
        found.append(node)
    return found


def _mark_block(kept: list[bool], lines: tuple[str, ...], line: int) -> None:
    """Mark the block docutils reports at 1-based ``line``: the run of blank, indented
    and table-border lines around it (a literal block's body, a table)."""
    at = min(max(line - 1, 0), len(lines) - 1)
    start = end = at
    while start > 0 and _in_block(lines[start - 1]):
        start -= 1
    while end + 1 < len(lines) and _in_block(lines[end + 1]):
        end += 1
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end].strip():
        end -= 1
    kept[start : end + 1] = [True] * (end + 1 - start)


def _in_block(line: str) -> bool:
    return not line.strip() or line[:1] in " \t+|="


def _unique(headings: list[Heading]) -> list[Heading]:
    out: list[Heading] = []
    for heading in headings:
        if not out or heading.line >= out[-1].line + out[-1].lines:
            out.append(heading)
    return out
