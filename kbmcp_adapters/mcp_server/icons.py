"""The icons the server and its tools show in a client (MCP 2025-11 ``icons``): small SVGs
carried in ``data:`` URIs, so a client never fetches anything from the network."""

from __future__ import annotations

import base64
from functools import cache

import mcp_types as types

_FRAME = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" '
          'stroke="#2f6f8f" stroke-width="2" stroke-linecap="round" stroke-linejoin="round">'
          '{}</svg>')

#: The drawings, one per kind of thing: the knowledge base itself, and each tool.
_DRAWINGS = {
    # a book
    "server": '<path d="M4 4h11a3 3 0 0 1 3 3v13H7a3 3 0 0 1-3-3z"/><path d="M4 17a3 3 0 0 1 '
              '3-3h11"/>',
    # a magnifying glass
    "search": '<circle cx="10" cy="10" r="6"/><path d="M15 15l5 5"/>',
    # a page
    "get_document": '<path d="M6 3h8l4 4v14H6z"/><path d="M14 3v4h4M9 12h6M9 16h6"/>',
    # two pages
    "get_documents": '<path d="M8 5h7l3 3v13H8z"/><path d="M5 3h7M5 3v15"/>',
    # a list
    "list_topics": '<path d="M9 6h11M9 12h11M9 18h11"/><circle cx="4" cy="6" r="1"/>'
                   '<circle cx="4" cy="12" r="1"/><circle cx="4" cy="18" r="1"/>',
    # three joined nodes
    "get_connection_graph": '<circle cx="5" cy="12" r="2"/><circle cx="19" cy="5" r="2"/>'
                            '<circle cx="19" cy="19" r="2"/><path d="M7 11l10-5M7 13l10 5"/>',
    # a circular arrow
    "rebuild_index": '<path d="M20 12a8 8 0 1 1-3-6.2"/><path d="M20 4v5h-5"/>',
    # a clock
    "index_status": '<circle cx="12" cy="12" r="9"/><path d="M12 7v5l3 2"/>',
}


@cache
def _icon(kind: str) -> types.Icon:
    svg = _FRAME.format(_DRAWINGS[kind])
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return types.Icon(src=f"data:image/svg+xml;base64,{data}", mime_type="image/svg+xml",
                      sizes=["any"])


def server_icons() -> list[types.Icon]:
    """The icon of kb-mcp itself (``serverInfo.icons``)."""
    return [_icon("server")]


def tool_icons(name: str) -> list[types.Icon]:
    """A tool's icon; a tool without a drawing of its own shows the server's."""
    return [_icon(name if name in _DRAWINGS else "server")]


__all__ = ["server_icons", "tool_icons"]
