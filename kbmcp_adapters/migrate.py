"""The index store's engine set-up and its Alembic migrations, run in code (no alembic.ini)."""

from __future__ import annotations

import functools
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import SQLAlchemyError

import migrations
from kbmcp_core.errors import IndexNotFound, StoreError

VERSION_TABLE = "alembic_version"
#: Execution option that makes a transaction start with BEGIN IMMEDIATE.
WRITE_OPTION = "kb_write"
_PRAGMAS = ("busy_timeout=10000", "journal_mode=WAL", "foreign_keys=ON", "synchronous=NORMAL")


# -- engine ------------------------------------------------------------------------


def _on_connect(dbapi_connection: Any, _record: object) -> None:
    # SQLAlchemy, not the sqlite3 module, emits BEGIN (see _on_begin).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    for pragma in _PRAGMAS:
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def _on_begin(connection: Connection) -> None:
    # A writer takes the write lock up front, so a second writer waits (busy_timeout)
    # instead of failing when a read transaction tries to upgrade to a write.
    write = connection.get_execution_options().get(WRITE_OPTION, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def make_engine(url: str) -> Engine:
    """An engine whose connections use WAL, a 10 s busy timeout and foreign keys."""
    engine = create_engine(url)
    event.listen(engine, "connect", _on_connect)
    event.listen(engine, "begin", _on_begin)
    return engine


def sqlite_file(url: str) -> Path | None:
    """The database file of a SQLite URL, or None for memory or non-SQLite URLs."""
    parsed = make_url(url)
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    return None if database.startswith("file:") else Path(database)


@contextmanager
def translated() -> Iterator[None]:
    """Turn database and migration failures into ``StoreError``."""
    try:
        yield
    except (SQLAlchemyError, sqlite3.Error) as exc:
        reason = getattr(exc, "orig", None) or exc
        raise StoreError(f"index store error: {reason}") from exc
    except CommandError as exc:
        raise StoreError(f"the index schema cannot be migrated: {exc}") from exc


def open_engine(url: str, create: bool) -> Engine:
    """The engine for ``url``; ``IndexNotFound`` (creating nothing) unless ``create``."""
    location = sqlite_file(url)
    if location is not None and not location.exists():
        if not create:
            raise IndexNotFound(str(location))
        location.parent.mkdir(parents=True, exist_ok=True)
    with translated():
        return make_engine(url)


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A connection inside a BEGIN IMMEDIATE transaction, committed on success."""
    with translated(), engine.connect() as conn:
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            yield conn


# -- alembic -------------------------------------------------------------------------


def script_location() -> Path:
    """The directory of the ``migrations`` package, wherever it is installed.

    ``__path__`` (not ``__file__``) so that an editable install that maps the package as
    a namespace package resolves too.
    """
    return Path(next(iter(migrations.__path__))).resolve()


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config built in code; Alembic's own output goes to stderr."""
    config = Config(stdout=sys.stderr)
    config.set_main_option("script_location", str(script_location()))
    config.set_main_option("path_separator", "os")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def upgrade(connection: Connection, revision: str = "head") -> None:
    """Migrate the database behind ``connection`` to ``revision`` (inside its transaction)."""
    command.upgrade(alembic_config(connection), revision)


def downgrade(connection: Connection, revision: str) -> None:
    """Migrate the database behind ``connection`` down to ``revision``."""
    command.downgrade(alembic_config(connection), revision)


@functools.cache
def head_revision() -> str:
    """The newest revision shipped with this version of kb-mcp."""
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
        with write_transaction(engine) as conn:
            upgrade(conn, revision)
    finally:
        engine.dispose()


def schema_revision(url: str) -> str | None:
    """The revision of an existing index, read without migrating it."""
    engine = open_engine(url, create=False)
    try:
        with translated(), engine.connect() as conn:
            return current_revision(conn)
    finally:
        engine.dispose()
