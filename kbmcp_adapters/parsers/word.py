"""Word parser (python-docx, imported lazily): the document as Markdown, chunked by headings.

* The bytes pass ``zipguard.check_archive`` first (not a ZIP, encrypted, ZIP bomb are
  refused); a file python-docx cannot open is a ``ParseError`` with a one-line reason.
* The body is walked in document order: paragraphs and tables interleaved, content controls
  and tracked insertions included, tracked deletions left out. A paragraph styled
  ``Title`` or ``Heading 1``..``Heading 9`` (or a style based on one) becomes a ``#``
  heading (levels past 6 stay at 6); a numbered paragraph becomes a list item labelled as
  Word shows it (``3.``, ``b)``, ``1.2.``; ``wordparts.Numbering``), a bulleted one a ``- ``
  item, indented by its list level; a table becomes one ``a | b | c`` line per row.
* A hyperlink to an address is kept as ``[text](target)``; a picture's alt text as
  ``[image: alt text]``. A footnote or endnote reference is kept as a marker where it
  stands (``[^1]``; endnotes ``[^i]``), and the notes' text follows the body under
  ``# Footnotes`` / ``# Endnotes`` as ``[^1]: text`` lines, so a hit on a note cites it.
* ``extract_text`` returns that Markdown and ``parse`` chunks the same text with
  ``markdown_chunks``, so a hit's heading path and line range point into what
  ``get_document`` serves.
* Text boxes anchored in a paragraph follow it as paragraphs of their own; headers,
  footers, comments and field codes are not part of the text.
* Work is budgeted (``budget.Meter``): styles, paragraphs and table rows count as elements,
  their text as produced characters. ``convert`` reads the document (in a parser worker
  process when isolation is on) into a picklable ``_Converted``; ``text_of`` and
  ``document`` serve and chunk it.
* Title from the core properties title, else the first Title or Heading 1, else the file
  name; date from the core properties creation date.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from kbmcp_adapters.parsers.budget import DEFAULT_LIMITS, Meter, ParserLimits
from kbmcp_adapters.parsers.headings import title_from_path
from kbmcp_adapters.parsers.markdown import markdown_chunks, markdown_headings
from kbmcp_adapters.parsers.wordparts import (
    SKIPPED,
    Inline,
    Numbering,
    StyleKind,
    notes,
    part_element,
    style_kinds,
)
from kbmcp_adapters.parsers.zipguard import check_archive
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ParsedDocument
from kbmcp_core.outline import HeadingMark
from kbmcp_core.ports import ChunkBudget

__all__ = [
    "DocxParser",
    "core_title_and_date",
    "library_reason",
    "markdown_block",
    "markdown_heading",
    "office_kind",
    "translated",
]

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
#: Block-level wrappers whose children are body content (content controls, insertions).
_BLOCK_WRAPPERS = frozenset(
    _W + tag for tag in ("sdt", "sdtContent", "customXml", "ins", "moveTo", "smartTag")
)
#: The OPC relationship type of the core properties part (docProps/core.xml).
_CORE_PROPERTIES = (
    "http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties"
)
_HEADING_STYLE = re.compile(r"^heading ([1-9])$")
_LIST_STYLE = re.compile(r"^list (?:bullet|number)(?: ([2-9]))?$")
_SPACE = re.compile(r"\s+")
# Lines Markdown would read as structure (headings, fences, setext underlines).
_STRUCTURE = re.compile(r"^(?:#{1,6}(?:\s|$)|`{3,}|~{3,}|=+\s*$|-{2,}\s*$)")


class DocxParser:
    """Parses ``.docx`` files through python-docx."""

    extensions: tuple[str, ...] = ("docx",)

    def __init__(self, limits: ParserLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits

    def convert(self, path: str, data: bytes) -> _Converted:
        return _convert(data, Meter(self.limits))

    def text_of(self, converted: _Converted) -> str:
        return converted.text

    def extract_text(self, path: str, data: bytes) -> str:
        return self.text_of(self.convert(path, data))

    def headings(self, path: str, text: str) -> tuple[HeadingMark, ...]:
        return markdown_headings(text)  # the Markdown it was converted to

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        return self.document(path, self.convert(path, data), budget)

    def document(self, path: str, converted: _Converted, budget: ChunkBudget) -> ParsedDocument:
        chunks, _ = markdown_chunks(converted.text, budget)
        return ParsedDocument(
            title=converted.title or converted.first_heading or title_from_path(path),
            chunks=chunks,
            date=converted.date,
            text=converted.text,
        )


@dataclass(frozen=True, slots=True)
class _Converted:
    text: str
    title: str | None
    first_heading: str | None
    date: str | None


def _convert(data: bytes, meter: Meter) -> _Converted:
    check_archive(data)
    from docx.opc.constants import CONTENT_TYPE
    from docx.package import Package

    with translated("Word document"):
        package: Any = Package.open(BytesIO(data))
        part: Any = package.main_document_part
        if part.content_type != CONTENT_TYPE.WML_DOCUMENT_MAIN:
            raise ParseError(f"not a Word document ({office_kind(part.content_type)})")
        document: Any = part.document
        styles = _style_kinds(part, meter)
        numbering = part_element(part, _REL + "numbering")
        writer = _Writer(styles, meter, Inline(part), Numbering(numbering and numbering[1]))
        writer.blocks(document.element.body)
        for kind, heading in (("footnote", "Footnotes"), ("endnote", "Endnotes")):
            related = part_element(part, _REL + kind + "s")
            if related is not None:
                texts = notes(related[1], kind, Inline(related[0]).text_of, meter)
                writer.notes(heading, writer.inline.marked(kind, texts))
        title, date = core_title_and_date(package, lambda part: part.core_properties)
    return _Converted(writer.markdown(), title, writer.first_heading, date)


def core_title_and_date(
    package: Any, properties_of: Callable[[Any], Any]
) -> tuple[str | None, str | None]:
    """The core properties' title and creation day, when the package has them.

    Asked through the package's relationship, so a file without core properties gets
    none (the libraries would invent a default such as "Word Document"). Metadata is
    optional: a damaged core-properties part gives no title and no date, not a failure.
    """
    try:
        props = properties_of(package.part_related_by(_CORE_PROPERTIES))
        title = _SPACE.sub(" ", str(props.title or "")).strip() or None
        created = props.created
        date = created.date().isoformat() if created is not None else None
    except Exception:  # no or broken core properties: the document itself is still good
        return None, None
    return title, date


@contextmanager
def translated(what: str) -> Iterator[None]:
    """Turn any library failure (bad package, missing part, broken XML) into ParseError."""
    try:
        yield
    except (ParseError, MemoryError):  # out of memory is not damage (the worker says so)
        raise
    except Exception as exc:  # PackageNotFoundError, KeyError, BadZipFile, XMLSyntaxError...
        raise ParseError(f"not a readable {what} ({library_reason(exc)})") from None


def office_kind(content_type: str) -> str:
    """What an Office package holds, from its main part's content type, for a message."""
    for marker, kind in (
        ("presentationml", "a PowerPoint presentation"),
        ("spreadsheetml", "an Excel workbook"),
        ("wordprocessingml", "a Word template or macro-enabled document"),
    ):
        if marker in content_type:
            return f"it holds {kind}; check the file extension"
    return f"its main part is {content_type[:80]!r}"


