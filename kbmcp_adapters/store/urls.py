"""Which database URLs the index store accepts: the check shared by config and the store.

Two backends: a SQLite file (the default, in the index folder) and PostgreSQL through
psycopg 3 (``postgresql+psycopg://user@host:port/db``; plain ``postgresql://`` and
``postgres://`` mean the same). Any message that shows a URL hides its password.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

from kbmcp_core.errors import ConfigError
from kbmcp_core.store_location import StoreLocation

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

__all__ = ["check_database_url", "is_postgresql", "normalized_url", "safe_url", "store_location"]

_SQLITE_EXAMPLE = 'database_url = "sqlite:////absolute/path/index.db"'
_PG_EXAMPLE = 'database_url = "postgresql+psycopg://user@host:5432/kb"'
#: Drivers written as a plain ``postgresql://`` (or ``postgres://``) URL: psycopg 3 serves them.
_PG_DEFAULT_DRIVERS = frozenset({"postgresql", "postgres"})


def _parse(url: object) -> URL:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    if not isinstance(url, str) or not url.strip():
        raise ConfigError(
            f"database_url must be a SQLite or PostgreSQL URL such as {_SQLITE_EXAMPLE} "
            f"or {_PG_EXAMPLE}"
        )
    try:
        return make_url(url.strip())
    except (ArgumentError, ValueError):
        raise ConfigError(
            "database_url is not a database URL; kb-mcp supports SQLite "
            f"({_SQLITE_EXAMPLE}, or leave it out: the index folder holds one) and "
            f"PostgreSQL ({_PG_EXAMPLE})"
        ) from None


def safe_url(url: str | URL) -> str:
    """``url`` for messages and logs: the password, if any, shown as ``***``; a
    collection's schema (``pg_schema.schema_url``) as `` (schema kb_name)`` after it."""
    from sqlalchemy.engine import make_url

    from kbmcp_adapters.store.pg_schema import url_schema, without_schema

    try:
        parsed = make_url(url)
        schema = url_schema(parsed)
        shown = without_schema(parsed).render_as_string(hide_password=True)
    except Exception:  # not a URL at all: show nothing of it
        return "the configured database_url"
    return shown if schema is None else f"{shown} (schema {schema})"


@functools.lru_cache(maxsize=256)
def store_location(url: str) -> StoreLocation:
    """``url`` parsed once into a ``StoreLocation`` (cached: the same text is never parsed
    twice). ``ConfigError`` for a URL ``check_database_url`` refuses."""
    from kbmcp_adapters.store.pg_schema import url_schema

    check_database_url(url)
    parsed = _parse(url)
    if parsed.drivername.partition("+")[0] in _PG_DEFAULT_DRIVERS:
        return StoreLocation("postgresql", url.strip(), safe_url(parsed),
                             schema=url_schema(parsed), has_password=parsed.password is not None)
    return StoreLocation("sqlite", url.strip(), safe_url(parsed),
                         path=Path(parsed.database or ""))


def normalized_url(url: str) -> str:
    """The URL the store opens: ``postgresql://`` and ``postgres://`` become
    ``postgresql+psycopg://`` (the driver kb-mcp ships); anything else as it is.
    ``ConfigError`` for a URL ``check_database_url`` refuses."""
    check_database_url(url)
    parsed = _parse(url)
    if parsed.drivername in _PG_DEFAULT_DRIVERS:
        parsed = parsed.set(drivername="postgresql+psycopg")
        return parsed.render_as_string(hide_password=False)
    return url.strip()


def is_postgresql(url: str) -> bool:
    """Whether ``url`` (already checked) names a PostgreSQL store."""
    return store_location(url).is_postgresql


def check_database_url(url: object) -> None:
    """``ConfigError`` naming ``database_url`` unless it is a SQLite URL naming a file or
    a PostgreSQL URL for psycopg 3."""
    parsed = _parse(url)
    # read from the name: asking SQLAlchemy for the driver loads it (and knows no "postgres")
    backend, _, driver = parsed.drivername.partition("+")
    if backend in _PG_DEFAULT_DRIVERS:
        if driver not in ("", "psycopg"):
            raise ConfigError(
                f"database_url {safe_url(parsed)} uses the {driver!r} driver; kb-mcp talks to "
                f"PostgreSQL through psycopg 3: write postgresql+psycopg:// as in {_PG_EXAMPLE}"
            )
        if not parsed.database:
            raise ConfigError(
                f"database_url {safe_url(parsed)} names no database; add one, as in "
                f"{_PG_EXAMPLE}"
            )
        return
    if backend != "sqlite" or driver not in ("", "pysqlite"):
        raise ConfigError(
            f"database_url uses {parsed.drivername!r}, but kb-mcp supports SQLite and "
            f"PostgreSQL only: use {_SQLITE_EXAMPLE} (or leave database_url out), or "
            f"{_PG_EXAMPLE}"
        )
    database = parsed.database or ""
    if database in ("", ":memory:") or database.startswith("file:") or parsed.query:
        raise ConfigError(
            f"database_url must name a SQLite database file, as in {_SQLITE_EXAMPLE} "
            "(an in-memory database or URI options cannot hold an index)"
        )
