"""The MCP server: the SDK server with every kb-mcp handler wired, the stdio runner, and
the signals that stop a server process."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Sequence
from functools import partial
from importlib import metadata
from types import FrameType
from typing import Any, BinaryIO, NoReturn

import anyio
import mcp_types as types
from mcp.server.caching import CacheableMethod, CacheHint
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError

from kbmcp_adapters.mcp_server import completion, prompts, resources, tools
from kbmcp_adapters.mcp_server.apps import kb_apps
from kbmcp_adapters.mcp_server.host import Host
from kbmcp_adapters.mcp_server.icons import server_icons
from kbmcp_adapters.mcp_server.index_run_tools import progress_report, request_progress
from kbmcp_adapters.mcp_server.oauth import scope_refusal
from kbmcp_adapters.mcp_server.runtime import SHUTDOWN_S, BackgroundTask, KbRuntime
from kbmcp_adapters.mcp_server.schemas import ArgumentChecker
from kbmcp_adapters.mcp_server.stdio import claim_stdin, claim_stdout, stdio_transport

log = logging.getLogger(__name__)

#: What kb-mcp is, in one line (``serverInfo.description``).
DESCRIPTION = ("A local knowledge base of documents (Markdown, text, PDF, Office, HTML...): "
               "hybrid semantic and keyword search, guarded reads, topic listings.")
INSTRUCTIONS = (
    "kb-mcp serves a local knowledge base of documents. Use `search` to find passages "
    "(semantic + keyword); each hit also comes as a resource_link to the lines it cites. "
    "Use `get_document` to read one file by its path, `get_documents` to read several at "
    "once (a list of paths or a glob, within a total size), `list_topics` for an overview, "
    "and the kb://topic/ resources to browse. Cite the path of every document "
    "you use, and say so when the knowledge base does not answer a question. `rebuild_index` "
    "brings the index up to date after files change; a long run goes on in the background "
    "and `index_status` reports it."
)

#: Added to the instructions by a server of several collections (decision 0042).
COLLECTIONS_NOTE = (
    " This server serves several collections (folders under names): `list_collections` "
    "names them; every tool takes `collection` (a name or a list; omitted: the default "
    "collections), and each hit and URI names its collection (kb://doc/{collection}/{path})."
)


class _KbServer(Server[Any]):
    """The SDK server, declaring resources.listChanged on every transport's handshake."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(resources_changed=True),
            experimental_capabilities,
            extensions,
        )


#: The index changes behind the client's back (rebuilds, the watcher): nothing is cached.
_ALWAYS_FRESH: dict[CacheableMethod, CacheHint] = {
    method: CacheHint(ttl_ms=0)
    for method in (
        "prompts/list",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "server/discover",
        "tools/list",
    )
}


def server_version() -> str:
    try:
        return metadata.version("kb-mcp")
    except metadata.PackageNotFoundError:
        return "0"


def build_server(rt: KbRuntime | Host, *, rebuild_scope: str | None = None) -> Server[Any]:
    """The low-level SDK server with every kb-mcp handler registered, for the host's
    collections (``Host.of``: a runtime alone is the host of its one folder). Every
    handler takes the host; on a host of several (decision 0042) the tools grow
    ``collection`` and ``list_collections``, and the URIs name the collection.
    ``rebuild_scope``: the OAuth scope a token must hold to call a tool that changes the
    index (decision 0054; None: no scope is asked)."""
    host = Host.of(rt)
    specs = {spec.name: spec for spec in tools.tool_specs(host)}
    #: each tool's arguments are checked against the very schema tools/list publishes
    checkers = {name: ArgumentChecker(spec.input_schema) for name, spec in specs.items()}

    apps = kb_apps()

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[s.as_tool(apps.meta_for(s.name, ctx)) for s in specs.values()])

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        listed = await resources.list_resources(host, ctx, params)
        if apps.wanted(ctx):
            listed.resources = [*listed.resources, *apps.listed()]
        return listed

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        view = apps.read(params.uri)
        return view if view is not None else await resources.read_resource(host, ctx, params)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = specs.get(params.name)
        if spec is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown tool {params.name[:64]!r}; the tools are {', '.join(specs)}",
            )
        if rebuild_scope is not None and spec.annotations.read_only_hint is False:
            refused = scope_refusal(getattr(ctx, "request", None), spec.name, rebuild_scope)
            if refused is not None:
                return tools.failure_result(refused)
        try:
            args = checkers[spec.name].check(params.arguments or {})
            with request_progress(progress_report(ctx)):
                data = await spec.run(host, args)
            return tools.success_result(data, spec.links)
        except Exception as exc:
            return tools.failure_result(exc)

    server = _KbServer(
        "kb-mcp",
        version=server_version(),
        title="kb-mcp knowledge base",
        description=DESCRIPTION,
        instructions=INSTRUCTIONS + (COLLECTIONS_NOTE if host.several else ""),
        icons=server_icons(),
        cache_hints=_ALWAYS_FRESH,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=prompts.list_prompts,
        on_get_prompt=prompts.get_prompt,
        on_list_resources=list_resources,
        on_list_resource_templates=partial(resources.list_templates, host),
        on_read_resource=read_resource,
        on_completion=partial(completion.complete, host),
        on_subscriptions_listen=ListenHandler(host.notifier.bus),
    )
    server.middleware.append(host.notifier)
    server.extensions[apps.identifier] = apps.settings()  # the MCP Apps views (0055)
    return server


