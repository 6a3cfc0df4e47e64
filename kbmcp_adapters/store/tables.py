"""SQLAlchemy Core tables of the index store at head, and the explicit row <-> record mapping."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
)

from kbmcp_core.models import ChunkRecord, DocumentRecord, StoredChunk, StoredDocument

metadata = MetaData()

#: A 64-bit integer: BIGINT on PostgreSQL, INTEGER on SQLite (already 64-bit there, and an
#: INTEGER PRIMARY KEY stays the rowid).
BigInt = BigInteger().with_variant(Integer(), "sqlite")

documents = Table(
    "documents",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("path", Text, nullable=False, unique=True),
    Column("title", Text, nullable=False),
    Column("content_hash", Text, nullable=False),
    Column("date", Text, nullable=True),
    Column("topic", Text, nullable=True),
    Column("category", Text, nullable=True),
    Column("tags", Text, nullable=False),  # JSON list of strings
    Column("metadata", Text, nullable=False),  # JSON object
    Column("last_indexed", Text, nullable=False),
    Column("size_bytes", BigInt, nullable=True),  # revision 0002; NULL = never recorded
    Index("ix_documents_size_bytes", "size_bytes"),
    Index("ix_documents_content_hash", "content_hash"),  # revision 0004
)

chunks = Table(
    "chunks",
    metadata,
    # Ids are chosen by the indexer (62-bit, increasing: decision 0004), never by the database.
    Column("id", BigInt, primary_key=True, autoincrement=False),
    Column(
        "document_id",
        Integer,
        ForeignKey("documents.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("ordinal", Integer),
    Column("heading", Text),
    Column("heading_path", Text),  # JSON list of strings
    Column("content", Text),
    Column("content_hash", Text),  # the chunk's text hash: ChunkRecord.text_hash
    Column("start_line", Integer, nullable=True),
    Column("end_line", Integer, nullable=True),
    Column("page", Integer, nullable=True),
    Index("ix_chunks_document_id", "document_id"),
    Index("ix_chunks_content_hash", "content_hash"),
)

index_meta = Table(
    "index_meta",
    metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text),
)

#: revision 0004: the text a read serves for a converted document, by the sha256 of the
#: bytes it was made from (decision 0023); a row lives while a document carries its hash
converted_text = Table(
    "converted_text",
    metadata,
    Column("content_hash", Text, primary_key=True),
    Column("text", Text, nullable=False),  # cut at the read cap of extracted text
    Column("chars", BigInt, nullable=False),  # characters in the whole conversion
)

#: revision 0005: the values of the declared front-matter fields (decision 0036), one row
#: per value; text folded with ``str.lower``, numbers as floats, dates as YYYY-MM-DD
document_fields = Table(
    "document_fields",
    metadata,
    Column("document_id", Integer, ForeignKey("documents.id", ondelete="CASCADE"),
           nullable=False),
    Column("name", Text, nullable=False),
    Column("value_text", Text, nullable=True),
    Column("value_num", Float, nullable=True),
    Column("value_date", Text, nullable=True),
    Index("ix_document_fields_document_id", "document_id"),
    Index("ix_document_fields_text", "name", "value_text"),
    Index("ix_document_fields_num", "name", "value_num"),
    Index("ix_document_fields_date", "name", "value_date"),
)

#: FTS5 virtual tables (rowid = chunk id, columns title, heading, body). They are not
#: expressible as Core tables; the store writes them with plain SQL.
FTS_WORDS = "fts_words"
FTS_GRAMS = "fts_grams"
FTS_TABLES = (FTS_WORDS, FTS_GRAMS)

#: PostgreSQL's lexical table (id = chunk id, columns title, heading, body, and the
#: generated ``words`` tsvector); written with plain SQL like the FTS5 tables.
PG_LEXICAL = "lexical"
#: revision 0006: PostgreSQL's postings of each lexical row's CJK trigrams and tokens
#: (gram, id, weighted count), kept by a trigger on ``lexical``, and every token posted
#: (decision 0040)
PG_GRAMS = "lexical_grams"
PG_WORDS = "lexical_words"

#: SQL fragments for raw queries: any number of paths as one JSON parameter (so no IN
#: list ever nears the variable limit), and chunks joined to their documents.
PATH_FILTER = "documents.path IN (SELECT value FROM json_each(:paths))"
PG_PATH_FILTER = (
    "documents.path IN (SELECT json_array_elements_text(CAST(:paths AS json)))"
)
JOIN_DOCUMENTS = "JOIN documents ON documents.id = chunks.document_id"
#: ``chunks.id`` in the ``:ids`` JSON list of chunk ids (any number, one statement)
ID_FILTER = "chunks.id IN (SELECT value FROM json_each(:ids))"
PG_ID_FILTER = (
    "chunks.id IN (SELECT CAST(json_array_elements_text(CAST(:ids AS json)) AS bigint))"
)
#: The columns ``stored_chunk`` reads: a chunk with its document's fields.
CHUNK_ROWS = (
    "SELECT chunks.id, chunks.heading, chunks.heading_path, chunks.content, "
    "chunks.start_line, chunks.end_line, chunks.page, documents.path, documents.title, "
    "documents.tags, documents.date, documents.topic, documents.category "
    f"FROM chunks {JOIN_DOCUMENTS}"
)


def is_fts_name(name: str | None) -> bool:
    """True for the lexical tables, which migrations create with raw DDL: the FTS tables
    and their shadow tables (fts_words_data, ...) on SQLite, ``lexical`` and its postings
    (``lexical_grams``, ``lexical_words``: revision 0006) on PostgreSQL."""
    if name is None:
        return False
    if name in (PG_LEXICAL, PG_GRAMS, PG_WORDS):
        return True
    return any(name == t or name.startswith(f"{t}_") for t in FTS_TABLES)


# -- mapping ------------------------------------------------------------------------


def json_list(raw: str | None) -> tuple[str, ...]:
    try:
        value = json.loads(raw or "[]")
    except ValueError:
        return ()
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def json_object(raw: str | None) -> dict[str, object]:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def document_values(document: DocumentRecord) -> dict[str, object]:
    """The ``documents`` row of a record (size_bytes included on every write path)."""
    return {
        "path": document.path,
        "title": document.title,
        "content_hash": document.content_hash,
        "size_bytes": document.size_bytes,
        "date": document.date,
        "topic": document.topic,
        "category": document.category,
        "tags": json.dumps(list(document.tags), ensure_ascii=False),
        "metadata": json.dumps(dict(document.metadata), ensure_ascii=False, default=str),
        "last_indexed": document.last_indexed,
    }


def field_rows(document_id: int, document: DocumentRecord) -> list[dict[str, object]]:
    """The ``document_fields`` rows of a record."""
    return [{"document_id": document_id, "name": f.name, "value_text": f.text,
             "value_num": f.number, "value_date": f.day} for f in document.fields]


def chunk_values(document_id: int, chunk: ChunkRecord) -> dict[str, object]:
    return {
        "id": chunk.id,
        "document_id": document_id,
        "ordinal": chunk.ordinal,
        "heading": chunk.heading,
        "heading_path": json.dumps(list(chunk.heading_path), ensure_ascii=False),
        "content": chunk.content,
        # the column predates the name: on ``chunks`` it holds the chunk's text hash, not
        # the file's (renaming it would need a migration for no gain)
        "content_hash": chunk.text_hash,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "page": chunk.page,
    }


def lexical_values(title: str, chunk: ChunkRecord) -> dict[str, object]:
    """One FTS row: the document title, the heading trail and the chunk body."""
    heading = " > ".join(h for h in chunk.heading_path if h)
    return {"id": chunk.id, "title": title, "heading": heading, "body": chunk.content}


def stored_document(m: Mapping[Any, Any]) -> StoredDocument:
    return StoredDocument(
        id=m["id"],
        path=m["path"],
        title=m["title"],
        content_hash=m["content_hash"],
        size_bytes=m["size_bytes"],
        date=m["date"],
        topic=m["topic"],
        category=m["category"],
        tags=json_list(m["tags"]),
        metadata=json_object(m["metadata"]),
        last_indexed=m["last_indexed"],
    )


def stored_chunk(m: Mapping[Any, Any]) -> StoredChunk:
    """A ``chunks`` row joined with its document's path, title, tags, date, topic, category."""
    return StoredChunk(
        id=m["id"],
        document_path=m["path"],
        title=m["title"],
        heading=m["heading"] or "",
        heading_path=json_list(m["heading_path"]),
        content=m["content"] or "",
        start_line=m["start_line"],
        end_line=m["end_line"],
        page=m["page"],
        tags=json_list(m["tags"]),
        date=m["date"],
        topic=m["topic"],
        category=m["category"],
    )
