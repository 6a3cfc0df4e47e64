"""Settings from ``kb-mcp.toml`` files plus overrides: layering, trust, strict keys,
validation (which files apply: ``config_files``)."""

from __future__ import annotations

import hashlib
import logging
import os
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from kbmcp_adapters.app import trust
from kbmcp_adapters.app.config_files import CONFIG_ENV, IN_WORKING_FOLDER, config_layers
from kbmcp_adapters.embedding.service_config import SERVICE_PROVIDER, check_service_values
from kbmcp_adapters.store.urls import check_database_url
from kbmcp_core.collections import CollectionSpec, parse_collections
from kbmcp_core.errors import ConfigError, InvalidQuery
from kbmcp_core.fields import Declared, declare
from kbmcp_core.fusion import DEFAULT_FUSION
from kbmcp_core.passages import MAX_PASSAGE_CANDIDATES
from kbmcp_core.rerank import MAX_RERANK_CANDIDATES
from kbmcp_core.search_request import check_options
from kbmcp_core.settings import (
    DEFAULT_EXCLUDE_DIRS,
    INDEX_DIR_NAME,
    INIT_HEADER,
    ConfigOrigin,
    Settings,
    StorageOptions,
)

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
        "provider": ("embedding_provider", (str,)),
        "base_url": ("embedding_base_url", (str,)),
        "query_model": ("embedding_query_model", (str,)),
        "document_model": ("embedding_document_model", (str,)),
        "query_prefix": ("embedding_query_prefix", (str,)),
        "document_prefix": ("embedding_document_prefix", (str,)),
        "dimension": ("embedding_dimension", (int,)),
        "max_input_chars": ("embedding_max_input_chars", (int,)),
        "timeout_s": ("embedding_timeout_s", (int, float)),
        "retries": ("embedding_retries", (int,)),
        "api_key_env": ("embedding_api_key_env", (str,)),
        "multilingual": ("embedding_multilingual", (bool,)),
    },
    "parsers": {
        "enabled": ("enabled_formats", (list,)),
        "max_output_chars": ("parsers_max_output_chars", (int,)),
        "max_elements": ("parsers_max_elements", (int,)),
        "timeout_seconds": ("parsers_timeout_seconds", (int, float)),
        "isolate": ("parsers_isolate", (bool,)),
        "workers": ("parsers_workers", (int,)),
        "memory_limit_mb": ("parsers_memory_limit_mb", (int,)),
    },
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
        "passage_candidates": ("search_passage_candidates", (int,)),
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
    "server": {"tokens_file": ("server_tokens_file", (str,)),
               "index_on_start": ("server_index_on_start", (bool,)),
               "trusted_proxies": ("server_trusted_proxies", (list,))},
    "oauth": {"issuers": ("oauth_issuers", (list,)),
              "audience": ("oauth_audience", (str,)),
              "jwks_uri": ("oauth_jwks_uri", (str,)),
              "read_scope": ("oauth_read_scope", (str,)),
              "rebuild_scope": ("oauth_rebuild_scope", (str,)),
              "jwks_cache_seconds": ("oauth_jwks_cache_seconds", (int, float)),
              "clock_skew_seconds": ("oauth_clock_skew_seconds", (int, float))},
}

_PATH_FIELDS = {"kb_path", "index_dir", "model_cache_dir", "server_tokens_file"}
_TUPLE_FIELDS = {"enabled_formats", "exclude_dirs", "server_trusted_proxies", "oauth_issuers"}

#: Settings that say where data goes or comes from: a config file found by looking (in
#: the knowledge base or the working folder) may set them only once trusted. ``index_dir``
#: (outside kb_path) and ``embedding.model`` (outside the packaged ones) are checked too.
_GATED_FIELDS = ("database_url", "vectors_uri", "vectors_storage_options", "model_cache_dir",
                 "server_tokens_file", "server_trusted_proxies",
                 # a network endpoint the text goes to, and which secret goes with it (0037)
                 "embedding_base_url", "embedding_api_key_env",
                 # the folders a server serves, which could name any folder (0041)
                 "collections",
                 # who may sign the tokens the HTTP server accepts (0054)
                 "oauth_issuers", "oauth_audience", "oauth_jwks_uri", "oauth_read_scope",
                 "oauth_rebuild_scope", "oauth_jwks_cache_seconds",
                 "oauth_clock_skew_seconds")

log = logging.getLogger(__name__)


def read_config(path: Path) -> dict[str, Any]:
    """Flatten a TOML file into Settings field names; unknown keys are errors."""
    return parse_config(path, trust.read_bytes(path, "config"))


def parse_config(path: Path, data: bytes) -> dict[str, Any]:
    """Flatten the TOML ``data`` read from ``path`` into Settings field names."""
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML in {path}: {exc}") from None
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "fields":  # any names, each a type: decision 0036
            out["declared_fields"] = declared_fields(path, value)
        elif key == "collections":  # [[collections]]: decision 0041
            out["collections"] = parse_collections(value, path.parent, str(path))
        elif isinstance(value, dict) and key in _SCHEMA and key != "":
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


