"""The kb-mcp MCP server (official ``mcp`` SDK): tools, resources, prompts, stdio and HTTP."""

from __future__ import annotations

from kbmcp_adapters.mcp_server.http import serve_http
from kbmcp_adapters.mcp_server.runtime import BackgroundTask, ChangeNotifier, KbRuntime
from kbmcp_adapters.mcp_server.server import build_server, serve_stdio

__all__ = [
    "BackgroundTask",
    "ChangeNotifier",
    "KbRuntime",
    "build_server",
    "serve_http",
    "serve_stdio",
]
