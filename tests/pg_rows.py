"""Rows written into a kb-mcp PostgreSQL schema the way an older store wrote them: one
statement a row, straight SQL (the migration tests' databases from before a revision)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import text

from kbmcp_adapters.store.engine import make_engine


def write_rows_one_by_one(url: str, rows: Sequence[tuple[str, str, str]], *, doc_id: int,
                          path: str) -> None:
    """One document ``path`` (id ``doc_id``) and, for each (title, heading, body) of
    ``rows``, its chunk and keyword row numbered from 1, each INSERT a statement of its own."""
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO documents (id, path, title, content_hash, tags, "
                              "metadata, last_indexed) VALUES (:d, :p, 'T', 'h', '[]', "
                              "'{}', 'x')"), {"d": doc_id, "p": path})
            for i, (title, heading, body) in enumerate(rows, start=1):
                conn.execute(text("INSERT INTO chunks (id, document_id, ordinal, content) "
                                  "VALUES (:i, :d, :i, :b)"), {"i": i, "d": doc_id, "b": body})
                conn.execute(text("INSERT INTO lexical (id, title, heading, body) "
                                  "VALUES (:i, :t, :h, :b)"),
                             {"i": i, "t": title, "h": heading, "b": body})
    finally:
        engine.dispose()


__all__ = ["write_rows_one_by_one"]
