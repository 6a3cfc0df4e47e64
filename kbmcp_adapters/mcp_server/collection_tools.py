"""The tools of a server of several collections (decision 0042): each takes ``collection``
(a name or a list; omitted = the default collections) and runs the single-folder tool in
the runtime of the collection it names; ``search`` answers over several at once
(``search_collections``), and ``list_collections`` tells what there is."""

from __future__ import annotations

import copy

from kbmcp_adapters.app.collections import search_collections
from kbmcp_adapters.mcp_server import collection_runs, tools, tools_read
from kbmcp_adapters.mcp_server.host import Host
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
from kbmcp_core.errors import IndexNotFound
from kbmcp_core.search_request import needs_embedder
from kbmcp_core.uris import doc_uri, topic_uri

_STR, _BOOL = {"type": "string"}, {"type": "boolean"}
_COUNT = {"type": "integer", "minimum": 0}


def collection_argument(rs: Host, omitted: str) -> JsonObject:
    """The ``collection`` argument: one name or a list of names (the names are checked by
    ``Collections.resolve``, whose error lists the real ones)."""
    return {"type": ["string", "array"], "items": {"type": "string", "minLength": 1},
            "minItems": 1, "maxItems": len(rs.names),
            "description": f"The collection to work in, or a list of them (omitted: "
                           f"{omitted}). The collections: {', '.join(rs.names)} "
                           "(list_collections describes them)."}


def with_collection(schema: JsonObject, argument: JsonObject,
                    output: bool = False) -> JsonObject:
    """``schema`` with ``collection`` among its properties (an input argument, or an
    output field naming the collection the answer comes from)."""
    out = copy.deepcopy(schema)
    out["properties"]["collection"] = _STR if output else argument
    return out


def tool_specs(rs: Host) -> list[tools.ToolSpec]:
    """The single-folder tools with ``collection``, and ``list_collections``."""
    defaults = f"the default collections ({', '.join(rs.collections.defaults) or 'none'})"
    pick = collection_argument(rs, defaults)
    every = collection_argument(rs, "every collection")
    topics_output = copy.deepcopy(TOPICS_OUTPUT)
    topics_output["properties"]["topics"]["items"]["properties"]["collection"] = _STR
    topics_output["properties"]["collections"] = {"type": "array", "items": _TOPIC_PART}
    documents_output = with_collection(tools_read.OUTPUT, pick, output=True)
    single = {s.name: s for s in tools.tool_specs(rs.settings)}
    specs = [
        _variant(single["search"], search_input(rs.settings), SEARCH_OUTPUT, pick, _search,
                 " Hits carry their collection; collection scopes the search (omitted: "
                 f"{defaults}).", output_with=SEARCH_OUTPUT),
        _variant(single["get_document"], DOCUMENT_INPUT, DOCUMENT_OUTPUT, pick,
                 _get_document, " collection names the document's collection (a hit's "
                 "collection); omitted, the default collection that holds the path."),
        _variant(single["get_documents"], tools_read.INPUT, tools_read.OUTPUT, pick,
                 _get_documents, " From one collection (collection; omitted: the one "
                 "default collection).", output_with=documents_output),
        _variant(single["list_topics"], TOPICS_INPUT, TOPICS_OUTPUT, pick, _list_topics,
                 f" Per collection (omitted: {defaults}).", output_with=topics_output),
        _variant(single["get_connection_graph"], GRAPH_INPUT, GRAPH_OUTPUT, pick,
                 _connection_graph, " Within one collection (collection; omitted: the "
                 "default one, or the one holding path)."),
        _variant(single["rebuild_index"], collection_runs.REBUILD_INPUT,
                 collection_runs.RUN_OUTPUT, every, collection_runs.rebuild_index,
                 " Per collection; omitted: every collection, each its own run (runs)."),
        _variant(single["index_status"], collection_runs.STATUS_INPUT,
                 collection_runs.RUN_OUTPUT, every, collection_runs.index_status,
                 " Run ids are per collection; omitted: every collection's (runs)."),
        tools.ToolSpec(
            "list_collections", "List collections",
            "The collections this server serves: name, description, whether a search "
            "that names none covers it (default), its document count, when it was last "
            "indexed, whether it is ready to search, and its live sync. Pass a name (or "
            "several) as collection to search, read or list within them.",
            {"type": "object", "properties": {}, "additionalProperties": False},
            LIST_OUTPUT, tools._hints("List collections"), _list_collections),
    ]
    return specs


