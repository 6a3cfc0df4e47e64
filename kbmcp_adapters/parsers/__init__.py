"""Parsers for the indexed formats, their budgets, the worker pool and the registry. Each
name is imported on first use (``kbmcp_core.lazy``): a parser's module loads no other."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbmcp_core.lazy import lazy_names

if TYPE_CHECKING:
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

__getattr__ = lazy_names(__name__, {
    "DEFAULT_LIMITS": "kbmcp_adapters.parsers.budget",
    "FormatRegistry": "kbmcp_adapters.parsers.registry",
    "Isolation": "kbmcp_adapters.parsers.isolation",
    "KNOWN_FORMATS": "kbmcp_adapters.parsers.registry",
    "MarkdownParser": "kbmcp_adapters.parsers.markdown",
    "OverBudget": "kbmcp_adapters.parsers.budget",
    "ParserLimits": "kbmcp_adapters.parsers.budget",
    "PdfParser": "kbmcp_adapters.parsers.pdf",
    "TextParser": "kbmcp_adapters.parsers.text",
    "build_registry": "kbmcp_adapters.parsers.registry",
    "clean_heading": "kbmcp_adapters.parsers.headings",
    "normalise_heading": "kbmcp_adapters.parsers.headings",
})
