"""Streamable HTTP transport: /mcp, /healthz and the /ui page, loopback by default,
DNS-rebinding guarded."""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
from collections.abc import Iterable, Sequence
from typing import Any

import anyio
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kbmcp_adapters.mcp_server.auth import HashedTokenVerifier, with_bearer_auth
from kbmcp_adapters.mcp_server.auth_failures import FailedTokens
from kbmcp_adapters.mcp_server.host import Host
from kbmcp_adapters.mcp_server.http_limits import BodyGuard, HttpLimits, SessionCap
from kbmcp_adapters.mcp_server.http_proxy import ForwardedHeaders, Network, peer_of
from kbmcp_adapters.mcp_server.http_sessions import SessionQuota
from kbmcp_adapters.mcp_server.oauth import OAuthVerifier
from kbmcp_adapters.mcp_server.runtime import BackgroundTask, KbRuntime
from kbmcp_adapters.mcp_server.server import build_server, exit_now
from kbmcp_adapters.mcp_server.ui import SECURITY_HEADERS, UI_API_PATH, UI_PATH, ui_routes
from kbmcp_core.errors import ConfigError

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
HEALTH_PATH = "/healthz"
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, allow_remote: bool) -> None:
    """Refuse a non-loopback address unless the user asked for it explicitly."""
    if not is_loopback(host) and not allow_remote:
        raise ConfigError(
            f"refusing to listen on {host}: it is not a loopback address, so anyone who can "
            "reach this machine could read the knowledge base. Use --host 127.0.0.1, or pass "
            "--allow-remote if you mean it (with a token from `kb-mcp token create`)."
        )


def check_auth(host: str, verifier: HashedTokenVerifier, insecure_no_auth: bool, *,
               read_only: bool = False, allow_remote: bool = False) -> bool:
    """Whether /mcp may answer without a token while none is required: on loopback, or
    when the user opted out. Beyond loopback with no token and no opt-out: ConfigError.
    A ``--read-only`` replica with ``--allow-remote`` (the team set-up, usually behind a
    load balancer) always needs a token: ``insecure_no_auth`` does not waive it."""
    if read_only and allow_remote:
        if not verifier.has_tokens():
            raise ConfigError(
                "refusing to serve a --read-only replica with --allow-remote without a "
                f"token (tokens file: {verifier.tokens_file}): create one with `kb-mcp "
                "token create` or give its hash in KB_MCP_TOKEN_HASHES; --insecure-no-auth "
                "is not accepted for a remote replica."
            )
        return False
    if is_loopback(host):
        return True
    if verifier.has_tokens():
        return insecure_no_auth
    if not insecure_no_auth:
        raise ConfigError(
            f"refusing to serve {host} without authentication: no token is configured, so "
            "anyone who can reach the port could read every document; create one with "
            "`kb-mcp token create` and give it to your clients (or pass --insecure-no-auth "
            "to serve without one)."
        )
    log.warning(
        "INSECURE: serving %s with NO AUTHENTICATION (--insecure-no-auth): anyone who can "
        "reach this port can read every document in the knowledge base. Create a token "
        "with `kb-mcp token create` and restart without --insecure-no-auth.", host,
    )
    return True


def host_names(host: str) -> list[str]:
    """Names a client may use in Host/Origin with the bound port: loopback names and the
    bound address (``--allowed-host`` names: ``allowed_hosts``)."""
    bound = f"[{host.strip('[]')}]" if ":" in host else host
    names = [*_LOOPBACK_NAMES, bound]
    wildcard = {"0.0.0.0", "[::]"}
    return list(dict.fromkeys(n.lower() for n in names if n and n not in wildcard))


def allowed_hosts(names: Sequence[str], port: int,
                  extra: Iterable[str] = ()) -> frozenset[str]:
    """Host values a client may send: each of ``names`` with the bound port, and each
    ``--allowed-host``: one with a port (``kb.internal:8443``) exactly, a bare name with
    no port or any port (``kb.internal`` and the pattern ``kb.internal:*``), since a load
    balancer or proxy in front forwards the Host its clients used, on its own port."""
    hosts = {f"{n}:{port}" for n in names}
    if port == 80:
        hosts |= set(names)
    for name in (n.strip().lower() for n in extra):
        if not name:
            continue
        if _has_port(name):
            hosts.add(name)
        else:
            hosts |= {name, f"{name}:*"}
    return frozenset(hosts)


def allowed_origins(hosts: frozenset[str]) -> frozenset[str]:
    return frozenset(f"{scheme}://{host}" for scheme in ("http", "https") for host in hosts)


def _has_port(name: str) -> bool:
    tail = name.rpartition("]")[2] if name.startswith("[") else name
    return ":" in tail and tail.rpartition(":")[2].isdigit()