def library_reason(exc: BaseException) -> str:
    """One short line naming a library failure."""
    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    first = (str(message).strip().splitlines() or [""])[0].strip()
    name = type(exc).__name__
    return f"{name}: {first[:100]}" if first else name


def markdown_heading(level: int, text: str) -> str:
    """An ATX heading line; a trailing ``#`` is escaped so it is not read as a closer."""
    text = _SPACE.sub(" ", text).strip()
    if text.endswith("#"):
        text = text[:-1] + "\\#"
    return f"{'#' * min(max(level, 1), 6)} {text}"


def markdown_block(text: str, prefix: str = "") -> list[str]:
    """Plain text as Markdown lines: stripped, blank lines dropped, and lines Markdown would
    read as a heading, code fence or underline escaped with a backslash."""
    lines: list[str] = []
    for raw in text.replace("\r", "\n").replace("\v", "\n").split("\n"):
        line = raw.replace("\t", " ").strip()
        if not line:
            continue
        if _STRUCTURE.match(line):
            line = "\\" + line
        lines.append(prefix + line)
        prefix = " " * len(prefix) if prefix.strip() else prefix
    return lines


def _style_kinds(part: Any, meter: Meter) -> dict[str, StyleKind]:
    """Paragraph style id -> what it makes a paragraph (each style counts as an element:
    a file of a million styles is over budget)."""
    styles = part_element(part, _REL + "styles")
    return style_kinds(styles and styles[1], meter, _style_name_kind)


def _style_name_kind(name: str) -> tuple[int | None, int | None]:
    """(heading level, list level) a lower-cased style name stands for."""
    if name == "title":
        return 1, None
    if match := _HEADING_STYLE.match(name):
        return int(match.group(1)), None
    if match := _LIST_STYLE.match(name):
        return None, int(match.group(1) or 1) - 1
    return None, None


