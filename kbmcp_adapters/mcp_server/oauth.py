"""OAuth 2.1 resource server for ``serve --transport http``: JWT access tokens from the
configured issuers beside kb-mcp's own bearer tokens (decision 0054).

A bearer token shaped like a JWT is checked here: an asymmetric signature (``jwks.ALGORITHMS``:
never ``none``, never HS*) by a key of its issuer's JWKS (``jwks.IssuerKeys``), ``iss`` one of
``[oauth].issuers``, ``aud`` naming this server's resource URI, ``exp``/``nbf``/``iat`` within
``clock_skew_seconds``. Any other token goes to the tokens file (``HashedTokenVerifier``),
and is granted every scope, as before. The token's ``scope`` (or Entra's ``scp``) says what
it may do: ``read_scope`` for /mcp and /ui/api at all, ``rebuild_scope`` for the tools that
change the index (``rebuild_index``). The resource's metadata (RFC 9728) is served with the
SDK's route, and every 401 names it in ``WWW-Authenticate`` (``resource_metadata``).
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jwt
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from pydantic import AnyHttpUrl
from starlette.routing import Route

from kbmcp_adapters.mcp_server.auth import HashedTokenVerifier
from kbmcp_adapters.mcp_server.jwks import ALGORITHMS, IssuerKeys, fetch_json
from kbmcp_core.errors import ConfigError, InsufficientScope
from kbmcp_core.settings import Settings

log = logging.getLogger(__name__)

RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"


@dataclass(frozen=True, slots=True)
class OAuthConfig:
    """``[oauth]`` as read: the issuers trusted, and what their tokens must say."""

    issuers: tuple[str, ...]
    audience: str | None = None
    jwks_uri: str | None = None
    read_scope: str = "kb:read"
    rebuild_scope: str = "kb:rebuild"
    jwks_cache_seconds: float = 300.0
    clock_skew_seconds: float = 60.0

    @property
    def scopes(self) -> list[str]:
        return [self.read_scope, self.rebuild_scope]


def oauth_config(settings: Settings) -> OAuthConfig | None:
    """The ``[oauth]`` keys checked, or None when no issuer is configured."""
    if not settings.oauth_issuers:
        return None
    for url in (*settings.oauth_issuers, settings.oauth_audience, settings.oauth_jwks_uri):
        if url is not None:
            _check_url(url)
    for name in ("oauth_jwks_cache_seconds", "oauth_clock_skew_seconds"):
        if not 0 <= getattr(settings, name) <= 86400:
            raise ConfigError(f"oauth.{name.removeprefix('oauth_')} must be from 0 to 86400")
    return OAuthConfig(settings.oauth_issuers, settings.oauth_audience,
                       settings.oauth_jwks_uri, settings.oauth_read_scope,
                       settings.oauth_rebuild_scope, settings.oauth_jwks_cache_seconds,
                       settings.oauth_clock_skew_seconds)


def _check_url(url: str) -> None:
    """https, or plain http to this machine only (an issuer in a test or a dev set-up)."""
    parts = urlsplit(url)
    local = parts.hostname in ("127.0.0.1", "localhost", "::1")
    if not parts.hostname or not (parts.scheme == "https" or (parts.scheme == "http" and local)):
        raise ConfigError(f"[oauth] URL {url!r} must be https:// (or http:// to 127.0.0.1)")


def looks_like_jwt(token: str) -> bool:
    """Three dot-separated parts whose first is a JSON header naming an ``alg``."""
    parts = token.split(".")
    if len(parts) != 3:
        return False
    try:
        header = json.loads(base64.urlsafe_b64decode(parts[0] + "=" * (-len(parts[0]) % 4)))
    except ValueError:
        return False
    return isinstance(header, dict) and "alg" in header


class OAuthVerifier(HashedTokenVerifier):
    """kb-mcp's tokens file and the issuers' JWT access tokens, one ``TokenVerifier``."""

    def __init__(self, tokens_file: Path | None, env_hashes: tuple[str, ...],
                 config: OAuthConfig, *, get: Callable[[str], dict[str, Any]] = fetch_json,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(tokens_file, env_hashes)
        self.config = config
        #: the URI a token's ``aud`` must name: set, else as served (``serve_at``)
        self.resource = config.audience
        self.clock = clock
        self.keys = {iss: IssuerKeys(iss, config.jwks_uri, config.jwks_cache_seconds,
                                     get=get) for iss in config.issuers}

    def serve_at(self, served: str) -> str:
        """This server's resource URI: ``[oauth].audience``, else ``served``."""
        if self.resource is None:
            self.resource = served
        return self.resource

    def required(self) -> bool:
        super().required()
        return True  # an issuer is configured: every request needs a token

    def has_tokens(self) -> bool:
        return True

    def accepts(self, candidate: str) -> bool:
        """A JWT stays accepted until it expires; a token of the file while it is there."""
        if not looks_like_jwt(candidate):
            return super().accepts(candidate)
        try:
            exp = jwt.decode(candidate, options={"verify_signature": False}).get("exp")
        except jwt.InvalidTokenError:
            return False
        return isinstance(exp, int | float) and exp + self.config.clock_skew_seconds > \
            self.clock()

    async def verify_token(self, token: str) -> AccessToken | None:
        if not looks_like_jwt(token):
            found = await super().verify_token(token)
            return None if found is None else found.model_copy(
                update={"scopes": self.config.scopes})
        try:
            return await self._check(token)
        except jwt.PyJWTError as exc:
            log.warning("refused an OAuth access token: %s", exc)
            return None

    async def _check(self, token: str) -> AccessToken:
        header = jwt.get_unverified_header(token)
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in ALGORITHMS:
            raise jwt.InvalidAlgorithmError(f"algorithm {alg!r} is not accepted "
                                            f"(only {', '.join(ALGORITHMS)})")
        issuer = jwt.decode(token, options={"verify_signature": False}).get("iss")
        keys = self.keys.get(issuer) if isinstance(issuer, str) else None
        if keys is None:
            raise jwt.InvalidIssuerError(f"issuer {issuer!r} is not one of [oauth].issuers")
        key = await keys.key(str(kid)) if isinstance(kid, str) else None
        if key is None:
            raise jwt.InvalidKeyError(f"no key {kid!r} in the keys of issuer {issuer}")
        if key.algorithm_name != alg:
            raise jwt.InvalidAlgorithmError(f"algorithm {alg!r} is not that of key {kid!r}")
        resource = self.resource or ""
        claims = jwt.decode(
            token, key, algorithms=[alg], issuer=issuer,
            audience=[resource, resource.rstrip("/") + "/"],
            leeway=self.config.clock_skew_seconds,
            options={"require": ["exp", "iss", "aud"]})
        granted = claims.get("scope", claims.get("scp", ""))
        scopes = granted.split() if isinstance(granted, str) else [
            str(s) for s in granted if isinstance(s, str)] if isinstance(granted, list) else []
        owner = claims.get("client_id") or claims.get("azp") or claims.get("sub") or "oauth"
        return AccessToken(token=token, client_id=str(owner), scopes=scopes,
                           expires_at=int(claims["exp"] + self.config.clock_skew_seconds),
                           resource=resource, subject=claims.get("sub"),
                           claims={"iss": issuer})

    def metadata_url(self) -> str:
        return str(build_resource_metadata_url(AnyHttpUrl(self.resource or "")))

    def metadata_routes(self) -> list[Route]:
        """RFC 9728 metadata, at its path for the resource and at the bare path."""
        routes = create_protected_resource_routes(
            AnyHttpUrl(self.resource or ""),
            [AnyHttpUrl(iss) for iss in self.config.issuers],
            scopes_supported=self.config.scopes, resource_name="kb-mcp knowledge base")
        if routes[0].path != RESOURCE_METADATA_PATH:
            routes.append(Route(RESOURCE_METADATA_PATH, routes[0].endpoint,
                                methods=["GET", "OPTIONS"]))
        return routes


def scope_refusal(request: Any, tool: str, scope: str) -> InsufficientScope | None:
    """Why the caller of ``request`` may not call ``tool``, which needs ``scope``: None
    when it may (it holds the scope, or the server asked for no token)."""
    user = getattr(request, "scope", {}).get("user") if request is not None else None
    access = getattr(user, "access_token", None)
    if not isinstance(access, AccessToken) or scope in access.scopes:
        return None
    return InsufficientScope(tool, scope)


__all__ = ["RESOURCE_METADATA_PATH", "OAuthConfig", "OAuthVerifier", "looks_like_jwt",
           "oauth_config", "scope_refusal"]
