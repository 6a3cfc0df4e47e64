"""Initial schema: documents, chunks, index_meta and the lexical tables.

SQLite: two FTS5 tables (words with the porter stemmer, trigrams). PostgreSQL: one
``lexical`` table whose generated ``tsvector`` has a GIN index (English stemming, weights
per column) and a ``pg_trgm`` GIN index on the same text for CJK substring search. Chunk
ids are 62-bit integers the writer chooses (decision 0004): BIGINT on PostgreSQL; INTEGER
on SQLite, where that is 64-bit already and keeps the column the rowid.

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


#: A 64-bit integer: BIGINT on PostgreSQL, INTEGER (the rowid when a primary key) on SQLite.
BIG_INT = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

#: The English word vector of a lexical row: heading (A) > title (B) > body (D), the
#: order of the FTS5 bm25() column weights heading 3, title 2, body 1.
PG_WORDS = (
    "setweight(to_tsvector('english'::regconfig, title), 'B') || "
    "setweight(to_tsvector('english'::regconfig, heading), 'A') || "
    "setweight(to_tsvector('english'::regconfig, body), 'D')"
)
#: The text under the trigram index; kbmcp_adapters.store.pg_lexical.HAYSTACK queries it
#: with exactly this expression.
PG_HAYSTACK = "(title || ' ' || heading || ' ' || body)"


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
        sa.Column("id", BIG_INT, primary_key=True, autoincrement=False),
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
    if op.get_bind().dialect.name == "postgresql":
        _create_pg_lexical()
        return
    op.execute(
        "CREATE VIRTUAL TABLE fts_words USING fts5("
        "title, heading, body, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    op.execute(
        "CREATE VIRTUAL TABLE fts_grams USING fts5(title, heading, body, tokenize = 'trigram')"
    )


def _create_pg_lexical() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    op.execute(
        "CREATE TABLE lexical ("
        "id BIGINT PRIMARY KEY, "
        "title TEXT NOT NULL DEFAULT '', "
        "heading TEXT NOT NULL DEFAULT '', "
        "body TEXT NOT NULL DEFAULT '', "
        f"words tsvector GENERATED ALWAYS AS ({PG_WORDS}) STORED)"
    )
    op.execute("CREATE INDEX ix_lexical_words ON lexical USING gin (words)")
    op.execute(f"CREATE INDEX ix_lexical_grams ON lexical USING gin ({PG_HAYSTACK} gin_trgm_ops)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TABLE lexical")  # pg_trgm stays: other tables may use it
    else:
        op.execute("DROP TABLE fts_grams")
        op.execute("DROP TABLE fts_words")
    op.drop_table("index_meta")
    op.drop_index("ix_chunks_content_hash", table_name="chunks")
    op.drop_index("ix_chunks_document_id", table_name="chunks")
    op.drop_table("chunks")
    op.drop_table("documents")
