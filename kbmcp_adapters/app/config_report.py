"""What ``kb-mcp config`` shows: each key's effective value, never a secret, and its source."""

from __future__ import annotations

from typing import Any

from kbmcp_adapters.app.config import Resolved
from kbmcp_core.settings import public_uri
from kbmcp_core.settings_keys import SCHEMA


def effective(resolved: Resolved) -> list[tuple[str, Any, str]]:
    """``(key, value, source)`` for every declared key, in the schema's order; the value
    as JSON can carry it."""
    return [(key.dotted, _shown(key.field, getattr(resolved.settings, key.field)),
             resolved.sources[key.field]) for key in SCHEMA.keys]


def _shown(field: str, value: Any) -> Any:
    if field == "database_url" and value is not None:
        from kbmcp_adapters.store.urls import safe_url

        return safe_url(str(value))  # the password masked
    if field == "vectors_uri" and value is not None:
        return public_uri(str(value))
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if field == "vectors_storage_options":
        return {name: "***" for name in value}  # the names only: values may be secrets
    if field == "declared_fields":
        return dict(value)
    if field == "collections":
        return [spec.name for spec in value]
    if isinstance(value, tuple | list):
        return [str(v) for v in value]
    return str(value)


__all__ = ["effective"]
