"""The watcher's state on disk, so `kb-mcp status` in another process can report it."""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

STATUS_FILE = "watcher-status.json"
HEARTBEAT_S = 15.0


def write_status(index_dir: Path, status: dict[str, object]) -> None:
    """Atomically record the watcher's state for `kb-mcp status` in other processes."""
    record = {**status, "pid": os.getpid(),
              "heartbeat": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    tmp = index_dir / f".{STATUS_FILE}.{os.getpid()}"
    try:
        tmp.write_text(json.dumps(record, default=str), encoding="utf-8")
        os.replace(tmp, index_dir / STATUS_FILE)
    except OSError as exc:
        log.debug("could not write the watcher status: %s", exc)


def read_status(index_dir: Path) -> dict[str, Any] | None:
    """The last recorded watcher state, with ``alive`` false when its process is gone or
    its heartbeat is stale."""
    try:
        record: dict[str, Any] = json.loads((index_dir / STATUS_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    pid = int(record.get("pid") or 0)
    try:
        os.kill(pid, 0)
        running = pid > 0
    except (OSError, ProcessLookupError):
        running = False
    try:
        beat = datetime.strptime(str(record.get("heartbeat")), "%Y-%m-%dT%H:%M:%SZ")
        fresh = (datetime.now(UTC).replace(tzinfo=None) - beat).total_seconds() < 3 * HEARTBEAT_S
    except ValueError:
        fresh = False
    record["alive"] = bool(record.get("alive")) and running and fresh
    return record
