"""The ``[[collections]]`` of the user's own config, added and removed by ``kb-mcp
collections add/remove`` (decision 0051): the file is edited in place, its comments and
layout kept (tomlkit), one change at a time, replaced atomically. No trust step: the
user's config is the user's own, and the command is the user's word."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import tomlkit
from tomlkit.exceptions import ParseError
from tomlkit.items import AoT

from kbmcp_adapters.app import trust
from kbmcp_adapters.app.user_files import changing, write_text_private
from kbmcp_core.collections import CollectionSpec, check_name, folder_name
from kbmcp_core.errors import ConfigError

_WHAT = "your user config"


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/kb-mcp/config.toml``: the config every command reads first."""
    return trust.user_config_dir(env) / trust.USER_CONFIG_NAME


def add_collection(folder: Path, name: str | None = None, description: str | None = None,
                   env: Mapping[str, str] | None = None) -> CollectionSpec:
    """Add ``folder`` to the user config's ``[[collections]]`` as ``name`` (default: the
    folder's name, as one folder is named) and return its spec. ``ConfigError`` when the
    folder is not one, or the name or the folder is already a collection there."""
    folder = folder.expanduser().resolve()
    if not folder.is_dir():
        raise ConfigError(f"not a directory: {folder}")
    name = check_name(name) if name is not None else folder_name(folder)
    path = user_config_path(env)
    with changing(path, _WHAT):
        doc = _load(path)
        tables = _collections(doc)
        for table in tables:
            if table.get("name") == name:
                raise ConfigError(f"collection {name!r} is already in {path}: pick another "
                                  "--name, or `kb-mcp collections remove` it first")
            if _folder(table, path) == folder:
                raise ConfigError(f"{folder} is already the collection "
                                  f"{table.get('name')!r} in {path}")
        table = tomlkit.table()
        table["name"] = name
        table["path"] = str(folder)
        if description:
            table["description"] = description
        tables.append(table)
        if "collections" not in doc:
            doc["collections"] = tables
        _save(path, doc)
    return CollectionSpec(name, folder, description or "")


def remove_collection(name: str, env: Mapping[str, str] | None = None) -> Path:
    """Take collection ``name`` out of the user config's ``[[collections]]``; its folder
    and its index stay as they are. The folder it named; ``ConfigError`` naming the
    collections there when ``name`` is not one of them."""
    path = user_config_path(env)
    with changing(path, _WHAT):
        doc = _load(path)
        tables = _collections(doc)
        names = [str(t.get("name")) for t in tables]
        if name not in names:
            listed = ", ".join(names) or "none"
            raise ConfigError(f"no collection {name!r} in {path}; the collections there: "
                              f"{listed}")
        index = names.index(name)
        folder = _folder(tables[index], path)
        del tables[index]
        if not tables:
            del doc["collections"]
        _save(path, doc)
    return folder


def _save(path: Path, doc: tomlkit.TOMLDocument) -> None:
    """The document written back, ending in one newline as it was (tomlkit leaves the
    blank line a removed table stood after)."""
    write_text_private(path, _WHAT, tomlkit.dumps(doc).rstrip("\n") + "\n")


def _load(path: Path) -> tomlkit.TOMLDocument:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return tomlkit.document()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {_WHAT} {path}: {exc}") from None
    try:
        return tomlkit.parse(text)
    except ParseError as exc:
        raise ConfigError(f"{_WHAT} {path} is not valid TOML: {exc}") from None


def _collections(doc: tomlkit.TOMLDocument) -> AoT:
    """The document's ``[[collections]]`` (a new, empty array of tables when none)."""
    found = doc.get("collections")
    if found is None:
        return tomlkit.aot()
    if not isinstance(found, AoT):
        raise ConfigError("collections in your user config must be [[collections]] tables")
    return found


def _folder(table: Mapping[str, object], config: Path) -> Path:
    """A table's folder, resolved as the config reader resolves it (against the file's)."""
    return (config.parent / Path(str(table.get("path", ""))).expanduser()).resolve()


__all__ = ["add_collection", "remove_collection", "user_config_path"]
