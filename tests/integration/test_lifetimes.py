"""One owner per lifetime: the model is warmed once, and an index run through the facade
reads each file once and checks the model once."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kbmcp_adapters import KnowledgeBase, bootstrap
from kbmcp_adapters.app import knowledge_base
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.filesystem.local import LocalFileSystem, OpenedFile
from kbmcp_adapters.mcp_server.runtime import KbRuntime
from kbmcp_core import index_deps, index_run
from kbmcp_core.models import Vector
from kbmcp_core.ports import Embedder, IndexMeta
from tests.conftest import write_files
from tests.fakes import FakeEmbedder, FakeVectorStore


class CountingFileSystem(LocalFileSystem):
    """The real root-bound file system, counting the reads of each file's bytes."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.reads: Counter[str] = Counter()

    @contextmanager
    def open_file(self, rel_path: str) -> Iterator[OpenedFile]:
        with super().open_file(rel_path) as handle:
            read = handle.read

            def counted(cap: int) -> bytes | None:
                self.reads[rel_path] += 1
                return read(cap)

            handle.read = counted  # type: ignore[method-assign]
            yield handle


class CountingEmbedder(FakeEmbedder):
    """The fake model, counting the queries it embeds (warming up embeds one)."""

    def __init__(self) -> None:
        super().__init__()
        self.queries = 0

    def embed_query(self, text: str) -> Vector:
        self.queries += 1
        return super().embed_query(text)


def open_counting(root: Path, embedder: Embedder | None = None
                  ) -> tuple[KnowledgeBase, CountingFileSystem]:
    """The real store, file system, walk and parsers; the model and vectors are fakes."""
    fs = CountingFileSystem(root)
    settings = build_settings(None, cwd=root, kb_path=root)
    kb = KnowledgeBase(bootstrap(settings, fs=fs, vectors=FakeVectorStore(),
                                 embedder=embedder or FakeEmbedder()))
    return kb, fs


def test_the_model_is_warmed_once_whoever_asks(tmp_path: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    """The server's tools, its watcher and Python callers share one knowledge base: the
    first to ask loads the model (and the server's log says so once), the others wait."""
    embedder = CountingEmbedder()
    kb, _ = open_counting(tmp_path, embedder)
    runtime = KbRuntime(kb.settings, open_kb=lambda _settings: kb)
    caplog.set_level(logging.INFO, logger="kbmcp_adapters.mcp_server.runtime")
    try:
        askers = [threading.Thread(target=runtime.ensure_model, args=(kb,)) for _ in range(4)]
        for t in askers:
            t.start()
        for t in askers:
            t.join()
        kb.warm_up()
        runtime.ensure_model(runtime.knowledge_base())
        assert embedder.queries == 1
        assert sum("loading embedding model" in r.message for r in caplog.records) == 1
        assert runtime.knowledge_base() is kb
    finally:
        runtime.close()


def test_each_file_is_read_once_per_run(tmp_path: Path) -> None:
    write_files(tmp_path, {"a.md": "# A\n\nAlpha text.\n", "b.md": "# B\n\nBeta text here.\n",
                           "docs/c.md": "# C\n\nGamma, a longer text than the others.\n"})
    kb, fs = open_counting(tmp_path)
    try:
        first = kb.index()  # a first index: the run's read is each file's only one
        assert first.added == 3
        assert fs.reads == {"a.md": 1, "b.md": 1, "docs/c.md": 1}

        fs.reads.clear()  # nothing changed: the walk hashes each file, nothing is parsed
        assert kb.index().unchanged == 3
        assert fs.reads == {"a.md": 1, "b.md": 1, "docs/c.md": 1}

        fs.reads.clear()  # an edit that changes the size, and a new file
        write_files(tmp_path, {"a.md": "# A\n\nAlpha text, now edited.\n",
                               "new.md": "# New\n\nA new note of its own size.\n"})
        again = kb.index()
        assert (again.updated, again.added, again.unchanged) == (1, 1, 2)
        assert fs.reads == {"a.md": 1, "b.md": 1, "docs/c.md": 1, "new.md": 1}
    finally:
        kb.close()


def test_renames_and_forced_runs_are_unchanged(tmp_path: Path) -> None:
    """A file of an indexed document's size is still hashed by the walk, so a moved file
    is still recognised; ``--force`` reads each file once."""
    write_files(tmp_path, {"a.md": "# A\n\nAlpha text.\n", "b.md": "# B\n\nBeta text.\n"})
    kb, fs = open_counting(tmp_path)
    try:
        kb.index()
        (tmp_path / "a.md").rename(tmp_path / "moved.md")
        moved = kb.index()
        assert (moved.renamed, moved.added, moved.deleted, moved.unchanged) == (1, 0, 0, 1)

        fs.reads.clear()
        forced = kb.index(force=True)
        assert forced.updated == 2
        assert fs.reads == {"b.md": 1, "moved.md": 1}
    finally:
        kb.close()


def test_the_model_is_checked_once_per_run(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(tmp_path, {"a.md": "# A\n\nAlpha text.\n"})
    checks: list[str] = []
    real = index_deps.check_model

    def counted(store: IndexMeta, embedder: Embedder, force: bool) -> None:
        checks.append(embedder.model_id)
        real(store, embedder, force)

    monkeypatch.setattr(index_run, "check_model", counted)
    monkeypatch.setattr(knowledge_base, "check_model", counted)
    kb, _ = open_counting(tmp_path)
    try:
        kb.index()
        assert len(checks) == 1
        kb.index(paths=["a.md"])  # the watcher's route too
        assert len(checks) == 2
    finally:
        kb.close()
