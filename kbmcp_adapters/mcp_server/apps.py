"""kb-mcp as an MCP App (the ``io.modelcontextprotocol/ui`` extension, decision 0055): three
``ui://`` views built from /ui's own static files, declared on ``search``, ``get_document``
and ``get_connection_graph`` only for a client that negotiated the extension.

The declarations and the resources are the SDK's (``mcp.server.apps.Apps``): this module
binds kb-mcp's tools to them and assembles each view's HTML. A view is one self-contained
document (hosts render it in a sandboxed iframe with no server of its own): /ui's stylesheet
and scripts inlined, under a Content-Security-Policy that admits exactly those inlined
blocks (by their SHA-256) and no network at all. Everything a view shows comes through the
host: the tool result it was opened with, and ``tools/call`` of kb-mcp's own tools.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import cache
from typing import Any

import mcp_types as types
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID, Apps, ResourceCsp, client_supports_apps
from mcp.server.mcpserver.resources import TextResource

from kbmcp_adapters.mcp_server.ui import static_file

#: The scheme of a view's URI.
UI_SCHEME = "ui://"


@dataclass(frozen=True, slots=True)
class View:
    """One ``ui://`` view: the tool it renders, its URI and how a host lists it."""

    tool: str
    name: str
    title: str
    description: str

    @property
    def uri(self) -> str:
        return f"{UI_SCHEME}kb-mcp/{self.name}.html"


VIEWS = (
    View("search", "search", "kb-mcp search results",
         "The hits of a search: cited lines highlighted, collection and path, the "
         "low-confidence notice; a click opens the document at the cited lines."),
    View("get_document", "reader", "kb-mcp reader",
         "A document at the lines asked for (a PDF at its page), with the next and previous "
         "ranges and its outline."),
    View("get_connection_graph", "graph", "kb-mcp connection graph",
         "The documents related to a query or a document, drawn as a graph; a click opens "
         "one."),
)
#: The scripts a view runs, in order: /ui's own, then the view's glue (view.js).
_SCRIPTS = ("snippet.js", "hits.js", "graph.js", "view.js")
#: A view fetches nothing (no connect-src): every byte it shows came through the host.
_CSP = ("default-src 'none'; script-src {script}; style-src {style}; img-src data:; "
        "base-uri 'none'; form-action 'none'")


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def view_html(view: View) -> str:
    """The view's whole document: /ui's stylesheet and scripts inlined, each admitted by
    the page's Content-Security-Policy through its hash and nothing else."""
    style = static_file("app.css").decode()
    script = "\n".join(static_file(name).decode() for name in _SCRIPTS)
    assert "</script" not in script.lower(), "a view's script may not close its own element"
    csp = _CSP.format(script=_digest(script), style=_digest(style))
    page = static_file("view.html").decode()
    for mark, value in (("{{csp}}", csp), ("{{title}}", view.title), ("{{view}}", view.name),
                        ("{{style}}", style), ("{{script}}", script)):
        page = page.replace(mark, value, 1)
    return page


class KbApps:
    """The views and their declarations, through the SDK's ``Apps`` extension."""

    def __init__(self) -> None:
        self.apps = Apps()
        for view in VIEWS:
            self.apps.add_html_resource(
                view.uri, view_html(view), name=view.name, title=view.title,
                description=view.description, csp=ResourceCsp(), prefers_border=True)
            self.apps.tool(resource_uri=view.uri, name=view.tool)(_declared)
        #: tool name -> the ``_meta`` that binds it to its view: the SDK's nested
        #: ``_meta.ui.resourceUri`` and the flat ``_meta["ui/resourceUri"]`` that hosts built
        #: on the extension's earlier drafts read (both name the same view)
        self.tool_meta = {b.kwargs["name"]: _with_flat_key(b.meta or {})
                          for b in self.apps.tools()}
        self.resources: dict[str, TextResource] = {}
        for binding in self.apps.resources():
            assert isinstance(binding.resource, TextResource)
            self.resources[binding.resource.uri] = binding.resource

    @property
    def identifier(self) -> str:
        return EXTENSION_ID

    def settings(self) -> dict[str, Any]:
        return self.apps.settings()

    @staticmethod
    def wanted(ctx: Any) -> bool:
        """Whether the client negotiated the extension (the SDK's own test of it): only
        then do the tools carry ``_meta.ui`` and the views show in ``resources/list``."""
        return ctx is not None and client_supports_apps(ctx)

    def meta_for(self, tool: str, ctx: Any) -> dict[str, Any] | None:
        return self.tool_meta.get(tool) if self.wanted(ctx) else None

    def listed(self) -> list[types.Resource]:
        return [types.Resource(uri=r.uri, name=r.name or r.uri, title=r.title,
                               description=r.description, mime_type=APP_MIME_TYPE,
                               _meta=r.meta) for r in self.resources.values()]

    def read(self, uri: str) -> types.ReadResourceResult | None:
        """The view at ``uri`` (None: not a view's URI)."""
        resource = self.resources.get(uri)
        if resource is None:
            return None
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=uri, mime_type=APP_MIME_TYPE, text=resource.text, _meta=resource.meta)])


#: The key of the view's URI in ``_meta`` for hosts on the extension's earlier drafts.
FLAT_KEY = "ui/resourceUri"


def _with_flat_key(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with the flat ``ui/resourceUri`` beside the nested ``ui.resourceUri``."""
    return {**meta, FLAT_KEY: meta["ui"]["resourceUri"]}


def _declared(*_args: Any) -> None:
    """Stands for a kb-mcp tool in the SDK's binding: the tool itself is kb-mcp's own."""


@cache
def kb_apps() -> KbApps:
    """The views, assembled once per process (they depend on the packaged files only)."""
    return KbApps()


__all__ = ["FLAT_KEY", "UI_SCHEME", "VIEWS", "KbApps", "View", "kb_apps", "view_html"]
