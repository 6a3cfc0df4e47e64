"""The HTTP app `kb-mcp serve --transport http` builds (``build_http_app``), run in this
process: its lifespan (the SDK's session manager) driven by hand, requests sent through
httpx's ASGI transport from any client address. No socket, no subprocess."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
from starlette.types import ASGIApp, Message

from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.mcp_server import KbRuntime
from kbmcp_adapters.mcp_server.host import Host
from kbmcp_adapters.mcp_server.http import build_http_app

#: Every wait in these tests ends by then.
DEADLINE = 30.0
PORT = 8765
PROTOCOL = "2025-11-25"
MCP_HEADERS = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "Host": f"127.0.0.1:{PORT}"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                         "clientInfo": {"name": "in-process-http", "version": "1"}}}


def runtime_for(root: Path) -> KbRuntime:
    """A runtime over ``root`` (a folder with no index: nothing here needs one)."""
    root.mkdir(parents=True, exist_ok=True)
    return KbRuntime(build_settings(None, cwd=root, kb_path=root))


@contextlib.asynccontextmanager
async def lifespan(app: ASGIApp) -> AsyncIterator[None]:
    """``app`` started (``lifespan.startup``) until the block ends, then shut down."""
    to_app, app_inbox = anyio.create_memory_object_stream[Message](2)
    app_outbox, from_app = anyio.create_memory_object_stream[Message](2)

    async def run() -> None:
        await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
                  app_inbox.receive, app_outbox.send)

    async with to_app, app_inbox, app_outbox, from_app, anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(DEADLINE):
            await to_app.send({"type": "lifespan.startup"})
            started = await from_app.receive()
        assert started["type"] == "lifespan.startup.complete", started
        try:
            yield
        finally:
            with anyio.fail_after(DEADLINE), anyio.CancelScope(shield=True):
                await to_app.send({"type": "lifespan.shutdown"})
                await from_app.receive()


@contextlib.asynccontextmanager
async def running(rt: KbRuntime | Host, **options: Any) -> AsyncIterator[ASGIApp]:
    """``build_http_app(rt, host="127.0.0.1", port=PORT, **options)``, started."""
    app = build_http_app(rt, host="127.0.0.1", port=PORT, **options)
    async with lifespan(app):
        yield app


def client(app: ASGIApp, address: str = "127.0.0.1", token: str | None = None
           ) -> httpx.AsyncClient:
    """A client of ``app`` connecting from ``address`` (with ``token`` as its bearer)."""
    headers = {"Host": f"127.0.0.1:{PORT}"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.AsyncClient(transport=httpx.ASGITransport(
        app=app, client=(address, 40000), raise_app_exceptions=False),
                             base_url=f"http://127.0.0.1:{PORT}", headers=headers,
                             timeout=DEADLINE)


async def open_session(http: httpx.AsyncClient) -> str:
    """``initialize`` and ``notifications/initialized``: the new session's id."""
    answer = await http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
    assert answer.status_code == 200, (answer.status_code, answer.text)
    session = answer.headers["mcp-session-id"]
    done = await http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                           headers=session_headers(session))
    assert done.status_code == 202, (done.status_code, done.text)
    return session


def session_headers(session: str) -> dict[str, str]:
    return {**MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": PROTOCOL}


async def ping(http: httpx.AsyncClient, session: str) -> int:
    """A ``ping`` in ``session``: the HTTP status it gets (200 while the session lives)."""
    answer = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                             headers=session_headers(session))
    return answer.status_code


def error_of(answer: httpx.Response) -> Any:
    return json.loads(answer.text).get("error")
