"""Bearer-token authentication of /mcp, built from the MCP SDK's authorization pieces.

The SDK's ``BearerAuthBackend`` (under Starlette's ``AuthenticationMiddleware``) asks our
``HashedTokenVerifier`` about the ``Authorization: Bearer`` token of every request, and
the SDK's ``RequireAuthMiddleware`` answers a request to /mcp that has no valid token
with ``401`` and ``WWW-Authenticate: Bearer error="invalid_token", ...``. Other routes
(``/healthz``) stay open.

kb-mcp tokens are issued by ``kb-mcp token create``, not by an OAuth authorization
server, so the 401 carries no ``resource_metadata``: the SDK's protected-resource
metadata must name an authorization server, and there is none to name. A client is
configured with the token (an ``Authorization`` header) instead of discovering one.
"""

from __future__ import annotations

import hmac
import logging
import threading
from pathlib import Path

from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

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
    accepted or refused from the next request on, without a restart. A file that turns
    unreadable or malformed while serving counts as holding no token (the server fails
    closed) and says so once on the log.
    """

    def __init__(self, tokens_file: Path | None, env_hashes: tuple[str, ...] = ()) -> None:
        self.tokens_file = tokens_file
        self._env = [(f"env-{i + 1}", h) for i, h in enumerate(env_hashes)]
        self._lock = threading.Lock()
        self._stamp: FileStamp | None = None
        self._from_file: list[tuple[str, str]] = []
        self._broken = False
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
                if not self._broken:
                    log.error("%s; every request now needs a token from %s", exc,
                              "KB_MCP_TOKEN_HASHES" if self._env else "a repaired file")
                self._broken, self._stamp, self._from_file = True, None, []
                return []
            if found is None:
                self._stamp, self._from_file = None, []
            else:
                stamp, tokens = found
                if tokens is not None:
                    self._from_file = [(t.name, t.hash) for t in tokens]
                self._stamp = stamp
            self._broken = False
            return self._from_file

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
    """Requires a valid token under ``protected`` whenever tokens are configured (or
    always, when the server may not run open); lets everything else through."""

    def __init__(self, app: ASGIApp, verifier: HashedTokenVerifier, protected: str, *,
                 open_without_tokens: bool) -> None:
        self.app = app
        self.verifier = verifier
        self.protected = protected
        self.open_without_tokens = open_without_tokens
        self.required = RequireAuthMiddleware(app, required_scopes=[])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self._guarded(str(scope.get("path", ""))):
            await self.app(scope, receive, send)
            return
        if self.open_without_tokens and not self.verifier.has_tokens():
            await self.app(scope, receive, send)
            return
        await self.required(scope, receive, send)

    def _guarded(self, path: str) -> bool:
        return path == self.protected or path.startswith(self.protected.rstrip("/") + "/")


def with_bearer_auth(app: ASGIApp, verifier: HashedTokenVerifier, protected: str, *,
                     open_without_tokens: bool) -> ASGIApp:
    """``app`` behind the SDK's bearer authentication for every path under ``protected``."""
    gate = AuthGate(app, verifier, protected, open_without_tokens=open_without_tokens)
    return AuthenticationMiddleware(gate, backend=BearerAuthBackend(verifier))


__all__ = ["AuthGate", "HashedTokenVerifier", "with_bearer_auth"]
