"""Word package parts beyond the body, read from their XML: paragraph styles, list
numbering, footnotes and endnotes, and the targets of hyperlinks.

* Styles are read straight from ``styles.xml`` (one pass over ``w:style`` elements, no
  XPath per style): a file with thousands of styles costs milliseconds, not seconds.
* ``Numbering`` turns a paragraph's ``w:numPr`` (or its style's) into the label Word shows
  (``3.``, ``b)``, ``ii.``, ``1.2.``), counting per list as Word does; bullets are ``- ``.
* ``Inline`` gives a paragraph's text with hyperlink targets (``[text](url)``), pictures'
  alt text (``[image: ...]``) and note markers (``[^1]``, endnotes ``[^i]``).
* ``notes`` reads ``footnotes.xml`` / ``endnotes.xml`` into ``{id: text}``, leaving out
  Word's separator notes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kbmcp_adapters.parsers.budget import Meter

__all__ = [
    "SKIPPED",
    "W",
    "Inline",
    "Numbering",
    "StyleKind",
    "notes",
    "part_element",
    "style_kinds",
]

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_R_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_DOC_PR = "{http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing}docPr"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_NOTE_REFS = {W + "footnoteReference": "footnote", W + "endnoteReference": "endnote"}
_SPACE = re.compile(r"\s+")
_MAX_DEPTH = 10
#: Elements whose text is not part of the current document text.
SKIPPED = frozenset(
    [
        W + tag
        for tag in (
            "del",
            "moveFrom",
            "delText",
            "instrText",
            "txbxContent",
            "footnoteRef",
            "endnoteRef",
        )
    ]
    + [_MC_FALLBACK]
)
#: ``w:numFmt`` values shown as no label at all, or as a bullet.
_BULLET = frozenset({"bullet"})
_NONE = frozenset({"none"})
_ROMAN = (
    (1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
    (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class StyleKind:
    """What a paragraph style makes of a paragraph."""

    heading: int | None  # 1..9, Title is 1
    list_level: int | None  # 0-based, for list styles
    num_id: str | None = None  # the numbering the style itself carries
    num_level: int = 0


def part_element(part: Any, reltype: str) -> tuple[Any, Any] | None:
    """The part ``part`` relates to by ``reltype`` and its root element, or None."""
    from docx.oxml.parser import parse_xml

    try:
        related = part.part_related_by(reltype)
    except KeyError:
        return None
    element = getattr(related, "element", None)
    return related, element if element is not None else parse_xml(related.blob)


def _val(element: Any, path: str) -> str | None:
    found = element.find(path)
    return None if found is None else found.get(W + "val")


def style_kinds(
    styles: Any | None, meter: Meter, heading_of: Callable[[str], tuple[int | None, int | None]]
) -> dict[str, StyleKind]:
    """Paragraph style id -> its kind, following ``w:basedOn`` chains (at most ten deep).
    ``heading_of`` names what a style name makes a paragraph: (heading level, list level)."""
    if styles is None:
        return {}
    raw: dict[str, tuple[str, str | None, str | None, int]] = {}
    for style in styles.iterchildren(W + "style"):
        meter.elements()
        style_id = style.get(W + "styleId")
        if style_id is None or style.get(W + "type", "paragraph") != "paragraph":
            continue
        raw[style_id] = (
            (_val(style, W + "name") or "").strip().lower(),
            _val(style, W + "basedOn"),
            _val(style, f"{W}pPr/{W}numPr/{W}numId"),
            _int(_val(style, f"{W}pPr/{W}numPr/{W}ilvl")),
        )
    kinds: dict[str, StyleKind] = {}
    for style_id in raw:
        heading: int | None = None
        list_level: int | None = None
        num_id: str | None = None
        num_level = 0
        current: str | None = style_id
        for _ in range(_MAX_DEPTH):
            if current is None or current not in raw:
                break
            name, based_on, own_num, own_level = raw[current]
            if num_id is None and own_num is not None:
                num_id, num_level = own_num, own_level
            if heading is None and list_level is None:
                heading, list_level = heading_of(name)
            current = based_on
        kinds[style_id] = StyleKind(heading, list_level, num_id, num_level)
    return kinds


class Numbering:
    """List labels as Word shows them, counted in document order."""

    def __init__(self, numbering: Any | None) -> None:
        #: abstractNumId -> level -> (format, level text, start)
        self._abstract: dict[str, dict[int, tuple[str, str, int]]] = {}
        #: numId -> (abstractNumId, level -> start override)
        self._nums: dict[str, tuple[str, dict[int, int]]] = {}
        self._counters: dict[str, list[int]] = {}
        self._started: set[str] = set()
        if numbering is None:
            return
        for abstract in numbering.iterchildren(W + "abstractNum"):
            levels: dict[int, tuple[str, str, int]] = {}
            for lvl in abstract.iterchildren(W + "lvl"):
                levels[_int(lvl.get(W + "ilvl"))] = (
                    _val(lvl, W + "numFmt") or "decimal",
                    _val(lvl, W + "lvlText") or "",
                    _int(_val(lvl, W + "start") or "1"),
                )
            self._abstract[abstract.get(W + "abstractNumId") or ""] = levels
        for num in numbering.iterchildren(W + "num"):
            overrides = {
                _int(o.get(W + "ilvl")): _int(_val(o, W + "startOverride"))
                for o in num.iterchildren(W + "lvlOverride")
                if _val(o, W + "startOverride") is not None
            }
            self._nums[num.get(W + "numId") or ""] = (
                _val(num, W + "abstractNumId") or "",
                overrides,
            )

    def label(self, num_id: str, level: int) -> str | None:
        """The next label of list ``num_id`` at ``level``: ``"3."``; ``"- "``-style bullets
        and unknown lists give None (the caller writes a bullet)."""
        entry = self._nums.get(num_id)
        if entry is None:
            return None
        abstract_id, overrides = entry
        levels = self._abstract.get(abstract_id, {})
        fmt, text, _ = levels.get(level, ("decimal", f"%{level + 1}.", 1))
        if fmt in _BULLET:
            return None
        counters = self._counters.setdefault(abstract_id, [0] * 9)
        if num_id not in self._started:  # a list instance with its own start restarts
            self._started.add(num_id)
            for at, start in overrides.items():
                if 0 <= at < 9:
                    counters[at] = start - 1
        level = min(max(level, 0), 8)
        counters[level] += 1
        for deeper in range(level + 1, 9):  # a new item restarts its sub-lists
            counters[deeper] = 0
        if fmt in _NONE:
            return ""
        out = text
        for at in range(level, -1, -1):
            at_fmt, _, at_start = levels.get(at, ("decimal", "", 1))
            value = counters[at] if counters[at] > 0 else at_start
            out = out.replace(f"%{at + 1}", _formatted(value, at_fmt))
        return out.strip()


def _formatted(value: int, fmt: str) -> str:
    if fmt in ("lowerLetter", "upperLetter"):
        letters, n = "", value
        while n > 0:
            n, rest = divmod(n - 1, 26)
            letters = chr(ord("a") + rest) + letters
        return letters.upper() if fmt == "upperLetter" else letters
    if fmt in ("lowerRoman", "upperRoman"):
        roman, n = "", value
        for amount, numeral in _ROMAN:
            while n >= amount:
                roman, n = roman + numeral, n - amount
        return roman.upper() if fmt == "upperRoman" else roman
    if fmt == "decimalZero":
        return f"{value:02d}"
    return str(value)


def notes(
    root: Any | None, kind: str, text_of: Callable[[Any], str], meter: Meter
) -> dict[str, str]:
    """``{note id: text}`` of a footnotes or endnotes part (``kind`` is ``footnote`` or
    ``endnote``); separator notes are left out, paragraphs joined by spaces; each note
    counts as an element."""
    if root is None:
        return {}
    out: dict[str, str] = {}
    for note in root.iterchildren(W + kind):
        meter.elements()
        if note.get(W + "type") not in (None, "normal"):
            continue
        text = " ".join(" ".join(text_of(p).split()) for p in note.iter(W + "p"))
        out[note.get(W + "id") or ""] = " ".join(text.split())
    return out


class Inline:
    """The text of paragraphs in one part, with link targets (from that part's
    relationships), alt text and note markers."""

    def __init__(self, part: Any) -> None:
        self._rels: Any = getattr(part, "rels", {})
        self._marks: dict[str, dict[str, str]] = {"footnote": {}, "endnote": {}}

    def marked(self, kind: str, texts: dict[str, str]) -> list[tuple[str, str]]:
        """(marker, text) of ``kind`` notes: referenced ones in reference order, then the
        rest (given a marker of their own)."""
        marks = self._marks[kind]
        for note_id in texts:
            self._mark(kind, note_id)
        return [(mark, texts.get(note_id, "")) for note_id, mark in marks.items()]

    def _mark(self, kind: str, note_id: str) -> str:
        marks = self._marks[kind]
        if note_id not in marks:
            number = len(marks) + 1
            marks[note_id] = str(number) if kind == "footnote" else _formatted(number, "lowerRoman")
        return marks[note_id]

    def cell_text(self, tc: Any) -> str:
        """A cell's paragraphs (and nested tables' cells) on one line."""
        parts: list[str] = []
        for p in tc.iter(W + "p"):
            if any(a.tag in SKIPPED for a in p.iterancestors()):
                continue
            text = _SPACE.sub(" ", self.text_of(p)).strip()
            if text:
                parts.append(text)
        return " ".join(parts)

    def text_of(self, element: Any) -> str:
        """The current text of a paragraph: runs, hyperlinks (with their targets), fields,
        insertions, pictures' alt text and note markers; tabs and breaks as whitespace;
        deletions, field codes and text boxes left out."""
        out: list[str] = []
        for child in element.iterchildren():
            tag = child.tag
            if not isinstance(tag, str) or tag in SKIPPED:
                continue
            if tag == W + "t":
                out.append(child.text or "")
            elif tag in (W + "tab", W + "ptab"):
                out.append("\t")
            elif tag in (W + "br", W + "cr"):
                out.append("\n")
            elif tag == W + "noBreakHyphen":
                out.append("-")
            elif tag == W + "hyperlink":
                out.append(self._link(child))
            elif tag in _NOTE_REFS:
                out.append(f"[^{self._mark(_NOTE_REFS[tag], child.get(W + 'id') or '')}]")
            elif tag == W + "drawing":
                out.append(_alt_text(child) + self.text_of(child))
            elif tag != W + "pPr" and tag != W + "rPr":
                out.append(self.text_of(child))
        return "".join(out)

    def _link(self, link: Any) -> str:
        text = self.text_of(link)
        rel = self._rels.get(link.get(_R_ID)) if link.get(_R_ID) else None
        target = str(rel.target_ref) if rel is not None and rel.is_external else ""
        if not target or not text.strip() or text.strip() == target:
            return text or target
        return f"[{text}]({target.replace(' ', '%20').replace(')', '%29')})"


def _alt_text(drawing: Any) -> str:
    """``[image: alt text]`` for a drawing with a description (or title), else ``""``."""
    for pr in drawing.iter(_DOC_PR):
        alt = _SPACE.sub(" ", pr.get("descr") or pr.get("title") or "").strip()
        if alt:
            return f"[image: {alt}]"
    return ""


def _int(value: object) -> int:
    try:
        return max(int(str(value)), 0)
    except ValueError:
        return 0
