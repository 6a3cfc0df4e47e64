"""Initial schema: documents, chunks, index_meta and the two FTS5 lexical tables.

Revision ID: 0001
Revises:
Create Date: 2026-01-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "documents",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("path", sa.Text, nullable=False, unique=True),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("content_hash", sa.Text, nullable=False),
        sa.Column("date", sa.Text, nullable=True),
        sa.Column("topic", sa.Text, nullable=True),
        sa.Column("category", sa.Text, nullable=True),
        sa.Column("tags", sa.Text, nullable=False),
        sa.Column("metadata", sa.Text, nullable=False),
        sa.Column("last_indexed", sa.Text, nullable=False),
    )
    op.create_table(
        "chunks",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column(
            "document_id",
            sa.Integer,
            sa.ForeignKey("documents.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("ordinal", sa.Integer),
        sa.Column("heading", sa.Text),
        sa.Column("heading_path", sa.Text),
        sa.Column("content", sa.Text),
        sa.Column("content_hash", sa.Text),
        sa.Column("start_line", sa.Integer, nullable=True),
        sa.Column("end_line", sa.Integer, nullable=True),
        sa.Column("page", sa.Integer, nullable=True),
    )
    op.create_index("ix_chunks_document_id", "chunks", ["document_id"])
    op.create_index("ix_chunks_content_hash", "chunks", ["content_hash"])
    op.create_table(
        "index_meta",
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("value", sa.Text),
    )
    op.execute(
        "CREATE VIRTUAL TABLE fts_words USING fts5("
        "title, heading, body, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    op.execute(
        "CREATE VIRTUAL TABLE fts_grams USING fts5(title, heading, body, tokenize = 'trigram')"
    )


def downgrade() -> None:
    op.execute("DROP TABLE fts_grams")
    op.execute("DROP TABLE fts_words")
    op.drop_table("index_meta")
    op.drop_index("ix_chunks_content_hash", table_name="chunks")
    op.drop_index("ix_chunks_document_id", table_name="chunks")
    op.drop_table("chunks")
    op.drop_table("documents")