def collection_folders(specs: Sequence[CollectionSpec]) -> tuple[CollectionSpec, ...]:
    """The ``[[collections]]`` with each folder resolved; ``ConfigError`` naming the
    first collection whose folder is not there (checked after the trust rule)."""
    out = []
    for spec in specs:
        folder = Path(spec.path).expanduser()
        if not folder.is_dir():
            raise ConfigError(f"collection {spec.name!r}: path is not a directory: {folder}")
        out.append(replace(spec, path=folder.resolve()))
    return tuple(out)


def declared_fields(path: Path, value: object) -> Declared:
    """``[fields]``: front-matter key = ``string``, ``number``, ``date`` or ``list``."""
    try:
        return declare(value, "[fields]")
    except ConfigError as exc:
        raise ConfigError(f"{exc} (in {path})") from None


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
    env: Mapping[str, str] | None = None,
    user_config: bool = True,
    **overrides: Any,
) -> Settings:
    """Defaults, then each config file in effect (``config_layers``: the user's, then a
    found one over it), then explicit overrides (CLI flags win): one merge, in which a
    layer changes only the keys it names. A config file found by looking may say where
    data goes only once trusted."""
    layers = config_layers(config_file, cwd, kb_path=overrides.get("kb_path"), env=env,
                           user_config=user_config)
    parsed = [parse_config(layer.path, layer.read.data) for layer in layers]
    values: dict[str, Any] = {}
    for layer_values in parsed:
        values.update(layer_values)
    origin, from_found, refusal = ConfigOrigin(), {}, ""
    unreadable: ConfigError | None = None  # a trust list that cannot be read trusts nothing
    if layers:
        top = layers[-1]
        origin = ConfigOrigin(top.path, top.found_by,
                              over=layers[0].path if len(layers) > 1 else None)
        if top.found:
            from_found = parsed[-1]
            digest = hashlib.sha256(top.read.data).hexdigest()  # the bytes parsed
            try:
                refusal = trust.why_untrusted(top.path, top.read, digest, env) or ""
            except ConfigError as exc:
                refusal, unreadable = "is not trusted", exc
            origin = replace(origin, trusted=not refusal)
            if top.found_by == IN_WORKING_FOLDER and "kb_path" not in from_found:
                values.pop("kb_path", None)  # the working folder's file must name its kb
    log.info("config: %s", origin.describe())  # shown by -v, before anything can fail
    values.update({k: v for k, v in overrides.items() if v is not None})
    if "embedding_model" not in values and values.get("embedding_provider") != SERVICE_PROVIDER:
        values["embedding_model_follows_index"] = True  # decision 0046 (app/index_model)
    if values.get("collections") and "kb_path" not in values:
        # the folder the collections' index folder is in: that of the file naming them
        values["kb_path"] = next(layer.path.parent for layer, named in
                                 zip(reversed(layers), reversed(parsed), strict=True)
                                 if "collections" in named)
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
    if not origin.trusted and origin.path is not None:
        unchosen = {k: v for k, v in from_found.items() if overrides.get(k) is None}
        gated = gated_keys(unchosen, kb_path, origin.path.parent)
        if gated:
            raise unreadable or _untrusted(origin, gated, refusal)
        header = layers[-1].read.data.split(b"\n", 1)[0].decode("utf-8", "replace")
        origin = replace(origin, needs_no_trust=True, by_init=header == INIT_HEADER)
    if values.get("collections"):
        values["collections"] = collection_folders(values["collections"])
    for name in _TUPLE_FIELDS & values.keys():
        values[name] = tuple(values[name])
    values.setdefault("exclude_dirs", DEFAULT_EXCLUDE_DIRS)
    _validate_numbers(values)
    if "declared_fields" in values:  # an override may give a dict or (name, type) pairs
        values["declared_fields"] = declare(dict(values["declared_fields"]))
    check_service_values(values)
    if values.get("database_url") is not None:
        check_database_url(values["database_url"])
    if values.get("vectors_uri") is not None:
        values["vectors_uri"] = _vectors_uri(str(values["vectors_uri"]), kb_path)
    if "vectors_storage_options" in values:
        values["vectors_storage_options"] = StorageOptions(
            _options(None, "vectors.storage_options", values["vectors_storage_options"]))
    return Settings(kb_path=kb_path, index_dir=index_dir, config_origin=origin, **values)


def own_config(folder: Path, env: Mapping[str, str] | None = None
               ) -> tuple[Settings, frozenset[str]] | None:
    """A knowledge base's own ``kb-mcp.toml`` read for a collection of it (decision 0051):
    the settings it gives on its own (no user config, no ``$KB_MCP_CONFIG``; the trust
    gate as for one folder) and the keys it names. None when ``folder`` has none, or its
    file names ``[[collections]]`` (a config of collections, not of one knowledge base)."""
    env = {k: v for k, v in (os.environ if env is None else env).items() if k != CONFIG_ENV}
    layers = config_layers(None, kb_path=folder, env=env, user_config=False)
    if not layers:
        return None
    named = parse_config(layers[-1].path, layers[-1].read.data)
    if "collections" in named:
        return None
    own = build_settings(None, kb_path=folder, env=env, user_config=False)
    return own, frozenset(named)


