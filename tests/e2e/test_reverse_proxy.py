"""The team recipe behind a real reverse proxy: Debian's nginx on loopback in front of two
`kb-mcp serve --read-only` replicas with a bare ``--allowed-host``. MCP requests and the page
answer through it with the user's original Host, the proxy's X-Forwarded-* headers are
believed because the replicas trust its address, and nobody else's are."""

from __future__ import annotations

import http.client
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import DEADLINE, Env, stop
from tests.e2e.http_support import (
    MCP_HEADERS,
    PROTOCOL,
    Served,
    environment,
    initialize_params,
    reply_of,
    start,
)
from tests.nginx_proxy import NGINX, start_proxy

if NGINX is None:
    if os.environ.get("CI") == "true":  # .ci/run installs it: its absence is a failure there
        raise RuntimeError("nginx is not installed (apt-get install nginx-light)")
    pytest.skip("nginx is not installed (apt-get install nginx-light)", allow_module_level=True)


@pytest.fixture()
def replicas(fresh_kb: Path, server_env: Env) -> Iterator[tuple[Served, Served]]:
    started: list[Served] = []
    try:
        for _ in range(2):
            started.append(start(fresh_kb, environment(server_env), "--read-only",
                                 "--allowed-host", "kb.internal",
                                 "--trusted-proxy", "127.0.0.1"))
        yield started[0], started[1]
    finally:
        for running in started:
            stop(running.proc)
            running.log.drain()


@pytest.fixture()
def proxy(replicas: tuple[Served, Served], tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """nginx in the foreground, one process, as this user; stopped by the test."""
    home = tmp_path / "nginx"
    proc, port = start_proxy(home, [r.port for r in replicas], DEADLINE)
    try:
        yield port, home
    finally:
        stop(proc)


def through(port: int, method: str, path: str, body: Any = None,
            headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE)
    try:
        data = None if body is None else json.dumps(body).encode()
        conn.request(method, path, body=data,
                     headers={**(MCP_HEADERS if data is not None else {}), **(headers or {})})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def rpc(port: int, ident: int, method: str, params: dict[str, Any], host: str) -> Any:
    status, body = through(port, "POST", "/mcp",
                           {"jsonrpc": "2.0", "id": ident, "method": method, "params": params},
                           {"Host": host, "MCP-Protocol-Version": PROTOCOL})
    assert status == 200, (host, status, body)
    return reply_of(body)["result"]


def test_two_replicas_answer_through_nginx_with_the_original_host(
        replicas: tuple[Served, Served], proxy: tuple[int, Path]) -> None:
    port, home = proxy
    for n, host in enumerate(("kb.internal", f"kb.internal:{port}")):
        hello = rpc(port, 1 + n, "initialize", initialize_params(), host)
        assert hello["serverInfo"]["name"] == "kb-mcp"
        found = rpc(port, 10 + n, "tools/call", {"name": "search", "arguments": {
            "query": "rotate the signing keys", "limit": 3}}, host)
        assert not found.get("isError"), found
        assert found["structuredContent"]["results"][0]["path"] == "guides/keys.md"
        status, page = through(port, "GET", "/ui", headers={"Host": host})
        assert status == 200 and b"<html" in page.lower()

    # a name the replicas do not answer to is refused, through the proxy as directly; two
    # requests in a row go to both replicas (round robin)
    for _ in range(2):
        status, body = through(port, "GET", "/healthz", headers={
            "Host": "evil.example", "X-Forwarded-For": "198.51.100.7"})
        assert status == 403 and b"evil" not in body
    for replica in replicas:  # each logs the client the proxy names, not the proxy
        replica.log.wait_for(r"refused a request from 198\.51\.100\.7 with a Host")

    upstreams = (home / "access.log").read_text().split()
    assert {f"127.0.0.1:{r.port}" for r in replicas} <= set(upstreams), upstreams


def test_forwarding_headers_from_an_untrusted_peer_are_ignored(
        fresh_kb: Path, server_env: Env) -> None:
    """No --trusted-proxy: a client on loopback cannot claim a host or an address."""
    running = start(fresh_kb, environment(server_env), "--read-only",
                    "--allowed-host", "kb.internal")
    try:
        status, _, _ = running.request("GET", "/healthz", None, {
            "Host": "evil.example", "X-Forwarded-Host": "kb.internal",
            "X-Forwarded-For": "203.0.113.9", "Forwarded": "for=203.0.113.9;host=kb.internal"})
        assert status == 403
        running.log.wait_for(r"refused a request from 127\.0\.0\.1 with a Host")
        status, _, _ = running.request("GET", "/healthz", None, {"Host": "kb.internal:9"})
        assert status == 200
    finally:
        stop(running.proc)
        logs = running.log.drain()
    assert "203.0.113.9" not in logs
