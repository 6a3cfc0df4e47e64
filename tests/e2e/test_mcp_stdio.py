"""The real `kb-mcp serve` over stdio, driven by the MCP SDK's own client.

What needs the process (the wire, stdout purity, the real model, start-up and shutdown) is
tested here; the rest of the MCP surface in memory (tests/integration/test_mcp_in_memory.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from jsonschema import Draft202012Validator
from mcp.shared.exceptions import MCPError

from tests.e2e.conftest import (
    DEADLINE,
    Env,
    RawStdio,
    error_of,
    make_corpus,
    stdio_session,
    text_of,
    write,
)

TOOLS = {"search", "get_document", "get_documents", "list_topics", "get_connection_graph",
         "rebuild_index", "index_status"}
PROMPTS = {
    "summarize_topic": {"topic": "ops"},
    "deep_dive": {"question": "How are keys rotated?"},
    "whats_new": {"since": "2026-01-01"},
}
MODEL_LOAD = "loading embedding model"


def run(test: Any) -> None:
    """Run an async test body under the suite's deadline."""

    async def bounded() -> None:
        with anyio.fail_after(DEADLINE * 2):
            await test()

    anyio.run(bounded)


def assert_matches_schema(result: types.CallToolResult, tool: types.Tool) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert tool.output_schema is not None
    Draft202012Validator(tool.output_schema).validate(result.structured_content)
    assert text_of(result) == result.structured_content  # the JSON text block says the same
    return dict(result.structured_content)


def wait_for_text(path: Path, needle: str) -> str:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        text = path.read_text(encoding="utf-8")
        if needle in text:
            return text
        time.sleep(0.05)
    raise AssertionError(f"{needle!r} never appeared in {path.name}: {text[-2000:]}")


def test_every_feature_answers_over_stdio_with_the_real_model(
    indexed_kb: Path, tmp_path: Path, server_env: Env
) -> None:
    async def body() -> None:
        async with stdio_session(indexed_kb, tmp_path / "err.log", server_env) as client:
            caps = client.server_capabilities
            assert caps.resources is not None and caps.resources.list_changed is True
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == TOOLS

            found = assert_matches_schema(
                await client.call_tool(
                    "search", {"query": "how do I rotate the signing keys", "limit": 3}
                ),
                tools["search"],
            )
            assert found["results"][0]["path"] == "guides/keys.md"
            assert found["results"][0]["uri"] == "kb://doc/guides/keys.md"

            filtered = assert_matches_schema(
                await client.call_tool(
                    "search",
                    {
                        "query": "backups",
                        "tags_all": ["ops"],
                        "path_globs": ["guides/*"],
                        "date_from": "2026-01-01",
                    },
                ),
                tools["search"],
            )
            assert {h["path"] for h in filtered["results"]} == {"guides/keys.md"}
            assert filtered["filter_applied"]["date_from"] == "2026-01-01"

            doc = assert_matches_schema(
                await client.call_tool("get_document", {"path": "guides/keys.md"}),
                tools["get_document"],
            )
            assert doc["title"] == "Rotating signing keys" and doc["truncated"] is False
            assert "vault rotate signing" in doc["content"] and doc["tags"] == ["ops", "security"]

            topics = assert_matches_schema(
                await client.call_tool("list_topics", {}), tools["list_topics"]
            )
            assert topics["documents"] == 44 and topics["last_indexed"]
            guides = next(t for t in topics["topics"] if t["prefix"] == "guides")
            assert guides == {
                "prefix": "guides",
                "uri": "kb://topic/guides",
                "documents": 2,
                "titles": ["Nightly backups", "Rotating signing keys"],
            }

            summary = assert_matches_schema(
                await client.call_tool("rebuild_index", {}), tools["rebuild_index"]
            )
            assert summary["unchanged"] == 44 and summary["chunks_embedded"] == 0

            error = error_of(await client.call_tool("search", {"query": "q" * 1_000_000}))
            assert error["code"] == "invalid_argument" and "the limit is 2000" in error["message"]

            listed = [r.uri for r in (await client.list_resources()).resources]
            assert listed == ["kb://topic/", "kb://topic/archive", "kb://topic/guides",
                              "kb://topic/notes"]
            topic = (await client.read_resource("kb://topic/guides")).contents[0]
            assert isinstance(topic, types.TextResourceContents)
            assert "kb://doc/guides/keys.md" in topic.text
            read = (await client.read_resource("kb://doc/guides/keys.md")).contents[0]
            assert isinstance(read, types.TextResourceContents)
            assert read.mime_type == "text/markdown"
            assert read.text.startswith("---\ntitle: Rotating signing keys")
            with pytest.raises(MCPError) as refused:
                await client.read_resource("kb://doc/%2e%2e%2fsecret.md")
            assert refused.value.code == -32002
            assert str(tmp_path) not in json.dumps(refused.value.data)

            prompts = {p.name for p in (await client.list_prompts()).prompts}
            assert prompts == set(PROMPTS)
            prompt = (await client.get_prompt("deep_dive", PROMPTS["deep_dive"])).messages[0]
            assert isinstance(prompt.content, types.TextContent)
            assert "How are keys rotated?" in prompt.content.text

    run(body)


