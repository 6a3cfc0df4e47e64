"""The real `kb-mcp serve --transport http` under hostile clients: stalled bodies, clients
that hang up, more sessions than it will hold, and connections that never finish their
headers."""

from __future__ import annotations

import http.client
import json
import re
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import DEADLINE, Env, stop, write
from tests.e2e.test_mcp_http import HttpServer, start_http

INITIALIZE = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "e2e-http-faults", "version": "1"}},
}).encode()
MCP_HEADERS = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def plain_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """No index needed: nothing here reaches a tool."""
    kb = tmp_path_factory.mktemp("http-faults") / "kb"
    write(kb, "a.md", "# A\n\nalpha\n")
    return kb


@pytest.fixture()
def servers() -> Iterator[list[HttpServer]]:
    started: list[HttpServer] = []
    yield started
    for server in started:
        stop(server.proc)


def serve(kb: Path, env: Env, servers: list[HttpServer], *extra: str) -> HttpServer:
    server = start_http(kb, env, "--no-index", *extra)  # no tool here needs an index
    servers.append(server)
    return server


def raw_post(server: HttpServer, body: bytes, declared: int) -> socket.socket:
    """A POST whose headers promise ``declared`` bytes, of which ``body`` is sent."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=DEADLINE)
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Length: {declared}\r\n\r\n").encode()
    sock.sendall(head + body)
    return sock


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (bounded by DEADLINE)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def log_lines(server: HttpServer, pattern: str, count: int) -> list[str]:
    """Wait until ``count`` log lines match ``pattern``; all lines read so far."""
    end = time.monotonic() + DEADLINE
    while sum(bool(re.search(pattern, line)) for line in server.log.lines) < count:
        left = end - time.monotonic()
        assert left > 0, f"{count} x {pattern!r} not logged: {''.join(server.log.lines)}"
        assert server.log.next_line(left) is not None, "the server's log ended"
    return server.log.lines


def post(server: HttpServer, body: bytes, session: str | None = None,
         method: str = "POST") -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=DEADLINE)
    headers = dict(MCP_HEADERS)
    if session is not None:
        headers.update({"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"})
    try:
        conn.request(method, "/mcp", body=body if method == "POST" else None, headers=headers)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def initialize(server: HttpServer) -> tuple[int, dict[str, str]]:
    status, headers, _ = post(server, INITIALIZE)
    return status, headers


def test_a_stalled_request_body_is_answered_408_and_closed(
    plain_kb: Path, server_env: Env, servers: list[HttpServer]
) -> None:
    server = serve(plain_kb, server_env, servers, "--body-timeout", "1")
    sock = raw_post(server, INITIALIZE[:20], declared=len(INITIALIZE))
    with sock:
        answer = read_all(sock)  # ends: the server closed the connection
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    lines = log_lines(server, r"WARNING: a client sent 20 bytes .* stalled", 1)
    assert server.health()["status"] == "ok"  # and it serves the next client
    assert not [line for line in lines if "ERROR" in line or "Traceback" in line], lines


def test_each_client_that_hangs_up_costs_one_warning_line(
    plain_kb: Path, server_env: Env, servers: list[HttpServer]
) -> None:
    server = serve(plain_kb, server_env, servers)
    for _ in range(3):
        raw_post(server, INITIALIZE[:30], declared=len(INITIALIZE)).close()
    lines = log_lines(server, r"WARNING: a client hung up while sending its request", 3)
    status, headers = initialize(server)  # still serving
    assert status == 200 and "mcp-session-id" in headers
    hung_up = [line for line in lines if "hung up" in line]
    assert len(hung_up) == 3, lines
    assert not [line for line in lines if "ERROR" in line or "Traceback" in line], lines


def test_sessions_past_the_cap_get_429_with_retry_after(
    plain_kb: Path, server_env: Env, servers: list[HttpServer]
) -> None:
    server = serve(plain_kb, server_env, servers, "--max-sessions", "2")
    sessions = []
    for _ in range(2):
        status, headers = initialize(server)
        assert status == 200
        sessions.append(headers["mcp-session-id"])
    status, headers = initialize(server)
    assert status == 429
    assert int(headers["retry-after"]) >= 1
    # an open session is unaffected, and an ended one makes room
    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()
    assert post(server, ping, sessions[0])[0] == 200
    assert post(server, b"", sessions[1], method="DELETE")[0] == 200
    status, _ = initialize(server)
    assert status == 200


def test_idle_sessions_expire_and_free_their_place(
    plain_kb: Path, server_env: Env, servers: list[HttpServer]
) -> None:
    server = serve(plain_kb, server_env, servers,
                   "--max-sessions", "1", "--session-idle-timeout", "1")
    status, headers = initialize(server)
    assert status == 200
    idle = headers["mcp-session-id"]
    end = time.monotonic() + DEADLINE
    while (status := initialize(server)[0]) == 429:  # refused until the idle one expires
        assert time.monotonic() < end, "the idle session never expired"
        time.sleep(0.1)
    assert status == 200
    ping = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}).encode()
    assert post(server, ping, idle)[0] == 404  # gone: the client starts a new session


# -- slow clients: connections that never finish their headers ------------------------------
def connect(port: int, source: str, count: int) -> list[socket.socket]:
    """``count`` connections from ``source`` (a loopback address) that send nothing yet
    (so a refusal's answer is never lost to a reset over unread bytes)."""
    return [socket.create_connection(("127.0.0.1", port), timeout=DEADLINE,
                                     source_address=(source, 0)) for _ in range(count)]


def start_requests(socks: list[socket.socket], port: int) -> None:
    """Each sends the start of a request and never the rest of its headers."""
    for sock in socks:
        sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())


