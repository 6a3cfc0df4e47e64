"""The reading tools' calls over the host's collections (decisions 0042, 0051): ``search``,
``get_document``, ``list_topics``, ``get_connection_graph`` and ``list_collections``.

One path for 1..N collections: each call resolves the collections it works in
(``Host.resolve``/``Host.one``: on a host of one, its one, as no ``collection`` argument
is taken), runs the single-folder use-case in that collection's runtime, and labels the
answer with its collection only when the host has several (``Host.labelled``).
"""

from __future__ import annotations

from kbmcp_adapters.app.heap import settle_once
from kbmcp_adapters.app.search_collections import search_collections
from kbmcp_adapters.mcp_server.host import Host
from kbmcp_adapters.mcp_server.runtime import KbRuntime
from kbmcp_adapters.mcp_server.schemas import JsonObject
from kbmcp_adapters.mcp_server.start_run import RETRY_HINT
from kbmcp_core.errors import IndexNotFound
from kbmcp_core.graph import GraphBounds
from kbmcp_core.search_request import needs_embedder
from kbmcp_core.uris import doc_uri, topic_uri

TOPIC_TITLES_SHOWN = 3


async def search(host: Host, args: JsonObject) -> JsonObject:
    """Over the collections named (omitted: the defaults) as one; a collection still
    being indexed by serve's start run, or with no index, is named in the notice (all of
    them so: the start run's progress, or the index's own error)."""
    query, selector = args.pop("query"), args.pop("collection", None)

    def run() -> JsonObject:
        kbs, waiting, missing, loaded = {}, {}, {}, False
        for name in host.resolve(selector):
            rt = host.runtimes[name]
            try:
                kb = rt.open_index()
            except IndexNotFound as exc:  # IndexNotReady too: serve's start run may build it
                state = rt.indexing()
                if state is None:
                    missing[name] = exc
                else:
                    waiting[name] = state
                continue
            # not before the index is ready: no model load to say "not ready" (0024)
            if needs_embedder(args.get("mode")) and kb.is_ready():  # /ui: lexical alone
                rt.ensure_model(kb)
                loaded = True
            kbs[name] = kb
        if not kbs:
            if not waiting:
                raise (next(iter(missing.values())) if len(missing) == 1
                       else IndexNotFound(", ".join(missing)))
            return _still_indexing(waiting)
        try:
            if host.several:  # hits name their collection, URIs carry it
                data = search_collections(kbs, query, qualify_uris=True, **args).as_dict()
            else:
                data = next(iter(kbs.values())).search(query, **args).as_dict()
        except IndexNotFound:  # IndexNotReady: serve's start run has not read every file yet
            states = {n: s for n in kbs if (s := host.runtimes[n].indexing()) is not None}
            if not states:
                raise
            return _still_indexing(states)
        notes = [str(data["notice"])] if data.get("notice") else []
        if waiting:
            notes.append(f"still indexing, not searched yet: {', '.join(waiting)}")
        if missing:
            notes.append(f"no index yet, not searched: {', '.join(missing)}")
        data["notice"] = "; ".join(notes) or None
        if loaded:  # what the process keeps for its life is loaded now
            settle_once()
        return data

    return await host.in_thread(run, search=True)


def _still_indexing(waiting: dict[str, JsonObject]) -> JsonObject:
    """A search's answer while serve's start run reads the folder: no hits, its progress."""
    first = next(iter(waiting.values()))
    return {"results": [], "low_confidence": True, "filter_applied": {},
            "notice": f"{first['status']}; {RETRY_HINT}", "indexing": first}


async def get_document(host: Host, args: JsonObject) -> JsonObject:
    selector = args.pop("collection", None)
    name = await host.in_thread(lambda: host.one(selector, "get_document", args["path"]))
    rt = host.runtimes[name]

    def run() -> JsonObject:
        return rt.knowledge_base_for_reads().get_document(**args).as_dict()

    return host.labelled(name, await rt.in_thread(run))


