"""The MCP ``search`` tool's ``fields`` / ``fields_not`` (decision 0036), through the SDK's
own client connected in memory to ``build_server``: the schema names the declared fields,
a filter keeps only matching documents, and an undeclared key is ``invalid_argument``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from mcp import Client

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.mcp_server import KbRuntime
from tests.conftest import write_files
from tests.fakes import FakeEmbedder
from tests.mcp_memory import serve_in_memory, tool_payload

DEADLINE = 30.0
FILES = {
    "plans/q1.md": "---\nstatus: draft\nyear: 2024\n---\n# Roadmap\n\nThe roadmap for the "
                   "quarter: hiring and the storage migration.\n",
    "plans/q2.md": "---\nstatus: final\nyear: 2022\n---\n# Roadmap\n\nAn older roadmap: the "
                   "storage migration, first draft.\n",
    "plans/q3.md": "# Roadmap\n\nA roadmap without front matter about the storage migration.\n",
}  # fmt: skip


@pytest.fixture
def runtime(tmp_path: Path) -> KbRuntime:
    root = tmp_path / "kb"
    write_files(root, FILES)
    (root / "kb-mcp.toml").write_text('[fields]\nstatus = "string"\nyear = "number"\n',
                                      encoding="utf-8")
    settings = build_settings(None, cwd=root, kb_path=root)
    kb = KnowledgeBase(bootstrap(settings, embedder=FakeEmbedder()))
    assert kb.index().added == 3
    return KbRuntime(settings, open_kb=lambda _s: kb)


def run(runtime: KbRuntime, body: Callable[[Client], Awaitable[None]]) -> None:
    serve_in_memory(runtime, body)


payload = tool_payload


def test_the_search_tool_filters_on_declared_fields(runtime: KbRuntime) -> None:
    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        search = tools["search"]
        for name in ("fields", "fields_not"):
            prop = search.input_schema["properties"][name]
            assert prop["type"] == "object"
            assert "status (string), year (number)" in prop["description"]
        result = await client.call_tool("search", {
            "query": "roadmap storage migration", "fields": {"year": {"gte": 2023}}})
        assert not result.is_error, result.content
        assert search.output_schema is not None
        Draft202012Validator(search.output_schema).validate(result.structured_content)
        found = payload(result)
        assert {hit["path"] for hit in found["results"]} == {"plans/q1.md"}
        assert found["filter_applied"] == {"fields": {"year": {"gte": 2023}}}
        result = await client.call_tool("search", {
            "query": "roadmap storage migration", "fields_not": {"status": ["DRAFT"]}})
        assert {hit["path"] for hit in payload(result)["results"]} == {"plans/q2.md",
                                                                       "plans/q3.md"}

    run(runtime, body)


def test_an_undeclared_field_or_a_wrong_type_is_invalid_argument(runtime: KbRuntime) -> None:
    async def body(client: Client) -> None:
        result = await client.call_tool("search", {"query": "roadmap",
                                                   "fields": {"owner": "ana"}})
        assert result.is_error
        error = payload(result)["error"]
        assert error["code"] == "invalid_argument"
        assert error["message"] == ("fields: 'owner' is not a declared field; declared "
                                    "fields: status (string), year (number)")
        result = await client.call_tool("search", {"query": "roadmap",
                                                   "fields": {"year": "last"}})
        assert payload(result)["error"] == {
            "code": "invalid_argument",
            "message": "fields.year: 'last' is not a number (the field is declared number)"}
        result = await client.call_tool("search", {"query": "roadmap", "fields": "year=1"})
        assert payload(result)["error"]["code"] == "invalid_argument"

    run(runtime, body)