def test_initialize_is_answered_before_the_model_loads(
    indexed_kb: Path, tmp_path: Path, server_env: Env
) -> None:
    log = tmp_path / "err.log"

    async def body() -> None:
        async with stdio_session(indexed_kb, log, server_env) as client:
            assert client.server_info is not None and client.server_info.name == "kb-mcp"
            topics = await client.call_tool("list_topics", {})
            assert not topics.is_error
            assert MODEL_LOAD not in log.read_text(encoding="utf-8")
            await client.call_tool("search", {"query": "garden"})
            wait_for_text(log, MODEL_LOAD)

    run(body)


def test_stdout_is_only_json_rpc_and_a_missing_index_is_a_clear_tool_error(
    tmp_path: Path, raw_stdio: list[RawStdio], server_env: Env
) -> None:
    kb = make_corpus(tmp_path)  # never indexed: the server warns about it while starting
    # --no-index: the server does not build it (without it, tests/e2e/test_serve_first_run.py)
    server = RawStdio(kb, {**server_env, "PYTHONWARNINGS": "always"}, "--no-index")
    raw_stdio.append(server)
    hello = server.initialize()
    assert hello["result"]["serverInfo"]["name"] == "kb-mcp"
    for tool, arguments in [("list_topics", {}), ("search", {"query": "keys"})]:
        reply = server.send("tools/call", {"name": tool, "arguments": arguments})
        assert reply is not None and reply["result"]["isError"] is True
        error = json.loads(reply["result"]["content"][0]["text"])["error"]
        assert error["code"] == "index_not_found" and "kb-mcp index" in error["message"]
    listing = server.send("resources/list", {})
    assert listing is not None and listing["result"]["resources"] == []
    stdout, stderr, code = server.close()
    assert code == 0
    assert "no index yet" in stderr and MODEL_LOAD not in stderr
    # nothing left for the collector at exit: a warning raised then could hang the exit
    assert "ResourceWarning" not in stderr, stderr
    for line in stdout.splitlines():  # everything ever written to stdout is JSON-RPC
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_a_rebuild_that_changes_the_offer_notifies_the_client(
    fresh_kb: Path, tmp_path: Path, server_env: Env
) -> None:
    """Over the stdio wire, in the handshake era: a spontaneous notification. The 2026-era
    listen stream is tested in memory (tests/integration/test_mcp_in_memory.py)."""
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            changed.set()

    async def body() -> None:
        async with stdio_session(
            fresh_kb, tmp_path / "err.log", server_env, message_handler=on_message
        ) as client:
            before = {r.uri for r in (await client.list_resources()).resources}
            write(fresh_kb, "recipes/soup.md", "# Soup\n\nSimmer the stock for an hour.\n")
            assert not (await client.call_tool("rebuild_index", {})).is_error
            await changed.wait()
            after = {r.uri for r in (await client.list_resources()).resources}
            assert after - before == {"kb://topic/recipes"}

    run(body)


def test_whatever_a_library_prints_after_start_up_lands_on_stderr(tmp_path: Path) -> None:
    script = (
        "import os\n"
        "from kbmcp_adapters.mcp_server.stdio import claim_stdout\n"
        "wire = claim_stdout()\n"
        "print('python-level noise')\n"
        "os.write(1, b'c-level noise\\n')\n"
        'wire.write(b\'{"jsonrpc": "2.0"}\\n\')\n'
        "wire.flush()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=DEADLINE
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == '{"jsonrpc": "2.0"}\n'
    assert "python-level noise" in done.stderr and "c-level noise" in done.stderr
