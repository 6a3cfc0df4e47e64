"""The index use-case against in-memory fakes: what is parsed, embedded and written."""

from __future__ import annotations

import pytest

from kbmcp_core.errors import ModelMismatch
from kbmcp_core.index_deps import IndexDeps
from kbmcp_core.index_run import run_index
from kbmcp_core.meta_keys import META_IN_PROGRESS, META_MODEL, META_VECTORS
from tests.fakes import (
    FakeEmbedder,
    FakeFileSystem,
    FakeIndexStore,
    FakeRegistry,
    FakeScanner,
    FakeVectorStore,
    fake_deps,
)


def stored(world: IndexDeps) -> FakeIndexStore:
    """The run's store, to read back what the run wrote (the run itself only writes)."""
    assert isinstance(world.store, FakeIndexStore)
    return world.store


@pytest.fixture
def world() -> IndexDeps:
    fs = FakeFileSystem({
        "a.md": b"title: A\n# One\nalpha text\n# Two\nbeta text\n",
        "b.md": b"# Only\ngamma text\n",
    })
    return fake_deps(fs)


def test_first_run_indexes_and_embeds_every_chunk(world: IndexDeps) -> None:
    s = run_index(world)
    assert (s.added, s.chunks_embedded) == (2, 3)
    assert world.vectors.ids() == world.store.chunk_ids()
    assert world.store.get_meta(META_MODEL) == "fake-model"


def test_unchanged_run_parses_embeds_and_writes_nothing(world: IndexDeps) -> None:
    run_index(world)
    store, emb, fs = world.store, world.embedder, world.fs
    assert isinstance(store, FakeIndexStore) and isinstance(emb, FakeEmbedder)
    assert isinstance(fs, FakeFileSystem)
    writes, embedded, reads = len(store.row_writes), len(emb.embedded), len(fs.reads)
    s = run_index(world)
    assert s.unchanged == 2
    assert len(store.row_writes) == writes
    assert len(emb.embedded) == embedded
    assert len(fs.reads) == reads  # the fake scanner hashes without the reader


def test_unchanged_run_backfills_null_sizes(world: IndexDeps) -> None:
    run_index(world)
    store = world.store
    assert isinstance(store, FakeIndexStore)
    store.docs["a.md"].size_bytes = None
    writes = len(store.row_writes)
    s = run_index(world)
    assert s.sizes_backfilled == 1
    assert store.docs["a.md"].size_bytes == len(world.fs.files["a.md"])  # type: ignore[attr-defined]
    assert len(store.row_writes) == writes


def test_metadata_only_edit_reembeds_nothing_and_keeps_chunk_ids(world: IndexDeps) -> None:
    run_index(world)
    ids = world.store.chunk_ids()
    emb = world.embedder
    assert isinstance(emb, FakeEmbedder)
    before = len(emb.embedded)
    world.fs.files["a.md"] = b"title: A renamed\n# One\nalpha text\n# Two\nbeta text\n"  # type: ignore[attr-defined]
    s = run_index(world)
    assert (s.updated, s.metadata_only, s.chunks_embedded) == (1, 1, 0)
    assert len(emb.embedded) == before
    assert world.store.chunk_ids() == ids
    doc = stored(world).get_document("a.md")
    assert doc is not None and doc.title == "A renamed"
    assert doc.size_bytes == len(world.fs.files["a.md"])  # type: ignore[attr-defined]


def test_rename_reuses_vectors(world: IndexDeps) -> None:
    run_index(world)
    emb = world.embedder
    assert isinstance(emb, FakeEmbedder)
    before = len(emb.embedded)
    old_vectors = sorted(map(tuple, world.vectors.get(world.store.chunk_ids()).values()))
    fs = world.fs
    assert isinstance(fs, FakeFileSystem)
    fs.files["moved/a.md"] = fs.files.pop("a.md")
    s = run_index(world)
    assert (s.renamed, s.added, s.deleted, s.chunks_embedded) == (1, 0, 0, 0)
    assert len(emb.embedded) == before
    assert stored(world).document_paths() == ["b.md", "moved/a.md"]
    assert sorted(map(tuple, world.vectors.get(world.store.chunk_ids()).values())) == old_vectors
    assert world.vectors.ids() == world.store.chunk_ids()


def test_edit_embeds_only_the_changed_chunk(world: IndexDeps) -> None:
    run_index(world)
    world.fs.files["a.md"] = b"title: A\n# One\nalpha text\n# Two\nbeta text changed\n"  # type: ignore[attr-defined]
    s = run_index(world)
    assert (s.updated, s.chunks_embedded, s.chunks_reused) == (1, 1, 1)
    assert world.vectors.ids() == world.store.chunk_ids()


def test_an_edit_keeps_the_unchanged_chunks_ids_and_vectors(world: IndexDeps) -> None:
    """A section appended: the sections whose text did not change keep their ids (and
    their vectors, which are neither copied nor written again); only the new one gets an
    id and a vector."""
    run_index(world)
    vectors = world.vectors
    assert isinstance(vectors, FakeVectorStore)
    before = stored(world).chunks_of(["a.md"])["a.md"]
    appends = vectors.appends
    world.fs.files["a.md"] = (  # type: ignore[attr-defined]
        b"title: A\n# One\nalpha text\n# Two\nbeta text\n# Three\ndelta text\n")
    s = run_index(world)
    after = stored(world).chunks_of(["a.md"])["a.md"]
    assert after[:2] == before
    assert after[2][0] not in {cid for cid, _ in before}
    assert (s.updated, s.chunks_embedded, s.chunks_reused) == (1, 1, 2)
    assert vectors.appends == appends + 1  # the new chunk's vector alone
    assert vectors.ids() == world.store.chunk_ids()


