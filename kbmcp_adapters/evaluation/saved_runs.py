"""Saved `kb-mcp eval` runs: `<index_dir>/evals/NAME.json`, written once, read to compare."""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbmcp_core.errors import ConfigError
from kbmcp_core.evaluation import RunMetrics

#: A run name is a plain file stem: no separators, no surprises.
NAME_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")
FORMAT_VERSION = 1


def valid_name(name: str) -> bool:
    return NAME_RE.fullmatch(name) is not None


def run_path(index_dir: Path, name: str) -> Path:
    if not valid_name(name):
        raise ConfigError(f"bad eval run name {name!r}: use 1-64 of A-Z a-z 0-9 . _ -")
    return index_dir / "evals" / f"{name}.json"


@dataclass(frozen=True, slots=True)
class SavedRun:
    name: str
    date: str
    model: str
    golden_path: str
    golden_sha256: str
    queries: int
    limit: int
    metrics: RunMetrics

    def as_dict(self) -> dict[str, object]:
        return {"format": FORMAT_VERSION, "name": self.name, "date": self.date,
                "model": self.model,
                "golden": {"path": self.golden_path, "sha256": self.golden_sha256},
                "queries": self.queries, "limit": self.limit, "modes": self.metrics}


def saved_names(index_dir: Path) -> list[str]:
    folder = index_dir / "evals"
    try:
        return sorted(p.stem for p in folder.glob("*.json") if valid_name(p.stem))
    except OSError:
        return []


def load_run(index_dir: Path, name: str) -> SavedRun:
    """The saved run ``name``; a missing or unreadable one is a ConfigError (exit 2)."""
    path = run_path(index_dir, name)
    try:
        with path.open("rb") as f:
            raw: Any = json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        known = ", ".join(saved_names(index_dir)) or "none"
        raise ConfigError(f"no saved eval run {name!r} in {path.parent} (saved: {known}); "
                          f"save one with `kb-mcp eval --save {name}`") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"cannot read saved eval run {path}: {exc}") from None
    try:
        golden = raw["golden"]
        run = SavedRun(name=name, date=str(raw["date"]), model=str(raw["model"]),
                       golden_path=str(golden["path"]), golden_sha256=str(golden["sha256"]),
                       queries=int(raw["queries"]), limit=int(raw.get("limit", 0)),
                       metrics=raw["modes"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"saved eval run {path} is malformed ({exc!r})") from None
    if not isinstance(run.metrics, dict):
        raise ConfigError(f"saved eval run {path} is malformed ('modes' is not a mapping)")
    return run


def refuse_existing(index_dir: Path, name: str) -> None:
    """Fail early (before a long run) when ``name`` is taken; save_run checks again."""
    path = run_path(index_dir, name)
    if path.exists():
        raise ConfigError(f"eval run {name!r} already exists ({path}); "
                          "pass --overwrite to replace it or pick another name")


def save_run(index_dir: Path, run: SavedRun, *, overwrite: bool) -> Path:
    """Write the run atomically; without ``overwrite`` an existing run is never replaced
    (the final step is a hard link, which fails if the name is taken)."""
    path = run_path(index_dir, run.name)
    data = (json.dumps(run.as_dict(), ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{run.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            if overwrite:
                os.replace(tmp, path)
            else:
                os.link(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    except FileExistsError:
        raise ConfigError(f"eval run {run.name!r} already exists ({path}); "
                          "pass --overwrite to replace it or pick another name") from None
    except OSError as exc:
        raise ConfigError(f"cannot save eval run to {path}: {exc}") from None
    return path
