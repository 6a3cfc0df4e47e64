"""Add documents.size_bytes (NULL until the next index run records it) and its index.

Revision ID: 0002
Revises: 0001
Create Date: 2026-01-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A plain ADD COLUMN: no table rebuild, so chunk rows (and their ids) are untouched.
    # BIGINT on PostgreSQL (a file may pass 2 GiB); INTEGER, already 64-bit, on SQLite.
    size = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.add_column("documents", sa.Column("size_bytes", size, nullable=True))
    op.create_index("ix_documents_size_bytes", "documents", ["size_bytes"])


def downgrade() -> None:
    op.drop_index("ix_documents_size_bytes", table_name="documents")
    # SQLite >= 3.35 drops a column in place; a batch rebuild would cascade-delete chunks.
    op.execute("ALTER TABLE documents DROP COLUMN size_bytes")
