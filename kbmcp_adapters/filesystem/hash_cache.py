"""The walk's remembered content hashes: a file whose ``fstat`` is the one it had when it
was last hashed is not read again (decision 0058).

A whole-folder run hashes every file whose size equals its indexed size, so at 222,500
notes the walk read and hashed 933 MB to find 1 % changed. Here each hash the walk makes
is kept with the file's stamp (device, inode, size, modification and change times in
nanoseconds, from the descriptor the walk opened) in ``scan-hashes.json`` (in the index's
state folder, ``app/index_state.py``), and a file with the same stamp has the same hash
without being read: any write moves its change time, which no tool sets back, and a
replaced file has another inode. As git does for its index, a hash is not kept for a file
changed within ``RACY_SECONDS`` of its reading (a write in the same clock tick could leave
the stamp unchanged); such a file is read again next time. A missing or unreadable cache
file is an empty cache; one that cannot be written is left as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

__all__ = ["RACY_SECONDS", "HashCache", "Stamp"]

#: A file modified this recently when hashed is not remembered (its stamp may not move).
RACY_SECONDS = 2.0
#: Format of the cache file (another is an empty cache).
VERSION = 1

Stamp = tuple[int, int, int, int, int]


def stamp_of(st: os.stat_result) -> Stamp:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class HashCache:
    """Content hashes by path and stamp, loaded from and saved to ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._kept: dict[str, tuple[Stamp, str]] = {}
        self._seen: dict[str, tuple[Stamp, str]] = {}
        with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
            data = json.loads(path.read_text(encoding="utf-8"))
            if data["version"] == VERSION:
                self._kept = {p: (tuple(s), h) for p, (s, h) in data["files"].items()}

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
        body = {"version": VERSION,
                "files": {p: [list(s), h] for p, (s, h) in sorted(self._seen.items())}}
        with contextlib.suppress(OSError):
            part.parent.mkdir(parents=True, exist_ok=True)
            part.write_text(json.dumps(body, separators=(",", ":")), encoding="utf-8")
            os.replace(part, self.path)
