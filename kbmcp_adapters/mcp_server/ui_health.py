"""The /ui page's health view over the host's collections: ``status`` and ``doctor`` of
each, in one answer. A host of one answers its one collection's; a host of several, their
sums, each finding naming its collection, and each collection's part (``collections``)."""

from __future__ import annotations

from kbmcp_adapters.mcp_server.host import Host
from kbmcp_adapters.mcp_server.runtime import KbRuntime
from kbmcp_adapters.mcp_server.schemas import JsonObject
from kbmcp_adapters.mcp_server.tool_calls import watcher_status
from kbmcp_core.errors import IndexNotFound


def health(host: Host) -> JsonObject:
    """Blocking (it asks every index): call it from a worker thread. A host of one with
    no index raises ``IndexNotFound``, as the page's other calls do."""
    if not host.several:
        return health_of(host.only)
    parts: list[JsonObject] = []
    findings: list[JsonObject] = []
    for name in host.names:
        rt = host.runtimes[name]
        try:
            one = health_of(rt)
        except IndexNotFound:
            parts.append({"name": name, "documents": 0, "chunks": 0, "indexed": False,
                          "watcher": watcher_status(rt), "indexing": rt.indexing()})
            continue
        status, doctor = one["status"], one["doctor"]
        findings += [{**f, "summary": f"{name}: {f['summary']}"} for f in doctor["findings"]]
        parts.append({"name": name, "indexed": True, "healthy": doctor["healthy"],
                      "indexing": rt.indexing(),
                      **{k: status[k] for k in ("documents", "chunks", "model", "last_run",
                                                "read_only", "watcher")}})
    indexed = [p for p in parts if p["indexed"]]
    first = indexed[0] if indexed else parts[0]
    runs = [p["last_run"] for p in indexed if p.get("last_run")]
    last = max(runs, key=lambda r: str(r.get("finished_at") or "")) if runs else None
    return {
        "status": {"documents": sum(int(p["documents"]) for p in parts),
                   "chunks": sum(int(p["chunks"]) for p in parts),
                   "model": first.get("model"), "last_run": last,
                   "read_only": host.read_only, "watcher": first["watcher"]},
        "doctor": {"healthy": all(p.get("healthy", False) for p in parts),
                   "findings": findings, "store_check": "per collection"},
        "collections": parts,
    }


def health_of(rt: KbRuntime) -> JsonObject:
    """One collection's ``status`` and ``doctor``."""
    kb = rt.open_index()
    stats, report = kb.stats(), kb.doctor()
    return {
        "status": {
            "documents": stats.documents, "chunks": stats.chunks,
            "model": stats.model_id, "dimension": stats.dimension,
            "schema_revision": stats.schema_revision, "last_run": stats.last_run,
            "read_only": rt.index_read_only(),
            "watcher": watcher_status(rt),
        },
        "doctor": {**report.as_dict(), "healthy": report.healthy},
    }


__all__ = ["health", "health_of"]
