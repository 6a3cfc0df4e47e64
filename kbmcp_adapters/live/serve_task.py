"""Live sync inside ``kb-mcp serve``: the watcher as a background task, its status on disk.

The server's runtime is seen through ``SyncHost`` (structural), so this folder never imports
the MCP server's modules; the CLI hands ``watch_task`` to the server as a background task.
When ``serve`` indexes on start (decision 0024), the watcher's first sync is that run: it
creates a missing index, and the file events that arrive meanwhile wait for the next sync.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.live.watch_status import HEARTBEAT_S, write_status
from kbmcp_adapters.live.watcher import SyncReport, Watcher
from kbmcp_core.index_deps import Progress
from kbmcp_core.settings import Settings

log = logging.getLogger(__name__)

T = TypeVar("T")
#: The watcher starts this long after the server, so `initialize` never waits on its scan.
START_DELAY_S = 1.0


class SyncHost(Protocol):
    """What the watcher task needs of the server it runs in (the MCP ``KbRuntime``)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def index_on_start(self) -> bool:
        """``serve`` builds (or brings up to date) the index as it starts."""
        ...

    def knowledge_base(self) -> KnowledgeBase: ...

    async def in_thread(self, func: Callable[[], T]) -> T: ...

    async def offer_changed(self) -> None: ...

    def attach_watcher(self, watcher: Watcher) -> None: ...

    def tracking(self) -> AbstractContextManager[Progress]: ...


async def watch_task(host: SyncHost) -> None:
    """Keep the index following the folder while the server runs; tell clients when the
    set of offered documents changes."""
    await anyio.sleep(START_DELAY_S)
    kb = await host.in_thread(host.knowledge_base)
    token = anyio.lowlevel.current_token()
    index_dir = host.settings.index_dir

    def synced(report: SyncReport) -> None:
        write_status(index_dir, watcher.status())
        if report.offer_changed:
            anyio.from_thread.run(host.offer_changed, token=token)

    watcher = Watcher(kb, debounce_ms=host.settings.watch_debounce_ms, on_synced=synced,
                      tracking=host.tracking, create_index=host.index_on_start)
    host.attach_watcher(watcher)
    watcher.start()
    log.info("watching %s for changes", host.settings.kb_path)
    try:
        while True:
            await anyio.sleep(HEARTBEAT_S)
            if index_dir.is_dir():
                write_status(index_dir, watcher.status())
    finally:
        with anyio.CancelScope(shield=True):
            started = time.monotonic()
            await anyio.to_thread.run_sync(watcher.stop)
            if index_dir.is_dir():
                write_status(index_dir, {**watcher.status(), "alive": False})
            log.info("watcher stopped in %.1fs", time.monotonic() - started)
