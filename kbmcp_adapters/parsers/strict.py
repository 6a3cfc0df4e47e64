"""Strict OOXML read as Transitional: the namespaces renamed, the archive otherwise kept.

ISO/IEC 29500 Strict (what Excel writes as "Strict Open XML Spreadsheet") differs from the
Transitional form the libraries read mostly by its namespace and relationship URIs
(``http://purl.oclc.org/ooxml/...`` instead of ``http://schemas.openxmlformats.org/...``).
The libraries find no sheet in a Strict package and report it empty, so its XML parts are
rewritten with the Transitional names before they are opened. The archive has passed the
ZIP guard, so the copy is bounded by its limits.
"""

from __future__ import annotations

import io
import zipfile

__all__ = ["is_strict", "transitional"]

_STRICT = b"http://purl.oclc.org/ooxml/"
#: Strict URI prefix -> Transitional, longest first where one is a prefix of another.
_RENAMES: tuple[tuple[bytes, bytes], ...] = (
    (b"http://purl.oclc.org/ooxml/officeDocument/relationships/extendedProperties",
     b"http://schemas.openxmlformats.org/officeDocument/2006/relationships/extended-properties"),
    (b"http://purl.oclc.org/ooxml/officeDocument/relationships",
     b"http://schemas.openxmlformats.org/officeDocument/2006/relationships"),
    (b"http://purl.oclc.org/ooxml/officeDocument/extendedProperties",
     b"http://schemas.openxmlformats.org/officeDocument/2006/extended-properties"),
    (b"http://purl.oclc.org/ooxml/officeDocument/sharedTypes",
     b"http://schemas.openxmlformats.org/officeDocument/2006/sharedTypes"),
    (b"http://purl.oclc.org/ooxml/spreadsheetml/main",
     b"http://schemas.openxmlformats.org/spreadsheetml/2006/main"),
    (b"http://purl.oclc.org/ooxml/wordprocessingml/main",
     b"http://schemas.openxmlformats.org/wordprocessingml/2006/main"),
    (b"http://purl.oclc.org/ooxml/presentationml/main",
     b"http://schemas.openxmlformats.org/presentationml/2006/main"),
    (b"http://purl.oclc.org/ooxml/drawingml/main",
     b"http://schemas.openxmlformats.org/drawingml/2006/main"),
    (b"http://purl.oclc.org/ooxml/drawingml/spreadsheetDrawing",
     b"http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing"),
    (b"http://purl.oclc.org/ooxml/drawingml/chart",
     b"http://schemas.openxmlformats.org/drawingml/2006/chart"),
)  # fmt: skip


def is_strict(data: bytes) -> bool:
    """True when the package's root relationships use the Strict names."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return _STRICT in archive.read("_rels/.rels")
    except (KeyError, zipfile.BadZipFile, OSError, ValueError, EOFError):
        return False


def transitional(data: bytes) -> bytes:
    """``data`` itself when it is not Strict, else a copy whose XML parts use the
    Transitional names."""
    if not is_strict(data):
        return data
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target,
    ):
        for info in source.infolist():
            body = source.read(info)
            if info.filename.endswith((".xml", ".rels")):
                for strict, transitional_name in _RENAMES:
                    body = body.replace(strict, transitional_name)
            target.writestr(info.filename, body)
    return out.getvalue()
