"""HTML parser (BeautifulSoup + lxml, imported lazily): the page as Markdown, then chunked.

* Bytes are decoded by a byte-order mark, else the charset the page declares (``<meta
  charset>``, ``http-equiv`` or an XML declaration), else UTF-8, else (a page that declares
  nothing and is not UTF-8) Windows-1252 as a browser reads it, with one warning; bytes
  that do not decode in a declared charset are read as U+FFFD with one warning. Bytes
  that decode cleanly as UTF-8 (non-ASCII among them) are read as UTF-8 whatever other
  charset the page declares: a page re-saved as UTF-8 often keeps its old declaration,
  and text in another charset almost never does.
* Boilerplate is dropped: ``<head>``, ``<nav>``, ``<aside>``, ``<script>``, ``<style>``,
  ``<noscript>``, ``<template>``, form controls (not the ``<form>`` itself: some sites
  wrap the whole page in one), embedded media, and the page's ``<header>`` and
  ``<footer>`` (those inside an ``<article>``, ``<main>`` or ``<section>`` are kept: an
  article's header holds its heading). What documentation generators add is dropped
  too (``htmlmain``): only the page's one ``<main>`` is read when it has one, navigation
  marked by role, class or id is left out, and tables used for layout are read cell by
  cell as blocks, without their link-list sidebars (a data table stays one line a row).
* A list, table or division that is all links (``htmlmain.link_lists``: a table of
  contents, a back-of-book index) stays in the text, but not in what is searched: its
  lines are blank in the text ``parse`` chunks (``HtmlPage.unsearched``), so it never
  outranks the sections it points at, and a read still shows it (decision 0062).
* The rest becomes Markdown (``extract_text`` returns exactly that): ``h1``..``h6`` as
  ``#`` lines, paragraphs and list items as lines separated by blank lines, each table row
  as one ``cell | cell | cell`` line, ``<pre>`` as a fenced block, an image's alt text as
  ``[image: alt text]`` where the image stands. Lines that Markdown
  would read as headings, fences or underlines are escaped with a backslash.
* ``parse`` chunks that same text with ``markdown_chunks``: heading paths from the
  headings, line ranges into what ``extract_text`` returns. Title from ``<title>``, else
  the first ``h1``, else the file name. Broken markup is read as lxml recovers it; a page
  with no text is a document with zero chunks.
* Work is budgeted while the tree is built (``budget.Meter``): every element counts, and
  so does every character of text, so a page of a million nested tags or one huge text
  run is refused, naming the ``[parsers]`` limit, before its tree takes the memory.
  ``convert`` does the reading (in a parser worker process when isolation is on).
"""

from __future__ import annotations

import codecs
import re
import warnings
from dataclasses import dataclass
from functools import cache
from typing import Any

from kbmcp_adapters.parsers.budget import DEFAULT_LIMITS, Meter, ParserLimits
from kbmcp_adapters.parsers.headings import title_from_path
from kbmcp_adapters.parsers.htmlmain import (
    MAX_LAYOUT_DEPTH,
    content_root,
    is_layout_table,
    is_navigation,
    layout_cells,
    link_lists,
)
from kbmcp_adapters.parsers.markdown import markdown_chunks, markdown_headings
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ParsedDocument
from kbmcp_core.outline import HeadingMark
from kbmcp_core.ports import ChunkBudget

__all__ = ["HtmlPage", "HtmlParser", "decode_html", "html_blocks", "html_to_markdown"]

