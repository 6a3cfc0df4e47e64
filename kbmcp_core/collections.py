"""Collections: several folders served by one server, each under a name (decision 0041).

A collection is one knowledge base (its own folder, index and writer lock) known by a
short name. This module holds the pure parts: the spec read from ``[[collections]]``,
the rules a name follows, and the name a single folder gets when it is the only one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kbmcp_core.errors import ConfigError, InvalidQuery, UnknownCollection

#: A collection name: lower-case letters, digits, ``_`` and ``-``, starting with a letter
#: or digit, at most 64 characters (it becomes a folder name, a schema name and a URI part).
NAME_RULE = "[a-z0-9][a-z0-9_-]{0,63}"
_NAME = re.compile(NAME_RULE)
#: the name a folder gets when nothing of its own name is usable
FALLBACK_NAME = "kb"

#: The keys of one ``[[collections]]`` table, and of its ``[collections.parsers]``.
_KEYS = ("name", "path", "description", "default", "parsers")
_PARSER_KEYS = ("enabled", "exclude_dirs")


@dataclass(frozen=True, slots=True)
class CollectionSpec:
    """One ``[[collections]]`` entry. ``enabled_formats`` and ``exclude_dirs`` are None
    when the collection keeps the top-level ``[parsers].enabled`` / ``[index].exclude_dirs``."""

    name: str
    path: Path
    description: str = ""
    #: searched when a call names no collection
    default: bool = True
    enabled_formats: tuple[str, ...] | None = None
    exclude_dirs: tuple[str, ...] | None = None


def check_name(name: object, where: str = "collection name") -> str:
    """``name`` when it follows ``NAME_RULE``, else ``ConfigError`` saying the rule."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(f"{where} {name!r} must match {NAME_RULE} (lower-case letters, "
                          "digits, _ and -, at most 64 characters)")
    return name


def folder_name(path: Path) -> str:
    """The name of the one collection a single ``kb_path`` serves: the folder's name in
    lower case, every other character turned into ``-`` (``My Notes`` → ``my-notes``)."""
    text = re.sub(r"[^a-z0-9_-]+", "-", path.name.lower())
    text = text.lstrip("_-")[:64].rstrip("-_") or FALLBACK_NAME
    return text if _NAME.fullmatch(text) else FALLBACK_NAME


class Served(Protocol):
    """What names the collections of a configuration (``Settings``)."""

    @property
    def collections(self) -> tuple[CollectionSpec, ...]: ...

    @property
    def kb_path(self) -> Path: ...


def served_specs(settings: Served) -> tuple[CollectionSpec, ...]:
    """The collections a configuration serves, in configured order: its
    ``[[collections]]``, or its one folder as a collection of one named after it
    (decision 0051: a plain folder is a collection of one)."""
    return settings.collections or (CollectionSpec(folder_name(settings.kb_path),
                                                   settings.kb_path),)


def resolve_names(selector: str | Sequence[str] | None, names: Sequence[str],
                  defaults: Sequence[str]) -> tuple[str, ...]:
    """The collections a call covers: None (or an empty list) means the ``defaults``; a
    name or a list of names means those, in the order given, each once. A name that is
    not one of ``names`` is ``UnknownCollection`` naming the real ones: never all."""
    if selector is None or (not isinstance(selector, str) and len(selector) == 0):
        if not defaults:
            raise UnknownCollection((), names)
        return tuple(defaults)
    asked = [selector] if isinstance(selector, str) else list(selector)
    if not all(isinstance(n, str) for n in asked):
        raise InvalidQuery("collection must be a name or a list of names")
    unknown = unknown_names(asked, names)
    if unknown:
        raise UnknownCollection(unknown, names)
    return tuple(dict.fromkeys(asked))


def parse_collections(value: object, base: Path, where: str) -> tuple[CollectionSpec, ...]:
    """``[[collections]]`` as read from TOML (a list of tables) in the file ``where``;
    a relative ``path`` is taken against ``base`` (the config file's folder). Names are
    checked and must be unique; folders are checked later (``check_folders``), after the
    trust rule had its say."""
    if not isinstance(value, list) or not value or not all(isinstance(v, Mapping)
                                                            for v in value):
        raise ConfigError(f"collections in {where} must be one or more [[collections]] "
                          "tables")
    specs: list[CollectionSpec] = []
    for i, table in enumerate(value, 1):
        specs.append(_spec(table, base, f"[[collections]] #{i} in {where}"))
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise ConfigError(f"collection {spec.name!r} is named twice in {where}")
        seen.add(spec.name)
    return tuple(specs)


def _spec(table: Mapping[str, object], base: Path, where: str) -> CollectionSpec:
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r} in {where}; known keys: "
                          f"{', '.join(_KEYS)}")
    if "name" not in table or "path" not in table:
        raise ConfigError(f"{where} needs a name and a path")
    name = check_name(table["name"], f"{where}: name")
    path, description = table["path"], table.get("description", "")
    if not isinstance(path, str) or not path.strip():
        raise ConfigError(f"{where}: path must be a folder name")
    if not isinstance(description, str):
        raise ConfigError(f"{where}: description must be a string")
    default = table.get("default", True)
    if not isinstance(default, bool):
        raise ConfigError(f"{where}: default must be true or false")
    folder = Path(path).expanduser()
    parsers = table.get("parsers", {})
    if not isinstance(parsers, Mapping):
        raise ConfigError(f"{where}: parsers must be a table")
    bad = sorted(set(parsers) - set(_PARSER_KEYS))
    if bad:
        raise ConfigError(f"unknown key 'parsers.{bad[0]}' in {where}; known keys: "
                          f"{', '.join('parsers.' + k for k in _PARSER_KEYS)}")
    return CollectionSpec(
        name=name, path=folder if folder.is_absolute() else base / folder,
        description=description, default=default,
        enabled_formats=_strings(parsers.get("enabled"), f"{where}: parsers.enabled"),
        exclude_dirs=_strings(parsers.get("exclude_dirs"), f"{where}: parsers.exclude_dirs"))


def _strings(value: object, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings")
    return tuple(value)


def unknown_names(asked: Sequence[str], known: Sequence[str]) -> list[str]:
    """The names in ``asked`` that are not collections, in the order asked."""
    have = set(known)
    return [n for n in dict.fromkeys(asked) if n not in have]
