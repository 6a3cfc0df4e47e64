"""One writer at a time across processes: an ``flock`` on a file in the index directory.

The kernel releases an ``flock`` when its holder dies, however it dies, so a lock left by a
SIGKILLed writer never blocks the next one: there is no stale state to clean up. The file
also carries the holder's pid and start time, for the message a waiting writer gives up with.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from kbmcp_core.errors import WriterBusy

LOCK_NAME = "writer.lock"
_POLL_S = 0.1


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        info = json.loads(os.read(fd, 4096).decode("utf-8") or "{}")
        return f"pid {info.get('pid', '?')}, writing since {info.get('since', '?')}"
    except (OSError, ValueError):
        return "another process"


@contextlib.contextmanager
def writer_lock(index_dir: Path, timeout_s: float, purpose: str = "index") -> Iterator[None]:
    """Hold the index's writer lock; wait at most ``timeout_s``, then raise WriterBusy."""
    index_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(index_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                 0o644)
    try:
        deadline = time.monotonic() + max(timeout_s, 0.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WriterBusy(
                        f"another writer holds the index lock ({_holder(fd)}); waited "
                        f"{timeout_s:g}s. Try again when it finishes."
                    ) from None
                time.sleep(_POLL_S)
        since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "since": since,
                                  "purpose": purpose}).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
