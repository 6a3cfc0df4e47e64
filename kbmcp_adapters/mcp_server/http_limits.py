"""What one HTTP client may hold: a request body read within a deadline, and a bounded
number of sessions that expire when idle. ASGI middleware where the SDK has no knob.
(Limits below ASGI, on connections and request headers: http_connections.py; sessions
per token and per client address: http_sessions.py.)"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass

import anyio
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kbmcp_core.settings import Settings
from kbmcp_core.settings_keys import default

log = logging.getLogger(__name__)

SESSION_HEADER = b"mcp-session-id"
#: The limits, each ``[server].NAME`` of the config (``Settings.server_NAME``).
_NAMES = ("body_timeout_s", "max_body_bytes", "session_idle_s", "max_sessions",
          "max_sessions_per_token", "max_sessions_per_client", "header_timeout_s",
          "max_connections", "max_connections_per_client")


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """The ``[server]`` HTTP limits (declared in ``settings_keys``; ``serve``'s flags win)."""

    #: the whole request body must arrive within this many seconds (else 408)
    body_timeout_s: float = default("server_body_timeout_s")
    #: request bodies above this get 413 before they are parsed
    max_body_bytes: int = default("server_max_body_bytes")
    #: a session with no request in flight for this long is closed (its id then gets 404)
    session_idle_s: float = default("server_session_idle_s")
    #: sessions open at once; past it, a new session gets 429 with Retry-After
    max_sessions: int = default("server_max_sessions")
    #: sessions one token holds at once; past it, the token's idlest session is ended
    max_sessions_per_token: int = default("server_max_sessions_per_token")
    #: sessions one client address holds at once; past it, its idlest session is ended
    max_sessions_per_client: int = default("server_max_sessions_per_client")
    #: a request's headers must be complete this many seconds after its first byte (or
    #: after the connection opened); else 408 and the connection is closed
    header_timeout_s: float = default("server_header_timeout_s")
    #: connections open at once, in total; past it a new one gets 503 and is closed
    max_connections: int = default("server_max_connections")
    #: connections open at once from one client address (a reverse proxy is one client)
    max_connections_per_client: int = default("server_max_connections_per_client")

    @classmethod
    def from_settings(cls, settings: Settings, **flags: float | None) -> HttpLimits:
        """The ``[server]`` limits of ``settings``, each flag given (not None) winning."""
        values = {name: getattr(settings, f"server_{name}") for name in _NAMES}
        values.update({k: v for k, v in flags.items() if v is not None})
        return cls(**values)

    @property
    def retry_after_s(self) -> int:
        """When to try again past the session cap: an idle session expires by then at the
        latest, or within a minute when sessions live long."""
        return max(1, min(60, math.ceil(self.session_idle_s)))


class BodyGuard:
    """Reads the whole request body before the app sees it, within a deadline.

    A client that stalls mid-body gets 408 and the connection is closed; one that hangs
    up mid-body costs one warning line (the app, which would log an error with a
    traceback, never sees the request); a body over the limit gets 413.
    """

    def __init__(self, app: ASGIApp, limits: HttpLimits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limits.max_body_bytes
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _reply(413, "Request body too large")(scope, receive, send)
            return
        body = bytearray()
        complete = False
        with anyio.move_on_after(self.limits.body_timeout_s):
            while not complete:
                message = await receive()
                if message["type"] == "http.disconnect":
                    log.warning("a client hung up while sending its request (%d bytes "
                                "received); nothing was done with it", len(body))
                    return
                body += message.get("body", b"")
                if len(body) > limit:
                    await _reply(413, "Request body too large")(scope, receive, send)
                    return
                complete = not message.get("more_body", False)
        if not complete:
            log.warning("a client sent %d bytes of its request body in %gs and stalled; "
                        "answered 408 and closed the connection",
                        len(body), self.limits.body_timeout_s)
            await _reply(408, "Request body not received in time",
                         {"Connection": "close"})(scope, receive, send)
            return
        pending: list[Message] = [{"type": "http.request", "body": bytes(body),
                                   "more_body": False}]

        async def replay() -> Message:
            if pending:
                return pending.pop()
            return await receive()

        await self.app(scope, replay, send)


class SessionCap:
    """The SDK refuses a session past its cap with 503; a client should hear 429 (too
    many, from it) and when to retry. Only a request that would open a session (it
    carries no session id) is rewritten."""

    def __init__(self, app: ASGIApp, limits: HttpLimits) -> None:
        self.app = app
        self.retry_after = str(limits.retry_after_s).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _header(scope, SESSION_HEADER) is not None:
            await self.app(scope, receive, send)
            return

        async def answer(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 503:
                headers = [(k, v) for k, v in message.get("headers", [])
                           if k.lower() != b"retry-after"]
                message = {**message, "status": 429,
                           "headers": [*headers, (b"retry-after", self.retry_after)]}
            await send(message)

        await self.app(scope, receive, answer)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _reply(status: int, reason: str, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps({"error": reason}), status_code=status, headers=headers,
                    media_type="application/json")


__all__ = ["BodyGuard", "HttpLimits", "SessionCap"]
