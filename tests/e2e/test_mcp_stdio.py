"""The real `kb-mcp serve` over stdio, driven by the MCP SDK's own client."""

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

TOOLS = {"search", "get_document", "list_topics", "rebuild_index"}
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


def test_listings_describe_the_whole_surface(
    indexed_kb: Path, tmp_path: Path, server_env: Env
) -> None:
    async def body() -> None:
        async with stdio_session(indexed_kb, tmp_path / "err.log", server_env) as client:
            caps = client.server_capabilities
            assert caps.resources is not None and caps.resources.list_changed is True
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == TOOLS
            for name in ("search", "get_document", "list_topics"):
                hints = tools[name].annotations
                assert hints is not None and hints.read_only_hint and hints.idempotent_hint
                assert hints.open_world_hint is False
            assert tools["rebuild_index"].annotations.read_only_hint is False  # type: ignore[union-attr]
            for tool in tools.values():
                schemas = json.dumps([tool.input_schema, tool.output_schema])
                assert "$ref" not in schemas and "anyOf" not in schemas
            limit = tools["search"].input_schema["properties"]["limit"]
            assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 50, 5)

            assert {p.name for p in (await client.list_prompts()).prompts} == set(PROMPTS)
            listed = (await client.list_resources()).resources
            assert [r.uri for r in listed] == [
                "kb://topic/",
                "kb://topic/archive",
                "kb://topic/guides",
                "kb://topic/notes",
            ]
            guides = next(r for r in listed if r.uri == "kb://topic/guides")
            assert guides.mime_type == "text/markdown" and "2 documents" in (
                guides.description or ""
            )
            templates = (await client.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["kb://doc/{path}"]

    run(body)


def test_every_tool_answers_with_its_output_schema(
    indexed_kb: Path, tmp_path: Path, server_env: Env
) -> None:
    async def body() -> None:
        async with stdio_session(indexed_kb, tmp_path / "err.log", server_env) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}

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

    run(body)


def test_resources_read_as_text_and_topic_lists(
    indexed_kb: Path, tmp_path: Path, server_env: Env
) -> None:
    async def body() -> None:
        async with stdio_session(indexed_kb, tmp_path / "err.log", server_env) as client:
            topic = (await client.read_resource("kb://topic/guides")).contents[0]
            assert isinstance(topic, types.TextResourceContents)
            assert topic.mime_type == "text/markdown"
            assert (
                "kb://doc/guides/keys.md" in topic.text
                and "kb://doc/guides/backup.md" in topic.text
            )

            doc = (await client.read_resource("kb://doc/guides/keys.md")).contents[0]
            assert isinstance(doc, types.TextResourceContents)
            assert doc.mime_type == "text/markdown" and doc.uri == "kb://doc/guides/keys.md"
            assert doc.text.startswith("---\ntitle: Rotating signing keys")

    run(body)


def test_each_prompt_teaches_the_tools_and_citing(
    indexed_kb: Path, tmp_path: Path, server_env: Env
) -> None:
    async def body() -> None:
        async with stdio_session(indexed_kb, tmp_path / "err.log", server_env) as client:
            for name, arguments in PROMPTS.items():
                prompt = await client.get_prompt(name, arguments)
                content = prompt.messages[0].content
                assert isinstance(content, types.TextContent)
                assert "search" in content.text and "get_document" in content.text
                assert "Cite the path" in content.text and "say so" in content.text
                assert next(iter(arguments.values())) in content.text
            undated = (await client.get_prompt("whats_new", {})).messages[0].content
            assert isinstance(undated, types.TextContent) and "since" not in undated.text
            for name, arguments in [
                ("summarize_topic", {}),
                ("whats_new", {"since": "May"}),
                ("no_such_prompt", {}),
            ]:
                with pytest.raises(MCPError) as refused:
                    await client.get_prompt(name, arguments)
                assert refused.value.code == types.INVALID_PARAMS

    run(body)


BAD_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    ("search", {"query": 42}, "must be a string"),
    ("search", {"query": "keys", "limit": "ten"}, "must be an integer"),
    ("search", {"query": "keys", "limit": 0}, "between 1 and 50"),
    ("search", {"query": "keys", "limit": 500}, "between 1 and 50"),
    ("search", {"query": "keys", "path_globs": []}, "must not be empty"),
    ("search", {"query": "q" * 1_000_000}, "the limit is 2000"),
    ("search", {"query": "   "}, "must not be empty"),
    ("search", {"query": "keys", "date_from": "last week"}, "YYYY-MM-DD"),
    ("search", {"query": "keys", "date_from": "2026-02-31"}, "not a real date"),
    ("search", {"query": "keys", "tags_any": "ops"}, "array of strings"),
    ("search", {"query": "keys", "chunks_per_document": 11}, "between 1 and 10"),
    ("search", {"query": "keys", "colour": "red"}, "unknown argument"),
    ("search", {}, "missing required argument 'query'"),
    ("get_document", {"path": ["a.md"]}, "must be a string"),
    ("rebuild_index", {"force": "yes"}, "true or false"),
]


