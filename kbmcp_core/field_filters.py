"""Filters on declared fields: a search's ``fields`` / ``fields_not`` checked into conditions.

``fields`` is an object of field name → what the field must hold: a value (exact), a list
(any of them) or, for ``number`` and ``date`` fields, a range ``{"gte": .., "lt": ..}``
(``gt``, ``gte``, ``lt``, ``lte``). A document passes when every named field has a row
that matches. ``fields_not`` takes the same shapes and drops every document with a row
that matches any of them (a document without the field is kept). A name that is not
declared, a value of the wrong type, or a range on a text field is an ``InvalidQuery``
that says what to fix. ``FieldCondition.matches`` is the meaning every store follows.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from kbmcp_core.errors import InvalidQuery
from kbmcp_core.fields import Declared, FieldType, FieldValue, as_day, as_number, as_text
from kbmcp_core.fields import describe as describe_declared

#: The range bounds a ``number`` or ``date`` field takes, and how each compares.
BOUNDS = ("gt", "gte", "lt", "lte")
#: Most field names in one ``fields`` (or ``fields_not``), and values in one any-of list.
MAX_CONDITIONS = 16
MAX_VALUES = 64
_CONTROL = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class FieldCondition:
    """One field's test: any of ``values``, or every bound of ``bounds`` ((op, value))."""

    name: str
    kind: FieldType
    values: tuple[str | float, ...] = ()
    bounds: tuple[tuple[str, str | float], ...] = ()

    @property
    def column(self) -> str:
        """Where a store keeps this field's values: ``text``, ``number`` or ``day``."""
        return {"number": "number", "date": "day"}.get(self.kind, "text")

    def holds(self, row: FieldValue) -> bool:
        if row.name != self.name:
            return False
        value = getattr(row, self.column)
        if value is None:
            return False
        if self.values:
            return value in self.values
        return all(_compare(value, op, bound) for op, bound in self.bounds)

    def matches(self, rows: Collection[FieldValue]) -> bool:
        """True when one of a document's rows passes."""
        return any(self.holds(row) for row in rows)

    def as_json(self) -> object:
        """The condition as a request would give it, for ``filter_applied``."""
        shown = [_plain(v) for v in self.values]
        if self.bounds:
            return {op: _plain(v) for op, v in self.bounds}
        return shown[0] if len(shown) == 1 else shown


def conditions(raw: object, declared: Declared, param: str = "fields"
               ) -> tuple[FieldCondition, ...]:
    """``raw`` (None, an object of field name → test, or conditions already checked) as
    conditions, sorted by name; ``InvalidQuery`` names what is wrong."""
    if raw is None:
        return ()
    if isinstance(raw, tuple) and all(isinstance(c, FieldCondition) for c in raw):
        return raw
    if not isinstance(raw, Mapping) or not raw:
        raise InvalidQuery(f"{param} must be a non-empty object of field name -> value, "
                           "list of values, or range")
    if len(raw) > MAX_CONDITIONS:
        raise InvalidQuery(f"{param} names {len(raw)} fields; at most {MAX_CONDITIONS}")
    types = dict(declared)
    out: list[FieldCondition] = []
    for name, test in raw.items():
        if not isinstance(name, str) or name not in types:
            raise InvalidQuery(f"{param}: {str(name)[:64]!r} is not a declared field; "
                               f"declared fields: {describe_declared(declared)}")
        out.append(_condition(f"{param}.{name}", name, types[name], test))
    return tuple(sorted(out, key=lambda c: c.name))


def _condition(where: str, name: str, kind: FieldType, test: object) -> FieldCondition:
    if isinstance(test, Mapping):
        if kind not in ("number", "date"):
            raise InvalidQuery(f"{where}: a range applies to number and date fields; "
                               f"{name} is a {kind} field")
        unknown = sorted(str(k) for k in test if k not in BOUNDS)
        if unknown or not test:
            raise InvalidQuery(f"{where}: a range takes {', '.join(BOUNDS)}"
                               + (f", not {unknown[0][:20]!r}" if unknown else ""))
        bounds = tuple((op, _value(f"{where}.{op}", kind, test[op]))
                       for op in BOUNDS if op in test)
        return FieldCondition(name, kind, bounds=bounds)
    items = list(test) if isinstance(test, list | tuple) else [test]
    if not items:
        raise InvalidQuery(f"{where}: an empty list matches nothing; omit the field")
    if len(items) > MAX_VALUES:
        raise InvalidQuery(f"{where} has more than {MAX_VALUES} values")
    values = tuple(dict.fromkeys(_value(where, kind, item) for item in items))
    return FieldCondition(name, kind, values=values)


def _value(where: str, kind: FieldType, value: object) -> str | float:
    if kind == "number":
        number = as_number(value)
        if number is None:
            raise InvalidQuery(f"{where}: {_shown(value)} is not a number (the field is "
                               "declared number)")
        return number
    if kind == "date":
        day = as_day(value) if isinstance(value, str) else None
        if day is None:
            raise InvalidQuery(f"{where}: {_shown(value)} is not an ISO 8601 date such as "
                               "2024-03-01 (the field is declared date)")
        return day
    text = as_text(value) if isinstance(value, str | int | float) else None
    if text is None:
        raise InvalidQuery(f"{where}: {_shown(value)} is not a text value (the field is "
                           f"declared {kind})")
    if found := _CONTROL.search(text):
        raise InvalidQuery(f"{where} must not contain control characters or lone "
                           f"surrogates (found U+{ord(found.group()):04X})")
    return text


def _compare(value: str | float, op: str, bound: str | float) -> bool:
    if op == "gt":
        return value > bound  # type: ignore[operator]
    if op == "gte":
        return value >= bound  # type: ignore[operator]
    if op == "lt":
        return value < bound  # type: ignore[operator]
    return value <= bound  # type: ignore[operator]


def _plain(value: str | float) -> object:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def as_json(found: tuple[FieldCondition, ...]) -> dict[str, object]:
    """Conditions as ``filter_applied`` echoes them."""
    return {c.name: c.as_json() for c in found}


__all__ = ["BOUNDS", "MAX_CONDITIONS", "MAX_VALUES", "FieldCondition", "as_json", "conditions"]
