"""Settings from ``kb-mcp.toml`` plus overrides: discovery, strict keys, validation."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from kbmcp_adapters.store.urls import check_database_url
from kbmcp_core.errors import ConfigError, InvalidQuery
from kbmcp_core.fusion import DEFAULT_FUSION
from kbmcp_core.rerank import MAX_RERANK_CANDIDATES
from kbmcp_core.settings import (
    CONFIG_FILE_NAME,
    DEFAULT_EXCLUDE_DIRS,
    INDEX_DIR_NAME,
    Settings,
    StorageOptions,
)
from kbmcp_core.shaping import check_options

#: TOML layout: section -> key -> (Settings field, expected type(s)).
_SCHEMA: dict[str, dict[str, tuple[str, tuple[type, ...]]]] = {
    "": {
        "kb_path": ("kb_path", (str,)),
        "index_dir": ("index_dir", (str,)),
        "database_url": ("database_url", (str,)),
        "vectors_uri": ("vectors_uri", (str,)),
    },
    "vectors": {"storage_options": ("vectors_storage_options", (dict,))},
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
        "diversity": ("search_diversity", (int, float)),
        "context": ("search_context", (str,)),
        "context_chunks": ("search_context_chunks", (int,)),
        "rerank": ("search_rerank", (bool,)),
        "reranker": ("search_reranker", (str,)),
        "rerank_candidates": ("search_rerank_candidates", (int,)),
        "fusion": ("search_fusion", (str,)),
        "lexical_weight": ("search_lexical_weight", (int, float)),
        "lexical_weight_min": ("search_lexical_weight_min", (int, float)),
        "vector_scale": ("search_vector_scale", (str,)),
        "rrf_k": ("search_rrf_k", (int,)),
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
    if "vectors_uri" in out:
        out["vectors_uri"] = _vectors_uri(out["vectors_uri"], path.parent)
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
    if isinstance(value, dict):
        return {name: _options(path, dotted, value)}
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
    if values.get("vectors_uri") is not None:
        values["vectors_uri"] = _vectors_uri(str(values["vectors_uri"]), kb_path)
    if "vectors_storage_options" in values:
        values["vectors_storage_options"] = StorageOptions(
            _options(None, "vectors.storage_options", values["vectors_storage_options"]))
    return Settings(kb_path=kb_path, index_dir=index_dir, **values)


#: URI schemes LanceDB takes that are not a place to keep an index's vectors.
_REFUSED_SCHEMES = {
    "db": "LanceDB Cloud is not supported; use an object-store URI such as s3://bucket/prefix",
    "memory": "memory:// keeps nothing once the process ends",
}


def _vectors_uri(value: str, base: Path) -> str:
    """An object-store URI as given (checked), or a folder made absolute against
    ``base``; ``file://`` URIs become folders."""
    value = value.strip()
    if not value:
        raise ConfigError("vectors_uri is empty: leave it out to keep the vectors in the "
                          "index folder")
    if "://" not in value:
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else (base / p))
    parts = urlsplit(value)
    scheme = parts.scheme.lower()
    if scheme == "file":
        return str(Path(unquote(parts.path)))
    if scheme in _REFUSED_SCHEMES:
        raise ConfigError(f"vectors_uri: {_REFUSED_SCHEMES[scheme]}")
    if "@" in parts.netloc:
        raise ConfigError("vectors_uri must not carry credentials: put them in "
                          "[vectors.storage_options] or the environment (AWS_* and the like)")
    if not parts.netloc:
        raise ConfigError(f"vectors_uri {value!r} names no bucket or container")
    return value


def _options(path: Path | None, dotted: str, value: object) -> dict[str, str]:
    """Storage options: string keys; strings, booleans (``true``/``false``) and numbers."""
    where = f"{dotted} in {path}" if path is not None else dotted
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a table of options")
    out: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, bool):
            out[str(key)] = "true" if item else "false"
        elif isinstance(item, str | int | float):
            out[str(key)] = str(item)
        else:  # the value may be a secret: name the key only
            raise ConfigError(f"{where}: {key} must be a string, a number or a boolean")
    return out


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
    _validate_search_shape(values)
    _validate_fusion(values)
    candidates = values.get("search_rerank_candidates")
    if candidates is not None and not 1 <= int(candidates) <= MAX_RERANK_CANDIDATES:
        raise ConfigError(f"[search].rerank_candidates must be from 1 to "
                          f"{MAX_RERANK_CANDIDATES}, got {candidates}")
    if "search_reranker" in values:
        from kbmcp_adapters.embedding.cross_encoder import check_reranker_name

        try:
            check_reranker_name(str(values["search_reranker"]))
        except ConfigError as exc:
            raise ConfigError(f"[search].reranker: {exc}") from None


def _validate_fusion(values: Mapping[str, Any]) -> None:
    """[search].fusion, lexical_weight, lexical_weight_min, vector_scale and rrf_k."""
    keys = {"method": "search_fusion", "lexical_weight": "search_lexical_weight",
            "lexical_weight_min": "search_lexical_weight_min",
            "vector_scale": "search_vector_scale", "rrf_k": "search_rrf_k"}
    given = {k: values[name] for k, name in keys.items() if name in values}
    try:
        replace(DEFAULT_FUSION, **given)
    except ValueError as exc:
        raise ConfigError(f"[search].{exc}") from None


def _validate_search_shape(values: Mapping[str, Any]) -> None:
    """[search].diversity, context, context_chunks and rerank: the rules a call obeys."""
    try:
        check_options(values.get("search_diversity"), values.get("search_context"),
                      values.get("search_context_chunks"), values.get("search_rerank"))
    except InvalidQuery as exc:
        raise ConfigError(f"[search].{exc}") from None