def _variant(spec: tools.ToolSpec, schema: JsonObject, output: JsonObject,
             argument: JsonObject, run: tools.ToolRun, note: str, *,
             output_with: JsonObject | None = None) -> tools.ToolSpec:
    out = output_with if output_with is not None else with_collection(output, argument, True)
    return tools.ToolSpec(spec.name, spec.title, spec.description + note,
                          with_collection(schema, argument), out, spec.annotations, run,
                          spec.links)


# -- the calls -------------------------------------------------------------------------------
async def _search(rs: Host, args: JsonObject) -> JsonObject:
    query, selector = args.pop("query"), args.pop("collection", None)

    def run() -> JsonObject:
        kbs, waiting, missing = {}, {}, []
        for name in rs.resolve(selector):
            rt = rs.runtimes[name]
            try:
                kb = rt.open_index()
            except IndexNotFound:  # IndexNotReady too: its start run may be building it
                state = rt.indexing()
                if state is None:
                    missing.append(name)
                else:
                    waiting[name] = state
                continue
            if needs_embedder(args.get("mode")) and kb.is_ready():
                rt.ensure_model(kb)
            kbs[name] = kb
        if not kbs:
            if not waiting:
                raise IndexNotFound(", ".join(missing))
            first = next(iter(waiting.values()))
            return {"results": [], "low_confidence": True, "filter_applied": {},
                    "notice": f"{first['status']}; {RETRY_HINT}", "indexing": first}
        data = search_collections(kbs, query, qualify_uris=True, **args).as_dict()
        notes = [str(data["notice"])] if data.get("notice") else []
        if waiting:
            notes.append(f"still indexing, not searched yet: {', '.join(waiting)}")
        if missing:
            notes.append(f"no index yet, not searched: {', '.join(missing)}")
        data["notice"] = "; ".join(notes) or None
        return data

    return await rs.in_thread(run)


async def _get_document(rs: Host, args: JsonObject) -> JsonObject:
    selector = args.pop("collection", None)
    name = await rs.in_thread(lambda: rs.one(selector, "get_document", args["path"]))
    data = await tools._get_document(rs.runtimes[name], args)
    return {**data, "collection": name}


async def _get_documents(rs: Host, args: JsonObject) -> JsonObject:
    name = rs.one(args.pop("collection", None), "get_documents")
    data = await tools_read.get_documents(rs.runtimes[name], args)
    return {**data, "collection": name}


async def _list_topics(rs: Host, args: JsonObject) -> JsonObject:
    topics: list[JsonObject] = []
    parts: list[JsonObject] = []
    for name in rs.resolve(args.pop("collection", None)):
        try:
            data = await tools._list_topics(rs.runtimes[name], {})
        except IndexNotFound:
            parts.append({"collection": name, "documents": 0, "indexed": False})
            continue
        topics += [{**t, "collection": name, "uri": topic_uri(t["prefix"], name)}
                   for t in data["topics"]]
        parts.append({"collection": name, "documents": data["documents"], "indexed": True,
                      **{k: data[k] for k in ("last_indexed", "watcher", "indexing")
                         if data.get(k) is not None}})
    stamps = [str(p["last_indexed"]) for p in parts if p.get("last_indexed")]
    return {"topics": topics, "documents": sum(int(p["documents"]) for p in parts),
            "last_indexed": max(stamps) if stamps else None, "collections": parts}


async def _connection_graph(rs: Host, args: JsonObject) -> JsonObject:
    selector = args.pop("collection", None)
    name = await rs.in_thread(lambda: rs.one(selector, "get_connection_graph",
                                             args.get("path")))
    data = await tools._connection_graph(rs.runtimes[name], args)
    for node in data.get("nodes", []):
        if node.get("uri"):
            node["uri"] = doc_uri(node["path"], name)
    return {**data, "collection": name}


async def _list_collections(rs: Host, args: JsonObject) -> JsonObject:
    def run() -> JsonObject:
        out = []
        for name in rs.names:
            rt, spec = rs.runtimes[name], rs.collections.spec(name)
            item: JsonObject = {"name": name, "description": spec.description,
                                "default": spec.default, "documents": 0, "ready": False,
                                "watcher": tools._watcher_status(rt)}
            try:
                kb = rt.open_index()
                stats = kb.stats()
                item.update(documents=stats.documents, ready=kb.is_ready())
                finished = (stats.last_run or {}).get("finished_at")
                item["last_indexed"] = str(finished) if finished else None
            except IndexNotFound:
                pass
            item["indexing"] = rt.indexing()
            out.append(item)
        return {"collections": out}

    return await rs.in_thread(run)


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


__all__ = ["LIST_OUTPUT", "collection_argument", "tool_specs", "with_collection"]
