"""Parsers for the indexed formats, their budgets, the worker pool and the registry."""

from kbmcp_adapters.parsers.budget import DEFAULT_LIMITS, OverBudget, ParserLimits
from kbmcp_adapters.parsers.headings import clean_heading, normalise_heading
from kbmcp_adapters.parsers.isolation import Isolation
from kbmcp_adapters.parsers.markdown import MarkdownParser
from kbmcp_adapters.parsers.pdf import PdfParser
from kbmcp_adapters.parsers.registry import KNOWN_FORMATS, FormatRegistry, build_registry
from kbmcp_adapters.parsers.text import TextParser

__all__ = [
    "DEFAULT_LIMITS",
    "KNOWN_FORMATS",
    "FormatRegistry",
    "Isolation",
    "OverBudget",
    "ParserLimits",
    "MarkdownParser",
    "PdfParser",
    "TextParser",
    "build_registry",
    "clean_heading",
    "normalise_heading",
]
