"""Root-bound file access: every path is opened from the root's descriptor, one component
at a time, never following a link; every fact about a file comes from its own descriptor.

There is no "is this path inside the root" check to race against: a path is only ever
resolved by ``openat`` relative to a folder that was itself opened this way, starting from
the root opened once for the adapter's life. A folder swapped for a link between two reads
makes the open fail (``O_NOFOLLOW``), it never lands outside.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kbmcp_core.errors import NoSuchDocument, PathRefused
from kbmcp_core.models import MIB

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_ROOT_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC
_FOLDER_FLAGS = _ROOT_FLAGS | _NOFOLLOW
_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC

#: Why a path is refused, worded once for this adapter and the walk (``scanner``).
LINK_ON_THE_WAY = "a folder on the way is a symbolic link; links are never followed"
NO_SUCH_DOCUMENT = "no such document"
IS_A_LINK = "is a symbolic link; links are never followed"
NOT_A_REGULAR_FILE = "not a regular file (FIFO, socket or device)"
MORE_THAN_ONE_LINK = "has more than one hard link"
IS_A_FOLDER = "is a folder, not a document"

EntryKind = Literal["file", "folder", "link", "link_to_folder", "other"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One name in a folder, as ``lstat`` sees it (links are never followed)."""

    name: str
    kind: EntryKind
    nlink: int
    size: int
    #: (device, inode, size, modification and change times in ns), as ``OpenedFile.stamp``
    stamp: tuple[int, int, int, int, int] | None = None


class NoSuchPath(NoSuchDocument):
    """Nothing by that name (this adapter tells it apart from the other refusals)."""

    def __init__(self, rel_path: str) -> None:
        super().__init__(rel_path, NO_SUCH_DOCUMENT)


class LinkOnTheWay(NoSuchDocument):
    """A folder on the path is a symbolic link."""

    def __init__(self, rel_path: str) -> None:
        super().__init__(rel_path, LINK_ON_THE_WAY)


class OpenedFile:
    """A regular file with one link, open for reading. Size and bytes come from its fd;
    ``stamp`` is its fd's (device, inode, size, modification and change times in ns)."""

    def __init__(self, fd: int, rel_path: str, st: os.stat_result) -> None:
        self._fd = fd
        self._rel = rel_path
        self.size = st.st_size
        self.stamp = _stamp(st)

    def read(self, cap: int) -> bytes | None:
        """At most ``cap`` bytes; None when the file holds more (nothing is read when the
        descriptor's size already says so)."""
        if self.size > cap:
            return None
        try:
            os.set_blocking(self._fd, True)
            chunks: list[bytes] = []
            remaining = cap + 1
            while remaining > 0:  # the size fstat gave in one read, then any growth
                block = os.read(self._fd, min(remaining, self.size + 1 if not chunks else MIB))
                if not block:
                    break
                chunks.append(block)
                remaining -= len(block)
            data = b"".join(chunks)
            if len(data) > cap:  # it grew since the fstat
                self.size = max(os.fstat(self._fd).st_size, len(data))
                return None
            return data
        except OSError as exc:
            raise PathRefused(self._rel, f"cannot read ({exc.strerror})") from None


