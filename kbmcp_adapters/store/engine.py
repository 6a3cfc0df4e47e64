"""Opening the index store's database: SQLite and PostgreSQL engines, read-only opening,
pragmas, the integrity check, and driver failures translated into kb-mcp errors."""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.exc import OperationalError as SAOperationalError
from sqlalchemy.pool import NullPool

from kbmcp_adapters.store.pg_schema import create_schema, schema_exists, url_schema
from kbmcp_adapters.store.urls import (
    is_postgresql,
    normalized_url,
    safe_url,
    store_location,
)
from kbmcp_core.errors import (
    IndexNotFound,
    IndexReadOnly,
    StoreCorrupt,
    StoreError,
    StoreFailed,
    StoreUnreachable,
)

log = logging.getLogger(__name__)

#: The table Alembic keeps the schema revision in: where it exists, kb-mcp has indexed.
VERSION_TABLE = "alembic_version"
#: Execution option that makes a transaction start with BEGIN IMMEDIATE.
WRITE_OPTION = "kb_write"
_PRAGMAS = ("busy_timeout=10000", "journal_mode=WAL", "foreign_keys=ON", "synchronous=NORMAL")
#: A read-only connection changes nothing, not even the journal mode.
_READ_ONLY_PRAGMAS = ("busy_timeout=10000", "foreign_keys=ON", "query_only=ON")
#: SQLite primary result codes (the low byte of ``sqlite_errorcode``).
SQLITE_READONLY = 8
SQLITE_INTERRUPT = 9
SQLITE_CORRUPT = 11
SQLITE_CANTOPEN = 14
SQLITE_NOTADB = 26
_DAMAGED = frozenset({SQLITE_CORRUPT, SQLITE_NOTADB})
_READ_ONLY_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
#: Seconds a PostgreSQL connection attempt may take before it is an error.
PG_CONNECT_TIMEOUT_S = 10
#: SQLSTATEs of a PostgreSQL write this user may not make: a read-only transaction or
#: server (hot standby), and a missing privilege.
_PG_READ_ONLY_STATES = frozenset({"25006", "42501"})


def _on_connect(dbapi_connection: Any, _record: object) -> None:
    _set_up(dbapi_connection, _PRAGMAS)


def _on_connect_read_only(dbapi_connection: Any, _record: object) -> None:
    _set_up(dbapi_connection, _READ_ONLY_PRAGMAS)