def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(
    indexed_kb: Path, tmp_path: Path, server_env: Env
) -> None:
    async def body() -> None:
        async with stdio_session(indexed_kb, tmp_path / "err.log", server_env) as client:
            for tool, arguments, says in BAD_ARGUMENTS:
                error = error_of(await client.call_tool(tool, arguments))
                assert error["code"] == "invalid_argument", (tool, arguments, error)
                assert says in error["message"], (says, error)
                assert len(error["message"]) < 300  # never echoes a huge value back
            found = await client.call_tool("search", {"query": "tomatoes"})
            assert not found.is_error
            assert text_of(found)["results"][0]["path"] == "notes/garden.md"

    run(body)


def test_refused_and_unoffered_reads_are_resource_not_found(
    fresh_kb: Path, tmp_path: Path, server_env: Env
) -> None:
    write(fresh_kb, "guides/unindexed.md", "# Not yet indexed\n\nwritten after the index run\n")

    async def body() -> None:
        async with stdio_session(fresh_kb, tmp_path / "err.log", server_env) as client:
            for uri in [
                "kb://doc/%2e%2e%2fsecret.md",
                "kb://doc/../secret.md",
                "kb://doc/guides/unindexed.md",
                f"kb://doc/{tmp_path}/secret.md",
                "kb://doc/guides%5Ckeys.md",
                "kb://doc/guides/missing.md",
                "kb://topic/nowhere",
                "file:///etc/passwd",
            ]:
                with pytest.raises(MCPError) as refused:
                    await client.read_resource(uri)
                assert refused.value.code == -32002, uri
                said = refused.value.message + json.dumps(refused.value.data["reason"])
                assert str(tmp_path) not in said and "/kb/" not in said
            # get_document serves any enabled file under the root, indexed or not ...
            doc = await client.call_tool("get_document", {"path": "guides/unindexed.md"})
            assert text_of(doc)["content"].startswith("# Not yet indexed")
            # ... but never one outside it, and says why without a server path
            error = error_of(await client.call_tool("get_document", {"path": "../secret.md"}))
            assert error["code"] == "path_refused" and str(tmp_path) not in error["message"]

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
    server = RawStdio(kb, {**server_env, "PYTHONWARNINGS": "always"})
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
    for line in stdout.splitlines():  # everything ever written to stdout is JSON-RPC
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_concurrent_rebuilds_run_one_at_a_time(
    fresh_kb: Path, tmp_path: Path, server_env: Env
) -> None:
    async def body() -> None:
        async with stdio_session(fresh_kb, tmp_path / "err.log", server_env) as client:
            results: list[types.CallToolResult] = []

            async def rebuild() -> None:
                results.append(await client.call_tool("rebuild_index", {"force": True}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(rebuild)
                tg.start_soon(rebuild)
            ran = [r for r in results if not r.is_error]
            refused = [error_of(r) for r in results if r.is_error]
            assert len(ran) == 1 and len(refused) == 1
            assert refused[0]["code"] == "writer_busy" and "since" in refused[0]["message"]
            assert text_of(ran[0])["chunks_embedded"] > 0
            again = await client.call_tool("rebuild_index", {})  # free again afterwards
            assert not again.is_error

    run(body)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_rebuild_that_changes_the_offer_notifies_the_client(
    fresh_kb: Path, tmp_path: Path, mode: str, server_env: Env
) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            changed.set()

    async def body() -> None:
        async with stdio_session(
            fresh_kb, tmp_path / "err.log", server_env, mode=mode, message_handler=on_message
        ) as client:
            before = {r.uri for r in (await client.list_resources()).resources}
            write(fresh_kb, "recipes/soup.md", "# Soup\n\nSimmer the stock for an hour.\n")
            if mode == "legacy":  # handshake era: a spontaneous notification
                assert not (await client.call_tool("rebuild_index", {})).is_error
                await changed.wait()
            else:  # 2026 era: only on a subscriptions/listen stream the client opened
                async with client.listen(resources_list_changed=True) as events:
                    assert not (await client.call_tool("rebuild_index", {})).is_error
                    async for _event in events:
                        break
            after = {r.uri for r in (await client.list_resources()).resources}
            assert after - before == {"kb://topic/recipes"}

    run(body)


def test_whatever_a_library_prints_after_start_up_lands_on_stderr(tmp_path: Path) -> None:
    script = (
        "import os\n"
        "from kbmcp_adapters.mcp_server.server import claim_stdout\n"
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
