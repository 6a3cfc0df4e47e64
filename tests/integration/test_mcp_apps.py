"""kb-mcp as an MCP App (decision 0055), in memory: a client that negotiated the
``io.modelcontextprotocol/ui`` extension sees the three views declared on search,
get_document and get_connection_graph and can read them; a client that did not sees
exactly what it saw before (no ``_meta.ui``, no ``ui://`` resource, the same results), in
both protocol eras the SDK speaks (``initialize`` and the 2026-07-28 ``server/discover``)."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.extension import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

from kbmcp_adapters.mcp_server import KbRuntime, build_server
from tests.integration.test_index_runs import runtime
from tests.integration.test_mcp_in_memory import (  # noqa: F401 (kb: a fixture)
    DEADLINE,
    Kb,
    kb,
    run,
    structured,
    tools_of,
)

VIEWS = {"search": "ui://kb-mcp/search.html", "get_document": "ui://kb-mcp/reader.html",
         "get_connection_graph": "ui://kb-mcp/graph.html"}
#: What a host that renders MCP Apps advertises (the ext-apps spec's client capability).
APPS = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})
#: the initialize handshake, and server/discover (which negotiates 2026-07-28)
ERAS = ["legacy", "auto"]


def session(runtime: KbRuntime, mode: str, apps: bool) -> Client:
    return Client(build_server(runtime), mode=mode, extensions=[APPS] if apps else None,
                  read_timeout_seconds=DEADLINE)


def seen(runtime: KbRuntime, mode: str, apps: bool) -> dict[str, Any]:
    """What one client sees: its era, the server's capabilities, the tools, the resources,
    a search's result and, for an Apps client, each view."""

    async def body() -> dict[str, Any]:
        with anyio.fail_after(DEADLINE):
            async with session(runtime, mode, apps) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                listed = (await client.list_resources()).resources
                searched = await client.call_tool("search", {"query": "signing keys"})
                views = {uri: (await client.read_resource(uri)).contents[0]
                         for uri in VIEWS.values()} if apps else {}
                return {"era": client.protocol_version,
                        "extensions": client.server_capabilities.extensions or {},
                        "tools": tools, "resources": listed, "search": searched,
                        "views": views}

    return anyio.run(body)


@pytest.mark.parametrize("mode", ERAS)
def test_a_client_without_the_extension_sees_todays_surface(kb: Kb, mode: str) -> None:  # noqa: F811
    try:
        plain, with_apps = seen(kb.runtime, mode, False), seen(kb.runtime, mode, True)
    finally:
        kb.runtime.close()
    assert plain["era"] == ("2026-07-28" if mode != "legacy" else "2025-11-25")
    if mode != "legacy":  # (2025-11-25 has no `extensions` capability: the SDK sieves it)
        assert EXTENSION_ID in plain["extensions"]  # the server says it can, whoever asks
    assert all(t.meta is None or not {"ui", "ui/resourceUri"} & set(t.meta)
               for t in plain["tools"].values())
    assert not [r for r in plain["resources"] if r.uri.startswith("ui://")]
    # the tool results are complete without the view, and the same for both clients
    assert plain["search"].structured_content == with_apps["search"].structured_content
    assert [b.model_dump() for b in plain["search"].content] == \
        [b.model_dump() for b in with_apps["search"].content]
    assert plain["search"].meta == with_apps["search"].meta


@pytest.mark.parametrize("mode", ERAS)
def test_a_host_that_renders_apps_gets_three_views_declared_and_readable(
        kb: Kb, mode: str) -> None:  # noqa: F811
    try:
        got = seen(kb.runtime, mode, True)
    finally:
        kb.runtime.close()
    declared = {name: t.meta["ui"]["resourceUri"] for name, t in got["tools"].items()
                if t.meta and "ui" in t.meta}
    assert declared == VIEWS
    # hosts on the extension's earlier drafts read the flat key: the same view for them
    flat = {name: t.meta["ui/resourceUri"] for name, t in got["tools"].items()
            if t.meta and "ui/resourceUri" in t.meta}
    assert flat == VIEWS
    listed = {r.uri: r for r in got["resources"] if r.uri.startswith("ui://")}
    assert set(listed) == set(VIEWS.values())
    assert {r.mime_type for r in listed.values()} == {APP_MIME_TYPE}
    for uri, content in got["views"].items():
        assert isinstance(content, types.TextResourceContents)
        assert content.mime_type == APP_MIME_TYPE
        assert content.meta is not None and content.meta["ui"]["csp"] == {}  # no domain at all
        assert_self_contained(content.text, uri)


def assert_self_contained(html: str, uri: str) -> None:
    """The view loads nothing (no src, no href to fetch), and its CSP admits exactly its own
    inlined script and style, by hash: no inline handler, no eval, no network."""
    assert not re.search(r"<(script|link|img|iframe)[^>]*\b(src|href)=", html), uri
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert policy is not None, uri
    rules = dict(part.strip().split(" ", 1) for part in policy.group(1).split(";"))
    assert rules["default-src"] == "'none'" and "connect-src" not in rules
    for tag, rule in (("script", "script-src"), ("style", "style-src")):
        blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", html, flags=re.S)
        assert len(blocks) == 1, (uri, tag)
        digest = base64.b64encode(hashlib.sha256(blocks[0].encode()).digest()).decode()
        assert rules[rule] == f"'sha256-{digest}'", (uri, rule)


# -- a read-only replica, told to the views through index_status ------------------------------
@pytest.mark.parametrize("replica", [False, True])
def test_index_status_says_whether_the_server_can_write_its_index(
        tmp_path: Path, replica: bool) -> None:
    """The views ask ``index_status`` (through the host) whether to say "read-only
    replica", as /ui's health view does: declared in the tool's output schema, beside every
    field it had."""
    writer, _ = runtime(tmp_path)
    rt = KbRuntime(writer.settings, open_kb=lambda s: writer.knowledge_base(),
                   read_only=True) if replica else writer

    async def body(client: Client) -> None:
        tool = (await tools_of(client))["index_status"]
        assert tool.output_schema is not None
        assert tool.output_schema["properties"]["read_only"]["type"] == "boolean"
        status = structured(await client.call_tool("index_status", {}), tool)
        assert status == {"state": "none", "read_only": replica,
                          "message": "no rebuild_index run since this server started"}

    run(rt, body)
