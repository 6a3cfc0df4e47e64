"""A server moves its long-lived heap out of the garbage collector's sight once, after its
first search by meaning (``app/heap.py``; decision 0057, session-18 addendum): before, every
full collection walked the model's, LanceDB's and the SDK's objects, a pause of about 0.1 s
with every request in flight waiting. In memory, over the SDK's client, with the process's
collector replaced by a recorder (freezing the test process's heap is not the test's to do).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from kbmcp_adapters.app import heap
from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.mcp_server import KbRuntime, build_server
from tests.fakes import FakeEmbedder, FakeIndexStore, FakeVectorStore

DEADLINE = 60.0


class RecordedCollector:
    """What the server asked of the garbage collector, in order."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def collect(self) -> int:
        self.asked.append("collect")
        return 0

    def freeze(self) -> None:
        self.asked.append("freeze")

    def get_freeze_count(self) -> int:
        return 0


def _calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           calls: list[tuple[str, dict[str, object]]]) -> list[list[str]]:
    """What the collector had been asked after each of ``calls`` (tool, arguments)."""
    collector = RecordedCollector()
    monkeypatch.setattr(heap, "gc", collector)
    monkeypatch.setattr(heap, "_settled", [False])  # a fresh process
    root = tmp_path / "kb"
    root.mkdir()
    (root / "keys.md").write_text("# Rotating keys\n\nRotate the signing keys every 90 days.\n",
                                  encoding="utf-8")
    settings = build_settings(None, cwd=root, kb_path=root)
    kb = KnowledgeBase(bootstrap(settings, store=FakeIndexStore(), vectors=FakeVectorStore(),
                                 embedder=FakeEmbedder()))
    kb.index()
    runtime = KbRuntime(settings, open_kb=lambda s: kb)
    seen: list[list[str]] = []

    async def body() -> None:
        with anyio.fail_after(DEADLINE):
            async with Client(build_server(runtime), mode="legacy",
                              read_timeout_seconds=DEADLINE) as client:
                for tool, arguments in calls:
                    result = await client.call_tool(tool, arguments)
                    assert not result.is_error, result
                    seen.append(list(collector.asked))

    try:
        anyio.run(body)
    finally:
        runtime.close()
    return seen


def test_the_heap_is_frozen_once_after_the_first_search_by_meaning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _calls(tmp_path, monkeypatch, [
        ("get_document", {"path": "keys.md"}),
        ("search", {"query": "how often are signing keys rotated"}),
        ("search", {"query": "rotate keys"}),
    ])
    assert seen == [[], ["collect", "freeze"], ["collect", "freeze"]]

