"""Sessions per holder: one bearer token, or one client address, holds at most so many
HTTP sessions; a holder that opens one more loses its idlest session, not everyone else
their place (the total cap, ``--max-sessions``, is the SDK's: http_limits.SessionCap).

The SDK's session manager counts sessions only in total, so this ASGI middleware watches
/mcp: a response that hands out a new ``mcp-session-id`` registers the session under its
token's name and client address; every request in it marks it active; a 404 for it, or
the client's own ``DELETE``, forgets it. A holder past a cap gets its idlest session ended
as its client would end it, by a ``DELETE`` of that session sent through the app with the
credentials that opened it: its id answers "Session not found" (404) from then on, so
the client initialises a new session, as after an idle expiry.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
from mcp.server.auth.provider import AccessToken
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kbmcp_adapters.mcp_server.http_limits import SESSION_HEADER, HttpLimits
from kbmcp_adapters.mcp_server.http_proxy import peer_of

log = logging.getLogger(__name__)

#: What an ending DELETE carries over from the request that opened the session.
_KEPT_SCOPE = ("type", "asgi", "http_version", "scheme", "server", "client", "path",
               "raw_path", "root_path", "user", "auth", "state")
_KEPT_HEADERS = (b"host", b"origin")


@dataclass(slots=True)
class Held:
    """One open session and who holds it."""

    id: str
    token: str | None  # the name of the token that opened it (None: no token needed)
    client: str  # the client address it was opened from
    opening: Scope  # what is needed to end it as its client would
    last: int  # order of its latest activity (a request begun or ended)
    seen: float  # when that was (the clock's seconds)
    busy: int = 0  # requests in flight other than event streams (GET)
    streams: int = 0  # event streams (GET) open


class SessionQuota:
    """ASGI middleware of /mcp: at most ``max_sessions_per_token`` sessions per token and
    ``max_sessions_per_client`` per client address; past either, the holder's idlest
    session (no request in flight, then the longest unused) is ended."""

    def __init__(self, app: ASGIApp, limits: HttpLimits, path: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.limits = limits
        self.path = path
        self.clock = clock
        self.held: dict[str, Held] = {}
        self._ticks = itertools.count()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != self.path:
            await self.app(scope, receive, send)
            return
        session = _header(scope, SESSION_HEADER)
        if session is None:
            await self._opening(scope, receive, send)
            return
        held = self.held.get(session)
        if held is None:
            await self.app(scope, receive, send)
            return
        stream = scope.get("method") == "GET"
        self._touch(held, +1, stream)
        status: int | None = None

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            self._touch(held, -1, stream)
            ended = status == 404 or (scope.get("method") == "DELETE"
                                      and status is not None and status < 300)
            if ended and self.held.get(session) is held:
                del self.held[session]

    async def _opening(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A request with no session id: register the session its answer opens, then
        keep its holder within the caps."""
        opened: Held | None = None

        async def watch(message: Message) -> None:
            nonlocal opened
            if message["type"] == "http.response.start" and int(message["status"]) < 400:
                session = next((bytes(v).decode("latin-1") for k, v in message.get("headers", [])
                                if bytes(k).lower() == SESSION_HEADER), None)
                if session is not None:
                    opened = self._register(session, scope)
            await send(message)

        await self.app(scope, receive, watch)
        if opened is not None:
            await self._within_caps(opened)

    def _register(self, session: str, scope: Scope) -> Held:
        self._forget_expired()
        access = getattr(scope.get("user"), "access_token", None)
        token = access.client_id if isinstance(access, AccessToken) else None
        opening = {k: scope[k] for k in _KEPT_SCOPE if k in scope}
        opening["headers"] = [(k, v) for k, v in scope.get("headers", [])
                              if bytes(k).lower() in _KEPT_HEADERS]
        held = Held(session, token, peer_of(scope), opening, next(self._ticks), self.clock())
        self.held[session] = held
        return held

    def _touch(self, held: Held, step: int, stream: bool) -> None:
        if stream:
            held.streams += step
        else:
            held.busy += step
        held.last, held.seen = next(self._ticks), self.clock()

    def _forget_expired(self) -> None:
        """Drop sessions the SDK has expired (idle past ``session_idle_s``), so the table
        holds no more than the sessions alive."""
        now = self.clock()
        for held in list(self.held.values()):
            if not held.busy and not held.streams and now - held.seen > self.limits.session_idle_s:
                del self.held[held.id]

    async def _within_caps(self, opened: Held) -> None:
        caps = (("token", opened.token, self.limits.max_sessions_per_token,
                 "--max-sessions-per-token"),
                ("client", opened.client, self.limits.max_sessions_per_client,
                 "--max-sessions-per-client"))
        for kind, holder, cap, option in caps:
            if holder is None:
                continue
            while True:
                mine = [h for h in self.held.values()
                        if (h.token if kind == "token" else h.client) == holder]
                if len(mine) <= cap:
                    break
                idlest = min((h for h in mine if h is not opened),
                             key=lambda h: (h.busy > 0, h.last))
                del self.held[idlest.id]
                log.info("ended session %s… of %s %s (client %s), its idlest, to open "
                         "another: at most %d sessions per %s (%s); its next request gets "
                         "404 and it starts a new session", idlest.id[:8], kind,
                         f"{holder!r}" if kind == "token" else holder, idlest.client, cap,
                         "token" if kind == "token" else "client address", option)
                await self._end(idlest)

    async def _end(self, held: Held) -> None:
        """End ``held`` through the app, as its client's ``DELETE`` would."""
        scope = {**held.opening, "method": "DELETE", "query_string": b"",
                 "headers": [*held.opening["headers"],
                             (SESSION_HEADER, held.id.encode("latin-1"))]}
        sent = False

        async def receive() -> Message:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: Message) -> None:
            return None

        with anyio.CancelScope(shield=True):
            await self.app(scope, receive, discard)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if bytes(key).lower() == name:
            return bytes(value).decode("latin-1")
    return None


__all__ = ["Held", "SessionQuota"]
