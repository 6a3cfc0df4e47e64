"""Jupyter notebook parser (``.ipynb``, nbformat 4; JSON, read with the standard library).

* Markdown cells are read as Markdown: their ``#`` headings (outside code fences) are the
  notebook's headings. Code cells are read as code, followed by their outputs as text:
  stream output, ``text/plain`` or ``text/markdown`` results, and an error's name and
  message. Images and other binary outputs (base64) are left out, as are raw cells'
  attachments; raw cells are read as text.
* A hit is cited by the lines of the ``.ipynb`` file itself, the file ``get_document``
  serves: each line of a cell's text is located at the JSON line that holds it (nbformat
  writes one source line per JSON line), so a hit's line range opens that cell's source
  or output in the file.
* Title: the first level-1 heading, else the notebook's ``metadata.title``, else the file
  name. A file that is not a JSON notebook is a ``ParseError`` with a one-line reason.
* ``convert`` runs under the ``[parsers]`` budgets (in a parser worker when isolation is
  on): cells and outputs count as elements, their text as characters.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kbmcp_adapters.parsers.budget import Meter
from kbmcp_adapters.parsers.chunking import indexed_text
from kbmcp_adapters.parsers.headings import clean_heading
from kbmcp_adapters.parsers.jsonlines import Located, locate
from kbmcp_adapters.parsers.sourcechunks import Heading, Outline, SourceCitedParser
from kbmcp_core.errors import ParseError

__all__ = ["NotebookParser"]

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_TEXT_MIMES = ("text/plain", "text/markdown")


class _Builder:
    """Collects the outline's lines, each with the source line it sits on."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.lines: list[str] = []
        self.source: list[int] = []
        self.kept: list[bool] = []
        self.headings: list[Heading] = []

    def add(self, text: str, line: int, kept: bool) -> None:
        self.meter.chars(len(text) + 1)
        self.lines.append(text)
        self.source.append(line)
        self.kept.append(kept)

    def gap(self) -> None:
        if self.lines and self.lines[-1]:
            self.add("", self.source[-1], False)


class NotebookParser(SourceCitedParser):
    """Parses ``.ipynb`` notebooks."""

    extensions: tuple[str, ...] = ("ipynb",)

    def convert(self, path: str, data: bytes) -> Outline:
        text, warnings = indexed_text(data)
        meter = Meter(self.limits)
        try:
            notebook = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise ParseError(f"not a readable notebook (not JSON: {str(exc)[:100]})") from None
        cells = notebook.get("cells") if isinstance(notebook, dict) else None
        if not isinstance(cells, list):
            raise ParseError('not a readable notebook (no "cells" list: nbformat 4 is read)')
        located = locate(text, meter)
        build = _Builder(meter)
        for n, cell in enumerate(cells):
            meter.elements()
            if isinstance(cell, dict):
                _cell(build, cell, located.child("cells", n))
        metadata = notebook.get("metadata")
        named = metadata.get("title") if isinstance(metadata, dict) else None
        top = next((h.text for h in build.headings if h.level == 1), None)
        return Outline(
            tuple(build.lines),
            tuple(build.source),
            tuple(build.headings),
            tuple(build.kept),
            top or (named.strip() if isinstance(named, str) and named.strip() else None),
            warnings,
        )



def _cell(build: _Builder, cell: dict[str, Any], where: Located) -> None:
    kind = cell.get("cell_type")
    build.gap()
    fence: str | None = None
    for text, line in _texts(cell.get("source"), where.child("source")):
        if kind == "markdown":
            opened = _FENCE.match(text)
            if opened and (fence is None or opened.group(1)[0] == fence[0]):
                fence = opened.group(1) if fence is None else None
            atx = _ATX.match(text) if fence is None else None
            if atx and clean_heading(atx.group(2)):
                heading = Heading(len(build.lines), 1, len(atx.group(1)),
                                  clean_heading(atx.group(2)))  # fmt: skip
                build.headings.append(heading)
        build.add(text, line, kind == "code")
    if kind != "code":
        return
    outputs = cell.get("outputs")
    for n, output in enumerate(outputs if isinstance(outputs, list) else []):
        build.meter.elements()
        if isinstance(output, dict):
            for text, line in _output_texts(output, where.child("outputs", n)):
                build.add(_ANSI.sub("", text), line, True)


def _output_texts(output: dict[str, Any], where: Located) -> list[tuple[str, int]]:
    kind = output.get("output_type")
    if kind == "stream":
        return _texts(output.get("text"), where.child("text"))
    if kind in ("execute_result", "display_data"):
        data = output.get("data")
        if isinstance(data, dict):
            for mime in _TEXT_MIMES:
                if mime in data:
                    return _texts(data[mime], where.child("data", mime))
        return []
    if kind == "error":
        name, value = output.get("ename"), output.get("evalue")
        line = where.child("evalue").line or where.line
        return [(f"{name}: {value}", line)] if isinstance(name, str) else []
    return []


def _texts(value: Any, where: Located) -> list[tuple[str, int]]:
    """The text lines of a notebook string field (a list of strings or one string), each
    with the file line its JSON string starts on."""
    parts = value if isinstance(value, list) else [value]
    found: list[tuple[str, int]] = []
    for n, part in enumerate(parts):
        if not isinstance(part, str):
            continue
        line = (where.child(n) if isinstance(value, list) else where).line or where.line
        pieces = part[:-1].split("\n") if part.endswith("\n") else part.split("\n")
        found.extend((piece.rstrip("\r"), line) for piece in pieces)  # one JSON line
    return found
