"""The index run `serve` starts with (decision 0024), in process: the SDK's client in memory
against ``build_server(KbRuntime(..., index_on_start=True))`` with ``start_index_task``
running beside it, as ``serve --no-watch`` runs it. A real SQLite index; the model is the
fake embedder, gated so a test can hold the run inside phase two.

The real process (stdio with the watcher, HTTP, stdin closed mid-run) is in
tests/e2e/test_serve_first_run.py.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from jsonschema import Draft202012Validator
from mcp import Client

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.mcp_server import KbRuntime, build_server
from kbmcp_adapters.mcp_server.start_run import StartRun, start_index_task
from kbmcp_adapters.store.cross_process_lock import writer_lock
from kbmcp_core.errors import StoreError, WriterBusy
from kbmcp_core.models import Vector
from kbmcp_core.settings import Settings
from tests.fakes import FakeEmbedder, FakeVectorStore

DEADLINE = 30.0
FILES = {
    "guides/keys.md": "# Rotating keys\n\nRotate the signing keys every 90 days with the "
                      "vault CLI.\n",
    "guides/backup.md": "# Backups\n\nThe database is dumped at 02:00 to cold storage.\n",
    "notes/garden.md": "# Garden\n\nTomatoes need staking in June.\n",
}  # fmt: skip


class GatedEmbedder(FakeEmbedder):
    """``embed_documents`` (phase two) waits until the test releases it."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.entered.set()
        assert self.release.wait(DEADLINE), "the test never released the embedder"
        return super().embed_documents(texts)


def fresh_folder(tmp_path: Path) -> Settings:
    root = tmp_path / "kb"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    settings = build_settings(None, cwd=root, kb_path=root)
    return dataclasses.replace(settings, writer_lock_timeout_s=0.3)


def runtime_for(settings: Settings, embedder: FakeEmbedder) -> KbRuntime:
    return KbRuntime(settings, index_on_start=True, open_kb=lambda s: KnowledgeBase(
        bootstrap(s, vectors=FakeVectorStore(), embedder=embedder)))


def serve(rt: KbRuntime, body: Callable[[Client, anyio.Event], Awaitable[None]]) -> None:
    """``body(client, changed)`` with the start run going beside the server; ``changed``
    is set by the resource list-changed notification."""
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            changed.set()

    async def bounded() -> None:
        with anyio.fail_after(DEADLINE):
            async with (Client(build_server(rt), mode="legacy", message_handler=on_message,
                               read_timeout_seconds=DEADLINE) as client,
                        anyio.create_task_group() as tg):
                tg.start_soon(start_index_task, rt)
                await body(client, changed)
                tg.cancel_scope.cancel()

    try:
        anyio.run(bounded)
    finally:
        assert rt.shutdown(DEADLINE)


