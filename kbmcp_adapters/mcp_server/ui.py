"""The local web page at /ui: static files, and a thin JSON API over the MCP use-cases.

Every data call goes through the code the MCP surface runs: search and the graph through
their tool specs (argument check, run, result shaping, error codes), document reads
through the ``resources/read`` handler (the guard chain of ``kb://doc/``), topics through
``resources/list``. The static files carry no data; ``/ui/api/`` sits behind the same
bearer authentication as ``/mcp`` (http.py). ``/`` redirects to the page (public as the page
is; its data is not), and ``/favicon.ico`` is a fixed SVG drawing that reveals nothing. Every
response carries a strict Content-Security-Policy.
"""

from __future__ import annotations

import json
import logging
from importlib import resources as package_files
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from kbmcp_adapters.mcp_server import resources, tools, ui_health
from kbmcp_adapters.mcp_server.host import Host
from kbmcp_adapters.mcp_server.runtime import KbRuntime
from kbmcp_adapters.mcp_server.schemas import ArgumentChecker, JsonObject
from kbmcp_core.errors import IndexNotFound, InvalidQuery
from kbmcp_core.search_request import check_mode
from kbmcp_core.uris import SCHEME, doc_uri, topic_uri

log = logging.getLogger(__name__)

UI_PATH = "/ui"
UI_API_PATH = "/ui/api"
#: A request body the API reads at most (the transport's own cap is larger).
MAX_BODY = 64 * 1024
#: Arrays and objects a request body may nest (the page sends two or three levels).
MAX_NESTING = 64

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
_STATIC = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "snippet.js": "text/javascript; charset=utf-8",
    "hits.js": "text/javascript; charset=utf-8",
    "graph.js": "text/javascript; charset=utf-8",
    "health.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
#: A tool error code -> the HTTP status the page gets it with.
_STATUS = {"invalid_argument": 400, "path_refused": 404, "not_servable": 404,
           "index_not_found": 404, "writer_busy": 409, "index_read_only": 403,
           "server_busy": 503, "internal_error": 500, "store_error": 503}


def static_file(name: str) -> bytes:
    return package_files.files("kbmcp_adapters.mcp_server").joinpath(
        "ui_static", name).read_bytes()


def _respond(body: bytes, media_type: str, status: int = 200) -> Response:
    return Response(body, status_code=status, media_type=media_type, headers=SECURITY_HEADERS)


def json_response(data: Any, status: int = 200) -> Response:
    return _respond(json.dumps(data, ensure_ascii=False).encode(), "application/json", status)


def failure_response(exc: BaseException) -> Response:
    """A failure as the tools tell it (``tools.failure_result``: its code and message),
    as the page's JSON error."""
    failure = json.loads(_text(tools.failure_result(exc)))["error"]
    return error_response(failure["code"], failure["message"])


def error_response(code: str, message: str, status: int | None = None, **extra: Any) -> Response:
    return json_response({"error": {"code": code, "message": message, **extra}},
                 status or _STATUS.get(code, 422))


