"""rebuild_index runs in memory (decision 0034): progress notifications a real SDK client
hears, background runs with a run id that ``index_status`` follows, one run at a time.

The embedder is gated (``GatedEmbedder``): a run holds in its phase two until the test
releases it, so "still running" is a state the test sets up, never a race it times.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.mcp_server import KbRuntime, index_run_tools
from tests.fakes import FakeIndexStore, FakeVectorStore
from tests.integration.test_mcp_in_memory import (
    DEADLINE,
    FILES,
    GatedEmbedder,
    error_of,
    run,
    settings_for,
    structured,
    tools_of,
    write,
)


def runtime(tmp_path: Path) -> tuple[KbRuntime, GatedEmbedder]:
    """Four documents, indexed once; the server's runtime over them."""
    root = tmp_path / "kb"
    for rel, text in FILES.items():
        write(root, rel, text)
    settings = settings_for(root)
    embedder = GatedEmbedder()
    knowledge_base = KnowledgeBase(bootstrap(settings, store=FakeIndexStore(),
                                             vectors=FakeVectorStore(), embedder=embedder))
    knowledge_base.index()
    return KbRuntime(settings, open_kb=lambda s: knowledge_base), embedder


async def status_until(client: Client, run_id: str, state: str) -> dict[str, Any]:
    """index_status of ``run_id`` once it is in ``state`` (the caller's deadline bounds it)."""
    tool = (await tools_of(client))["index_status"]
    while True:
        status = structured(await client.call_tool("index_status", {"run_id": run_id}), tool)
        if status["state"] == state:
            return status
        await anyio.to_thread.run_sync(lambda: None)  # let the run's thread go on


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_rebuild_with_a_progress_token_hears_its_progress(tmp_path: Path, mode: str) -> None:
    rt, _ = runtime(tmp_path)
    heard: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    async def body(client: Client) -> None:
        tool = (await tools_of(client))["rebuild_index"]
        result = await client.call_tool("rebuild_index", {"force": True},
                                        progress_callback=on_progress)
        summary = structured(result, tool)
        assert summary["state"] == "finished" and summary["chunks_embedded"] > 0
        assert summary["run_id"].startswith("run-")

    run(rt, body, mode)
    assert len(heard) >= 2, heard
    progress = [p for p, _, _ in heard]
    assert progress == sorted(set(progress)), heard  # strictly increasing
    last, total, message = heard[-1]
    assert total is not None and last == total, heard
    assert message is not None and message.startswith("finished: "), heard
    assert heard[0][2] == "scanning the folder for changes"


def test_a_background_run_returns_at_once_and_index_status_follows_it(tmp_path: Path) -> None:
    rt, embedder = runtime(tmp_path)

    async def body(client: Client) -> None:
        tools = await tools_of(client)
        embedder.armed = True
        try:
            started = structured(await client.call_tool(
                "rebuild_index", {"force": True, "background": True}), tools["rebuild_index"])
            assert started["state"] == "running" and "index_status" in started["note"]
            run_id = started["run_id"]
            assert await anyio.to_thread.run_sync(embedder.entered.wait, DEADLINE)
            running = await status_until(client, run_id, "running")
            assert running["phase"] in ("scanning", "indexing", "embedding")
            assert running["message"] and "finished" not in running
            assert "added" not in running and "error" not in running
            # one run at a time: a second start answers the running run, and says so
            again = structured(await client.call_tool("rebuild_index", {}),
                               tools["rebuild_index"])
            assert again["run_id"] == run_id and again["already_running"] is True
            assert f"index_status(run_id='{run_id}')" in again["note"]
        finally:
            embedder.release.set()
        done = await status_until(client, run_id, "finished")
        assert done["chunks_embedded"] > 0 and done["updated"] + done["added"] >= 0
        assert done["scanned"] == len(FILES) and done["finished"] >= done["started"]
        assert done["done"] == done["total"] > 0
        latest = structured(await client.call_tool("index_status", {}), tools["index_status"])
        assert latest["run_id"] == run_id
        embedder.armed = False
        after = structured(await client.call_tool("rebuild_index", {}), tools["rebuild_index"])
        assert after["run_id"] != run_id and after["state"] == "finished"  # free again

    run(rt, body)


def test_a_call_that_outlasts_its_wait_returns_the_run_still_going_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, embedder = runtime(tmp_path)
    monkeypatch.setattr(index_run_tools, "WAIT_S", 0.0)

    async def body(client: Client) -> None:
        tools = await tools_of(client)
        embedder.armed = True
        try:
            reply = structured(await client.call_tool("rebuild_index", {"force": True}),
                               tools["rebuild_index"])
            assert reply["state"] == "running" and "still running after" in reply["note"]
        finally:
            embedder.release.set()
        assert (await status_until(client, reply["run_id"], "finished"))["chunks_embedded"] > 0

    run(rt, body)


def test_index_status_before_any_run_and_for_an_unknown_run(tmp_path: Path) -> None:
    rt, _ = runtime(tmp_path)

    async def body(client: Client) -> None:
        tools = await tools_of(client)
        none = structured(await client.call_tool("index_status", {}), tools["index_status"])
        assert none["state"] == "none" and "run_id" not in none
        unknown = error_of(await client.call_tool("index_status", {"run_id": "run-99"}))
        assert unknown["code"] == "invalid_argument" and "run-99" in unknown["message"]
        bad = error_of(await client.call_tool("index_status", {"run_id": "../x"}))
        assert bad["code"] == "invalid_argument"

    run(rt, body)


def test_a_read_only_server_refuses_to_start_a_run(tmp_path: Path) -> None:
    rt, _ = runtime(tmp_path)
    replica = KbRuntime(rt.settings, open_kb=lambda s: rt.knowledge_base(), read_only=True)

    async def body(client: Client) -> None:
        refused = error_of(await client.call_tool("rebuild_index", {"background": True}))
        assert refused["code"] == "index_read_only"
        status = await client.call_tool("index_status", {})
        assert (status.structured_content or {})["state"] == "none"

    run(replica, body)
