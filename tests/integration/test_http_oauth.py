"""OAuth access tokens at the HTTP app, in process (decision 0054): the protected resource
metadata, the 401 that names it, the tokens refused (expired, another audience, another
issuer, ``alg: none``, an unknown key, HS256 signed with the public key), the scopes (a
read token may not rebuild), the keys fetched once and not again for random ``kid``s, and
kb-mcp's own bearer tokens still accepted beside them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from cryptography.hazmat.primitives import serialization

from kbmcp_adapters.mcp_server.oauth import OAuthConfig, OAuthVerifier, looks_like_jwt
from kbmcp_adapters.mcp_server.tokens import token_hash
from tests.e2e.http_support import reply_of
from tests.http_app_support import (
    MCP_HEADERS,
    PORT,
    client,
    open_session,
    running,
    runtime_for,
    session_headers,
)
from tests.oauth_issuer import KID, new_rsa_key, public_jwk, sign

ISSUER = "https://id.example.test/realms/team"
RESOURCE = f"http://127.0.0.1:{PORT}/mcp"
METADATA_URL = f"http://127.0.0.1:{PORT}/.well-known/oauth-protected-resource/mcp"
STATIC = "kbm_static-token-0123456789"
KEY = new_rsa_key()


class Idp:
    """The issuer's metadata and JWKS as ``IssuerKeys`` fetches them (counted)."""

    def __init__(self) -> None:
        self.keys = [public_jwk(KEY)]
        self.asked: list[str] = []

    def __call__(self, url: str) -> dict[str, Any]:
        self.asked.append(url)
        if url == ISSUER + "/.well-known/oauth-authorization-server":
            return {"issuer": ISSUER, "jwks_uri": ISSUER + "/keys"}
        assert url == ISSUER + "/keys", url
        return {"keys": self.keys}


def claims(**changed: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": ISSUER, "sub": "alice", "aud": RESOURCE, "iat": now, "exp": now + 300,
            "scope": "kb:read kb:rebuild", **changed}


def unsigned(header: dict[str, Any], body: dict[str, Any], secret: bytes | None = None) -> str:
    """A token made by hand: ``alg: none`` (no signature) or HMAC with ``secret``."""
    def part(value: dict[str, Any]) -> str:
        raw = json.dumps(value).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    signing_input = f"{part(header)}.{part(body)}"
    if secret is None:
        return signing_input + "."
    mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def verifier(idp: Idp) -> OAuthVerifier:
    return OAuthVerifier(None, (token_hash(STATIC),), OAuthConfig((ISSUER,)), get=idp)


