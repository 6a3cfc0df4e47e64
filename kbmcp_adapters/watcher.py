"""Live sync: a background thread that follows the knowledge base on disk with watchfiles."""

from __future__ import annotations

import bisect
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kbmcp_core.errors import IndexNotFound, WriterBusy
from kbmcp_core.models import RunSummary, extension_of
from kbmcp_core.ports import ExclusionPolicy
from kbmcp_core.settings import IGNORE_FILE_NAME

if TYPE_CHECKING:
    from watchfiles import Change

    from kbmcp_adapters.knowledge_base import KnowledgeBase

log = logging.getLogger(__name__)

#: Without events the thread still wakes this often (ms) to retry and to reconcile.
TICK_MS = 500
#: Quiet time (ms) that closes a batch early; ``debounce_ms`` is the longest a batch grows.
STEP_MS = 50
#: First and largest wait (s) before the file watcher is started again after it died.
RESTART_BACKOFF_S = (1.0, 60.0)
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
    #: the set of offered documents (``kb.servable_paths()``) differs from before the run
    offer_changed: bool
    #: the kb-relative paths the targeted run was given; empty for a full reconciliation
    changed_paths: tuple[str, ...]
    #: a full reconciliation (``kb.index()``) rather than a batch of events
    full: bool = False


def relative_path(root: str, absolute: str) -> str | None:
    """``absolute`` as a POSIX path relative to ``root``; None for the root or outside it."""
    rel = os.path.relpath(os.path.normpath(absolute), root)
    if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return rel.replace(os.sep, "/")


def select_paths(
    root: Path,
    changed: Iterable[str],
    indexed: Sequence[str],
    rules: ExclusionPolicy,
    extensions: Collection[str],
) -> list[str]:
    """The paths a targeted run must look at, from the paths events named.

    A path is kept when something is indexed at or under it (the run then updates or
    removes it, also when the rules now exclude it), or when the walk would look at it:
    a directory the rules do not exclude, or a file with an enabled extension they do not
    exclude. A new second hard link also brings in the indexed names of the same file,
    which the walk now refuses too. ``indexed`` must be sorted.
    """
    chosen: set[str] = set()
    linked: set[tuple[int, int]] = set()
    for rel in changed:
        if _has_indexed(indexed, rel):
            chosen.add(rel)
            continue
        try:
            st = os.lstat(root / rel)
        except OSError:
            continue  # gone, and nothing of it was indexed
        if stat.S_ISDIR(st.st_mode):
            if not rules.is_excluded(rel, is_dir=True):
                chosen.add(rel)
        elif not rules.is_excluded(rel) and extension_of(rel) in extensions:
            chosen.add(rel)
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                linked.add((st.st_dev, st.st_ino))
    if linked:
        chosen.update(_same_file(root, indexed, linked))
    return _outermost(chosen)


def _has_indexed(indexed: Sequence[str], rel: str) -> bool:
    i = bisect.bisect_left(indexed, rel)
    if i < len(indexed) and indexed[i] == rel:
        return True
    j = bisect.bisect_left(indexed, rel + "/")
    return j < len(indexed) and indexed[j].startswith(rel + "/")


def _same_file(root: Path, indexed: Iterable[str], inodes: set[tuple[int, int]]) -> set[str]:
    found: set[str] = set()
    for path in indexed:
        try:
            st = os.lstat(root / path)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in inodes:
            found.add(path)
    return found


def _outermost(paths: set[str]) -> list[str]:
    """Drop paths under another one in the set: a folder target covers what it holds."""
    kept = []
    for path in sorted(paths):
        parts = path.split("/")
        if not any("/".join(parts[:i]) in paths for i in range(1, len(parts))):
            kept.append(path)
    return kept


