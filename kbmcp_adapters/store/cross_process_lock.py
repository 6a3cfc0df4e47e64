"""The cross-process writer lock: an ``flock`` on a file in the index directory.

One writer at a time across processes; within a process, writers first queue on
``kbmcp_adapters.app.in_process_lock``.

With a PostgreSQL store (``store_url``), the lock is a PostgreSQL session advisory lock
instead (``kbmcp_adapters.store.advisory_lock``), so writers on different hosts exclude each
other; the file lock below is what a SQLite index uses.

The kernel releases an ``flock`` when its holder dies, however it dies, so a lock left by a
SIGKILLed writer never blocks the next one: there is no stale state to clean up. The file
also carries the holder's pid and start time, for the message a waiting writer gives up with.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from kbmcp_adapters.store.advisory_lock import advisory_lock, is_postgresql_url
from kbmcp_core.errors import IndexReadOnly, IndexUnwritable, WriterBusy
from kbmcp_core.settings import WRITER_LOCK_NAME
from kbmcp_core.store_location import StoreLocation

LOCK_NAME = WRITER_LOCK_NAME
#: What a folder the user may read but not write answers (EROFS: a read-only mount).
_READ_ONLY_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
#: What a full disk answers (EDQUOT: the user's quota).
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_POLL_S = 0.1


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        info = json.loads(os.read(fd, 4096).decode("utf-8") or "{}")
        return f"pid {info.get('pid', '?')}, writing since {info.get('since', '?')}"
    except (OSError, ValueError):
        return "another process"


def _unwritable(index_dir: Path, exc: OSError) -> IndexUnwritable:
    """A write in the index folder failed before the run changed anything: one sentence."""
    why = exc.strerror or str(exc)
    if exc.errno in _FULL_ERRNOS:
        return IndexUnwritable(str(index_dir), why, "free some space on that disk and run "
                               "again; nothing in the index was changed")
    return IndexUnwritable(str(index_dir), why, "nothing in the index was changed; run again "
                           "once the folder can be written")


@contextlib.contextmanager
def writer_lock(index_dir: Path, timeout_s: float, purpose: str = "index", *,
                deadline: float | None = None,
                check: Callable[[], None] | None = None,
                store_url: str | StoreLocation | None = None) -> Iterator[None]:
    """Hold the index's writer lock; wait at most ``timeout_s``, then raise WriterBusy.

    ``deadline`` (a ``time.monotonic()`` value) ends the wait instead, for a caller that
    already spent part of its timeout waiting elsewhere; ``check`` is called while
    waiting and may raise to give up early (a shutdown).

    ``IndexReadOnly`` when the index folder cannot be created or the lock file cannot be
    opened for writing: a writer stops there, before it touches the store.

    When ``store_url`` (a URL, or the location parsed from one) names a PostgreSQL
    database the lock is that database's advisory lock, with the same deadline and
    ``check``, and the index folder is not touched.
    """
    if isinstance(store_url, StoreLocation):
        store_url = store_url.url if store_url.is_postgresql else None
    if store_url is not None and is_postgresql_url(store_url):
        with advisory_lock(store_url, timeout_s, purpose, deadline=deadline, check=check):
            yield
        return
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if exc.errno not in _READ_ONLY_ERRNOS:
            raise _unwritable(index_dir, exc) from None
        raise IndexReadOnly(str(index_dir), f"cannot create the folder: {exc.strerror}",
                            IndexReadOnly.NO_FOLDER) from None
    try:
        fd = os.open(index_dir / LOCK_NAME,
                     os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        if exc.errno not in _READ_ONLY_ERRNOS:
            raise _unwritable(index_dir, exc) from None
        raise IndexReadOnly(str(index_dir), f"cannot open {LOCK_NAME}: {exc.strerror}") from None
    try:
        if deadline is None:
            deadline = time.monotonic() + max(timeout_s, 0.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if check is not None:
                    check()
                if time.monotonic() >= deadline:
                    raise WriterBusy(
                        f"another writer holds the index lock ({_holder(fd)}); waited "
                        f"{timeout_s:g}s. Try again when it finishes."
                    ) from None
                time.sleep(max(0.0, min(_POLL_S, deadline - time.monotonic())))
        since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps({"pid": os.getpid(), "since": since,
                                      "purpose": purpose}).encode(), 0)
        except OSError as exc:  # nothing written yet: the lock is given back untouched
            fcntl.flock(fd, fcntl.LOCK_UN)
            raise _unwritable(index_dir, exc) from None
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
