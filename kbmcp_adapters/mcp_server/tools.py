"""The MCP tools: their specs over the host's 1..N collections (the calls behind them are
``tool_calls``', ``tools_read``'s and ``index_run_tools``'), and their results."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from kbmcp_adapters.app.knowledge_base import IndexRunStopped
from kbmcp_adapters.mcp_server import index_run_tools as runs
from kbmcp_adapters.mcp_server import tool_calls as calls
from kbmcp_adapters.mcp_server import tools_read
from kbmcp_adapters.mcp_server.host import Host
from kbmcp_adapters.mcp_server.icons import tool_icons
from kbmcp_adapters.mcp_server.links import hit_links
from kbmcp_adapters.mcp_server.schemas import (
    DOCUMENT_INPUT,
    DOCUMENT_OUTPUT,
    GRAPH_INPUT,
    GRAPH_OUTPUT,
    SEARCH_OUTPUT,
    TOPICS_INPUT,
    TOPICS_OUTPUT,
    JsonObject,
    search_input,
)
from kbmcp_core.errors import (
    IndexNotFound,
    IndexNotReady,
    KbError,
    NoSuchDocument,
    PathRefused,
    StoreError,
)
from kbmcp_core.settings import Settings

log = logging.getLogger(__name__)

#: A tool's work, given the server's ``Host`` (one collection or several).
ToolRun = Callable[[Host, JsonObject], Awaitable[JsonObject]]

NO_INDEX_MESSAGE = (
    "this knowledge base has no index yet: run `kb-mcp index` with the same --kb-path or "
    "--config as this server, or call the rebuild_index tool, then try again"
)
INTERNAL_MESSAGE = "kb-mcp hit an unexpected error; the details are in the server's log (stderr)"
STOPPING_MESSAGE = ("the server is shutting down; the index update stopped between two "
                    "documents and the next run completes it")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input_schema: JsonObject
    output_schema: JsonObject
    annotations: types.ToolAnnotations
    run: ToolRun
    #: content blocks a result carries beside its JSON text (search: ``resource_link``s)
    links: Callable[[JsonObject], list[types.ContentBlock]] | None = None

    def as_tool(self, meta: dict[str, Any] | None = None) -> types.Tool:
        """The tool as ``tools/list`` lists it; ``meta``: its ``_meta`` (the MCP App view
        it renders, for a client that negotiated the extension)."""
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            annotations=self.annotations,
            icons=tool_icons(self.name),
            _meta=meta,
        )


def _hints(title: str, *, read_only: bool = True) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=None if read_only else False,
        idempotent_hint=True,
        open_world_hint=False,
    )


def tool_specs(host: Host | Settings) -> list[ToolSpec]:
    """The tools of ``host``, with bounds taken from its settings (``Settings`` alone:
    one folder's). A host of several collections grows each tool a ``collection``
    argument (and its answer a ``collection`` field) and adds ``list_collections``; a
    host of one keeps the single-folder schemas exactly."""
    settings = host if isinstance(host, Settings) else host.settings
    specs = _folder_specs(settings)
    if isinstance(host, Settings) or not host.several:
        return specs
    return _grown(specs, host)


def _folder_specs(settings: Settings) -> list[ToolSpec]:
    return [
        ToolSpec(
            "search", "Search the knowledge base",
            "Hybrid (semantic + keyword) search over the indexed documents. Returns the best "
            "passages with their path, heading, line range or page, score and, when the document "
            "can be read as a resource, its kb://doc/ uri (each such hit also comes as a "
            "resource_link to its answer_lines, the lines of the passage that answer); "
            "matches gives the character ranges of "
            "content where the query matched. low_confidence=true means nothing "
            "matched clearly: say so rather than guess. Filters apply before the limit. "
            "context='adjacent' or 'section' adds the text around each hit (context.expanded); "
            "diversity below 1 spreads the page over more documents. In the query, \"a "
            "phrase\" must appear as written and -word leaves out documents holding the word "
            "(query_applied echoes both); explain=true shows why each hit scored what it did. "
            "indexing (with notice) "
            "means the server is still building its index: tell the user, try again shortly.",
            search_input(settings), SEARCH_OUTPUT, _hints("Search the knowledge base"),
            calls.search, links=hit_links,
        ),
        ToolSpec(
            "get_document", "Read one document",
            "The text of one document by its path relative to the knowledge base (as given "
            "by search hits), with its title, date, topic and tags: all of it, or part of it "
            "with start_line/max_lines, section or page (PDF). is_range=true says content is "
            "part of the document; next_start_line is where to go on (absent at the end), "
            "total_lines its length. A reply holds at most 1 MiB of text: a longer document "
            "is read in ranges. Documents over 400 lines (or outline=true) come with an "
            "outline of headings (PDF: pages) and their line ranges. truncated=true means a "
            "converted document's text was cut at 1 MiB: read on from next_start_line.",
            DOCUMENT_INPUT, DOCUMENT_OUTPUT, _hints("Read one document"), calls.get_document,
        ),
        ToolSpec(
            "get_documents", tools_read.TITLE, tools_read.DESCRIPTION, tools_read.INPUT,
            tools_read.OUTPUT, _hints(tools_read.TITLE), tools_read.get_documents,
        ),
        ToolSpec(
            "list_topics", "List topics",
            "An overview of the knowledge base: its topic groups (first folders of the paths) "
            "with their kb://topic/ resource, document count and a few titles, the number of "
            "indexed documents, and when the index was last updated; indexing, while the "
            "server is still building its index, says how far it got.",
            TOPICS_INPUT, TOPICS_OUTPUT, _hints("List topics"), calls.list_topics,
        ),
        ToolSpec(
            "get_connection_graph", "Connection graph",
            "How offered documents relate: nodes are documents, an edge joins two documents "
            "whose chunks are nearest neighbours (with their cosine similarity). Start from "
            "one document (path) or from the documents a search finds (query); depth, "
            "fan_out, threshold and max_nodes bound it, and truncated=true says a bound cut "
            "something (truncation says what). x and y place each node for a drawing.",
            GRAPH_INPUT, GRAPH_OUTPUT, _hints("Connection graph"), calls.connection_graph,
        ),
        ToolSpec(
            "rebuild_index", "Update the index",
            "Bring the index up to date with the files on disk (incremental: unchanged files "
            "cost a hash). force=true re-parses and re-embeds everything. The run gets a "
            "run_id; background=true returns at once, omitted waits at most "
            f"{runs.WAIT_S:g} s and then returns the run still going on (index_status reports "
            "it). With a progressToken you hear notifications/progress while it waits. One "
            "run at a time: a call made while one runs returns that run (already_running).",
            runs.REBUILD_INPUT, runs.RUN_OUTPUT, _hints("Update the index", read_only=False),
            runs.rebuild_index,
        ),
        ToolSpec(
            "index_status", "Index run status",
            "How a rebuild_index run is going or how it ended: state (running, finished, "
            "failed, stopped), phase and message (\"embedding 300 of 900 chunks\"), done of "
            "total steps, started and finished times, the run's counts once it finished, its "
            "error if it failed. Without run_id: the running run, else the last one.",
            runs.STATUS_INPUT, runs.RUN_OUTPUT, _hints("Index run status"), runs.index_status,
        ),
    ]  # fmt: skip


# -- a host of several collections ----------------------------------------------------------
_STR, _BOOL = {"type": "string"}, {"type": "boolean"}
_COUNT = {"type": "integer", "minimum": 0}


def collection_argument(host: Host, omitted: str) -> JsonObject:
    """The ``collection`` argument: one name or a list of names (the names are checked by
    ``Collections.resolve``, whose error lists the real ones)."""
    return {"type": ["string", "array"], "items": {"type": "string", "minLength": 1},
            "minItems": 1, "maxItems": len(host.names),
            "description": f"The collection to work in, or a list of them (omitted: "
                           f"{omitted}). The collections: {', '.join(host.names)} "
                           "(list_collections describes them)."}


def with_collection(schema: JsonObject, argument: JsonObject) -> JsonObject:
    """``schema`` with ``collection`` among its properties: an input argument, or (given
    ``_STR``) an output field naming the collection the answer comes from."""
    out = copy.deepcopy(schema)
    out["properties"]["collection"] = argument
    return out


def _grown(specs: list[ToolSpec], host: Host) -> list[ToolSpec]:
    """``specs`` with ``collection`` in each input and output, what it means said in each
    description, and ``list_collections``."""
    defaults = f"the default collections ({', '.join(host.collections.defaults) or 'none'})"
    pick = collection_argument(host, defaults)
    every = collection_argument(host, "every collection")
    topics_output = copy.deepcopy(TOPICS_OUTPUT)
    topics_output["properties"]["topics"]["items"]["properties"]["collection"] = _STR
    topics_output["properties"]["collections"] = {"type": "array", "items": _TOPIC_PART}
    grow: dict[str, tuple[JsonObject, JsonObject, str]] = {
        "search": (pick, SEARCH_OUTPUT, " Hits carry their collection; collection scopes "
                   f"the search (omitted: {defaults})."),
        "get_document": (pick, with_collection(DOCUMENT_OUTPUT, _STR), " collection names "
                         "the document's collection (a hit's collection); omitted, the "
                         "default collection that holds the path."),
        "get_documents": (pick, with_collection(tools_read.OUTPUT, _STR), " From one "
                          "collection (collection; omitted: the one default collection)."),
        "list_topics": (pick, topics_output, f" Per collection (omitted: {defaults})."),
        "get_connection_graph": (pick, with_collection(GRAPH_OUTPUT, _STR), " Within one "
                                 "collection (collection; omitted: the default one, or the "
                                 "one holding path)."),
        "rebuild_index": (every, runs.RUNS_OUTPUT, " Per collection; omitted: every "
                          "collection, each its own run (runs)."),
        "index_status": (every, runs.RUNS_OUTPUT, " Run ids are per collection; omitted: "
                         "every collection's (runs)."),
    }
    out = [ToolSpec(s.name, s.title, s.description + grow[s.name][2],
                    with_collection(s.input_schema, grow[s.name][0]), grow[s.name][1],
                    s.annotations, s.run, s.links) for s in specs]
    return [*out, ToolSpec(
        "list_collections", "List collections",
        "The collections this server serves: name, description, whether a search that "
        "names none covers it (default), its document count, when it was last indexed, "
        "whether it is ready to search, and its live sync. Pass a name (or several) as "
        "collection to search, read or list within them.",
        {"type": "object", "properties": {}, "additionalProperties": False},
        LIST_OUTPUT, _hints("List collections"), calls.list_collections)]


_TOPIC_PART: JsonObject = {
    "type": "object",
    "properties": {"collection": _STR, "documents": _COUNT, "indexed": _BOOL,
                   "last_indexed": _STR, "watcher": TOPICS_OUTPUT["properties"]["watcher"],
                   "indexing": TOPICS_OUTPUT["properties"]["indexing"]},
    "required": ["collection", "documents", "indexed"],
}
LIST_OUTPUT: JsonObject = {
    "type": "object",
    "properties": {"collections": {"type": "array", "items": {
        "type": "object",
        "properties": {
            "name": _STR, "description": _STR, "default": _BOOL, "documents": _COUNT,
            "ready": {"type": "boolean",
                      "description": "a run has read the whole folder: searches answer"},
            "last_indexed": _STR,
            "watcher": TOPICS_OUTPUT["properties"]["watcher"],
            "indexing": TOPICS_OUTPUT["properties"]["indexing"]},
        "required": ["name", "description", "default", "documents", "ready"]}}},
    "required": ["collections"],
}


# -- results -----------------------------------------------------------------------------------
def success_result(
    data: JsonObject, links: Callable[[JsonObject], list[types.ContentBlock]] | None = None
) -> types.CallToolResult:
    """structuredContent plus the same JSON as text. A null field is left out (= unknown),
    which keeps every output-schema property to one plain type; a string holding a byte
    that is not UTF-8 (a file name, as ``os`` hands it over) shows that byte as ``\\xff``,
    since the reply must be valid Unicode. ``links`` adds blocks after the text (the
    search hits' ``resource_link``s), drawn from the same result."""
    extra = links(data) if links is not None else []
    data = without_nulls(data)
    text = json.dumps(data, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(text=text), *extra],
                                structured_content=data)


def without_nulls(data: JsonObject) -> JsonObject:
    out: JsonObject = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out[key] = without_nulls(value)
        elif isinstance(value, list):
            out[key] = [without_nulls(v) if isinstance(v, dict) else printable(v)
                        for v in value]
        elif value is not None:
            out[key] = printable(value)
    return out


def printable(value: Any) -> Any:
    """A string as valid Unicode: lone surrogates (undecodable bytes) become ``\\xNN``."""
    if not isinstance(value, str):
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raw = value.encode("utf-8", "surrogateescape" if _escaped_bytes(value) else "surrogatepass")
        return raw.decode("utf-8", "backslashreplace")
    return value


def _escaped_bytes(value: str) -> bool:
    """Only U+DC80..U+DCFF: bytes ``os`` could not decode (``surrogateescape``)."""
    return all(not 0xD800 <= ord(c) <= 0xDFFF or 0xDC80 <= ord(c) <= 0xDCFF for c in value)


def log_not_served(exc: PathRefused) -> None:
    """The server's log line for a read answered "no such document" for another reason
    (a link, a folder, a FIFO, a format not enabled): the one place that reason is told."""
    if isinstance(exc, NoSuchDocument) and exc.why != NoSuchDocument.REASON:
        log.warning("read of %s refused as \"%s\": %s", printable(repr(exc.path)),
                    exc.reason, exc.why)


def failure_result(exc: BaseException) -> types.CallToolResult:
    """THE place a tool failure becomes an ``isError`` result with a stable code.

    Any refusal of a path (the guard chain, a race it lost, a document not offered) is
    ``path_refused``; anything no kb-mcp error describes is ``internal_error``. A name
    that is not served for a reason a client must not learn (``NoSuchDocument``) is
    answered as a missing one; the reason goes to the server's log.
    """
    if isinstance(exc, IndexNotReady):  # an index no run has read the folder into yet
        code, message = exc.code, exc.public_message
    elif isinstance(exc, IndexNotFound):
        code, message = exc.code, NO_INDEX_MESSAGE
    elif isinstance(exc, PathRefused):
        code, message = PathRefused.code, str(exc)
        log_not_served(exc)
    elif isinstance(exc, IndexRunStopped):
        code, message = "server_stopping", STOPPING_MESSAGE
    elif isinstance(exc, StoreError):  # the server's failure: one line, a trace at debug
        code, message = exc.code, exc.public_message
        log.error("tool call failed: %s", exc, exc_info=log.isEnabledFor(logging.DEBUG))
    elif isinstance(exc, KbError):
        code, message = exc.code, exc.public_message
        log.info("tool call failed: %s", exc)
    else:
        log.error("tool call failed", exc_info=exc)
        code, message = "internal_error", INTERNAL_MESSAGE
    payload = {"error": {"code": code, "message": printable(message)}}
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(payload, ensure_ascii=False))], is_error=True
    )
