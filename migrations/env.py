"""Alembic environment: migrates over the connection handed in by kbmcp_adapters.store.migrate."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from kbmcp_adapters.store.tables import is_fts_name, metadata


def _include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """Autogenerate ignores the FTS5 virtual tables and their shadow tables."""
    return not (type_ == "table" and is_fts_name(name))


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        include_name=_include_name,
        render_as_batch=False,
    )
    with context.begin_transaction():
        context.run_migrations()


def _main() -> None:
    connection = context.config.attributes.get("connection")
    if not isinstance(connection, Connection):
        raise RuntimeError(
            "kb-mcp migrations run through kbmcp_adapters.store.migrate, which passes a connection"
        )
    _run(connection)


_main()
