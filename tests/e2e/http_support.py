"""Helpers for the HTTP end-to-end tests of auth and replicas: start `kb-mcp serve
--transport http` on any address, send raw requests, read SSE or JSON replies."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.conftest import DEADLINE, Env, LineReader, kb_mcp_command, stop

READY = r"streamable HTTP at http://\S+?:(\d+)/mcp"
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
PROTOCOL = "2025-11-25"


@dataclass
class Served:
    proc: subprocess.Popen[str]
    log: LineReader
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def request(self, method: str, path: str, body: Any = None,
                headers: dict[str, str] | None = None, source: str = "127.0.0.1",
                ) -> tuple[int, dict[str, str], bytes]:
        """One request on a new connection: status, headers (lower-case names), body.
        ``source``: the client's loopback address (each has its own count of refused
        tokens, so a test can send more than one address may)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=DEADLINE,
                                          source_address=(source, 0))
        try:
            data = None if body is None else json.dumps(body).encode()
            sent = {**(MCP_HEADERS if data is not None else {}), **(headers or {})}
            conn.request(method, path, body=data, headers=sent)
            response = conn.getresponse()
            got = {k.lower(): v for k, v in response.getheaders()}
            return response.status, got, response.read()
        finally:
            conn.close()

    def rpc(self, method: str, params: dict[str, Any] | None = None, *, ident: int | None = 1,
            headers: dict[str, str] | None = None) -> dict[str, Any] | None:
        """A JSON-RPC request (or notification when ``ident`` is None) on its own HTTP
        request, as a client behind a load balancer sends it: no session id."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if ident is not None:
            message["id"] = ident
        status, got, body = self.request(
            "POST", "/mcp", message, {"MCP-Protocol-Version": PROTOCOL, **(headers or {})})
        assert "mcp-session-id" not in got, "a stateless server handed out a session id"
        if ident is None:
            assert status == 202, (status, body)
            return None
        assert status == 200, (status, body)
        return reply_of(body)


def reply_of(body: bytes) -> dict[str, Any]:
    """The JSON-RPC reply in a JSON body or in the data lines of an SSE stream."""
    text = body.decode("utf-8")
    if text.lstrip().startswith("{"):
        return dict(json.loads(text))
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            found = json.loads(line[5:])
            if "id" in found:
                return dict(found)
    raise AssertionError(f"no JSON-RPC reply in {text[:500]!r}")


def serve(kb: Path, env: Env, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*kb_mcp_command(), "serve", "--kb-path", str(kb), "--transport", "http",
         "--port", "0", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, encoding="utf-8", env=env,
    )


def start(kb: Path, env: Env, *args: str) -> Served:
    """A running server (its ready line seen); the caller stops it with ``stop``."""
    proc = serve(kb, env, *args)
    assert proc.stderr is not None
    log = LineReader(proc.stderr)
    try:
        port = int(log.wait_for(READY).group(1))
    except BaseException:
        stop(proc)
        raise
    return Served(proc, log, port)


def environment(server_env: Env, **extra: str) -> Env:
    """The test environment without any token hashes of the caller's own."""
    env = {k: v for k, v in os.environ.items() if k != "KB_MCP_TOKEN_HASHES"}
    return {**env, **server_env, **extra}


def initialize_params() -> dict[str, Any]:
    return {"protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "e2e-http", "version": "1"}}
