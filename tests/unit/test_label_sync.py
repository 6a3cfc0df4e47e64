"""The vector store's chunk labels kept in step by index runs (decision 0058's addendum),
and the searcher filtering the vector leg by them, on in-memory fakes."""

from __future__ import annotations

from collections.abc import Collection

import pytest

from kbmcp_core.chunk_labels import ChunkLabels, labels_of
from kbmcp_core.index_deps import IndexDeps
from kbmcp_core.index_run import run_index
from kbmcp_core.meta_keys import META_LABELLED
from kbmcp_core.offer import OfferRules
from kbmcp_core.search import Searcher
from kbmcp_core.search_request import SearchRequest
from tests.fakes import (
    FakeEmbedder,
    FakeFileSystem,
    FakeIndexStore,
    FakeRegistry,
    FakeVectorStore,
    fake_deps,
)


@pytest.fixture
def world() -> IndexDeps:
    return fake_deps(FakeFileSystem({
        "notes/a.md": b"title: A\n# One\nalpha text\n# Two\nbeta text\n",
        "notes/deep/b.md": b"# Only\ngamma text\n",
        "c.md": b"# Top\nalpha gamma\n",
    }))


def _parts(world: IndexDeps) -> tuple[FakeIndexStore, FakeVectorStore, FakeEmbedder]:
    store, vectors, embedder = world.store, world.vectors, world.embedder
    assert isinstance(store, FakeIndexStore) and isinstance(vectors, FakeVectorStore)
    assert isinstance(embedder, FakeEmbedder)
    return store, vectors, embedder


def test_an_index_run_writes_each_vector_with_its_documents_labels(world: IndexDeps) -> None:
    run_index(world)
    store, vectors, _ = _parts(world)
    assert vectors.labelled()
    for doc in store.documents():
        for cid in store.chunk_ids_for([doc.path]):
            assert vectors.labels[cid] == labels_of(doc)
    assert vectors.labels[store.chunk_ids_for(["notes/deep/b.md"])[0]].folders == (
        "notes", "notes/deep")


def test_a_metadata_change_that_keeps_the_labels_writes_no_vector(world: IndexDeps) -> None:
    run_index(world)
    _, vectors, embedder = _parts(world)
    assert isinstance(world.fs, FakeFileSystem)
    world.fs.files["notes/a.md"] = world.fs.files["notes/a.md"].replace(b"title: A",
                                                                          b"title: A2")
    embedded, generation = len(embedder.embedded), vectors.generation
    summary = run_index(world)
    assert summary.metadata_only == 1 and len(embedder.embedded) == embedded
    assert vectors.relabelled == 0 and vectors.generation == generation


def test_vectors_written_without_labels_are_labelled_by_the_next_run_without_embedding(
        world: IndexDeps) -> None:
    run_index(world)
    store, vectors, embedder = _parts(world)
    vectors.labels.clear()  # as an index made before labels left them: no mark either
    del store.meta[META_LABELLED]
    assert not vectors.labelled()
    embedded = len(embedder.embedded)
    run_index(world)
    assert vectors.labelled() and len(embedder.embedded) == embedded
    assert vectors.relabelled == len(store.chunk_ids())
    assert vectors.labels[store.chunk_ids_for(["c.md"])[0]] == ChunkLabels()
    relabelled = vectors.relabelled
    run_index(world)  # marked: the next run neither checks nor labels again
    assert vectors.relabelled == relabelled


class _NoIds(FakeIndexStore):
    """A store that refuses to list a filter's chunk ids."""

    def chunk_ids_for(self, paths: Collection[str]) -> list[int]:
        raise AssertionError("the vector leg asked for the allowed ids")


def test_a_labelled_store_is_filtered_by_labels_with_the_same_hits() -> None:
    fs = FakeFileSystem({f"{folder}/{n}.md": f"# H\nalpha {folder} {n}\n".encode()
                         for folder in ("notes", "misc") for n in range(4)})
    store = _NoIds()
    world = fake_deps(fs, store=store)
    run_index(world)
    _, vectors, embedder = _parts(world)
    request = SearchRequest.of("alpha notes", mode="vector", path_globs=["notes/**"])
    searcher = Searcher(store, vectors, embedder, OfferRules(store, FakeRegistry()))
    by_labels = searcher.search(request)
    vectors.labels.clear()  # unlabelled: the allowed ids again (the spy refuses them)
    with pytest.raises(AssertionError, match="allowed ids"):
        searcher.search(request)
    assert {h.path for h in by_labels.results} == {f"notes/{n}.md" for n in range(4)}
