"""The converted formats' in-process parsers, each library imported only when asked for.

Both the registry (in this process) and a worker of ``isolation`` (in its own) build a
converted format's parser here, so neither imports the other to get one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from kbmcp_adapters.parsers.budget import ParserLimits
from kbmcp_core.models import ParsedDocument
from kbmcp_core.outline import HeadingMark
from kbmcp_core.ports import ChunkBudget

__all__ = ["Convertible", "convertible"]


class Convertible(Protocol):
    """A converted format's parser in two steps: ``convert`` reads the bytes into a
    picklable value (the step that may run in a worker), ``text_of`` and ``document``
    turn that value into the served text and the chunks."""

    extensions: tuple[str, ...]

    def convert(self, path: str, data: bytes) -> Any: ...

    def text_of(self, converted: Any) -> str: ...

    def document(self, path: str, converted: Any, budget: ChunkBudget) -> ParsedDocument: ...

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument: ...

    def extract_text(self, path: str, data: bytes) -> str: ...

    def headings(self, path: str, text: str) -> Sequence[HeadingMark] | None: ...


def convertible(fmt: str, limits: ParserLimits, ocr: bool = False) -> Convertible:
    """The in-process parser of a converted format (its module imported only now);
    ``ocr``: the ``ocr`` format is enabled, so PDF pages without text are recognised."""
    if fmt == "pdf":
        from kbmcp_adapters.parsers.pdf import PdfParser

        return PdfParser(limits, ocr=ocr)
    return _MAKERS[fmt](limits)


def _html(limits: ParserLimits) -> Convertible:
    from kbmcp_adapters.parsers.htmlpage import HtmlParser

    return HtmlParser(limits)


def _docx(limits: ParserLimits) -> Convertible:
    from kbmcp_adapters.parsers.word import DocxParser

    return DocxParser(limits)


def _pptx(limits: ParserLimits) -> Convertible:
    from kbmcp_adapters.parsers.slides import PptxParser

    return PptxParser(limits)


def _xlsx(limits: ParserLimits) -> Convertible:
    from kbmcp_adapters.parsers.sheets import XlsxParser

    return XlsxParser(limits)


def _epub(limits: ParserLimits) -> Convertible:
    from kbmcp_adapters.parsers.epub import EpubParser

    return EpubParser(limits)


def _rst(limits: ParserLimits) -> Convertible:
    from kbmcp_adapters.parsers.restructured import RstParser

    return RstParser(limits)


def _adoc(limits: ParserLimits) -> Convertible:
    from kbmcp_adapters.parsers.asciidoc import AsciiDocParser

    return AsciiDocParser(limits)


def _ipynb(limits: ParserLimits) -> Convertible:
    from kbmcp_adapters.parsers.notebook import NotebookParser

    return NotebookParser(limits)


def _code(limits: ParserLimits) -> Convertible:
    from kbmcp_adapters.parsers.code import CodeParser

    return CodeParser(limits)


def _ocr(limits: ParserLimits) -> Convertible:
    from kbmcp_adapters.parsers.ocr import ImageParser

    return ImageParser(limits)


_MAKERS: dict[str, Callable[[ParserLimits], Convertible]] = {
    "html": _html,
    "docx": _docx,
    "pptx": _pptx,
    "xlsx": _xlsx,
    "epub": _epub,
    "rst": _rst,
    "adoc": _adoc,
    "ipynb": _ipynb,
    "code": _code,
    "ocr": _ocr,
}
