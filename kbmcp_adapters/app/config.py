"""Settings from ``kb-mcp.toml`` plus overrides: discovery, strict keys, validation."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kbmcp_adapters.store.urls import check_database_url
from kbmcp_core.errors import ConfigError
from kbmcp_core.settings import CONFIG_FILE_NAME, DEFAULT_EXCLUDE_DIRS, INDEX_DIR_NAME, Settings

#: TOML layout: section -> key -> (Settings field, expected type(s)).
_SCHEMA: dict[str, dict[str, tuple[str, tuple[type, ...]]]] = {
    "": {
        "kb_path": ("kb_path", (str,)),
        "index_dir": ("index_dir", (str,)),
        "database_url": ("database_url", (str,)),
    },
    "embedding": {
        "model": ("embedding_model", (str,)),
        "batch_size": ("embedding_batch_size", (int,)),
        "threads": ("embedding_threads", (int,)),
        "cache_dir": ("model_cache_dir", (str,)),
    },
    "parsers": {"enabled": ("enabled_formats", (list,))},
    "index": {
        "exclude_dirs": ("exclude_dirs", (list,)),
        "chunk_max_tokens": ("chunk_max_tokens", (int,)),
        "chunk_min_tokens": ("chunk_min_tokens", (int,)),
    },
    "search": {
        "default_limit": ("search_default_limit", (int,)),
        "max_limit": ("search_max_limit", (int,)),
        "chunks_per_document": ("search_chunks_per_document", (int,)),
    },
    "watch": {
        "enabled": ("watch", (bool,)),
        "debounce_ms": ("watch_debounce_ms", (int,)),
    },
    "lock": {"timeout_seconds": ("writer_lock_timeout_s", (int, float))},
}

_PATH_FIELDS = {"kb_path", "index_dir", "model_cache_dir"}
_TUPLE_FIELDS = {"enabled_formats", "exclude_dirs"}


def find_config(explicit: Path | None, cwd: Path | None = None) -> Path | None:
    """``--config`` when given (it must exist), else ``./kb-mcp.toml`` when present."""
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(f"config file not found: {explicit}")
        return explicit
    candidate = (cwd or Path.cwd()) / CONFIG_FILE_NAME
    return candidate if candidate.is_file() else None


def read_config(path: Path) -> dict[str, Any]:
    """Flatten a TOML file into Settings field names; unknown keys are errors."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML in {path}: {exc}") from None
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, dict) and key in _SCHEMA and key != "":
            for sub, subvalue in value.items():
                out.update(_field(path, key, sub, subvalue))
        else:
            out.update(_field(path, "", key, value))
    for name in _PATH_FIELDS & out.keys():
        p = Path(out[name]).expanduser()
        out[name] = p if p.is_absolute() else (path.parent / p)
    return out


def _field(path: Path, section: str, key: str, value: object) -> dict[str, Any]:
    spec = _SCHEMA.get(section, {}).get(key)
    dotted = f"{section}.{key}" if section else key
    if spec is None:
        known = sorted(f"{s}.{k}" if s else k for s, keys in _SCHEMA.items() for k in keys)
        raise ConfigError(f"unknown key {dotted!r} in {path}; known keys: {', '.join(known)}")
    name, types = spec
    if isinstance(value, bool) and bool not in types:
        raise ConfigError(f"{dotted} in {path} must be {types[0].__name__}, not a boolean")
    if not isinstance(value, types):
        raise ConfigError(f"{dotted} in {path} must be {types[0].__name__}")
    if isinstance(value, list):
        if not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{dotted} in {path} must be a list of strings")
        return {name: tuple(value)}
    return {name: value}


def build_settings(
    config_file: Path | None = None,
    *,
    cwd: Path | None = None,
    **overrides: Any,
) -> Settings:
    """Defaults, then the config file, then explicit overrides (CLI flags win)."""
    values: dict[str, Any] = {}
    found = find_config(config_file, cwd)
    if found is not None:
        values.update(read_config(found))
    values.update({k: v for k, v in overrides.items() if v is not None})
    unknown = set(values) - set(Settings.__dataclass_fields__)
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    if "kb_path" not in values:
        raise ConfigError("no knowledge base given: pass --kb-path or set kb_path in kb-mcp.toml")
    kb_path = Path(values.pop("kb_path")).expanduser()
    if not kb_path.is_dir():
        raise ConfigError(f"kb_path is not a directory: {kb_path}")
    kb_path = kb_path.resolve()
    index_dir = Path(values.pop("index_dir", INDEX_DIR_NAME)).expanduser()
    if not index_dir.is_absolute():
        index_dir = kb_path / index_dir
    for name in _TUPLE_FIELDS & values.keys():
        values[name] = tuple(values[name])
    values.setdefault("exclude_dirs", DEFAULT_EXCLUDE_DIRS)
    _validate_numbers(values)
    if values.get("database_url") is not None:
        check_database_url(values["database_url"])
    return Settings(kb_path=kb_path, index_dir=index_dir, **values)


def _validate_numbers(values: Mapping[str, Any]) -> None:
    positive = (
        "embedding_batch_size",
        "search_default_limit",
        "search_max_limit",
        "search_chunks_per_document",
        "chunk_min_tokens",
    )
    for name in positive:
        if name in values and int(values[name]) < 1:
            raise ConfigError(f"{name} must be at least 1")
    if values.get("chunk_max_tokens") is not None and int(values["chunk_max_tokens"]) < 32:
        raise ConfigError("index.chunk_max_tokens must be at least 32")
