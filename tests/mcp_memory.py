"""One MCP client talking to the real server in memory (no process, no socket), for the
integration tests of tools: the session runs under a deadline and the runtime is closed
afterwards, whatever the body did."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from kbmcp_adapters.mcp_server.host import Host
from kbmcp_adapters.mcp_server.runtime import KbRuntime
from kbmcp_adapters.mcp_server.server import build_server

#: the longest a whole in-memory session may take (s)
DEADLINE = 30.0


def serve_in_memory(runtime: KbRuntime | Host, body: Callable[[Client], Awaitable[None]], *,
                    deadline: float = DEADLINE) -> None:
    """Run ``body`` with a client connected to ``runtime``'s server (one knowledge base, or
    a ``Host`` of collections); ``runtime`` is closed
    when it returns or fails."""

    async def bounded() -> None:
        with anyio.fail_after(deadline):
            async with Client(build_server(runtime), read_timeout_seconds=deadline) as client:
                await body(client)

    try:
        anyio.run(bounded)
    finally:
        runtime.close()


def tool_payload(result: types.CallToolResult) -> dict[str, Any]:
    """The JSON object a tool result's first text block carries."""
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return dict(json.loads(block.text))


def tool_error(result: types.CallToolResult) -> dict[str, str]:
    """The ``error`` object of a failed tool result (asserting that it failed)."""
    assert result.is_error, result
    return dict(tool_payload(result)["error"])
