"""Live sync: a background thread that follows the knowledge base on disk with watchfiles."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kbmcp_adapters.app.in_process_lock import IndexRunStopped
from kbmcp_adapters.live.watch_events import TICK_MS, Changes, EventReader
from kbmcp_adapters.live.watch_paths import relative_path, select_paths
from kbmcp_core.errors import IndexNotFound, IndexReadOnly, StoreError, WriterBusy
from kbmcp_core.models import RunSummary
from kbmcp_core.settings import IGNORE_FILE_NAME

if TYPE_CHECKING:
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase
    from kbmcp_core.index_deps import Progress

log = logging.getLogger(__name__)

#: First and largest wait (s) before a failed sync is tried again without new events.
RETRY_BACKOFF_S = (1.0, 60.0)
#: A batch naming more paths than this is synced with one full incremental run instead.
FULL_RUN_OVER = 500
#: A sync failing this many times in a row (other than WriterBusy) is given up until the
#: next reconciliation, so a broken index is not retried in a tight loop.
MAX_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What one sync did; handed to ``on_synced`` after every successful index run."""

    summary: RunSummary
    #: the set of offered documents (``kb.offered_paths()``) differs from before the run
    offer_changed: bool
    #: the kb-relative paths the targeted run was given; empty for a full reconciliation
    changed_paths: tuple[str, ...]
    #: a full reconciliation (``kb.index()``) rather than a batch of events
    full: bool = False


