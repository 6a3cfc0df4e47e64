"""The user's own small JSON files in ``$XDG_CONFIG_HOME/kb-mcp`` (the trust list, the
record of knowledge bases that have had tokens): read only when the user's alone to write,
changed one at a time under a lock, replaced atomically with mode 0600."""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kbmcp_core.errors import ConfigError

#: A file of this kind larger than this is not one.
MAX_BYTES = 1024 * 1024


def read_private(path: Path, what: str, remedy: str) -> Any:
    """The JSON in ``path`` (None when there is none), read through one descriptor that
    follows no link; ``ConfigError`` when it is not a regular file of the user's that
    nobody else can write, or not JSON. ``what`` names the file, ``remedy`` ends the error."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW
                     | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{what} {path} is not a regular file")
        if info.st_uid != os.geteuid() or info.st_mode & 0o022:
            raise ConfigError(f"{what} {path} is not yours alone to write: {remedy}")
        raw = handle.read(MAX_BYTES + 1)
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"{what} {path} is damaged ({exc}): {remedy}") from None


@contextlib.contextmanager
def changing(path: Path, what: str) -> Iterator[None]:
    """One change of ``path`` at a time (two commands at once both count): an exclusive
    lock on a hidden file beside it; its folder is made (0700) when missing."""
    import fcntl

    folder = path.parent
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(folder / f".{path.stem}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW
                     | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as exc:
        raise ConfigError(f"cannot write {what} in {folder}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def write_private(path: Path, what: str, data: object) -> None:
    """Replace ``path`` with ``data`` as JSON atomically (``write_text_private``)."""
    write_text_private(path, what, json.dumps(data, indent=2) + "\n")


def write_text_private(path: Path, what: str, text: str) -> None:
    """Replace ``path`` with ``text`` atomically: a 0600 temporary file beside it,
    synced, renamed."""
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".tmp")
    except OSError as exc:
        raise ConfigError(f"cannot write {what} {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise ConfigError(f"cannot write {what} {path}: {exc.strerror}") from None
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


__all__ = ["MAX_BYTES", "changing", "read_private", "write_private", "write_text_private"]