# -- stdio ---------------------------------------------------------------------------------
def serve_stdio(
    rt: KbRuntime | Host, *, wire: BinaryIO | None = None,
    background: Sequence[BackgroundTask] = (),
) -> None:
    """Serve MCP over stdin/stdout until the client closes stdin, or the server is asked to
    stop (``KbRuntime.request_stop``: ``StopSignals`` does on SIGINT and SIGTERM).

    ``wire`` is the real stdout from an earlier ``claim_stdout()``; claimed here if omitted.
    Work in progress stops at its next safe point once the input ends, so the process ends
    within a bounded time, with exit status 0, even while the client keeps stdin open.
    """
    wire = wire if wire is not None else claim_stdout()
    wire_in = claim_stdin()
    try:
        anyio.run(_serve_stdio, rt, wire_in, wire, tuple(background))
    finally:
        if not rt.shutdown():
            exit_now(wire)
        # Closed here, never left to the collector: a ResourceWarning raised while the
        # interpreter exits can deadlock on an import lock that a frozen thread holds.
        for stream in (wire, wire_in):
            with contextlib.suppress(OSError, ValueError):
                stream.close()


async def _serve_stdio(
    rt: KbRuntime | Host, wire_in: BinaryIO, wire: BinaryIO,
    background: tuple[BackgroundTask, ...],
) -> None:
    server = build_server(rt)
    log.info("serving %s over stdio", rt.settings.kb_path.name or "the knowledge base")
    async with (
        stdio_transport(wire_in, wire, rt.request_stop) as (read_stream, write_stream,
                                                            end_input),
        anyio.create_task_group() as tg,
    ):
        rt.on_stop(end_input)  # a stop asked for (a signal) ends the input, as EOF would
        for task in background:
            tg.start_soon(task, rt)
        await server.run(read_stream, write_stream, server.create_initialization_options())
        tg.cancel_scope.cancel()


def end_process() -> NoReturn:
    """End a server process whose work has stopped and whose index is closed, exit 0, at
    once: the exit handlers run and the logs are flushed, but the interpreter's teardown
    of native libraries (LanceDB's runtime alone takes a second) is skipped. A stdio
    client waits only briefly for its server to go (the SDK's: 2 s, then it kills it)."""
    atexit._run_exitfuncs()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(0)


def exit_now(*streams: BinaryIO) -> None:
    """The last resort of a shutdown whose work did not stop in time: flush what was
    written and end the process at once. Native threads still running (the embedding
    model, the vector store) would abort the interpreter's normal exit."""
    log.warning(
        "work in progress did not stop within %gs; exiting without waiting for it (the "
        "next index run completes what it left)", SHUTDOWN_S,
    )
    for stream in (*streams, sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(0)


class StopSignals:
    """SIGINT and SIGTERM for the whole life of a server process (``serve``, any transport).

    The first one asks the server to stop, as a client closing stdin does: index runs stop
    at their next safe point and the process exits 0 within a bounded time. The handler
    only notes the signal and wakes the event loop through a pipe; the stopping itself
    runs in the loop (``stop_server``, a background task). A second signal ends the
    process at once (exit 1), as a killed run would (the next index run completes it).
    Each is logged in one line.
    """

    def __init__(self) -> None:
        self.received: int | None = None
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def install(self) -> None:
        """Handle SIGINT and SIGTERM from now on (main thread only). Installed before the
        event loop starts, so neither asyncio nor uvicorn keeps them for itself
        (uvicorn hands a signal it caught back to this handler when it has shut down)."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.received is not None:
            log.warning("second %s: exiting at once (the next index run completes what "
                        "this one left)", signal.Signals(signum).name)
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            os._exit(1)
        self.received = signum
        log.info("%s: stopping (work in progress stops at its next safe point; the index "
                 "stays consistent)", signal.Signals(signum).name)
        with contextlib.suppress(OSError):  # a full pipe: a wake-up is already pending
            os.write(self._wake_w, b"\0")

    async def stop_server(self, rt: KbRuntime | Host) -> None:
        """A background task of the server: on the first signal, ask it to stop."""
        while self.received is None:
            await anyio.wait_readable(self._wake_r)
            with contextlib.suppress(OSError):
                os.read(self._wake_r, 64)
        rt.request_stop()


__all__ = ["StopSignals", "build_server", "end_process", "exit_now", "serve_stdio",
           "server_version"]
