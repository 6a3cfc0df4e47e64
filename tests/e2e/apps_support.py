"""The MCP Apps host of the e2e tests: a page built on the official host-side SDK
(``@modelcontextprotocol/ext-apps``'s AppBridge, pinned and installed by ``.ci/run`` under
``.ci/node``, bundled here with its pinned esbuild) in Debian's Chromium, whose MCP client is
the SDK's Python ``Client`` connected to a real ``kb-mcp serve`` over stdio or HTTP. The page
reaches that client through one Playwright binding (``window.kbMcp``): a desktop host's client
lives outside its renderer too, so no token ever enters the page."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.extension import advertise
from mcp.client.streamable_http import streamable_http_client
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.e2e.conftest import DEADLINE

EXT_APPS = "@modelcontextprotocol/ext-apps@2.0.4"
ESBUILD = "esbuild@0.28.2"
NODE = Path(__file__).resolve().parents[2] / ".ci" / "node" / "node_modules"
HOST_SCRIPT = Path(__file__).with_name("apps_host") / "host.js"
#: What a host that renders MCP Apps advertises (the ext-apps spec's client capability).
APPS = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})
HOST_PAGE = ("<!doctype html><html><head><meta charset='utf-8'><title>MCP Apps host</title>"
             "</head><body><h1>A conversation</h1><div id='stage'></div></body></html>")


def host_bundle(out: Path) -> str:
    """The host page's script: host.js with the pinned SDK, bundled by the pinned esbuild
    (both from ``.ci/run``'s install). Skipped without them, failed under CI=true."""
    esbuild = NODE / ".bin" / "esbuild"
    installed = NODE / "@modelcontextprotocol" / "ext-apps" / "package.json"
    if not esbuild.exists() or not installed.exists():
        message = f"{EXT_APPS} and {ESBUILD} are not installed under .ci/node (.ci/run does)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    version = json.loads(installed.read_text(encoding="utf-8"))["version"]
    assert version == EXT_APPS.rsplit("@", 1)[1], f"ext-apps {version} is not the pinned one"
    bundle = out / "host.bundle.js"
    done = subprocess.run(
        [str(esbuild), str(HOST_SCRIPT), "--bundle", "--minify", "--format=iife",
         f"--outfile={bundle}", "--log-level=warning"],
        env={**os.environ, "NODE_PATH": str(NODE)}, capture_output=True, text=True,
        timeout=DEADLINE, check=False)
    assert done.returncode == 0, done.stderr
    return bundle.read_text(encoding="utf-8")


def wire(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


@dataclass
class Bridge:
    """The host's MCP client, driven from the test's (synchronous) thread; ``calls`` keeps
    what the page asked of the server through it."""

    portal: BlockingPortal
    client: Client
    calls: list[tuple[str, str]] = field(default_factory=list)

    def tools(self) -> dict[str, types.Tool]:
        return {t.name: t for t in self.portal.call(self.client.list_tools).tools}

    def call(self, name: str, args: dict[str, Any]) -> types.CallToolResult:
        return self.portal.call(lambda: self.client.call_tool(name, args))

    def read(self, uri: str) -> types.ReadResourceResult:
        return self.portal.call(self.client.read_resource, uri)

    def serve_page(self, method: str, params_json: str) -> str:
        """``window.kbMcp``: a request of the page, sent to the server as it is."""
        params = json.loads(params_json)
        self.calls.append((method, params.get("name") or params.get("uri", "")))
        if method == "tools/call":
            return json.dumps(wire(self.call(params["name"], params.get("arguments") or {})))
        if method == "resources/read":
            return json.dumps(wire(self.read(params["uri"])))
        raise AssertionError(f"the page asked for {method}, which this host does not forward")


@contextmanager
def bridge(transport: Any, mode: str, *, apps: bool = True, token: str | None = None
           ) -> Iterator[Bridge]:
    """The SDK's client over ``transport`` (a URL, or a stdio transport), in ``mode``'s era,
    advertising the MCP Apps extension (or not), run by a portal thread of its own; with
    ``token``, the URL is asked with it as a bearer token (the client's, never the page's)."""
    with start_blocking_portal() as portal, ExitStack() as stack:
        if token is not None:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            stack.enter_context(portal.wrap_async_context_manager(http))
            transport = streamable_http_client(transport, http_client=http)
        client: AbstractContextManager[Client] = portal.wrap_async_context_manager(Client(
            transport, mode=mode, extensions=[APPS] if apps else None,
            read_timeout_seconds=DEADLINE))
        with client as connected:
            yield Bridge(portal, connected)


def show(page: Any, script: str, link: Bridge, tool: str, args: dict[str, Any]) -> Any:
    """Call ``tool`` as a conversation would and render its view in the host page; the
    view's frame."""
    declared = link.tools()[tool].meta
    assert declared is not None, f"{tool} declares no view"
    uri = declared["ui"]["resourceUri"]
    content = link.read(uri).contents[0]
    assert isinstance(content, types.TextResourceContents)
    assert content.mime_type == APP_MIME_TYPE
    result = link.call(tool, args)
    if not page.evaluate("() => typeof window.showView === 'function'"):
        page.expose_function("kbMcp", link.serve_page)
        page.set_content(HOST_PAGE)
        page.add_script_tag(content=script)
    shown = page.evaluate("() => Number(document.body.dataset.shown || '0')")
    page.evaluate("([html, args, result]) => { window.showView(html, args, result); }",
                  [content.text, args, wire(result)])
    page.locator(f"body[data-shown='{shown + 1}']").wait_for()
    return page.frame_locator("#view")
