"""Which paths a live-sync batch must look at: pure functions over the events' paths."""

from __future__ import annotations

import bisect
import os
import stat
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

from kbmcp_core.models import extension_of
from kbmcp_core.ports import ExclusionPolicy


def relative_path(root: str, absolute: str) -> str | None:
    """``absolute`` as a POSIX path relative to ``root``; None for the root or outside it."""
    rel = os.path.relpath(os.path.normpath(absolute), root)
    if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return rel.replace(os.sep, "/")


def select_paths(
    root: Path,
    changed: Iterable[str],
    indexed: Sequence[str],
    rules: ExclusionPolicy,
    extensions: Collection[str],
) -> list[str]:
    """The paths a targeted run must look at, from the paths events named.

    A path is kept when something is indexed at or under it (the run then updates or
    removes it, also when the rules now exclude it), or when the walk would look at it:
    a directory the rules do not exclude, or a file with an enabled extension they do not
    exclude. A new second hard link also brings in the indexed names of the same file,
    which the walk now refuses too. ``indexed`` must be sorted.
    """
    chosen: set[str] = set()
    linked: set[tuple[int, int]] = set()
    for rel in changed:
        if _has_indexed(indexed, rel):
            chosen.add(rel)
            continue
        try:
            st = os.lstat(root / rel)
        except OSError:
            continue  # gone, and nothing of it was indexed
        if stat.S_ISDIR(st.st_mode):
            if not rules.is_excluded(rel, is_dir=True):
                chosen.add(rel)
        elif not rules.is_excluded(rel) and extension_of(rel) in extensions:
            chosen.add(rel)
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                linked.add((st.st_dev, st.st_ino))
    if linked:
        chosen.update(_same_file(root, indexed, linked))
    return _outermost(chosen)


def _has_indexed(indexed: Sequence[str], rel: str) -> bool:
    i = bisect.bisect_left(indexed, rel)
    if i < len(indexed) and indexed[i] == rel:
        return True
    j = bisect.bisect_left(indexed, rel + "/")
    return j < len(indexed) and indexed[j].startswith(rel + "/")


def _same_file(root: Path, indexed: Iterable[str], inodes: set[tuple[int, int]]) -> set[str]:
    found: set[str] = set()
    for path in indexed:
        try:
            st = os.lstat(root / path)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in inodes:
            found.add(path)
    return found


def _outermost(paths: set[str]) -> list[str]:
    """Drop paths under another one in the set: a folder target covers what it holds."""
    kept = []
    for path in sorted(paths):
        parts = path.split("/")
        if not any("/".join(parts[:i]) in paths for i in range(1, len(parts))):
            kept.append(path)
    return kept


__all__ = ["relative_path", "select_paths"]
