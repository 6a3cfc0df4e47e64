"""``kb-mcp watch``: the headless writer. Index the folder (each collection's), then follow
it until a signal: one watcher and one writer lock per collection."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click

from kbmcp_cli.options import collection_option, kb_options, setup_logging

if TYPE_CHECKING:
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase
    from kbmcp_adapters.live.watcher import SyncReport, Watcher

log = logging.getLogger("kbmcp_cli.watch")

#: After a signal, the longest wait (s) for a sync in progress to reach a safe point.
SHUTDOWN_S = 20.0


class _Signals:
    """SIGINT and SIGTERM set ``stop``; a second one ends the process at once."""

    def __init__(self) -> None:
        self.stop = threading.Event()

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.stop.is_set():
            _exit_now(f"second {signal.Signals(signum).name}: exiting at once", 1)
        log.info("%s: stopping (the index stays consistent; the next run completes "
                 "any sync cut short)", signal.Signals(signum).name)
        self.stop.set()


def _exit_now(message: str, code: int) -> None:
    """End the process without waiting for native threads (the model, the vector store)."""
    log.warning("%s", message)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


@click.command()
@kb_options
@collection_option
@click.option("--verbose", "-v", is_flag=True, help="Debug logging (on stderr).")
@click.option("--quiet", "-q", is_flag=True, help="Only errors on stderr.")
def watch(kb_path: Path | None, config: Path | None, verbose: bool, quiet: bool,
          collection_names: tuple[str, ...]) -> None:
    """Index the knowledge base, then keep the index following the folder.

    The headless writer, for the one machine that holds the files when readers run
    elsewhere (`kb-mcp serve --read-only` against a shared store): the same watcher and
    reconciliation as `kb-mcp serve`, without serving anything. Each sync is logged on
    stderr. Runs until SIGINT or SIGTERM, then exits 0. Exits 1 when another writer holds
    the index past [lock].timeout_seconds (the message names it) or the store cannot be
    reached or read, 2 when it cannot start as asked (bad configuration, an index it may
    not write). With [[collections]] it follows every collection (or those --collection
    names), each with its own watcher and writer lock.
    """
    from kbmcp_adapters.app.bootstrap import settings_for
    from kbmcp_adapters.app.collections import open_collections

    settings = settings_for(kb_path, config)
    setup_logging(quiet=quiet, verbose=verbose)
    if not quiet and not verbose:
        for name in ("kbmcp_cli", "kbmcp_adapters"):
            logging.getLogger(name).setLevel(logging.INFO)
        logging.getLogger("watchfiles").setLevel(logging.WARNING)
    collections = open_collections(settings)
    try:
        names = (collections.resolve(list(collection_names)) if collection_names
                 else collections.names)
    except BaseException:
        collections.close()
        raise
    signals = _Signals()
    signals.install()

    from kbmcp_adapters.app.knowledge_base import IndexRunStopped
    from kbmcp_cli.progress import IndexProgress
    from kbmcp_core.errors import StoreError

    several = collections.several  # each log line names its collection
    kbs = {name: collections.kb(name) for name in names}
    try:
        for name, kb in kbs.items():  # one after the other: one model, two cores
            progress = IndexProgress(quiet)
            try:
                log.info("indexing %s", kb.settings.kb_path)
                summary = kb.index(progress=progress, stop=signals.stop,
                                   purpose="kb-mcp watch")
            finally:
                progress.close()
            if several:
                log.info("indexed collection %s: %s", name, summary.line())
            else:
                log.info("indexed: %s", summary.line())
    except IndexRunStopped:
        log.info("stopped before the first index run finished; the next run completes it")
        collections.close()
        return
    except StoreError as exc:  # an unreachable or damaged store: a failure while running
        collections.close()
        click.echo(f"kb-mcp: error: {exc}", err=True)
        sys.exit(1)
    except BaseException:
        collections.close()
        raise
    try:
        _follow(kbs, signals.stop, several)
    finally:
        collections.close()


def _follow(kbs: dict[str, KnowledgeBase], stop: threading.Event, several: bool) -> None:
    """Run one live-sync watcher per knowledge base until ``stop`` is set, keeping each
    one's status file (in its own index folder) fresh."""
    from kbmcp_adapters.live.watch_status import HEARTBEAT_S
    from kbmcp_adapters.live.watcher import Watcher
    from kbmcp_adapters.local_search.server import LocalSearchServer, knowledge_base_search

    watchers: dict[str, Watcher] = {}
    locals_: list[LocalSearchServer] = []
    for name, kb in kbs.items():
        # reconcile_on_start: changes made between the first run and the watch being in
        # place are caught by one incremental run (unchanged files cost a hash).
        watchers[name] = watcher = Watcher(kb, debounce_ms=kb.settings.watch_debounce_ms,
                                           on_synced=_on_synced(name, kb, watchers, several))
        watcher.start()
        local = LocalSearchServer.start(kb.settings, knowledge_base_search(kb))  # 0018
        if local is not None:
            locals_.append(local)
        what = f"collection {name} ({kb.settings.kb_path})" if several else kb.settings.kb_path
        log.info("watching %s for changes (stop with Ctrl-C or SIGTERM)", what)
    while not stop.wait(HEARTBEAT_S):
        for name, watcher in watchers.items():
            _write(kbs[name], watcher.status())
    started = time.monotonic()
    for local in locals_:
        local.close()
    for kb in kbs.values():
        kb.stop_writers()
    deadline = started + SHUTDOWN_S
    for watcher in watchers.values():
        watcher.request_stop()
    for name, watcher in watchers.items():
        if not watcher.stop(timeout=max(0.0, deadline - time.monotonic())):
            _exit_now(f"the sync in progress did not stop within {SHUTDOWN_S:g}s; exiting "
                      "without waiting for it (the next run completes what it left)", 0)
        _write(kbs[name], {**watcher.status(), "alive": False})
    log.info("watcher stopped in %.1fs", time.monotonic() - started)


def _write(kb: KnowledgeBase, status: dict[str, object]) -> None:
    """The watcher's status file in ``kb``'s index folder (read by ``kb-mcp status``)."""
    from kbmcp_adapters.live.watch_status import write_status

    if kb.settings.index_dir.is_dir():
        write_status(kb.settings.index_dir, status)


def _on_synced(name: str, kb: KnowledgeBase, watchers: dict[str, Watcher],
               several: bool) -> Callable[[SyncReport], None]:
    """After each sync: the collection's status file, and with several collections a line
    saying which one a sync that changed something was in."""

    def synced(report: SyncReport) -> None:
        watcher = watchers.get(name)
        if watcher is not None:
            _write(kb, watcher.status())
        summary = report.summary
        if several and (summary.added or summary.updated or summary.renamed or summary.deleted):
            log.info("collection %s synced: %s", name, summary.line())

    return synced