async def answer(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A successful result, valid against the output schema tools/list publishes."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    schema = {t.name: t for t in (await client.list_tools()).tools}[tool].output_schema
    assert schema is not None
    Draft202012Validator(schema).validate(result.structured_content)
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    assert json.loads(block.text) == result.structured_content  # the text says it too
    return dict(result.structured_content or {})


async def until(check: Callable[[], Awaitable[bool]]) -> None:
    end = time.monotonic() + DEADLINE
    while not await check():
        assert time.monotonic() < end, "the condition never held"
        await anyio.sleep(0.05)


def test_tools_say_indexing_then_search_answers_by_keywords_before_the_vectors(
    tmp_path: Path,
) -> None:
    settings = fresh_folder(tmp_path)
    embedder = GatedEmbedder()
    rt = runtime_for(settings, embedder)

    async def body(client: Client, changed: anyio.Event) -> None:
        # before the run has read the folder: a status, no error, nothing written yet
        found = await answer(client, "search", {"query": "vault signing keys"})
        assert found["results"] == [] and found["indexing"]["status"].startswith("indexing")
        assert found["notice"].startswith("indexing") and "try again" in found["notice"]
        topics = await answer(client, "list_topics", {})
        assert topics["topics"] == [] and topics["indexing"]["status"].startswith("indexing")
        assert (await client.list_resources()).resources == []
        # phase one committed, phase two held: keyword hits already, no status any more
        assert await anyio.to_thread.run_sync(embedder.entered.wait, DEADLINE)
        found = await answer(client, "search", {"query": "vault signing keys"})
        assert found["results"][0]["path"] == "guides/keys.md" and "indexing" not in found
        topics = await answer(client, "list_topics", {})
        assert {t["prefix"] for t in topics["topics"]} == {"guides", "notes"}
        assert "indexing" not in topics
        # rebuild_index does not start a second run: it waits for this one, then says so
        busy = await client.call_tool("rebuild_index", {})
        assert busy.is_error
        block = busy.content[0]
        assert isinstance(block, types.TextContent)
        error = json.loads(block.text)["error"]
        assert error["code"] == "writer_busy" and "kb-mcp serve started with" in error["message"]
        assert "waiting for another" not in str(rt.indexing())  # not taken for another writer
        embedder.release.set()
        await changed.wait()  # the run's end: clients hear the offer changed
        assert not rt.start_run.pending

    serve(rt, body)


def test_a_start_run_never_fights_another_writer_it_waits_and_says_so(
    tmp_path: Path,
) -> None:
    settings = fresh_folder(tmp_path)
    embedder = GatedEmbedder()
    embedder.release.set()
    rt = runtime_for(settings, embedder)
    settings.index_dir.mkdir()
    other = writer_lock(settings.index_dir, 1.0, "kb-mcp index")  # another process's run
    other.__enter__()

    async def body(client: Client, changed: anyio.Event) -> None:
        try:
            async def says_waiting() -> bool:
                status = (await answer(client, "list_topics", {})).get("indexing", {})
                return "waiting for another process" in status.get("status", "")

            await until(says_waiting)
            assert not (await client.call_tool("search", {"query": "vault"})).is_error
        finally:
            other.__exit__(None, None, None)

        async def finds_keys() -> bool:
            found = await answer(client, "search", {"query": "vault signing keys"})
            return [h["path"] for h in found["results"]][:1] == ["guides/keys.md"]

        await until(finds_keys)

    serve(rt, body)


def test_a_stop_ends_the_start_run_at_a_safe_point_and_the_server_shuts_down(
    tmp_path: Path,
) -> None:
    # one chunk per model batch: a safe point between the first embedding call and the next
    settings = dataclasses.replace(fresh_folder(tmp_path), embedding_batch_size=1)
    embedder = GatedEmbedder()
    rt = runtime_for(settings, embedder)

    async def body(client: Client, changed: anyio.Event) -> None:
        assert await anyio.to_thread.run_sync(embedder.entered.wait, DEADLINE)
        rt.request_stop()  # stdin closed, or SIGTERM
        embedder.release.set()
        result = await client.call_tool("search", {"query": "vault"})
        assert not result.is_error  # keyword search still answers while it stops

    serve(rt, body)  # ``serve`` asserts that the shutdown completed within the deadline
    assert rt.start_run.pending  # stopped, not completed: the next start completes it


def test_the_status_names_the_files_read_so_far_and_ends_with_the_run(tmp_path: Path) -> None:
    run = StartRun(enabled=True)
    assert run.status(None) == {"status": "indexing: looking at the files"}
    reading = {"phase": "index", "step": "text", "done": 12, "total": 40,
               "started": "2026-12-01T10:00:00Z"}
    assert run.status(reading) == {"status": "indexing: 12 of 40 files", "done": 12,
                                   "total": 40, "started": "2026-12-01T10:00:00Z"}
    run.ended(WriterBusy("kb-mcp index holds the lock"))
    assert "waiting for another process" in str(run.status(None))
    run.ended(StoreError("disk on fire"))  # failed: the tools answer their own error again
    assert run.status(None) is None and not run.pending
    assert StartRun(enabled=False).status(None) is None
    rt = KbRuntime(build_settings(None, cwd=tmp_path, kb_path=tmp_path), index_on_start=True)
    with rt.tracking() as progress:  # the runtime's own progress, as a run reports it
        progress("text", 1, 3, "guides/keys.md")
        assert (rt.indexing() or {}).get("status") == "indexing: 1 of 3 files"
    done = StartRun(enabled=True)
    done.ended(None)
    assert done.status(reading) is None


def test_index_on_start_is_a_server_key_of_the_config(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    config = tmp_path / "kb-mcp.toml"
    config.write_text('kb_path = "kb"\n[server]\nindex_on_start = false\n', encoding="utf-8")
    assert build_settings(config, cwd=tmp_path).server_index_on_start is False
    assert build_settings(None, cwd=tmp_path, kb_path=tmp_path / "kb").server_index_on_start