def host_matches(value: str, allowed: frozenset[str]) -> bool:
    """``value`` is in ``allowed``, or matches a ``name:*`` pattern there with a port."""
    if value.endswith(":*"):  # a pattern, never a value
        return False
    if value in allowed:
        return True
    base, colon, port = value.rpartition(":")
    return bool(colon) and port.isdigit() and f"{base}:*" in allowed


class HostOriginGuard:
    """ASGI middleware: Host and Origin checks against ``allowed_hosts`` (a missing Origin
    passes; a bare ``--allowed-host`` name matches any port).

    A refusal is a 403 whose body never repeats the offending header.
    """

    def __init__(self, app: ASGIApp, hosts: frozenset[str], origins: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        names = [k.decode("latin-1").lower() for k, _ in scope["headers"]]
        if names.count("host") > 1 or names.count("origin") > 1:
            log.warning("refused a request from %s with more than one Host or Origin header",
                        peer_of(scope))
            await _forbidden("more than one Host or Origin header")(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "").lower()
        origin = headers.get("origin")
        if not host_matches(host, self.hosts):
            log.warning("refused a request from %s with a Host header this server does not "
                        "answer to", peer_of(scope))
            await _forbidden("Host header not allowed")(scope, receive, send)
            return
        if origin is not None and not host_matches(origin.lower(), self.origins):
            log.warning("refused a request from %s with a foreign Origin", peer_of(scope))
            await _forbidden("Origin not allowed")(scope, receive, send)
            return
        await self.app(scope, receive, send)


class SecurityHeaders:
    """ASGI middleware, outermost: the page's security headers (``SECURITY_HEADERS``:
    CSP, nosniff, no referrer, no framing, no caching) on every response, whoever made
    it: the page, /mcp and its event streams, /healthz, and every refusal (401, 403, 404,
    405, 408, 413, 429). An app that fails before answering gets a 500 with them too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.headers = [(k.lower().encode("latin-1"), v.encode("latin-1"))
                        for k, v in SECURITY_HEADERS.items()]
        self.names = {name for name, _ in self.headers}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                kept = [(k, v) for k, v in message.get("headers", [])
                        if bytes(k).lower() not in self.names]
                message = {**message, "headers": [*kept, *self.headers]}
            await send(message)

        try:
            await self.app(scope, receive, with_headers)
        except Exception:
            if started:
                raise
            log.exception("an HTTP request failed before it was answered; answered 500")
            await Response(json.dumps({"error": "internal server error"}), status_code=500,
                           media_type="application/json")(scope, receive, with_headers)


def _forbidden(reason: str) -> Response:
    return Response(
        json.dumps({"error": "forbidden", "reason": reason}),
        status_code=403,
        media_type="application/json",
    )


def build_http_app(
    rt: KbRuntime | Host,
    *,
    host: str,
    port: int,
    extra_hosts: Iterable[str] = (),
    limits: HttpLimits | None = None,
    verifier: HashedTokenVerifier | None = None,
    open_without_tokens: bool = True,
    trusted_proxies: tuple[Network, ...] = (),
    failed_tokens: FailedTokens | None = None,
) -> ASGIApp:
    """The ASGI app: security headers -> forwarding headers (believed only from
    ``trusted_proxies``, dropped otherwise) -> Host/Origin guard -> bearer auth (of /mcp and
    /ui/api) -> session caps (in total; per token and client address) -> body deadline and
    size -> Starlette (/mcp, /healthz, /ui, the sessions' lifespan).

    A read-only runtime is served statelessly (decision 0011): no session ids, so any
    replica answers any request, and there is no session to cap or expire.

    ``failed_tokens`` counts tokens that are not accepted, per client address (a new
    ``FailedTokens`` by default).
    """
    limits = limits or HttpLimits()
    hosts = allowed_hosts(host_names(host), port, extra_hosts)
    origins = allowed_origins(hosts)
    stateless = rt.read_only

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "rebuilding": rt.rebuilding_since() is not None,
                             **({"read_only": True} if stateless else {})})

    oauth_routes: list[Route] = []
    gate: dict[str, Any] = {}
    if isinstance(verifier, OAuthVerifier):  # decision 0054
        shown = f"[{host.strip('[]')}]" if ":" in host else host
        verifier.serve_at(f"http://{shown}:{port}{MCP_PATH}")
        oauth_routes = verifier.metadata_routes()
        gate = {"required_scopes": [verifier.config.read_scope],
                "resource_metadata_url": verifier.metadata_url()}
    server = build_server(rt, rebuild_scope=verifier.config.rebuild_scope
                          if isinstance(verifier, OAuthVerifier) else None)
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        host=host,
        stateless_http=stateless,
        max_request_body_size=limits.max_body_bytes,
        session_idle_timeout=None if stateless else limits.session_idle_s,
        max_sessions=None if stateless else limits.max_sessions,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=sorted(hosts),
            allowed_origins=sorted(origins),
        ),
        custom_starlette_routes=[Route(HEALTH_PATH, healthz, methods=["GET"]),
                                 *oauth_routes, *ui_routes(rt)],
    )
    app = BodyGuard(app, limits)
    if not stateless:
        app = SessionCap(SessionQuota(app, limits, MCP_PATH), limits)
    if verifier is not None:  # the page's data calls need the same token as /mcp
        # one count per address for both paths
        failures = FailedTokens() if failed_tokens is None else failed_tokens
        for protected in (MCP_PATH, UI_API_PATH):
            app = with_bearer_auth(app, verifier, protected,
                                   open_without_tokens=open_without_tokens,
                                   failures=failures, **gate)
    return SecurityHeaders(ForwardedHeaders(HostOriginGuard(app, hosts, origins),
                                            trusted_proxies))


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind before serving so a busy port is a clear error and port 0 gets a real port."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def serve_http(
    rt: KbRuntime | Host,
    *,
    host: str,
    port: int,
    allow_remote: bool = False,
    extra_hosts: Sequence[str] = (),
    background: Sequence[BackgroundTask] = (),
    limits: HttpLimits | None = None,
    verifier: HashedTokenVerifier | None = None,
    insecure_no_auth: bool = False,
    trusted_proxies: tuple[Network, ...] = (),
    listening: socket.socket | None = None,
) -> None:
    """Serve MCP over streamable HTTP until interrupted (SIGINT or SIGTERM).

    ``X-Forwarded-*`` headers are believed only from ``trusted_proxies`` (none by default).

    With a ``verifier``, /mcp needs one of its tokens whenever it has any; beyond
    loopback it must have one unless ``insecure_no_auth``.

    ``listening``: a socket already listening (socket activation); its address replaces
    ``host`` and ``port`` and goes through the same checks.
    """
    if listening is not None:
        from kbmcp_adapters.mcp_server.socket_activation import listening_address

        host, port = listening_address(listening)
    check_bind(host, allow_remote)
    verifier = verifier or HashedTokenVerifier(None)
    open_without_tokens = check_auth(host, verifier, insecure_no_auth,
                                     read_only=rt.read_only, allow_remote=allow_remote)
    if open_without_tokens and is_loopback(host) and not verifier.required():
        log.warning(
            "NO AUTHENTICATION: no token is configured (tokens file: %s), so /mcp and "
            "/ui/api answer every program and user on this machine; create one with "
            "`kb-mcp token create` (the server requires it from then on)",
            verifier.tokens_file or "none",
        )
    sock = listening or bind_socket(host, port)
    bound_port = int(sock.getsockname()[1])
    app = build_http_app(rt, host=host, port=bound_port, extra_hosts=extra_hosts,
                         limits=limits, verifier=verifier,
                         open_without_tokens=open_without_tokens,
                         trusted_proxies=trusted_proxies)
    if trusted_proxies:
        log.info("believing X-Forwarded-For/-Proto/-Host from %s only",
                 ", ".join(str(n) for n in trusted_proxies))
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    log.info(
        "serving MCP over streamable HTTP at http://%s:%d%s (health: %s, page: %s)%s%s%s",
        shown,
        bound_port,
        MCP_PATH,
        HEALTH_PATH,
        UI_PATH,
        "; bearer tokens required" if verifier.required() else "",
        "; read-only, stateless" if rt.read_only else "",
        "; on the socket systemd passed" if listening is not None else "",
    )
    try:
        anyio.run(_serve_http, rt, app, sock, tuple(background), limits or HttpLimits())
    finally:
        sock.close()
        if not rt.shutdown():
            exit_now()


async def _serve_http(
    rt: KbRuntime | Host, app: ASGIApp, sock: socket.socket,
    background: tuple[BackgroundTask, ...],
    limits: HttpLimits,
) -> None:
    import uvicorn

    from kbmcp_adapters.mcp_server.http_connections import (
        guarded_protocol,
        install_repeat_filter,
        within_fd_limit,
    )

    install_repeat_filter()  # a flood of one log line costs a few lines a minute
    config = uvicorn.Config(
        app,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
        server_header=False,
        # forwarding headers are ForwardedHeaders' business (trusted proxies only); uvicorn's
        # own default would believe them from any loopback peer (or $FORWARDED_ALLOW_IPS)
        proxy_headers=False,
        # uvicorn's h11 protocol plus a header deadline and connection caps
        http=guarded_protocol(within_fd_limit(limits)),
    )
    class Server(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            rt.request_stop()  # index runs in progress stop at their next safe point
            await super().shutdown(sockets)

    server = Server(config)
    # a stop asked for outside uvicorn's own signal handling (e.g. a SIGTERM at start-up,
    # noted by StopSignals) ends it too: uvicorn checks should_exit every 0.1 s
    rt.on_stop(lambda: setattr(server, "should_exit", True))
    async with anyio.create_task_group() as tg:
        for task in background:
            tg.start_soon(task, rt)
        await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()
