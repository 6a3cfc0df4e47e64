"""One PostgreSQL database, several indexes: each collection's store in its own schema.

A collection's store URL is the database's URL with the libpq option
``-c search_path="kb_<name>"`` added (``schema_url``), so every connection of that store
(the pooled engine, the writer lock's connection, any tool given the URL) sees only that
schema: every table, the Alembic version table, and 0006's trigger and functions are
created and found there without a single SQL statement naming a schema. The schema is not
on the path of another collection's URL, so no row of one collection can be read through
another's (decision 0043).

The ``pg_trgm`` extension is one per database: it lives in ``public`` (where a one-folder
store always put it) and is created there, once, before a schema's first migration. Its
operator class is only named while migrating, so only a migration puts ``public`` on the
search path (after the collection's schema, with Alembic's version table pinned to the
collection's schema so it is never found in ``public``).

A URL without the option is today's store in the default schema: nothing changes for it.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from kbmcp_core.errors import ConfigError

if TYPE_CHECKING:
    from sqlalchemy.engine import URL, Connection

__all__ = [
    "EXTENSION_SCHEMA",
    "create_schema",
    "lock_name",
    "migration_search_path",
    "schema_exists",
    "schema_url",
    "url_schema",
    "without_schema",
]

#: Where ``pg_trgm`` lives for every schema of the database.
EXTENSION_SCHEMA = "public"
#: A schema kb-mcp names: lower-case letters, digits, ``_`` and ``-``, at most 63 bytes
#: (PostgreSQL cuts longer identifiers, which could make two collections one schema).
_SCHEMA = re.compile(r"[a-z0-9_][a-z0-9_-]{0,62}")
_OPTION = re.compile(r'-c\s*search_path="([a-z0-9_][a-z0-9_-]{0,62})"')
#: The migrations' lock key (migrations/env.py): creating a schema takes it too, so two
#: processes creating one schema (or the extension) at once do not collide.
_MIGRATION_LOCK = 0x6B626D63702D6D69


def _check(schema: str) -> str:
    if not isinstance(schema, str) or not _SCHEMA.fullmatch(schema):
        raise ConfigError(
            f"{schema!r} cannot name a PostgreSQL schema: use at most 63 lower-case letters, "
            "digits, '_' and '-' (a collection's schema is kb_<name>, so its name may have "
            "at most 60 characters on PostgreSQL)"
        )
    return schema


def quoted(schema: str) -> str:
    """``schema`` as a SQL identifier (always quoted: ``-`` is allowed in names)."""
    return f'"{_check(schema)}"'


def schema_url(database_url: str, schema: str) -> str:
    """``database_url`` whose connections see only ``schema`` (its tables, its version
    table, its functions): the libpq ``options`` parameter gains
    ``-c search_path="<schema>"``, after any options the URL already had.

    ``ConfigError`` for a name PostgreSQL would cut or misread, or a URL that is not
    PostgreSQL."""
    from sqlalchemy.engine import make_url

    _check(schema)
    try:
        parsed = make_url(database_url.strip())
    except Exception:
        parsed = None
    if parsed is None or parsed.drivername.partition("+")[0] not in ("postgresql", "postgres"):
        raise ConfigError("only a PostgreSQL database_url holds collections in schemas")
    given = parsed.query.get("options")
    before = (given[-1] if isinstance(given, tuple) else given) or ""
    before = _OPTION.sub("", before).strip()
    option = f'-c search_path="{schema}"'
    query = dict(parsed.query)
    query["options"] = f"{before} {option}" if before else option
    return parsed.set(query=query).render_as_string(hide_password=False)


def url_schema(url: str | URL) -> str | None:
    """The schema ``schema_url`` pinned ``url`` to, or None for the default schema."""
    from sqlalchemy.engine import make_url

    try:
        given = make_url(url).query.get("options")
    except Exception:
        return None
    text = (given[-1] if isinstance(given, tuple) else given) or ""
    found = _OPTION.findall(text)
    return found[-1] if found else None


def without_schema(url: URL) -> URL:
    """``url`` without the search path ``schema_url`` added (other options kept)."""
    given = url.query.get("options")
    text = _OPTION.sub("", (given[-1] if isinstance(given, tuple) else given) or "").strip()
    query = {key: value for key, value in url.query.items() if key != "options"}
    if text:
        query["options"] = text
    return url.set(query=query)


def lock_name(base: str, url: str) -> str:
    """The name of a per-store advisory lock: ``base`` for the default schema (every
    kb-mcp version agrees on it), ``base`` and the schema for a collection's."""
    schema = url_schema(url)
    return base if schema is None else f"{base} {schema}"


def lock_key(name: str) -> int:
    """A lock name's key: the first 8 bytes of its SHA-256, as a signed 64-bit integer."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def schema_exists(conn: Connection, schema: str) -> bool:
    """Whether ``schema`` exists in the database behind ``conn``."""
    from sqlalchemy import text

    sql = text("SELECT 1 FROM pg_namespace WHERE nspname = :name")
    return conn.execute(sql, {"name": schema}).first() is not None


def create_schema(conn: Connection, schema: str) -> None:
    """Create ``schema`` (inside ``conn``'s transaction, serialised with migrations)."""
    from sqlalchemy import text

    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
    conn.execute(text(f"CREATE SCHEMA IF NOT EXISTS {quoted(schema)}"))


def migration_search_path(conn: Connection) -> str | None:
    """On a collection's connection: make sure ``pg_trgm`` exists (once per database, in
    ``EXTENSION_SCHEMA``, even when an operator created the collection's schema), put the
    schema holding it after the collection's own on the search path for this transaction
    (the migrations name its operator class), and return the collection's schema, where
    Alembic must keep its version table. None (nothing changed) for the default schema or
    SQLite."""
    from sqlalchemy import text

    if conn.dialect.name != "postgresql":
        return None
    schema = url_schema(conn.engine.url)
    if schema is None:
        return None
    where = text("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
                 "ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'")
    found = conn.execute(where).scalar()
    if found is None:
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
        conn.execute(text(f'CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA "{EXTENSION_SCHEMA}"'))
        found = conn.execute(where).scalar()
    path = quoted(schema) if found in (None, schema) else f'{quoted(schema)}, "{found}"'
    conn.execute(text(f"SET LOCAL search_path TO {path}"))
    return schema
