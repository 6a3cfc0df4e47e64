"""One refusal for every name a client may not read: a name that exists but is not served
(a dot-file, a key, a folder, a link, a second hard link, a FIFO, a format not enabled)
is answered exactly as the same name in a folder where it does not exist, through the
tool, the resource and the page; only the server's log says why."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.mcp_server import KbRuntime, build_server
from kbmcp_core.uris import doc_uri
from tests.fakes import FakeEmbedder, FakeIndexStore, FakeVectorStore
from tests.integration.test_mcp_in_memory import settings_for, write

DEADLINE = 30.0
#: Names that exist in ``hostile_folder`` and that no read may serve, with the words the
#: server's log gives as the reason.
NOT_SERVED = {
    ".env": "not a supported format",
    ".git/config": "not a supported format",
    "id_rsa": "not a supported format",
    ".ssh/id_ed25519": "not a supported format",
    "report.pdf": "pdf format is not enabled",
    "notes": "not a supported format",
    "folder.md": "is a folder",
    "link.md": "symbolic link",
    "linked/x.md": "folder on the way is a symbolic link",
    "hard.md": "more than one hard link",
    "pipe.md": "not a regular file",
}


def hostile_folder(root: Path, outside: Path) -> None:
    """A knowledge base holding one plain document and every name of ``NOT_SERVED``."""
    write(root, "a.md", "# Alpha\n\nplain notes\n")
    write(outside, "secret.md", "# Secret\n\nthe launch codes\n")
    write(root, ".env", "API_KEY=hunter2\n")
    write(root, ".git/config", "[core]\n\tbare = false\n")
    write(root, "id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\n")
    write(root, ".ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (root / "report.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    write(root, "notes/b.md", "# B\n")
    write(root, "folder.md/c.md", "# C\n")
    (root / "link.md").symlink_to(outside / "secret.md")
    (root / "linked").symlink_to(outside)
    write(outside, "x.md", "# X\n")
    write(root, "hard.md", "# Hard\n")
    os.link(root / "hard.md", outside / "hard-twin.md")
    os.mkfifo(root / "pipe.md")


def runtime_over(root: Path) -> KbRuntime:
    """A server over ``root`` (Markdown only), indexed into the fakes."""
    settings = settings_for(root)
    kb = KnowledgeBase(bootstrap(settings, store=FakeIndexStore(), vectors=FakeVectorStore(),
                                 embedder=FakeEmbedder()))
    kb.index()
    return KbRuntime(settings, open_kb=lambda s: kb)


def run(runtime: KbRuntime, body: Callable[[Client], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(DEADLINE):
            async with Client(build_server(runtime), read_timeout_seconds=DEADLINE) as client:
                await body(client)

    try:
        anyio.run(bounded)
    finally:
        runtime.close()


async def answers(client: Client) -> dict[str, Any]:
    """Every door's whole answer for each name: the tool result, the resource error."""
    out: dict[str, Any] = {}
    for name in NOT_SERVED:
        tool = await client.call_tool("get_document", {"path": name})
        assert tool.is_error, (name, tool)
        block = tool.content[0]
        assert isinstance(block, types.TextContent)
        with pytest.raises(MCPError) as refused:
            await client.read_resource(doc_uri(name))
        error = refused.value.error
        out[name] = (block.text, tool.structured_content,
                     (error.code, error.message, error.data))
    return out


def test_a_name_that_exists_but_is_not_served_is_refused_as_a_missing_one(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    hostile, empty, outside = tmp_path / "hostile", tmp_path / "empty", tmp_path / "outside"
    hostile_folder(hostile, outside)
    write(empty, "a.md", "# Alpha\n\nplain notes\n")
    seen: dict[str, dict[str, Any]] = {}

    def collect(key: str) -> Callable[[Client], Awaitable[None]]:
        async def body(client: Client) -> None:
            seen[key] = await answers(client)
        return body

    with caplog.at_level(logging.WARNING):
        run(runtime_over(hostile), collect("hostile"))
    log = caplog.text
    run(runtime_over(empty), collect("empty"))
    for name in NOT_SERVED:
        assert seen["hostile"][name] == seen["empty"][name], name
        assert '"code": "path_refused"' in seen["empty"][name][0]
        assert f"'{name}' refused: no such document" in seen["empty"][name][0]
        assert seen["empty"][name][2][0] == -32002
    for name, why in NOT_SERVED.items():  # the reason is the server log's alone
        assert any(name in line and why in line for line in log.splitlines()), (name, log)
    assert str(tmp_path) not in repr(seen) and str(tmp_path) not in log


def test_the_page_answers_a_name_that_is_not_served_as_a_missing_one(tmp_path: Path) -> None:
    """``/ui``'s document read is the resource read: the same answer for both folders."""
    from kbmcp_adapters.mcp_server.ui import UiApi

    hostile, empty = tmp_path / "hostile", tmp_path / "empty"
    hostile_folder(hostile, tmp_path / "outside")
    write(empty, "a.md", "# Alpha\n\nplain notes\n")

    def read_all(root: Path) -> dict[str, tuple[int, bytes]]:
        runtime = runtime_over(root)
        api = UiApi(runtime)
        got: dict[str, tuple[int, bytes]] = {}

        async def body() -> None:
            for name in NOT_SERVED:
                response = await api.read(_json_request({"uri": doc_uri(name)}))
                got[name] = (response.status_code, bytes(response.body))
        try:
            anyio.run(body)
        finally:
            runtime.close()
        return got

    hostile_answers, empty_answers = read_all(hostile), read_all(empty)
    assert hostile_answers == empty_answers
    assert {status for status, _ in empty_answers.values()} == {404}


def _json_request(data: dict[str, Any]) -> Any:
    import json

    from starlette.requests import Request

    body = json.dumps(data).encode()

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/ui/api/read", "headers": [
        (b"content-type", b"application/json")], "query_string": b""}
    return Request(scope, receive)
