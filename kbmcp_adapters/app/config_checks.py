"""What the settings schema cannot say alone: the named checks (``Key.hook``), the trust
gate's per-key rules, and the values read into a shape (vectors URI, storage options)."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from kbmcp_core.errors import ConfigError
from kbmcp_core.settings import ConfigOrigin
from kbmcp_core.settings_keys import SCHEMA


def _database_url(values: Mapping[str, Any]) -> None:
    from kbmcp_adapters.store.urls import check_database_url

    if values.get("database_url") is not None:
        check_database_url(values["database_url"])


def _embedding_service(values: Mapping[str, Any]) -> None:
    from kbmcp_adapters.embedding.service_config import check_service_values

    check_service_values(values)


def _reranker(values: Mapping[str, Any]) -> None:
    if "search_reranker" not in values:
        return
    from kbmcp_adapters.rerank.cross_encoder import check_reranker_name

    try:
        check_reranker_name(str(values["search_reranker"]))
    except ConfigError as exc:
        raise ConfigError(f"[search].reranker: {exc}") from None


#: ``Key.hook`` name -> the check it names, run on every value once the layers are merged.
HOOKS: dict[str, Callable[[Mapping[str, Any]], None]] = {
    "database_url": _database_url,
    "embedding_service": _embedding_service,
    "reranker": _reranker,
}


def check_values(values: Mapping[str, Any]) -> None:
    """Every value's type, bounds and choices (the schema), then each named hook once."""
    SCHEMA.check(values)
    for hook in dict.fromkeys(k.hook for k in SCHEMA.keys if k.hook):
        HOOKS[hook](values)


def _kb_path_outside(values: Mapping[str, Any], kb_path: Path, folder: Path) -> bool:
    return not Path(values["kb_path"]).resolve().is_relative_to(folder.resolve())


def _index_dir_outside(values: Mapping[str, Any], kb_path: Path, folder: Path) -> bool:
    return not Path(values["index_dir"]).resolve().is_relative_to(kb_path)


def _model_not_packaged(values: Mapping[str, Any], kb_path: Path, folder: Path) -> bool:
    from kbmcp_adapters.embedding.service_config import SERVICE_PROVIDER

    if values.get("embedding_provider") == SERVICE_PROVIDER:
        return False
    from kbmcp_adapters.embedding.catalogue import packaged_model
    from kbmcp_adapters.embedding.fastembed_embedder import INTEGER_MODEL_ID, PACKAGED_MODEL_ID

    model = str(values["embedding_model"])
    own = {str(SCHEMA.default("embedding_model")).lower(), INTEGER_MODEL_ID.lower(),
           PACKAGED_MODEL_ID.lower()}  # made on this machine
    return packaged_model(model) is None and model.strip().lower() not in own


#: The keys whose gate is ``checked``: whether a value needs trust depends on where it is.
_CHECKED: dict[str, Callable[[Mapping[str, Any], Path, Path], bool]] = {
    "kb_path": _kb_path_outside,
    "index_dir": _index_dir_outside,
    "embedding_model": _model_not_packaged,
}


def gated_keys(values: Mapping[str, Any], kb_path: Path, folder: Path) -> list[str]:
    """The keys among ``values`` (read from a config file nobody named, in ``folder``)
    that say where data goes or comes from, or loosen a protection (the schema's gates)."""
    out = []
    for key in SCHEMA.gated():
        if key.field not in values:
            continue
        value = values[key.field]
        if (key.gate == "always" or (key.gate == "loosened" and key.loosened(value))
                or (key.gate == "checked" and _CHECKED[key.field](values, kb_path, folder))):
            out.append(key.dotted)
    return out


def untrusted(origin: ConfigOrigin, keys: list[str], state: str) -> ConfigError:
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


def vectors_uri(value: str, base: Path) -> str:
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


def options(path: Path | None, dotted: str, value: object) -> dict[str, str]:
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


__all__ = ["HOOKS", "check_values", "gated_keys", "options", "untrusted", "vectors_uri"]
