"""The parser registry: which formats are enabled, and the parser for each extension."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from kbmcp_adapters.parsers.markdown import MarkdownParser
from kbmcp_adapters.parsers.pdf import PdfParser
from kbmcp_adapters.parsers.text import TextParser
from kbmcp_core.errors import ConfigError
from kbmcp_core.ports import Parser

__all__ = ["KNOWN_FORMATS", "FormatRegistry", "build_registry"]

#: The names accepted by ``[parsers].enabled``, in documentation order.
KNOWN_FORMATS: tuple[str, ...] = ("md", "txt", "pdf", "html", "docx", "pptx", "xlsx", "epub")


class FormatRegistry:
    """Maps lower-case extensions (``md``, ``markdown``, ...) to the enabled parsers."""

    def __init__(self, parsers: Sequence[Parser]) -> None:
        self._by_extension: Mapping[str, Parser] = {
            extension: parser for parser in parsers for extension in parser.extensions
        }

    def extensions(self) -> frozenset[str]:
        return frozenset(self._by_extension)

    def parser_for(self, extension: str) -> Parser | None:
        return self._by_extension.get(extension.lower().lstrip("."))


def build_registry(enabled: Sequence[str]) -> FormatRegistry:
    """The registry for ``[parsers].enabled``; an unknown name or an empty list is a
    ConfigError naming the valid values."""
    valid = ", ".join(KNOWN_FORMATS)
    if isinstance(enabled, str) or not enabled:
        raise ConfigError(f"[parsers].enabled must be a non-empty list of: {valid}")
    names: list[str] = []
    for name in enabled:
        key = name.strip().lower() if isinstance(name, str) else None
        if key not in KNOWN_FORMATS:
            raise ConfigError(f"[parsers].enabled: unknown format {name!r}; valid: {valid}")
        if key not in names:
            names.append(key)
    makers: dict[str, Callable[[], Parser]] = {
        "md": MarkdownParser,
        "txt": TextParser,
        "pdf": PdfParser,
        "html": _html,
        "docx": _docx,
        "pptx": _pptx,
        "xlsx": _xlsx,
        "epub": _epub,
    }
    return FormatRegistry([makers[name]() for name in names])


# The converted formats' modules are imported only when enabled.
def _html() -> Parser:
    from kbmcp_adapters.parsers.htmlpage import HtmlParser

    return HtmlParser()


def _docx() -> Parser:
    from kbmcp_adapters.parsers.word import DocxParser

    return DocxParser()


def _pptx() -> Parser:
    from kbmcp_adapters.parsers.slides import PptxParser

    return PptxParser()


def _xlsx() -> Parser:
    from kbmcp_adapters.parsers.sheets import XlsxParser

    return XlsxParser()


def _epub() -> Parser:
    from kbmcp_adapters.parsers.epub import EpubParser

    return EpubParser()
