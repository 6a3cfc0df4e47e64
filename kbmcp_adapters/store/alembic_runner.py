"""The index store's schema revisions: Alembic run in code (no alembic.ini), the head
kb-mcp ships, the revision a database is at, and upgrade/downgrade."""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection

import kbmcp_migrations
from kbmcp_adapters.store.engine import (
    VERSION_TABLE,
    open_engine,
    pg_location,
    translated,
    write_transaction,
)
from kbmcp_adapters.store.pg_schema import migration_search_path
from kbmcp_core.errors import StoreError

if TYPE_CHECKING:  # Alembic is imported only to migrate: opening an index at head
    from alembic.config import Config  # (every search) does not pay for it


def script_location() -> Path:
    """The directory of the migration scripts (the checkout's ``migrations/`` folder,
    installed as the ``kbmcp_migrations`` package), wherever it is installed.

    ``__path__`` (not ``__file__``) so that an editable install that maps the package as
    a namespace package resolves too.
    """
    return Path(next(iter(kbmcp_migrations.__path__))).resolve()


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config built in code; Alembic's own output goes to stderr.

    On a collection's PostgreSQL connection (``pg_schema``) the migration's search path
    also reaches ``pg_trgm``, and the version table is pinned to the collection's schema."""
    from alembic.config import Config

    config = Config(stdout=sys.stderr)
    config.set_main_option("script_location", str(script_location()))
    config.set_main_option("path_separator", "os")
    if connection is not None:
        config.attributes["connection"] = connection
        config.attributes["version_table_schema"] = migration_search_path(connection)
    return config


#: Alembic keeps the running migration's context in module globals: one at a time per
#: process (across processes, SQLite's write lock or PostgreSQL's advisory lock serialise).
_ALEMBIC = threading.Lock()


def upgrade(connection: Connection, revision: str = "head") -> None:
    """Migrate the database behind ``connection`` to ``revision`` (inside its transaction)."""
    from alembic import command

    with _ALEMBIC, _migration_errors():
        command.upgrade(alembic_config(connection), revision)


def downgrade(connection: Connection, revision: str) -> None:
    """Migrate the database behind ``connection`` down to ``revision``."""
    from alembic import command

    with _ALEMBIC, _migration_errors():
        command.downgrade(alembic_config(connection), revision)


@contextmanager
def _migration_errors() -> Iterator[None]:
    from alembic.util import CommandError

    try:
        yield
    except CommandError as exc:
        raise StoreError(f"the index schema cannot be migrated: {exc}") from exc


def head_revision() -> str:
    """The newest revision shipped with this version of kb-mcp: the constant the
    migrations package declares (a test holds it equal to Alembic's own head, which
    ``script_head`` reads), so opening an index at head never imports Alembic."""
    declared = getattr(kbmcp_migrations, "HEAD", None)  # None: a namespace-package mapping
    return str(declared) if declared is not None else script_head()


@functools.cache
def script_head() -> str:
    """The head revision as Alembic computes it from the migration scripts."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise StoreError("the packaged migrations have no head revision")
    return head


def current_revision(connection: Connection) -> str | None:
    """The revision the database is at, or None for a database Alembic never touched."""
    if not inspect(connection).has_table(VERSION_TABLE):
        return None
    value = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
    return None if value is None else str(value)


def open_at_revision(url: str, revision: str) -> None:
    """Create (or migrate) the database at ``url`` to exactly ``revision``; for tests."""
    engine = open_engine(url, create=True)
    try:
        with write_transaction(engine, location=pg_location(url)) as conn:
            upgrade(conn, revision)
    finally:
        engine.dispose()


def schema_revision(url: str, *, read_only: bool = False) -> str | None:
    """The revision of an existing index, read without migrating it (``read_only``: as
    ``open_engine``)."""
    engine = open_engine(url, create=False, read_only=read_only)
    try:
        with translated(location=pg_location(url)), engine.connect() as conn:
            return current_revision(conn)
    finally:
        engine.dispose()
