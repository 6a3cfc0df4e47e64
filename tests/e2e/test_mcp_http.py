"""The real `kb-mcp serve --transport http`: streamable HTTP, /healthz, and its guards."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import pytest
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.e2e.conftest import (
    DEADLINE,
    Env,
    LineReader,
    error_of,
    kb_mcp_command,
    stop,
    text_of,
    write,
)

READY = r"streamable HTTP at http://127\.0\.0\.1:(\d+)/mcp"


@dataclass
class HttpServer:
    proc: subprocess.Popen[str]
    log: LineReader
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        *,
        chunked: bool = False,
    ) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=DEADLINE)
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            sent = {"Host": f"127.0.0.1:{self.port}", **(headers or {})}
            if body is not None and not chunked:
                sent["Content-Length"] = str(len(body))
            if chunked:
                sent["Transfer-Encoding"] = "chunked"
            for name, value in sent.items():
                conn.putheader(name, value)
            conn.endheaders()
            if body is not None:
                if chunked:
                    for start in range(0, len(body), 1 << 20):
                        part = body[start : start + (1 << 20)]
                        conn.send(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                    conn.send(b"0\r\n\r\n")
                else:
                    conn.send(body)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def health(self) -> dict[str, Any]:
        status, body = self.request("GET", "/healthz")
        assert status == 200, body
        return dict(json.loads(body))


def start_http(kb: Path, env: Env, *extra: str) -> HttpServer:
    proc = subprocess.Popen(
        [
            *kb_mcp_command(),
            "serve",
            "--kb-path",
            str(kb),
            "--no-watch",
            "--transport",
            "http",
            "--port",
            "0",
            *extra,
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env={**os.environ, **env},
    )
    assert proc.stderr is not None
    log = LineReader(proc.stderr)
    try:
        port = int(log.wait_for(READY).group(1))
    except BaseException:
        stop(proc)
        raise
    return HttpServer(proc, log, port)


@pytest.fixture(scope="module")
def server(indexed_kb: Path, server_env: Env) -> Iterator[HttpServer]:
    """One server for the module's tests: each asks it something a fresh server answers
    alike (a forced rebuild leaves the same index)."""
    running = start_http(indexed_kb, server_env)
    yield running
    stop(running.proc)
    running.log.drain()


def run(test: Any) -> None:
    async def bounded() -> None:
        with anyio.fail_after(DEADLINE * 2):
            await test()

    anyio.run(bounded)


def check(result: types.CallToolResult, tool: types.Tool) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert tool.output_schema is not None
    Draft202012Validator(tool.output_schema).validate(result.structured_content)
    assert text_of(result) == result.structured_content
    return dict(result.structured_content)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_sdk_client_uses_every_feature_over_http(server: HttpServer, mode: str) -> None:
    async def body() -> None:
        async with Client(server.url, mode=mode, read_timeout_seconds=DEADLINE) as client:
            caps = client.server_capabilities
            assert caps.resources is not None and caps.resources.list_changed is True
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"search", "get_document", "get_documents", "list_topics",
                                  "get_connection_graph", "rebuild_index",
                                  "index_status"}
            hits = check(
                await client.call_tool("search", {"query": "signing keys rotation"}),
                tools["search"],
            )
            assert hits["results"][0]["path"] == "guides/keys.md"
            doc = check(
                await client.call_tool("get_document", {"path": "notes/garden.md"}),
                tools["get_document"],
            )
            assert "Tomatoes" in doc["content"]
            topics = check(await client.call_tool("list_topics", {}), tools["list_topics"])
            assert [t["prefix"] for t in topics["topics"]] == ["", "archive", "guides", "notes"]
            check(await client.call_tool("rebuild_index", {}), tools["rebuild_index"])
            bad = error_of(await client.call_tool("search", {"query": "keys", "limit": 500}))
            assert bad["code"] == "invalid_argument"

            uris = [r.uri for r in (await client.list_resources()).resources]
            assert uris == [
                "kb://topic/",
                "kb://topic/archive",
                "kb://topic/guides",
                "kb://topic/notes",
            ]
            templates = (await client.list_resource_templates()).resource_templates
            assert templates[0].uri_template == "kb://doc/{path}"
            read = (await client.read_resource("kb://doc/guides/backup.md")).contents[0]
            assert isinstance(read, types.TextResourceContents) and "cold storage" in read.text
            with pytest.raises(MCPError) as refused:
                await client.read_resource("kb://doc/%2e%2e%2fsecret.md")
            assert refused.value.code == -32002
            for prompt in (await client.list_prompts()).prompts:
                args = {
                    a.name: "2026-01-01" if a.name == "since" else "keys"
                    for a in prompt.arguments or []
                }
                got = await client.get_prompt(prompt.name, args)
                assert "search" in got.messages[0].content.text  # type: ignore[union-attr]

    run(body)


def test_http_clients_hear_that_the_offer_changed(fresh_kb: Path, server_env: Env) -> None:
    running = start_http(fresh_kb, server_env)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            changed.set()

    async def body() -> None:
        async with Client(
            running.url, mode="legacy", message_handler=on_message, read_timeout_seconds=DEADLINE
        ) as client:
            write(fresh_kb, "recipes/soup.md", "# Soup\n\nSimmer the stock for an hour.\n")
            assert not (await client.call_tool("rebuild_index", {})).is_error
            await changed.wait()
            uris = {r.uri for r in (await client.list_resources()).resources}
            assert "kb://topic/recipes" in uris

    try:
        run(body)
    finally:
        stop(running.proc)
        running.log.drain()


def test_healthz_answers_while_a_rebuild_runs(server: HttpServer) -> None:
    async def body() -> None:
        assert server.health() == {"status": "ok", "rebuilding": False}
        async with Client(server.url, mode="legacy", read_timeout_seconds=DEADLINE) as client:
            outcome: list[types.CallToolResult] = []

            async def rebuild() -> None:
                outcome.append(await client.call_tool("rebuild_index", {"force": True}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(rebuild)
                seen_busy = False
                while not outcome:  # bounded by the test deadline
                    health = await anyio.to_thread.run_sync(server.health)
                    assert health["status"] == "ok"
                    seen_busy = seen_busy or health["rebuilding"]
                    await anyio.sleep(0.01)
            assert seen_busy, "/healthz never answered while the rebuild was running"
            assert not outcome[0].is_error
            assert text_of(outcome[0])["chunks_embedded"] > 0

    run(body)


INIT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
).encode()
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def test_foreign_origin_and_host_are_refused_without_echo(server: HttpServer) -> None:
    evil = "evil-rebind.example"
    status, body = server.request("POST", "/mcp", INIT, {**MCP_HEADERS, "Origin": f"http://{evil}"})
    assert status == 403 and evil.encode() not in body
    status, body = server.request(
        "POST", "/mcp", INIT, {**MCP_HEADERS, "Host": f"{evil}:{server.port}"}
    )
    assert status == 403 and evil.encode() not in body
    status, body = server.request("GET", "/healthz", headers={"Host": evil})
    assert status == 403 and evil.encode() not in body
    # a port-suffix trick is not a loopback name either
    status, _ = server.request(
        "GET", "/healthz", headers={"Host": f"localhost:{server.port}.{evil}"}
    )
    assert status == 403
    # the server's own origins, or none at all, pass
    for origin in (f"http://127.0.0.1:{server.port}", f"http://localhost:{server.port}"):
        status, _ = server.request("POST", "/mcp", INIT, {**MCP_HEADERS, "Origin": origin})
        assert status == 200
    status, _ = server.request("POST", "/mcp", INIT, MCP_HEADERS)
    assert status == 200


def test_oversized_bodies_get_413(server: HttpServer) -> None:
    huge = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "' + b"x" * (5 << 20) + b'"}'
    status, _ = server.request("POST", "/mcp", huge, MCP_HEADERS)
    assert status == 413
    status, _ = server.request("POST", "/mcp", huge, MCP_HEADERS, chunked=True)
    assert status == 413
    assert server.health()["status"] == "ok"


def test_a_non_loopback_bind_needs_the_explicit_flag(indexed_kb: Path, server_env: Env) -> None:
    refused = subprocess.run(
        [
            *kb_mcp_command(),
            "serve",
            "--kb-path",
            str(indexed_kb),
            "--no-watch",
            "--transport",
            "http",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
        ],
        env={**os.environ, **server_env},
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    assert refused.returncode == 2
    assert "--allow-remote" in refused.stderr and refused.stdout == ""
