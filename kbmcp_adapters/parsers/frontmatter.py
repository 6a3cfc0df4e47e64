"""Markdown frontmatter: the ``---`` block at the top of a file, read into the known fields
(title, date, tags, topic, category) and JSON-safe metadata, with one warning per problem
(rules in ``markdown``'s docstring)."""

from __future__ import annotations

import base64
import datetime as dt
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

__all__ = ["Frontmatter", "frontmatter_end", "normalise_date", "read_frontmatter"]

_KNOWN_KEYS = ("title", "date", "tags", "topic", "category")
_DATE_TEXT = re.compile(r"^\s*(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?:$|[T\s])")
_YAML_KEY = re.compile(r"^[A-Za-z_][\w-]*\s*:(\s|$)")
_MAX_NODES = 10_000
_MAX_DEPTH = 32


@cache
def _loader() -> type[yaml.SafeLoader]:
    """SafeLoader (libyaml's when PyYAML was built with it, about ten times faster) that
    leaves dates as text, so one bad date cannot sink the whole block. Built on first use:
    PyYAML is imported by a run that reads frontmatter, not by every process that builds
    the parser registry (a search asks it only which extensions are enabled)."""
    import yaml

    safe: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class FrontmatterLoader(safe):  # type: ignore[valid-type,misc]
        """SafeLoader that leaves dates as text."""

    FrontmatterLoader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return FrontmatterLoader


def __getattr__(name: str) -> Any:
    if name == "_FrontmatterLoader":  # the loader's older name, a class built at import
        return _loader()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True, slots=True)
class Frontmatter:
    title: str | None = None
    date: str | None = None
    tags: tuple[str, ...] = ()
    topic: str | None = None
    category: str | None = None
    metadata: Mapping[str, object] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def normalise_date(value: object) -> str | None:
    """YYYY-MM-DD from a date, a datetime or text starting with a date; else None."""
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str) and (match := _DATE_TEXT.match(value)):
        try:
            return dt.date(*(int(part) for part in match.groups())).isoformat()
        except ValueError:
            return None
    return None


