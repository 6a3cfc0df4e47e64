"""Requests relayed by a reverse proxy or load balancer: its ``X-Forwarded-*`` headers are
believed only from the addresses given with ``--trusted-proxy`` (decision 0027).

From a trusted peer, ``X-Forwarded-For`` and ``X-Forwarded-Proto`` set the request's client
address and scheme (uvicorn's ``ProxyHeadersMiddleware`` does that part), and
``X-Forwarded-Host`` replaces ``Host``, so the Host/Origin checks see the name the user
typed. From any other peer every forwarding header (``Forwarded`` too) is removed before
anything reads it: a client cannot claim another address or host by sending one.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kbmcp_core.errors import ConfigError

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Headers a proxy sets; removed from a request that did not come from a trusted proxy.
FORWARDING_HEADERS = frozenset({b"forwarded", b"x-forwarded-for", b"x-forwarded-proto",
                                b"x-forwarded-host", b"x-forwarded-port",
                                b"x-forwarded-prefix", b"x-real-ip"})


def parse_trusted_proxies(values: Iterable[str]) -> tuple[Network, ...]:
    """Each value an IP address or a network (``10.0.0.0/8``); anything else: ConfigError."""
    networks: list[Network] = []
    for raw in values:
        for value in (v.strip() for v in str(raw).split(",")):
            if not value:
                continue
            try:
                networks.append(ipaddress.ip_network(value.strip("[]"), strict=False))
            except ValueError:
                raise ConfigError(
                    f"--trusted-proxy {value!r} is not an IP address or network (such as "
                    "10.0.0.5 or 10.0.0.0/24): give the address your proxy connects from"
                ) from None
    return tuple(dict.fromkeys(networks))


def peer_of(scope: Scope) -> str:
    """The address the request came from (after a trusted proxy's ``X-Forwarded-For``)."""
    client = scope.get("client")
    return str(client[0]) if client else "an unknown address"


class ForwardedHeaders:
    """ASGI middleware: apply a trusted proxy's forwarding headers, drop anyone else's."""

    def __init__(self, app: ASGIApp, trusted: tuple[Network, ...]) -> None:
        self.trusted = trusted
        self.app = app
        literal = [str(n) for n in trusted]
        # uvicorn is imported here: a stdio server checks --trusted-proxy but never serves
        from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

        # uvicorn's own middleware sets client and scheme; it trusts only these networks
        proxied = ProxyHeadersMiddleware(app, trusted_hosts=literal)  # type: ignore[arg-type]
        self.proxied: ASGIApp = proxied  # type: ignore[assignment]

    def is_trusted(self, scope: Scope) -> bool:
        client = scope.get("client")
        if not client or not self.trusted:
            return False
        try:
            address = ipaddress.ip_address(str(client[0]))
        except ValueError:
            return False
        return any(address in network for network in self.trusted)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = [(bytes(k).lower(), bytes(v)) for k, v in scope["headers"]]
        if not self.is_trusted(scope):
            kept = [(k, v) for k, v in headers if k not in FORWARDING_HEADERS]
            await self.app({**scope, "headers": kept}, receive, send)
            return
        forwarded_host = [v for k, v in headers if k == b"x-forwarded-host"]
        if forwarded_host:
            # the first name is the one the user's client sent to the first proxy
            original = forwarded_host[0].split(b",")[0].strip()
            headers = [(k, v) for k, v in headers if k not in (b"host", b"x-forwarded-host")]
            headers.append((b"host", original))
        await self.proxied({**scope, "headers": headers}, receive, send)


__all__ = ["FORWARDING_HEADERS", "ForwardedHeaders", "parse_trusted_proxies", "peer_of"]
