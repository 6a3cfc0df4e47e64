"""The ``rebuild_index`` and ``index_status`` tools (decision 0034): their schemas, the
bounded wait with ``notifications/progress``, and the request's progress channel.

``rebuild_index`` starts a run (``IndexRuns``) and then, by ``background``: returns at
once (true), waits for its end (false), or waits at most ``WAIT_S`` (omitted), so a
client never waits past a usual request timeout; a run still going on then is reported by
``index_status``. While it waits, a request that carried a ``progressToken`` hears the
run's progress, at most every ``PROGRESS_EVERY_S``.

Each collection of the host has its own index and runs (run ids count per collection):
a call about one collection answers as one folder does (naming its collection when the
host has several); about several, ``runs`` (one view each) under an overall ``state``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from functools import partial
from typing import Any

import anyio
import anyio.to_thread

from kbmcp_adapters.mcp_server.host import Host
from kbmcp_adapters.mcp_server.index_runs import KEPT, IndexRunRecord, IndexRuns
from kbmcp_adapters.mcp_server.runtime import KbRuntime
from kbmcp_adapters.mcp_server.schemas import REBUILD_OUTPUT, JsonObject
from kbmcp_core.errors import InvalidQuery

log = logging.getLogger(__name__)

#: Without ``background``, the longest wait (s) for the run's end before the call answers
#: with the run's id: under the 60 s that common clients give a request.
WAIT_S = 40.0
#: At most one ``notifications/progress`` this often (s), plus one as the run ends.
PROGRESS_EVERY_S = 0.5
#: ``report(progress, total, message)``: the request's progress notification (a no-op
#: when the request carried no ``progressToken``).
Report = Callable[[float, float | None, str | None], Awaitable[None]]

#: the overall state of several runs: the first of these that any run is in
_ORDER = ("running", "failed", "stopped", "finished", "none")

_report: ContextVar[Report | None] = ContextVar("kbmcp_progress_report", default=None)

RUN_ID_PATTERN = r"^run-[0-9]{1,12}$"
REBUILD_INPUT: JsonObject = {
    "type": "object",
    "properties": {
        "force": {"type": "boolean", "default": False, "description": "Re-embed every file."},
        "background": {"type": "boolean", "description": (
            "true: return at once with the run's run_id (index_status reports it); false: "
            f"wait for the run's end; omitted: wait at most {WAIT_S:g} s, then return the "
            "run_id of the run still going on.")},
    },
    "additionalProperties": False,
}
STATUS_INPUT: JsonObject = {
    "type": "object",
    "properties": {"run_id": {
        "type": "string", "pattern": RUN_ID_PATTERN,
        "description": "The run rebuild_index returned (default: the running run, else "
                       "the last one)."}},
    "additionalProperties": False,
}
_STR, _INT = {"type": "string"}, {"type": "integer", "minimum": 0}
RUN_OUTPUT: JsonObject = {
    "type": "object",
    "properties": {
        **REBUILD_OUTPUT["properties"],
        "run_id": _STR,
        "state": {"type": "string", "enum": ["running", "finished", "failed", "stopped",
                                              "none"]},
        "phase": _STR, "message": _STR, "force": {"type": "boolean"},
        "done": _INT, "total": _INT, "started": _STR, "finished": _STR,
        "error": {"type": "object", "properties": {"code": _STR, "message": _STR},
                  "required": ["code", "message"]},
        "already_running": {"type": "boolean"}, "note": _STR,
        "read_only": {"type": "boolean", "description": (
            "index_status: this server cannot write the index (a read-only replica, or an "
            "index this user may only read): its index is updated by the writer, and "
            "rebuild_index is refused")},
    },
    "required": ["state", "message"],
}  # fmt: skip
#: a run of one collection on a host of several, naming it
_ONE_OF_SEVERAL: JsonObject = {**RUN_OUTPUT, "properties": {**RUN_OUTPUT["properties"],
                                                             "collection": _STR}}
#: ``rebuild_index``/``index_status`` on a host of several: one run, or ``runs``
RUNS_OUTPUT: JsonObject = {
    **_ONE_OF_SEVERAL,
    "properties": {**_ONE_OF_SEVERAL["properties"],
                   "runs": {"type": "array", "items": _ONE_OF_SEVERAL,
                            "description": "one run per collection, when several"}},
}


@contextlib.contextmanager
def request_progress(report: Report | None) -> Iterator[None]:
    """While a tool call runs: where its progress goes (the server sets it per call)."""
    token = _report.set(report)
    try:
        yield
    finally:
        _report.reset(token)


async def rebuild_index(host: Host, args: JsonObject) -> JsonObject:
    """A run in each collection named (omitted: every one), waited for as ``background``
    says; one collection's answer is one folder's."""
    names = host.every(args.pop("collection", None))
    if len(names) == 1:
        return host.labelled(names[0], await _rebuild_in(host.runtime(names[0]), args))
    force, background = bool(args.get("force", False)), args.get("background")
    started = []
    for name in names:  # a refusal (a read-only replica, shutting down) refuses the call
        view, run, _new = host.runtimes[name].start_rebuild(force=force)
        started.append((name, run))
    if background is not True:
        deadline = None if background is False else anyio.current_time() + WAIT_S
        for name, run in started:
            left = None if deadline is None else max(0.0, deadline - anyio.current_time())
            await follow(host.runtimes[name].runs, run, None, left, first="")
    out = overall([{**host.runtimes[n].runs.view(run), "collection": n}
                   for n, run in started])
    if out["state"] == "running":
        out["note"] = ("still running (each collection's run goes on in the background): "
                       "index_status reports them")
    return out


async def index_status(host: Host, args: JsonObject) -> JsonObject:
    """The run asked for (or the running or last one) and whether the index can be
    written here (``read_only``); on several collections, each one's under ``runs``."""
    names = host.every(args.pop("collection", None))
    if len(names) == 1:
        return host.labelled(names[0], await _status_in(host.runtime(names[0]), args))
    if args.get("run_id") is not None:
        raise InvalidQuery("run ids are per collection: name the collection of "
                           f"{args['run_id']!r} with collection (one of {', '.join(names)})")
    views = [{**await _status_in(host.runtimes[n], {}), "collection": n} for n in names]
    return {**overall(views), "read_only": all(v["read_only"] for v in views)}


