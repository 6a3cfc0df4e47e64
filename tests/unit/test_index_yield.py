"""Phase two hands over to new file events (the watcher's syncs, ADR 0017): between two
embedding calls the run asks its caller whether changes are waiting; if so it ends there
as a stopped run does (chunks without vectors stay, ``run_in_progress`` stays set), and
the next run embeds exactly what is left."""

from __future__ import annotations

from collections.abc import Sequence

from kbmcp_core.index_deps import IndexDeps
from kbmcp_core.index_run import run_index
from kbmcp_core.meta_keys import META_IN_PROGRESS
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

#: One-chunk files; with a batch size of 4 a handing-over run embeds 4 chunks per call.
FILES = 40
BATCH = 4


def word(i: int) -> str:
    """A word only file ``i`` holds (letters only, so no tokenizer splits it)."""
    return "zq" + "".join("abcdefghij"[int(d)] for d in f"{i:03d}")


class CallsEmbedder(FakeEmbedder):
    """Records the texts of every embedding call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.calls.append(list(texts))
        return super().embed_documents(texts)


def world(n: int = FILES) -> tuple[IndexDeps, CallsEmbedder, FakeFileSystem]:
    fs = FakeFileSystem({f"n{i:03d}.md": f"# Note {i}\n{word(i)} shared\n".encode()
                         for i in range(n)})
    emb = CallsEmbedder()
    deps = fake_deps(fs, embedder=emb, batch_size=BATCH)
    return deps, emb, fs


def searcher(deps: IndexDeps) -> Searcher:
    assert isinstance(deps.store, FakeIndexStore)
    return Searcher(deps.store, deps.vectors, deps.embedder,
                    OfferRules(deps.store, FakeRegistry()),
                    defaults=SearchDefaults(max_limit=50))


def finds(deps: IndexDeps, term: str) -> list[str]:
    return [h.path for h in searcher(deps).search(SearchRequest(term, mode="lexical")).results]


def missing(deps: IndexDeps) -> set[int]:
    assert isinstance(deps.store, FakeIndexStore)
    return deps.store.chunk_ids() - deps.vectors.ids()


def test_a_run_hands_over_after_an_embedding_call_and_the_next_run_embeds_the_rest() -> None:
    deps, emb, _ = world()
    summary = run_index(deps, yield_to=lambda: len(emb.calls) >= 1)
    # not a failure: the run returns its summary, every row is written
    assert summary.added == FILES and summary.failed == 0 and not summary.warnings
    assert summary.chunks_embedded == BATCH and [len(c) for c in emb.calls] == [BATCH]
    for i in range(FILES):
        assert finds(deps, word(i)) == [f"n{i:03d}.md"]
    # phase two ended at the safe point, as a stopped run leaves it
    assert len(missing(deps)) == FILES - BATCH
    assert deps.store.get_meta(META_IN_PROGRESS)
    notice = searcher(deps).search(SearchRequest("shared")).notice
    assert notice is not None and f"{FILES - BATCH} chunks are searchable by keywords only" \
        in notice

    left = missing(deps)
    emb.calls.clear()
    again = run_index(deps)  # `kb-mcp index`: no predicate, one pass to the end
    embedded = {t for call in emb.calls for t in call}
    assert again.chunks_embedded == FILES - BATCH == len(embedded)
    assert again.added == 0 and again.updated == 0
    assert not missing(deps) and len(left) == FILES - BATCH
    assert not deps.store.get_meta(META_IN_PROGRESS)
    assert searcher(deps).search(SearchRequest("shared")).notice is None


def test_the_predicate_is_asked_only_between_calls_so_every_run_makes_progress() -> None:
    deps, emb, _ = world()
    asked: list[int] = []

    def never() -> bool:
        asked.append(len(emb.calls))
        return False

    summary = run_index(deps, yield_to=never)
    calls = FILES // BATCH
    assert [len(c) for c in emb.calls] == [BATCH] * calls  # one model batch per call
    assert asked == list(range(1, calls))  # after each call but the last, never before one
    assert summary.chunks_embedded == FILES and not missing(deps)
    assert not deps.store.get_meta(META_IN_PROGRESS)

    # a predicate that is always true still lets each run embed one call
    deps, emb, _ = world()
    run_index(deps, yield_to=lambda: True)
    assert [len(c) for c in emb.calls] == [BATCH]


def test_the_run_that_takes_over_writes_the_new_file_and_embeds_it_first() -> None:
    deps, emb, fs = world()
    run_index(deps, yield_to=lambda: True)
    fs.files["new.md"] = b"# New\nzqnewcomer words\n"
    emb.calls.clear()
    summary = run_index(deps, paths=["new.md"], yield_to=lambda: True)  # the watcher's run
    assert summary.added == 1 and finds(deps, "zqnewcomer") == ["new.md"]
    assert len(emb.calls) == 1 and any("zqnewcomer" in t for t in emb.calls[0])
    assert len(missing(deps)) == FILES - 2 * BATCH + 1

    emb.calls.clear()
    rest = run_index(deps, paths=[])  # no file named: it only continues phase two
    assert rest.chunks_embedded == FILES - 2 * BATCH + 1 and rest.added == 0
    assert not missing(deps) and not deps.store.get_meta(META_IN_PROGRESS)
    assert deps.store.chunk_ids() == deps.vectors.ids()
