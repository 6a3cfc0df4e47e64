"""The walk's remembered content hashes: a file whose ``fstat`` is the one it had when it
was last hashed is not read again (decision 0058).

A whole-folder run hashes every file whose size equals its indexed size, so at 222,500
notes the walk read and hashed 933 MB to find 1 % changed. Here each hash the walk makes
is kept with the file's stamp (device, inode, size, modification and change times in
nanoseconds, from the descriptor the walk opened) in ``scan-hashes.bin`` (in the index's
state folder, ``app/index_state.py``), and a file with the same stamp has the same hash
without being read: any write moves its change time, which no tool sets back, and a
replaced file has another inode. As git does for its index, a hash is not kept for a file
changed within ``RACY_SECONDS`` of its reading (a write in the same clock tick could leave
the stamp unchanged); such a file is read again next time. A missing, unreadable or
damaged cache file is an empty cache; one that cannot be written is left as it was.

The file is binary (decision 0058's second addendum: the same facts as JSON were 40 MB
and 1.1 CPU s to read at 222,500 files): a header (``MAGIC``, the count and a BLAKE2b
digest of everything after the header), one fixed record per file (the five stamp
numbers and the 32 bytes of the sha256), then the paths, UTF-8, each ended by a NUL (no
path holds one). A file whose digest, length or count does not add up is not trusted.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import time
from pathlib import Path

__all__ = ["RACY_SECONDS", "HashCache", "Stamp"]

#: A file modified this recently when hashed is not remembered (its stamp may not move).
RACY_SECONDS = 2.0
#: The first bytes of the cache file; another format (or version) is an empty cache.
MAGIC = b"kb-mcp scan hashes 2\n"
#: After ``MAGIC``: the number of files, then the BLAKE2b digest of the rest of the file.
_HEADER = struct.Struct(f"<{len(MAGIC)}sQ32s")
#: The JSON file of the first format, removed by the first save of this one.
LEGACY_NAME = "scan-hashes.json"
#: One file: device, inode, size, modification and change times (ns), and its sha256.
_RECORD = struct.Struct("<QQqqq32s")

Stamp = tuple[int, int, int, int, int]


def stamp_of(st: os.stat_result) -> Stamp:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class HashCache:
    """Content hashes by path and stamp, loaded from and saved to ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._kept: dict[str, tuple[Stamp, str]] = {}
        self._seen: dict[str, tuple[Stamp, str]] = {}
        with contextlib.suppress(OSError, ValueError, struct.error):
            self._kept = _load(path.read_bytes())

    def hash_of(self, rel_path: str, stamp: Stamp) -> str | None:
        """The hash kept for ``rel_path`` when its stamp is ``stamp``, else None."""
        kept = self._kept.get(rel_path)
        if kept is None or kept[0] != stamp:
            return None
        self._seen[rel_path] = kept
        return kept[1]

    def keep(self, rel_path: str, stamp: Stamp, content_hash: str) -> None:
        """Remember a hash just made of the bytes read under ``stamp`` (not when racy)."""
        newest = max(stamp[3], stamp[4]) / 1e9
        if time.time() - newest >= RACY_SECONDS:
            self._seen[rel_path] = (stamp, content_hash)

    def save(self) -> None:
        """Keep what this walk saw (files gone since are forgotten), atomically."""
        if self._seen == self._kept:
            return
        part = self.path.with_name(self.path.name + ".part")
        with contextlib.suppress(OSError, ValueError, struct.error):
            data = _dump(self._seen)
            part.parent.mkdir(parents=True, exist_ok=True)
            part.write_bytes(data)
            os.replace(part, self.path)
            self.path.with_name(LEGACY_NAME).unlink(missing_ok=True)


def _dump(files: dict[str, tuple[Stamp, str]]) -> bytes:
    order = sorted(files)
    body = b"".join(_RECORD.pack(*files[p][0], bytes.fromhex(files[p][1])) for p in order)
    body += b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in order)
    return _HEADER.pack(MAGIC, len(order), hashlib.blake2b(body, digest_size=32).digest()) + body


def _load(data: bytes) -> dict[str, tuple[Stamp, str]]:
    """The kept hashes; ``ValueError`` when the bytes are not a whole cache file."""
    magic, count, digest = _HEADER.unpack_from(data)
    body = memoryview(data)[_HEADER.size:]
    if magic != MAGIC or hashlib.blake2b(body, digest_size=32).digest() != digest:
        raise ValueError("not a whole cache file")
    fixed = count * _RECORD.size
    paths = bytes(body[fixed:]).decode("utf-8", "surrogateescape").split("\0")
    if len(paths) != count + 1 or paths[-1]:
        raise ValueError("not a whole cache file")
    return {path: (record[:5], record[5].hex())
            for path, record in zip(paths, _RECORD.iter_unpack(body[:fixed]), strict=False)}