def overall(views: list[JsonObject]) -> JsonObject:
    """Several collections' run views under one ``state`` and ``message``: the first
    state of ``_ORDER`` that any run is in."""
    states = {str(v.get("state")) for v in views}
    state = next((s for s in _ORDER if s in states), "none")
    message = "; ".join(f"{v['collection']}: {v.get('message')}" for v in views)
    return {"state": state, "message": message, "runs": views}


async def _rebuild_in(rt: KbRuntime, args: JsonObject) -> JsonObject:
    view, run, started = rt.start_rebuild(force=bool(args.get("force", False)))
    if not started:
        return {**view, "already_running": True, "note": (
            f"an index run ({run.run_id}) has been running since {view['started']}; this "
            f"call started none: follow it with index_status(run_id='{run.run_id}'), and "
            "call rebuild_index again if files changed since it started")}
    background = args.get("background")
    if background is True:
        return {**view, "note": f"running in the background: "
                                f"index_status(run_id='{run.run_id}') reports it"}
    ended = await follow(rt.runs, run, _report.get(), None if background is False else WAIT_S,
                         first=str(view["message"]))
    view = rt.runs.view(run)
    if not ended:
        return {**view, "note": f"still running after {WAIT_S:g} s; it goes on in the "
                                f"background: index_status(run_id='{run.run_id}') reports it"}
    if run.error is not None:
        raise run.error
    return view


async def _status_in(rt: KbRuntime, args: JsonObject) -> JsonObject:
    run_id = args.get("run_id")
    run = rt.runs.get(run_id)
    if run is None and run_id is not None:
        known = ", ".join(rt.runs.known()) or "none"
        raise InvalidQuery(f"this server has no index run {run_id!r}; the runs it knows: "
                           f"{known} (the last {KEPT} since it started)")
    read_only = await rt.in_thread(rt.index_read_only)
    if run is None:
        return {"state": "none", "message": "no rebuild_index run since this server started",
                "read_only": read_only}
    return {**rt.runs.view(run), "read_only": read_only}


async def follow(runs: IndexRuns, run: IndexRunRecord, report: Report | None,
                 bound: float | None, *, first: str) -> bool:
    """Wait for ``run`` to end, at most ``bound`` s (None: no bound), telling ``report``
    how far it got: ``first`` (the run as it started) at once, then whenever it moved on
    (at most every ``PROGRESS_EVERY_S``), and as it ends; progress always increases, as
    the spec requires. Whether it ended. A cancelled wait leaves the run going on."""
    deadline = None if bound is None else anyio.current_time() + bound
    seen, sent = -1, -1.0
    if report is not None:
        report = await _told(report, 0.0, None, first)
        sent = 0.0
    while True:
        version, (done, total), message, ended = runs.snapshot(run)
        if report is not None and version != seen:
            seen = version
            progress = float(max(done, sent + 1) if ended else done)
            if progress > sent:
                if ended:
                    total = max(total or 0, int(progress))
                report = await _told(report, progress, total, message)
                sent = progress
        if ended:
            return True
        remaining = None if deadline is None else deadline - anyio.current_time()
        if remaining is not None and remaining <= 0:
            return False
        step = remaining if report is None else min(PROGRESS_EVERY_S, remaining or PROGRESS_EVERY_S)
        await anyio.to_thread.run_sync(partial(runs.wait_ended, run, step),
                                       abandon_on_cancel=True)


async def _told(report: Report, progress: float, total: int | float | None,
                message: str) -> Report | None:
    """``report`` told of the progress; None once it cannot be (the client went away:
    the run goes on)."""
    try:
        await report(progress, None if total is None else float(total), message)
    except Exception as exc:
        log.debug("rebuild_index: progress not delivered: %s", exc)
        return None
    log.debug("rebuild_index: progress %g of %s: %s", progress, total, message)
    return report


def progress_report(ctx: Any) -> Report | None:
    """The request's ``report_progress``: the SDK sends ``notifications/progress`` when the
    request carried a ``progressToken`` (in memory: calls the client's callback), and
    does nothing otherwise."""
    session = getattr(ctx, "session", None)
    return getattr(session, "report_progress", None)


__all__ = ["PROGRESS_EVERY_S", "REBUILD_INPUT", "RUNS_OUTPUT", "RUN_OUTPUT", "STATUS_INPUT",
           "WAIT_S", "index_status", "overall", "progress_report", "rebuild_index",
           "request_progress"]
