"""Query syntax and ``explain`` (decision 0035) through an independent client: the MCP
Inspector CLI against the real `kb-mcp serve` over stdio."""

from __future__ import annotations

import json

from tests.e2e.test_inspector import Inspect, answer, inspect

__all__ = ["inspect"]  # the fixture, shared with test_inspector.py


def call_search(inspect: Inspect, arguments: dict[str, object]) -> dict[str, object]:
    done = inspect("--method", "tools/call", "--tool-name", "search",
                   "--tool-args-json", json.dumps(arguments))
    return answer(done)


def test_inspector_sees_explained_scores_and_an_exclusion(inspect: Inspect) -> None:
    result = call_search(inspect, {"query": "database dumped to cold storage -tomatoes",
                                   "limit": 3, "explain": True, "tags_any": ["ops"]})
    data = result["structuredContent"]
    assert isinstance(data, dict)
    assert data["query_applied"]["excluded"] == ["tomatoes"]
    assert data["results"][0]["path"] == "guides/backup.md"
    for hit in data["results"]:
        parts = hit["explain"]["fusion"]
        assert round(parts["lexical_part"] + parts["vector_part"], 6) == hit["score"]
    assert [f["filter"] for f in data["explain"]["filters"]] == ["tags_any", "excluded"]
    assert data["explain"]["filters"][1]["removed_documents"] == 1  # notes/garden.md


def test_inspector_sees_bad_syntax_as_an_invalid_argument(inspect: Inspect) -> None:
    done = inspect("--method", "tools/call", "--tool-name", "search",
                   "--tool-args-json", json.dumps({"query": '-database -"backups"'}))
    result = json.loads(done.stdout)  # the Inspector exits non-zero on an error result
    assert result["isError"] is True
    error = json.loads(result["content"][0]["text"])["error"]
    assert error["code"] == "invalid_argument"
    assert "the query only excludes at character 1" in error["message"]
