"""An edit rewrites only the chunks that changed (decision 0058, second addendum): on the
real SQLite store and LanceDB, the sections of a note whose text is the same keep their
ids, their keyword rows and their one vector; what changed is found by its new words."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap, settings_for
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from tests.conftest import write_files
from tests.hashing_embedder import HashingEmbedder


def _section(heading: str, sentence: str) -> str:
    """A section long enough to be a chunk of its own."""
    filler = " ".join(f"{heading.lower()}{n}" for n in range(250))
    return f"# {heading}\n\n{sentence}\n\n{filler}\n\n"


NOTE = (_section("Harbour", "Anchors hold the ships at the quay.")
        + _section("Lights", "Lighthouses guide sailors past the reef."))


def _ids(container: object, path: str) -> list[int]:
    store = container.store  # type: ignore[attr-defined]
    return [cid for cid, _ in store.chunks_of([path])[path]]


def _paths(kb: KnowledgeBase, query: str) -> set[str]:
    return {hit.path for hit in kb.search(query, mode="lexical").results}


@pytest.fixture
def opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, object]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = tmp_path / "kb"
    write_files(root, {"a.md": NOTE, "b.md": "# Other\n\nGulls circle the pier.\n"})
    return root, bootstrap(settings_for(root), embedder=HashingEmbedder())


def test_an_appended_section_keeps_the_other_sections_rows_and_vectors(
        opened: tuple[Path, object]) -> None:
    root, container = opened
    kb = KnowledgeBase(container)  # type: ignore[arg-type]
    try:
        kb.index()
        before = _ids(container, "a.md")
        (root / "a.md").write_text(NOTE + _section("Buoys", "Buoys mark the channel."))
        summary = kb.index()
        after = _ids(container, "a.md")
        assert after[:len(before)] == before and len(after) > len(before)
        assert (summary.chunks_embedded, summary.chunks_reused) == (
            len(after) - len(before), len(before))
        store, vectors = container.store, container.vectors  # type: ignore[attr-defined]
        facts = store.consistency()
        assert facts.chunk_ids == facts.lexical_ids
        assert vectors.count() == len(store.chunk_ids())  # no vector twice
        assert _paths(kb, "lighthouses") == {"a.md"} == _paths(kb, "buoys channel")
    finally:
        kb.close()


def test_a_section_whose_words_changed_is_found_by_its_new_words_only(
        opened: tuple[Path, object]) -> None:
    root, container = opened
    kb = KnowledgeBase(container)  # type: ignore[arg-type]
    try:
        kb.index()
        before = _ids(container, "a.md")
        (root / "a.md").write_text(NOTE.replace("Lighthouses guide", "Pilots steer"))
        summary = kb.index()
        after = _ids(container, "a.md")
        new = set(after) - set(before)
        assert 0 < len(new) == summary.chunks_embedded < len(after)  # the rest kept
        assert summary.chunks_reused == len(after) - len(new)
        assert _paths(kb, "lighthouses") == set()
        assert _paths(kb, "pilots") == {"a.md"} == _paths(kb, "anchors quay")
        store = container.store  # type: ignore[attr-defined]
        facts = store.consistency()
        assert facts.chunk_ids == facts.lexical_ids
        assert container.vectors.count() == len(store.chunk_ids())  # type: ignore[attr-defined]
    finally:
        kb.close()
