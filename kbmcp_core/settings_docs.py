"""Text derived from the settings schema: ``docs/configuration.md``'s key and trust tables,
the keys ``kb-mcp trust --help`` lists, and values as help, docs and templates show them.

``python -m kbmcp_core.settings_docs`` prints the two tables; ``tests/unit/
test_settings_schema.py`` fails when the page's copy differs (decision 0050).
"""

from __future__ import annotations

import json

from kbmcp_core.settings_keys import SCHEMA
from kbmcp_core.settings_schema import Key

#: The markers around each generated table in ``docs/configuration.md``.
KEYS_BEGIN, KEYS_END = "<!-- keys: generated -->", "<!-- /keys -->"
TRUST_BEGIN, TRUST_END = "<!-- trust: generated -->", "<!-- /trust -->"


def shown_value(value: object) -> str:
    """A value as the help, the docs and ``kb-mcp config`` show it."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int):
        return f"{value:,}" if value >= 10_000 else str(value)
    if isinstance(value, tuple | list):
        return json.dumps([str(v) for v in value])
    return str(value)


def toml_value(value: object) -> str:
    """A TOML literal for the strings, numbers, booleans and string lists of the schema."""
    if isinstance(value, tuple | list):
        value = list(value)
    return json.dumps(value, ensure_ascii=False)


def _label(key: Key) -> str:
    if key.form == "fields":
        return "`fields.NAME`"
    if key.form == "collections":
        return "`[[collections]]`"
    return f"`{key.dotted}`"


def _default(key: Key) -> str:
    if key.shown:
        return key.shown
    text = shown_value(key.default)
    return f"`{text}`" if isinstance(key.default, str | tuple) and key.default else text


def _bounds(key: Key) -> str:
    if key.choices:
        return f" (one of {', '.join(f'`{c}`' for c in key.choices)})"
    if key.low is not None and key.high is not None:
        return f" ({shown_value(key.low)} to {shown_value(key.high)})"
    if key.low is not None:
        return f" (at least {shown_value(key.low)})"
    return ""


def key_table() -> str:
    """Every key: name, default, meaning with its bounds; the gated ones say so."""
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for key in SCHEMA.keys:
        gate = " **Needs trust** in a found file (see below)." if key.gate == "always" else ""
        rows.append(f"| {_label(key)} | {_default(key)} | {key.doc}{_bounds(key)}.{gate} |")
    return "\n".join(rows)


def trust_table() -> str:
    """The keys a found config may set only once trusted, and why."""
    rows = ["| key | why |", "|---|---|"]
    rows += [f"| `{key.gated_as or key.dotted}` | {key.why} |" for key in SCHEMA.gated()]
    return "\n".join(rows)


def gated_list() -> str:
    """The gated keys as one comma-separated phrase (``kb-mcp trust --help``, the template)."""
    return ", ".join(SCHEMA.gate_names())


def template_lines(section: str) -> list[tuple[str, str, str]]:
    """``(name, value, comment)`` of each key of ``section`` ``kb-mcp init`` writes as a
    commented line: the default, or an example when there is none."""
    return [(k.name, k.example or toml_value(k.default), k.hint)
            for k in SCHEMA.keys if k.section == section and k.hint]


def replace_between(text: str, begin: str, end: str, body: str) -> str:
    """``text`` with what lies between the markers ``begin`` and ``end`` made ``body``."""
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


if __name__ == "__main__":  # rewrite the tables of docs/configuration.md in place
    import sys
    from pathlib import Path

    page = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/configuration.md")
    text = page.read_text(encoding="utf-8")
    text = replace_between(text, KEYS_BEGIN, KEYS_END, key_table())
    text = replace_between(text, TRUST_BEGIN, TRUST_END, trust_table())
    page.write_text(text, encoding="utf-8")
