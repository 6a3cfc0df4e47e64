"""Reads are never queued behind searches (decision 0057): searches wait for one of the
server's search slots (`[server].search_slots`), and reads keep the worker threads to
themselves. In memory, over the SDK's client, with searches held inside the model until the
test lets them go."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import anyio
import pytest
from mcp import Client

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.mcp_server import KbRuntime, build_server
from kbmcp_core.models import Vector
from tests.fakes import FakeEmbedder, FakeIndexStore, FakeVectorStore

DEADLINE = 60.0
#: More searches than anyio's default pool has threads (40): before the search lane, they
#: took every thread, and a read waited for one of them to end. Now as many run as the lane
#: has slots (the default, or as large as that pool), the rest wait their turn, and the read
#: has the pool to itself.
SEARCHES = 45


class HeldQueries(FakeEmbedder):
    """A fake embedder whose queries starting "held" wait until the test releases them."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.inside = 0

    def embed_query(self, text: str) -> Vector:
        if text.startswith("held"):
            with self.lock:
                self.inside += 1
            assert self.release.wait(DEADLINE), "the test never released the searches"
        return super().embed_query(text)


@pytest.mark.parametrize("slots", [None, 40], ids=["default", "40"])
def test_a_read_answers_while_every_search_slot_is_busy(tmp_path: Path,
                                                        slots: int | None) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "keys.md").write_text("# Rotating keys\n\nRotate the signing keys every 90 days.\n",
                                  encoding="utf-8")
    settings = build_settings(None, cwd=root, kb_path=root)
    if slots is not None:
        settings = dataclasses.replace(settings, server_search_slots=slots)
    lane = settings.search_lane
    embedder = HeldQueries()
    kb = KnowledgeBase(bootstrap(settings, store=FakeIndexStore(), vectors=FakeVectorStore(),
                                 embedder=embedder))
    kb.index()
    runtime = KbRuntime(settings, open_kb=lambda s: kb)
    searched: list[bool] = []

    async def search(client: Client, n: int) -> None:
        result = await client.call_tool("search", {"query": f"held search {n}"})
        searched.append(not result.is_error)

    async def body() -> None:
        with anyio.fail_after(DEADLINE):
            async with (Client(build_server(runtime), mode="legacy",
                               read_timeout_seconds=DEADLINE) as client,
                        anyio.create_task_group() as tg):
                for n in range(SEARCHES):
                    tg.start_soon(search, client, n)
                while embedder.inside < lane:  # every slot holds a search
                    await anyio.sleep(0.01)
                with anyio.fail_after(DEADLINE / 2):
                    read = await client.call_tool("get_document", {"path": "keys.md"})
                assert not embedder.release.is_set()  # the searches are still held
                await anyio.sleep(0.2)  # a search past the lane's size would be inside by now
                assert embedder.inside == lane  # the rest wait their turn
                assert "Rotate the signing keys" in str(read.content)
                embedder.release.set()

    try:
        anyio.run(body)
    finally:
        embedder.release.set()
        runtime.close()
    assert searched == [True] * SEARCHES
