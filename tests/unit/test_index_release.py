"""An index run tells its owner when phase two is done, before the vectors are compacted,
so that ``kb-mcp index`` can release the model there (decision 0045, session-10 addendum):
the approximate index built by ``compact`` then does not sit on top of the model."""

from __future__ import annotations

from collections.abc import Sequence

from kbmcp_core.index_deps import IndexDeps
from kbmcp_core.index_run import IndexRun
from kbmcp_core.models import Vector
from tests.fakes import FakeEmbedder, FakeFileSystem, FakeVectorStore, fake_deps


class Recorded(FakeVectorStore):
    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events

    def compact(self) -> None:
        self.events.append("compact")


class RecordingEmbedder(FakeEmbedder):
    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.events.append("embed")
        return super().embed_documents(texts)


def folder(n: int) -> FakeFileSystem:
    return FakeFileSystem({f"n{i:02d}.md": f"# Note {i}\nword{i} text\n".encode()
                           for i in range(n)})


def deps_for(fs: FakeFileSystem, events: list[str]) -> IndexDeps:
    return fake_deps(fs, embedder=RecordingEmbedder(events), vectors=Recorded(events),
                     batch_size=1)  # 32 chunks per embedding call


def run(deps: IndexDeps, events: list[str], *, yield_to: bool = False) -> None:
    IndexRun(deps, embedded=lambda: events.append("embedded"),
             yield_to=(lambda: True) if yield_to else None).run()


def test_the_owner_is_told_after_the_last_embedding_and_before_the_compaction() -> None:
    events: list[str] = []
    run(deps_for(folder(70), events), events)
    assert events == ["embed", "embed", "embed", "embedded", "compact"]


def test_a_run_with_nothing_to_embed_tells_it_too_and_compacts_nothing() -> None:
    events: list[str] = []
    deps = deps_for(folder(3), events)
    run(deps, events)
    events.clear()
    run(deps, events)  # nothing changed
    assert events == ["embedded"]


def test_a_run_that_hands_phase_two_over_is_not_done_and_says_nothing() -> None:
    events: list[str] = []
    # one model batch, then the next run's turn
    run(deps_for(folder(3), events), events, yield_to=True)
    assert events == ["embed"]
