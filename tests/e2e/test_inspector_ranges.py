"""Ranged reads as the MCP Inspector CLI (an independent client) sees them: a range of
lines through `get_document`, and a `kb://doc/...#L<a>-<b>` URI through resources/read
(decision 0033)."""

from __future__ import annotations

import json

from tests.e2e.test_inspector import Inspect, answer, inspect

__all__ = ["inspect"]  # the fixture, shared with tests/e2e/test_inspector.py


def test_inspector_reads_lines_with_get_document(inspect: Inspect) -> None:
    arguments = json.dumps({"path": "guides/keys.md", "start_line": 6, "max_lines": 2})
    result = answer(inspect("--method", "tools/call", "--tool-name", "get_document",
                            "--tool-args-json", arguments))
    got = result["structuredContent"]
    assert got["content"] == "# Rotating keys\n\n"
    assert (got["start_line"], got["end_line"], got["is_range"]) == (6, 7, True)
    assert got["next_start_line"] == 8 and got["total_lines"] == 12


def test_inspector_reads_a_range_uri(inspect: Inspect) -> None:
    read = answer(inspect("--method", "resources/read", "--uri", "kb://doc/guides/keys.md#L8-8"))
    content = read["contents"][0]
    assert content["text"] == ("Rotate the signing keys every 90 days with the vault CLI: "
                               "`vault rotate signing`.\n")
    past = inspect("--method", "resources/read", "--uri", "kb://doc/guides/keys.md#L90-99")
    assert past.returncode != 0 and "has 12 lines" in past.stderr
