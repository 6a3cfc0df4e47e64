"""Checks a ZIP-based document (Office, EPUB) before any library unpacks it.

Office files and EPUB books are ZIP archives. A hostile one can declare gigabytes of
content (a ZIP bomb) or hundreds of thousands of entries; an encrypted Office file is not a
ZIP at all but an OLE container. Each of these is refused here, from the archive's central
directory, with one line a user can act on. Then every entry is inflated once in bounded
steps and must give exactly its declared size and checksum: an entry that lies about its
size (a small declaration over a stream that inflates to gigabytes) is refused too, since
the libraries read an entry whole.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any

from kbmcp_core.errors import ParseError
from kbmcp_core.models import MIB

__all__ = ["MAX_ENTRIES", "MAX_UNCOMPRESSED", "check_archive"]

#: Most uncompressed bytes the entries of one archive may declare, all together.
MAX_UNCOMPRESSED = 50 * MIB
#: Most entries one archive may hold.
MAX_ENTRIES = 10_000
#: The magic number of an OLE compound file: how an encrypted .docx/.pptx/.xlsx is stored.
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def check_archive(data: bytes) -> None:
    """Raise ``ParseError`` unless ``data`` is a plain ZIP within the limits."""
    if data.startswith(_OLE_MAGIC):
        raise ParseError("encrypted or legacy (pre-2007) Office file; not indexed")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, OSError):
        raise ParseError("not a readable ZIP archive (damaged or not this format)") from None
    if len(entries) > MAX_ENTRIES:
        raise ParseError(f"archive holds {len(entries):,} entries (limit {MAX_ENTRIES:,}); "
                         "refused as a possible ZIP bomb")
    if any(info.flag_bits & 0x1 for info in entries):
        raise ParseError("encrypted archive entries; not indexed")
    declared = sum(max(info.file_size, 0) for info in entries)
    if declared > MAX_UNCOMPRESSED:
        raise ParseError(f"archive expands to {declared / MIB:,.0f} MiB (limit "
                         f"{MAX_UNCOMPRESSED // MIB} MiB); refused as a possible ZIP bomb")
    for info in entries:
        _check_inflation(data, info)


_LOCAL_HEADER = struct.Struct("<4s5H3L2H")
_STEP = 1 << 20


def _check_inflation(data: bytes, info: zipfile.ZipInfo) -> None:
    """Inflate one entry in bounded steps and require exactly its declared size and
    checksum. A library's ``read()`` inflates an entry whole, so an entry whose declared
    size lies (a ZIP bomb in disguise) would otherwise expand without limit."""
    lie = ParseError(f"archive entry {info.filename[:80]!r} does not match its declared size "
                     "or checksum; refused as damaged or a disguised ZIP bomb")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise ParseError(f"archive entry {info.filename[:80]!r} uses compression method "
                         f"{info.compress_type}, which Office files and EPUB never use")
    header = data[info.header_offset : info.header_offset + _LOCAL_HEADER.size]
    if len(header) < _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
        raise lie
    name_length, extra_length = _LOCAL_HEADER.unpack(header)[-2:]
    start = info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
    raw = memoryview(data)[start : start + info.compress_size]
    if len(raw) < info.compress_size:
        raise lie
    if info.compress_type == zipfile.ZIP_STORED:
        size, crc, complete = len(raw), zlib.crc32(raw), True
    else:
        inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        size = crc = 0
        try:
            for chunk in _inflated(inflater, raw):
                size += len(chunk)
                if size > info.file_size:
                    raise lie
                crc = zlib.crc32(chunk, crc)
        except zlib.error:
            raise lie from None
        complete = inflater.eof
    if not complete or size != info.file_size or crc != info.CRC:
        raise lie


def _inflated(inflater: Any, raw: memoryview) -> Iterator[bytes]:
    """The inflated stream in pieces of at most ``_STEP`` bytes, input fed in slices."""
    for offset in range(0, len(raw), _STEP):
        pending: bytes | memoryview = raw[offset : offset + _STEP]
        while pending and not inflater.eof:
            yield inflater.decompress(pending, _STEP)
            pending = inflater.unconsumed_tail
    while not inflater.eof and (chunk := inflater.decompress(b"", _STEP)):
        yield chunk  # output still held after the last input
