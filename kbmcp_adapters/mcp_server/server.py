"""The MCP server: a lazily opened knowledge base, the handler wiring, and the stdio runner."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime
from functools import partial
from importlib import metadata
from typing import Any, BinaryIO, TypeVar

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.caching import CacheableMethod, CacheHint
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourcesListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.mcp_server.stdio import claim_stdin, claim_stdout, stdio_transport
from kbmcp_core.errors import IndexNotFound, WriterBusy
from kbmcp_core.settings import Settings

log = logging.getLogger(__name__)

T = TypeVar("T")
#: A task run beside the transport for the server's lifetime (the file watcher plugs in here).
BackgroundTask = Callable[["KbRuntime"], Coroutine[Any, Any, None]]
#: At shutdown, the longest wait (s) for index runs in progress to reach a safe point.
SHUTDOWN_S = 20.0

INSTRUCTIONS = (
    "kb-mcp serves a local knowledge base of documents. Use `search` to find passages "
    "(semantic + keyword), `get_document` to read a whole file by its path, `list_topics` "
    "for an overview, and the kb://topic/ resources to browse. Cite the path of every document "
    "you use, and say so when the knowledge base does not answer a question. `rebuild_index` "
    "brings the index up to date after files change."
)


class ChangeNotifier:
    """Tells every connected client that the offered resources changed.

    Handshake-era connections get ``notifications/resources/list_changed`` on their
    standalone channel; 2026-era clients get it on their ``subscriptions/listen`` stream.
    It is also a server middleware, which is how it learns the handshake-era connections.
    """

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self._connections: weakref.WeakSet[Any] = weakref.WeakSet()

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            # The SDK exposes the per-client Connection only through the session.
            connection = getattr(ctx.session, "_connection", None)
            if connection is not None:
                self._connections.add(connection)
        return await call_next(ctx)

    async def resources_changed(self) -> None:
        await self.bus.publish(ResourcesListChanged())
        for connection in list(self._connections):
            await connection.send_resource_list_changed()


class KbRuntime:
    """One knowledge base as the server sees it: opened on first need, one rebuild at a time.

    Blocking methods (``open_index``, ``ensure_model``, ...) run in worker threads via
    ``in_thread`` so the event loop keeps answering while they work.
    """

    def __init__(
        self, settings: Settings, open_kb: Callable[[Settings], KnowledgeBase] | None = None
    ) -> None:
        self.settings = settings
        self.notifier = ChangeNotifier()
        self._open_kb = open_kb or (lambda s: KnowledgeBase(bootstrap(s)))
        self._kb: KnowledgeBase | None = None
        self._open_lock = threading.Lock()
        self._model_lock = threading.Lock()
        self._model_ready = False
        self._rebuild_since: datetime | None = None
        #: the live-sync watcher, when one runs (kbmcp_adapters.mcp_server.live)
        self.watcher: Any = None
        self._stopping = threading.Event()
        self._idle = threading.Condition()
        self._running = 0  # blocking calls in worker threads right now

    # -- blocking: call these from worker threads ------------------------------------------
    def knowledge_base(self) -> KnowledgeBase:
        with self._open_lock:
            if self._kb is None:
                self._kb = self._open_kb(self.settings)
                if self._stopping.is_set():
                    self._kb.stop_writers()
            return self._kb

    def open_index(self) -> KnowledgeBase:
        """The knowledge base with its index open; ``IndexNotFound`` when there is none yet."""
        kb = self.knowledge_base()
        with self._open_lock:  # the first open migrates the schema: once, not per thread
            kb.container.open_store(create=False)
        return kb

    def knowledge_base_for_reads(self) -> KnowledgeBase:
        """For ``get_document``, which serves files whether or not an index exists."""
        try:
            return self.open_index()
        except IndexNotFound:
            return self.knowledge_base()

    def ensure_model(self, kb: KnowledgeBase) -> None:
        """Load the embedding model (and open the vector store) once, saying so on the log."""
        if self._model_ready:
            return
        with self._model_lock:
            if self._model_ready:
                return
            log.info("loading embedding model %s", self.settings.embedding_model)
            started = time.monotonic()
            kb.container.embedder.embed_query("kb-mcp")
            kb.container.vectors  # noqa: B018  (built here once, not by racing threads)
            log.info("embedding model ready in %.1fs", time.monotonic() - started)
            self._model_ready = True

    def _rebuild_blocking(self, force: bool) -> tuple[dict[str, object], bool]:
        kb = self.knowledge_base()
        with self._open_lock:
            kb.container.open_store(create=True)
        before = set(kb.servable_paths())
        self.ensure_model(kb)
        summary = kb.index(force=force, purpose="a rebuild_index call")
        after = set(kb.servable_paths())
        log.info("rebuild_index: %s", summary.line())
        return summary.as_dict(), before != after

    # -- async -----------------------------------------------------------------------------
    async def in_thread(self, func: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(partial(self._counted, func))

    def _counted(self, func: Callable[[], T]) -> T:
        with self._idle:
            self._running += 1
        try:
            return func()
        finally:
            with self._idle:
                self._running -= 1
                self._idle.notify_all()

    def rebuilding_since(self) -> datetime | None:
        return self._rebuild_since

    async def rebuild(self, *, force: bool) -> dict[str, object]:
        """Run one index update in a worker thread; refuse a second while one runs."""
        since = self._rebuild_since
        if since is not None:
            elapsed = (datetime.now(UTC) - since).total_seconds()
            raise WriterBusy(
                f"an index rebuild has been running since {since:%Y-%m-%dT%H:%M:%SZ} "
                f"({elapsed:.0f}s ago); wait for it to finish, then call rebuild_index again "
                "if files changed since it started"
            )
        self._rebuild_since = datetime.now(UTC)
        try:
            summary, offer_changed = await self.in_thread(partial(self._rebuild_blocking, force))
        finally:
            self._rebuild_since = None
        if offer_changed:
            await self.offer_changed()
        return summary

    async def offer_changed(self) -> None:
        """The offered documents changed (after a rebuild, or from the watcher)."""
        await self.notifier.resources_changed()

    def request_stop(self) -> None:
        """The server is going away (the client closed stdin, or a signal): index runs in
        progress stop at their next safe point, and no new one starts."""
        self._stopping.set()
        kb = self._kb
        if kb is not None:
            kb.stop_writers()
        if self.watcher is not None:
            self.watcher.request_stop()

    def shutdown(self, timeout: float = SHUTDOWN_S) -> bool:
        """Stop every writer, wait at most ``timeout`` s for them, then close the index.

        False when something was still running at the deadline: the index is then left
        open, as a killed run leaves it (which the next run completes), and the caller
        should end the process without waiting for those threads.
        """
        self.request_stop()
        deadline = time.monotonic() + timeout
        stopped = True
        if self.watcher is not None:
            stopped = bool(self.watcher.stop(timeout=max(0.0, deadline - time.monotonic())))
        with self._idle:
            stopped = self._idle.wait_for(
                lambda: self._running == 0, timeout=max(0.0, deadline - time.monotonic())
            ) and stopped
        if stopped:
            self.close()
        return stopped

    def close(self) -> None:
        with self._open_lock:
            if self._kb is not None:
                self._kb.close()
                self._kb = None


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


def build_server(rt: KbRuntime) -> Server[Any]:
    """The low-level SDK server with every kb-mcp handler registered."""
    from kbmcp_adapters.mcp_server import prompts, resources, tools

    specs = {spec.name: spec for spec in tools.tool_specs(rt.settings)}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[s.as_tool() for s in specs.values()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = specs.get(params.name)
        if spec is None:
            from mcp.shared.exceptions import MCPError

            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown tool {params.name[:64]!r}; the tools are {', '.join(specs)}",
            )
        try:
            args = tools.check_arguments(spec.input_schema, params.arguments or {})
            return tools.success_result(await spec.run(rt, args))
        except Exception as exc:
            return tools.failure_result(exc)

    server = _KbServer(
        "kb-mcp",
        version=server_version(),
        title="kb-mcp knowledge base",
        instructions=INSTRUCTIONS,
        cache_hints=_ALWAYS_FRESH,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=partial(resources.list_resources, rt),
        on_list_resource_templates=resources.list_templates,
        on_read_resource=partial(resources.read_resource, rt),
        on_list_prompts=prompts.list_prompts,
        on_get_prompt=prompts.get_prompt,
        on_subscriptions_listen=ListenHandler(rt.notifier.bus),
    )
    server.middleware.append(rt.notifier)
    return server


# -- stdio ---------------------------------------------------------------------------------
def serve_stdio(
    rt: KbRuntime, *, wire: BinaryIO | None = None, background: Sequence[BackgroundTask] = ()
) -> None:
    """Serve MCP over stdin/stdout until the client closes stdin.

    ``wire`` is the real stdout from an earlier ``claim_stdout()``; claimed here if omitted.
    Work in progress stops at its next safe point once stdin closes, so the process ends
    within a bounded time, with exit status 0.
    """
    wire = wire if wire is not None else claim_stdout()
    wire_in = claim_stdin()
    try:
        anyio.run(_serve_stdio, rt, wire_in, wire, tuple(background))
    finally:
        if not rt.shutdown():
            exit_now(wire)


async def _serve_stdio(
    rt: KbRuntime, wire_in: BinaryIO, wire: BinaryIO, background: tuple[BackgroundTask, ...]
) -> None:
    server = build_server(rt)
    log.info("serving %s over stdio", rt.settings.kb_path.name or "the knowledge base")
    async with (
        stdio_transport(wire_in, wire, rt.request_stop) as (read_stream, write_stream),
        anyio.create_task_group() as tg,
    ):
        for task in background:
            tg.start_soon(task, rt)
        await server.run(read_stream, write_stream, server.create_initialization_options())
        tg.cancel_scope.cancel()


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


__all__ = [
    "SHUTDOWN_S",
    "BackgroundTask",
    "ChangeNotifier",
    "KbRuntime",
    "build_server",
    "claim_stdout",
    "exit_now",
    "serve_stdio",
    "server_version",
]
