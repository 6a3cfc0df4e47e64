"""Settings from ``kb-mcp.toml`` files plus overrides, read and layered by the schema
(``kbmcp_core.settings_keys``; decision 0050): defaults, each config file in effect
(``config_files``), then flags, one merge that also says where each value came from."""

from __future__ import annotations

import hashlib
import logging
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kbmcp_adapters.app import trust
from kbmcp_adapters.app.config_checks import (
    check_values,
    gated_keys,
    options,
    untrusted,
    vectors_uri,
)
from kbmcp_adapters.app.config_files import CONFIG_ENV, IN_WORKING_FOLDER, Layer, config_layers
from kbmcp_adapters.embedding.service_config import SERVICE_PROVIDER
from kbmcp_core.collections import CollectionSpec, parse_collections
from kbmcp_core.errors import ConfigError
from kbmcp_core.fields import Declared, declare
from kbmcp_core.settings import INIT_HEADER, ConfigOrigin, Settings, StorageOptions
from kbmcp_core.settings_keys import SCHEMA

#: Where a value came from when no file and no flag named it.
DEFAULT_SOURCE = "default"
#: Where a value came from when the caller (a command-line flag) gave it.
FLAG_SOURCE = "flag"

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
        elif isinstance(value, dict) and key in SCHEMA.sections:
            for sub, subvalue in value.items():
                out.update(_field(path, key, sub, subvalue))
        else:
            out.update(_field(path, "", key, value))
    for field in [f for f in out if SCHEMA.by_field[f].form == "path"]:
        p = Path(out[field]).expanduser()
        out[field] = p if p.is_absolute() else (path.parent / p)
    if "vectors_uri" in out:
        out["vectors_uri"] = vectors_uri(out["vectors_uri"], path.parent)
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


def _field(path: Path, section: str, name: str, value: object) -> dict[str, Any]:
    key = SCHEMA.key(section, name)
    if key is None or key.form in ("fields", "collections"):
        dotted = f"{section}.{name}" if section else name
        known = sorted(k.dotted for k in SCHEMA.keys if k.form not in ("fields", "collections"))
        raise ConfigError(f"unknown key {dotted!r} in {path}; known keys: {', '.join(known)}")
    if key.form == "options":
        return {key.field: options(path, key.dotted, value)}
    if key.form == "strings":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{key.dotted} in {path} must be a list of strings")
        return {key.field: tuple(value)}
    if not isinstance(value, key.types) or (isinstance(value, bool) and bool not in key.types):
        kind = "a boolean" if isinstance(value, bool) else type(value).__name__
        raise ConfigError(f"{key.dotted} in {path} must be {key.types[0].__name__}, not {kind}")
    key.check(value, f"in {path}")  # type, bounds, choices: the schema
    return {key.field: value}


@dataclass(frozen=True, slots=True)
class Resolved:
    """The settings, and for each of their keys where its value came from: ``default``,
    ``flag``, or the config file that named it (``user config FILE``, ``found config
    FILE``, ``named config FILE``)."""

    settings: Settings
    sources: dict[str, str]


def _source(layer: Layer) -> str:
    if layer.found:
        return f"found config {layer.path}"
    if layer.found_by == "your user config":
        return f"user config {layer.path}"
    return f"named config {layer.path} ({layer.found_by})"


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
    return resolve_settings(config_file, cwd=cwd, env=env, user_config=user_config,
                            **overrides).settings


