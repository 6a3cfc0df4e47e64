"""Live sync stays responsive while phase two runs (ADR 0017, "Where phase two runs"): a
file saved while a large copy is being embedded is keyword-searchable after its own
phase one, not after the whole of the copy's phase two; phase two then goes on by itself
and every chunk ends with its vector."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import Container, bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.live.watcher import Watcher
from kbmcp_core.meta_keys import META_IN_PROGRESS
from kbmcp_core.models import Vector
from tests.conftest import write_files
from tests.hashing_embedder import HashingEmbedder
from tests.integration.test_watcher import WAIT_S, Live

#: The model batch of these tests: a watcher sync embeds this many chunks per call.
BATCH = 4
#: Sections of the large file: one chunk each, many calls of phase two.
SECTIONS = 48


class GatedEmbedder(HashingEmbedder):
    """Each ``embed_documents`` call waits until the test releases it (or opens the gate)."""

    def __init__(self) -> None:
        super().__init__()
        self._cv = threading.Condition()
        self.entered = 0  # calls started
        self.released = 0  # calls allowed to finish
        self.open = True

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        with self._cv:
            self.entered += 1
            mine = self.entered
            self._cv.notify_all()
            assert self._cv.wait_for(lambda: self.open or self.released >= mine, WAIT_S * 3), \
                "the test never released this embedding call"
        return super().embed_documents(texts)

    def close_gate(self) -> None:
        with self._cv:
            self.open = False
            self.entered = self.released = 0

    def release_one(self) -> None:
        with self._cv:
            self.released += 1
            self._cv.notify_all()

    def open_gate(self) -> None:
        with self._cv:
            self.open = True
            self._cv.notify_all()

    def wait_entered(self, n: int, timeout: float = WAIT_S) -> bool:
        with self._cv:
            return self._cv.wait_for(lambda: self.entered >= n, timeout)


class World:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.gate = GatedEmbedder()
        settings = build_settings(None, cwd=root, kb_path=root, embedding_batch_size=BATCH)
        self.container: Container = bootstrap(settings, embedder=self.gate)
        self.kb = KnowledgeBase(self.container)
        self.live = Live(root, self.kb)

    def missing(self, *paths: str) -> int:
        """Chunks without a vector (of ``paths``, or of the whole index)."""
        store = self.container.store
        ids = set(store.chunk_ids_for(paths)) if paths else store.chunk_ids()
        return len(ids - self.container.vectors.ids())

    def finds(self, word: str, rel: str) -> bool:
        hits = self.kb.search(word, mode="lexical", limit=10).results
        return any(h.path == rel and word in h.content for h in hits)

    def in_progress(self) -> bool:
        return bool(self.container.store.get_meta(META_IN_PROGRESS))

    def wait_pending(self) -> None:
        """Until the watcher holds a file event (its debounce), so the next hand-over point
        sees it. Before this change the watcher read no event during a sync: then this
        wait runs to its deadline and the assertions after it tell what the user met."""
        _wait(lambda: self.live.w.status()["pending"] != 0, WAIT_S / 2)


def _wait(cond: Callable[[], bool], timeout: float) -> bool:
    """Re-check ``cond`` every 20 ms until it holds (True) or the deadline passes."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() >= deadline:
            return False
        threading.Event().wait(0.02)
    return True


def big_file() -> str:
    filler = " ".join(f"word{j}" for j in range(40))
    return "".join(f"# Part {i}\n\nbulkword{i} about the large copy: {filler}.\n\n"
                   for i in range(SECTIONS))


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    root = tmp_path / "kb"
    write_files(root, {"seed.md": "# Seed\n\nseedword lives here.\n"})
    w = World(root)
    w.kb.index()
    w.gate.close_gate()
    w.live.watcher = Watcher(w.kb, debounce_ms=200, on_synced=w.live.on_synced,
                             reconcile_on_start=False)
    w.live.w.start()
    assert w.live.w.wait_ready(WAIT_S), w.live.w.status()
    try:
        yield w
    finally:
        w.gate.open_gate()
        assert w.live.w.stop(timeout=WAIT_S), "the watcher thread did not end"
        w.kb.close()


def release_until(w: World, done: Callable[[], bool], calls: int) -> bool:
    """Release embedding calls one by one until ``done()``; after each, wait until the
    next call has started or ``done()`` holds. False when ``calls`` ran out first."""
    for n in range(1, calls + 1):
        w.gate.release_one()
        if not _wait(lambda n=n: done() or w.gate.entered > n, WAIT_S):  # type: ignore[misc]
            raise AssertionError(f"nothing happened after releasing call {n}: "
                                 f"{w.live.w.status()}")
        if done():
            return True
    return done()


def test_a_file_saved_during_phase_two_is_found_before_phase_two_ends(world: World) -> None:
    w = world
    w.live.write("big.md", big_file())
    assert w.gate.wait_entered(1), f"phase two never started: {w.live.w.status()}"
    assert w.finds("bulkword40", "big.md")  # phase one of the copy is done
    w.live.write("saved.md", "# Saved\n\nquokkasaved is the word of the saved note.\n")
    w.wait_pending()
    found = release_until(w, lambda: w.finds("quokkasaved", "saved.md"), SECTIONS)
    assert found, "the saved note was never found"
    assert w.missing("big.md") > 0, \
        "the saved note was found only after the copy's phase two had finished"
    left = w.missing()
    notice = w.kb.search("bulkword3").notice
    assert notice is not None and f"{left} chunks are searchable by keywords only" in notice
    assert w.in_progress()
    # the rest of phase two goes on by itself once the model answers again
    w.gate.open_gate()
    w.live.wait_until(lambda: w.missing() == 0 and not w.in_progress(),
                      "phase two to finish after the hand-over")
    store, vectors = w.container.store, w.container.vectors
    assert store.chunk_ids() == vectors.ids()
    assert len(store.chunk_ids_for(["big.md"])) == SECTIONS
    assert w.kb.search("bulkword3").notice is None
    status = w.live.w.status()
    assert status["last_error"] is None and status["alive"]
    assert all(r.summary.failed == 0 for r in w.live.reports)


def test_phase_two_goes_on_after_an_event_that_names_nothing_to_index(world: World) -> None:
    """The event that made the sync hand over may need no run of its own (a file kb-mcp
    does not index): phase two still continues without waiting for another change."""
    w = world
    w.live.write("big.md", big_file())
    assert w.gate.wait_entered(1), f"phase two never started: {w.live.w.status()}"
    w.live.write("scratch.tmp", "not indexed")
    w.wait_pending()
    handed = release_until(w, lambda: len(w.live.reports) > 0, SECTIONS)
    assert handed and w.missing("big.md") > 0, "the sync did not hand over to the new event"
    w.gate.open_gate()
    w.live.wait_until(lambda: w.missing() == 0 and not w.in_progress(),
                      "phase two to go on without a new event")
    assert w.container.store.chunk_ids() == w.container.vectors.ids()
    assert w.live.w.status()["last_error"] is None
