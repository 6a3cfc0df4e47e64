"""``rebuild_index`` and ``index_status`` on a server of several collections (decision
0042): each collection has its own index and its own runs (``IndexRuns``: run ids count
per collection). One collection answers exactly as a one-folder server does, plus
``collection``; several answer ``runs`` (one view each) under an overall ``state``."""

from __future__ import annotations

import anyio

from kbmcp_adapters.mcp_server import index_run_tools as runs
from kbmcp_adapters.mcp_server.host import Host
from kbmcp_adapters.mcp_server.schemas import JsonObject
from kbmcp_core.errors import InvalidQuery

_COLLECTION = {"type": "string"}
REBUILD_INPUT: JsonObject = runs.REBUILD_INPUT
STATUS_INPUT: JsonObject = runs.STATUS_INPUT
_ONE: JsonObject = {**runs.RUN_OUTPUT,
                    "properties": {**runs.RUN_OUTPUT["properties"], "collection": _COLLECTION}}
RUN_OUTPUT: JsonObject = {
    **_ONE,
    "properties": {**_ONE["properties"],
                   "runs": {"type": "array", "items": _ONE,
                            "description": "one run per collection, when several"}},
}
#: the overall state of several runs: the first of these that any run is in
_ORDER = ("running", "failed", "stopped", "finished", "none")


def overall(views: list[JsonObject]) -> JsonObject:
    """Several collections' run views under one ``state`` and ``message``."""
    states = {str(v.get("state")) for v in views}
    state = next((s for s in _ORDER if s in states), "none")
    message = "; ".join(f"{v['collection']}: {v.get('message')}" for v in views)
    return {"state": state, "message": message, "runs": views}


async def rebuild_index(rs: Host, args: JsonObject) -> JsonObject:
    names = rs.every(args.pop("collection", None))
    if len(names) == 1:
        view = await runs.rebuild_index(rs.runtime(names[0]), args)
        return {**view, "collection": names[0]}
    force, background = bool(args.get("force", False)), args.get("background")
    started = []
    for name in names:  # a refusal (a read-only replica, shutting down) refuses the call
        view, run, _new = rs.runtimes[name].start_rebuild(force=force)
        started.append((name, run))
    if background is not True:
        bound = None if background is False else runs.WAIT_S
        deadline = None if bound is None else anyio.current_time() + bound
        for name, run in started:
            left = None if deadline is None else max(0.0, deadline - anyio.current_time())
            await runs.follow(rs.runtimes[name].runs, run, None, left, first="")
    views = [{**rs.runtimes[n].runs.view(run), "collection": n} for n, run in started]
    out = overall(views)
    if out["state"] == "running":
        out["note"] = ("still running (each collection's run goes on in the background): "
                       "index_status reports them")
    return out


async def index_status(rs: Host, args: JsonObject) -> JsonObject:
    names = rs.every(args.pop("collection", None))
    if len(names) == 1:
        view = await runs.index_status(rs.runtime(names[0]), args)
        return {**view, "collection": names[0]}
    if args.get("run_id") is not None:
        raise InvalidQuery("run ids are per collection: name the collection of "
                           f"{args['run_id']!r} with collection (one of {', '.join(names)})")
    views = [{**await runs.index_status(rs.runtimes[n], {}), "collection": n} for n in names]
    return overall(views)


__all__ = ["REBUILD_INPUT", "RUN_OUTPUT", "STATUS_INPUT", "index_status", "overall",
           "rebuild_index"]
