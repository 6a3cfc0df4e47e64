"""OAuth on the real HTTP server (decision 0054): a local authorization server (the SDK's
routes, keys made for this run) and the SDK's own OAuth client, which finds the protected
resource metadata from the 401, registers, authorizes with PKCE, gets a token for this
server's resource URI and searches with it; an expired token is refused with the metadata
URL; a token of the tokens file still works beside it. One server start."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from kbmcp_adapters.mcp_server.tokens import add_token
from tests.e2e.conftest import DEADLINE, Env, stop, text_of
from tests.e2e.http_support import MCP_HEADERS, environment, start
from tests.oauth_issuer import Issuer, running_issuer

REDIRECT = "http://127.0.0.1:1/callback"  # never opened: the test reads the redirect


class Memory:
    """The client's token storage (``TokenStorage``), in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def oauth_client(url: str) -> OAuthClientProvider:
    """The SDK's OAuth client; the "browser" follows the authorize URL to its redirect."""
    redirected: list[str] = []

    async def open_browser(authorize_url: str) -> None:
        async with httpx.AsyncClient(timeout=DEADLINE) as browser:
            answer = await browser.get(authorize_url, follow_redirects=False)
        assert answer.status_code in (302, 303, 307), answer.text
        redirected.append(answer.headers["location"])

    async def callback() -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(redirected[-1]).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0])

    metadata = OAuthClientMetadata(redirect_uris=[AnyUrl(REDIRECT)], client_name="e2e",
                                   grant_types=["authorization_code"],
                                   token_endpoint_auth_method="none")
    return OAuthClientProvider(url, metadata, Memory(), open_browser, callback)


def test_the_sdk_oauth_client_logs_in_and_searches(indexed_kb: Path, server_env: Env,
                                                    tmp_path: Path) -> None:
    tokens_file = tmp_path / "tokens.json"
    static, _ = add_token(tokens_file, "ci")
    with running_issuer() as issuer:
        config = tmp_path / "kb-mcp.toml"
        config.write_text(f'kb_path = "{indexed_kb}"\n[oauth]\nissuers = ["{issuer.url}"]\n',
                          encoding="utf-8")
        env = environment(server_env, XDG_CONFIG_HOME=str(tmp_path / "config"))
        served = start(indexed_kb, env, "--no-watch", "--config", str(config),
                       "--tokens-file", str(tokens_file))
        try:
            anyio.run(_exercise, served.url, issuer, static)
            expired = issuer.token(scopes=["kb:read"], audience=served.url,
                                   lifetime=-3600, iat=int(time.time()) - 7200)
            status, headers, _ = served.request("POST", "/mcp", {}, {
                "Authorization": f"Bearer {expired}", **MCP_HEADERS})
            assert status == 401
            metadata = f"http://127.0.0.1:{served.port}/.well-known/oauth-protected-resource/mcp"
            assert f'resource_metadata="{metadata}"' in headers["www-authenticate"]
            assert 'error="invalid_token"' in headers["www-authenticate"]
            status, _, body = served.request("GET", urlsplit(metadata).path)
            assert status == 200 and issuer.url.encode() in body
        finally:
            stop(served.proc)
            logged = served.log.drain()
    assert "refused an OAuth access token" in logged


async def _exercise(url: str, issuer: Issuer, static: str) -> None:
    http = create_mcp_http_client(auth=oauth_client(url))
    async with (http, Client(streamable_http_client(url, http_client=http), mode="legacy",
                             read_timeout_seconds=DEADLINE) as client):
        result = await client.call_tool("search", {"query": "deploy"})
        assert not result.is_error, result.content
        assert text_of(result)["results"]
    assert issuer.issued and issuer.issued[-1]["aud"] == url  # RFC 8707: for this resource
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {static}"})
    async with (http, Client(streamable_http_client(url, http_client=http), mode="legacy",
                             read_timeout_seconds=DEADLINE) as client):
        assert not (await client.call_tool("list_topics", {})).is_error
