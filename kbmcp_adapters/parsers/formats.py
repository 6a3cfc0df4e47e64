"""Which formats kb-mcp reads, by ``[parsers].enabled`` name and file extension, and the
enabled set checked: what a search asks of the parser registry, answered without
importing a parser (decision 0057, addendum of session 17).

``DeferredRegistry`` is the registry a knowledge base hands out: ``extensions`` comes from
the table here; the first question about a parser (``parser_for``, ``conversion_versions``)
builds the real one (``registry.build_registry``: the parsers, the worker pool), once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

from kbmcp_adapters.parsers.codelangs import CODE_EXTENSIONS, INSTALL_HINT, missing_grammars
from kbmcp_core.errors import ConfigError
from kbmcp_core.ports import Parser, ParserRegistry

__all__ = [
    "FORMAT_EXTENSIONS",
    "IMAGE_EXTENSIONS",
    "KNOWN_FORMATS",
    "READABLE_EXTENSIONS",
    "DeferredRegistry",
    "enabled_names",
]

#: The names accepted by ``[parsers].enabled``, in documentation order.
KNOWN_FORMATS: tuple[str, ...] = (
    "md", "txt", "pdf", "html", "docx", "pptx", "xlsx", "epub", "rst", "adoc", "ipynb", "code",
    "ocr",
)  # fmt: skip
#: The images read by OCR (the ``ocr`` format's extensions).
IMAGE_EXTENSIONS: tuple[str, ...] = ("png", "jpg", "jpeg", "tif", "tiff", "webp")
#: The file extensions of every format in ``KNOWN_FORMATS``, enabled or not (each parser's
#: ``extensions``; a test keeps the two in step): a file with one of them that is not
#: indexed is "format not enabled", any other "not a supported format".
FORMAT_EXTENSIONS: Mapping[str, tuple[str, ...]] = {
    "md": ("md", "markdown"), "txt": ("txt",), "pdf": ("pdf",), "html": ("html", "htm"),
    "docx": ("docx",), "pptx": ("pptx",), "xlsx": ("xlsx",), "epub": ("epub",),
    "rst": ("rst", "rest"), "adoc": ("adoc", "asciidoc"), "ipynb": ("ipynb",),
    "code": CODE_EXTENSIONS, "ocr": IMAGE_EXTENSIONS,
}  # fmt: skip
READABLE_EXTENSIONS: frozenset[str] = frozenset(
    extension for extensions in FORMAT_EXTENSIONS.values() for extension in extensions)


def enabled_names(enabled: Sequence[str]) -> list[str]:
    """``[parsers].enabled`` as known names, each once, in order; a ConfigError for an
    empty list, an unknown name, or a format whose extra is not installed."""
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
    if "code" in names and missing_grammars():
        raise ConfigError("[parsers].enabled: the code format needs tree-sitter and its "
                          f"grammars, which are not installed: {INSTALL_HINT}")
    if "ocr" in names:
        from kbmcp_adapters.parsers.ocrengine import missing_engine

        if (reason := missing_engine()) is not None:
            raise ConfigError(f"[parsers].enabled: {reason}")
    return names


class DeferredRegistry:
    """The parser registry of ``enabled``, built by ``build`` on the first question only
    the parsers can answer; which extensions are enabled is read from the table."""

    def __init__(self, enabled: Sequence[str], build: Callable[[], ParserRegistry]) -> None:
        names = enabled_names(enabled)  # the same ConfigError as the built registry's
        self._extensions = frozenset(e for name in names for e in FORMAT_EXTENSIONS[name])
        self._build = build
        self._built: ParserRegistry | None = None
        self._lock = threading.Lock()

    def _registry(self) -> ParserRegistry:
        with self._lock:
            if self._built is None:
                self._built = self._build()
            return self._built

    def extensions(self) -> frozenset[str]:
        return self._extensions

    def parser_for(self, extension: str) -> Parser | None:
        return self._registry().parser_for(extension)

    def supports(self, extension: str) -> bool:
        return extension.lower().lstrip(".") in READABLE_EXTENSIONS

    def conversion_versions(self) -> Mapping[str, int]:
        return self._registry().conversion_versions()