def _dotted(name: str) -> str:
    """A Settings field's key as written in the config file."""
    for section, keys in _SCHEMA.items():
        for key, (field, _) in keys.items():
            if field == name:
                return f"{section}.{key}" if section else key
    return name


def gated_keys(values: Mapping[str, Any], kb_path: Path, folder: Path) -> list[str]:
    """The keys among ``values`` (read from a config file nobody named, in ``folder``)
    that say where data goes or comes from. ``kb_path`` is gated as ``[[collections]]``
    is, since it names the folder served: unless it is ``folder`` or inside it."""
    gated = [_dotted(name) for name in _GATED_FIELDS if name in values]
    if "kb_path" in values and not Path(values["kb_path"]).resolve().is_relative_to(
            folder.resolve()):
        gated.insert(0, "kb_path")
    if "index_dir" in values and not Path(values["index_dir"]).resolve().is_relative_to(
            kb_path):
        gated.append("index_dir")
    gated += _loosened_parser_limits(values)
    if "embedding_model" in values and values.get("embedding_provider") != SERVICE_PROVIDER:
        from kbmcp_adapters.embedding.catalogue import packaged_model

        model = str(values["embedding_model"])
        default = Settings.__dataclass_fields__["embedding_model"].default
        from kbmcp_adapters.embedding.fastembed_embedder import (
            INTEGER_MODEL_ID,
            PACKAGED_MODEL_ID,
        )

        own = {str(default).lower(), INTEGER_MODEL_ID.lower(),  # made on this machine
               PACKAGED_MODEL_ID.lower()}
        if packaged_model(model) is None and model.strip().lower() not in own:
            gated.append("embedding.model")
    return gated


#: Parser safety limits a config nobody named may tighten but not loosen (decision 0022).
_PARSER_LIMITS = ("parsers_max_output_chars", "parsers_max_elements",
                  "parsers_timeout_seconds", "parsers_memory_limit_mb")


def _loosened_parser_limits(values: Mapping[str, Any]) -> list[str]:
    """``[parsers]`` keys that weaken the protection against hostile files: isolation
    turned off, or a budget raised above its default."""
    fields = Settings.__dataclass_fields__
    out = [_dotted(name) for name in _PARSER_LIMITS
           if name in values and values[name] > fields[name].default]
    if values.get("parsers_isolate") is False:
        out.append(_dotted("parsers_isolate"))
    return out


def _untrusted(origin: ConfigOrigin, keys: list[str], state: str) -> ConfigError:
    """The one-sentence refusal of an untrusted config file that says where data goes;
    ``state`` says why it is not trusted (``trust.why_untrusted``)."""
    names = keys[0] if len(keys) == 1 else f"{', '.join(keys[:-1])} and {keys[-1]}"
    command = f"kb-mcp trust {shlex.quote(str(origin.path))}"
    return ConfigError(f"the config file {origin.path}, {origin.found_by}, sets {names} "
                       "(where data goes or comes from, or how hostile files are kept in "
                       f"check) but {state}: if you chose it, run `{command}` or name it "
                       "with --config")


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


#: ``[parsers]`` budgets and pool: setting field -> (key, lowest, highest).
_PARSER_RANGES: dict[str, tuple[str, float, float]] = {
    "parsers_max_output_chars": ("max_output_chars", 1_000, 1_000_000_000),
    "parsers_max_elements": ("max_elements", 100, 100_000_000),
    "parsers_timeout_seconds": ("timeout_seconds", 1, 3600),
    "parsers_workers": ("workers", 1, 32),
    "parsers_memory_limit_mb": ("memory_limit_mb", 64, 65_536),
}


def _validate_parsers(values: Mapping[str, Any]) -> None:
    for name, (key, low, high) in _PARSER_RANGES.items():
        value = values.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not (
            low <= value <= high
        ):
            raise ConfigError(f"[parsers].{key} must be from {low:,} to {high:,}, got {value!r}")


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
    _validate_parsers(values)
    passages = values.get("search_passage_candidates")
    if passages is not None and not 0 <= int(passages) <= MAX_PASSAGE_CANDIDATES:
        raise ConfigError(f"[search].passage_candidates must be from 0 (off) to "
                          f"{MAX_PASSAGE_CANDIDATES}, got {passages}")
    candidates = values.get("search_rerank_candidates")
    if candidates is not None and not 1 <= int(candidates) <= MAX_RERANK_CANDIDATES:
        raise ConfigError(f"[search].rerank_candidates must be from 1 to "
                          f"{MAX_RERANK_CANDIDATES}, got {candidates}")
    if "search_reranker" in values:
        from kbmcp_adapters.rerank.cross_encoder import check_reranker_name

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
