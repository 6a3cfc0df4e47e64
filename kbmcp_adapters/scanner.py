"""The walk: every indexable regular file under the root, hashed, never following links."""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from collections.abc import Collection
from pathlib import Path

from kbmcp_core.errors import PathRefused
from kbmcp_core.models import INDEX_CAP_BYTES, DiskFile, DiskScan, Refusal, extension_of
from kbmcp_core.ports import ExclusionPolicy, FileSystem

log = logging.getLogger(__name__)


def classify(
    fs: FileSystem,
    rel_path: str,
    extensions: Collection[str],
    rules: ExclusionPolicy,
) -> DiskFile | Refusal | None:
    """Decide what one path is for indexing: a file to index, a refusal, or not ours.

    The full walk and the watcher both call this, so they can never disagree.
    """
    if rules.is_excluded(rel_path) or extension_of(rel_path) not in extensions:
        return None
    try:
        facts = fs.lstat(rel_path)
    except PathRefused as exc:
        return Refusal(rel_path, exc.reason, "failed")
    if facts is None:
        return None
    if facts.is_symlink:
        return Refusal(rel_path, "is a symbolic link; links are never followed", "absent")
    if not facts.is_regular:
        return Refusal(rel_path, "not a regular file (FIFO, socket or device)", "absent")
    if facts.nlink > 1:
        return Refusal(rel_path, "has more than one hard link", "absent")
    if facts.size > INDEX_CAP_BYTES:
        return DiskFile(rel_path, facts.size, None, oversize=True)
    try:
        data = fs.read_bounded(rel_path, INDEX_CAP_BYTES)
    except PathRefused as exc:
        return Refusal(rel_path, exc.reason, "failed")
    return DiskFile(rel_path, len(data), hashlib.sha256(data).hexdigest())


class DiskScanner:
    """Walks ``root`` with ``os.scandir``; symlinked directories are refused, not entered."""

    def __init__(
        self,
        root: Path,
        fs: FileSystem,
        rules: ExclusionPolicy,
        extensions: Collection[str],
    ) -> None:
        self.root = root
        self.fs = fs
        self.rules = rules
        self.extensions = frozenset(extensions)

    def scan(self) -> DiskScan:
        return self._walk([""])

    def scan_paths(self, paths: Collection[str]) -> DiskScan:
        """The watcher's entry: each path is classified exactly as the walk would; a
        folder is walked with the walk's own code."""
        files: dict[str, DiskFile] = {}
        refused: list[Refusal] = []
        folders: list[str] = []
        for rel in sorted(set(paths)):
            try:
                mode = os.lstat(self.root / rel).st_mode
            except OSError:
                continue
            self._visit(rel, mode, files, refused, folders)
        return self._walk(folders, files, refused)

    def _walk(
        self,
        roots: list[str],
        files: dict[str, DiskFile] | None = None,
        refused: list[Refusal] | None = None,
    ) -> DiskScan:
        files = {} if files is None else files
        refused = [] if refused is None else refused
        stack = list(roots)
        while stack:
            rel_dir = stack.pop()
            try:
                with os.scandir(self.root / rel_dir if rel_dir else self.root) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as exc:
                refused.append(Refusal(rel_dir or ".", f"cannot list ({exc.strerror})"))
                continue
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    continue
                self._visit(rel, mode, files, refused, stack)
        return DiskScan(files=files, refused=tuple(refused))

    def _visit(
        self,
        rel: str,
        mode: int,
        files: dict[str, DiskFile],
        refused: list[Refusal],
        folders: list[str],
    ) -> None:
        """One path of the walk: a folder to enter, a link to refuse, or a file to classify."""
        if stat.S_ISDIR(mode):
            if not self.rules.is_excluded(rel, is_dir=True):
                folders.append(rel)
            return
        if stat.S_ISLNK(mode) and self._points_to_dir(rel):
            if not self.rules.is_excluded(rel, is_dir=True):
                refused.append(
                    Refusal(rel, "is a symbolic link to a directory; not followed", "absent")
                )
            return
        outcome = classify(self.fs, rel, self.extensions, self.rules)
        if isinstance(outcome, DiskFile):
            files[rel] = outcome
        elif isinstance(outcome, Refusal):
            refused.append(outcome)

    def _points_to_dir(self, rel: str) -> bool:
        try:
            return (self.root / rel).is_dir()
        except OSError:
            return False