#: Elements dropped with everything inside them.
DROPPED = frozenset(
    {
        "head", "nav", "aside", "script", "style", "noscript", "template", "button",
        "select", "textarea", "input", "iframe", "object", "embed", "svg", "canvas",
        "audio", "video", "map", "menu",
    }
)  # fmt: skip
#: Dropped as the page's banner and footer, but kept inside these (an article's own
#: header holds its heading).
_LANDMARKS = frozenset({"header", "footer"})
_CONTENT = frozenset({"article", "main", "section"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
#: Elements that start and end a paragraph (anything else is inline text).
_BLOCKS = frozenset(
    {
        "html", "body", "main", "article", "section", "div", "p", "blockquote", "ul", "ol",
        "dl", "dt", "dd", "figure", "figcaption", "address", "hr", "center", "details",
        "summary", "fieldset", "legend", "caption", "hgroup", "tbody", "thead", "tfoot",
    }
)  # fmt: skip
_SPACE = re.compile(r"[ \t\r\n\f\v\u00a0]+")
#: A line start Markdown would read as a heading, a code fence or a setext underline.
_MARKDOWN_START = re.compile(r"^(?:#|`{3}|~{3}|=+\s*$|-{2,}\s*$)")
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
#: surrogateescape's stand-ins for the bytes cp1252 leaves undefined -> their C1 controls
_C1_ESCAPED = {0xDC00 + byte: byte for byte in (0x81, 0x8D, 0x8F, 0x90, 0x9D)}
#: What HTML means by these labels (WHATWG Encoding): Latin-1 is read as Windows-1252.
_ALIASES = {"iso-8859-1": "cp1252", "latin1": "cp1252", "latin-1": "cp1252",
            "us-ascii": "cp1252", "ascii": "cp1252"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class HtmlPage:
    """A page converted: its Markdown, ``<title>`` and decoding warnings, and the lines
    of the Markdown (0-based, first and last) that are lists of links, not searched."""

    markdown: str
    title: str | None
    warnings: tuple[str, ...]
    unsearched: tuple[tuple[int, int], ...] = ()


class HtmlParser:
    """Parses ``.html`` and ``.htm`` pages."""

    extensions: tuple[str, ...] = ("html", "htm")

    def __init__(self, limits: ParserLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits

    def convert(self, path: str, data: bytes) -> HtmlPage:
        text, decode_warnings = decode_html(data)
        blocks, links, title = _page_blocks(text, 0, Meter(self.limits))
        markdown, unsearched = _joined(blocks, links)
        return HtmlPage(markdown, title, decode_warnings, unsearched)

    def text_of(self, page: HtmlPage) -> str:
        return page.markdown

    def extract_text(self, path: str, data: bytes) -> str:
        return self.text_of(self.convert(path, data))

    def headings(self, path: str, text: str) -> tuple[HeadingMark, ...]:
        return markdown_headings(text)  # the Markdown it was converted to

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        return self.document(path, self.convert(path, data), budget)

    def document(self, path: str, page: HtmlPage, budget: ChunkBudget) -> ParsedDocument:
        chunks, first_h1 = markdown_chunks(page.markdown, budget, unsearched=page.unsearched)
        return ParsedDocument(
            title=page.title or first_h1 or title_from_path(path),
            chunks=chunks,
            warnings=page.warnings,
            text=page.markdown,
        )


def decode_html(data: bytes) -> tuple[str, tuple[str, ...]]:
    """The page's text and any decoding warning (BOM, then declared charset, then UTF-8)."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _decode(data[len(bom) :], encoding, f"its byte-order mark ({encoding})")
    declared = _declared_charset(data)
    if declared is not None:
        try:
            codec = codecs.lookup(_ALIASES.get(declared.lower(), declared)).name
        except LookupError:
            text, warned = _decode(data, "utf-8", "UTF-8")
            note = f"unknown charset {declared[:40]!r} declared; read as UTF-8"
            return text, (note, *warned)
        if codec not in ("utf-16", "utf-32"):  # a declaration in ASCII bytes cannot be these
            if codec != "utf-8" and _is_utf8(data):  # saved as UTF-8, declaration left stale
                return data.decode("utf-8"), ()
            return _decode(data, codec, f"its declared charset ({declared[:40]})")
    try:
        return data.decode("utf-8"), ()
    except UnicodeDecodeError as exc:
        # what a browser does with a page that declares nothing (WHATWG: the legacy
        # default, Windows-1252): an old manual's "Pokorn\xfd" reads as "Pokorný"
        return _windows_1252(data), (
            f"text is not valid in UTF-8 (byte {exc.start}) and the page declares no "
            "charset; read as Windows-1252, as a browser does",)


def _windows_1252(data: bytes) -> str:
    """``data`` as WHATWG's windows-1252: every byte decodes; the five Python's cp1252
    leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) are the C1 controls of the same number."""
    return data.decode("cp1252", errors="surrogateescape").translate(_C1_ESCAPED)


def _is_utf8(data: bytes) -> bool:
    """True when ``data`` holds non-ASCII bytes and all of it decodes as UTF-8: text in
    another charset almost never does, so the bytes' real encoding wins over a declaration."""
    if data.isascii():
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _declared_charset(data: bytes) -> str | None:
    from bs4.dammit import EncodingDetector

    found: Any = EncodingDetector.find_declared_encoding(data[:4096], is_html=True)
    return str(found) if found else None


def _decode(data: bytes, encoding: str, source: str) -> tuple[str, tuple[str, ...]]:
    try:
        return data.decode(encoding), ()
    except UnicodeDecodeError as exc:
        warning = f"text is not valid in {source} (byte {exc.start}); undecodable bytes replaced"
        return data.decode(encoding, errors="replace"), (warning,)


def html_to_markdown(markup: str, meter: Meter | None = None) -> tuple[str, str | None]:
    """The Markdown text of an HTML page (boilerplate dropped) and its ``<title>``."""
    blocks, links, title = _page_blocks(markup, 0, meter)
    return _joined(blocks, links)[0], title


def html_blocks(
    markup: str, heading_shift: int = 0, meter: Meter | None = None
) -> tuple[list[str], str | None]:
    """The page's Markdown blocks (headings ``heading_shift`` levels deeper, at most 6)
    and its ``<title>``; the tree is built under ``meter`` (default budgets if none)."""
    blocks, _, title = _page_blocks(markup, heading_shift, meter)
    return blocks, title


def _page_blocks(
    markup: str, heading_shift: int, meter: Meter | None
) -> tuple[list[str], frozenset[int], str | None]:
    """``html_blocks``, and which of the blocks come from a list of links."""
    soup = _soup(markup, meter if meter is not None else Meter(DEFAULT_LIMITS))
    title_tag: Any = soup.find("title")
    title = _collapse(title_tag.get_text(" ")) if title_tag is not None else ""
    root = content_root(soup, getattr(soup.builder, "mains", 0))
    writer = _blocks(root, heading_shift, link_lists(root))
    return writer.blocks, frozenset(writer.links), title or None


def _joined(
    blocks: list[str], links: frozenset[int]
) -> tuple[str, tuple[tuple[int, int], ...]]:
    """The blocks as one Markdown text, and the lines (first, last) of the listed blocks."""
    ranges: list[tuple[int, int]] = []
    line = 0
    for i, block in enumerate(blocks):
        height = block.count("\n") + 1
        if i in links:
            if ranges and ranges[-1][1] == line - 2:  # the blank line between joins them
                ranges[-1] = (ranges[-1][0], line + height - 1)
            else:
                ranges.append((line, line + height - 1))
        line += height + 1
    return "\n\n".join(blocks) + "\n", tuple(ranges)


def _soup(markup: str, meter: Meter) -> Any:
    import bs4

    with warnings.catch_warnings():
        # A short page that looks like a file name or URL, or XHTML read as HTML, is
        # still read; bs4's advice to the caller is not the user's concern.
        warnings.simplefilter("ignore", bs4.MarkupResemblesLocatorWarning)
        warnings.simplefilter("ignore", bs4.XMLParsedAsHTMLWarning)
        try:
            return bs4.BeautifulSoup(markup, builder=_metered_builder()(meter))
        except (ParseError, MemoryError):  # over budget; out of memory is not damage
            raise
        except Exception as exc:  # lxml refuses, e.g., a document it cannot recover
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ParseError(f"not a readable HTML page ({first[:120]})") from None


@cache
def _metered_builder() -> Any:
    """bs4's lxml tree builder, counting each element and each piece of text into a
    meter as lxml reports it; a meter's ``OverBudget`` stops lxml where it is."""
    from bs4.builder._lxml import LXMLTreeBuilder

    class MeteredBuilder(LXMLTreeBuilder):
        def __init__(self, meter: Meter) -> None:
            super().__init__()
            self.meter = meter
            self.mains = 0  # <main> / role="main" elements seen (htmlmain.content_root)

        def start(self, tag: Any, attrib: Any, nsmap: Any = None) -> None:
            self.meter.elements()
            if tag == "main" or (attrib and attrib.get("role") == "main"):
                self.mains += 1
            super().start(tag, attrib, nsmap or {})

        def data(self, data: Any) -> None:
            self.meter.chars(len(data))
            super().data(data)

    return MeteredBuilder


def _collapse(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _escape(line: str) -> str:
    return "\\" + line if _MARKDOWN_START.match(line) else line


class _Writer:
    """Collects inline text into paragraphs and paragraphs into Markdown blocks."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.inline: list[str] = []
        self.in_list = 0  # how many lists of links the walk is inside
        self.links: list[int] = []  # the blocks written inside one

    def flush(self, prefix: str = "") -> None:
        lines = [_collapse(part) for part in "".join(self.inline).split("\n")]
        self.inline.clear()
        lines = [line for line in lines if line]
        if lines:
            lines[0] = prefix + lines[0]
            self.append("\n".join(_escape(line) for line in lines))

    def add(self, block: str) -> None:
        self.flush()
        if block:
            self.append(block)

    def append(self, block: str) -> None:
        if self.in_list:
            self.links.append(len(self.blocks))
        self.blocks.append(block)


#: Pushed after a list of links' children: the walk has left it.
_LIST_END = object()


def _blocks(root: Any, heading_shift: int, lists: frozenset[int]) -> _Writer:
    """Walk the tree without recursion (deeply nested markup cannot exhaust the stack);
    ``lists`` are the ``id`` of the elements that are lists of links."""
    from bs4.element import NavigableString, Tag

    writer = _Writer()
    # Each entry: a node to enter, or (None, prefix) to close a block after its children;
    # the third field counts the layout tables the node is inside.
    stack: list[tuple[Any, str, int]] = [(root, "", 0)]
    while stack:
        node, prefix, depth = stack.pop()
        if node is None:
            writer.flush(prefix)
            continue
        if node is _LIST_END:
            writer.flush()
            writer.in_list -= 1
            continue
        if isinstance(node, NavigableString):
            if type(node) is NavigableString:  # comments, CDATA, doctypes are not text
                writer.inline.append(str(node))
            continue
        if not isinstance(node, Tag):
            continue
        name = (node.name or "").lower()
        if name in DROPPED or (name in _LANDMARKS and node.find_parent(_CONTENT) is None):
            continue
        if is_navigation(node, name):
            continue
        if id(node) in lists:
            writer.flush()
            writer.in_list += 1
            stack.append((_LIST_END, "", depth))
        if name in _HEADINGS:
            text = _collapse(node.get_text(" "))
            level = min(6, _HEADINGS[name] + heading_shift)
            writer.add(f"{'#' * level} {text}" if text else "")
        elif name == "table" and depth < MAX_LAYOUT_DEPTH and is_layout_table(node):
            writer.flush()
            stack.append((None, "", depth))
            stack.extend((cell, "", depth + 1) for cell in reversed(layout_cells(node)))
        elif name == "table":
            writer.add(_table(node))
        elif name == "pre":
            writer.add(_fenced(node.get_text()))
        elif name == "br":
            writer.inline.append("\n")
        elif name == "img":  # what a reader is told the picture shows
            alt = _collapse(str(node.get("alt") or ""))
            writer.inline.append(f" [image: {alt}] " if alt else "")
        elif name in ("li", "tr", "td", "th") or name in _BLOCKS:
            writer.flush()
            stack.append((None, "- " if name == "li" else "", depth))
            stack.extend((child, "", depth) for child in reversed(list(node.children)))
        else:
            stack.extend((child, "", depth) for child in reversed(list(node.children)))
    writer.flush()
    return writer


def _table(table: Any) -> str:
    """One line per row, cells joined by `` | ``; a caption first; nested tables inline."""
    lines: list[str] = []
    for child in _tags(table):
        if child.name == "caption":
            lines.append(_collapse(child.get_text(" ")))
        rows = [child] if child.name == "tr" else []
        if child.name in ("thead", "tbody", "tfoot"):
            rows = [row for row in _tags(child) if row.name == "tr"]
        for row in rows:
            cells = [_collapse(c.get_text(" ")) for c in _tags(row) if c.name in ("td", "th")]
            if any(cells):
                lines.append(" | ".join(cells))
    return "\n".join(_escape(line) for line in lines if line)


def _tags(node: Any) -> list[Any]:
    """The element children of ``node`` (its own rows or cells, not a nested table's)."""
    from bs4.element import Tag

    return [child for child in node.children if isinstance(child, Tag)]


def _fenced(text: str) -> str:
    body = text.strip("\n")
    if not body.strip():
        return ""
    longest = max((len(run) for run in re.findall(r"`{3,}", body)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}\n{body}\n{fence}"
