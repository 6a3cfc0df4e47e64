"""The kb-mcp MCP server (official ``mcp`` SDK): tools, resources, prompts, stdio and HTTP.

Importing this package (or one of its modules, such as ``schemas``) loads nothing else of
it: each name below is imported on first use, so the package face ties no module to
another (no import cycle through it) and ``schemas`` never loads the HTTP server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbmcp_core.lazy import lazy_names

if TYPE_CHECKING:
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

__getattr__ = lazy_names(__name__, {
    "serve_http": "kbmcp_adapters.mcp_server.http",
    "BackgroundTask": "kbmcp_adapters.mcp_server.runtime",
    "ChangeNotifier": "kbmcp_adapters.mcp_server.runtime",
    "KbRuntime": "kbmcp_adapters.mcp_server.runtime",
    "build_server": "kbmcp_adapters.mcp_server.server",
    "serve_stdio": "kbmcp_adapters.mcp_server.server",
})