class Watcher:
    """Keeps ``kb``'s index following its folder, from a background thread.

    Each batch of file events becomes one targeted ``kb.index(paths=...)`` run (the same
    exclusion predicate and single-file routine as the full run); an edit of
    ``.kb-mcpignore``, a restart of the file watcher, the start (``reconcile_on_start``)
    and every ``reconcile_interval_s`` run a full incremental ``kb.index()`` that catches
    whatever no event reported. The watcher never creates an index, it only keeps one,
    unless ``create_index`` (``serve``'s start run, decision 0024): then its full runs
    create a missing index, so its first sync is the first index run.

    Two threads: a reader follows watchfiles and only collects events (into ``_pending``,
    under ``_wake``), so events are seen while a sync runs; the sync thread runs one
    index run at a time. A run's phase two hands over (ends between two embedding calls)
    as soon as events are waiting; the next run writes their rows first, then continues
    phase two (ADR 0017, "Where phase two runs").
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        *,
        debounce_ms: int,
        on_synced: Callable[[SyncReport], None] | None = None,
        reconcile_interval_s: float = 300.0,
        reconcile_on_start: bool = True,
        tracking: Callable[[], AbstractContextManager[Progress]] | None = None,
        create_index: bool = False,
    ) -> None:
        if debounce_ms < 1:
            raise ValueError("debounce_ms must be at least 1")
        if reconcile_interval_s <= 0:
            raise ValueError("reconcile_interval_s must be positive")
        self.kb = kb
        self.debounce_ms = debounce_ms
        self.on_synced = on_synced
        self.reconcile_interval_s = reconcile_interval_s
        self.reconcile_on_start = reconcile_on_start
        #: the server's progress tracker (what /ui shows while a sync runs), if any
        self.tracking = tracking
        #: a full run may create a missing index (``serve``'s start run)
        self.create_index = create_index
        self._root = kb.settings.kb_path
        self._root_str = os.path.normpath(str(self._root))
        self._stop = threading.Event()
        self._ready = threading.Event()
        #: follows the folder in the reader thread (``watch_events``)
        self._events = EventReader(
            self._root_str, _index_dir_within(self._root, kb.settings.index_dir),
            debounce_ms, ready=self._ready, offer=self._offer, missed=self._missed,
            failed=self._failed)
        #: the sync thread (``_run``) and the event reader (``EventReader.run``)
        self._thread: threading.Thread | None = None
        self._reader: threading.Thread | None = None
        #: guards what both threads touch: ``_pending``, ``_reconcile_due``, the tick
        self._wake = threading.Condition()
        self._ticked = False  # the reader reported (a batch or a timeout) since last look
        self._fresh = False  # ... and that report held events
        self._heard = False  # the reader has reported at least once since the start
        #: the last run handed phase two over: a run must continue it even when the
        #: events that caused it need no run of their own
        self._resume = False
        self._pending: set[str] = set()
        self._reconcile_due = False
        self._next_reconcile = 0.0
        self._retry_at = 0.0
        self._attempts = 0
        self._last_sync: str | None = None
        self._last_reconcile: str | None = None
        self._last_error: str | None = None
        self._last_error_at: str | None = None
        self._events_seen = 0

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> None:
        """Start watching in a daemon thread (a no-op when already running)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop = threading.Event()
        self._ready.clear()
        with self._wake:
            self._reconcile_due = self.reconcile_on_start
            self._ticked = self._fresh = self._heard = False
        self._next_reconcile = time.monotonic() + self.reconcile_interval_s
        self._reader = threading.Thread(target=self._events.run, args=(self._stop,),
                                        name="kb-mcp-watch-events", daemon=True)
        self._thread = threading.Thread(target=self._run, name="kb-mcp-watcher", daemon=True)
        self._reader.start()
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> bool:
        """Ask the thread to end and wait at most ``timeout`` s; True when it has ended.

        A sync in progress stops at its next safe point (between two documents or two
        embedding calls); the next run, or the next start's reconciliation, completes it.
        """
        self.request_stop()
        deadline = time.monotonic() + timeout
        for thread in (self._thread, self._reader):
            if thread is not None:
                thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread is not None and self._thread.is_alive():
            log.warning("the file watcher is still in a sync after %gs", timeout)
            return False
        if self._reader is not None and self._reader.is_alive():
            log.warning("the file watcher did not end within %gs", timeout)
            return False
        return True

    def request_stop(self) -> None:
        """Ask the thread to end without waiting (``stop`` waits)."""
        self._stop.set()
        with self._wake:
            self._wake.notify_all()

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the OS watch is in place, so every later change is seen."""
        return self._ready.wait(timeout)

    def status(self) -> dict[str, object]:
        """For ``kb-mcp status`` and the server: is it alive, and when did it last sync."""
        alive = all(t is not None and t.is_alive() for t in (self._thread, self._reader))
        return {
            "alive": alive and not self._stop.is_set(),
            "watching": self._events.watching,
            "last_sync": self._last_sync,
            "last_reconcile": self._last_reconcile,
            "last_error": self._last_error,
            "last_error_at": self._last_error_at,
            "restarts": self._events.restarts,
            "polling": self._events.polling,
            "undecodable_names": self._events.undecodable,
            "events_seen": self._events_seen,
            "pending": len(self._pending),
            "debounce_ms": self.debounce_ms,
        }

    # -- the threads ---------------------------------------------------------------
    def _run(self) -> None:
        """The sync thread: after each report of the reader (or every tick), one step."""
        while not self._stop.is_set():
            with self._wake:
                self._wake.wait_for(lambda: self._ticked or self._stop.is_set(),
                                    TICK_MS / 1000)
                heard, fresh = self._heard, self._fresh
                self._ticked = self._fresh = False
            if self._stop.is_set():
                break
            if heard:  # not before the watch is in place (or has failed once)
                self._step(fresh)

    def _offer(self, changes: Changes) -> None:
        """From the reader: note the events and wake the sync thread."""
        with self._wake:
            try:
                fresh = self._take(changes)
            except Exception as exc:  # never a reason to restart the file watcher
                fresh = False
                self._failed(f"live sync step failed ({type(exc).__name__}: {exc})", exc)
            self._ticked = self._heard = True
            self._fresh = self._fresh or fresh
            self._wake.notify_all()

    def _missed(self) -> None:
        """From the reader, when the watch is back after a failure: reconcile."""
        with self._wake:
            self._reconcile_due = True

    def _step(self, fresh: bool) -> None:
        try:
            now = time.monotonic()
            with self._wake:
                if now >= self._next_reconcile:
                    self._reconcile_due = True
                reconcile, pending = self._reconcile_due, bool(self._pending)
            due = fresh or now >= self._retry_at
            if reconcile and due:
                self._sync(full=True)
            elif (pending or self._resume) and due:
                self._sync(full=False)
        except Exception as exc:  # the loop must go on whatever a sync does
            self._failed(f"live sync step failed ({type(exc).__name__}: {exc})", exc)

    def _waiting(self) -> bool:
        """The runs' ``yield_to``: file events arrived since the sync started."""
        with self._wake:
            return bool(self._pending) or self._reconcile_due

    def _take(self, changes: Changes) -> bool:
        """Under ``_wake``: the kb-relative paths of ``changes`` join ``_pending``."""
        for _change, path in changes:
            rel = relative_path(self._root_str, path)
            if rel is None:
                continue
            if rel == IGNORE_FILE_NAME:
                log.info("%s changed: applying its rules everywhere", IGNORE_FILE_NAME)
                self._reconcile_due = True
            else:
                self._pending.add(rel)
        self._events_seen += len(changes)  # after the paths: status never shows them lost
        return bool(changes)

    def _sync(self, *, full: bool) -> None:
        kb = self.kb
        with self._wake:  # what arrives from now on is the next sync's (and a hand-over)
            taken, self._pending = self._pending, set()
            if full:
                self._reconcile_due = False
        targets: list[str] | None = None
        handed_over = False

        def yield_to() -> bool:
            nonlocal handed_over
            handed_over = self._waiting()
            return handed_over

        try:
            if not full:
                targets = select_paths(self._root, taken, kb.indexed_paths(),
                                       kb.exclusion_rules(), kb.enabled_extensions())
                if not targets and not self._resume:
                    return
                if len(targets) > FULL_RUN_OVER:
                    targets, full = None, True  # a checkout or a pull: one walk is cheaper
            with self.tracking() if self.tracking else contextlib.nullcontext() as progress:
                if full and self.create_index:  # its failure is the tracker's to see too
                    kb.open_index(create=True)
                before = set(kb.offered_paths())
                summary = kb.index(paths=targets, stop=self._stop, progress=progress,
                                   purpose="the live-sync watcher", yield_to=yield_to)
            after = set(kb.offered_paths())
        except (IndexNotFound, IndexReadOnly) as exc:  # until the next reconciliation
            with self._wake:
                self._pending.clear()
                self._reconcile_due = False
            self._resume = False
            self._next_reconcile = time.monotonic() + self.reconcile_interval_s
            self._note_error(f"not syncing: {exc}")
            log.warning("live sync paused: %s", exc)
            return
        except IndexRunStopped:
            self._put_back(taken, full)
            log.info("live sync stopped in the middle of a sync; the next one completes it")
            return
        except WriterBusy as exc:
            self._put_back(taken, full)
            self._attempts += 1
            self._retry_at = time.monotonic() + _backoff(self._attempts)
            self._note_error(str(exc))
            log.warning("live sync waiting for the index: %s", exc)
            return
        except Exception as exc:
            self._attempts += 1
            self._failed(f"live sync failed ({type(exc).__name__}: {exc})", exc)
            if self._attempts >= MAX_ATTEMPTS:
                log.error(
                    "giving up on %d changed path(s) until the next reconciliation",
                    len(taken),
                )
                self._attempts = 0
                self._resume = False  # the reconciliation's run completes phase two
                self._next_reconcile = time.monotonic() + self.reconcile_interval_s
            else:
                self._put_back(taken, full)
                self._retry_at = time.monotonic() + _backoff(self._attempts)
            return
        self._attempts = 0
        self._resume = handed_over  # a run that did not hand over embedded every chunk
        now = kb.now_iso()
        self._last_sync = now
        if full:
            self._last_reconcile = now
            self._next_reconcile = time.monotonic() + self.reconcile_interval_s
        if summary.added or summary.updated or summary.renamed or summary.deleted:
            log.info("live sync: %s", summary.line())
        if handed_over:
            log.info("live sync: new changes arrived during phase two; their text is "
                     "indexed first, then phase two goes on")
        self._deliver(SyncReport(summary, before != after, tuple(targets or ()), full))

    def _put_back(self, taken: set[str], full: bool) -> None:
        """A sync that did not complete: its paths (and reconciliation) are due again."""
        with self._wake:
            self._pending |= taken
            if full:
                self._reconcile_due = True

    def _deliver(self, report: SyncReport) -> None:
        if self.on_synced is None:
            return
        try:
            self.on_synced(report)
        except Exception as exc:
            self._failed(f"on_synced callback failed ({type(exc).__name__}: {exc})", exc)

    def _note_error(self, message: str) -> None:
        self._last_error = message
        self._last_error_at = self.kb.now_iso()

    def _failed(self, message: str, exc: BaseException) -> None:
        self._note_error(message)
        # a failure kb-mcp knows (a store down) is one line; a traceback only at debug
        known = isinstance(exc, StoreError) and not log.isEnabledFor(logging.DEBUG)
        log.error("%s", message, exc_info=None if known else exc)


def _backoff(attempt: int) -> float:
    first, largest = RETRY_BACKOFF_S
    return float(min(first * 2 ** min(attempt - 1, 16), largest))


def _index_dir_within(root: Path, index_dir: Path) -> str | None:
    """The index directory relative to the root, lower-cased like the exclusion rules."""
    try:
        rel = index_dir.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None
    return rel.lower() if rel not in ("", ".") else None


__all__ = ["SyncReport", "Watcher", "relative_path", "select_paths"]
