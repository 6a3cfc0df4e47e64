"""Ranged reads through the real `kb-mcp serve` over stdio, driven by the SDK's client: a
3 MiB document read in ranges with every byte accounted for, range URIs through
resources/read, and the errors a client sees (decision 0033)."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.e2e.conftest import (
    DEADLINE,
    Env,
    error_of,
    run_index,
    stdio_session,
    stop,
    text_of,
    write,
)
from tests.e2e.test_mcp_http import check, start_http
from tests.e2e.test_mcp_stdio import assert_matches_schema, run
from tests.integration.test_ranged_reads import GUIDE, SETUP, ledger_text

MIB = 1024 * 1024
LEDGER = "archive/ledger.md"


def test_a_3_mib_document_reads_in_ranges_over_stdio(fresh_kb: Path, tmp_path: Path,
                                                      server_env: Env) -> None:
    # ignored, so serve's start run does not embed it: get_document still reads it (0003)
    write(fresh_kb, ".kb-mcpignore", "archive/ledger.md\n")
    on_disk = write(fresh_kb, LEDGER, ledger_text()).read_bytes()
    assert len(on_disk) > 3 * MIB

    async def body() -> None:
        async with stdio_session(fresh_kb, tmp_path / "err.log", server_env) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            spec = tools["get_document"]
            assert {"start_line", "max_lines", "section", "page", "max_chars", "outline"} <= set(
                spec.input_schema["properties"])
            whole = await client.call_tool("get_document", {"path": LEDGER})
            refusal = error_of(whole)
            assert refusal["code"] == "path_refused" and "read it in ranges" in refusal["message"]
            parts: list[str] = []
            start: int | None = 1
            while start is not None:
                got = assert_matches_schema(await client.call_tool(
                    "get_document", {"path": LEDGER, "start_line": start, "max_lines": 30000}),
                    spec)
                assert got["is_range"] is True and got["start_line"] == start
                assert got["total_lines"] == on_disk.count(b"\n")  # every line ends in one
                assert len(got["content"].encode()) <= MIB
                parts.append(got["content"])
                start = got.get("next_start_line")  # absent at the end
                assert len(parts) < 50
            assert len(parts) >= 4
            assert "".join(parts).encode() == on_disk
            total = on_disk.count(b"\n")
            past = error_of(await client.call_tool(
                "get_document", {"path": LEDGER, "start_line": total + 1}))
            assert past["code"] == "invalid_argument"
            assert f"has {total} lines" in past["message"]

    run(body)
    assert "Traceback" not in (tmp_path / "err.log").read_text(encoding="utf-8")


def test_range_uris_and_sections_over_stdio(fresh_kb: Path, tmp_path: Path,
                                            server_env: Env) -> None:
    write(fresh_kb, "guides/setup.md", GUIDE)
    run_index(fresh_kb, server_env)

    async def body() -> None:
        async with stdio_session(fresh_kb, tmp_path / "err.log", server_env) as client:
            got = (await client.read_resource("kb://doc/readme.md#L3-3")).contents[0]
            assert isinstance(got, types.TextResourceContents)
            assert got.text == "This is the team handbook.\n"
            try:
                await client.read_resource("kb://doc/readme.md#L9-12")
            except MCPError as exc:
                assert exc.code == types.INVALID_PARAMS and "has 3 lines" in str(exc)
            else:
                raise AssertionError("a range past the end was served")
            section = text_of(await client.call_tool(
                "get_document", {"path": "guides/setup.md", "section": "Setup"}))
            assert section["content"] == SETUP and section["is_range"] is True
            assert (section["start_line"], section["end_line"]) == (5, 8)
            outline = text_of(await client.call_tool(
                "get_document", {"path": "guides/setup.md", "outline": True}))["outline"]
            assert [e["heading"] for e in outline] == ["Guide", "Setup", "Usage"]
            templates = (await client.list_resource_templates()).resource_templates
            assert any("#L40-58" in (t.description or "") for t in templates)

    run(body)


def test_a_3_mib_document_reads_in_ranges_over_http(fresh_kb: Path, server_env: Env) -> None:
    write(fresh_kb, ".kb-mcpignore", "archive/ledger.md\n")
    on_disk = write(fresh_kb, LEDGER, ledger_text()).read_bytes()
    server = start_http(fresh_kb, server_env)
    try:
        async def body() -> None:
            async with Client(server.url, read_timeout_seconds=DEADLINE) as client:
                tool = next(t for t in (await client.list_tools()).tools
                            if t.name == "get_document")
                parts: list[str] = []
                start: int | None = 1
                while start is not None:
                    got = check(await client.call_tool(
                        "get_document", {"path": LEDGER, "start_line": start,
                                         "max_lines": 30000}), tool)
                    assert len(got["content"].encode()) <= MIB
                    parts.append(got["content"])
                    start = got.get("next_start_line")
                    assert len(parts) < 50
                assert "".join(parts).encode() == on_disk
                lines = (await client.read_resource("kb://doc/readme.md#L1-1")).contents[0]
                assert isinstance(lines, types.TextResourceContents)
                assert lines.text == "# About\n"

        run(body)
    finally:
        stop(server.proc)
        server.log.drain()
