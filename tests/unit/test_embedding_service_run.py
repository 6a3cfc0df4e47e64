"""The index run and the searcher when an embedding service refuses texts or does not
answer (decision 0037), against the in-memory fakes."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kbmcp_core.errors import EmbeddingRejected, EmbeddingUnavailable, EmbeddingUnreachable
from kbmcp_core.index_deps import IndexDeps
from kbmcp_core.index_run import run_index
from kbmcp_core.meta_keys import META_IN_PROGRESS
from kbmcp_core.models import Vector
from tests.fakes import FakeEmbedder, FakeFileSystem, fake_deps


class RefusingEmbedder(FakeEmbedder):
    """Refuses any text holding ``POISON``; with ``down`` set, answers nothing at all;
    with ``short`` set, gives vectors one number short."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.short = False

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if self.down:
            raise EmbeddingUnreachable("http://127.0.0.1:9/v1/embeddings: HTTP 503")
        vectors: list[Vector | None] = list(super().embed_documents(texts))
        if self.short:
            return [v[:-1] for v in vectors if v is not None]
        refused = {i: "HTTP 400: input rejected" for i, t in enumerate(texts) if "POISON" in t}
        if refused:
            raise EmbeddingRejected([None if i in refused else v for i, v in
                                     enumerate(vectors)], refused)
        return [v for v in vectors if v is not None]


@pytest.fixture
def world() -> IndexDeps:
    deps = fake_deps(FakeFileSystem({
        "a.md": b"# One\nalpha text\n# Two\nPOISON text\n",
        "b.md": b"# Only\ngamma text\n",
    }))
    deps.embedder = RefusingEmbedder()
    return deps


def test_a_refused_chunk_is_left_without_a_vector_and_warned_about(world: IndexDeps) -> None:
    summary = run_index(world)
    assert (summary.added, summary.chunks_embedded) == (2, 2)
    assert len(world.store.chunk_ids() - world.vectors.ids()) == 1
    assert [w for w in summary.warnings if "refused" in w] == [
        "a.md: a chunk was left without a vector: the embedding service refused it "
        "(HTTP 400: input rejected); keyword search finds it"]
    assert not world.store.get_meta(META_IN_PROGRESS)  # the run completed


def test_a_service_that_stays_down_stops_the_run_and_the_next_one_continues(
        world: IndexDeps) -> None:
    embedder = world.embedder
    assert isinstance(embedder, RefusingEmbedder)
    embedder.down = True
    with pytest.raises(EmbeddingUnreachable, match="the next `kb-mcp index` embeds"):
        run_index(world)
    assert world.store.get_meta(META_IN_PROGRESS)  # left as a stopped run leaves it
    assert world.vectors.ids() == set()
    embedder.down = False
    summary = run_index(world)
    assert summary.chunks_embedded == 2
    assert len(world.store.chunk_ids() - world.vectors.ids()) == 1  # the refused one


def test_force_probes_the_model_before_it_empties_the_vectors(world: IndexDeps) -> None:
    run_index(world)
    before = set(world.vectors.ids())
    embedder = world.embedder
    assert isinstance(embedder, RefusingEmbedder)
    embedder.short = True
    with pytest.raises(EmbeddingUnavailable, match="15 dimensions, not 16: nothing was rebuilt"):
        run_index(world, force=True)
    assert world.vectors.ids() == before
    embedder.short, embedder.down = False, True
    with pytest.raises(EmbeddingUnreachable):
        run_index(world, force=True)
    assert world.vectors.ids() == before
