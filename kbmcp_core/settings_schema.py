"""The settings schema's shape: one ``Key`` per config key, its check, and the lookups.

A key is declared once (``settings_keys.KEYS``) with its TOML table and name, the
``Settings`` attribute it fills, the TOML types it takes, its default, its bounds, a doc
line and whether a config file found by looking may set it (the trust gate, decision
0021). The reader, the checks, the layering, the trust gate, ``kb-mcp trust --help``,
``docs/configuration.md``'s key tables, ``kb-mcp init``'s template, the CLI defaults and
``kb-mcp config`` are derived from the declarations (decision 0050).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kbmcp_core.errors import ConfigError

#: How a value is read: as it is, a path (relative to the file's folder), a list of
#: strings, a table of options, or a table or array of tables with its own reader.
Form = Literal["value", "path", "strings", "options", "fields", "collections"]
#: When a found config that is not trusted may not set the key: never (""), whatever
#: the value ("always"), above its default or turned off ("loosened"), or as a named
#: check decides ("checked": ``kb_path``, ``index_dir``, ``embedding.model``).
Gate = Literal["", "always", "loosened", "checked"]


@dataclass(frozen=True, slots=True)
class Key:
    """One config key: where it is written, what it fills, what it takes, what it means."""

    section: str
    name: str
    #: the ``Settings`` attribute it fills
    field: str
    types: tuple[type, ...]
    default: Any
    doc: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    form: Form = "value"
    gate: Gate = ""
    #: why a found config may not set it on its own (``docs/configuration.md``'s trust table)
    why: str = ""
    #: how the trust help names the gate when it is not the key alone
    gated_as: str = ""
    #: the default as the docs show it, when the value alone would mislead
    shown: str = ""
    #: the comment of ``kb-mcp init``'s template; empty: the key is not in the template
    hint: str = ""
    #: a value the template shows when the default is none
    example: str = ""
    #: a special check beyond type and bounds, named (``kbmcp_adapters.app.config_checks``)
    hook: str = ""
    #: what an out-of-bounds value is told it must be, when the bounds alone say it badly
    must: str = ""

    @property
    def dotted(self) -> str:
        """``section.name`` (``name`` at the top level), as the docs and errors write it."""
        return f"{self.section}.{self.name}" if self.section else self.name

    @property
    def label(self) -> str:
        """``[section].name``, as messages name a key."""
        return f"[{self.section}].{self.name}" if self.section else self.name

    def check(self, value: object, where: str = "") -> None:
        """``ConfigError`` unless ``value`` is of a type, within the bounds and among the
        choices the key takes (None: unset, always accepted). ``where``: ``in FILE``."""
        if value is None:
            return
        at, where = self.label, f" ({where})" if where else ""
        if isinstance(value, bool) and bool not in self.types:
            raise ConfigError(f"{at} must be {self.types[0].__name__}, not a boolean{where}")
        if self.form == "value" and not isinstance(value, self.types):
            raise ConfigError(f"{at} must be {self.types[0].__name__}{where}")
        if self.choices and value not in self.choices:
            raise ConfigError(f"{at} must be one of {', '.join(self.choices)}, got "
                              f"{value!r}{where}")
        if (self.low is None and self.high is None) or not isinstance(value, int | float):
            return
        if self.high is None:
            if self.low is not None and value < self.low:
                raise ConfigError(f"{at} must be at least {_number(self.low)}, got "
                                  f"{value!r}{where}")
        elif not (self.low or 0) <= value <= self.high:
            # a fraction (bounds written as floats) is "between"; a count "from ... to"
            span = self.must or (
                f"between {self.low:g} and {self.high:g}" if isinstance(self.high, float)
                else f"from {_number(self.low or 0)} to {_number(self.high)}")
            raise ConfigError(f"{at} must be {span}, got {value!r}{where}")

    def loosened(self, value: object) -> bool:
        """True when ``value`` weakens a protection: a limit raised above its default, or
        a protection that is on by default turned off."""
        if isinstance(self.default, bool):
            return self.default and value is False
        return isinstance(value, int | float) and value > self.default


def _number(value: float) -> str:
    return f"{value:,}" if float(value) != int(value) else f"{int(value):,}"


class Schema:
    """The declared keys, looked up by ``Settings`` attribute or by table and name."""

    def __init__(self, keys: tuple[Key, ...]) -> None:
        self.keys = keys
        self.by_field = {k.field: k for k in keys}
        self.by_place = {(k.section, k.name): k for k in keys}
        self.sections = tuple(dict.fromkeys(k.section for k in keys if k.section))
        if len(self.by_field) != len(keys) or len(self.by_place) != len(keys):
            raise ValueError("a settings key is declared twice")

    def default(self, field: str) -> Any:
        """The declared default of the key filling ``field``."""
        return self.by_field[field].default

    def key(self, section: str, name: str) -> Key | None:
        return self.by_place.get((section, name))

    def dotted(self, field: str) -> str:
        """A ``Settings`` attribute's key as written in a config file (else the name)."""
        key = self.by_field.get(field)
        return key.dotted if key is not None else field

    def check(self, values: Mapping[str, Any]) -> None:
        """Type, bounds and choices of every value given (``Settings`` attributes)."""
        for field, value in values.items():
            key = self.by_field.get(field)
            if key is not None:
                key.check(value)

    def gated(self) -> tuple[Key, ...]:
        """The keys a found config may not set on its own, in declaration order."""
        return tuple(k for k in self.keys if k.gate)

    def gate_names(self) -> list[str]:
        """How ``kb-mcp trust --help`` and the template name the gates: each key that
        needs trust whatever its value (or where it points), then the limits that need it
        only when raised above their defaults, as one phrase."""
        raised = [k.dotted for k in self.gated()
                  if k.gate == "loosened" and not isinstance(k.default, bool)]
        names = [k.gated_as or k.dotted for k in self.gated() if k.dotted not in raised]
        return [*names, f"{', '.join(raised)} above their defaults"]


__all__ = ["Form", "Gate", "Key", "Schema"]
