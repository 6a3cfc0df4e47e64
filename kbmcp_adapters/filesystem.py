"""Link-refusing, handle-bound file access under the knowledge-base root."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from kbmcp_core.errors import PathRefused
from kbmcp_core.ports import FileFacts


class LocalFileSystem:
    """The ``FileSystem`` port on the local disk. Never follows a symlink."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._root_real = os.path.realpath(root)

    def _abs(self, rel_path: str) -> str:
        return os.path.join(self._root_real, *rel_path.split("/"))

    def lstat(self, rel_path: str) -> FileFacts | None:
        try:
            st = os.lstat(self._abs(rel_path))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise PathRefused(rel_path, f"cannot stat ({exc.strerror})") from None
        return FileFacts(
            is_symlink=stat.S_ISLNK(st.st_mode),
            is_regular=stat.S_ISREG(st.st_mode),
            nlink=st.st_nlink,
            size=st.st_size,
        )

    def is_contained(self, rel_path: str) -> bool:
        """Inside the root, and no component of the path is a symbolic link."""
        path = os.path.normpath(self._abs(rel_path))
        real = os.path.realpath(path)
        inside = real == self._root_real or real.startswith(self._root_real + os.sep)
        return inside and real == path

    def read_bounded(self, rel_path: str, cap: int) -> bytes:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self._abs(rel_path), flags)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathRefused(rel_path, "is a symbolic link") from None
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                raise PathRefused(rel_path, "no such document") from None
            raise PathRefused(rel_path, f"cannot open ({exc.strerror})") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise PathRefused(rel_path, "not a regular file")
            if st.st_nlink > 1:
                raise PathRefused(rel_path, "has more than one hard link")
            if st.st_size > cap:
                raise PathRefused(rel_path, f"larger than the {cap // (1024 * 1024)} MiB cap")
            os.set_blocking(fd, True)
            chunks: list[bytes] = []
            remaining = cap + 1
            while remaining > 0:
                block = os.read(fd, min(remaining, 1 << 20))
                if not block:
                    break
                chunks.append(block)
                remaining -= len(block)
            data = b"".join(chunks)
            if len(data) > cap:
                raise PathRefused(rel_path, f"larger than the {cap // (1024 * 1024)} MiB cap")
            return data
        except OSError as exc:
            raise PathRefused(rel_path, f"cannot read ({exc.strerror})") from None
        finally:
            os.close(fd)
