"""Two phases per index run (ADR 0017): every file's text rows first, then the vectors."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from kbmcp_core.index_deps import IndexDeps
from kbmcp_core.index_run import run_index
from kbmcp_core.models import Vector
from kbmcp_core.offer import OfferRules
from kbmcp_core.search import Searcher
from kbmcp_core.search_request import SearchDefaults, SearchRequest
from tests.fakes import (
    FakeEmbedder,
    FakeFileSystem,
    FakeIndexStore,
    FakeRegistry,
    fake_deps,
)

#: More one-chunk files than one batch of rows (batch_size 1: 32 chunks per batch).
FILES = 80


def word(i: int) -> str:
    """A word only file ``i`` holds (letters only, so no tokenizer splits it)."""
    return "zq" + "".join("abcdefghij"[int(d)] for d in f"{i:03d}")


def corpus(n: int = FILES) -> FakeFileSystem:
    return FakeFileSystem({f"n{i:03d}.md": f"# Note {i}\n{word(i)} shared\n".encode()
                           for i in range(n)})


def deps(fs: FakeFileSystem, embedder: FakeEmbedder) -> IndexDeps:
    return fake_deps(fs, embedder=embedder, batch_size=1)


def searcher(world: IndexDeps) -> Searcher:
    assert isinstance(world.store, FakeIndexStore)
    return Searcher(world.store, world.vectors, world.embedder,
                    OfferRules(world.store, FakeRegistry()),
                    defaults=SearchDefaults(max_limit=50))


class GatedEmbedder(FakeEmbedder):
    """Embedding waits until the test opens the gate: phase two held still."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()
        self.gate = threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.waiting.set()
        assert self.gate.wait(30), "the test never opened the gate"
        return super().embed_documents(texts)


class DyingEmbedder(FakeEmbedder):
    """Dies on its first call, like a run killed once its text rows are written."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []
        self.dead = True

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.calls.append(len(texts))
        if self.dead:
            raise RuntimeError("killed while embedding")
        return super().embed_documents(texts)


def test_every_file_is_keyword_searchable_before_any_vector_is_stored() -> None:
    emb = GatedEmbedder()
    world = deps(corpus(), emb)
    result: list[object] = []
    run = threading.Thread(target=lambda: result.append(run_index(world)))
    run.start()
    try:
        assert emb.waiting.wait(10), "phase two never started"
        s = searcher(world)
        for i in range(FILES):  # the whole folder, not just the first batch
            hits = s.search(SearchRequest(word(i), mode="lexical")).results
            assert [h.path for h in hits] == [f"n{i:03d}.md"]
        assert world.vectors.ids() == set()
        notice = s.search(SearchRequest("shared")).notice
        assert notice is not None and f"{FILES} chunks are searchable by keywords only" in notice
    finally:
        emb.gate.set()
        run.join(30)
    assert not run.is_alive() and result
    assert world.vectors.ids() == world.store.chunk_ids()
    assert searcher(world).search(SearchRequest("shared")).notice is None


def test_progress_reports_the_text_phase_complete_before_the_first_vector() -> None:
    seen: list[tuple[str, int, int]] = []
    world = deps(corpus(40), FakeEmbedder())

    def progress(phase: str, done: int, total: int, _item: str) -> None:
        seen.append((phase, done, total))
        if phase == "vectors" and done == 0:
            assert world.vectors.ids() == set()  # nothing embedded while text was written

    summary = run_index(world, progress=progress)
    text = [s for s in seen if s[0] == "text"]
    vectors = [s for s in seen if s[0] == "vectors"]
    assert text[0] == ("text", 0, 40) and text[-1] == ("text", 40, 40)
    assert vectors[0] == ("vectors", 0, 40) and vectors[-1] == ("vectors", 40, 40)
    assert seen.index(text[-1]) < seen.index(vectors[0])
    assert summary.chunks_embedded == 40


def test_a_run_killed_in_phase_two_is_completed_by_embedding_only_what_is_missing() -> None:
    fs = corpus(10)
    fs.files["long.md"] = b"# A\nalpha words\n# B\nbeta words\n# C\ngamma words\n"
    world = deps(fs, FakeEmbedder())
    run_index(world)
    # one of long.md's three sections changes; another file is new
    fs.files["long.md"] = b"# A\nalpha words\n# B\nbeta words changed\n# C\ngamma words\n"
    fs.files["new.md"] = b"# New\ndelta words\n"
    dying = DyingEmbedder()
    world.embedder = dying
    with pytest.raises(RuntimeError):
        run_index(world)
    store = world.store
    assert isinstance(store, FakeIndexStore)
    missing = store.chunk_ids() - world.vectors.ids()
    assert len(missing) == 2  # the changed section and the new file; the rest was reused
    hits = searcher(world).search(SearchRequest("delta", mode="lexical")).results
    assert [h.path for h in hits] == ["new.md"]

    dying.dead, dying.calls = False, []
    summary = run_index(world)
    assert summary.chunks_embedded == 2 and dying.calls == [2]
    assert world.vectors.ids() == store.chunk_ids()
    assert searcher(world).search(SearchRequest("delta")).notice is None
