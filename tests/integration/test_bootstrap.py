"""The composition root: every adapter handed to ``bootstrap`` is the one the facade uses."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kbmcp_adapters import KnowledgeBase, bootstrap
from kbmcp_adapters.app.bootstrap import OpenedStore
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.filesystem.local import Entry, LocalFileSystem, OpenedFile
from kbmcp_core.models import SKIP_IGNORED, DiskFile, DiskScan
from kbmcp_core.ports import (
    Clock,
    Embedder,
    ExclusionPolicy,
    FileSystem,
    ParserRegistry,
    Scanner,
    VectorStore,
)
from tests.conftest import write_files
from tests.fakes import (
    FakeClock,
    FakeEmbedder,
    FakeFileSystem,
    FakeIndexStore,
    FakeRegistry,
    FakeScanner,
    FakeVectorStore,
)

NOTE = "# Granite\n\nGranite is an igneous rock from the disk.\n"


class ReadableFakeStore(FakeIndexStore):
    """The shared fake store, plus the one fact the composition root also reads."""

    read_only = False


class SkipSecrets:
    """Exclusion rules that know one thing: files named ``secret*`` stay out."""

    def reason(self, rel_path: str, is_dir: bool = False) -> str | None:
        name = rel_path.rsplit("/", 1)[-1]
        return SKIP_IGNORED if not is_dir and name.startswith("secret") else None

    def is_excluded(self, rel_path: str, is_dir: bool = False) -> bool:
        return self.reason(rel_path, is_dir) is not None


def open_with(
    root: Path,
    *,
    store: OpenedStore | None = None,
    vectors: VectorStore | None = None,
    embedder: Embedder | None = None,
    fs: FileSystem | None = None,
    registry: ParserRegistry | None = None,
    rules: ExclusionPolicy | None = None,
    scanner: Scanner | None = None,
    clock: Clock | None = None,
) -> KnowledgeBase:
    """A knowledge base on ``root``; the model and the vector store are fakes unless
    given (no model download, no LanceDB), every other port is real unless given."""
    settings = build_settings(None, cwd=root, kb_path=root)
    return KnowledgeBase(bootstrap(
        settings, store=store, vectors=vectors or FakeVectorStore(),
        embedder=embedder or FakeEmbedder(), fs=fs, registry=registry, rules=rules,
        scanner=scanner, clock=clock))


def test_a_given_scanner_is_the_walk_index_sees(tmp_path: Path) -> None:
    write_files(tmp_path, {"on-disk.md": NOTE})
    fs = FakeFileSystem({"only/in-the-fake.md": b"# Basalt\n\nBasalt from the fake scanner.\n"})
    kb = open_with(tmp_path, scanner=FakeScanner(fs), fs=fs)
    try:
        assert set(kb.scan().files) == {"only/in-the-fake.md"}
        summary = kb.index()
        assert summary.added == 1
        assert kb.indexed_paths() == ["only/in-the-fake.md"]
        assert kb.search("basalt").results[0].path == "only/in-the-fake.md"
    finally:
        kb.close()


def test_given_rules_decide_what_is_indexed_and_what_the_watcher_skips(
    tmp_path: Path,
) -> None:
    write_files(tmp_path, {"a.md": NOTE, "secret-plans.md": NOTE, "notes/secret.md": NOTE})
    rules = SkipSecrets()
    kb = open_with(tmp_path, rules=rules)
    try:
        assert kb.exclusion_rules() is rules
        summary = kb.index()
        assert kb.indexed_paths() == ["a.md"]
        assert summary.skipped_reasons.get(SKIP_IGNORED) == 2
    finally:
        kb.close()


def test_a_given_store_holds_the_index(tmp_path: Path) -> None:
    write_files(tmp_path, {"a.md": NOTE})
    store = ReadableFakeStore()
    kb = open_with(tmp_path, store=store)
    try:
        kb.index()
        assert store.document_paths() == ["a.md"] == kb.indexed_paths()
        assert kb.stats().documents == 1
        assert not (tmp_path / ".kb-mcp" / "index.db").exists()
    finally:
        kb.close()
    assert store.document_paths() == ["a.md"]  # a given store is its owner's to close


def test_given_vectors_receive_every_chunk_and_serve_search(tmp_path: Path) -> None:
    write_files(tmp_path, {"a.md": NOTE, "b.md": "# Slate\n\nSlate splits into sheets.\n"})
    vectors = FakeVectorStore()
    kb = open_with(tmp_path, vectors=vectors)
    try:
        kb.index()
        assert vectors.count() == kb.stats().chunks > 0
        assert kb.search("slate sheets").results[0].path == "b.md"
        assert not (tmp_path / ".kb-mcp" / "vectors").exists()
    finally:
        kb.close()


def test_a_given_embedder_embeds_what_is_indexed(tmp_path: Path) -> None:
    write_files(tmp_path, {"a.md": NOTE})
    embedder = FakeEmbedder("my-own-model")
    kb = open_with(tmp_path, embedder=embedder)
    try:
        kb.index()
        assert any("igneous rock" in text for text in embedder.embedded)
        assert kb.stats().model_id == "my-own-model"
        kb.warm_up()  # loads the given model: nothing else to fetch
    finally:
        kb.close()


def test_a_given_fs_serves_get_document(tmp_path: Path) -> None:
    write_files(tmp_path, {"a.md": NOTE})
    fs = FakeFileSystem({"a.md": b"# Granite\n\nThe fake filesystem's granite.\n"})
    kb = open_with(tmp_path, fs=fs, scanner=FakeScanner(fs))
    try:
        assert "The fake filesystem's granite." in kb.get_document("a.md").content
        assert fs.reads == ["a.md"]
    finally:
        kb.close()


class RecordingFileSystem(LocalFileSystem):
    """The real root-bound file system, noting every folder listed and file opened."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.listed: list[str] = []
        self.opened: list[str] = []

    def entries(self, rel_dir: str) -> list[Entry]:
        self.listed.append(rel_dir)
        return super().entries(rel_dir)

    @contextmanager
    def open_file(self, rel_path: str) -> Iterator[OpenedFile]:
        self.opened.append(rel_path)
        with super().open_file(rel_path) as handle:
            yield handle


