"""Alembic migrations: an index built at revision 0001 opens with current code, losing nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from kbmcp_adapters.store import alembic_runner
from kbmcp_adapters.store.sql_store import (
    SqlIndexStore,
    head_revision,
    make_engine,
    open_at_revision,
    schema_revision,
)
from kbmcp_adapters.store.tables import is_fts_name, metadata
from kbmcp_core.errors import IndexNotFound
from kbmcp_core.meta_keys import META_MODEL

CHUNK_IDS = [(1 << 61) + 5, (1 << 62) - 1, 12345]


def url_of(path: Path) -> str:
    return f"sqlite:///{path}"


def build_revision_0001_index(db_file: Path) -> None:
    """An index as the first release wrote it: no size_bytes column anywhere."""
    open_at_revision(url_of(db_file), "0001")
    with sqlite3.connect(db_file) as conn:
        for doc_id, path in ((1, "notes/a.md"), (2, "notes/b.md")):
            conn.execute(
                "INSERT INTO documents (id, path, title, content_hash, date, topic, category,"
                " tags, metadata, last_indexed) VALUES (?, ?, ?, ?, NULL, 'notes', NULL,"
                " '[\"t\"]', '{}', '2025-01-01T00:00:00Z')",
                (doc_id, path, f"Title {doc_id}", f"hash{doc_id}"),
            )
        for cid, doc_id in zip(CHUNK_IDS, (1, 1, 2), strict=True):
            conn.execute(
                "INSERT INTO chunks (id, document_id, ordinal, heading, heading_path, content,"
                " content_hash, start_line, end_line, page)"
                " VALUES (?, ?, 0, 'H', '[\"H\"]', ?, ?, 1, 2, NULL)",
                (cid, doc_id, f"lantern chapter {cid}", f"ch{cid}"),
            )
            for table in ("fts_words", "fts_grams"):
                conn.execute(
                    f"INSERT INTO {table}(rowid, title, heading, body) VALUES (?, 'T', 'H', ?)",
                    (cid, f"lantern chapter {cid}"),
                )
        conn.execute("INSERT INTO index_meta VALUES (?, 'minilm')", (META_MODEL,))


def test_an_index_at_revision_0001_upgrades_without_losing_anything(tmp_path: Path) -> None:
    db_file = tmp_path / "index.db"
    build_revision_0001_index(db_file)
    assert schema_revision(url_of(db_file)) == "0001"
    with SqlIndexStore(url_of(db_file), create=False) as store:
        assert store.schema_revision() == head_revision() == "0008"
        assert store.document_paths() == ["notes/a.md", "notes/b.md"]
        assert [d.size_bytes for d in store.documents()] == [None, None]
        assert store.chunk_ids() == set(CHUNK_IDS)
        assert store.get_meta(META_MODEL) == "minilm"
        assert {cid for cid, _ in store.lexical_search("lanterns", 10)} == set(CHUNK_IDS)
        # The next index run fills the sizes without touching any chunk.
        assert store.backfill_sizes({"notes/a.md": 10, "notes/b.md": 20}) == 2
        assert store.chunk_ids() == set(CHUNK_IDS)
        assert store.sizes_over(15) == [("notes/b.md", 20)]


def test_opening_an_index_at_head_again_changes_nothing(tmp_path: Path) -> None:
    db_file = tmp_path / "index.db"
    with SqlIndexStore(url_of(db_file), create=True) as store:
        store.set_meta("k", "v")
    schema_before = _schema(db_file)
    for _ in range(2):
        with SqlIndexStore(url_of(db_file), create=False) as store:
            assert store.get_meta("k") == "v"
            assert store.schema_revision() == head_revision()
    assert _schema(db_file) == schema_before
    with sqlite3.connect(db_file) as conn:
        assert conn.execute("SELECT count(*) FROM alembic_version").fetchone() == (1,)


def test_a_missing_index_is_reported_and_nothing_is_created(tmp_path: Path) -> None:
    db_file = tmp_path / "nowhere" / "index.db"
    with pytest.raises(IndexNotFound) as caught:
        SqlIndexStore(url_of(db_file), create=False)
    assert caught.value.location == str(db_file)
    with pytest.raises(IndexNotFound):
        schema_revision(url_of(db_file))
    assert not db_file.parent.exists()


def test_migrations_do_not_depend_on_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with SqlIndexStore(url_of(tmp_path / "index.db"), create=True) as store:
        assert store.schema_revision() == head_revision()
    created = {p.name for p in tmp_path.iterdir()}
    assert "index.db" in created
    assert created <= {"index.db", "index.db-wal", "index.db-shm"}


def test_the_head_schema_matches_the_table_definitions(tmp_path: Path) -> None:
    db_file = tmp_path / "index.db"
    SqlIndexStore(url_of(db_file), create=True).close()
    engine = make_engine(url_of(db_file))
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(
                conn,
                opts={"include_name": lambda name, type_, _: not is_fts_name(name)},
            )
            assert compare_metadata(context, metadata) == []
    finally:
        engine.dispose()


def test_downgrading_size_bytes_keeps_every_chunk(tmp_path: Path) -> None:
    db_file = tmp_path / "index.db"
    build_revision_0001_index(db_file)
    SqlIndexStore(url_of(db_file), create=False).close()
    engine = make_engine(url_of(db_file))
    try:
        with engine.begin() as conn:
            alembic_runner.downgrade(conn, "0001")
            assert alembic_runner.current_revision(conn) == "0001"
    finally:
        engine.dispose()
    with SqlIndexStore(url_of(db_file), create=False) as store:
        assert store.chunk_ids() == set(CHUNK_IDS)


def _schema(db_file: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db_file) as conn:
        return conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()


def test_the_declared_head_is_the_head_alembic_computes_from_the_scripts() -> None:
    """Opening an index compares its revision with ``kbmcp_migrations.HEAD`` (no Alembic
    import); a migration added without moving that constant fails here."""
    from kbmcp_adapters.store.alembic_runner import script_head

    assert head_revision() == script_head()
