"""The walk: every indexable regular file under the root, hashed, never following links.

Folders are listed, and files hashed, through the file system's root-bound route (each
folder opened relative to its parent without following a link), so a folder swapped for
a link during the walk is refused, never entered. Every path the walk meets and does not
take is either refused with a warning or counted as skipped under its reason. An index
run says which files it needs hashed (``needs_hash``); the others are opened and checked
but not read, and the run's own read of them is their only one.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from kbmcp_adapters.filesystem.exclusion import INDEX_FOLDER
from kbmcp_adapters.filesystem.hash_cache import HashCache
from kbmcp_adapters.filesystem.local import (
    IS_A_LINK,
    MORE_THAN_ONE_LINK,
    NOT_A_REGULAR_FILE,
    Entry,
    LinkOnTheWay,
    LocalFileSystem,
    NoSuchPath,
    OpenedFile,
)
from kbmcp_core.errors import PathRefused
from kbmcp_core.models import (
    INDEX_CAP_BYTES,
    SKIP_BAD_NAME,
    SKIP_FORMAT,
    SKIP_HARD_LINK,
    SKIP_LINK,
    SKIP_SPECIAL,
    SKIP_UNREADABLE,
    SKIP_UNSUPPORTED,
    DiskFile,
    DiskScan,
    Refusal,
    extension_of,
)
from kbmcp_core.ports import ExclusionPolicy, FileSystem, HashNeeded
from kbmcp_core.settings import IGNORE_FILE_NAME

log = logging.getLogger(__name__)

BAD_NAME = "file name is not valid UTF-8; rename it"
BAD_FOLDER_NAME = "folder name is not valid UTF-8; rename it (its contents are not indexed)"


@dataclass(frozen=True, slots=True)
class Skip:
    """A path the walk quietly does not take; counted under ``reason``."""

    reason: str


def is_utf8(rel_path: str) -> bool:
    """False for a name holding bytes that are not UTF-8 (``os`` hands those over as lone
    surrogates): such a name can be neither stored nor shown to a client."""
    try:
        rel_path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(rel_path: str) -> str:
    """A printable form of any path: undecodable bytes as ``\\xff``."""
    if is_utf8(rel_path):
        return rel_path
    raw = rel_path.encode("utf-8", "surrogateescape")
    return raw.decode("utf-8", "backslashreplace")


def classify(
    fs: FileSystem,
    rel_path: str,
    entry: Entry,
    extensions: Collection[str],
    rules: ExclusionPolicy,
    needs_hash: HashNeeded | None = None,
    readable: Collection[str] = (),
    known: HashCache | None = None,
) -> DiskFile | Refusal | Skip | None:
    """Decide what one non-folder path is for indexing: a file to index, a refusal, a
    quiet skip, or None (kb-mcp's own file, or gone meanwhile).

    The full walk and the watcher both call this, so they can never disagree. ``entry``
    (what lstat said while walking) only sorts out links and special files; the bytes and
    the size come from one descriptor opened through the root-bound route, which checks
    all of that again. When ``needs_hash(path, size)`` says no, the file is not read: its
    ``content_hash`` is None and the index run reads and hashes it (once). A file whose
    extension is not enabled is "format not enabled" when kb-mcp could read it
    (``readable``: every format's extensions), else "not a supported format". With
    ``known`` (the walk's remembered hashes), a file whose descriptor has the stamp it had
    when last hashed is not read: its hash is the one kept (``hash_cache``); when the
    listing's own stamp (``entry.stamp``) is that one, the file is not even opened.
    """
    why = rules.reason(rel_path)
    if why == INDEX_FOLDER or rel_path == IGNORE_FILE_NAME:
        return None
    if why is not None:
        return Skip(why)
    extension = extension_of(rel_path)
    if extension not in extensions:
        return Skip(SKIP_FORMAT if extension in readable else SKIP_UNSUPPORTED)
    if not is_utf8(rel_path):
        return Refusal(shown(rel_path), BAD_NAME, "absent", SKIP_BAD_NAME)
    if entry.kind in ("link", "link_to_folder"):
        return Refusal(rel_path, IS_A_LINK, "absent", SKIP_LINK)
    if entry.kind != "file":
        return Refusal(rel_path, NOT_A_REGULAR_FILE, "absent", SKIP_SPECIAL)
    if entry.nlink > 1:
        return Refusal(rel_path, MORE_THAN_ONE_LINK, "absent", SKIP_HARD_LINK)
    if known is not None and entry.stamp is not None and entry.size <= INDEX_CAP_BYTES and (
            needs_hash is None or needs_hash(rel_path, entry.size)):
        # the listing (root-bound, links not followed) saw the very inode, size and times
        # the file had when last hashed: not opened again (decision 0058's addendum)
        kept = known.hash_of(rel_path, entry.stamp)
        if kept is not None:
            return DiskFile(rel_path, entry.size, kept)
    try:
        with fs.open_file(rel_path) as handle:
            size = handle.size
            if size <= INDEX_CAP_BYTES and needs_hash is not None \
                    and not needs_hash(rel_path, size):
                return DiskFile(rel_path, size, None)
            stamp = handle.stamp if known is not None and isinstance(handle, OpenedFile) \
                else None
            kept = None if stamp is None or known is None else known.hash_of(rel_path, stamp)
            if kept is not None:
                return DiskFile(rel_path, size, kept)
            data = handle.read(INDEX_CAP_BYTES)
            size = handle.size
    except NoSuchPath:
        return None
    except PathRefused as exc:  # changed since the listing, or unreadable: keep old rows
        return Refusal(rel_path, exc.detail, "failed", SKIP_UNREADABLE)
    if data is None:
        return DiskFile(rel_path, size, None, oversize=True)
    digest = hashlib.sha256(data).hexdigest()
    if stamp is not None and known is not None and len(data) == stamp[2]:
        known.keep(rel_path, stamp, digest)
    return DiskFile(rel_path, len(data), digest)


@dataclass
class _Found:
    files: dict[str, DiskFile] = field(default_factory=dict)
    refused: list[Refusal] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    #: the paths behind ``skipped`` (an excluded folder is one path: it is not entered)
    skipped_paths: dict[str, list[str]] = field(default_factory=dict)
    folders: list[str] = field(default_factory=list)
    #: which files to read and hash (None: all of them)
    needs_hash: HashNeeded | None = None
    #: the walk's remembered hashes (a whole walk only)
    known: HashCache | None = None

    def scan(self) -> DiskScan:
        return DiskScan(self.files, tuple(self.refused), dict(self.skipped),
                        {k: tuple(v) for k, v in self.skipped_paths.items()})


class DiskScanner:
    """Walks ``root`` through ``fs``; symlinked folders are refused, never entered."""

    def __init__(
        self,
        root: Path,
        fs: LocalFileSystem,
        rules: ExclusionPolicy,
        extensions: Collection[str],
        readable: Collection[str] = (),
        hashes: Path | None = None,
        remember: bool = True,
    ) -> None:
        """``hashes``: the file a whole walk reads its remembered hashes from
        (``hash_cache``), and keeps them in when it may write (``remember``)."""
        self.root = root
        self.fs = fs
        self.rules = rules
        self.extensions = frozenset(extensions)
        #: the extensions of every format kb-mcp reads, enabled or not
        self.readable = frozenset(readable) | self.extensions
        self.hashes = hashes
        self.remember = remember

    def scan(self, needs_hash: HashNeeded | None = None) -> DiskScan:
        known = None if self.hashes is None else HashCache(self.hashes)
        found = _Found(folders=[""], needs_hash=needs_hash, known=known)
        self._walk(found)
        if known is not None and self.remember:
            known.save()
        return found.scan()

    def scan_paths(self, paths: Collection[str], needs_hash: HashNeeded | None = None
                   ) -> DiskScan:
        """The watcher's entry: each path is classified exactly as the walk would; a
        folder is walked with the walk's own code."""
        found = _Found(needs_hash=needs_hash)
        for rel in sorted(set(paths)):
            parts = rel.split("/")
            if not rel or any(p in ("", ".", "..") for p in parts):
                continue
            parent = "/".join(parts[:-1])
            why = self.rules.reason(parent, is_dir=True) if parent else None
            if why is not None:
                self._skip(found, why, rel)
                continue
            try:
                entry = self.fs.entry(rel)
            except LinkOnTheWay as exc:
                found.refused.append(Refusal(shown(rel), exc.detail, "absent", SKIP_LINK))
                continue
            except PathRefused as exc:
                found.refused.append(Refusal(shown(rel), exc.detail, "failed"))
                continue
            if entry is not None:
                self._visit(rel, entry, found)
        self._walk(found)
        return found.scan()

    def _walk(self, found: _Found) -> None:
        while found.folders:
            rel_dir = found.folders.pop()
            try:
                entries = self.fs.entries(rel_dir)
            except NoSuchPath:
                continue
            except LinkOnTheWay as exc:
                found.refused.append(Refusal(rel_dir, exc.detail, "absent", SKIP_LINK))
                continue
            except PathRefused as exc:
                found.refused.append(Refusal(rel_dir or ".", exc.detail))
                continue
            for entry in entries:
                self._visit(f"{rel_dir}/{entry.name}" if rel_dir else entry.name, entry, found)

    def _visit(self, rel: str, entry: Entry, found: _Found) -> None:
        """One path of the walk: a folder to enter, a link to refuse, or a file to classify."""
        if entry.kind in ("folder", "link_to_folder"):
            why = self.rules.reason(rel, is_dir=True)
            if why is not None:
                self._skip(found, why, rel)
            elif entry.kind == "link_to_folder":
                found.refused.append(Refusal(
                    shown(rel), "is a symbolic link to a folder; not followed", "absent",
                    SKIP_LINK))
            elif not is_utf8(rel):
                found.refused.append(Refusal(shown(rel), BAD_FOLDER_NAME, "absent",
                                             SKIP_BAD_NAME))
            else:
                found.folders.append(rel)
            return
        outcome = classify(self.fs, rel, entry, self.extensions, self.rules, found.needs_hash,
                           self.readable, found.known)
        if isinstance(outcome, DiskFile):
            found.files[rel] = outcome
        elif isinstance(outcome, Refusal):
            found.refused.append(outcome)
        elif isinstance(outcome, Skip):
            self._skip(found, outcome.reason, rel)

    @staticmethod
    def _skip(found: _Found, reason: str, rel: str) -> None:
        if reason != INDEX_FOLDER:
            found.skipped[reason] += 1
            found.skipped_paths.setdefault(reason, []).append(shown(rel))
