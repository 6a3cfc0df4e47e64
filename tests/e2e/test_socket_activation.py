"""`kb-mcp serve --transport http` started by socket activation, as the units of `kb-mcp
service install --http` start it: `systemd-socket-activate` listens, starts the real
process on the first connection and passes it the socket; the SDK's client searches
through it, with the same token and Host checks as a socket kb-mcp binds itself."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from kbmcp_adapters.mcp_server.tokens import add_token
from tests.e2e.conftest import Env, LineReader, kb_mcp_command, stop
from tests.e2e.http_support import Served, environment
from tests.e2e.test_http_auth import assert_refused, search_with


def activate_tool() -> str:
    """`systemd-socket-activate`: skipped only where it is missing, never under CI=true."""
    tool = shutil.which("systemd-socket-activate")
    if tool is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true and systemd-socket-activate is missing")
        pytest.skip("systemd-socket-activate is not installed")
    return tool


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def activated(indexed_kb: Path, server_env: Env, tmp_path: Path
              ) -> Iterator[tuple[Served, str]]:
    """The server behind systemd-socket-activate (its ready line not yet written: the
    process starts on the first connection), and a token it accepts."""
    tokens = tmp_path / "tokens.json"
    token, _ = add_token(tokens, "ci")
    port = free_port()
    proc = subprocess.Popen(
        [activate_tool(), "-l", f"127.0.0.1:{port}", *kb_mcp_command(), "serve",
         "--kb-path", str(indexed_kb), "--transport", "http", "--no-watch",
         "--tokens-file", str(tokens)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, encoding="utf-8", env=environment(server_env))
    assert proc.stderr is not None
    log = LineReader(proc.stderr)
    try:
        log.wait_for(rf"Listening on 127\.0\.0\.1:{port} as 3\.")
        yield Served(proc, log, port), token
    finally:
        stop(proc)
        log.drain()


def test_the_first_connection_starts_the_server_on_systemd_s_socket(
        activated: tuple[Served, str]) -> None:
    served, token = activated
    assert not any("serving MCP" in line for line in served.log.lines)  # nothing runs yet
    paths = anyio.run(search_with, served.url, token, "signing keys rotation")
    assert paths[0] == "guides/keys.md"
    served.log.wait_for(rf"streamable HTTP at http://127\.0\.0\.1:{served.port}/mcp .*"
                        "on the socket systemd passed")
    status, headers, _ = served.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 1,
                                                          "method": "ping"})
    assert_refused(status, headers)  # no token: refused as ever
    status, _, body = served.request("GET", "/healthz", headers={"Host": "evil.example"})
    assert status == 403 and b"Host header not allowed" in body
    assert served.proc.poll() is None  # one process: the server is the one systemd started