def _set_up(dbapi_connection: Any, pragmas: tuple[str, ...]) -> None:
    # SQLAlchemy, not the sqlite3 module, emits BEGIN (see _on_begin).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    for pragma in pragmas:
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def _on_begin(connection: Connection) -> None:
    # A writer takes the write lock up front, so a second writer waits (busy_timeout)
    # instead of failing when a read transaction tries to upgrade to a write.
    write = connection.get_execution_options().get(WRITE_OPTION, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def make_engine(url: str) -> Engine:
    """SQLite: an engine whose connections use WAL, a 10 s busy timeout and foreign keys.
    PostgreSQL: a pooled psycopg 3 engine that checks a connection before reusing it (a
    server restart costs one reconnect, not a failed request)."""
    if is_postgresql(url):
        return create_engine(normalized_url(url), pool_pre_ping=True,
                             connect_args={"connect_timeout": PG_CONNECT_TIMEOUT_S})
    engine = create_engine(url)
    event.listen(engine, "connect", _on_connect)
    event.listen(engine, "begin", _on_begin)
    return engine


def read_only_engine(db: Path) -> Engine:
    """An engine that reads ``db`` and never writes, creates or touches anything beside it:
    for an index this user may not write, and for ``serve --read-only``.

    Each connection is opened when needed (no pool). While a writer has the index open
    (its ``-wal`` and ``-shm`` files exist), ``mode=ro&readonly_shm=1`` reads through the
    WAL and sees the writer's latest commits without writing the shared-memory file (a
    read lock keeps the writer from checkpointing under the reader). With no writer, the
    last one checkpointed the file and removed both when it closed, and ``immutable=1``
    reads the file as it is; ``mode=ro`` would create the two files there. A writer that
    starts later creates them, and the next connection reads through them.

    The trade-off (decision 0011): a writer that starts *during* one ``immutable`` read
    and checkpoints before that read ends could show it a page of the new state; a read
    takes milliseconds and a writer's first checkpoint comes after a thousand pages or at
    its close. And a writer closing just between the look for its files and the open can
    leave an empty ``index.db-wal`` behind (SQLite ignores an empty one).
    """
    with translated(db):
        _connect_read_only(db).close()  # a damaged or unreadable file fails here, once

    def connect() -> sqlite3.Connection:
        return _connect_read_only(db)

    engine = create_engine("sqlite://", creator=connect, poolclass=NullPool)
    event.listen(engine, "connect", _on_connect_read_only)
    event.listen(engine, "begin", _on_begin)
    return engine


def is_read_only(engine: Engine) -> bool:
    """Whether this process may not write through ``engine``: SQLite opened by
    ``read_only_engine``; PostgreSQL a standby, a read-only default, or no right to write
    the chunks table."""
    if engine.dialect.name != "postgresql":
        return event.contains(engine, "connect", _on_connect_read_only)
    sql = ("SELECT pg_is_in_recovery() OR current_setting('default_transaction_read_only') = "
           "'on' OR (to_regclass('chunks') IS NOT NULL AND NOT "
           "has_table_privilege('chunks', 'INSERT, UPDATE, DELETE'))")
    with translated(location=safe_url(engine.url)), engine.connect() as conn:
        return bool(conn.execute(text(sql)).scalar())


def _connect_read_only(db: Path) -> sqlite3.Connection:
    base = "file:" + quote(str(db))
    live = all(os.path.exists(f"{db}{suffix}") for suffix in ("-wal", "-shm"))
    for query in ("mode=ro&readonly_shm=1", "immutable=1")[0 if live else 1:]:
        conn = sqlite3.connect(f"{base}?{query}", uri=True, check_same_thread=False)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            conn.close()
            if sqlite_code(exc) in (SQLITE_READONLY, SQLITE_CANTOPEN):
                continue
            raise
        log.debug("reading %s read-only (%s)", db, query)
        return conn
    raise IndexReadOnly(str(db.parent), "SQLite cannot open the database file read-only")


def writable(db: Path) -> bool:
    """Whether this process may write ``db`` and create its WAL files beside it."""
    return os.access(db, os.W_OK) and os.access(db.parent, os.W_OK | os.X_OK)


def sqlite_code(exc: BaseException) -> int | None:
    """The primary SQLite result code behind ``exc`` (SQLAlchemy wraps it in ``orig``)."""
    orig = getattr(exc, "orig", None) or exc
    code = getattr(orig, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


def rebuild_hint(db: Path) -> str:
    """What to delete so that ``kb-mcp index`` rebuilds a damaged store from the files."""
    return f"{db} (and {db.name}-wal, {db.name}-shm beside it, if present)"


def sqlite_file(url: str) -> Path | None:
    """The database file of a SQLite URL, or None for a PostgreSQL one
    (``StoreLocation.path``)."""
    return store_location(url).path


def _one_line(reason: object) -> str:
    """A driver message as one line: PostgreSQL's come with hints on further lines."""
    first = str(reason).strip().splitlines()[0] if str(reason).strip() else "unknown error"
    return " ".join(first.replace("FATAL:", "").split())


def pg_connect_failure(location: str, reason: object) -> StoreUnreachable:
    """The one sentence for a PostgreSQL server that cannot be reached or refuses us."""
    message = _one_line(reason)
    message = message.rsplit(" failed: ", 1)[-1] if " failed: " in message else message
    lowered = message.lower()
    if "password" in lowered or "authentication" in lowered:
        hint = "check the user and password (database_url, PGPASSWORD or ~/.pgpass)"
    elif "does not exist" in lowered and "database" in lowered:
        hint = "create the database (createdb) or fix the name in database_url"
    else:
        hint = "check that the server runs and that host and port in database_url are right"
    return StoreUnreachable(f"cannot connect to the PostgreSQL index store at {location} "
                      f"({message}): {hint}")


def _pg_state(exc: BaseException) -> str | None:
    orig = getattr(exc, "orig", None) or exc
    state = getattr(orig, "sqlstate", None)
    return None if state is None else str(state)


def _pg_connection_state(state: str | None, exc: BaseException) -> bool:
    """Whether a PostgreSQL error is about the connection, not the statement: no SQLSTATE
    on an OperationalError (libpq failed before the server answered), a connection
    exception (08), an authorization failure (28), a missing database (3D000) or a
    server shutting down (57P)."""
    if state is None:
        return isinstance(exc, SAOperationalError)
    return state.startswith(("08", "28", "57P")) or state == "3D000"


@contextmanager
def translated(db: Path | None = None, location: str | None = None) -> Iterator[None]:
    """Turn database and migration failures into ``StoreError``: ``StoreCorrupt`` for a
    damaged file, ``IndexReadOnly`` for a write to a store this user may not write.

    ``location`` (a PostgreSQL URL with its password hidden) marks a PostgreSQL store:
    its messages are one line, and a connection failure says what to check."""
    try:
        yield
    except (SQLAlchemyError, sqlite3.Error) as exc:
        reason = getattr(exc, "orig", None) or exc
        if location is not None:
            state = _pg_state(exc)
            if state in _PG_READ_ONLY_STATES:
                raise IndexReadOnly(location, _one_line(reason)) from None
            lost = isinstance(exc, DBAPIError) and exc.connection_invalidated
            if lost or _pg_connection_state(state, exc):
                raise pg_connect_failure(location, reason) from None
            raise StoreFailed(f"index store error: {_one_line(reason)}") from None
        code = sqlite_code(exc)
        if code in _DAMAGED:
            where = rebuild_hint(db) if db is not None else "the index database file"
            raise StoreCorrupt(where, str(reason)) from None
        if code == SQLITE_READONLY:
            folder = str(db.parent) if db is not None else "the index database"
            raise IndexReadOnly(folder, str(reason)) from None
        raise StoreError(f"index store error: {reason}") from exc


def open_engine(url: str, create: bool, *, read_only: bool = False) -> Engine:
    """The engine for ``url``; ``IndexNotFound`` (creating nothing) unless ``create``.

    An existing index this process may not write opens read-only for readers
    (``create=False``); a writer (``create=True``) gets ``IndexReadOnly`` instead.
    ``read_only``: a SQLite index opens read-only even when this process may write it.
    """
    if is_postgresql(url):
        return _open_pg_engine(url, create)
    location = sqlite_file(url)
    if read_only and location is not None:
        if create:
            raise IndexReadOnly(str(location.parent), "opened read-only")
        if not location.exists():
            raise IndexNotFound(str(location))
        return read_only_engine(location)
    if location is not None and not location.exists():
        if not create:
            raise IndexNotFound(str(location))
        try:
            location.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if exc.errno not in _READ_ONLY_ERRNOS:
                raise
            raise IndexReadOnly(str(location.parent),
                                f"cannot create the folder: {exc.strerror}",
                                IndexReadOnly.NO_FOLDER) from None
    elif location is not None and not writable(location):
        if create:
            raise IndexReadOnly(str(location.parent), "no write permission")
        return read_only_engine(location)
    with translated(location):
        return make_engine(url)


def _open_pg_engine(url: str, create: bool) -> Engine:
    """A PostgreSQL engine, connected once so that a wrong host, password or database
    name fails here with one sentence; ``IndexNotFound`` for a database kb-mcp never
    indexed into unless ``create`` (the database itself must exist: kb-mcp creates
    tables, not databases). A collection's URL (``pg_schema.schema_url``) sees only its
    schema, which ``create`` makes (and a reader never does)."""
    where = safe_url(url)
    engine = make_engine(url)
    schema = url_schema(url)
    try:
        with translated(location=where), engine.connect() as conn:
            if schema is not None and not schema_exists(conn, schema):
                # a collection's schema: made by its first writer, never by a reader
                if not create:
                    raise IndexNotFound(where)
                create_schema(conn, schema)
                conn.commit()
            if not create and not inspect(conn).has_table(VERSION_TABLE):
                raise IndexNotFound(where)
    except BaseException:
        engine.dispose()
        raise
    return engine


def pg_location(url: str) -> str | None:
    """A PostgreSQL store's URL as messages show it (password hidden); None for SQLite."""
    location = store_location(url)
    return location.public if location.is_postgresql else None


@contextmanager
def write_transaction(
    engine: Engine, db: Path | None = None, location: str | None = None
) -> Iterator[Connection]:
    """A connection inside a write transaction (SQLite: BEGIN IMMEDIATE), committed on
    success."""
    with translated(db, location), engine.connect() as conn:
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            yield conn


def quick_check(engine: Engine, db: Path | None, budget_s: float, most: int) -> list[str] | None:
    """``PRAGMA quick_check`` (every page and b-tree, not index contents), stopped by a
    progress handler once ``budget_s`` has passed: [] when healthy, at most ``most`` of
    SQLite's findings, or None when it did not finish in time. Reads only; about 0.2 s per
    150 MB warm.

    PostgreSQL has no such check to run: its server owns the pages, checksums them when
    the cluster has checksums on, and reports damage as an error on the query that meets
    it. There is nothing for kb-mcp to find, so the answer is []:
    no problems found, never a check pretended."""
    if engine.dialect.name != "sqlite":
        return []
    deadline = time.monotonic() + budget_s

    def over_time() -> int:
        return int(time.monotonic() > deadline)

    try:
        with engine.connect() as conn:
            raw: Any = conn.connection.dbapi_connection
            raw.set_progress_handler(over_time, 10_000)
            try:
                rows = raw.execute(f"PRAGMA quick_check({int(most)})").fetchall()
            finally:
                raw.set_progress_handler(None, 0)
    except (sqlite3.Error, DBAPIError) as exc:
        code = sqlite_code(exc)
        if code == SQLITE_INTERRUPT:
            return None
        if code in _DAMAGED:
            return [str(getattr(exc, "orig", None) or exc)]
        with translated(db):
            raise
    found = [str(row[0]) for row in rows]
    return [] if found == ["ok"] else found
