"""The team recipe behind a real reverse proxy: Debian's nginx on loopback in front of two
`kb-mcp serve --read-only` replicas with a bare ``--allowed-host``. MCP requests and the page
answer through it with the user's original Host, the proxy's X-Forwarded-* headers are
believed because the replicas trust its address, and nobody else's are."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import time
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

NGINX = shutil.which("nginx") or next(
    (p for p in ("/usr/sbin/nginx", "/sbin/nginx") if os.path.exists(p)), None)

if NGINX is None:
    if os.environ.get("CI") == "true":  # .ci/run installs it: its absence is a failure there
        raise RuntimeError("nginx is not installed (apt-get install nginx-light)")
    pytest.skip("nginx is not installed (apt-get install nginx-light)", allow_module_level=True)

#: The proxy block of docs/team-mode.md, step 5 (TLS aside): the original Host goes through.
NGINX_CONF = """
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 64; }}
http {{
  log_format upstream '$upstream_addr $status';
  access_log {tmp}/access.log upstream;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  upstream kb_replicas {{
    server 127.0.0.1:{a};
    server 127.0.0.1:{b};
  }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://kb_replicas;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_buffering off;
      proxy_read_timeout 120s;
    }}
  }}
}}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"nginx exited {proc.returncode}: {log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nginx did not listen on {port}: {log.read_text()}")


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
    assert NGINX is not None
    home = tmp_path / "nginx"
    home.mkdir()
    port = free_port()
    conf = home / "nginx.conf"
    conf.write_text(NGINX_CONF.format(tmp=home, port=port, a=replicas[0].port,
                                      b=replicas[1].port), encoding="utf-8")
    proc = subprocess.Popen(
        [NGINX, "-p", str(home), "-c", str(conf), "-e", str(home / "error.log"),
         "-g", "daemon off; master_process off;"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, proc, home / "error.log")
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
