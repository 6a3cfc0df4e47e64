"""The MCP tools: their schemas, argument checks, and the use-case calls behind them."""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as types

from kbmcp_adapters.app.write_guard import IndexRunStopped
from kbmcp_core.errors import IndexNotFound, InvalidQuery, KbError, PathRefused
from kbmcp_core.search import MAX_FILTER_ITEMS, MAX_QUERY_CHARS
from kbmcp_core.settings import Settings

if TYPE_CHECKING:
    from kbmcp_adapters.mcp_server.server import KbRuntime

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
ToolRun = Callable[["KbRuntime", JsonObject], Awaitable[JsonObject]]

MAX_PATH_CHARS = 4096
MAX_FILTER_CHARS = 512
MAX_CHUNKS_PER_DOCUMENT = 10
TOPIC_TITLES_SHOWN = 3
_DATE = r"^\d{4}-\d{2}-\d{2}$"

NO_INDEX_MESSAGE = (
    "this knowledge base has no index yet: run `kb-mcp index` with the same --kb-path or "
    "--config as this server, or call the rebuild_index tool, then try again"
)
INTERNAL_MESSAGE = "kb-mcp hit an unexpected error; the details are in the server's log (stderr)"
STOPPING_MESSAGE = ("the server is shutting down; the index update stopped between two "
                    "documents and the next run completes it")


def _obj(properties: JsonObject, *required: str, closed: bool = False) -> JsonObject:
    schema: JsonObject = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    return schema


def _typed(kind: str, description: str = "", **rules: Any) -> JsonObject:
    return {"type": kind, **rules, **({"description": description} if description else {})}


def _text(description: str = "", *, limit: int = MAX_FILTER_CHARS) -> JsonObject:
    return _typed("string", description, minLength=1, maxLength=limit)


def _filter_list(description: str) -> JsonObject:
    return _typed("array", description, items=_text(), minItems=1, maxItems=MAX_FILTER_ITEMS)


def _date(description: str) -> JsonObject:
    return _typed("string", description, format="date", pattern=_DATE)


_STR, _INT, _NUM, _BOOL = ({"type": t} for t in ("string", "integer", "number", "boolean"))
_STRINGS = _typed("array", items=_STR)
_COUNT = _typed("integer", minimum=0)
_HIT_FIELDS = ("path", "title", "heading", "heading_path", "content", "score", "tags")
_RUN_COUNTS = ("scanned", "added", "updated", "metadata_only", "renamed", "deleted",
               "unchanged", "skipped", "failed", "chunks_embedded", "chunks_reused",
               "sizes_backfilled")  # fmt: skip

#: Output schemas: one plain type per property; a field whose value is unknown is left out.
SEARCH_OUTPUT = _obj(
    {
        "results": _typed("array", items=_obj(
            {"path": _STR, "title": _STR, "heading": _STR, "heading_path": _STRINGS,
             "content": _STR, "score": _NUM, "tags": _STRINGS, "date": _STR,
             "start_line": _INT, "end_line": _INT, "page": _INT, "uri": _STR},
            *_HIT_FIELDS)),
        "low_confidence": _BOOL,
        "filter_applied": {"type": "object"},
        "notice": _STR,
    },
    "results", "low_confidence", "filter_applied",
)  # fmt: skip
DOCUMENT_OUTPUT = _obj(
    {"path": _STR, "title": _STR, "date": _STR, "topic": _STR, "tags": _STRINGS,
     "content": _STR, "truncated": _BOOL},
    "path", "title", "tags", "content", "truncated",
)  # fmt: skip
TOPICS_OUTPUT = _obj(
    {
        "topics": _typed("array", items=_obj(
            {"prefix": _STR, "uri": _STR, "documents": _COUNT, "titles": _STRINGS},
            "prefix", "uri", "documents", "titles")),
        "documents": _COUNT,
        "last_indexed": _STR,
        "watcher": _obj({"alive": _BOOL, "last_sync": _STR, "last_error": _STR}, "alive"),
    },
    "topics", "documents",
)  # fmt: skip
REBUILD_OUTPUT = _obj(
    {**dict.fromkeys(_RUN_COUNTS, _COUNT), "seconds": _typed("number", minimum=0),
     "warnings": _STRINGS,
     "skipped_reasons": _typed("object", "why paths were skipped: reason -> count",
                               additionalProperties=_COUNT)},
    *_RUN_COUNTS, "seconds", "warnings", "skipped_reasons",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input_schema: JsonObject
    output_schema: JsonObject
    annotations: types.ToolAnnotations
    run: ToolRun

    def as_tool(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            annotations=self.annotations,
        )


def _hints(title: str, *, read_only: bool = True) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=None if read_only else False,
        idempotent_hint=True,
        open_world_hint=False,
    )


