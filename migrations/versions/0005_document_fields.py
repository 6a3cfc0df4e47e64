"""Add ``document_fields``: the values of the front-matter keys declared in ``[fields]``.

One row per value (a list gives one per item), with the value in the column of its
declared type: ``value_text`` (folded with ``str.lower``), ``value_num`` or
``value_date`` (YYYY-MM-DD). Search filters on them (decision 0036). Nothing to backfill
here: an index has no declared fields recorded yet, so the next ``kb-mcp index`` with a
``[fields]`` table fills the rows from the stored front matter, without reading a file or
calling the model.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "document_fields",
        sa.Column("document_id", sa.Integer(),
                  sa.ForeignKey("documents.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("value_text", sa.Text(), nullable=True),
        sa.Column("value_num", sa.Float(), nullable=True),
        sa.Column("value_date", sa.Text(), nullable=True),
    )
    op.create_index("ix_document_fields_document_id", "document_fields", ["document_id"])
    op.create_index("ix_document_fields_text", "document_fields", ["name", "value_text"])
    op.create_index("ix_document_fields_num", "document_fields", ["name", "value_num"])
    op.create_index("ix_document_fields_date", "document_fields", ["name", "value_date"])


def downgrade() -> None:
    op.drop_table("document_fields")
