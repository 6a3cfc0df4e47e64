"""The MCP `search` tool when the embedding service is down or trickles (decision 0037,
issue 37): the server's model warm-up does not fail, the tool answers from keywords with a
notice, and searches waiting for the service never hold the workers reads need."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding import service_embedder
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_adapters.embedding.service_embedder import MAX_WAITING_QUERIES
from kbmcp_adapters.mcp_server import KbRuntime
from tests.embedding_server import EmbeddingServer
from tests.hashing_embedder import HashingEmbedder
from tests.mcp_memory import serve_in_memory, tool_payload

DEADLINE = 60.0
NOTICE = "semantic search is unavailable (embedding service: "


def test_search_through_a_dead_service_answers_from_keywords_with_a_notice(
        tmp_path: Path, embedder: FastEmbedEmbedder) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "oncall.md").write_text("# On-call\n\nThe pager duty handover is on Monday.\n",
                                    encoding="utf-8")
    (root / "keys.md").write_text("# Keys\n\nSigning keys rotate every 90 days.\n",
                                  encoding="utf-8")
    with EmbeddingServer(embedder) as server:
        settings = build_settings(None, cwd=root, kb_path=root,
                                  embedding_provider="openai-compatible",
                                  embedding_base_url=server.base_url,
                                  embedding_model="all-minilm", embedding_dimension=384,
                                  embedding_retries=0)
        kb = KnowledgeBase(bootstrap(settings))
        assert kb.index().chunks_embedded == 2
    # the service is gone from here on: nothing listens on its port
    runtime = KbRuntime(settings, open_kb=lambda s: kb)
    answers: list[dict[str, object]] = []

    async def body(client: Client) -> None:
        result = await client.call_tool("search", {"query": "pager duty handover"})
        assert not result.is_error, result.content
        answers.append(tool_payload(result))

    serve_in_memory(runtime, body, deadline=DEADLINE)
    answer = answers[0]
    results = answer["results"]
    assert isinstance(results, list) and results[0]["path"] == "oncall.md"
    notice = str(answer.get("notice"))
    assert notice.startswith("semantic search is unavailable (embedding service: ")
    assert notice.endswith("results from keyword search only")


def test_searches_stuck_on_a_trickling_service_leave_reads_and_listings_answering(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """45 searches at once against a service that sends a byte every 200 ms: at most
    ``MAX_WAITING_QUERIES`` wait for it, the others answer from keywords at once, and
    `get_document` and `list_topics` answer meanwhile (before: every worker was stuck).
    A query's wait is stretched past the session's deadline, so that only a search that
    never waits for the service can let the reads through in time."""
    monkeypatch.setattr(service_embedder, "QUERY_TIMEOUT_S", 2 * DEADLINE)
    root = tmp_path / "kb"
    root.mkdir()
    (root / "oncall.md").write_text("# On-call\n\nThe pager duty handover is on Monday.\n",
                                    encoding="utf-8")
    searches = 45
    answers: list[dict[str, object]] = []
    reads: list[dict[str, object]] = []
    with EmbeddingServer(HashingEmbedder(dimension=32)) as server:
        settings = build_settings(None, cwd=root, kb_path=root,
                                  embedding_provider="openai-compatible",
                                  embedding_base_url=server.base_url,
                                  embedding_model="hashing", embedding_dimension=32,
                                  embedding_timeout_s=3600.0, embedding_retries=0)
        kb = KnowledgeBase(bootstrap(settings))
        assert kb.index().chunks_embedded == 1
        server.trickle_s = 0.2  # a query's whole answer would take minutes
        runtime = KbRuntime(settings, open_kb=lambda s: kb)

        async def body(client: Client) -> None:
            async def search(i: int) -> None:
                result = await client.call_tool("search", {"query": f"pager handover {i}"})
                assert not result.is_error, result.content
                answers.append(tool_payload(result))

            async with anyio.create_task_group() as group:
                for i in range(searches):
                    group.start_soon(search, i)
                while len(answers) < searches - MAX_WAITING_QUERIES:  # the session's deadline
                    await anyio.sleep(0.02)
                for name, args in (("get_document", {"path": "oncall.md"}),
                                   ("list_topics", {})):
                    result = await client.call_tool(name, args)
                    assert not result.is_error, result.content
                    reads.append(tool_payload(result))
                server.release()  # the service gives up: the waiting searches end too

        serve_in_memory(runtime, body, deadline=DEADLINE)
        assert 0 < server.most_open <= MAX_WAITING_QUERIES
    assert len(answers) == searches
    for answer in answers:
        assert str(answer.get("notice")).startswith(NOTICE)
        results = answer["results"]
        assert isinstance(results, list) and results[0]["path"] == "oncall.md"
    turned_away = [a for a in answers if "searches are already waiting" in str(a["notice"])]
    assert len(turned_away) >= searches - MAX_WAITING_QUERIES
    assert "pager duty handover" in str(reads[0])
    assert "oncall.md" in str(reads[1]) or "On-call" in str(reads[1])
