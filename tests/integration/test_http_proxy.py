"""Forwarding headers (X-Forwarded-For/-Proto/-Host, Forwarded) are believed from a trusted
proxy's address only; from any other peer nothing downstream ever sees them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.mcp_server.http import HostOriginGuard, allowed_hosts, allowed_origins
from kbmcp_adapters.mcp_server.http_proxy import ForwardedHeaders, parse_trusted_proxies
from kbmcp_core.errors import ConfigError

FORWARDED = {"X-Forwarded-For": "198.51.100.7", "X-Forwarded-Proto": "https",
             "X-Forwarded-Host": "kb.internal", "Forwarded": "for=203.0.113.1"}


async def echo(scope: Scope, receive: Receive, send: Send) -> None:
    """What the application behind the middleware sees of the request."""
    seen = {"client": scope["client"][0], "scheme": scope["scheme"],
            "headers": {k.decode(): v.decode() for k, v in scope["headers"]}}
    body = json.dumps(seen).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


def test_a_trusted_proxy_sets_client_scheme_and_host() -> None:
    seen = through_app("10.0.0.5", ["10.0.0.0/24"])
    assert seen["client"] == "198.51.100.7"
    assert seen["scheme"] == "https"
    assert seen["headers"]["host"] == "kb.internal"
    assert "x-forwarded-host" not in seen["headers"]


@pytest.mark.parametrize("trusted", [[], ["10.0.0.5"], ["192.168.0.0/16"]])
def test_anyone_else_s_forwarding_headers_are_dropped(trusted: list[str]) -> None:
    seen = through_app("127.0.0.1", trusted)
    assert seen["client"] == "127.0.0.1" and seen["scheme"] == "http"
    assert seen["headers"]["host"] == "10.0.0.9:8765"
    assert not {"forwarded", "x-forwarded-for", "x-forwarded-proto",
                "x-forwarded-host"} & set(seen["headers"])


def test_the_host_check_sees_the_host_a_trusted_proxy_forwards() -> None:
    hosts = allowed_hosts(["127.0.0.1"], 8765, ["kb.internal"])
    guard = HostOriginGuard(echo, hosts, allowed_origins(hosts))
    app = ForwardedHeaders(guard, parse_trusted_proxies(["10.0.0.5"]))
    for peer, status in (("10.0.0.5", 200), ("10.0.0.6", 403)):
        answer = anyio.run(get, app, peer, {"Host": "upstream-name:8765",
                                            "X-Forwarded-Host": "kb.internal:443"})
        assert answer.status_code == status, peer


async def get(app: ASGIApp, peer: str, headers: dict[str, str]) -> httpx.Response:
    transport = httpx.ASGITransport(app=app, client=(peer, 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
        return await client.get("/healthz", headers=headers)


def through_app(peer: str, trusted: list[str]) -> Any:
    app = ForwardedHeaders(echo, parse_trusted_proxies(trusted))
    return anyio.run(get, app, peer, {"Host": "10.0.0.9:8765", **FORWARDED}).json()


def test_a_trusted_proxy_must_be_an_address_or_a_network() -> None:
    assert [str(n) for n in parse_trusted_proxies(["10.0.0.5", "fd00::/8, 127.0.0.1"])] == [
        "10.0.0.5/32", "fd00::/8", "127.0.0.1/32"]
    with pytest.raises(ConfigError, match="lb.internal.*not an IP address"):
        parse_trusted_proxies(["lb.internal"])


def test_trusted_proxies_come_from_a_config_only_once_it_is_trusted(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "kb-mcp.toml").write_text('[server]\ntrusted_proxies = ["10.0.0.0/24"]\n',
                                    encoding="utf-8")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    with pytest.raises(ConfigError, match="trusted_proxies"):  # found by looking
        build_settings(cwd=tmp_path, env=env, kb_path=kb)
    named = build_settings(kb / "kb-mcp.toml", cwd=tmp_path, env=env, kb_path=kb)
    assert named.server_trusted_proxies == ("10.0.0.0/24",)
