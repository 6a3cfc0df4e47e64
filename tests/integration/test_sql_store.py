"""SqlIndexStore against a real SQLite file: rows, sizes, lexical search in two scripts."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.store.sql_store import SIZES_OVER_SQL, SqlIndexStore, head_revision
from kbmcp_core.errors import StoreError
from kbmcp_core.meta_keys import META_DIMENSION, META_LAST_RUN, META_MODEL
from kbmcp_core.models import ChunkRecord, DocumentRecord
from tests.unit.test_lexical_query import HOSTILE

BIG_ID = (1 << 62) - 7


def doc(path: str, title: str = "Title", size: int = 100, **extra: object) -> DocumentRecord:
    fields: dict[str, object] = {
        "path": path,
        "title": title,
        "content_hash": f"hash-of-{path}",
        "size_bytes": size,
        "date": "2026-01-02",
        "topic": path.split("/")[0],
        "category": None,
        "tags": ("alpha", "beta"),
        "metadata": {"author": "Ann", "draft": False},
        "last_indexed": "2026-11-29T13:37:00Z",
    }
    fields.update(extra)
    return DocumentRecord(**fields)  # type: ignore[arg-type]


def chunk(cid: int, content: str, heading: str = "Intro", ordinal: int = 0) -> ChunkRecord:
    return ChunkRecord(
        id=cid,
        ordinal=ordinal,
        heading=heading,
        heading_path=("Guide", heading),
        content=content,
        text_hash=f"h{cid}",
        start_line=3,
        end_line=9,
        page=None,
    )


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    return tmp_path / "index" / "index.db"


@pytest.fixture
def store(db_file: Path) -> Iterator[SqlIndexStore]:
    with SqlIndexStore(f"sqlite:///{db_file}", create=True) as opened:
        yield opened


def count(db_file: Path, sql: str) -> int:
    with sqlite3.connect(db_file) as conn:
        return int(conn.execute(sql).fetchone()[0])


def lexical_rows_match_chunks(db_file: Path) -> bool:
    chunks = count(db_file, "SELECT count(*) FROM chunks")
    orphans = "SELECT count(*) FROM {t} WHERE rowid NOT IN (SELECT id FROM chunks)"
    return all(
        count(db_file, f"SELECT count(*) FROM {t}") == chunks
        and count(db_file, orphans.format(t=t)) == 0
        for t in ("fts_words", "fts_grams")
    )


def test_a_written_document_reads_back_with_its_chunks(store: SqlIndexStore) -> None:
    removed = store.write_document(doc("notes/a.md", size=1234), [chunk(BIG_ID, "hello world")])
    assert removed == []
    stored = store.get_document("notes/a.md")
    assert stored is not None
    assert (stored.title, stored.size_bytes, stored.tags) == ("Title", 1234, ("alpha", "beta"))
    assert stored.metadata == {"author": "Ann", "draft": False}
    assert store.document_paths() == ["notes/a.md"]
    assert store.indexed_states()["notes/a.md"].content_hash == "hash-of-notes/a.md"
    assert store.chunk_ids() == {BIG_ID}
    assert store.chunk_hashes(["h" + str(BIG_ID), "unknown"]) == {f"h{BIG_ID}": BIG_ID}
    got = store.get_chunks([BIG_ID, 42])
    assert list(got) == [BIG_ID]
    hit = got[BIG_ID]
    assert (hit.document_path, hit.heading_path, hit.content) == (
        "notes/a.md",
        ("Guide", "Intro"),
        "hello world",
    )
    assert (hit.start_line, hit.end_line, hit.tags, hit.topic) == (3, 9, ("alpha", "beta"), "notes")
    assert store.get_document("missing.md") is None


def test_rewriting_a_document_replaces_its_chunks_and_lexical_rows(
    store: SqlIndexStore, db_file: Path
) -> None:
    store.write_document(doc("a.md"), [chunk(1, "old lighthouse"), chunk(2, "old harbour")])
    store.write_document(doc("b.md"), [chunk(3, "unrelated meadow")])
    removed = store.write_document(doc("a.md"), [chunk(2, "new harbour"), chunk(4, "new dock")])
    assert sorted(removed) == [1]
    assert store.chunk_ids() == {2, 3, 4}
    assert lexical_rows_match_chunks(db_file)
    assert store.lexical_search("lighthouse", 5) == []
    assert [cid for cid, _ in store.lexical_search("harbour", 5)] == [2]


def test_a_rename_moves_the_rows_and_keeps_reused_chunk_ids(
    store: SqlIndexStore, db_file: Path
) -> None:
    store.write_document(doc("old/name.md"), [chunk(7, "moving house"), chunk(8, "boxes")])
    removed = store.write_document(doc("new/name.md"), [chunk(7, "moving house")], "old/name.md")
    assert removed == [8]
    assert store.document_paths() == ["new/name.md"]
    assert store.get_chunks([7])[7].document_path == "new/name.md"
    assert lexical_rows_match_chunks(db_file)


def test_delete_removes_documents_chunks_and_lexical_rows(
    store: SqlIndexStore, db_file: Path
) -> None:
    store.write_document(doc("a.md"), [chunk(1, "one"), chunk(2, "two")])
    store.write_document(doc("b.md"), [chunk(3, "three")])
    assert sorted(store.delete_documents(["a.md", "never-indexed.md"])) == [1, 2]
    assert store.document_paths() == ["b.md"]
    assert store.chunk_ids() == {3}
    assert lexical_rows_match_chunks(db_file)
    assert store.delete_documents([]) == []


def test_backfill_fills_only_sizes_never_recorded(store: SqlIndexStore, db_file: Path) -> None:
    store.write_document(doc("recorded.md", size=10), [])
    store.write_document(doc("unknown.md", size=10), [])
    with sqlite3.connect(db_file) as conn:
        conn.execute("UPDATE documents SET size_bytes = NULL WHERE path = 'unknown.md'")
    changed = store.backfill_sizes({"recorded.md": 999, "unknown.md": 500, "gone.md": 1})
    assert changed == 1
    assert store.indexed_states()["recorded.md"].size_bytes == 10
    assert store.indexed_states()["unknown.md"].size_bytes == 500
    assert store.backfill_sizes({}) == 0


def test_record_size_overwrites_an_existing_row(store: SqlIndexStore) -> None:
    store.write_document(doc("big.txt", size=10), [])
    assert store.record_size("big.txt", 60_000_000) is True
    stored = store.get_document("big.txt")
    assert stored is not None and stored.size_bytes == 60_000_000
    assert store.record_size("absent.txt", 5) is False


def test_sizes_over_lists_only_bigger_rows_through_the_size_index(
    store: SqlIndexStore, db_file: Path
) -> None:
    for i, size in enumerate([10, 2_000_000, 1_048_576, 3_000_000]):
        store.write_document(doc(f"d{i}.md", size=size), [])
    assert store.sizes_over(1_048_576) == [("d1.md", 2_000_000), ("d3.md", 3_000_000)]
    with sqlite3.connect(db_file) as conn:
        plan = conn.execute("EXPLAIN QUERY PLAN " + SIZES_OVER_SQL, {"min_bytes": 1}).fetchall()
    details = " ".join(str(row[-1]) for row in plan)
    assert "ix_documents_size_bytes" in details and "size_bytes>?" in details


def test_a_metadata_update_keeps_chunks_and_refreshes_the_title(store: SqlIndexStore) -> None:
    store.write_document(doc("a.md", title="Old"), [chunk(11, "body text"), chunk(12, "more")])
    new = doc("a.md", title="Zeppelin handbook", size=77, tags=("gamma",), date="2027-03-04")
    store.update_document_metadata(new)
    assert store.chunk_ids() == {11, 12}
    stored = store.get_document("a.md")
    assert stored is not None
    assert (stored.title, stored.size_bytes, stored.tags, stored.date) == (
        "Zeppelin handbook",
        77,
        ("gamma",),
        "2027-03-04",
    )
    assert {cid for cid, _ in store.lexical_search("zeppelin", 5)} == {11, 12}
    assert store.get_chunks([11])[11].title == "Zeppelin handbook"
    with pytest.raises(StoreError):
        store.update_document_metadata(doc("missing.md"))


def test_meta_values_and_stats(store: SqlIndexStore) -> None:
    assert store.get_meta(META_MODEL) is None
    store.set_meta(META_MODEL, "minilm")
    store.set_meta(META_MODEL, "bge-small")
    store.set_meta(META_DIMENSION, "384")
    store.set_meta(META_LAST_RUN, '{"added": 2}')
    store.write_document(doc("a.md"), [chunk(1, "x"), chunk(2, "y")])
    stats = store.stats()
    assert (stats.documents, stats.chunks) == (1, 2)
    assert (stats.model_id, stats.dimension) == ("bge-small", 384)
    assert stats.last_run == {"added": 2}
    assert stats.schema_revision == head_revision()


def test_get_chunks_handles_more_ids_than_one_in_clause(store: SqlIndexStore) -> None:
    store.write_document(doc("long.md"), [chunk(i, f"part {i}", ordinal=i) for i in range(1, 1201)])
    got = store.get_chunks(range(1, 1301))
    assert len(got) == 1200 and got[1200].content == "part 1200"


def test_chunk_hashes_and_ids_per_document(store: SqlIndexStore) -> None:
    store.write_document(doc("a.md"), [chunk(9, "x", ordinal=1), chunk(8, "y", ordinal=0)])
    store.write_document(doc("b.md"), [chunk(7, "z")])
    store.write_document(doc("empty.md"), [])
    assert store.document_chunk_hashes("a.md") == ["h8", "h9"]
    assert store.document_chunk_hashes("empty.md") == []
    assert store.document_chunk_hashes("missing.md") is None
    assert store.chunk_ids_for(["a.md", "missing.md"]) == [8, 9]
    assert store.chunk_ids_for([f"pad/{i}.md" for i in range(3000)] + ["b.md"]) == [7]
    assert store.chunk_ids_for([]) == []


def test_consistency_reports_what_doctor_needs(store: SqlIndexStore, db_file: Path) -> None:
    store.write_document(doc("a.md"), [chunk(1, "x"), chunk(2, "y")])
    store.write_document(doc("empty.md"), [])
    store.write_document(doc("unsized.md"), [chunk(3, "z")])
    with sqlite3.connect(db_file) as conn:
        conn.execute("UPDATE documents SET size_bytes = NULL WHERE path = 'unsized.md'")
        conn.execute("DELETE FROM fts_grams WHERE rowid = 2")
        conn.execute("INSERT INTO fts_words(rowid, title, heading, body) VALUES (99, '', '', '')")
    facts = store.consistency()
    assert facts.chunk_ids == {1, 2, 3}
    assert facts.chunk_ids - facts.lexical_ids == {2}
    assert facts.lexical_ids - facts.chunk_ids == {99}
    assert facts.documents_without_chunks == ("empty.md",)
    assert facts.chunks_without_document == ()
    assert facts.null_size_paths == ("unsized.md",)
    assert facts.schema_revision == facts.head_revision == head_revision()


def test_a_failed_write_leaves_the_previous_rows_intact(
    store: SqlIndexStore, db_file: Path
) -> None:
    store.write_document(doc("a.md", title="First"), [chunk(1, "original text")])
    store.write_document(doc("b.md"), [chunk(2, "other")])
    with pytest.raises(StoreError):
        # chunk 2 belongs to b.md: the insert fails after a.md's rows were deleted
        store.write_document(doc("a.md", title="Second"), [chunk(3, "new"), chunk(2, "clash")])
    stored = store.get_document("a.md")
    assert stored is not None and stored.title == "First"
    assert store.chunk_ids() == {1, 2}
    assert [cid for cid, _ in store.lexical_search("original", 5)] == [1]
    assert lexical_rows_match_chunks(db_file)


def test_readers_are_not_blocked_by_a_writer_in_another_connection(
    store: SqlIndexStore, db_file: Path
) -> None:
    store.write_document(doc("a.md"), [chunk(1, "lighthouse keeper")])
    writer = sqlite3.connect(db_file, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("DELETE FROM fts_words")
        with SqlIndexStore(f"sqlite:///{db_file}", create=False) as reader:
            assert reader.document_paths() == ["a.md"]
            assert [cid for cid, _ in reader.lexical_search("lighthouse", 5)] == [1]
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_damaged_index_file_is_a_store_error(db_file: Path) -> None:
    db_file.parent.mkdir(parents=True)
    db_file.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError):
        SqlIndexStore(f"sqlite:///{db_file}", create=False)


# -- lexical search -----------------------------------------------------------


@pytest.fixture
def corpus(store: SqlIndexStore) -> SqlIndexStore:
    store.write_document(
        doc("guide/testing.md", title="Testing"),
        [chunk(1, "Always run the test suite before you push.", "Workflow")],
    )
    store.write_document(
        doc("guide/watcher.md", title="File watcher"),
        [chunk(2, "Set debounce_ms and ignore patterns in kb-mcp.toml.", "Configuration")],
    )
    store.write_document(
        doc("guide/other.md", title="Misc"),
        [chunk(3, "The suite of tests will run before the release.", "Notes")],
    )
    store.write_document(
        doc("ja/react.md", title="React の状態"),
        [
            chunk(4, "状態を更新するにはセッター関数を呼び出します。", "状態"),
            chunk(5, "コンポーネントは関数として定義します。", "定義"),
        ],
    )
    return store


def ids(hits: list[tuple[int, float]]) -> list[int]:
    return [cid for cid, _ in hits]


def test_english_search_matches_word_stems(corpus: SqlIndexStore) -> None:
    hits = corpus.lexical_search("running tests", 5)
    assert {1, 3} <= set(ids(hits))
    assert all(0 < score <= 1 for _, score in hits) and hits[0][1] == 1.0


def test_a_natural_question_finds_the_configuration_chunk(corpus: SqlIndexStore) -> None:
    assert ids(corpus.lexical_search("how do I configure the watcher?", 5))[0] == 2


def test_a_quoted_phrase_matches_only_the_exact_phrase(corpus: SqlIndexStore) -> None:
    assert ids(corpus.lexical_search('"run the test suite"', 5)) == [1]
    assert ids(corpus.lexical_search('"suite run"', 5)) == []


def test_japanese_text_is_found_through_trigrams(corpus: SqlIndexStore) -> None:
    assert ids(corpus.lexical_search("セッター関数", 5)) == [4]
    assert ids(corpus.lexical_search("セッター関数の呼び出し方", 5))[0] == 4


def test_two_character_japanese_falls_back_to_a_substring_scan(corpus: SqlIndexStore) -> None:
    assert ids(corpus.lexical_search("更新", 5)) == [4]
    assert set(ids(corpus.lexical_search("関数", 5))) == {4, 5}
    assert ids(corpus.lexical_search("関数", 5, document_paths=["guide/testing.md"])) == []


def test_an_english_substring_falls_back_to_trigrams(corpus: SqlIndexStore) -> None:
    assert ids(corpus.lexical_search("debounce", 5)) == [2]
    assert ids(corpus.lexical_search("bounce", 5)) == [2]


def test_document_paths_restrict_the_search(corpus: SqlIndexStore) -> None:
    assert ids(corpus.lexical_search("run tests", 5, document_paths=["guide/other.md"])) == [3]
    many = [f"padding/{i}.md" for i in range(2000)] + ["guide/testing.md"]
    assert ids(corpus.lexical_search("run tests", 5, document_paths=many)) == [1]
    assert corpus.lexical_search("run tests", 5, document_paths=[]) == []


def test_limit_and_empty_queries(corpus: SqlIndexStore) -> None:
    assert len(corpus.lexical_search("run test suite release", 1)) == 1
    assert corpus.lexical_search("   ", 5) == []
    assert corpus.lexical_search("run", 0) == []


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_queries_never_raise(
    corpus: SqlIndexStore, text: str, caplog: pytest.LogCaptureFixture
) -> None:
    for paths in (None, ["guide/watcher.md", "ja/react.md"]):
        hits = corpus.lexical_search(text, 5, document_paths=paths)
        assert len(hits) <= 5
    assert not [r for r in caplog.records if "rejected by FTS5" in r.getMessage()]