def answers_until_closed(socks: list[socket.socket], count: int) -> list[bytes]:
    """Wait until ``count`` of ``socks`` are closed by the server: what each was sent."""
    received = {sock: b"" for sock in socks}
    closed: list[bytes] = []
    end = time.monotonic() + DEADLINE
    while len(closed) < count:
        left = end - time.monotonic()
        assert left > 0, f"only {len(closed)} of {count} connections were closed"
        readable, _, _ = select.select([s for s in received if s.fileno() >= 0], [], [],
                                       left)
        for sock in readable:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if chunk:
                received[sock] += chunk
            else:
                closed.append(received.pop(sock))
                sock.close()
    return closed


def test_connections_that_never_finish_their_headers_are_capped_and_closed(
    plain_kb: Path, server_env: Env, servers: list[HttpServer]
) -> None:
    # (the checks before the time-out take about a second; 5 s leaves room on a busy machine)
    server = serve(plain_kb, server_env, servers, "--header-timeout", "5",
                   "--max-connections-per-client", "50", "--max-connections", "100")
    socks = connect(server.port, "127.0.0.2", 200)
    try:
        # one client holds at most 50: the other 150 are answered 503 and closed at once
        refused = answers_until_closed(socks, 150)
        assert all(answer.startswith(b"HTTP/1.1 503 ") for answer in refused)
        start_requests([sock for sock in socks if sock.fileno() >= 0], server.port)
        assert server.health()["status"] == "ok"  # another client is still served
        # past the total, every client is refused
        more = connect(server.port, "127.0.0.3", 51)
        socks += more
        (last,) = answers_until_closed(more, 1)
        assert last.startswith(b"HTTP/1.1 503 ")
        start_requests([sock for sock in more if sock.fileno() >= 0], server.port)
        # and within the header timeout the 100 half-open ones are answered 408 and closed
        timed_out = answers_until_closed(socks, 100)
        assert all(answer.startswith(b"HTTP/1.1 408 ") for answer in timed_out)
        assert all(b"nosniff" in answer for answer in [*refused, *timed_out])
        assert server.health()["status"] == "ok"
    finally:
        for sock in socks:
            sock.close()
    stop(server.proc)
    log = server.log.drain()
    assert "Traceback" not in log and "ERROR" not in log, log[-3000:]
    # 151 refusals and 100 time-outs, but repeats are rate-limited: a handful of lines
    assert len([line for line in log.splitlines() if "refused a connection" in line]) <= 5
    assert len([line for line in log.splitlines() if "--header-timeout" in line]) <= 5
