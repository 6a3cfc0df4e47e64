"""Bearer tokens on the real HTTP server: /mcp needs one, /healthz does not, and beyond
loopback the server will not start without one unless told loudly."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from kbmcp_adapters.mcp_server.tokens import add_token, token_hash
from tests.e2e.conftest import DEADLINE, Env, LineReader, kb_mcp_command, stop, text_of
from tests.e2e.http_support import (
    Served,
    environment,
    initialize_params,
    serve,
    start,
)

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()}


@pytest.fixture()
def tokens_file(tmp_path: Path) -> Path:
    return tmp_path / "team" / "tokens.json"


@pytest.fixture()
def guarded(indexed_kb: Path, server_env: Env, tokens_file: Path) -> Iterator[Served]:
    tokens_file.parent.mkdir()
    add_token(tokens_file, "ci")  # a token exists: loopback or not, /mcp now needs one
    running = start(indexed_kb, environment(server_env), "--no-watch",
                    "--tokens-file", str(tokens_file))
    yield running
    stop(running.proc)
    running.log.drain()


def assert_refused(status: int, headers: dict[str, str]) -> None:
    assert status == 401
    challenge = headers.get("www-authenticate", "")
    assert challenge.startswith("Bearer ") and 'error="invalid_token"' in challenge


async def search_with(url: str, token: str, query: str) -> list[str]:
    """The SDK's own client, sending the token as a bearer header: the hit paths."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (http, Client(streamable_http_client(url, http_client=http), mode="legacy",
                             read_timeout_seconds=DEADLINE) as client):
        result = await client.call_tool("search", {"query": query})
        assert not result.is_error, result.content
        return [hit["path"] for hit in text_of(result)["results"]]


def test_mcp_needs_a_valid_token_and_healthz_stays_open(guarded: Served, tokens_file: Path,
                                                        server_env: Env) -> None:
    status, headers, _ = guarded.request("POST", "/mcp", INIT)
    assert_refused(status, headers)
    status, headers, _ = guarded.request("POST", "/mcp", INIT,
                                         {"Authorization": "Bearer kbm_not-a-real-token"})
    assert_refused(status, headers)
    status, headers, _ = guarded.request("POST", "/mcp", INIT, {"Authorization": "Basic eDp5"})
    assert_refused(status, headers)
    status, _, body = guarded.request("GET", "/healthz")
    assert status == 200 and b'"ok"' in body

    token, _ = add_token(tokens_file, "laptop")  # created while the server runs
    paths = anyio.run(search_with, guarded.url, token, "signing keys rotation")
    assert paths[0] == "guides/keys.md"

    revoked = subprocess.run(
        [*kb_mcp_command(), "token", "revoke", "laptop", "--tokens-file", str(tokens_file)],
        env=environment(server_env), capture_output=True, text=True, timeout=DEADLINE,
        check=False)
    assert revoked.returncode == 0, revoked.stderr
    status, headers, _ = guarded.request("POST", "/mcp", INIT,
                                         {"Authorization": f"Bearer {token}"})
    assert_refused(status, headers)


def test_beyond_loopback_without_a_token_the_server_does_not_start(
        indexed_kb: Path, server_env: Env, tokens_file: Path) -> None:
    proc = serve(indexed_kb, environment(server_env), "--no-watch", "--host", "0.0.0.0",
                 "--allow-remote", "--tokens-file", str(tokens_file))
    try:
        _, err = proc.communicate(timeout=DEADLINE)
    finally:
        stop(proc)
    assert proc.returncode == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "kb-mcp token create" in lines[0], err
    assert "Traceback" not in err


def test_the_opt_out_starts_open_with_a_loud_warning(indexed_kb: Path, server_env: Env,
                                                     tokens_file: Path) -> None:
    running = start(indexed_kb, environment(server_env), "--no-watch", "--host", "0.0.0.0",
                    "--allow-remote", "--insecure-no-auth", "--tokens-file", str(tokens_file))
    try:
        running.log.wait_for(r"WARNING: INSECURE: .*NO AUTHENTICATION")
        status, _, _ = running.request("POST", "/mcp", INIT)
        assert status == 200
    finally:
        stop(running.proc)
        running.log.drain()


def test_beyond_loopback_a_token_from_the_environment_is_enough(
        indexed_kb: Path, server_env: Env, tokens_file: Path) -> None:
    token = "kbm_from-the-container-secret-store"
    env = environment(server_env, KB_MCP_TOKEN_HASHES=token_hash(token))
    running = start(indexed_kb, env, "--no-watch", "--host", "0.0.0.0", "--allow-remote",
                    "--tokens-file", str(tokens_file))
    try:
        status, headers, _ = running.request("POST", "/mcp", INIT)
        assert_refused(status, headers)
        paths = anyio.run(search_with, running.url, token, "nightly database backups")
        assert paths[0] == "guides/backup.md"
        assert "INSECURE" not in "".join(running.log.lines)
    finally:
        stop(running.proc)
        running.log.drain()


def test_a_broken_tokens_file_stops_the_server_at_start(indexed_kb: Path, server_env: Env,
                                                       tokens_file: Path) -> None:
    tokens_file.parent.mkdir()
    tokens_file.write_text("[]", encoding="utf-8")
    proc = serve(indexed_kb, environment(server_env), "--no-watch",
                 "--tokens-file", str(tokens_file))
    assert proc.stderr is not None
    log = LineReader(proc.stderr)
    try:
        assert proc.wait(timeout=DEADLINE) == 2
    finally:
        stop(proc)
    err = log.drain()
    assert "not a kb-mcp tokens file" in err and "Traceback" not in err
