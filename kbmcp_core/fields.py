"""Declared front-matter fields: the ``[fields]`` declarations and the rows a document gives.

A knowledge base names the front-matter keys it wants to filter on, each with a type
(``string``, ``number``, ``date`` or ``list``); only those keys are indexed, one
``FieldValue`` per value (a ``list`` field gives one per item). A value that does not
convert to its declared type is left out with a warning naming the key; the document is
indexed all the same. Text (``string`` and ``list`` items) is kept folded with
``str.lower``, so every store compares it case-insensitively in the same way; numbers as
floats; dates as ``YYYY-MM-DD`` (ISO 8601 dates, or the date part of an ISO date-time).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal, cast

from kbmcp_core.errors import ConfigError

FieldType = Literal["string", "number", "date", "list"]
FIELD_TYPES: tuple[FieldType, ...] = ("string", "number", "date", "list")
#: (name, type) pairs, sorted by name: what ``[fields]`` declares
Declared = tuple[tuple[str, FieldType], ...]
#: A field name: a letter or ``_`` first, then letters, digits, ``_``, ``-`` or ``.``
NAME = re.compile(r"[^\W\d][\w.-]{0,63}")
#: The most fields ``[fields]`` may declare.
MAX_FIELDS = 64
#: The most rows one document gives one field (a longer list is cut, with a warning).
MAX_VALUES = 256
#: The longest text value kept (longer ones are cut, as a filter value could not be longer).
MAX_TEXT = 512
#: Front-matter keys the Markdown parser lifts out of ``metadata`` into the document row.
_LIFTED = ("title", "date", "tags", "topic", "category")


@dataclass(frozen=True, slots=True)
class FieldValue:
    """One indexed value of a declared field: exactly one of the three is set."""

    name: str
    text: str | None = None
    number: float | None = None
    day: str | None = None


def declare(raw: object, where: str = "[fields]") -> Declared:
    """The ``[fields]`` table checked: each key a field name, each value a type name.
    ``ConfigError`` names the key at fault and what it takes."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} must be a table of field name = type "
                          f"({', '.join(FIELD_TYPES)})")
    if len(raw) > MAX_FIELDS:
        raise ConfigError(f"{where} declares {len(raw)} fields; at most {MAX_FIELDS}")
    out: list[tuple[str, FieldType]] = []
    for name, kind in raw.items():
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ConfigError(f"{where}: {str(name)[:70]!r} is not a field name (a letter or _ "
                              "first, then letters, digits, _, - or .; at most 64)")
        if kind not in FIELD_TYPES:
            raise ConfigError(f"{where}.{name} must be one of {', '.join(FIELD_TYPES)}, "
                              f"got {str(kind)[:40]!r}")
        out.append((name, cast(FieldType, kind)))
    return tuple(sorted(out))


def declared_json(declared: Declared) -> str:
    """The declarations as the index records them (``META_FIELDS``)."""
    return json.dumps(dict(declared), sort_keys=True)


def describe(declared: Declared) -> str:
    """The declared fields for a message: ``status (string), year (number)``."""
    if not declared:
        return "none (declare them under [fields] in kb-mcp.toml)"
    return ", ".join(f"{name} ({kind})" for name, kind in declared)


def front_matter(metadata: Mapping[str, object], title: str | None, day: str | None,
                 tags: tuple[str, ...], topic: str | None, category: str | None
                 ) -> dict[str, object]:
    """Every front-matter key of a document: its ``metadata`` and, under their own names,
    the keys the parser lifted into the document row (``date`` as it normalised it)."""
    out = dict(metadata)
    lifted: tuple[object, ...] = (title, day, list(tags) or None, topic, category)
    for key, value in zip(_LIFTED, lifted, strict=True):
        if value is not None:
            out.setdefault(key, value)
    return out


def values_of(found: Mapping[str, object], declared: Declared
              ) -> tuple[tuple[FieldValue, ...], tuple[str, ...]]:
    """(the rows of the declared fields, a warning per value left out)."""
    rows: list[FieldValue] = []
    warnings: list[str] = []
    for name, kind in declared:
        raw = found.get(name)
        if raw is None:
            continue
        items = raw if kind == "list" and isinstance(raw, list | tuple) else [raw]
        seen: set[object] = set()
        for item in items:
            row = convert(name, kind, item)
            if row is None:
                if item is not None:
                    warnings.append(f"front matter {name!r}: {_shown(item)} is not a "
                                    f"{'text item' if kind == 'list' else kind}; "
                                    "not indexed as a field")
                continue
            key = row.text if row.text is not None else (row.number, row.day)
            if key in seen:
                continue
            if len(seen) == MAX_VALUES:
                warnings.append(f"front matter {name!r}: more than {MAX_VALUES} values; "
                                "the rest are not indexed")
                break
            seen.add(key)
            rows.append(row)
    return tuple(rows), tuple(warnings)


def convert(name: str, kind: FieldType, value: object) -> FieldValue | None:
    """``value`` as a row of a field of type ``kind``; None when it does not convert."""
    if kind == "number":
        number = as_number(value)
        return None if number is None else FieldValue(name, number=number)
    if kind == "date":
        day = as_day(value)
        return None if day is None else FieldValue(name, day=day)
    text = as_text(value)
    return None if text is None else FieldValue(name, text=text)


def as_text(value: object) -> str | None:
    """Text, a number or a boolean as folded text (``true``/``false``); None otherwise."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float) and not (isinstance(value, float)
                                               and not math.isfinite(value)):
        value = _number_text(float(value))
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()[:MAX_TEXT].lower()


def as_number(value: object) -> float | None:
    """A finite number, or text that is one; never a boolean."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def as_day(value: object) -> str | None:
    """An ISO 8601 date (or the date of an ISO date-time) as ``YYYY-MM-DD``."""
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text).date().isoformat()
    except ValueError:
        return None


def _number_text(number: float) -> str:
    return str(int(number)) if number.is_integer() and abs(number) < 2**53 else repr(number)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


__all__ = ["FIELD_TYPES", "Declared", "FieldType", "FieldValue", "as_day", "as_number",
           "as_text", "convert", "declare", "declared_json", "describe", "front_matter",
           "values_of"]
