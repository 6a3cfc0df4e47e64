"""The MCP tools: their specs, the use-case calls behind them, and their results."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from kbmcp_adapters.app.knowledge_base import IndexRunStopped
from kbmcp_adapters.mcp_server import index_run_tools as runs
from kbmcp_adapters.mcp_server import tools_read
from kbmcp_adapters.mcp_server.icons import tool_icons
from kbmcp_adapters.mcp_server.links import hit_links
from kbmcp_adapters.mcp_server.runtime import KbRuntime
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
from kbmcp_adapters.mcp_server.start_run import RETRY_HINT
from kbmcp_core.errors import (
    IndexNotFound,
    IndexNotReady,
    KbError,
    NoSuchDocument,
    PathRefused,
    StoreError,
)
from kbmcp_core.graph import GraphBounds
from kbmcp_core.search_request import needs_embedder
from kbmcp_core.settings import Settings

log = logging.getLogger(__name__)

#: A tool's work, given the server's host: its ``KbRuntime``, or the ``Host`` of a
#: server of several collections (whose tools are ``collection_tools``').
ToolRun = Callable[[Any, JsonObject], Awaitable[JsonObject]]

TOPIC_TITLES_SHOWN = 3

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

    def as_tool(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            annotations=self.annotations,
            icons=tool_icons(self.name),
        )


def _hints(title: str, *, read_only: bool = True) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=None if read_only else False,
        idempotent_hint=True,
        open_world_hint=False,
    )


def tool_specs(settings: Settings) -> list[ToolSpec]:
    """The tools, with bounds taken from the settings."""
    return [
        ToolSpec(
            "search", "Search the knowledge base",
            "Hybrid (semantic + keyword) search over the indexed documents. Returns the best "
            "passages with their path, heading, line range or page, score and, when the document "
            "can be read as a resource, its kb://doc/ uri (each such hit also comes as a "
            "resource_link to the cited lines); matches gives the character ranges of "
            "content where the query matched. low_confidence=true means nothing "
            "matched clearly: say so rather than guess. Filters apply before the limit. "
            "context='adjacent' or 'section' adds the text around each hit (context.expanded); "
            "diversity below 1 spreads the page over more documents. In the query, \"a "
            "phrase\" must appear as written and -word leaves out documents holding the word "
            "(query_applied echoes both); explain=true shows why each hit scored what it did. "
            "indexing (with notice) "
            "means the server is still building its index: tell the user, try again shortly.",
            search_input(settings), SEARCH_OUTPUT, _hints("Search the knowledge base"), _search,
            links=hit_links,
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
            DOCUMENT_INPUT, DOCUMENT_OUTPUT, _hints("Read one document"), _get_document,
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
            TOPICS_INPUT, TOPICS_OUTPUT, _hints("List topics"), _list_topics,
        ),
        ToolSpec(
            "get_connection_graph", "Connection graph",
            "How offered documents relate: nodes are documents, an edge joins two documents "
            "whose chunks are nearest neighbours (with their cosine similarity). Start from "
            "one document (path) or from the documents a search finds (query); depth, "
            "fan_out, threshold and max_nodes bound it, and truncated=true says a bound cut "
            "something (truncation says what). x and y place each node for a drawing.",
            GRAPH_INPUT, GRAPH_OUTPUT, _hints("Connection graph"), _connection_graph,
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


# -- the calls ---------------------------------------------------------------------------------
async def _search(rt: KbRuntime, args: JsonObject) -> JsonObject:
    query = args.pop("query")

    def run() -> JsonObject:
        try:
            kb = rt.open_index()
            # not before the index is ready: no model load to say "not ready" (0024)
            if needs_embedder(args.get("mode")) and kb.is_ready():  # /ui: lexical alone
                rt.ensure_model(kb)
            return kb.search(query, **args).as_dict()
        except IndexNotFound:  # IndexNotReady too: while serve's start run reads the folder
            indexing = rt.indexing()
            if indexing is None:
                raise
            return {"results": [], "low_confidence": True, "filter_applied": {},
                    "notice": f"{indexing['status']}; {RETRY_HINT}", "indexing": indexing}

    return await rt.in_thread(run)


async def _get_document(rt: KbRuntime, args: JsonObject) -> JsonObject:
    def run() -> JsonObject:
        return rt.knowledge_base_for_reads().get_document(**args).as_dict()

    return await rt.in_thread(run)


async def _list_topics(rt: KbRuntime, args: JsonObject) -> JsonObject:
    def run() -> JsonObject:
        try:
            kb = rt.open_index()
            indexing = None if kb.is_ready() else rt.indexing()
        except IndexNotFound:  # no index yet: serve's start run may be about to build it
            indexing = rt.indexing()
            if indexing is None:
                raise
            return {"topics": [], "documents": 0, "watcher": _watcher_status(rt),
                    "indexing": indexing}
        groups = kb.topic_summaries()
        titles = kb.titles([p for g in groups for p in g.first_paths])
        stats = kb.stats()
        last = (stats.last_run or {}).get("finished_at")
        return {
            "topics": [
                {
                    "prefix": g.prefix,
                    "uri": g.uri,
                    "documents": g.count,
                    "titles": [titles.get(p, p) for p in g.first_paths[:TOPIC_TITLES_SHOWN]],
                }
                for g in groups
            ],
            "documents": stats.documents,
            "last_indexed": str(last) if last is not None else None,
            "watcher": _watcher_status(rt),
            "indexing": indexing,  # what is indexed so far, while the start run reads on
        }

    return await rt.in_thread(run)


def _watcher_status(rt: KbRuntime) -> JsonObject:
    """Whether live sync runs, and when it last brought the index up to date."""
    if rt.watcher is None:
        return {"alive": False}
    status = rt.watcher.status()
    out: JsonObject = {"alive": bool(status.get("alive"))}
    for key in ("last_sync", "last_error"):
        if status.get(key):
            out[key] = str(status[key])
    return out


async def _connection_graph(rt: KbRuntime, args: JsonObject) -> JsonObject:
    bounds = {k: args[k] for k in ("depth", "fan_out", "threshold", "max_nodes") if k in args}

    def run() -> JsonObject:
        kb = rt.open_index()
        if args.get("query") is not None:
            rt.ensure_model(kb)
        graph = kb.connection_graph(path=args.get("path"), query=args.get("query"),
                                    bounds=GraphBounds(**bounds))
        return graph.as_dict()

    return await rt.in_thread(run)


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
