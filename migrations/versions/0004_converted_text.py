"""Add ``converted_text``: the text a read serves for a converted document, by content hash.

An index run that converts an HTML, Office, EPUB or PDF file keeps the text a read would
serve (cut at the 1 MiB read cap) under the sha256 of the bytes it was made from, so a
read hashes the file and serves the kept text instead of converting it again
(docs/decisions/0023). ``ix_documents_content_hash`` lets a write find whether any document
still carries a hash before it drops that hash's text. Nothing to backfill here: a read
of a document without a kept text converts it, and the next full index run fills it in.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "converted_text",
        sa.Column("content_hash", sa.Text(), primary_key=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("chars", sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
                  nullable=False),
    )
    op.create_index("ix_documents_content_hash", "documents", ["content_hash"])


def downgrade() -> None:
    op.drop_index("ix_documents_content_hash", table_name="documents")
    op.drop_table("converted_text")
