"""The knowledge base as the MCP server sees it: opened on first need, one rebuild at a time,
and the notifier that tells clients when the offered documents change."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Iterator, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any, Protocol, TypeVar

import anyio
import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourcesListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kbmcp_adapters.app.bootstrap import store_location
from kbmcp_adapters.app.in_process_lock import IndexRunStopped
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.mcp_server.index_runs import IndexRunRecord, IndexRuns, Step
from kbmcp_adapters.mcp_server.start_run import START_PURPOSE, StartRun
from kbmcp_core.errors import IndexNotFound, IndexReadOnly, KbError, StoreError
from kbmcp_core.index_deps import Progress
from kbmcp_core.models import RunSummary
from kbmcp_core.settings import Settings

log = logging.getLogger(__name__)

T = TypeVar("T")
#: A task run beside the transport for the server's lifetime (the file watcher plugs in
#: here), given the server's host: its ``KbRuntime`` (or, on a server of several
#: collections, the ``Host``: its tasks are each bound to one collection's runtime).
BackgroundTask = Callable[[Any], Coroutine[Any, Any, None]]
#: At shutdown, the longest wait (s) for index runs in progress to reach a safe point.
SHUTDOWN_S = 20.0
#: Why a read-only server refuses to write, and where the writer runs instead.
REPLICA_WHY = "this server is a read-only replica, started with --read-only"
REPLICA_HINT = ("the index is updated by its writer: `kb-mcp watch` (or `kb-mcp index`) on "
                "the machine that holds the files; this replica serves the new index as "
                "soon as the writer has committed it")


class LiveSync(Protocol):
    """What the runtime needs of a live-sync watcher running beside it."""

    def status(self) -> Mapping[str, Any]: ...

    def request_stop(self) -> None: ...

    def stop(self, timeout: float = ...) -> bool: ...


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

    The runtime builds the one ``KnowledgeBase`` that every tool, the watcher and the local
    search server of ``serve`` share; opening the index, warming the model and closing are
    that knowledge base's (and its container's) to do once.

    Blocking methods (``open_index``, ``ensure_model``, ...) run in worker threads via
    ``in_thread`` so the event loop keeps answering while they work.
    """

    def __init__(
        self,
        settings: Settings,
        open_kb: Callable[[Settings], KnowledgeBase] = KnowledgeBase.from_settings,
        *,
        read_only: bool = False,
        index_on_start: bool = False,
        notifier: ChangeNotifier | None = None,
    ) -> None:
        """``open_kb`` builds the knowledge base on first need (tests pass fakes this way).

        ``read_only``: a replica that never writes the index: it never creates or
        migrates it, opens a SQLite file read-only (nothing in the index folder is
        created or changed), and ``rebuild`` is refused (decision 0011).

        ``index_on_start``: ``serve`` runs an index run as it starts (decision 0024: the
        watcher's first sync, or ``start_run.start_index_task``); until one completes,
        the tools answer "indexing" rather than "no index yet". Never on a replica.

        ``notifier``: shared by the runtimes of a server of several collections
        (``host.Host``), so a change in any one reaches every client."""
        read_only = read_only or settings.read_only
        self.settings = dataclasses.replace(settings, read_only=True) if read_only else settings
        self.read_only = read_only
        self._schema_checked = False
        self.notifier = notifier or ChangeNotifier()
        self._open_kb = open_kb
        self._kb: KnowledgeBase | None = None
        self._open_lock = threading.Lock()
        #: the rebuild_index runs: one at a time, each in a thread of its own (0034)
        self.runs = IndexRuns(self._rebuild_work, self.offer_changed, self._counted)
        #: the running rebuild's progress: phase "scan", then "index" (step "text" or
        #: "vectors", the two phases of an index run) with done/total
        self.progress: dict[str, object] | None = None
        #: the live-sync watcher, when one runs beside the server
        self.watcher: LiveSync | None = None
        self._stopping = threading.Event()
        self._idle = threading.Condition()
        self._running = 0  # blocking calls in worker threads right now
        self._on_stop: list[Callable[[], None]] = []
        #: the start run (decision 0024): pending until an index run of this server completes
        self.index_on_start = index_on_start and not read_only
        self.start_run = StartRun(self.index_on_start)

    # -- blocking: call these from worker threads ------------------------------------------
    def knowledge_base(self) -> KnowledgeBase:
        with self._open_lock:
            if self._kb is None:
                self._kb = self._open_kb(self.settings)
                if self._stopping.is_set():
                    self._kb.stop_writers()
            return self._kb

    def open_index(self, *, create: bool = False) -> KnowledgeBase:
        """The knowledge base with its index open; ``IndexNotFound`` when there is none yet
        (and ``create`` is false). A read-only runtime never creates one, and opens one
        only at this kb-mcp's schema revision (so opening never migrates it)."""
        if self.read_only:
            if create:
                raise IndexReadOnly(store_location(self.settings), REPLICA_WHY, REPLICA_HINT)
            self._check_replica_schema()
        kb = self.knowledge_base()
        kb.open_index(create=create)  # the container opens (and migrates) it once
        return kb

    def _check_replica_schema(self) -> None:
        """``StoreError`` unless the index is at this kb-mcp's schema revision; the
        migration an older index would need is the writer's job."""
        if self._schema_checked:
            return
        from kbmcp_adapters.app.bootstrap import schema_revisions

        with self._open_lock:
            found, head = schema_revisions(self.settings)
            if found != head:
                raise StoreError(
                    f"the index is at schema revision {found or 'none'} but this read-only "
                    f"server needs {head}; it never migrates the index: run the writer "
                    "(`kb-mcp watch` or `kb-mcp index`) with this kb-mcp version once"
                )
            self._schema_checked = True

    def index_read_only(self) -> bool:
        """Whether this server cannot write its index: a replica (``--read-only``), or an
        index this user may read but not write. False while there is no index (or it
        cannot be opened): the first index run is this server's to make."""
        if self.read_only:
            return True
        try:
            return self.open_index().is_read_only()
        except KbError:
            return False

    def knowledge_base_for_reads(self) -> KnowledgeBase:
        """For ``get_document``, which serves files whether or not an index exists."""
        try:
            return self.open_index()
        except IndexNotFound:
            return self.knowledge_base()

    def ensure_model(self, kb: KnowledgeBase) -> None:
        """Load the embedding model (and open the vector store), saying so on this
        server's log; the knowledge base does it once, whoever asks first."""
        kb.warm_up(announce=log)

    @contextlib.contextmanager
    def tracking(self, *, failures_count: bool = True,
                 observer: Step | None = None) -> Iterator[Progress]:
        """``progress`` while one index run of this server goes on (a rebuild, a live
        sync, the start run): yields the callback to hand to ``KnowledgeBase.index``.
        How the run ended is the start run's to know (``StartRun.ended``): any run that
        completes completes it; ``failures_count=False`` (a ``rebuild_index`` call, which
        fails with ``writer_busy`` while the start run writes) keeps a failure to itself.
        ``observer`` is handed every step too (a ``rebuild_index`` run's record)."""
        started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.progress = {"phase": "scan", "started": started}

        def progress(phase: str, done: int, total: int, path: str) -> None:
            # phase two (ADR 0017) counts chunks embedded; the UI shows it as "index" too
            item = path if phase == "text" else "vectors: chunks embedded"
            self.progress = {"phase": "index", "started": started, "done": done,
                             "total": total, "path": item, "step": phase}
            if observer is not None:
                observer(phase, done, total, path)

        try:
            yield progress
        except Exception as exc:
            if failures_count:
                self.start_run.ended(exc)
            raise
        else:
            self.start_run.ended(None)
        finally:
            self.progress = None

    def indexing(self) -> dict[str, object] | None:
        """While the start run is pending: what it is doing (``StartRun.status``), for
        the tools to answer instead of "no index yet". None otherwise."""
        if self._stopping.is_set():
            return None
        return self.start_run.status(self.progress)

    @property
    def stopping(self) -> bool:
        """The server is going away (``request_stop`` was called)."""
        return self._stopping.is_set()

    def _update_blocking(self, force: bool, *, start: bool,
                         observer: Step | None = None) -> tuple[RunSummary, bool]:
        """One index run (creating the index when there is none): its summary, and
        whether the set of offered documents changed. A rebuild loads the model first
        (its log says so); the start run leaves that to its phase two."""
        kb = self.open_index(create=True)
        before = set(kb.offered_paths())
        if not start:
            self.ensure_model(kb)
        purpose = START_PURPOSE if start else "a rebuild_index call"
        with self.tracking(failures_count=start, observer=observer) as progress:
            summary = kb.index(force=force, purpose=purpose, progress=progress)
        after = set(kb.offered_paths())
        return summary, before != after

    # -- async -----------------------------------------------------------------------------
    async def in_thread(self, func: Callable[[], T], *, abandon_on_cancel: bool = False,
                        limiter: anyio.CapacityLimiter | None = None) -> T:
        """``func`` in a worker thread, counted until it returns (``shutdown`` waits for
        it). ``abandon_on_cancel``: a cancelled caller goes on at once (a background task
        at shutdown), the thread ending at its next safe point. ``limiter``: the lane it
        waits its turn in (``host.Host.in_thread``'s search lane); else anyio's default."""
        return await anyio.to_thread.run_sync(partial(self._counted, func),
                                              abandon_on_cancel=abandon_on_cancel,
                                              limiter=limiter)

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
        return self.runs.running_since()

    def start_rebuild(self, *, force: bool) -> tuple[dict[str, object], IndexRunRecord, bool]:
        """Start a ``rebuild_index`` run in a thread of its own (``IndexRuns.start``), or
        learn the one running; refused on a read-only replica and while the server stops."""
        if self.read_only:
            raise IndexReadOnly(store_location(self.settings), REPLICA_WHY, REPLICA_HINT)
        if self.stopping:
            raise IndexRunStopped("the server is shutting down")
        return self.runs.start(force=force)

    def _rebuild_work(self, force: bool, observer: Step) -> tuple[RunSummary, bool]:
        """One ``rebuild_index`` run (in its own thread, counted: ``IndexRuns``)."""
        return self._update_blocking(force, start=False, observer=observer)

    async def index_at_start(self) -> RunSummary:
        """The start run without a watcher (``start_run.start_index_task``): one
        incremental run that creates the index when there is none, as a rebuild but
        without loading the model first (phase one needs none) and without holding
        ``rebuild``'s slot: a ``rebuild_index`` call meanwhile waits for it as for any
        writer, up to ``[lock].timeout_seconds``, then answers ``writer_busy`` naming it."""
        try:
            summary, offer_changed = await self.in_thread(
                partial(self._update_blocking, False, start=True),
                abandon_on_cancel=True)
        except Exception as exc:  # opening the index failed too: the tools must know (a
            self.start_run.ended(exc)  # cancellation at shutdown is no failure of the run)
            raise
        if offer_changed:
            await self.offer_changed()
        return summary

    def attach_watcher(self, watcher: LiveSync) -> None:
        """A live-sync watcher now runs beside the server: stopped with it, shown by
        ``list_topics``."""
        self.watcher = watcher

    async def offer_changed(self) -> None:
        """The offered documents changed (after a rebuild, or from the watcher)."""
        await self.notifier.resources_changed()

    def on_stop(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (quick, idempotent) as soon as the server starts going away:
        over HTTP a SIGTERM ends the process right after the shutdown."""
        self._on_stop.append(callback)

    def request_stop(self) -> None:
        """The server is going away (the client closed stdin, or a signal): index runs in
        progress stop at their next safe point, and no new one starts."""
        self._stopping.set()
        for callback in self._on_stop:
            callback()
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


__all__ = ["REPLICA_HINT", "REPLICA_WHY", "SHUTDOWN_S", "BackgroundTask", "ChangeNotifier",
           "KbRuntime", "LiveSync"]
