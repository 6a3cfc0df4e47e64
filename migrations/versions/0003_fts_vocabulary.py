"""Add FTS5 vocabulary tables (fts5vocab, ``row`` kind) over both lexical tables on SQLite.

Each holds one row per indexed token with the number of chunks that contain it: the
coverage weighting of a search reads a term's document frequency there instead of reading
every posting of the term. Virtual tables over the existing indexes: nothing is copied,
nothing to backfill. PostgreSQL keeps its single ``lexical`` table: nothing changes.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = ("fts_words", "fts_grams")


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for table in _TABLES:
        op.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table}_vocab USING fts5vocab({table}, row)"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for table in _TABLES:
        op.execute(f"DROP TABLE IF EXISTS {table}_vocab")
