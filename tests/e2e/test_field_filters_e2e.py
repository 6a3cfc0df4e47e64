"""Field filters through the real `kb-mcp` process (decision 0036): a knowledge base whose
`kb-mcp.toml` declares `[fields]`, indexed by `kb-mcp index` with the real model, searched
by the SDK's client over stdio and over streamable HTTP, and by the MCP Inspector CLI."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.e2e.conftest import (
    DEADLINE,
    Env,
    error_of,
    kb_mcp_command,
    run_index,
    stdio_session,
    stop,
    text_of,
)
from tests.e2e.http_support import Served, environment, start

FILES = {
    "plans/q1.md": "---\nstatus: draft\nyear: 2024\nowners: [ana, bo]\n---\n# Storage plan\n\n"
                   "Moving the storage cluster to the new region this quarter.\n",
    "plans/q2.md": "---\nstatus: final\nyear: 2022\nowners: [cy]\n---\n# Storage plan\n\n"
                   "The storage cluster moved to the old region two years ago.\n",
    "plans/q3.md": "---\nstatus: Draft\nyear: 2023\n---\n# Storage plan\n\n"
                   "A storage cluster plan for the backup region.\n",
}  # fmt: skip
CONFIG = '[fields]\nstatus = "string"\nyear = "number"\nowners = "list"\n'


@pytest.fixture(scope="module")
def fields_kb(tmp_path_factory: pytest.TempPathFactory, server_env: Env) -> Path:
    kb = tmp_path_factory.mktemp("fields") / "kb"
    for rel, text in {**FILES, "kb-mcp.toml": CONFIG}.items():
        (kb / rel).parent.mkdir(parents=True, exist_ok=True)
        (kb / rel).write_text(text, encoding="utf-8")
    run_index(kb, server_env)
    return kb


#: What each filtered search returns, and the refusal of an undeclared key.
EXPECTED = {
    "none": set(FILES),
    "status=draft": {"plans/q1.md", "plans/q3.md"},
    "year>=2023, not owners ana": {"plans/q3.md"},
    "team (undeclared)": {"code": "invalid_argument",
                          "message": "fields: 'team' is not a declared field; declared "
                                     "fields: owners (list), status (string), year (number)"},
}


async def _exercise(client: Client) -> dict[str, object]:
    """The searches of ``EXPECTED`` through ``client``: what each one answered."""
    async def paths(arguments: dict[str, Any]) -> set[str]:
        result = await client.call_tool("search", {"query": "storage cluster region",
                                                   **arguments})
        assert not result.is_error, result.content
        return {hit["path"] for hit in text_of(result)["results"]}

    refused = await client.call_tool("search", {"query": "storage",
                                                "fields": {"team": "infra"}})
    return {
        "none": await paths({}),
        "status=draft": await paths({"fields": {"status": "draft"}}),
        "year>=2023, not owners ana": await paths({"fields": {"year": {"gte": 2023}},
                                                   "fields_not": {"owners": ["ana"]}}),
        "team (undeclared)": error_of(refused),
    }


def test_field_filters_over_stdio(fields_kb: Path, server_env: Env, tmp_path: Path) -> None:
    async def body() -> None:
        with anyio.fail_after(DEADLINE * 2):
            async with stdio_session(fields_kb, tmp_path / "serve.log", server_env) as client:
                answered.update(await _exercise(client))

    answered: dict[str, object] = {}
    anyio.run(body)
    assert answered == EXPECTED


@pytest.fixture()
def http_server(fields_kb: Path, server_env: Env) -> Iterator[Served]:
    running = start(fields_kb, environment(server_env), "--no-watch")
    yield running
    stop(running.proc)
    running.log.drain()


def test_field_filters_over_http(http_server: Served) -> None:
    async def body() -> None:
        with anyio.fail_after(DEADLINE * 2):
            async with Client(http_server.url, read_timeout_seconds=DEADLINE) as client:
                answered.update(await _exercise(client))

    answered: dict[str, object] = {}
    anyio.run(body)
    assert answered == EXPECTED


def test_field_filters_through_the_inspector_cli(fields_kb: Path, server_env: Env) -> None:
    """An independent client: the MCP Inspector CLI (tests/e2e/test_inspector.py)."""
    from tests.e2e.test_inspector import inspector_command

    env_flags = [flag for key, value in server_env.items() for flag in ("-e", f"{key}={value}")]

    def call(arguments: dict[str, Any]) -> Any:
        done = subprocess.run(
            [*inspector_command(), "--cli", *env_flags, *kb_mcp_command(), "serve",
             "--kb-path", str(fields_kb), "--no-watch", "--method", "tools/call",
             "--tool-name", "search", "--tool-args-json", json.dumps(arguments)],
            capture_output=True, text=True, timeout=DEADLINE, check=False)
        # an isError result is exit 5, the result still on stdout
        assert done.returncode in (0, 5), (done.stdout[-2000:], done.stderr[-2000:])
        return json.loads(done.stdout)

    found = call({"query": "storage cluster region", "fields": {"year": {"lt": 2024}},
                  "fields_not": {"status": "final"}})
    assert {hit["path"] for hit in found["structuredContent"]["results"]} == {"plans/q3.md"}
    assert found["structuredContent"]["filter_applied"] == {
        "fields": {"year": {"lt": 2024}}, "fields_not": {"status": "final"}}
    refused = call({"query": "storage", "fields": {"year": "next"}})
    assert refused["isError"] is True
    assert json.loads(refused["content"][0]["text"])["error"] == {
        "code": "invalid_argument",
        "message": "fields.year: 'next' is not a number (the field is declared number)"}