async def list_topics(host: Host, args: JsonObject) -> JsonObject:
    """One collection's overview as it is; several: their topics (each naming its
    collection) and sums, with each collection's part under ``collections``."""
    names = host.resolve(args.pop("collection", None))
    if not host.several:
        return await _topics_of(host.runtimes[names[0]], None)
    topics: list[JsonObject] = []
    parts: list[JsonObject] = []
    for name in names:
        try:
            data = await _topics_of(host.runtimes[name], name)
        except IndexNotFound:
            parts.append({"collection": name, "documents": 0, "indexed": False})
            continue
        topics += [{**t, "collection": name} for t in data["topics"]]
        parts.append({"collection": name, "documents": data["documents"], "indexed": True,
                      **{k: data[k] for k in ("last_indexed", "watcher", "indexing")
                         if data.get(k) is not None}})
    stamps = [str(p["last_indexed"]) for p in parts if p.get("last_indexed")]
    return {"topics": topics, "documents": sum(int(p["documents"]) for p in parts),
            "last_indexed": max(stamps) if stamps else None, "collections": parts}


async def _topics_of(rt: KbRuntime, label: str | None) -> JsonObject:
    """One collection's topic groups (their URIs naming ``label``), counts and sync."""
    def run() -> JsonObject:
        try:
            kb = rt.open_index()
            indexing = None if kb.is_ready() else rt.indexing()
        except IndexNotFound:  # no index yet: serve's start run may be about to build it
            indexing = rt.indexing()
            if indexing is None:
                raise
            return {"topics": [], "documents": 0, "watcher": watcher_status(rt),
                    "indexing": indexing}
        groups = kb.topic_summaries()
        titles = kb.titles([p for g in groups for p in g.first_paths])
        stats = kb.stats()
        last = (stats.last_run or {}).get("finished_at")
        return {
            "topics": [
                {
                    "prefix": g.prefix,
                    "uri": g.uri if label is None else topic_uri(g.prefix, label),
                    "documents": g.count,
                    "titles": [titles.get(p, p) for p in g.first_paths[:TOPIC_TITLES_SHOWN]],
                }
                for g in groups
            ],
            "documents": stats.documents,
            "last_indexed": str(last) if last is not None else None,
            "watcher": watcher_status(rt),
            "indexing": indexing,  # what is indexed so far, while the start run reads on
        }

    return await rt.in_thread(run)


def watcher_status(rt: KbRuntime) -> JsonObject:
    """Whether live sync runs, and when it last brought the index up to date."""
    if rt.watcher is None:
        return {"alive": False}
    status = rt.watcher.status()
    out: JsonObject = {"alive": bool(status.get("alive"))}
    for key in ("last_sync", "last_error"):
        if status.get(key):
            out[key] = str(status[key])
    return out


async def connection_graph(host: Host, args: JsonObject) -> JsonObject:
    selector = args.pop("collection", None)
    name = await host.in_thread(lambda: host.one(selector, "get_connection_graph",
                                                 args.get("path")))
    rt, label = host.runtimes[name], host.label(name)
    bounds = {k: args[k] for k in ("depth", "fan_out", "threshold", "max_nodes") if k in args}

    def run() -> JsonObject:
        kb = rt.open_index()
        if args.get("query") is not None:
            rt.ensure_model(kb)
        graph = kb.connection_graph(path=args.get("path"), query=args.get("query"),
                                    bounds=GraphBounds(**bounds))
        return graph.as_dict()

    data = await rt.in_thread(run)
    if label is not None:
        for node in data.get("nodes", []):
            if node.get("uri"):
                node["uri"] = doc_uri(node["path"], label)
    return host.labelled(name, data)


async def list_collections(host: Host, args: JsonObject) -> JsonObject:
    """Each collection: its description, default, documents, readiness and sync."""
    def run() -> JsonObject:
        out = []
        for name in host.names:
            rt, spec = host.runtimes[name], host.collections.spec(name)
            item: JsonObject = {"name": name, "description": spec.description,
                                "default": spec.default, "documents": 0, "ready": False,
                                "watcher": watcher_status(rt)}
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

    return await host.in_thread(run)


__all__ = ["TOPIC_TITLES_SHOWN", "connection_graph", "get_document", "list_collections",
           "list_topics", "search", "watcher_status"]
