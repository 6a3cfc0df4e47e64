"""The parser registry: which formats are enabled, and the parser for each extension.

Markdown and text are parsed in this process (text: ``.txt`` files and the extension-less
text files named in ``kbmcp_core.models.TEXT_NAMES``). The converted formats
(``CONVERTED``: PDF, HTML, Word, PowerPoint, Excel, EPUB, reStructuredText, AsciiDoc,
Jupyter notebooks, source code, images read by OCR) run under the ``[parsers]`` budgets
and, unless isolation is turned off, in the worker pool of ``isolation`` (decision 0022).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kbmcp_adapters.parsers.budget import DEFAULT_LIMITS, ParserLimits
from kbmcp_adapters.parsers.converted import convertible
from kbmcp_adapters.parsers.formats import (
    FORMAT_EXTENSIONS,
    KNOWN_FORMATS,
    READABLE_EXTENSIONS,
    enabled_names,
)
from kbmcp_adapters.parsers.isolation import IsolatedParser, Isolation, WorkerPool
from kbmcp_adapters.parsers.markdown import MarkdownParser
from kbmcp_adapters.parsers.text import TextParser
from kbmcp_core.ports import Parser

__all__ = [
    "CONVERSION_VERSIONS",
    "CONVERTED",
    "FORMAT_EXTENSIONS",
    "KNOWN_FORMATS",
    "READABLE_EXTENSIONS",
    "FormatRegistry",
    "build_registry",
]

#: The formats converted from untrusted bytes by a library or a parser of their syntax
#: (reST, AsciiDoc, notebooks: cited by their own lines, decision 0029).
CONVERTED: tuple[str, ...] = ("pdf", "html", "docx", "pptx", "xlsx", "epub", "rst", "adoc",
                              "ipynb", "code", "ocr")  # fmt: skip
#: The generation of each format's parser. RAISE A FORMAT'S NUMBER WHENEVER A CHANGE TO ITS
#: PARSER (or to chunking) CHANGES WHAT IT MAKES OF A FILE (text, headings, line ranges,
#: what is embedded): the next index run reads that format's documents again, so an
#: upgraded kb-mcp never serves an older parser's conversion (decision 0032).
CONVERSION_VERSIONS: Mapping[str, int] = {
    "md": 2,  # 2: link-reference definitions and HTML comments kept out of the chunk text
    "txt": 6,  # 2: cut at its numbered, underlined and boxed titles (0056, sixth addendum);
    #       3: a trailing link mark (Sphinx's ¶) left out of a title;
    #       4: the rule above a title left out of the section before it (0056, eighth);
    #       5: a release notes file cut at the lines that open its releases (0056, lead s23);
    #       6: the same without outline stars past one and whole numbers (5 had them)
    "pdf": 2,  # 2: sections from the outline, a chunk's heading is the one it is under
    "html": 4,  # 2: main content, layout tables by cell, alt text, UTF-8 over a wrong label;
    #        3: a page that declares no charset and is not UTF-8 read as Windows-1252;
    #        4: lists of links (contents, indexes) read but not searched (decision 0062)
    "docx": 2,  # 2: notes, alt text, link targets, list numbers
    "pptx": 2,  # 2: charts, alt text, empty cells kept
    "xlsx": 2,  # 2: lone headers kept, hidden sheets marked, title rows
    "epub": 2,  # 2: read from the book's structure, not its rendered layout
    "rst": 1,
    "adoc": 1,
    "ipynb": 1,
    "code": 1,
    "ocr": 1,
}
#: With ``ocr`` enabled the PDF conversion reads pages without text: its generation is the
#: PDF's plus this times the OCR's, so turning OCR on or off reads the PDFs again.
OCR_PDF_STEP = 1000


class FormatRegistry:
    """Maps lower-case extensions (``md``, ``markdown``, ...) to the enabled parsers;
    ``close`` stops the worker pool, if it has one."""

    def __init__(self, parsers: Sequence[Parser], pool: WorkerPool | None = None,
                 versions: Mapping[str, int] | None = None) -> None:
        self._by_extension: Mapping[str, Parser] = {
            extension: parser for parser in parsers for extension in parser.extensions
        }
        self._versions: Mapping[str, int] = dict(versions or {})
        self.pool = pool

    def conversion_versions(self) -> Mapping[str, int]:
        """The parser generation of every enabled extension (``CONVERSION_VERSIONS``)."""
        return {extension: self._versions.get(extension, 1)
                for extension in self._by_extension}

    def extensions(self) -> frozenset[str]:
        return frozenset(self._by_extension)

    def parser_for(self, extension: str) -> Parser | None:
        return self._by_extension.get(extension.lower().lstrip("."))

    def supports(self, extension: str) -> bool:
        return extension.lower().lstrip(".") in READABLE_EXTENSIONS

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
    names = enabled_names(enabled)
    ocr = "ocr" in names
    converted = tuple(name for name in names if name in CONVERTED)
    pool = WorkerPool(converted, limits, isolation) if isolation and converted else None
    parsers: list[Parser] = []
    versions: dict[str, int] = {}
    for name in names:
        if name == "md":
            parsers.append(MarkdownParser())
        elif name == "txt":
            parsers.append(TextParser())
        elif pool is not None:
            parsers.append(IsolatedParser(name, convertible(name, limits, ocr), pool))
        else:
            parsers.append(convertible(name, limits, ocr))
        version = CONVERSION_VERSIONS[name]
        if name == "pdf" and ocr:
            version += OCR_PDF_STEP * CONVERSION_VERSIONS["ocr"]
        versions.update(dict.fromkeys(parsers[-1].extensions, version))
    return FormatRegistry(parsers, pool, versions)
