"""Every response of the real HTTP server carries the security headers, refusals included;
a request with two Host or two Origin headers is refused, whichever comes last; and a bare
``--allowed-host`` name is answered on any port."""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.mcp_server.tokens import add_token
from tests.e2e.conftest import DEADLINE, Env, stop, write
from tests.e2e.http_support import Served, environment, initialize_params, start

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()}
EXPECTED = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory, server_env: Env
            ) -> Iterator[tuple[Served, str]]:
    """A server over a knowledge base with no index (nothing here needs one), a token."""
    root = tmp_path_factory.mktemp("headers")
    kb = root / "kb"
    write(kb, "a.md", "# A\n\nalpha\n")
    token, _ = add_token(root / "tokens.json", "ci")
    running = start(kb, environment(server_env), "--no-watch", "--no-index", "--body-timeout", "1",
                    "--tokens-file", str(root / "tokens.json"))
    yield running, token
    stop(running.proc)


def assert_secured(headers: dict[str, str], what: str) -> None:
    for name, value in EXPECTED.items():
        assert headers.get(name) == value, (what, name, headers)
    csp = headers.get("content-security-policy", "")
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp, (what, headers)


def raw_exchange(port: int, head: bytes) -> tuple[int, dict[str, str]]:
    """Send ``head`` (and nothing more); the status and headers of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE) as sock:
        sock.sendall(head)
        data = b""
        while b"\r\n\r\n" not in data and (chunk := sock.recv(65536)):
            data += chunk
    lines = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers


def test_every_response_carries_the_security_headers(guarded: tuple[Served, str]) -> None:
    served, token = guarded
    auth = {"Authorization": f"Bearer {token}"}
    cases = [
        ("healthz", 200, served.request("GET", "/healthz")),
        ("mcp", 200, served.request("POST", "/mcp", INIT, auth)),
        ("no token", 401, served.request("POST", "/mcp", INIT)),
        ("foreign host", 403, served.request("GET", "/healthz", None, {"Host": "evil.example"})),
        ("unknown path", 404, served.request("GET", "/nowhere")),
        ("wrong method", 405, served.request("GET", "/ui/api/search", None, auth)),
        ("page", 200, served.request("GET", "/ui")),
    ]
    for what, status, (got, headers, _) in cases:
        assert got == status, (what, got)
        assert_secured(headers, what)
    port = served.port
    too_big = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}"
               "\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n")
    status, headers = raw_exchange(port, too_big.encode())
    assert status == 413
    assert_secured(headers, "413")
    stalled = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}"
               "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"json")
    status, headers = raw_exchange(port, stalled.encode())
    assert status == 408
    assert_secured(headers, "408")


@pytest.mark.parametrize(("header", "refusal"), [("Origin", 403), ("Host", 400)])
def test_two_host_or_origin_headers_are_refused(guarded: tuple[Served, str],
                                                header: str, refusal: int) -> None:
    """Two Origins: 403, whichever is the foreign one. Two Hosts: 400, as RFC 9112
    (section 3.2) requires, before the request reaches any application code."""
    served, _ = guarded
    good = {"Host": f"127.0.0.1:{served.port}", "Origin": f"http://127.0.0.1:{served.port}"}
    bad = {"Host": "evil.example", "Origin": "http://evil.example"}
    for first, last in ((bad[header], good[header]), (good[header], bad[header])):
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=DEADLINE)
        try:
            # no body: a refusal then leaves nothing unread that could turn the close
            # into a reset
            conn.putrequest("GET", "/healthz", skip_host=True, skip_accept_encoding=True)
            if header == "Origin":
                conn.putheader("Host", good["Host"])
            conn.putheader(header, first)
            conn.putheader(header, last)
            conn.endheaders()
            response = conn.getresponse()
            answer = response.read()
        finally:
            conn.close()
        assert response.status == refusal, (header, first, last, answer)
        assert b"evil" not in answer
        assert_secured({k.lower(): v for k, v in response.getheaders()}, header)


def test_a_bare_allowed_host_matches_any_port(tmp_path: Path, server_env: Env) -> None:
    """Behind a load balancer the Host is the one its clients used, on its own port."""
    kb = tmp_path / "kb"
    write(kb, "a.md", "# A\n\nalpha\n")
    running = start(kb, environment(server_env), "--no-watch", "--allowed-host", "kb.internal",
                    "--allowed-host", "pinned.internal:8443",
                    "--tokens-file", str(tmp_path / "absent.json"))
    try:
        for host, status in (("kb.internal", 200), ("kb.internal:8771", 200),
                             ("KB.internal:443", 200), ("pinned.internal:8443", 200),
                             ("pinned.internal", 403), ("pinned.internal:8444", 403),
                             ("evil.kb.internal", 403), ("kb.internal.evil", 403),
                             ("kb.internal:*", 403)):
            got, headers, _ = running.request("GET", "/healthz", None, {"Host": host})
            assert got == status, (host, got)
            assert_secured(headers, host)
        got, _, body = running.request("POST", "/mcp", INIT, {
            "Host": "kb.internal", "Origin": "https://kb.internal:8771"})
        assert got == 200, body
        got, _, _ = running.request("POST", "/mcp", INIT, {
            "Host": "kb.internal", "Origin": "https://evil.example:8771"})
        assert got == 403
    finally:
        stop(running.proc)