def search_input(settings: Settings) -> JsonObject:
    limit_max = settings.search_max_limit
    per_doc = settings.search_chunks_per_document
    return _obj(
        {
            "query": _text("What to look for, in natural language or keywords.",
                           limit=MAX_QUERY_CHARS),
            "limit": _typed("integer", "How many passages to return.", minimum=1,
                            maximum=limit_max,
                            default=min(settings.search_default_limit, limit_max)),
            "path_globs": _filter_list("Only paths matching these globs (e.g. 'guides/**'); "
                                       "a glob starting with '!' excludes."),
            "tags_any": _filter_list("Documents with at least one of these tags."),
            "tags_all": _filter_list("Documents with all of these tags."),
            "date_from": _date("Documents dated on or after this day (YYYY-MM-DD)."),
            "date_to": _date("Documents dated on or before this day (YYYY-MM-DD)."),
            "category": _text("Documents whose frontmatter category is this."),
            "topic": _text("Documents whose frontmatter topic is this."),
            "chunks_per_document": _typed("integer",
                                          f"Most passages from one document (default {per_doc}).",
                                          minimum=1, maximum=MAX_CHUNKS_PER_DOCUMENT),
        },
        "query",
        closed=True,
    )  # fmt: skip


def tool_specs(settings: Settings) -> list[ToolSpec]:
    """The four tools, with bounds taken from the settings."""
    return [
        ToolSpec(
            "search", "Search the knowledge base",
            "Hybrid (semantic + keyword) search over the indexed documents. Returns the best "
            "passages with their path, heading, line range or page, score and, when the document "
            "can be read as a resource, its kb://doc/ uri. low_confidence=true means nothing "
            "matched clearly: say so rather than guess. Filters apply before the limit.",
            search_input(settings), SEARCH_OUTPUT, _hints("Search the knowledge base"), _search,
        ),
        ToolSpec(
            "get_document", "Read one document",
            "The full text of one document by its path relative to the knowledge base (as given "
            "by search hits), with its title, date, topic and tags. truncated=true means the "
            "text was cut at the 1 MiB read cap.",
            _obj({"path": _text("e.g. 'guides/setup.md'", limit=MAX_PATH_CHARS)}, "path",
                 closed=True),
            DOCUMENT_OUTPUT, _hints("Read one document"), _get_document,
        ),
        ToolSpec(
            "list_topics", "List topics",
            "An overview of the knowledge base: its topic groups (first folders of the paths) "
            "with their kb://topic/ resource, document count and a few titles, the number of "
            "indexed documents, and when the index was last updated.",
            _obj({}, closed=True), TOPICS_OUTPUT, _hints("List topics"), _list_topics,
        ),
        ToolSpec(
            "rebuild_index", "Update the index",
            "Bring the index up to date with the files on disk (incremental: unchanged files "
            "cost a hash). force=true re-parses and re-embeds everything. One rebuild runs at "
            "a time; a call made while one runs is refused with writer_busy.",
            _obj({"force": _typed("boolean", "Re-embed every file.", default=False)},
                 closed=True),
            REBUILD_OUTPUT, _hints("Update the index", read_only=False), _rebuild_index,
        ),
    ]  # fmt: skip


# -- the calls ---------------------------------------------------------------------------------
async def _search(rt: KbRuntime, args: JsonObject) -> JsonObject:
    query = args.pop("query")

    def run() -> JsonObject:
        kb = rt.open_index()
        rt.ensure_model(kb)
        return kb.search(query, **args).as_dict()

    return await rt.in_thread(run)


async def _get_document(rt: KbRuntime, args: JsonObject) -> JsonObject:
    def run() -> JsonObject:
        return rt.knowledge_base_for_reads().get_document(args["path"]).as_dict()

    return await rt.in_thread(run)


