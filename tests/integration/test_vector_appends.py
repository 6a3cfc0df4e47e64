"""Phase two appends its vectors to LanceDB (decision 0045, session-10 addendum): with the
real stores, a run killed in the middle of phase two and run again leaves exactly one row
per chunk in the vector table, and search finds every file by its vector."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_core.models import Vector
from tests.conftest import write_files
from tests.hashing_embedder import HashingEmbedder

#: The model batch: phase two embeds 8 of them (32 chunks) per call, which reach the
#: model 8 texts at a time (the facade's stop checks come between two of those).
BATCH = 4
FILES = 100


class Killable(HashingEmbedder):
    """Fails every call from the ``dies_at``-th on, as a run killed there stops (each
    call before it has committed its vectors)."""

    def __init__(self, dies_at: int | None) -> None:
        super().__init__(dimension=1024)  # few words share a slot
        self.dies_at = dies_at
        self.calls = 0
        self.texts = 0

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.calls += 1
        if self.dies_at is not None and self.calls >= self.dies_at:
            raise RuntimeError("killed while embedding")
        self.texts += len(texts)
        return super().embed_documents(texts)


def word(i: int) -> str:
    return "qz" + "".join("abcdefghij"[int(d)] for d in f"{i:03d}")


def open_kb(root: Path, embedder: Killable) -> KnowledgeBase:
    settings = build_settings(None, cwd=root, kb_path=root, embedding_batch_size=BATCH)
    return KnowledgeBase(bootstrap(settings, embedder=embedder))


def rows_and_ids(kb: KnowledgeBase) -> tuple[int, set[int], set[int]]:
    """(rows in the vector table, the ids they hold, the chunk ids of the index)."""
    container = kb._container  # noqa: SLF001  (the stores behind the facade)
    return (container.vectors.count(), container.vectors.ids(),
            container.open_store().chunk_ids())


def test_a_run_killed_in_phase_two_and_run_again_leaves_one_vector_row_per_chunk(
        tmp_path: Path) -> None:
    root = tmp_path / "kb"
    write_files(root, {f"n{i:03d}.md": f"# Note {i}\n\n{word(i)} about shared things\n"
                       for i in range(FILES)})
    killed = open_kb(root, Killable(dies_at=9))
    with pytest.raises(RuntimeError):
        killed.index()
    rows, ids, chunks = rows_and_ids(killed)
    killed.close()
    assert rows == len(ids) == 64 and ids < chunks  # two calls of 32 committed

    write_files(root, {"new.md": "# New\n\nqznew about shared things\n"})
    again = Killable(dies_at=None)
    kb = open_kb(root, again)
    try:
        summary = kb.index()
        rows, ids, chunks = rows_and_ids(kb)
        assert rows == len(ids) == len(chunks) == FILES + 1 and ids == chunks
        assert summary.chunks_embedded == again.texts == FILES + 1 - 64  # only the missing
        for i in (0, 63, 64, FILES - 1):  # vectors of both runs, found by the vector leg
            hits = kb.search(f"{word(i)} about", mode="vector", limit=1).results
            assert [h.path for h in hits] == [f"n{i:03d}.md"]
    finally:
        kb.close()
