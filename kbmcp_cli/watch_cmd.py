"""``kb-mcp watch``: the headless writer. Index the folder, then follow it until a signal."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click

from kbmcp_cli.options import kb_options, setup_logging

if TYPE_CHECKING:
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase

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
@click.option("--verbose", "-v", is_flag=True, help="Debug logging (on stderr).")
@click.option("--quiet", "-q", is_flag=True, help="Only errors on stderr.")
def watch(kb_path: Path | None, config: Path | None, verbose: bool, quiet: bool) -> None:
    """Index the knowledge base, then keep the index following the folder.

    The headless writer, for the one machine that holds the files when readers run
    elsewhere (`kb-mcp serve --read-only` against a shared store): the same watcher and
    reconciliation as `kb-mcp serve`, without serving anything. Each sync is logged on
    stderr. Runs until SIGINT or SIGTERM, then exits 0. Exits 1 when another writer holds
    the index past [lock].timeout_seconds (the message names it) or the store cannot be
    reached or read, 2 when it cannot start as asked (bad configuration, an index it may
    not write).
    """
    from kbmcp_adapters.app.bootstrap import settings_for

    settings = settings_for(kb_path, config)
    setup_logging(quiet=quiet, verbose=verbose)
    if not quiet and not verbose:
        for name in ("kbmcp_cli", "kbmcp_adapters"):
            logging.getLogger(name).setLevel(logging.INFO)
        logging.getLogger("watchfiles").setLevel(logging.WARNING)
    signals = _Signals()
    signals.install()

    from kbmcp_adapters.app.knowledge_base import IndexRunStopped, KnowledgeBase
    from kbmcp_cli.progress import IndexProgress
    from kbmcp_core.errors import StoreError

    kb = KnowledgeBase.from_settings(settings)
    progress = IndexProgress(quiet)
    try:
        log.info("indexing %s", settings.kb_path)
        summary = kb.index(progress=progress, stop=signals.stop, purpose="kb-mcp watch")
        log.info("indexed: %s", summary.line())
    except IndexRunStopped:
        log.info("stopped before the first index run finished; the next run completes it")
        kb.close()
        return
    except StoreError as exc:  # an unreachable or damaged store: a failure while running
        kb.close()
        click.echo(f"kb-mcp: error: {exc}", err=True)
        sys.exit(1)
    finally:
        progress.close()
    _follow(kb, signals.stop)


def _follow(kb: KnowledgeBase, stop: threading.Event) -> None:
    """Run the live-sync watcher until ``stop`` is set, keeping its status file fresh."""
    from kbmcp_adapters.live.watch_status import HEARTBEAT_S, write_status
    from kbmcp_adapters.live.watcher import SyncReport, Watcher

    index_dir = kb.settings.index_dir

    def synced(_report: SyncReport) -> None:
        if index_dir.is_dir():
            write_status(index_dir, watcher.status())

    # reconcile_on_start: changes made between the first run and the watch being in place
    # are caught by one incremental run (unchanged files cost a hash).
    watcher = Watcher(kb, debounce_ms=kb.settings.watch_debounce_ms, on_synced=synced)
    watcher.start()
    from kbmcp_adapters.local_search.server import LocalSearchServer, knowledge_base_search

    local = LocalSearchServer.start(kb.settings, knowledge_base_search(kb))  # decision 0018
    log.info("watching %s for changes (stop with Ctrl-C or SIGTERM)", kb.settings.kb_path)
    while not stop.wait(HEARTBEAT_S):
        if index_dir.is_dir():
            write_status(index_dir, watcher.status())
    started = time.monotonic()
    if local is not None:
        local.close()
    kb.stop_writers()
    if not watcher.stop(timeout=SHUTDOWN_S):
        _exit_now(f"the sync in progress did not stop within {SHUTDOWN_S:g}s; exiting "
                  "without waiting for it (the next run completes what it left)", 0)
    if index_dir.is_dir():
        write_status(index_dir, {**watcher.status(), "alive": False})
    kb.close()
    log.info("watcher stopped in %.1fs", time.monotonic() - started)