async def _list_topics(rt: KbRuntime, args: JsonObject) -> JsonObject:
    def run() -> JsonObject:
        kb = rt.open_index()
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


async def _rebuild_index(rt: KbRuntime, args: JsonObject) -> JsonObject:
    return await rt.rebuild(force=bool(args.get("force", False)))


# -- results -----------------------------------------------------------------------------------
def success_result(data: JsonObject) -> types.CallToolResult:
    """structuredContent plus the same JSON as text. A null field is left out (= unknown),
    which keeps every output-schema property to one plain type; a string holding a byte
    that is not UTF-8 (a file name, as ``os`` hands it over) shows that byte as ``\\xff``,
    since the reply must be valid Unicode."""
    data = without_nulls(data)
    text = json.dumps(data, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data)


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


def failure_result(exc: BaseException) -> types.CallToolResult:
    """THE place a tool failure becomes an ``isError`` result with a stable code.

    Any refusal of a path (the guard chain, a race it lost, a document not offered) is
    ``path_refused``; anything no kb-mcp error describes is ``internal_error``.
    """
    if isinstance(exc, IndexNotFound):
        code, message = exc.code, NO_INDEX_MESSAGE
    elif isinstance(exc, PathRefused):
        code, message = PathRefused.code, str(exc)
    elif isinstance(exc, IndexRunStopped):
        code, message = "server_stopping", STOPPING_MESSAGE
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


# -- argument checks ---------------------------------------------------------------------------
def check_arguments(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> JsonObject:
    """Validate arguments against a tool's (flat) input schema; a null optional is omitted.

    Raises ``InvalidQuery`` (code invalid_argument) with a message that names the argument
    and the rule, never echoing a long value back.
    """
    props: Mapping[str, Any] = schema.get("properties", {})
    unknown = sorted(set(arguments) - set(props))
    if unknown and schema.get("additionalProperties") is False:
        expected = ", ".join(props) or "no arguments"
        raise InvalidQuery(f"unknown argument {_name(unknown[0])}; expected: {expected}")
    out: JsonObject = {}
    for name, rule in props.items():
        value = arguments.get(name)
        if value is None:
            if name in schema.get("required", ()):
                raise InvalidQuery(f"missing required argument {_name(name)}")
            continue
        out[name] = _check_value(name, rule, value)
    return out


def _name(name: str) -> str:
    return repr(name[:64])


def _check_value(name: str, rule: Mapping[str, Any], value: Any) -> Any:
    kind = rule["type"]
    if kind == "string":
        return _check_string(name, rule, value)
    if kind == "integer":
        return _check_integer(name, rule, value)
    if kind == "boolean":
        if not isinstance(value, bool):
            raise InvalidQuery(f"{_name(name)} must be true or false, got {_json_type(value)}")
        return value
    if not isinstance(value, list):
        raise InvalidQuery(f"{_name(name)} must be an array of strings, got {_json_type(value)}")
    if len(value) < rule.get("minItems", 0):
        raise InvalidQuery(f"{_name(name)} must not be empty; omit it to apply no filter")
    if len(value) > rule.get("maxItems", len(value)):
        raise InvalidQuery(f"{_name(name)} has {len(value)} items; at most {rule['maxItems']}")
    return [_check_string(f"{name} item", rule["items"], v) for v in value]


def _check_string(name: str, rule: Mapping[str, Any], value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidQuery(f"{_name(name)} must be a string, got {_json_type(value)}")
    if len(value.strip()) < rule.get("minLength", 0):
        raise InvalidQuery(f"{_name(name)} must not be empty")
    if len(value) > rule.get("maxLength", len(value)):
        raise InvalidQuery(
            f"{_name(name)} is {len(value)} characters long; the limit is {rule['maxLength']}"
        )
    if "pattern" in rule and not re.match(rule["pattern"], value):
        form = "a date as YYYY-MM-DD" if rule.get("format") == "date" else rule["pattern"]
        raise InvalidQuery(f"{_name(name)} must be {form}")
    return value


def _check_integer(name: str, rule: Mapping[str, Any], value: Any) -> int:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidQuery(f"{_name(name)} must be an integer, got {_json_type(value)}")
    low, high = rule.get("minimum"), rule.get("maximum")
    if (low is not None and value < low) or (high is not None and value > high):
        raise InvalidQuery(f"{_name(name)} must be between {low} and {high}, got {value}")
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