class LocalFileSystem:
    """The ``FileSystem`` port on the local disk, bound to ``root`` by construction."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._root_fd: int | None = None
        self._lock = threading.Lock()

    # -- the root --------------------------------------------------------------
    def _root(self) -> int:
        fd = self._root_fd
        if fd is not None:
            return fd
        with self._lock:
            if self._root_fd is None:
                try:
                    self._root_fd = os.open(self.root, _ROOT_FLAGS)
                except OSError as exc:
                    raise PathRefused(
                        "", f"the knowledge-base folder cannot be opened ({exc.strerror})"
                    ) from None
                # held for the adapter's life; released when the adapter is freed
                weakref.finalize(self, os.close, self._root_fd)
            return self._root_fd

    # -- walking a path --------------------------------------------------------
    @contextmanager
    def _folder(self, rel_path: str, parts: list[str]) -> Iterator[int]:
        """The descriptor of the folder ``parts`` names, each component opened relative to
        the one before it with O_NOFOLLOW|O_DIRECTORY."""
        root = self._root()
        fd = root
        try:
            for name in parts:
                try:
                    child = os.open(name, _FOLDER_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise _refusal_on_the_way(rel_path, name, fd, exc) from None
                if fd != root:
                    os.close(fd)
                fd = child
            yield fd
        finally:
            if fd != root:
                os.close(fd)

    @contextmanager
    def open_file(self, rel_path: str) -> Iterator[OpenedFile]:
        """Open a document under the root; refuses anything that is not a regular file with
        one link, reached without following a link. Every refusal is a ``PathRefused``;
        each that would tell a thing that exists from nothing (a link, a folder, a FIFO,
        a second hard link, a file it cannot open) is a ``NoSuchDocument``, whose client
        message is that of a missing name."""
        fd, st = self._open_document(rel_path)
        try:
            yield OpenedFile(fd, rel_path, st)
        finally:
            os.close(fd)

    def _open_document(self, rel_path: str) -> tuple[int, os.stat_result]:
        """The descriptor and its ``fstat``, once the descriptor says "document"."""
        parts = _parts(rel_path)
        try:
            with self._folder(rel_path, parts[:-1]) as parent:
                try:
                    fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=parent)
                except OSError as exc:
                    raise _refusal_at_the_end(rel_path, exc) from None
        except (ValueError, UnicodeError):  # NUL or a lone surrogate: no file has that name
            raise NoSuchPath(rel_path) from None
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise NoSuchDocument(rel_path, IS_A_FOLDER)
            if not stat.S_ISREG(st.st_mode):
                raise NoSuchDocument(rel_path, NOT_A_REGULAR_FILE)
            if st.st_nlink > 1:
                raise NoSuchDocument(rel_path, MORE_THAN_ONE_LINK)
        except OSError as exc:
            os.close(fd)
            raise PathRefused(rel_path, f"cannot read ({exc.strerror})") from None
        except PathRefused:
            os.close(fd)
            raise
        return fd, st

    def entries(self, rel_dir: str) -> list[Entry]:
        """The names in one folder (reached like any path), sorted, with what lstat says.
        Names that vanish while listed are left out. Raises ``PathRefused``."""
        parts = _parts(rel_dir) if rel_dir else []
        found: list[Entry] = []
        try:
            with self._folder(rel_dir, parts) as fd, os.scandir(fd) as it:
                for item in it:
                    try:
                        st = item.stat(follow_symlinks=False)
                    except OSError:
                        continue  # gone since the listing
                    kind = _kind(st.st_mode)
                    if kind == "link" and _points_to_folder(item):
                        kind = "link_to_folder"
                    found.append(Entry(item.name, kind, st.st_nlink, st.st_size, _stamp(st)))
        except OSError as exc:
            raise PathRefused(rel_dir or ".", f"cannot list ({exc.strerror})") from None
        except (ValueError, UnicodeError):
            raise NoSuchPath(rel_dir) from None
        return sorted(found, key=lambda e: e.name)

    def entry(self, rel_path: str) -> Entry | None:
        """What lstat says about one path, reached without following a link; None when it
        does not exist. A link on the way is a ``PathRefused``."""
        parts = _parts(rel_path)
        try:
            with self._folder(rel_path, parts[:-1]) as parent:
                st = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
                kind = _kind(st.st_mode)
                if kind == "link":
                    try:
                        if stat.S_ISDIR(os.stat(parts[-1], dir_fd=parent).st_mode):
                            kind = "link_to_folder"
                    except OSError:
                        pass
        except NoSuchPath:
            return None
        except (FileNotFoundError, NotADirectoryError, ValueError, UnicodeError):
            return None
        except OSError as exc:
            raise PathRefused(rel_path, f"cannot stat ({exc.strerror})") from None
        return Entry(parts[-1], kind, st.st_nlink, st.st_size, _stamp(st))


def _stamp(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _parts(rel_path: str) -> list[str]:
    parts = rel_path.split("/")
    if not rel_path or any(p in ("", ".", "..") for p in parts):
        raise PathRefused(rel_path, "not a path inside the knowledge base")
    return parts


def _points_to_folder(item: os.DirEntry[str]) -> bool:
    """Whether a link names a folder (only for the refusal's wording; a loop or a dangling
    link is just a link)."""
    try:
        return item.is_dir(follow_symlinks=True)
    except OSError:
        return False


def _kind(mode: int) -> EntryKind:
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISREG(mode):
        return "file"
    return "other"


def _refusal_on_the_way(rel_path: str, name: str, parent: int, exc: OSError) -> PathRefused:
    """Why a folder on the way could not be opened (the decision is already made: the
    open failed; this only finds the words)."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, getattr(errno, "EMLINK", -1)):
        try:
            if stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                return LinkOnTheWay(rel_path)
        except OSError:
            pass
        return NoSuchPath(rel_path)
    if exc.errno == errno.ENOENT:
        return NoSuchPath(rel_path)
    return NoSuchDocument(rel_path, f"a folder on the way cannot be opened ({exc.strerror})")


def _refusal_at_the_end(rel_path: str, exc: OSError) -> PathRefused:
    if exc.errno in (errno.ELOOP, getattr(errno, "EMLINK", -1)):
        return NoSuchDocument(rel_path, IS_A_LINK)
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return NoSuchPath(rel_path)
    if exc.errno == errno.ENXIO:  # a socket, or a device with nothing behind it
        return NoSuchDocument(rel_path, NOT_A_REGULAR_FILE)
    return NoSuchDocument(rel_path, f"cannot open ({exc.strerror})")