class Watcher:
    """Keeps ``kb``'s index following its folder, from a background thread.

    Each batch of file events becomes one targeted ``kb.index(paths=...)`` run (the same
    exclusion predicate and single-file routine as the full run); an edit of
    ``.kb-mcpignore``, a restart of the file watcher, the start (``reconcile_on_start``)
    and every ``reconcile_interval_s`` run a full incremental ``kb.index()`` that catches
    whatever no event reported. The watcher never creates an index, it only keeps one.
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        *,
        debounce_ms: int,
        on_synced: Callable[[SyncReport], None] | None = None,
        reconcile_interval_s: float = 300.0,
        reconcile_on_start: bool = True,
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
        self._root = kb.settings.kb_path
        self._root_str = os.path.normpath(str(self._root))
        self._index_rel = _index_dir_within(self._root, kb.settings.index_dir)
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._pending: set[str] = set()
        self._reconcile_due = False
        self._next_reconcile = 0.0
        self._retry_at = 0.0
        self._attempts = 0
        self._watching = False
        self._last_sync: str | None = None
        self._last_reconcile: str | None = None
        self._last_error: str | None = None
        self._last_error_at: str | None = None
        self._restarts = 0
        self._events_seen = 0

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> None:
        """Start watching in a daemon thread (a no-op when already running)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop = threading.Event()
        self._ready.clear()
        self._reconcile_due = self.reconcile_on_start
        self._next_reconcile = time.monotonic() + self.reconcile_interval_s
        self._thread = threading.Thread(target=self._run, name="kb-mcp-watcher", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> bool:
        """Ask the thread to end and wait at most ``timeout`` s; True when it has ended.

        A sync already running finishes first (an index run cannot be interrupted).
        """
        self._stop.set()
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        if thread.is_alive():
            log.warning("the file watcher is still finishing a sync after %gs", timeout)
            return False
        return True

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the OS watch is in place, so every later change is seen."""
        return self._ready.wait(timeout)

    def status(self) -> dict[str, object]:
        """For ``kb-mcp status`` and the server: is it alive, and when did it last sync."""
        thread = self._thread
        return {
            "alive": thread is not None and thread.is_alive() and not self._stop.is_set(),
            "watching": self._watching,
            "last_sync": self._last_sync,
            "last_reconcile": self._last_reconcile,
            "last_error": self._last_error,
            "last_error_at": self._last_error_at,
            "restarts": self._restarts,
            "events_seen": self._events_seen,
            "pending": len(self._pending),
            "debounce_ms": self.debounce_ms,
        }

    # -- the thread ----------------------------------------------------------------
    def _run(self) -> None:
        import watchfiles

        delay = RESTART_BACKOFF_S[0]
        missed = False  # the watch was down: what changed meanwhile needs a reconciliation
        while not self._stop.is_set():
            try:
                batches = watchfiles.watch(
                    self._root_str,
                    watch_filter=self._keep,
                    debounce=self.debounce_ms,
                    step=STEP_MS,
                    stop_event=self._stop,
                    rust_timeout=TICK_MS,
                    yield_on_timeout=True,
                    raise_interrupt=False,
                    recursive=True,
                    debug=False,  # never print on stdout: it carries the MCP protocol
                )
                try:
                    for changes in batches:
                        if not self._watching:
                            self._watching = True
                            self._ready.set()
                            delay = RESTART_BACKOFF_S[0]
                            if missed:
                                self._reconcile_due, missed = True, False
                        self._step(changes)
                        if self._stop.is_set():
                            break
                finally:
                    batches.close()
                if not self._stop.is_set():
                    raise RuntimeError("the file watcher ended by itself")
            except Exception as exc:
                self._watching = False
                self._ready.clear()
                if self._stop.is_set():
                    break
                self._restarts += 1
                missed = True
                self._failed(
                    f"file watcher failed ({type(exc).__name__}: {exc}); restarting in {delay:g}s",
                    exc,
                )
                self._step(set())  # the periodic reconciliation goes on while it is down
                if self._stop.wait(delay):
                    break
                delay = min(delay * 2, RESTART_BACKOFF_S[1])
        self._watching = False

    def _keep(self, _change: Change, path: str) -> bool:
        """The watchfiles filter: nothing inside the index directory (our own writes)."""
        if self._index_rel is None:
            return True
        rel = relative_path(self._root_str, path)
        if rel is None:
            return True
        low = rel.lower()
        return not (low == self._index_rel or low.startswith(self._index_rel + "/"))

    def _step(self, changes: set[tuple[Change, str]]) -> None:
        try:
            fresh = self._take(changes)
            now = time.monotonic()
            if now >= self._next_reconcile:
                self._reconcile_due = True
            due = fresh or now >= self._retry_at
            if self._reconcile_due and due:
                self._sync(full=True)
            elif self._pending and due:
                self._sync(full=False)
        except Exception as exc:  # the loop must go on whatever a sync does
            self._failed(f"live sync step failed ({type(exc).__name__}: {exc})", exc)

    def _take(self, changes: set[tuple[Change, str]]) -> bool:
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
        targets: list[str] | None = None
        try:
            if not full:
                c = kb.container
                indexed, exts = c.store.document_paths(), c.registry.extensions()
                targets = select_paths(self._root, self._pending, indexed, c.rules, exts)
                if not targets:
                    self._pending.clear()
                    return
                if len(targets) > FULL_RUN_OVER:
                    targets, full = None, True  # a checkout or a pull: one walk is cheaper
            before = set(kb.servable_paths())
            summary = kb.index(paths=targets)
            after = set(kb.servable_paths())
        except IndexNotFound as exc:
            self._pending.clear()
            self._reconcile_due = False
            self._next_reconcile = time.monotonic() + self.reconcile_interval_s
            self._note_error(f"not syncing: {exc}")
            log.warning("live sync paused: %s", exc)
            return
        except WriterBusy as exc:
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
                    len(self._pending),
                )
                self._pending.clear()
                self._reconcile_due = False
                self._attempts = 0
                self._next_reconcile = time.monotonic() + self.reconcile_interval_s
            else:
                self._retry_at = time.monotonic() + _backoff(self._attempts)
            return
        self._attempts = 0
        self._pending.clear()  # a full run covers every pending path too
        now = kb.container.clock.now_iso()
        self._last_sync = now
        if full:
            self._reconcile_due = False
            self._last_reconcile = now
            self._next_reconcile = time.monotonic() + self.reconcile_interval_s
        if summary.added or summary.updated or summary.renamed or summary.deleted:
            log.info("live sync: %s", summary.line())
        self._deliver(SyncReport(summary, before != after, tuple(targets or ()), full))

    def _deliver(self, report: SyncReport) -> None:
        if self.on_synced is None:
            return
        try:
            self.on_synced(report)
        except Exception as exc:
            self._failed(f"on_synced callback failed ({type(exc).__name__}: {exc})", exc)

    def _note_error(self, message: str) -> None:
        self._last_error = message
        self._last_error_at = self.kb.container.clock.now_iso()

    def _failed(self, message: str, exc: BaseException) -> None:
        self._note_error(message)
        log.error("%s", message, exc_info=exc)


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
