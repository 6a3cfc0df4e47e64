"""Live sync inside ``kb-mcp serve``: the watcher as a background task, its status on disk."""

from __future__ import annotations

import logging
import time

import anyio
import anyio.from_thread
import anyio.lowlevel

from kbmcp_adapters.live.watch_status import HEARTBEAT_S, write_status
from kbmcp_adapters.live.watcher import SyncReport, Watcher
from kbmcp_adapters.mcp_server.server import KbRuntime

log = logging.getLogger(__name__)

#: The watcher starts this long after the server, so `initialize` never waits on its scan.
START_DELAY_S = 1.0


async def watch_task(rt: KbRuntime) -> None:
    """Keep the index following the folder while the server runs; tell clients when the
    set of offered documents changes."""
    await anyio.sleep(START_DELAY_S)
    kb = await rt.in_thread(rt.knowledge_base)
    token = anyio.lowlevel.current_token()
    index_dir = rt.settings.index_dir

    def synced(report: SyncReport) -> None:
        write_status(index_dir, watcher.status())
        if report.offer_changed:
            anyio.from_thread.run(rt.offer_changed, token=token)

    watcher = Watcher(kb, debounce_ms=rt.settings.watch_debounce_ms, on_synced=synced)
    rt.watcher = watcher
    watcher.start()
    log.info("watching %s for changes", rt.settings.kb_path)
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