async def call(app: Any, token: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    async with client(app, token=token) as http:
        session = await open_session(http)
        answer = await http.post("/mcp", headers=session_headers(session), json={
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": tool, "arguments": args}})
        assert answer.status_code == 200, answer.text
        return reply_of(answer.content)["result"]


def test_metadata_names_resource_issuer_and_scopes(tmp_path: Path) -> None:
    async def body() -> None:
        async with (running(runtime_for(tmp_path / "kb"), verifier=verifier(Idp())) as app,
                    client(app) as http):
            for path in ("/.well-known/oauth-protected-resource/mcp",
                         "/.well-known/oauth-protected-resource"):
                meta = (await http.get(path)).json()
                assert meta["resource"] == RESOURCE
                assert meta["authorization_servers"] == [ISSUER]
                assert meta["scopes_supported"] == ["kb:read", "kb:rebuild"]
                assert meta["bearer_methods_supported"] == ["header"]
            refused = await http.post("/mcp", json={}, headers=MCP_HEADERS)
            assert refused.status_code == 401
            assert f'resource_metadata="{METADATA_URL}"' in \
                refused.headers["www-authenticate"]

    anyio.run(body)


PUBLIC_PEM = KEY.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
REFUSED = {
    "expired": sign(KEY, claims(exp=int(time.time()) - 3600, iat=int(time.time()) - 7200)),
    "wrong audience": sign(KEY, claims(aud="https://other.example.test/mcp")),
    "wrong issuer": sign(KEY, claims(iss="https://evil.example.test")),
    "alg none": unsigned({"alg": "none", "kid": KID}, claims()),
    "unknown key": sign(KEY, claims(), kid="someone-else"),
    "hs256 with the public key": unsigned({"alg": "HS256", "kid": KID, "typ": "JWT"},
                                          claims(), PUBLIC_PEM),
    "not yet valid": sign(KEY, claims(nbf=int(time.time()) + 3600)),
}


@pytest.mark.parametrize("why", sorted(REFUSED))
def test_bad_tokens_are_refused_with_the_metadata_url(tmp_path: Path, why: str) -> None:
    async def body() -> None:
        async with (running(runtime_for(tmp_path / "kb"), verifier=verifier(Idp())) as app,
                    client(app, token=REFUSED[why]) as http):
            answer = await http.post("/mcp", json={}, headers=MCP_HEADERS)
        assert answer.status_code == 401, why
        challenge = answer.headers["www-authenticate"]
        assert challenge.startswith("Bearer ") and 'error="invalid_token"' in challenge
        assert f'resource_metadata="{METADATA_URL}"' in challenge

    anyio.run(body)


def test_scopes_say_what_a_token_may_do_and_static_tokens_still_work(tmp_path: Path) -> None:
    async def body() -> None:
        async with running(runtime_for(tmp_path / "kb"), verifier=verifier(Idp())) as app:
            reader = sign(KEY, claims(scope="kb:read"))
            refused = await call(app, reader, "rebuild_index", {})
            assert refused["isError"] is True
            error = json.loads(refused["content"][0]["text"])["error"]
            assert error["code"] == "insufficient_scope"
            assert "kb:rebuild" in error["message"]
            listed = await call(app, reader, "list_topics", {})
            assert "insufficient_scope" not in json.dumps(listed)
            async with client(app, token=sign(KEY, claims(scope="profile"))) as http:
                answer = await http.post("/mcp", json={}, headers=MCP_HEADERS)
                assert answer.status_code == 403
                assert "kb:read" in answer.text
            async with client(app, token=STATIC) as http:
                assert (await open_session(http))

    anyio.run(body)


def test_keys_are_fetched_once_and_random_kids_do_not_hammer_the_issuer(
        tmp_path: Path) -> None:
    idp = Idp()
    checker = verifier(idp)
    checker.serve_at(RESOURCE)

    async def body() -> None:
        assert await checker.verify_token(sign(KEY, claims())) is not None
        assert await checker.verify_token(sign(KEY, claims())) is not None
        for i in range(20):
            assert await checker.verify_token(sign(KEY, claims(), kid=f"random-{i}")) is None
        assert checker.keys[ISSUER].fetches == 1

    anyio.run(body)
    assert idp.asked.count(ISSUER + "/keys") == 1


def test_a_rotated_key_is_fetched_on_its_first_token(tmp_path: Path) -> None:
    idp = Idp()
    checker = verifier(idp)
    checker.serve_at(RESOURCE)
    now = [1000.0]
    checker.keys[ISSUER].clock = lambda: now[0]
    rotated = new_rsa_key()

    async def body() -> None:
        assert await checker.verify_token(sign(KEY, claims())) is not None
        idp.keys = [public_jwk(rotated, "key-2")]
        now[0] += 31  # past the re-fetch gap, within the cache's life
        assert await checker.verify_token(sign(rotated, claims(), kid="key-2")) is not None

    anyio.run(body)
    assert checker.keys[ISSUER].fetches == 2


def test_only_jwt_shaped_tokens_go_to_the_issuers() -> None:
    assert looks_like_jwt(sign(KEY, claims()))
    assert looks_like_jwt(REFUSED["alg none"])
    assert not looks_like_jwt(STATIC)
    assert not looks_like_jwt("a.b.c")
