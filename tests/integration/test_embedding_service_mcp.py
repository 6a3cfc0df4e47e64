"""The MCP `search` tool when the embedding service is down (decision 0037): the server's
model warm-up does not fail, and the tool answers from keywords with a notice."""

from __future__ import annotations

from pathlib import Path

from mcp import Client

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_adapters.mcp_server import KbRuntime
from tests.embedding_server import EmbeddingServer
from tests.mcp_memory import serve_in_memory, tool_payload

DEADLINE = 60.0


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