def test_a_given_fs_is_the_one_the_default_scanner_walks(tmp_path: Path) -> None:
    write_files(tmp_path, {"a.md": NOTE, "notes/b.md": "# Slate\n\nSlate splits.\n"})
    fs = RecordingFileSystem(tmp_path)
    kb = open_with(tmp_path, fs=fs)
    try:
        assert set(kb.scan().files) == {"a.md", "notes/b.md"}
        assert sorted(fs.listed) == ["", "notes"]
        assert {"a.md", "notes/b.md"} <= set(fs.opened)
        fs.listed.clear()
        kb.index()
        assert sorted(fs.listed) == ["", "notes"]  # the index run walks it too
    finally:
        kb.close()


def test_a_given_fs_that_cannot_be_walked_needs_a_scanner(tmp_path: Path) -> None:
    settings = build_settings(None, cwd=tmp_path, kb_path=tmp_path)
    with pytest.raises(ValueError, match="a given fs needs a given scanner"):
        bootstrap(settings, fs=FakeFileSystem({"a.md": b"# A\n"}))
    bootstrap(settings, fs=FakeFileSystem(), scanner=FakeScanner(FakeFileSystem())).close()


def test_a_given_registry_parses_what_is_indexed(tmp_path: Path) -> None:
    write_files(tmp_path, {"a.md": "title: Named by the fake parser\n# Granite\n\nrock\n",
                           "b.txt": "plain text the fake registry does not know\n"})
    kb = open_with(tmp_path, registry=FakeRegistry())
    try:
        assert kb.enabled_extensions() == frozenset({"md"})
        kb.index()
        assert kb.indexed_paths() == ["a.md"]
        row = kb.document("a.md")
        assert row is not None and row.title == "Named by the fake parser"
    finally:
        kb.close()


def test_a_given_clock_dates_the_rows_and_the_run(tmp_path: Path) -> None:
    write_files(tmp_path, {"a.md": NOTE})
    clock = FakeClock()
    kb = open_with(tmp_path, clock=clock)
    try:
        kb.index()
        row = kb.document("a.md")
        assert row is not None and row.last_indexed.startswith("2026-01-01T00:00:")
        last_run = kb.stats().last_run or {}
        assert str(last_run.get("finished_at", "")).startswith("2026-01-01T00:00:")
        assert kb.now_iso() == f"2026-01-01T00:00:{clock.tick:02d}Z"
    finally:
        kb.close()


def test_without_overrides_the_real_adapters_are_built(tmp_path: Path) -> None:
    write_files(tmp_path, {"a.md": NOTE, ".kb-mcpignore": "drafts/\n", "drafts/b.md": NOTE})
    kb = open_with(tmp_path)
    try:
        scan = kb.scan()
        assert set(scan.files) == {"a.md"}
        assert isinstance(scan, DiskScan) and isinstance(scan.files["a.md"], DiskFile)
        assert kb.exclusion_rules().is_excluded("drafts/b.md")
        assert {"md", "markdown"} <= kb.enabled_extensions()
        kb.index()
        assert (tmp_path / ".kb-mcp" / "index.db").is_file()
        assert kb.indexed_paths() == ["a.md"]
        assert kb.is_read_only() is False
    finally:
        kb.close()
