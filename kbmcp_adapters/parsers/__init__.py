"""Parsers for the indexed formats (Markdown, text, PDF) and the registry that picks them."""

from kbmcp_adapters.parsers.headings import clean_heading, normalise_heading
from kbmcp_adapters.parsers.markdown import MarkdownParser
from kbmcp_adapters.parsers.pdf import PdfParser
from kbmcp_adapters.parsers.registry import KNOWN_FORMATS, FormatRegistry, build_registry
from kbmcp_adapters.parsers.text import TextParser

__all__ = [
    "KNOWN_FORMATS",
    "FormatRegistry",
    "MarkdownParser",
    "PdfParser",
    "TextParser",
    "build_registry",
    "clean_heading",
    "normalise_heading",
]
