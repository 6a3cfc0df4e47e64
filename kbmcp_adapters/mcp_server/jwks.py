"""An issuer's signing keys (JWKS): discovered, fetched with one deadline and a byte cap,
cached for their TTL, re-fetched once for an unknown ``kid`` at most every few seconds.

The keys' address is the configured ``jwks_uri``, else the ``jwks_uri`` of the issuer's
metadata (RFC 8414 ``/.well-known/oauth-authorization-server``, then OpenID Connect's
``/.well-known/openid-configuration``). Every fetch is one ``GET`` through
``app.json_fetch`` (no redirect, no proxy, one deadline, ``MAX_BYTES`` at most), run in a
worker thread. A token naming a key that is not cached makes one re-fetch (the issuer
rotated its keys), but at most one per ``REFETCH_GAP_S`` per issuer: a client sending
random ``kid``s cannot make this server hammer the identity provider.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
from jwt import PyJWK, PyJWKSet
from jwt.exceptions import PyJWKError, PyJWKSetError

from kbmcp_adapters.app.json_fetch import FetchFailed
from kbmcp_adapters.app.json_fetch import fetch_json as fetch_bounded

log = logging.getLogger(__name__)

#: The most bytes of a metadata document or key set read.
MAX_BYTES = 256 * 1024
#: The whole of one fetch (connect, send, every read), seconds.
FETCH_DEADLINE_S = 5.0
#: The least time between two fetches for one issuer, whatever tokens arrive.
REFETCH_GAP_S = 30.0
#: The signature algorithms accepted: asymmetric only (never ``none``, never HS*).
ALGORITHMS = ("RS256", "ES256", "EdDSA")
_WELL_KNOWN = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")


class KeysUnavailable(Exception):
    """The issuer's keys could not be fetched or read (one line: why)."""


def fetch_json(url: str) -> dict[str, Any]:
    """``GET url`` as a JSON object: 200, at most ``MAX_BYTES``, within the deadline."""
    try:
        return fetch_bounded(url, deadline_s=FETCH_DEADLINE_S, cap=MAX_BYTES)
    except FetchFailed as exc:
        raise KeysUnavailable(str(exc)) from None


def discover_jwks_uri(issuer: str, get: Callable[[str], dict[str, Any]] = fetch_json) -> str:
    """The ``jwks_uri`` the issuer's metadata names (RFC 8414, then OpenID Connect); the
    metadata must name this very issuer."""
    problems = []
    for suffix in _WELL_KNOWN:
        url = issuer.rstrip("/") + suffix
        try:
            meta = get(url)
        except KeysUnavailable as exc:
            problems.append(str(exc))
            continue
        if str(meta.get("issuer", "")).rstrip("/") != issuer.rstrip("/"):
            problems.append(f"{url} names issuer {meta.get('issuer')!r}, not {issuer!r}")
            continue
        uri = meta.get("jwks_uri")
        if isinstance(uri, str) and uri:
            return uri
        problems.append(f"{url} names no jwks_uri")
    raise KeysUnavailable("; ".join(problems))


@dataclass
class IssuerKeys:
    """One issuer's keys, by ``kid``, fetched when needed."""

    issuer: str
    jwks_uri: str | None = None
    cache_seconds: float = 300.0
    clock: Callable[[], float] = time.monotonic
    get: Callable[[str], dict[str, Any]] = fetch_json
    _keys: dict[str, PyJWK] = field(default_factory=dict)
    _fetched_at: float | None = None
    _lock: anyio.Lock = field(default_factory=anyio.Lock)
    #: fetches made (the rotation and flood tests read it)
    fetches: int = 0

    async def key(self, kid: str) -> PyJWK | None:
        """The key named ``kid``: from the cache while it is fresh; else after one fetch,
        unless the last fetch was less than ``REFETCH_GAP_S`` ago."""
        async with self._lock:
            now = self.clock()
            fresh = self._fetched_at is not None and now - self._fetched_at < self.cache_seconds
            if fresh and kid in self._keys:
                return self._keys[kid]
            recent = self._fetched_at is not None and now - self._fetched_at < REFETCH_GAP_S
            if not recent:
                await self._refresh(now)
            return self._keys.get(kid)

    async def _refresh(self, now: float) -> None:
        self._fetched_at = now  # a failed fetch waits out the gap too
        self.fetches += 1
        try:
            self._keys = await anyio.to_thread.run_sync(self._fetch)
        except KeysUnavailable as exc:
            log.warning("keys of issuer %s: %s", self.issuer, exc)

    def _fetch(self) -> dict[str, PyJWK]:
        uri = self.jwks_uri or discover_jwks_uri(self.issuer, self.get)
        data = self.get(uri)
        try:
            keys = PyJWKSet.from_dict(data).keys
        except (PyJWKError, PyJWKSetError) as exc:
            raise KeysUnavailable(f"{uri} holds no usable key: {exc}") from None
        found = {str(k.key_id): k for k in keys if k.key_id and k.public_key_use in
                 (None, "sig") and k.algorithm_name in ALGORITHMS}
        log.info("keys of issuer %s: %d signing key(s) from %s", self.issuer, len(found), uri)
        return found


__all__ = ["ALGORITHMS", "FETCH_DEADLINE_S", "MAX_BYTES", "REFETCH_GAP_S", "IssuerKeys",
           "KeysUnavailable", "discover_jwks_uri", "fetch_json"]
