"""The /ui page's API on a server of several collections (decision 0042): the same calls
as for one folder, run through the collection-aware tools and resources, plus the list
the page's collection picker shows, topics labelled by collection and a health view
that shows each collection."""

from __future__ import annotations

import mcp_types as types
from mcp.shared.exceptions import MCPError
from starlette.requests import Request
from starlette.responses import Response

from kbmcp_adapters.mcp_server import collection_resources, collection_tools, tools
from kbmcp_adapters.mcp_server.host import Host
from kbmcp_adapters.mcp_server.schemas import ArgumentChecker, JsonObject
from kbmcp_adapters.mcp_server.ui import UiApi, error_response, failure_response, json_response
from kbmcp_core.errors import IndexNotFound
from kbmcp_core.uris import doc_uri, topic_uri


def ui_api(host: Host) -> UiApi:
    """The page's API for ``host``: one folder's, or the one over several collections."""
    return CollectionsUiApi(host) if host.several else UiApi(host.only)


class CollectionsUiApi(UiApi):
    """``UiApi`` over a ``Host`` of several collections."""

    def __init__(self, rs: Host) -> None:
        super().__init__(rs.runtimes[rs.names[0]])
        self.rs = rs
        self.host = rs
        self.specs = {s.name: s for s in collection_tools.tool_specs(rs)}
        self.checkers = {n: ArgumentChecker(s.input_schema) for n, s in self.specs.items()}

    async def collections(self, request: Request) -> Response:
        """``list_collections``: the page's picker (all the defaults, or one)."""
        return await self.tool("list_collections", {})

    async def read_uri(self, uri: str) -> types.ReadResourceResult:
        return await collection_resources.read_resource(
            self.rs, None, types.ReadResourceRequestParams(uri=uri))

    async def topics(self, request: Request) -> Response:
        try:
            listed = await collection_resources.list_resources(self.rs, None, None)
        except MCPError as exc:
            return error_response("internal_error", exc.error.message, 500)

        def members() -> dict[str, list[JsonObject]]:
            out: dict[str, list[JsonObject]] = {}
            for name in self.rs.names:
                try:
                    groups = self.rs.runtimes[name].open_index().topic_groups()
                except IndexNotFound:
                    continue
                for g in groups:
                    out[topic_uri(g.prefix, name)] = [
                        {"path": d.path, "title": d.title, "collection": name,
                         "uri": doc_uri(d.path, name)} for d in g.documents]
            return out

        documents = await self.rs.in_thread(members)
        return json_response({"topics": [
            {"uri": r.uri, "name": r.name, "title": r.title, "description": r.description,
             "documents": documents.get(r.uri, [])} for r in listed.resources]})

    async def health(self, request: Request) -> Response:
        """Each collection's status and doctor, and their sum (``collections``)."""
        rs = self.rs

        def run() -> JsonObject:
            parts: list[JsonObject] = []
            findings: list[JsonObject] = []
            for name in rs.names:
                rt = rs.runtimes[name]
                try:
                    kb = rt.open_index()
                except IndexNotFound:
                    parts.append({"name": name, "documents": 0, "chunks": 0,
                                  "indexed": False, "watcher": tools._watcher_status(rt),
                                  "indexing": rt.indexing()})
                    continue
                stats, report = kb.stats(), kb.doctor()
                findings += [{**f.as_dict(), "summary": f"{name}: {f.summary}"}
                             for f in report.findings]
                parts.append({"name": name, "documents": stats.documents,
                              "chunks": stats.chunks, "indexed": True,
                              "model": stats.model_id, "last_run": stats.last_run,
                              "healthy": report.healthy, "read_only": rt.read_only or
                              kb.is_read_only(), "watcher": tools._watcher_status(rt),
                              "indexing": rt.indexing()})
            indexed = [p for p in parts if p["indexed"]]
            first = indexed[0] if indexed else parts[0]
            runs = [p["last_run"] for p in indexed if p.get("last_run")]
            last = max(runs, key=lambda r: str(r.get("finished_at") or "")) if runs else None
            return {
                "status": {"documents": sum(int(p["documents"]) for p in parts),
                           "chunks": sum(int(p["chunks"]) for p in parts),
                           "model": first.get("model"), "last_run": last,
                           "read_only": rs.read_only, "watcher": first["watcher"]},
                "doctor": {"healthy": all(p.get("healthy", False) for p in parts),
                           "findings": findings, "store_check": "per collection"},
                "collections": parts,
            }

        try:
            data = await rs.in_thread(run)
        except Exception as exc:
            return failure_response(exc)
        return json_response({**tools.without_nulls(data), "progress": self._progress()})

    def _progress(self) -> JsonObject | None:
        for name in self.rs.names:
            rt = self.rs.runtimes[name]
            if rt.rebuilding_since() is not None:
                return {"phase": "start", **(rt.progress or {}), "collection": name}
        return None


__all__ = ["CollectionsUiApi", "ui_api"]