def frontmatter_end(lines: Sequence[str]) -> int:
    """The index of the first line after a closed frontmatter block (0 without one), as
    ``read_frontmatter`` finds it."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    close = next((j for j in range(1, len(lines)) if lines[j].rstrip() in ("---", "...")), None)
    return 0 if close is None else close + 1


def read_frontmatter(lines: Sequence[str]) -> tuple[Frontmatter, int]:
    """The frontmatter fields and the index of the first line after the block."""
    if not lines or lines[0].rstrip() != "---":
        return Frontmatter(), 0
    close = next((j for j in range(1, len(lines)) if lines[j].rstrip() in ("---", "...")), None)
    if close is None:
        if len(lines) > 1 and _YAML_KEY.match(lines[1]):  # meant as frontmatter, never closed
            reason = "frontmatter not closed (no second '---' line); read as ordinary text"
            return Frontmatter(warnings=(reason,)), 0
        return Frontmatter(), 0
    simple = _simple_block(lines[1:close])
    if simple is not None:  # what YAML would load, read without it
        return _fields(simple), close + 1
    import yaml

    try:
        loaded = yaml.load("\n".join(lines[1:close]), Loader=_loader())
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 2 if exc.problem_mark is not None else 1
        return Frontmatter(
            warnings=(f"frontmatter ignored: invalid YAML near line {line}",)
        ), close + 1
    except Exception as exc:  # any other loader failure is a broken block, not a crash
        reason = f"frontmatter ignored: invalid YAML ({type(exc).__name__})"
        return Frontmatter(warnings=(reason,)), close + 1
    if loaded is None:
        return Frontmatter(), close + 1
    if not isinstance(loaded, dict):
        reason = "frontmatter ignored: it is not a mapping of keys to values"
        return Frontmatter(warnings=(reason,)), close + 1
    return _fields(loaded), close + 1


#: One line of the usual frontmatter: ``key: value``, the value plain text, one quoted
#: string without escapes, a one-line list of plain words, or nothing.
_SIMPLE_LINE = re.compile(
    r"([A-Za-z_][\w-]*):(?: +(?:"
    r"\"([^\"\\]*)\"|'([^']*)'|\[([^\[\]{}#\"'`]*)\]"
    r"|([^-?:,\[\]{}#&*!|>'\"%@` ][^#\[\]{}]*?)"
    r"))? *",
    re.ASCII,
)
_PRINTABLE_ASCII = re.compile(r"[ -~]*")
#: A plain list item: no indicator first, no ``:`` at all (a flow context ends on it).
_SIMPLE_ITEM = re.compile(r"[^-?:,\[\]{}#&*!|>'\"%@` ][^:]*")
#: A plain scalar that is text only when no ``: `` and no trailing ``:`` are in it.
_MAPPING_INSIDE = re.compile(r":(?: |$)")


def _plain_text(value: str) -> bool:
    """True when YAML reads the plain scalar ``value`` as a string: none of the loader's
    own implicit resolvers (numbers, booleans, null, ...) claims it."""
    table: Any = _loader().yaml_implicit_resolvers
    resolvers = [*table.get(value[0] if value else "", []), *table.get(None, [])]
    return (
        bool(value)
        and _MAPPING_INSIDE.search(value) is None
        and not any(regexp.match(value) for _, regexp in resolvers)
    )


def _simple_block(lines: Sequence[str]) -> dict[object, object] | None:
    """The mapping of a frontmatter block whose every line is a simple ``key: value`` (see
    ``_SIMPLE_LINE``) of printable ASCII, exactly as the YAML loader gives it; None for
    anything else, which the loader then reads. Most frontmatter is this simple, and the
    loader builds every value through a chain of Python calls."""
    out: dict[object, object] = {}
    for line in lines:
        if not line.strip(" "):
            continue
        match = _SIMPLE_LINE.fullmatch(line)
        if match is None or not _PRINTABLE_ASCII.fullmatch(line):
            return None
        key, double, single, items, plain = match.groups()
        if not _plain_text(key):
            return None
        value: object
        if double is not None:
            value = double
        elif single is not None:
            value = single
        elif items is not None:
            words = [w.strip(" ") for w in items.split(",")] if items.strip(" ") else []
            if not all(_SIMPLE_ITEM.fullmatch(w) and _plain_text(w) for w in words):
                return None
            value = words
        elif plain is not None:
            value = plain.rstrip(" ")
            if not _plain_text(value):
                return None
        else:
            value = None
        out[key] = value
    return out or None


def _text(value: object) -> str | None:
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value).strip() or None
    return None


def _fields(data: Mapping[object, object]) -> Frontmatter:
    known: dict[str, object] = {}
    metadata: dict[str, object] = {}
    warnings: list[str] = []
    nodes = [_MAX_NODES]  # shared by all keys: aliases cannot multiply the metadata
    for key, value in data.items():
        name = str(key)
        if name.lower() in _KNOWN_KEYS and name.lower() not in known:
            known[name.lower()] = value
            continue
        before = nodes[0]
        try:
            metadata[name] = _json_safe(value, nodes, 0)
        except _TooLarge:
            nodes[0] = before
            warnings.append(f"frontmatter key {name!r} is too large or too nested; dropped")
    title, topic, category = (_text(known.get(k)) for k in ("title", "topic", "category"))
    for k, got in (("title", title), ("topic", topic), ("category", category)):
        if got is None and known.get(k) not in (None, ""):
            warnings.append(f"frontmatter {k} is not text; ignored")
    date = normalise_date(known.get("date"))
    if date is None and known.get("date") not in (None, ""):
        warnings.append(f"frontmatter date {str(known['date'])[:40]!r} is not a date; ignored")
    tags, tag_warning = _tags(known.get("tags"))
    if tag_warning:
        warnings.append(tag_warning)
    return Frontmatter(title, date, tags, topic, category, metadata, tuple(warnings))


def _tags(value: object) -> tuple[tuple[str, ...], str | None]:
    if value is None:
        return (), None
    items: list[object]
    if isinstance(value, str):
        items = list(value.split(","))
    elif isinstance(value, list | tuple | set):
        items = list(value)
    elif _text(value) is not None:
        items = [value]
    else:
        return (), "frontmatter tags are not a list or a comma-separated string; ignored"
    tags: list[str] = []
    skipped = False
    for item in items:
        text = _text(item) if not isinstance(item, bool) else str(item)
        if text is None:
            skipped = skipped or item is not None
            continue
        if text not in tags:
            tags.append(text)
    return tuple(tags), ("frontmatter tags: non-text entries ignored" if skipped else None)


class _TooLarge(Exception):
    pass


def _json_safe(value: object, nodes: list[int], depth: int) -> object:
    """A JSON-serialisable copy; YAML aliases cannot blow it up (node and depth caps)."""
    nodes[0] -= 1
    if nodes[0] < 0 or depth > _MAX_DEPTH:
        raise _TooLarge
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {str(k): _json_safe(v, nodes, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v, nodes, depth + 1) for v in value]
    if isinstance(value, set | frozenset):
        return [_json_safe(v, nodes, depth + 1) for v in sorted(value, key=str)]
    return str(value)
