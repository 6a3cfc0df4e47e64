"""Bearer-token authentication of /mcp, built from the MCP SDK's authorization pieces.

The SDK's ``BearerAuthBackend`` (under Starlette's ``AuthenticationMiddleware``) asks our
``HashedTokenVerifier`` about the ``Authorization: Bearer`` token of every request, and
the SDK's ``RequireAuthMiddleware`` answers a request to /mcp that has no valid token
with ``401`` and ``WWW-Authenticate: Bearer error="invalid_token", ...``. Other routes
(``/healthz``) stay open. Tokens that are not accepted are counted per client address
(``auth_failures``): logged in a few lines, and an address that sends too many is held
back with ``429``.

kb-mcp tokens are issued by ``kb-mcp token create``, not by an OAuth authorization
server, so with them alone the 401 carries no ``resource_metadata``: a client is
configured with the token (an ``Authorization`` header) instead of discovering one. With
``[oauth].issuers`` (``oauth.OAuthVerifier``, decision 0054) the 401 names the protected
resource metadata, and a token needs the read scope.
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import anyio
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from pydantic import AnyHttpUrl
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kbmcp_adapters.mcp_server.auth_failures import FailedTokens
from kbmcp_adapters.mcp_server.http_proxy import peer_of
from kbmcp_adapters.mcp_server.tokens import (
    FileStamp,
    read_tokens_if_changed,
    token_hash,
)
from kbmcp_core.errors import ConfigError

log = logging.getLogger(__name__)


class HashedTokenVerifier:
    """The SDK's ``TokenVerifier`` over the hashes in a tokens file and the environment.

    The file is re-read whenever it changes (a new version is a new inode, since kb-mcp
    replaces it by a rename), so a token created or revoked while the server runs is
    accepted or refused from the next request on, without a restart.

    Once this server has required tokens (the file or the environment held one), it
    requires them until it stops: a tokens file that turns missing, empty, malformed,
    unreadable or unsafe (``tokens.unsafe_reason``) while serving fails *closed* (only
    the environment's hashes are accepted, every other request is refused) and says so
    in one ERROR line, not one per request.
    """

    def __init__(self, tokens_file: Path | None, env_hashes: tuple[str, ...] = ()) -> None:
        self.tokens_file = tokens_file
        self._env = [(f"env-{i + 1}", h) for i, h in enumerate(env_hashes)]
        self._lock = threading.Lock()
        self._stamp: FileStamp | None = None
        self._from_file: list[tuple[str, str]] = []
        self._problem: str | None = None  # why the file is not used right now
        self._had_file = False  # the file existed at some time while serving
        #: sticky: once tokens were required, the server never opens up again
        self._required = bool(self._env)
        self._reload(strict=True)  # a bad file at start is a start-up error

    def _reload(self, *, strict: bool = False) -> list[tuple[str, str]]:
        if self.tokens_file is None:
            return []
        with self._lock:
            try:
                found = read_tokens_if_changed(self.tokens_file, self._stamp)
            except ConfigError as exc:
                if strict:
                    raise
                self._fail(str(exc))
                return []
            if found is None:
                self._stamp, self._from_file = None, []
                if self._had_file:
                    self._fail(f"tokens file {self.tokens_file} is missing")
                return []
            self._had_file = True
            stamp, tokens = found
            if tokens is not None:
                self._from_file = [(t.name, t.hash) for t in tokens]
            self._stamp = stamp
            if self._from_file:
                self._required = True
            if self._problem is not None:
                log.warning("tokens file %s is usable again (%d token(s))",
                            self.tokens_file, len(self._from_file))
                self._problem = None
            return self._from_file

    def _fail(self, problem: str) -> None:
        """Forget the file's tokens; log the problem once (until it changes)."""
        self._stamp, self._from_file = None, []
        if problem != self._problem:
            log.error("%s; every request to /mcp and /ui/api is refused except with a "
                      "token from %s", problem,
                      "KB_MCP_TOKEN_HASHES" if self._env else "a repaired tokens file")
        self._problem = problem

    def required(self) -> bool:
        """Whether a request needs a token: tokens exist now, or existed at any time
        while this server ran (revoking the last token or breaking the file never opens
        a server that was closed)."""
        self._reload()
        return self._required

    def accepts(self, candidate_hash: str) -> bool:
        """Whether a token with this hash is accepted right now (constant time)."""
        found = False
        for _, stored in self.entries():
            found |= hmac.compare_digest(candidate_hash, stored)
        return found

    def entries(self) -> list[tuple[str, str]]:
        """(name, hash) of every token accepted right now."""
        return [*self._reload(), *self._env]

    def has_tokens(self) -> bool:
        return bool(self.entries())

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's owner when its hash is one of ours, else None.

        Each stored hash is compared with ``hmac.compare_digest`` (constant time), and
        every one of them is compared whatever the outcome, so the time taken tells
        nothing about which hash, or how much of one, matched.
        """
        candidate = token_hash(token)
        owner: str | None = None
        for name, stored in self.entries():
            matched = hmac.compare_digest(candidate, stored)
            if matched and owner is None:
                owner = name
        if owner is None:
            return None
        return AccessToken(token=candidate, client_id=owner, scopes=[])


class AuthGate:
    """Requires a valid token under ``protected`` whenever tokens are required (or
    always, when the server may not run open); lets everything else through.

    A token that is not accepted is counted against its client address (``failures``);
    an address held back for sending too many gets 429 with ``Retry-After`` for every
    request that carries a token, whatever the token."""

    def __init__(self, app: ASGIApp, verifier: HashedTokenVerifier, protected: str, *,
                 open_without_tokens: bool, failures: FailedTokens,
                 required_scopes: Sequence[str] = (),
                 resource_metadata_url: str | None = None) -> None:
        self.app = app
        self.verifier = verifier
        self.protected = protected
        self.open_without_tokens = open_without_tokens
        self.failures = failures
        self.required = RequireAuthMiddleware(
            RevocationWatch(app, verifier), required_scopes=list(required_scopes),
            resource_metadata_url=None if resource_metadata_url is None
            else AnyHttpUrl(resource_metadata_url))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self._guarded(str(scope.get("path", ""))):
            await self.app(scope, receive, send)
            return
        if self.open_without_tokens and not self.verifier.required():
            await self.app(scope, receive, send)
            return
        if any(bytes(k).lower() == b"authorization" for k, _ in scope.get("headers", [])):
            address = peer_of(scope)
            wait = self.failures.retry_after(address)
            if wait is not None:
                await Response(
                    json.dumps({"error": "too many requests with a token that is not "
                                f"accepted from this address; try again in {wait}s"}),
                    status_code=429, media_type="application/json",
                    headers={"Retry-After": str(wait)})(scope, receive, send)
                return
            if not isinstance(getattr(scope.get("user"), "access_token", None), AccessToken):
                self.failures.failed(address)
        await self.required(scope, receive, send)

    def _guarded(self, path: str) -> bool:
        return path == self.protected or path.startswith(self.protected.rstrip("/") + "/")


class RevocationWatch:
    """Runs an authenticated request while its token stays accepted: once the token is
    revoked (or its file breaks), the request ends within ``interval`` seconds. An open
    event stream (``GET /mcp``) is closed cleanly; a request not yet answered gets 401."""

    def __init__(self, app: ASGIApp, verifier: HashedTokenVerifier,
                 interval: float = 1.0) -> None:
        self.app = app
        self.verifier = verifier
        self.interval = interval

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        access = getattr(scope.get("user"), "access_token", None)
        if not isinstance(access, AccessToken):
            await self.app(scope, receive, send)
            return
        started = finished = revoked = False
        failure: Exception | None = None

        async def tracked(message: Message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                finished = True
            await send(message)

        async with anyio.create_task_group() as tg:
            async def watch() -> None:
                nonlocal revoked
                while True:
                    await anyio.sleep(self.interval)
                    if not self.verifier.accepts(access.token):
                        revoked = True
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch)
            try:
                await self.app(scope, receive, tracked)
            except Exception as exc:  # re-raised as itself, not as a task group's group
                failure = exc
            tg.cancel_scope.cancel()
        if failure is not None:
            raise failure
        if not revoked:
            return
        log.warning("token %r is no longer accepted: its request in flight was ended",
                    access.client_id)
        if not started:
            await Response(status_code=401, headers={
                "WWW-Authenticate": 'Bearer error="invalid_token", '
                                    'error_description="the token was revoked"'})(
                scope, receive, send)
        elif not finished:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


def with_bearer_auth(app: ASGIApp, verifier: HashedTokenVerifier, protected: str, *,
                     open_without_tokens: bool, failures: FailedTokens,
                     required_scopes: Sequence[str] = (),
                     resource_metadata_url: str | None = None) -> ASGIApp:
    """``app`` behind the SDK's bearer authentication for every path under ``protected``
    (tokens that are not accepted counted in ``failures``, shared by every path; a token
    without every one of ``required_scopes`` answered 403; every 401 naming
    ``resource_metadata_url`` when there is one: OAuth, decision 0054)."""
    gate = AuthGate(app, verifier, protected, open_without_tokens=open_without_tokens,
                    failures=failures, required_scopes=required_scopes,
                    resource_metadata_url=resource_metadata_url)
    return AuthenticationMiddleware(gate, backend=BearerAuthBackend(verifier))


__all__ = ["AuthGate", "HashedTokenVerifier", "RevocationWatch", "with_bearer_auth"]
