"""One EPUB chapter's XHTML as Markdown blocks, from the source markup (not a rendering).

* ``h1``..``h6`` are headings at their source level (``Block.level``); paragraphs, list
  items (``- ``), table rows (``a | b | c``), ``pre`` (fenced) and inline SVG text are
  blocks of their own; an image's alt text is kept as ``[image: alt text]``.
* Text is joined as the markup joins it: nothing is inserted between inline elements,
  so a combining mark (a Devanagari vowel sign) stays on its letter. A line break in the
  source between two CJK characters is dropped, not read as a space. Ruby annotations
  (``rt``, ``rp``) are left out, so the base text reads as one word.
* ``head``, ``script``, ``style`` and ``template`` are not text. Every element counts
  against the book's element budget and every character of text against its output
  budget (``budget.Meter``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kbmcp_adapters.parsers.budget import Meter

__all__ = ["Block", "chapter_blocks"]

_CJK = "\u2e80-\u9fff\u3000-\u303f\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
_CJK_BREAK = re.compile(f"(?<=[{_CJK}])[ \\t\\r]*\\n\\s*(?=[{_CJK}])")
_HAS_CJK = re.compile(f"[{_CJK}]")
_MARKDOWN_START = re.compile(r"^(?:#{1,6}(?:\s|$)|`{3,}|~{3,}|=+\s*$|-{2,}\s*$|[*+-]\s|\d+[.)]\s)")
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_SKIPPED = frozenset({"head", "script", "style", "template", "rt", "rp", "noscript"})
_BLOCKS = frozenset(
    {
        "p", "div", "section", "article", "aside", "header", "footer", "main", "nav",
        "blockquote", "figure", "figcaption", "li", "dt", "dd", "dl", "ul", "ol", "body",
        "hr", "address", "center", "details", "summary", "hgroup", "caption", "tr", "html",
    }
)  # fmt: skip
#: Stands for ``<br>`` in collected text (XML text never holds NUL); source line ends are
#: whitespace.
_BREAK = "\x00"
#: Nesting past this depth is read as plain text (no recursion limit to exhaust).
_MAX_DEPTH = 200


@dataclass(frozen=True, slots=True)
class Block:
    """A heading (``level`` 1..6) or a block of Markdown lines (``level`` None)."""

    text: str
    level: int | None = None


def _local(tag: object) -> str:
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1].lower()


def collapse(text: str) -> str:
    """Whitespace runs as one space, except a line break between CJK characters."""
    if "\n" in text and _HAS_CJK.search(text):
        text = _CJK_BREAK.sub("", text)
    return " ".join(text.split())


def _escape(line: str) -> str:
    return "\\" + line if _MARKDOWN_START.match(line) else line


class _Walker:
    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.blocks: list[Block] = []
        self.inline: list[str] = []

    def flush(self, prefix: str = "") -> None:
        text = "".join(self.inline)
        self.inline = []
        lines = [collapse(line) for line in text.split(_BREAK)]
        lines = [line for line in lines if line]
        if lines:
            self.blocks.append(Block("\n".join([prefix + _escape(lines[0])] + lines[1:])))

    def add_text(self, text: str | None) -> None:
        if text:
            self.meter.chars(len(text))
            self.inline.append(text)

    def walk(self, element: Any, depth: int = 0) -> None:
        self.meter.elements()
        name = _local(element.tag)
        if not name or name in _SKIPPED:
            return
        if depth > _MAX_DEPTH:
            self.add_text(" ".join(element.itertext()))
            return
        if name in _HEADINGS:
            self.flush()
            text = collapse(inline_text(element))
            if text:
                self.meter.chars(len(text))
                self.blocks.append(Block(text, _HEADINGS[name]))
        elif name in ("img", "image"):
            alt = collapse(element.get("alt") or "")
            if alt:
                self.add_text(f" [image: {alt}] ")
        elif name == "svg":
            self.flush()
            self.add_text(" ".join(t for t in element.itertext() if t.strip()))
            self.flush()
        elif name == "br":
            self.inline.append(_BREAK)
        elif name == "pre":
            self.flush()
            self._pre(element)
        elif name == "table":
            self.flush()
            self._table(element)
        elif name in _BLOCKS:
            self.flush()
            self.add_text(element.text)
            for child in element:
                self.walk(child, depth + 1)
                self.add_text(child.tail)
            self.flush("- " if name == "li" else "")
        else:
            self.add_text(element.text)
            for child in element:
                self.walk(child, depth + 1)
                self.add_text(child.tail)

    def _pre(self, element: Any) -> None:
        body = "".join(element.itertext()).strip("\n")
        if body.strip():
            self.meter.chars(len(body))
            longest = max((len(run) for run in re.findall(r"`{3,}", body)), default=2)
            fence = "`" * (longest + 1)
            self.blocks.append(Block(f"{fence}\n{body}\n{fence}"))

    def _table(self, table: Any) -> None:
        lines: list[str] = []
        for row in table.iter():
            if _local(row.tag) == "caption":
                lines.append(collapse(inline_text(row)))
            if _local(row.tag) != "tr":
                continue
            self.meter.elements()
            cells = [collapse(inline_text(c)) for c in row if _local(c.tag) in ("td", "th")]
            if any(cells):
                lines.append(" | ".join(cells))
        text = "\n".join(_escape(line) for line in lines if line)
        if text:
            self.meter.chars(len(text))
            self.blocks.append(Block(text))


def inline_text(element: Any) -> str:
    """The text of ``element`` as a reader sees it (ruby annotations and scripts left out,
    images as their alt text)."""
    out: list[str] = []
    stack: list[tuple[Any, bool]] = [(element, False)]
    while stack:
        node, tail_only = stack.pop()
        if tail_only:
            out.append(node.tail or "")
            continue
        name = _local(node.tag)
        if node is not element:
            stack.append((node, True))
        if not name or name in _SKIPPED:
            continue
        if name in ("img", "image") and node.get("alt"):
            out.append(f" [image: {collapse(node.get('alt'))}] ")
        elif name == "br":
            out.append(" ")
        out.append(node.text or "")
        stack.extend((child, False) for child in reversed(node))
    return "".join(out)


def chapter_blocks(root: Any, meter: Meter) -> list[Block]:
    """The blocks of one chapter document (its ``body``, else the whole document)."""
    body = next((e for e in root.iter() if _local(e.tag) == "body"), root)
    walker = _Walker(meter)
    walker.walk(body)
    walker.flush()
    return walker.blocks
