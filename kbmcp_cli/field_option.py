"""``--field`` and ``--not-field`` of ``kb-mcp search``: ``name=value`` tests as a filter.

``status=draft`` asks for an exact value; the same name given again (``--field tags=a
--field tags=b``) asks for any of them; ``year>=2020``, ``year<2024`` (also ``>`` and
``<=``) bound a number or date field, and bounds of one name are combined. The result is
the ``fields`` object the MCP tool takes; the search checks names and types against
``[fields]`` (``field_filters.conditions``), so a mistake reads the same here and there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import click

#: name, operator, value; the earliest operator wins, so a value may hold "=" or "<"
_TEST = re.compile(r"\s*([^=<>\s]+)\s*(>=|<=|>|<|=)\s*(.*?)\s*", re.DOTALL)
_BOUNDS = {">=": "gte", ">": "gt", "<=": "lte", "<": "lt"}

HELP = ("Only documents whose declared field (see [fields]) matches: NAME=VALUE (repeat a "
        "name for any of several values), or NAME>=V, NAME>V, NAME<=V, NAME<V for numbers "
        "and dates (ISO 8601). Repeatable.")
NOT_HELP = "Leave out documents whose declared field matches (same syntax as --field)."


def to_filter(_ctx: click.Context | None, param: click.Parameter | None,
              tests: Sequence[str]) -> dict[str, object] | None:
    """The click callback: the repeated option's values as one ``fields`` object."""
    option = param.opts[0] if param is not None and param.opts else "--field"
    out: dict[str, object] = {}
    for test in tests:
        match = _TEST.fullmatch(test)
        if match is None or not match.group(3):
            raise click.BadParameter(f"{test!r}: write NAME=VALUE, or NAME>=VALUE (also >, "
                                     "<=, <) for a number or date field", param_hint=option)
        name, op, value = match.groups()
        held = out.get(name)
        if op == "=":
            if isinstance(held, dict):
                raise click.BadParameter(f"{name}: give either values (=) or bounds "
                                         "(>=, >, <=, <), not both", param_hint=option)
            out[name] = [*(held or []), value]  # type: ignore[misc]
        else:
            if isinstance(held, list):
                raise click.BadParameter(f"{name}: give either values (=) or bounds "
                                         "(>=, >, <=, <), not both", param_hint=option)
            out[name] = {**(held or {}), _BOUNDS[op]: value}  # type: ignore[dict-item]
    return {k: (v[0] if isinstance(v, list) and len(v) == 1 else v)
            for k, v in out.items()} or None


__all__ = ["HELP", "NOT_HELP", "to_filter"]
