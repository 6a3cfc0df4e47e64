"""Links, multi-get, completion, instructions and icons through the real `kb-mcp serve`,
over stdio and streamable HTTP, driven by the SDK's own client."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client

from kbmcp_core.answer_lines import lines_of
from tests.e2e.conftest import DEADLINE, Env, stdio_session, stop
from tests.e2e.test_mcp_http import start_http


@contextlib.asynccontextmanager
async def connected(transport: str, kb: Path, tmp_path: Path, env: Env
                    ) -> AsyncIterator[Client]:
    if transport == "stdio":
        async with stdio_session(kb, tmp_path / "err.log", env) as client:
            yield client
        return
    server = start_http(kb, env)
    try:
        async with Client(server.url, mode="legacy", read_timeout_seconds=DEADLINE) as client:
            yield client
    finally:
        stop(server.proc)
        server.log.drain()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_reading_desk_over_each_transport(
    transport: str, indexed_kb: Path, tmp_path: Path, server_env: Env
) -> None:
    async def body() -> None:
        async with connected(transport, indexed_kb, tmp_path, server_env) as client:
            info = client.server_info
            assert info is not None and info.description and info.icons
            assert info.icons[0].src.startswith("data:image/svg+xml;base64,")
            assert "get_documents" in (client.instructions or "")
            assert client.server_capabilities.completions is not None

            found = await client.call_tool("search", {"query": "vault rotate signing keys",
                                                      "limit": 3})
            assert not found.is_error, found.content
            hits = (found.structured_content or {})["results"]
            links = [b for b in found.content if isinstance(b, types.ResourceLink)]
            assert [link.name for link in links] == [h["path"] for h in hits]
            top, link = hits[0], links[0]
            assert top["path"] == "guides/keys.md"
            first, last = top["answer_lines"]  # the lines that answer (decision 0056)
            assert top["start_line"] <= first <= last <= top["end_line"]
            assert link.uri == f"kb://doc/guides/keys.md#L{first}-{last}"
            assert link.title and link.mime_type == "text/markdown"
            assert link.size == len(lines_of(top["content"], top["end_line"], first, last)
                                    .encode("utf-8"))

            got = await client.call_tool("get_documents", {
                "paths": ["guides/keys.md", "../secret.md", "guides/backup.md"],
                "max_chars": 300})
            assert not got.is_error, got.content
            batch = got.structured_content or {}
            assert [d["path"] for d in batch["documents"]] == ["guides/keys.md"]
            assert [x["path"] for x in batch["left_out"]] == ["guides/backup.md"]
            assert [e["path"] for e in batch["errors"]] == ["../secret.md"]
            assert "launch codes" not in str(batch)

            doc = types.ResourceTemplateReference(uri="kb://doc/{path}")
            paths = (await client.complete(doc, {"name": "path", "value": "guides/"}
                                           )).completion
            assert paths.values == ["guides/backup.md", "guides/keys.md"]
            archive = (await client.complete(doc, {"name": "path", "value": "archive/"}
                                             )).completion
            assert archive.total == 40 and len(archive.values) == 40 and not archive.has_more
            topic = (await client.complete(types.PromptReference(name="summarize_topic"),
                                           {"name": "topic", "value": "n"})).completion
            assert topic.values == ["notes"]

    async def bounded() -> None:
        with anyio.fail_after(DEADLINE * 2):
            await body()

    anyio.run(bounded)
