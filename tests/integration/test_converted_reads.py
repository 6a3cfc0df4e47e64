"""Reads of converted documents (HTML, Office, EPUB, PDF) on the real store: the text the
index run kept is served, keyed by the file's bytes, and conversions are bounded (0023)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.app.migrate_store import migrate_store
from kbmcp_adapters.parsers.registry import FormatRegistry, build_registry
from kbmcp_core.errors import ReadBusy
from kbmcp_core.meta_keys import META_CONVERSIONS
from kbmcp_core.models import ParsedDocument
from kbmcp_core.outline import HeadingMark
from kbmcp_core.ports import ChunkBudget, Parser
from kbmcp_core.reading import (
    CONVERTED_FORMATS,
    EXTRACTED_TEXT_CAP,
    ConversionGate,
    cut_utf8,
)
from kbmcp_core.uris import doc_uri
from tests.conftest import make_big_pdf, write_files
from tests.fakes import FakeEmbedder
from tests.fixtures.formats_kb import build_formats_kb

FORMATS = ("md", "pdf", "html", "docx", "pptx", "xlsx", "epub")
DEADLINE_S = 20.0


class CountingParser:
    """A real parser whose every call is counted."""

    def __init__(self, inner: Parser, calls: list[tuple[str, str]]) -> None:
        self.inner = inner
        self.extensions = inner.extensions
        self.calls = calls

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        self.calls.append(("parse", path))
        return self.inner.parse(path, data, budget)

    def extract_text(self, path: str, data: bytes) -> str:
        self.calls.append(("extract_text", path))
        return self.inner.extract_text(path, data)

    def headings(self, path: str, text: str) -> Sequence[HeadingMark] | None:
        self.calls.append(("headings", path))
        return self.inner.headings(path, text)


class CountingRegistry:
    """The real registry for ``FORMATS``, counting the calls of every parser."""

    def __init__(self, real: FormatRegistry) -> None:
        self.real = real
        self.calls: list[tuple[str, str]] = []

    def extensions(self) -> frozenset[str]:
        return self.real.extensions()

    def conversion_versions(self) -> Mapping[str, int]:
        return self.real.conversion_versions()

    def supports(self, extension: str) -> bool:
        return self.real.supports(extension)

    def parser_for(self, extension: str) -> Parser | None:
        parser = self.real.parser_for(extension)
        return None if parser is None else CountingParser(parser, self.calls)


def open_kb(root: Path, registry: object, gate: ConversionGate | None = None
            ) -> KnowledgeBase:
    settings = build_settings(None, cwd=root, kb_path=root, enabled_formats=FORMATS)
    return KnowledgeBase(bootstrap(settings, embedder=FakeEmbedder(),
                                   registry=registry),  # type: ignore[arg-type]
                         conversions=gate)


def fresh(root: Path, rel: str) -> tuple[str, bool]:
    """What converting the file now gives, cut as a read cuts it."""
    parser = build_registry(FORMATS).parser_for(rel.rsplit(".", 1)[1])
    assert parser is not None
    return cut_utf8(parser.extract_text(rel, (root / rel).read_bytes()), EXTRACTED_TEXT_CAP)


def big_table_page(rows: int) -> str:
    body = "".join(f"<tr><td>row {n}</td><td>lantern {n * 7}</td><td>ok</td></tr>"
                   for n in range(rows))
    return (f"<html><head><title>Ledger</title></head><body><h1>Ledger</h1>"
            f"<table><tr><th>name</th><th>value</th><th>state</th></tr>{body}</table>"
            "</body></html>")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[Path, KnowledgeBase, CountingRegistry]]:
    """Built once for the module: each test clears the call log first, and an edit a test
    makes is indexed before it ends, so every test sees served text equal to a fresh
    conversion of the file as it is."""
    root = tmp_path_factory.mktemp("converted") / "kb"
    build_formats_kb(root)
    make_big_pdf(root / "papers/telemetry.pdf", pages=20)
    write_files(root, {"big/ledger.html": big_table_page(40_000)})  # > 1 MiB of Markdown
    registry = CountingRegistry(build_registry(FORMATS))
    kb = open_kb(root, registry)
    summary = kb.index()
    assert summary.failed == 0, summary.warnings
    yield root, kb, registry
    kb.close()


def converted_paths(kb: KnowledgeBase) -> list[str]:
    return [p for p in kb.indexed_paths()
            if p.rsplit(".", 1)[1] in CONVERTED_FORMATS | {"pdf"}]


def test_reads_of_an_indexed_converted_document_call_no_parser_and_serve_its_conversion(
        indexed: tuple[Path, KnowledgeBase, CountingRegistry]) -> None:
    root, kb, registry = indexed
    paths = converted_paths(kb)
    assert {p.rsplit(".", 1)[1] for p in paths} == {"html", "docx", "pptx", "xlsx", "epub",
                                                     "pdf"}
    registry.calls.clear()
    for path in paths:
        first, second = kb.get_document(path), kb.get_document(path)
        text, truncated = fresh(root, path)
        assert first.content == second.content == text  # byte for byte the conversion
        assert first.truncated is second.truncated is truncated
        body = kb.read_resource(doc_uri(path))
        assert body.text.startswith(text)
    # no conversion; a long one's outline is its served Markdown's headings, scanned
    assert [call for call in registry.calls if call[0] != "headings"] == []
    assert kb.get_document("big/ledger.html").truncated is True


def test_an_edited_file_is_converted_afresh_and_the_next_run_keeps_its_new_text(
        indexed: tuple[Path, KnowledgeBase, CountingRegistry]) -> None:
    root, kb, registry = indexed
    path = "wiki/oncall-runbook.html"
    old = kb.get_document(path).content
    page = (root / path).read_text(encoding="utf-8")
    (root / path).write_text(page.replace("</main>", "<p>Pager rota moved to Fridays.</p>"
                                          "</main>"), encoding="utf-8")
    registry.calls.clear()
    edited = kb.get_document(path)  # new bytes: the kept text is not theirs
    assert "Pager rota moved to Fridays." in edited.content
    assert edited.content != old
    assert registry.calls == [("extract_text", path)]

    kb.index()
    registry.calls.clear()
    assert kb.get_document(path).content == edited.content
    assert registry.calls == []


def test_a_read_before_any_index_converts_and_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    write_files(root, {"page.html": big_table_page(10)})
    registry = CountingRegistry(build_registry(FORMATS))
    kb = open_kb(root, registry)
    try:
        assert "lantern 63" in kb.get_document("page.html").content
        assert registry.calls == [("extract_text", "page.html")]
        assert not (root / ".kb-mcp").exists()
    finally:
        kb.close()


class SlowParser:
    """An HTML parser whose conversions hold until released; it counts how many run."""

    extensions: tuple[str, ...] = ("html",)

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        raise AssertionError("no index run in these tests")

    def extract_text(self, path: str, data: bytes) -> str:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            assert self.release.wait(DEADLINE_S), "the test never released the parser"
            return data.decode("utf-8")
        finally:
            with self.lock:
                self.running -= 1

    def headings(self, path: str, text: str) -> tuple[HeadingMark, ...]:
        return ()


class SlowRegistry:
    def __init__(self, parser: SlowParser) -> None:
        self.parser = parser

    def extensions(self) -> frozenset[str]:
        return frozenset({"html"})

    def conversion_versions(self) -> Mapping[str, int]:
        return {"html": 1}

    def supports(self, extension: str) -> bool:
        return extension == "html"

    def parser_for(self, extension: str) -> SlowParser | None:
        return self.parser if extension == "html" else None


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def read(kb: KnowledgeBase, path: str) -> str:
    return kb.get_document(path).content


@pytest.fixture
def slow_pages(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    write_files(root, {f"p{n}.html": f"page {n}" for n in range(6)})
    return root


def test_concurrent_conversions_are_bounded_and_the_rest_wait_their_turn(
        slow_pages: Path) -> None:
    parser = SlowParser()
    gate = ConversionGate(slots=2, wait_s=DEADLINE_S)
    kb = open_kb(slow_pages, SlowRegistry(parser), gate)
    with ThreadPoolExecutor(6) as pool:
        reads: list[Future[str]] = [
            pool.submit(read, kb, f"p{n}.html") for n in range(6)]
        try:
            wait_until(lambda: parser.running == 2 and gate.waiting == 4)
            assert parser.running == 2  # four reads wait at the gate, none converts
        finally:
            parser.release.set()
        assert [r.result(DEADLINE_S) for r in reads] == [f"page {n}" for n in range(6)]
    assert parser.most == 2
    kb.close()


def test_a_read_that_waits_past_its_deadline_is_refused_as_busy(slow_pages: Path) -> None:
    parser = SlowParser()
    kb = open_kb(slow_pages, SlowRegistry(parser), ConversionGate(slots=1, wait_s=0.2))
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(lambda: kb.get_document("p0.html").content)
        try:
            wait_until(lambda: parser.running == 1)
            with pytest.raises(ReadBusy) as refused:
                kb.get_document("p1.html")
        finally:
            parser.release.set()
        assert first.result(DEADLINE_S) == "page 0"
    assert refused.value.code == "server_busy"
    assert "try again" in str(refused.value)
    assert parser.most == 1
    kb.close()


def test_a_kept_conversion_is_served_while_every_slot_is_taken(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    write_files(root, {"kept.html": big_table_page(5)})
    kb = open_kb(root, build_registry(FORMATS))
    kb.index()
    kept = kb.get_document("kept.html").content
    kb.close()
    write_files(root, {"slow.html": "slow page"})  # not indexed: its read converts
    parser = SlowParser()

    class Mixed(SlowRegistry):
        def parser_for(self, extension: str) -> SlowParser | None:
            return parser

    kb = open_kb(root, Mixed(parser), ConversionGate(slots=1, wait_s=0.2))
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(lambda: kb.get_document("slow.html").content)
        try:
            wait_until(lambda: parser.running == 1)
            assert kb.get_document("kept.html").content == kept  # no slot needed
        finally:
            parser.release.set()
        assert slow.result(DEADLINE_S) == "slow page"
    kb.close()


def test_an_index_from_before_kept_texts_is_read_by_converting_and_filled_by_one_run(
        tmp_path: Path) -> None:
    root = tmp_path / "kb"
    write_files(root, {"page.html": big_table_page(20), "notes.md": "# Notes\n\nplain\n"})
    registry = CountingRegistry(build_registry(FORMATS))
    kb = open_kb(root, registry)
    kb.index()
    kb.close()
    with sqlite3.connect(root / ".kb-mcp" / "index.db") as conn:  # as kb-mcp 0003 left it
        conn.execute("DELETE FROM converted_text")
        conn.execute("DELETE FROM index_meta WHERE key = ?", (META_CONVERSIONS,))
    conn.close()

    kb = open_kb(root, registry)
    registry.calls.clear()
    text = kb.get_document("page.html").content
    assert registry.calls == [("extract_text", "page.html")]
    # a missing text is no fault (the fake embedder is not the configured model)
    assert [f.check for f in kb.doctor().findings] == ["model-mismatch"]

    summary = kb.index()  # unchanged files: nothing re-indexed, the text is kept
    assert (summary.unchanged, summary.updated, summary.added) == (2, 0, 0)
    assert registry.calls[1:] == [("extract_text", "page.html")]
    registry.calls.clear()
    assert kb.get_document("page.html").content == text
    kb.index()
    assert registry.calls == []  # kept once: later runs do not look again
    kb.close()


@pytest.mark.parametrize("target_kind", ["sqlite", "postgresql"])
def test_migrate_store_copies_the_kept_texts(tmp_path: Path, target_kind: str,
                                             request: pytest.FixtureRequest) -> None:
    root = tmp_path / "kb"
    write_files(root, {"page.html": big_table_page(30), "notes.md": "# Notes\n\nplain\n"})
    source = build_settings(None, cwd=root, kb_path=root, enabled_formats=FORMATS)
    url = (f"sqlite:///{tmp_path / 'team.db'}" if target_kind == "sqlite"
           else str(request.getfixturevalue("pg_url")))
    target = build_settings(None, cwd=root, kb_path=root, enabled_formats=FORMATS,
                            database_url=url, vectors_uri=str(tmp_path / "team-vectors"))
    embedder = FakeEmbedder(source.embedding_model)
    kb = KnowledgeBase(bootstrap(source, embedder=embedder))
    kb.index()
    text = kb.get_document("page.html").content
    kb.close()
    src, dst = bootstrap(source, embedder=embedder), bootstrap(target, embedder=embedder)
    try:
        migrate_store(src, dst)
    finally:
        src.close()
        dst.close()
    registry = CountingRegistry(build_registry(FORMATS))
    copied = KnowledgeBase(bootstrap(target, embedder=embedder, registry=registry))
    try:
        assert copied.get_document("page.html").content == text
        assert registry.calls == []
    finally:
        copied.close()


def test_a_busy_read_is_told_apart_from_not_found_on_every_door() -> None:
    from mcp import types

    from kbmcp_adapters.mcp_server import resources
    from kbmcp_adapters.mcp_server.tools import failure_result

    busy = ReadBusy("'p1.html': the server is already converting 2 documents; try again")
    error = resources.read_error(busy, "kb://doc/p1.html").error
    assert error.code == types.INTERNAL_ERROR  # a server condition, never "not found"
    assert error.message.startswith("Server busy: ")
    assert error.data == {"uri": "kb://doc/p1.html", "code": "server_busy"}
    result = failure_result(busy)
    assert result.is_error
    body = result.content[0]
    assert isinstance(body, types.TextContent)
    assert json.loads(body.text)["error"]["code"] == "server_busy"
