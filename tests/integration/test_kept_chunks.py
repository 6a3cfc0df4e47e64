"""An edit rewrites only the chunks that changed (decision 0058, second addendum): on the
real SQLite store and LanceDB, the sections of a note whose text is the same keep their
ids, their keyword rows and their one vector; what changed is found by its new words."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import Container, bootstrap, settings_for
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_core.models import RunSummary
from tests.conftest import write_files
from tests.hashing_embedder import HashingEmbedder


def _section(heading: str, sentence: str) -> str:
    """A section long enough to be a chunk of its own."""
    filler = " ".join(f"{heading.lower()}{n}" for n in range(250))
    return f"# {heading}\n\n{sentence}\n\n{filler}\n\n"


NOTE = (_section("Harbour", "Anchors hold the ships at the quay.")
        + _section("Lights", "Lighthouses guide sailors past the reef."))


def _ids(container: Container, path: str) -> list[int]:
    return [cid for cid, _ in container.store.chunks_of([path])[path]]


def _paths(kb: KnowledgeBase, query: str) -> set[str]:
    return {hit.path for hit in kb.search(query, mode="lexical").results}


@dataclass
class Opened:
    root: Path
    container: Container
    kb: KnowledgeBase

    def edit(self, text: str) -> tuple[list[int], list[int], RunSummary]:
        """a.md indexed, then written as ``text`` and indexed again: its chunk ids before,
        after, and the second run's summary."""
        self.kb.index()
        before = _ids(self.container, "a.md")
        (self.root / "a.md").write_text(text)
        summary = self.kb.index()
        return before, _ids(self.container, "a.md"), summary

    def assert_whole(self) -> None:
        """Keyword rows for every chunk, and one vector each (none twice)."""
        store = self.container.store
        facts = store.consistency()
        assert facts.chunk_ids == facts.lexical_ids
        assert self.container.vectors.count() == len(store.chunk_ids())


@pytest.fixture
def opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Opened]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = tmp_path / "kb"
    write_files(root, {"a.md": NOTE, "b.md": "# Other\n\nGulls circle the pier.\n"})
    container = bootstrap(settings_for(root), embedder=HashingEmbedder())
    kb = KnowledgeBase(container)
    yield Opened(root, container, kb)
    kb.close()


def test_an_appended_section_keeps_the_other_sections_rows_and_vectors(
        opened: Opened) -> None:
    before, after, summary = opened.edit(NOTE + _section("Buoys", "Buoys mark the channel."))
    assert after[:len(before)] == before and len(after) > len(before)
    assert (summary.chunks_embedded, summary.chunks_reused) == (
        len(after) - len(before), len(before))
    opened.assert_whole()
    assert _paths(opened.kb, "lighthouses") == {"a.md"} == _paths(opened.kb, "buoys channel")


def test_a_section_whose_words_changed_is_found_by_its_new_words_only(
        opened: Opened) -> None:
    before, after, summary = opened.edit(NOTE.replace("Lighthouses guide", "Pilots steer"))
    new = set(after) - set(before)
    assert 0 < len(new) == summary.chunks_embedded < len(after)  # the rest kept
    assert summary.chunks_reused == len(after) - len(new)
    assert _paths(opened.kb, "lighthouses") == set()
    assert _paths(opened.kb, "pilots") == {"a.md"} == _paths(opened.kb, "anchors quay")
    opened.assert_whole()
