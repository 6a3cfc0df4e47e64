"""Streamable HTTP transport: /mcp, /healthz and the /ui page, loopback by default,
DNS-rebinding guarded."""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
from collections.abc import Iterable, Sequence

import anyio
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from kbmcp_adapters.mcp_server.auth import HashedTokenVerifier, with_bearer_auth
from kbmcp_adapters.mcp_server.http_limits import BodyGuard, HttpLimits, SessionCap
from kbmcp_adapters.mcp_server.runtime import BackgroundTask, KbRuntime
from kbmcp_adapters.mcp_server.server import build_server, exit_now
from kbmcp_adapters.mcp_server.ui import UI_API_PATH, UI_PATH, ui_routes
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


def check_auth(host: str, verifier: HashedTokenVerifier, insecure_no_auth: bool) -> bool:
    """Whether /mcp may answer without a token while none is configured: on loopback, or
    when the user opted out. Beyond loopback with no token and no opt-out: ConfigError."""
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


def host_names(host: str, extra: Iterable[str] = ()) -> list[str]:
    """Names a client may use in Host/Origin: loopback names, the bound address, extras."""
    bound = f"[{host.strip('[]')}]" if ":" in host else host
    names = [*_LOOPBACK_NAMES, bound, *extra]
    wildcard = {"0.0.0.0", "[::]"}
    return list(dict.fromkeys(n.lower() for n in names if n and n not in wildcard))


def allowed_hosts(names: Sequence[str], port: int) -> frozenset[str]:
    hosts = {f"{n}:{port}" for n in names}
    if port == 80:
        hosts |= set(names)
    return frozenset(hosts)


def allowed_origins(names: Sequence[str], port: int) -> frozenset[str]:
    return frozenset(
        f"{scheme}://{host}" for scheme in ("http", "https") for host in allowed_hosts(names, port)
    )


class HostOriginGuard:
    """ASGI middleware: exact Host and Origin checks (a missing Origin passes).

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
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "").lower()
        origin = headers.get("origin")
        if host not in self.hosts:
            log.warning("refused a request with a Host header this server does not answer to")
            await _forbidden("Host header not allowed")(scope, receive, send)
            return
        if origin is not None and origin.lower() not in self.origins:
            log.warning("refused a request from a foreign Origin")
            await _forbidden("Origin not allowed")(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _forbidden(reason: str) -> Response:
    return Response(
        json.dumps({"error": "forbidden", "reason": reason}),
        status_code=403,
        media_type="application/json",
    )


def build_http_app(
    rt: KbRuntime,
    *,
    host: str,
    port: int,
    extra_hosts: Iterable[str] = (),
    limits: HttpLimits | None = None,
    verifier: HashedTokenVerifier | None = None,
    open_without_tokens: bool = True,
) -> ASGIApp:
    """The ASGI app: Host/Origin guard -> bearer auth (of /mcp and /ui/api) -> session cap
    -> body deadline and size -> Starlette (/mcp, /healthz, /ui, the sessions' lifespan).

    A read-only runtime is served statelessly (decision 0011): no session ids, so any
    replica answers any request, and there is no session to cap or expire.
    """
    limits = limits or HttpLimits()
    names = host_names(host, extra_hosts)
    hosts, origins = allowed_hosts(names, port), allowed_origins(names, port)
    stateless = rt.read_only

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "rebuilding": rt.rebuilding_since() is not None,
                             **({"read_only": True} if stateless else {})})

    server = build_server(rt)
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
                                 *ui_routes(rt)],
    )
    app = BodyGuard(app, limits)
    if not stateless:
        app = SessionCap(app, limits)
    if verifier is not None:  # the page's data calls need the same token as /mcp
        for protected in (MCP_PATH, UI_API_PATH):
            app = with_bearer_auth(app, verifier, protected,
                                   open_without_tokens=open_without_tokens)
    return HostOriginGuard(app, hosts, origins)


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
    rt: KbRuntime,
    *,
    host: str,
    port: int,
    allow_remote: bool = False,
    extra_hosts: Sequence[str] = (),
    background: Sequence[BackgroundTask] = (),
    limits: HttpLimits | None = None,
    verifier: HashedTokenVerifier | None = None,
    insecure_no_auth: bool = False,
) -> None:
    """Serve MCP over streamable HTTP until interrupted (SIGINT or SIGTERM).

    With a ``verifier``, /mcp needs one of its tokens whenever it has any; beyond
    loopback it must have one unless ``insecure_no_auth``.
    """
    check_bind(host, allow_remote)
    verifier = verifier or HashedTokenVerifier(None)
    open_without_tokens = check_auth(host, verifier, insecure_no_auth)
    sock = bind_socket(host, port)
    bound_port = int(sock.getsockname()[1])
    app = build_http_app(rt, host=host, port=bound_port, extra_hosts=extra_hosts,
                         limits=limits, verifier=verifier,
                         open_without_tokens=open_without_tokens)
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    log.info(
        "serving MCP over streamable HTTP at http://%s:%d%s (health: %s, page: %s)%s%s",
        shown,
        bound_port,
        MCP_PATH,
        HEALTH_PATH,
        UI_PATH,
        "; bearer tokens required" if verifier.has_tokens() else "",
        "; read-only, stateless" if rt.read_only else "",
    )
    try:
        anyio.run(_serve_http, rt, app, sock, tuple(background))
    finally:
        sock.close()
        if not rt.shutdown():
            exit_now()


async def _serve_http(
    rt: KbRuntime, app: ASGIApp, sock: socket.socket, background: tuple[BackgroundTask, ...]
) -> None:
    import uvicorn

    config = uvicorn.Config(
        app,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
        server_header=False,
    )
    class Server(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            rt.request_stop()  # index runs in progress stop at their next safe point
            await super().shutdown(sockets)

    server = Server(config)
    async with anyio.create_task_group() as tg:
        for task in background:
            tg.start_soon(task, rt)
        await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()
