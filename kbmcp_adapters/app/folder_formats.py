"""Which formats a folder holds: what `kb-mcp init` enables in the config it writes
(decision 0025), and which of them need an extra installed first (decision 0048).

The ``ocr`` count is the images plus the PDFs with a page that has no text but an image
(a scan): the first ``_PDFS_LOOKED_AT`` PDFs of at most ``_PDF_BYTES`` are opened, and
at most ``_PAGES_LOOKED_AT`` pages of each looked at (decision 0053)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from kbmcp_adapters.filesystem.exclusion import holds_index
from kbmcp_adapters.parsers.codelangs import INSTALL_HINT, missing_grammars
from kbmcp_adapters.parsers.formats import FORMAT_EXTENSIONS, KNOWN_FORMATS
from kbmcp_adapters.parsers.ocr import INSTALL_HINT as OCR_HINT
from kbmcp_core.models import extension_of
from kbmcp_core.settings import DEFAULT_EXCLUDE_DIRS

__all__ = ["formats_in", "formats_of", "missing_extras"]

#: At most this many entries are looked at to choose the formats (a huge tree: the rest
#: keep the defaults' choice; the user edits the list).
_LOOK_AT = 100_000
_PDFS_LOOKED_AT = 200
_PDF_BYTES = 50 * 1024 * 1024
_PAGES_LOOKED_AT = 50


def formats_in(kb: Path) -> dict[str, int]:
    """How many files of each format kb-mcp reads lie in ``kb`` (dot folders and the
    default excluded folder names and kb-mcp index folders left out; links not followed),
    in the documentation order of the formats; Markdown always listed."""
    format_of = _format_of()
    skip = set(DEFAULT_EXCLUDE_DIRS)
    counts: dict[str, int] = {}
    pdfs: list[Path] = []
    seen = 0
    for top, dirs, files in os.walk(kb, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in skip
                   and not holds_index(Path(top, d))]
        for name in files:
            fmt = format_of.get(extension_of(name))  # README, NEWS, ...: txt
            if fmt is not None and not name.startswith("."):
                counts[fmt] = counts.get(fmt, 0) + 1
                if fmt == "pdf" and len(pdfs) < _PDFS_LOOKED_AT:
                    pdfs.append(Path(top, name))
        seen += len(files) + len(dirs)
        if seen > _LOOK_AT:
            break
    scans = sum(1 for pdf in pdfs if is_scanned(pdf))
    if scans:
        counts["ocr"] = counts.get("ocr", 0) + scans
    counts.setdefault("md", 0)
    return {name: counts[name] for name in KNOWN_FORMATS if name in counts}


def is_scanned(pdf: Path) -> bool:
    """Whether ``pdf`` has a page without text that holds an image (among its first
    pages); a PDF that cannot be read, or is too large to look at, is not."""
    from kbmcp_adapters.parsers.mupdf import pymupdf

    try:
        if pdf.stat().st_size > _PDF_BYTES:
            return False
        with pymupdf.open(pdf) as doc:
            if doc.needs_pass:
                return False
            for number, page in enumerate(doc):
                if number >= _PAGES_LOOKED_AT:
                    return False
                if not page.get_text("text").strip() and page.get_images(full=False):
                    return True
    except Exception:  # noqa: BLE001  (a damaged PDF: the index run names its reason)
        return False
    finally:
        pymupdf.TOOLS.reset_mupdf_warnings()
    return False


def formats_of(paths: Iterable[str]) -> dict[str, int]:
    """How many of ``paths`` each format kb-mcp reads would take (the files an index run
    skipped as "format not enabled"), most first; a path no format reads is not counted."""
    format_of = _format_of()
    counts: dict[str, int] = {}
    for path in paths:
        fmt = format_of.get(extension_of(path))
        if fmt is not None:
            counts[fmt] = counts.get(fmt, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _format_of() -> dict[str, str]:
    """Extension (as ``extension_of`` gives it) -> the format that reads it."""
    return {ext: name for name, exts in FORMAT_EXTENSIONS.items() for ext in exts}


def missing_extras(found: Mapping[str, int]) -> dict[str, str]:
    """The formats of ``found`` that cannot be enabled yet, each with the command that
    installs what it needs (``code``: tree-sitter and its grammars; ``ocr``: RapidOCR)."""
    from kbmcp_adapters.parsers.ocrengine import missing_engine

    lacking: dict[str, str] = {}
    if found.get("code") and missing_grammars():
        lacking["code"] = INSTALL_HINT
    if found.get("ocr") and missing_engine() is not None:
        lacking["ocr"] = OCR_HINT
    return lacking
