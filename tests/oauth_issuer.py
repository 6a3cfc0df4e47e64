"""A local OAuth 2.1 authorization server for the tests: the MCP SDK's authorization-server
routes (metadata, dynamic registration, authorize with PKCE, token) over an in-memory
provider that signs JWT access tokens (PyJWT) with an RSA key made for this run, and
serves that key as its JWKS. Run on 127.0.0.1 by uvicorn in a thread, stopped on exit.

``authorize`` grants at once (no user to ask) the scopes the client asks for, or every
scope of ``grant`` when it asks none; a token's ``aud`` is the RFC 8707 ``resource`` the
client names.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    IdentityAssertionParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata, create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

KID = "test-key-1"


def new_rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_jwk(key: rsa.RSAPrivateKey, kid: str = KID) -> dict[str, Any]:
    jwk: dict[str, Any] = jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    return {**jwk, "kid": kid, "use": "sig", "alg": "RS256"}


def sign(key: rsa.RSAPrivateKey, claims: dict[str, Any], kid: str = KID,
         alg: str = "RS256") -> str:
    return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid})


class Issuer:
    """The in-memory provider (``OAuthAuthorizationServerProvider``) and its signing key."""

    def __init__(self, url: str, grant: tuple[str, ...]) -> None:
        self.url = url
        self.grant = grant
        self.key = new_rsa_key()
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.issued: list[dict[str, Any]] = []  # the claims of every token issued

    def token(self, *, scopes: list[str], audience: str, lifetime: int = 300,
              **extra: Any) -> str:
        now = int(time.time())
        claims = {"iss": self.url, "sub": "alice", "aud": audience, "iat": now,
                  "exp": now + lifetime, "scope": " ".join(scopes), "client_id": "tests",
                  **extra}
        self.issued.append(claims)
        return sign(self.key, claims)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[str(client_info.client_id)] = client_info

    async def authorize(self, client: OAuthClientInformationFull,
                        params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or list(self.grant), expires_at=time.time() + 60,
            client_id=str(client.client_id), code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        access = self.token(scopes=authorization_code.scopes,
                            audience=authorization_code.resource or "",
                            client_id=str(client.client_id))
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=300,
                          scope=" ".join(authorization_code.scopes))

    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> RefreshToken | None:
        return None

    async def exchange_refresh_token(self, client: OAuthClientInformationFull,
                                     refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        raise NotImplementedError

    async def load_access_token(self, token: str) -> AccessToken | None:
        return None

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        return None

    async def exchange_identity_assertion(self, client: OAuthClientInformationFull,
                                          params: IdentityAssertionParams) -> OAuthToken:
        raise NotImplementedError

    def app(self) -> Starlette:
        """The SDK's routes, the metadata naming the JWKS first, and the JWKS."""
        metadata = build_metadata(AnyHttpUrl(self.url), None,
                                  ClientRegistrationOptions(enabled=True,
                                                            valid_scopes=list(self.grant)),
                                  RevocationOptions())
        metadata.scopes_supported = list(self.grant)

        async def described(request: Request) -> JSONResponse:
            return JSONResponse({**metadata.model_dump(mode="json", exclude_none=True),
                                 "jwks_uri": self.url + "/jwks"})

        async def jwks(request: Request) -> JSONResponse:
            return JSONResponse({"keys": [public_jwk(self.key)]})

        routes = create_auth_routes(
            self, AnyHttpUrl(self.url),
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=list(self.grant)))
        return Starlette(routes=[
            Route("/.well-known/oauth-authorization-server", described, methods=["GET"]),
            Route("/jwks", jwks, methods=["GET"]), *routes])


@contextlib.contextmanager
def running_issuer(grant: tuple[str, ...] = ("kb:read", "kb:rebuild")) -> Iterator[Issuer]:
    """An ``Issuer`` served on 127.0.0.1 (a free port) until the block ends."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    issuer = Issuer(f"http://127.0.0.1:{sock.getsockname()[1]}", grant)
    server = uvicorn.Server(uvicorn.Config(issuer.app(), log_config=None, access_log=False,
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