class _Writer:
    """Collects the Markdown lines of a document body."""

    def __init__(
        self, styles: dict[str, StyleKind], meter: Meter, inline: Inline, numbering: Numbering
    ) -> None:
        self._styles = styles
        self._meter = meter
        self.inline = inline
        self._numbering = numbering
        self._blocks: list[list[str]] = []
        self._in_list = False
        self.first_heading: str | None = None

    def markdown(self) -> str:
        return "\n\n".join("\n".join(block) for block in self._blocks if block) + (
            "\n" if self._blocks else ""
        )

    def notes(self, heading: str, marked: list[tuple[str, str]]) -> None:
        """A ``# Footnotes``-style section of ``[^mark]: text`` lines."""
        lines = [f"[^{mark}]: {self._meter.text(text)}" for mark, text in marked if text]
        if lines:
            self._in_list = False
            self._blocks.append([markdown_heading(1, heading)])
            self._blocks.append(lines)

    def blocks(self, parent: Any) -> None:
        """Paragraphs and tables under ``parent`` (body, cell, content control), in order."""
        for child in parent.iterchildren():
            self._meter.elements()
            if child.tag == _W + "p":
                self._paragraph(child)
            elif child.tag == _W + "tbl":
                self._in_list = False
                self._blocks.append(self._table(child))
            elif child.tag in _BLOCK_WRAPPERS:
                self.blocks(child)

    def _paragraph(self, p: Any) -> None:
        self._paragraph_text(p)
        for box in _text_boxes(p):  # a text box's paragraphs follow its anchor paragraph
            self.blocks(box)

    def _paragraph_text(self, p: Any) -> None:
        text = self._meter.text(self.inline.text_of(p))
        if not text.strip():
            return
        was_list, self._in_list = self._in_list, False
        style_id = _val(p, f"{_W}pPr/{_W}pStyle")
        kind = self._styles.get(style_id) if style_id is not None else None
        level = kind.list_level if kind is not None else None
        num_id, num_level = (kind.num_id, kind.num_level) if kind is not None else (None, 0)
        num_pr = p.find(f"{_W}pPr/{_W}numPr")
        if num_pr is not None:
            num_id = _val(num_pr, _W + "numId") or num_id
            num_level = _int(_val(num_pr, _W + "ilvl") or num_level)
        label = None
        if num_id is not None and num_id != "0":
            label = self._numbering.label(num_id, num_level)
            level = num_level if level is None or num_pr is not None else level
        if kind is not None and kind.heading is not None:
            if self.first_heading is None and kind.heading == 1:
                self.first_heading = _SPACE.sub(" ", text).strip()
            text = f"{label} {text}" if label else text
            self._blocks.append([markdown_heading(kind.heading, text)])
            return
        if level is not None:
            bullet = "  " * min(level, 8) + (f"{label} " if label else "- ")
            lines = markdown_block(text, bullet)
            self._in_list = True
            if was_list:
                self._blocks[-1].extend(lines)  # consecutive items form one list
            else:
                self._blocks.append(lines)
            return
        self._blocks.append(markdown_block(text))

    def _table(self, tbl: Any) -> list[str]:
        rows: list[str] = []
        for tr in _children(tbl, "tr"):
            self._meter.elements()
            cells = [self._meter.text(self.inline.cell_text(tc)) for tc in _children(tr, "tc")]
            if any(cells):
                rows.extend(markdown_block(" | ".join(cells)))
        return rows


def _children(parent: Any, tag: str) -> Iterator[Any]:
    """``w:<tag>`` children of ``parent``, looking through content controls."""
    for child in parent.iterchildren():
        if child.tag == _W + tag:
            yield child
        elif child.tag in _BLOCK_WRAPPERS:
            yield from _children(child, tag)


def _text_boxes(element: Any) -> Iterator[Any]:
    """The ``w:txbxContent`` of the text boxes anchored in a paragraph, each once (the
    legacy VML copy under ``mc:Fallback`` is skipped)."""
    for child in element.iterchildren():
        if child.tag == _W + "txbxContent":
            yield child
        elif isinstance(child.tag, str) and child.tag not in SKIPPED:
            yield from _text_boxes(child)


def _val(element: Any, path: str) -> str | None:
    found = element.find(path)
    return None if found is None else found.get(_W + "val")


def _int(value: object) -> int:
    try:
        return max(int(str(value)), 0)
    except ValueError:
        return 0
