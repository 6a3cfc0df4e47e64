"""An index run appends the vectors of chunk ids the store cannot hold (ids it has just
made, or read as missing) instead of upserting them (decision 0045, session-10 addendum),
and a run killed in phase two and resumed still leaves exactly one vector per chunk."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kbmcp_core import index_vectors
from kbmcp_core.index_deps import IndexDeps
from kbmcp_core.index_run import run_index
from kbmcp_core.models import Vector
from tests.fakes import FakeEmbedder, FakeFileSystem, FakeIndexStore, FakeVectorStore, fake_deps

FILES = 40


def corpus() -> FakeFileSystem:
    return FakeFileSystem({f"n{i:02d}.md": f"# Note {i}\nword{i} shared text\n".encode()
                           for i in range(FILES)})


class DiesAfter(FakeEmbedder):
    """Embeds ``calls`` times, then fails as a killed run stops: every call before it
    committed its vectors."""

    def __init__(self, calls: int) -> None:
        super().__init__()
        self.left = calls
        self.texts = 0

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if self.left == 0:
            raise RuntimeError("killed while embedding")
        self.left -= 1
        self.texts += len(texts)
        return super().embed_documents(texts)


def world(fs: FakeFileSystem, embedder: FakeEmbedder | None = None) -> IndexDeps:
    # batch_size 1: phase two embeds 32 chunks a call, so 40 chunks take two calls
    return fake_deps(fs, embedder=embedder, batch_size=1)


def parts(deps: IndexDeps) -> tuple[FakeIndexStore, FakeVectorStore]:
    assert isinstance(deps.store, FakeIndexStore)
    assert isinstance(deps.vectors, FakeVectorStore)
    return deps.store, deps.vectors


def test_a_first_index_appends_every_vector_and_upserts_none() -> None:
    deps = world(corpus())
    run_index(deps)
    store, vectors = parts(deps)
    # two embedding calls, one commit: phase two gathers APPEND_ROWS before it appends
    assert vectors.appends == 1 and vectors.upserts == 0
    assert vectors.ids() == store.chunk_ids() and vectors.count() == FILES


def vector_of(deps: IndexDeps, path: str) -> Vector:
    store, vectors = parts(deps)
    [cid] = store.chunk_ids_for([path])
    return vectors.get({cid})[cid]


def test_reused_vectors_are_appended_to_the_new_chunks() -> None:
    fs = corpus()
    deps = world(fs)
    run_index(deps)
    store, vectors = parts(deps)
    old = vector_of(deps, "n01.md")
    fs.files["n00.md"] += b"\n# More\nan added section\n"  # one new chunk, one reused
    fs.files["moved.md"] = fs.files.pop("n01.md")  # renamed: its vector is reused
    vectors.appends = 0
    summary = run_index(deps)
    assert summary.chunks_reused == 2 and summary.chunks_embedded == 1
    assert vectors.upserts == 0 and vectors.appends == 2  # phase one's copy, phase two
    assert vectors.doubled == []
    assert vectors.ids() == store.chunk_ids() and vectors.count() == FILES + 1
    assert vector_of(deps, "moved.md") == old


@pytest.mark.parametrize("calls_before_the_kill", [0, 1])
def test_a_run_killed_in_phase_two_and_resumed_leaves_one_vector_per_chunk(
        calls_before_the_kill: int) -> None:
    fs = corpus()
    dying = DiesAfter(calls_before_the_kill)
    deps = world(fs, dying)
    with pytest.raises(RuntimeError):
        run_index(deps)
    store, vectors = parts(deps)
    assert vectors.count() == 32 * calls_before_the_kill  # what the killed run committed
    # the resumed run also has a file of its own to embed
    fs.files["new.md"] = b"# New\nword new\n"
    deps.embedder = resumed = DiesAfter(10)
    summary = run_index(deps)
    assert vectors.doubled == []  # no chunk id appended while the store held it
    assert vectors.ids() == store.chunk_ids() and vectors.count() == FILES + 1
    assert summary.chunks_embedded == FILES + 1 - 32 * calls_before_the_kill
    assert resumed.texts == summary.chunks_embedded  # only what had no vector


def many(n: int) -> FakeFileSystem:
    return FakeFileSystem({f"m{i:03d}.md": f"# Note {i}\nword{i} shared text\n".encode()
                           for i in range(n)})


class Calls(FakeEmbedder):
    """Counts its embedding calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.calls += 1
        return super().embed_documents(texts)


def test_phase_two_appends_many_embedding_calls_in_one_commit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each append is a commit, a new version of the vector table (in object storage about
    nine listings of every version: decision 0058's addendum "PostgreSQL + S3 at scale"):
    phase two gathers ``APPEND_ROWS`` vectors before it appends them."""
    embedder = Calls()
    deps = world(many(200), embedder)  # 32 chunks a call: 7 calls
    run_index(deps)
    store, vectors = parts(deps)
    assert embedder.calls == 7 and vectors.appends == 1
    assert vectors.ids() == store.chunk_ids() and vectors.count() == 200

    monkeypatch.setattr(index_vectors, "APPEND_ROWS", 64)  # two calls a commit
    embedder = Calls()
    deps = world(many(200), embedder)
    run_index(deps)
    store, vectors = parts(deps)
    assert embedder.calls == 7 and vectors.appends == 4  # 64, 64, 64, then the last 8
    assert vectors.ids() == store.chunk_ids() and vectors.doubled == []


def test_a_run_stopped_in_the_model_keeps_every_vector_it_had_gathered() -> None:
    """The vectors gathered and not yet appended are appended when the run stops (the
    model fails, a stop is asked for): the next run embeds only what has none."""
    fs = many(200)
    deps = world(fs, DiesAfter(3))
    with pytest.raises(RuntimeError):
        run_index(deps)
    store, vectors = parts(deps)
    assert vectors.appends == 1 and vectors.count() == 96  # three calls' vectors
    deps.embedder = resumed = DiesAfter(10)
    summary = run_index(deps)
    assert summary.chunks_embedded == 200 - 96 == resumed.texts
    assert vectors.ids() == store.chunk_ids() and vectors.doubled == []


def test_a_run_handing_over_to_file_events_appends_after_every_call() -> None:
    """The watcher's runs (``yield_to``) keep their vectors searchable call by call."""
    embedder = Calls()
    deps = world(many(200), embedder)
    run_index(deps, yield_to=lambda: False)
    store, vectors = parts(deps)
    assert embedder.calls == vectors.appends == 200  # batch_size 1: a chunk a call
    assert vectors.ids() == store.chunk_ids()
