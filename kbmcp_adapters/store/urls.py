"""Which database URLs the index store accepts: the check shared by config and the store."""

from __future__ import annotations

from kbmcp_core.errors import ConfigError

__all__ = ["check_database_url"]

_SQLITE_EXAMPLE = 'database_url = "sqlite:////absolute/path/index.db"'


def check_database_url(url: object) -> None:
    """``ConfigError`` naming ``database_url`` unless it is a SQLite URL naming a file:
    the only index store kb-mcp supports for now."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    if not isinstance(url, str) or not url.strip():
        raise ConfigError(f"database_url must be a SQLite URL such as {_SQLITE_EXAMPLE}")
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        raise ConfigError(
            f"database_url {url[:80]!r} is not a database URL; only SQLite is supported for "
            f"now, e.g. {_SQLITE_EXAMPLE} (or leave it out: the index folder holds one)"
        ) from None
    backend, driver = parsed.get_backend_name(), parsed.get_driver_name()
    if backend != "sqlite" or driver != "pysqlite":
        raise ConfigError(
            f"database_url uses {parsed.drivername!r}, but only SQLite is supported for now; "
            f"use {_SQLITE_EXAMPLE} or leave database_url out"
        )
    database = parsed.database or ""
    if database in ("", ":memory:") or database.startswith("file:") or parsed.query:
        raise ConfigError(
            f"database_url must name a SQLite database file, as in {_SQLITE_EXAMPLE} "
            "(an in-memory database or URI options cannot hold an index)"
        )