def test_a_kept_chunk_without_a_vector_is_embedded_again(world: IndexDeps) -> None:
    """A chunk left without a vector (an embedding service refused its text, decision
    0037) keeps its id through an edit of its document, and is embedded then."""
    run_index(world)
    kept_id = stored(world).chunks_of(["a.md"])["a.md"][0][0]
    world.vectors.delete([kept_id])
    world.store.set_meta(META_VECTORS, world.vectors.fingerprint() or "")  # as if so stored
    world.fs.files["a.md"] = (  # type: ignore[attr-defined]
        b"title: A\n# One\nalpha text\n# Two\nbeta text changed\n")
    s = run_index(world)
    assert stored(world).chunks_of(["a.md"])["a.md"][0][0] == kept_id
    assert s.chunks_embedded == 2
    assert world.vectors.ids() == world.store.chunk_ids()


def test_failed_parse_keeps_previous_rows_and_run_continues(world: IndexDeps) -> None:
    run_index(world)
    before = stored(world).get_document("a.md")
    world.fs.files["a.md"] = b"FAIL"  # type: ignore[attr-defined]
    world.fs.files["c.md"] = b"# C\ndelta\n"  # type: ignore[attr-defined]
    s = run_index(world)
    assert s.failed == 1 and s.added == 1
    assert stored(world).get_document("a.md") == before
    assert any("a.md" in w for w in s.warnings)


def test_deleted_file_loses_rows_and_vectors(world: IndexDeps) -> None:
    run_index(world)
    del world.fs.files["b.md"]  # type: ignore[attr-defined]
    s = run_index(world)
    assert s.deleted == 1
    assert stored(world).document_paths() == ["a.md"]
    assert world.vectors.ids() == world.store.chunk_ids()


def test_oversize_refusal_records_size_and_keeps_row(world: IndexDeps) -> None:
    run_index(world)
    scanner = world.scanner
    assert isinstance(scanner, FakeScanner)
    scanner.oversize["a.md"] = 60 << 20
    s = run_index(world)
    doc = stored(world).get_document("a.md")
    assert doc is not None and doc.size_bytes == 60 << 20
    assert s.skipped == 1


def test_orphan_vectors_from_a_killed_run_are_removed(world: IndexDeps) -> None:
    run_index(world)
    world.vectors.add([12345], [[0.0] * 16])  # a killed run: a vector, no chunk...
    world.store.set_meta(META_IN_PROGRESS, "2026-01-01T00:00:00Z")  # ...and no clean end
    run_index(world)
    assert world.vectors.ids() == world.store.chunk_ids()


def test_a_clean_unchanged_index_never_opens_the_vector_store(world: IndexDeps) -> None:
    run_index(world)
    fingerprint = world.vectors.fingerprint()

    class Untouchable(FakeVectorStore):
        """Only the fingerprint (file metadata, no vector read) may be asked for."""

        def __getattribute__(self, name: str) -> object:
            if name == "fingerprint":
                return lambda: fingerprint
            raise AssertionError(f"vector store used: {name}")

    world.vectors = Untouchable()
    assert run_index(world).unchanged == 2


def test_other_model_is_refused_unless_forced(world: IndexDeps) -> None:
    run_index(world)
    world.embedder = FakeEmbedder("other-model")
    with pytest.raises(ModelMismatch, match="--force"):
        run_index(world)
    s = run_index(world, force=True)
    assert s.chunks_embedded == 3
    assert world.store.get_meta(META_MODEL) == "other-model"


def test_targeted_run_touches_only_its_paths(world: IndexDeps) -> None:
    run_index(world)
    fs = world.fs
    assert isinstance(fs, FakeFileSystem)
    del fs.files["b.md"]  # gone, but not part of this targeted run
    fs.files["c.md"] = b"# C\nnew text\n"
    s = run_index(world, paths=["c.md"])
    assert (s.added, s.deleted) == (1, 0)
    assert stored(world).document_paths() == ["a.md", "b.md", "c.md"]
    s = run_index(world, paths=["b.md"])
    assert s.deleted == 1
    assert stored(world).document_paths() == ["a.md", "c.md"]


def test_targeted_run_sees_a_rename_in_one_batch(world: IndexDeps) -> None:
    run_index(world)
    fs = world.fs
    assert isinstance(fs, FakeFileSystem)
    fs.files["moved.md"] = fs.files.pop("a.md")
    s = run_index(world, paths=["a.md", "moved.md"])
    assert (s.renamed, s.chunks_embedded) == (1, 0)


class FailingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.fail = True

    def embed_documents(self, texts):
        if self.fail:
            raise RuntimeError("killed while embedding")
        return super().embed_documents(texts)


def test_text_is_searchable_before_its_vectors_and_the_next_run_completes(
    world: IndexDeps,
) -> None:
    from kbmcp_core.offer import OfferRules
    from kbmcp_core.search import Searcher
    from kbmcp_core.search_request import SearchRequest

    emb = FailingEmbedder()
    world.embedder = emb
    with pytest.raises(RuntimeError):  # the run dies between the rows and the vectors
        run_index(world)
    assert stored(world).document_paths() == ["a.md", "b.md"]
    assert world.vectors.ids() == set()
    searcher = Searcher(stored(world), world.vectors, emb, OfferRules(stored(world),
                                                                      FakeRegistry()))
    res = searcher.search(SearchRequest("gamma text"))
    assert res.results[0].path == "b.md"  # found lexically
    assert res.notice is not None and "3 chunks" in res.notice
    emb.fail = False
    s = run_index(world)
    assert s.unchanged == 2 and s.chunks_embedded == 3
    assert world.vectors.ids() == world.store.chunk_ids()
    assert searcher.search(SearchRequest("gamma text")).notice is None