class UiApi:
    """The page's API over the host's collections (``Host.of``: a runtime alone is the
    host of its folder): the host's own tools and resources, so a host of several gets
    ``collection`` in the same places the MCP surface has it."""

    def __init__(self, rt: KbRuntime | Host) -> None:
        self.host = Host.of(rt)
        self.specs = {s.name: s for s in tools.tool_specs(self.host)}
        self.checkers = {n: ArgumentChecker(s.input_schema) for n, s in self.specs.items()}

    async def tool(self, name: str, args: JsonObject, extra: JsonObject | None = None
                   ) -> Response:
        """Exactly what ``tools/call`` does (server.build_server), as JSON; ``extra``
        arguments (the page's retriever choice) join the checked ones."""
        spec = self.specs[name]
        try:
            checked = self.checkers[name].check(args)
            result = tools.success_result(await spec.run(self.host,
                                                         {**checked, **(extra or {})}))
        except Exception as exc:
            return failure_response(exc)
        return json_response(result.structured_content)

    async def search(self, request: Request) -> Response:
        """The search tool, plus the retriever (``mode``) the command line also offers."""
        args = await _body(request)
        if isinstance(args, Response):
            return args
        mode = args.pop("mode", None)
        extra = {"mode": mode} if mode else {}  # "" or null: the request's default
        try:
            if mode:
                check_mode(mode)  # refused before the tool opens the index
        except InvalidQuery as exc:
            return error_response(InvalidQuery.code, str(exc))
        return await self.tool("search", args, extra)

    async def graph(self, request: Request) -> Response:
        args = await _body(request)
        if isinstance(args, Response):
            return args
        return await self.tool("get_connection_graph", args)

    async def read(self, request: Request) -> Response:
        """A ``kb://`` URI through the ``resources/read`` handler: refusals as -32002."""
        args = await _body(request)
        if isinstance(args, Response):
            return args
        uri = args.get("uri")
        if not isinstance(uri, str) or not uri.startswith(SCHEME):
            return error_response("invalid_argument", f"uri must be a {SCHEME} URI")
        try:
            result = await resources.read_resource(self.host, None,
                                                   types.ReadResourceRequestParams(uri=uri))
        except MCPError as exc:
            if exc.code == resources.RESOURCE_NOT_FOUND:
                data = exc.error.data if isinstance(exc.error.data, dict) else {}
                return error_response("not_found", "Resource not found", 404,
                              reason=str(data.get("reason", "not offered")))
            return error_response("internal_error", exc.error.message, 500)
        content = result.contents[0]
        assert isinstance(content, types.TextResourceContents)
        return json_response({"uri": uri, "mime_type": content.mime_type, "text": content.text})

    async def topics(self, request: Request) -> Response:
        """``resources/list`` as a client sees it, with each group's offered documents."""
        host = self.host
        try:
            listed = await resources.list_resources(host, None, None)
        except MCPError as exc:
            return error_response("internal_error", exc.error.message, 500)

        def members() -> dict[str, list[JsonObject]]:
            out: dict[str, list[JsonObject]] = {}
            for name in host.names:
                label = host.label(name)
                try:
                    groups = host.runtimes[name].open_index().topic_groups()
                except IndexNotFound:
                    continue
                for g in groups:
                    uri = g.uri if label is None else topic_uri(g.prefix, label)
                    out[uri] = [host.labelled(name, {"path": d.path, "title": d.title,
                                                     "uri": doc_uri(d.path, label)})
                                for d in g.documents]
            return out

        documents = await host.in_thread(members)
        return json_response({"topics": [
            {"uri": r.uri, "name": r.name, "title": r.title, "description": r.description,
             "documents": documents.get(r.uri, [])} for r in listed.resources]})

    async def health(self, request: Request) -> Response:
        """``status`` and ``doctor`` in one answer, plus the running rebuild's progress;
        on a host of several, their sums and each collection's (``ui_health``)."""
        try:
            data = await self.host.in_thread(lambda: ui_health.health(self.host))
        except Exception as exc:
            return failure_response(exc)
        return json_response({**tools.without_nulls(data), "progress": self._progress()})

    def _progress(self) -> JsonObject | None:
        for name in self.host.names:
            rt = self.host.runtimes[name]
            if rt.rebuilding_since() is not None:
                return self.host.labelled(name, {"phase": "start", **(rt.progress or {})})
        return None

    async def progress(self, request: Request) -> Response:
        return json_response({"progress": self._progress()})

    async def rebuild(self, request: Request) -> Response:
        args = await _body(request)
        if isinstance(args, Response):
            return args
        return await self.tool("rebuild_index", args)

    async def collections(self, request: Request) -> Response:
        """The collections the page offers to pick from (``list_collections``): none on a
        host of one, which has no such tool."""
        if "list_collections" not in self.specs:
            return json_response({"collections": []})
        return await self.tool("list_collections", {})


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def _body(request: Request) -> JsonObject | Response:
    raw = await request.body()
    if len(raw) > MAX_BODY:
        return error_response("invalid_argument", f"the request body is over {MAX_BODY} bytes", 413)
    if _nesting(raw) > MAX_NESTING:  # before parsing: json.loads recurses once per level
        return error_response("invalid_argument", "the request body nests arrays or objects "
                      f"deeper than {MAX_NESTING} levels")
    try:
        data = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError):
        return error_response("invalid_argument", "the request body must be a JSON object")
    if not isinstance(data, dict):
        return error_response("invalid_argument", "the request body must be a JSON object")
    return data


_OPENERS = frozenset(b"[{")
_CLOSERS = frozenset(b"]}")


def _nesting(raw: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest, counted without parsing it
    (brackets inside strings do not count)."""
    deepest = depth = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in _OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        elif byte in _CLOSERS:
            depth -= 1
    return deepest


def ui_routes(rt: KbRuntime | Host) -> list[Route]:
    """The /ui page and its static files, / (a redirect to it), /favicon.ico, and /ui/api/*
    over ``rt``'s collections."""
    api = UiApi(rt)
    files = {name: static_file(name) for name in _STATIC}

    def serve(name: str) -> Any:
        async def endpoint(request: Request) -> Response:
            return _respond(files[name], _STATIC[name])
        return endpoint

    async def home(request: Request) -> Response:
        return RedirectResponse(UI_PATH, status_code=307, headers=SECURITY_HEADERS)

    return [
        Route("/", home, methods=["GET"]),
        Route("/favicon.ico", serve("favicon.svg"), methods=["GET"]),
        Route(UI_PATH, serve("index.html"), methods=["GET"]),
        Route(f"{UI_PATH}/", serve("index.html"), methods=["GET"]),
        *(Route(f"{UI_PATH}/{name}", serve(name), methods=["GET"])
          for name in ("app.js", "snippet.js", "hits.js", "health.js", "graph.js",
                       "app.css")),
        Route(f"{UI_API_PATH}/search", api.search, methods=["POST"]),
        Route(f"{UI_API_PATH}/read", api.read, methods=["POST"]),
        Route(f"{UI_API_PATH}/graph", api.graph, methods=["POST"]),
        Route(f"{UI_API_PATH}/rebuild", api.rebuild, methods=["POST"]),
        Route(f"{UI_API_PATH}/topics", api.topics, methods=["GET"]),
        Route(f"{UI_API_PATH}/health", api.health, methods=["GET"]),
        Route(f"{UI_API_PATH}/progress", api.progress, methods=["GET"]),
        Route(f"{UI_API_PATH}/collections", api.collections, methods=["GET"]),
    ]


__all__ = ["SECURITY_HEADERS", "UI_API_PATH", "UI_PATH", "UiApi", "error_response",
           "failure_response", "json_response", "ui_routes"]
