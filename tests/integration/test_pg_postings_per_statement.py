"""Migration 0008 on PostgreSQL: the postings are written once a statement. A database
whose rows 0007's row trigger posted upgrades in place and answers; a batch the store
writes in one statement gets, row by row, the postings the row trigger gave the same
texts (Latin, Japanese, mixed, a token too long to post); an update posts its rows again;
downgrading brings the row trigger back with the same postings."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from kbmcp_adapters.store import alembic_runner
from kbmcp_adapters.store.engine import make_engine
from kbmcp_adapters.store.sql_store import SqlIndexStore
from kbmcp_core.errors import StoreError
from kbmcp_core.models import ChunkRecord, DocumentRecord
from kbmcp_core.ports import DocumentWrite
from tests.pg_rows import write_rows_one_by_one

#: (heading trail, body) of each chunk; every document's title is its path's stem
TEXTS = [
    (("Install", "Upgrade"), "Run pip install --upgrade kb-mcp; the react-dom/client package."),
    (("props との違い",), "React では useState フックで state を宣言します。ててててて。"),
    (("",), "No CJK at all, but 全角 Ｒｅａｃｔ in the body only."),
    (("Long",), "x" * 250 + " a token too long to post, then lanterns"),
]
#: each posting by the text of its row, so two databases' ids need not agree
POSTINGS = ("SELECT lx.title, lx.heading, lx.body, g.gram, g.tf, g.dl FROM lexical_grams AS g "
            "JOIN lexical AS lx ON lx.id = g.id ORDER BY 1, 2, 3, 4")
#: the lexical table's posting triggers and whether each fires once a row
TRIGGERS = ("SELECT tgname, (tgtype & 1) = 1 FROM pg_trigger WHERE tgrelid = 'lexical'::regclass "
            "AND NOT tgisinternal ORDER BY tgname")


def _document(title: str) -> DocumentRecord:
    return DocumentRecord(path="new.md", title=title, content_hash="h-new", size_bytes=100,
                          date=None, topic="", category="", tags=(), metadata={},
                          last_indexed="2026-12-07T00:00:00Z")


def _writes(first_id: int, title: str) -> list[DocumentWrite]:
    document = _document(title)
    chunks = [ChunkRecord(id=first_id + n, ordinal=n, heading=trail[-1], heading_path=trail,
                          content=body, text_hash=f"t-{title}-{n}", start_line=n + 1,
                          end_line=n + 1, page=None)
              for n, (trail, body) in enumerate(TEXTS)]
    return [DocumentWrite(document, chunks, None)]


def _query(url: str, sql: str) -> list[tuple[object, ...]]:
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            result = conn.execute(text(sql))
            return [tuple(r) for r in result] if result.returns_rows else []
    finally:
        engine.dispose()


def _at_0007(url: str) -> None:
    """A database at 0007 holding the texts, written a row a statement (0007's store)."""
    alembic_runner.open_at_revision(url, "0007")
    write_rows_one_by_one(url, [("old", " > ".join(trail), body) for trail, body in TEXTS],
                          doc_id=1000, path="old.md")


def test_an_old_database_upgrades_and_a_batch_gets_the_row_triggers_postings(
        pg_url: str) -> None:
    _at_0007(pg_url)
    before = _query(pg_url, POSTINGS)
    assert {row[3] for row in before} >= {"upgrade", "react", "usestate", "", "の違い"}
    assert _query(pg_url, TRIGGERS) == [("lexical_grams_write", True)]
    with SqlIndexStore(pg_url, create=False) as store:  # upgraded to head on opening
        assert store.schema_revision() == "0008"
        assert _query(pg_url, POSTINGS) == before  # nothing stored was rewritten
        assert [cid for cid, _ in store.lexical_search("upgrade", 5)] == [1]
        # the same texts under another title, written by the store in one statement
        store.write_documents(_writes(10, "old"))
        assert _query(pg_url, TRIGGERS) == [("lexical_grams_added", False),
                                            ("lexical_grams_changed", False)]
        posted = _query(pg_url, POSTINGS)
        assert posted == sorted(before * 2)  # each text posted as 0007 posted it
        assert {cid for cid, _ in store.lexical_search("lanterns", 5)} == {4, 13}
        assert {cid for cid, _ in store.lexical_search("useState", 5)} == {2, 11}
        # a title changed on every chunk of a document: its rows posted again, at once
        store.update_document_metadata(_document("renamed"))
        assert {cid for cid, _ in store.lexical_search("renamed", 10)} == {10, 11, 12, 13}
    engine = make_engine(pg_url)
    try:
        with engine.begin() as conn:
            alembic_runner.downgrade(conn, "0007")
    finally:
        engine.dispose()
    assert _query(pg_url, TRIGGERS) == [("lexical_grams_write", True)]
    after = _query(pg_url, POSTINGS)
    _query(pg_url, "UPDATE lexical SET body = body")  # the row trigger posts them again
    assert _query(pg_url, POSTINGS) == after



def test_a_batch_that_fails_in_its_copy_writes_nothing(pg_url: str) -> None:
    """A chunk id already stored under another document: the batch's COPY fails, the store
    says so in one line (its error, not the driver's), and none of the batch is written."""
    with SqlIndexStore(pg_url, create=True) as store:
        store.write_documents(_writes(10, "first"))
        clash = DocumentWrite(_other(), _writes(10, "second")[0].chunks, None)
        with pytest.raises(StoreError) as failed:
            store.write_documents([clash])
        assert "\n" not in str(failed.value)
        assert store.document_paths() == ["new.md"]
        assert {cid for cid, _ in store.lexical_search("lanterns", 5)} == {13}
        assert _query(pg_url, "SELECT count(DISTINCT id) FROM lexical_grams") == [(4,)]


def _other() -> DocumentRecord:
    return DocumentRecord(path="other.md", title="second", content_hash="h-other",
                          size_bytes=100, date=None, topic="", category="", tags=(),
                          metadata={}, last_indexed="2026-12-07T00:00:00Z")
