"""The parser registry: which formats are enabled, and the parser for each extension.

Markdown and text are parsed in this process. The converted formats (``CONVERTED``:
PDF, HTML, Word, PowerPoint, Excel, EPUB) run under the ``[parsers]`` budgets and, unless
isolation is turned off, in the worker pool of ``isolation`` (decision 0022).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kbmcp_adapters.parsers.budget import DEFAULT_LIMITS, ParserLimits
from kbmcp_adapters.parsers.converted import convertible
from kbmcp_adapters.parsers.isolation import IsolatedParser, Isolation, WorkerPool
from kbmcp_adapters.parsers.markdown import MarkdownParser
from kbmcp_adapters.parsers.text import TextParser
from kbmcp_core.errors import ConfigError
from kbmcp_core.ports import Parser

__all__ = [
    "CONVERTED",
    "KNOWN_FORMATS",
    "FormatRegistry",
    "build_registry",
]

#: The names accepted by ``[parsers].enabled``, in documentation order.
KNOWN_FORMATS: tuple[str, ...] = ("md", "txt", "pdf", "html", "docx", "pptx", "xlsx", "epub")
#: The formats converted by a third-party library from untrusted bytes.
CONVERTED: tuple[str, ...] = ("pdf", "html", "docx", "pptx", "xlsx", "epub")


class FormatRegistry:
    """Maps lower-case extensions (``md``, ``markdown``, ...) to the enabled parsers;
    ``close`` stops the worker pool, if it has one."""

    def __init__(self, parsers: Sequence[Parser], pool: WorkerPool | None = None) -> None:
        self._by_extension: Mapping[str, Parser] = {
            extension: parser for parser in parsers for extension in parser.extensions
        }
        self.pool = pool

    def extensions(self) -> frozenset[str]:
        return frozenset(self._by_extension)

    def parser_for(self, extension: str) -> Parser | None:
        return self._by_extension.get(extension.lower().lstrip("."))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


def build_registry(
    enabled: Sequence[str],
    limits: ParserLimits = DEFAULT_LIMITS,
    isolation: Isolation | None = None,
) -> FormatRegistry:
    """The registry for ``[parsers].enabled``; an unknown name or an empty list is a
    ConfigError naming the valid values. The converted formats get ``limits``, and run
    in one worker pool when ``isolation`` is given (in this process when it is None).
    Nothing is started here: the pool starts its first worker on the first file."""
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
    converted = tuple(name for name in names if name in CONVERTED)
    pool = WorkerPool(converted, limits, isolation) if isolation and converted else None
    parsers: list[Parser] = []
    for name in names:
        if name == "md":
            parsers.append(MarkdownParser())
        elif name == "txt":
            parsers.append(TextParser())
        elif pool is not None:
            parsers.append(IsolatedParser(name, convertible(name, limits), pool))
        else:
            parsers.append(convertible(name, limits))
    return FormatRegistry(parsers, pool)