def resolve_settings(
    config_file: Path | None = None,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    user_config: bool = True,
    **overrides: Any,
) -> Resolved:
    """``build_settings``, saying where each key's value came from (``kb-mcp config``)."""
    layers = config_layers(config_file, cwd, kb_path=overrides.get("kb_path"), env=env,
                           user_config=user_config)
    parsed = [parse_config(layer.path, layer.read.data) for layer in layers]
    values: dict[str, Any] = {}
    sources = dict.fromkeys(SCHEMA.by_field, DEFAULT_SOURCE)
    for layer, layer_values in zip(layers, parsed, strict=True):
        values.update(layer_values)  # a layer changes only the keys it names (0047)
        sources.update(dict.fromkeys(layer_values, _source(layer)))
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
                values.pop("kb_path", None)  # the working folder's file must name its kb,
                if _first_line(top) == INIT_HEADER:  # unless `kb-mcp init` set it up there
                    values["kb_path"], sources["kb_path"] = top.path.parent, _source(top)
    try:
        given = {k: v for k, v in overrides.items() if v is not None}
        values.update(given)
        sources.update(dict.fromkeys(given, FLAG_SOURCE))
        if "embedding_model" not in values and values.get("embedding_provider") != SERVICE_PROVIDER:
            values["embedding_model_follows_index"] = True  # decision 0046 (app/index_model)
        if values.get("collections") and "kb_path" not in values:
            # the folder the collections' index folder is in: that of the file naming them
            layer = next(layer for layer, named in zip(reversed(layers), reversed(parsed),
                                                       strict=True) if "collections" in named)
            values["kb_path"], sources["kb_path"] = layer.path.parent, _source(layer)
        unknown = set(values) - set(Settings.__dataclass_fields__)
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")
        if "kb_path" not in values:
            raise ConfigError("no knowledge base given: pass --kb-path, set kb_path in "
                              "kb-mcp.toml, or run `kb-mcp init` in the folder")
        kb_path = Path(values.pop("kb_path")).expanduser()
        if not kb_path.is_dir():
            raise ConfigError(f"kb_path is not a directory: {kb_path}")
        kb_path = kb_path.resolve()
        index_dir = Path(values.pop("index_dir", SCHEMA.default("index_dir"))).expanduser()
        if not index_dir.is_absolute():
            index_dir = kb_path / index_dir
        if not origin.trusted and origin.path is not None:
            unchosen = {k: v for k, v in from_found.items() if overrides.get(k) is None}
            gated = gated_keys(unchosen, kb_path, origin.path.parent)
            if gated:
                raise unreadable or untrusted(origin, gated, refusal)
            origin = replace(origin, needs_no_trust=True,
                             by_init=_first_line(layers[-1]) == INIT_HEADER)
        return Resolved(_settings(values, kb_path, index_dir, origin), sources)
    finally:  # shown by -v, once what the file may say is known, and when a later step fails
        log.info("config: %s", origin.describe())


def _first_line(layer: Layer) -> str:
    """The file's first line (``INIT_HEADER`` in a file ``kb-mcp init`` wrote)."""
    return layer.read.data.split(b"\n", 1)[0].decode("utf-8", "replace")


def _settings(values: dict[str, Any], kb_path: Path, index_dir: Path,
              origin: ConfigOrigin) -> Settings:
    """The merged ``values`` checked (the schema, then its named hooks) and shaped."""
    if values.get("collections"):
        values["collections"] = collection_folders(values["collections"])
    for field in [f for f in values if f in SCHEMA.by_field
                  and SCHEMA.by_field[f].form == "strings"]:
        values[field] = tuple(values[field])
    if "declared_fields" in values:  # an override may give a dict or (name, type) pairs
        values["declared_fields"] = declare(dict(values["declared_fields"]))
    check_values(values)
    if values.get("vectors_uri") is not None:
        values["vectors_uri"] = vectors_uri(str(values["vectors_uri"]), kb_path)
    if "vectors_storage_options" in values:
        values["vectors_storage_options"] = StorageOptions(
            options(None, "vectors.storage_options", values["vectors_storage_options"]))
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


__all__ = ["DEFAULT_SOURCE", "FLAG_SOURCE", "Resolved", "build_settings", "collection_folders",
           "declared_fields", "gated_keys", "own_config", "parse_config", "read_config",
           "resolve_settings"]
