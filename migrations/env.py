"""Alembic environment: migrates over the connection handed in by
``kbmcp_adapters.store.alembic_runner``."""

from __future__ import annotations

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection

from kbmcp_adapters.store.tables import is_fts_name, metadata


def _include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """Autogenerate ignores the FTS5 virtual tables and their shadow tables."""
    return not (type_ == "table" and is_fts_name(name))


#: The advisory lock key that serialises migrations of one PostgreSQL database
#: ("kbmcp-mi" as a 64-bit integer); distinct from the writer lock's key.
PG_MIGRATION_LOCK = 0x6B626D63702D6D69


def _run(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        # Two processes opening one new database at once: the second waits here until the
        # first commits, then (READ COMMITTED) sees its alembic_version and does nothing.
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                           {"key": PG_MIGRATION_LOCK})
    context.configure(
        connection=connection,
        target_metadata=metadata,
        include_name=_include_name,
        render_as_batch=False,
        # a collection's schema on PostgreSQL (kbmcp_adapters.store.pg_schema); None: default
        version_table_schema=context.config.attributes.get("version_table_schema"),
    )
    with context.begin_transaction():
        context.run_migrations()


def _main() -> None:
    connection = context.config.attributes.get("connection")
    if not isinstance(connection, Connection):
        raise RuntimeError(
            "kb-mcp migrations run through kbmcp_adapters.store.alembic_runner, which passes "
            "a connection"
        )
    _run(connection)


_main()
