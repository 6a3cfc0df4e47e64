"""The watcher's reader: the thread that follows the folder with watchfiles.

It only collects: every batch of events (or a timeout with none) goes to ``offer``, so the
sync thread sees events while a sync runs. Nothing under the index folder is reported (our
own writes). When watchfiles dies it is restarted with a growing delay, and the first batch
after a restart asks for a full reconciliation (``missed``), which catches what changed
while nothing watched. A name that is not valid UTF-8 breaks the native watcher for good:
from then on the folder is polled (decision 0024).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kbmcp_adapters.live.watch_paths import relative_path

if TYPE_CHECKING:
    from watchfiles import Change

log = logging.getLogger(__name__)

#: Without events the reader still reports this often (ms): the sync thread retries and
#: reconciles on that tick.
TICK_MS = 500
#: Quiet time (ms) that closes a batch early; ``debounce_ms`` is the longest a batch grows.
STEP_MS = 50
#: First and largest wait (s) before the file watcher is started again after it died.
RESTART_BACKOFF_S = (1.0, 60.0)
#: A file watcher that ran this long (s) without failing restarts at the first backoff.
STABLE_S = 30.0
#: How often (ms) the folder is scanned once the watcher polls instead of using the OS.
POLL_MS = 1000
#: watchfiles' message when an event names a path that is not valid UTF-8. From then on
#: that watcher object fails on every call, so it has to be replaced.
_UNDECODABLE = "Unable to decode path"

Changes = set[tuple["Change", str]]


class EventReader:
    """Follows ``root`` (a normalised path) until ``stop`` is set: ``run`` is the thread.

    ``offer`` gets each batch (an empty one on a timeout, and after a failure so the
    periodic reconciliation goes on while the watch is down); ``missed`` is called once the
    watch is back after a failure; ``failed`` reports a failure; ``ready`` is set while the
    OS watch is in place. ``index_rel`` is the index folder relative to the root,
    lower-cased (None: outside it)."""

    def __init__(self, root: str, index_rel: str | None, debounce_ms: int, *,
                 ready: threading.Event, offer: Callable[[Changes], None],
                 missed: Callable[[], None],
                 failed: Callable[[str, BaseException], None]) -> None:
        self._root = root
        self._index_rel = index_rel
        self._debounce_ms = debounce_ms
        self._ready = ready
        self._offer = offer
        self._missed = missed
        self._failed = failed
        #: the OS watch is in place
        self.watching = False
        #: times watchfiles was started again after it died
        self.restarts = 0
        #: the folder is polled (a name that is not valid UTF-8 broke the native watcher)
        self.polling = False
        #: times such a name was met
        self.undecodable = 0
        self._undecodable_at = -STABLE_S

    def run(self, stop: threading.Event) -> None:
        """The reader thread: follows watchfiles, restarting it when it dies."""
        import watchfiles

        delay = RESTART_BACKOFF_S[0]
        missed = False  # the watch was down: what changed meanwhile needs a reconciliation
        while not stop.is_set():
            started = time.monotonic()
            try:
                batches = watchfiles.watch(
                    self._root,
                    watch_filter=self.keep,
                    debounce=self._debounce_ms,
                    step=STEP_MS,
                    stop_event=stop,
                    rust_timeout=TICK_MS,
                    yield_on_timeout=True,
                    raise_interrupt=False,
                    recursive=True,
                    force_polling=self.polling,
                    poll_delay_ms=POLL_MS,
                    debug=False,  # never print on stdout: it carries the MCP protocol
                )
                try:
                    for changes in batches:
                        if not self.watching:
                            self.watching = True
                            self._ready.set()
                            if missed:
                                self._missed()
                                missed = False
                        if time.monotonic() - started >= STABLE_S:
                            delay = RESTART_BACKOFF_S[0]
                        self._offer(changes)
                        if stop.is_set():
                            break
                finally:
                    batches.close()
                if not stop.is_set():
                    raise RuntimeError("the file watcher ended by itself")
            except Exception as exc:
                self.watching = False
                self._ready.clear()
                if stop.is_set():
                    break
                self.restarts += 1
                missed = True
                if _UNDECODABLE in str(exc):
                    wait = self._undecodable_name(str(exc), delay)
                else:
                    wait = delay
                    self._failed(f"file watcher failed ({type(exc).__name__}: {exc}); "
                                 f"restarting in {delay:g}s", exc)
                self._offer(set())  # the periodic reconciliation goes on while it is down
                if wait > 0:
                    if stop.wait(wait):
                        break
                    delay = min(delay * 2, RESTART_BACKOFF_S[1])
        self.watching = False

    def keep(self, _change: Change, path: str) -> bool:
        """The watchfiles filter: nothing inside the index directory (our own writes)."""
        if self._index_rel is None:
            return True
        rel = relative_path(self._root, path)
        if rel is None:
            return True
        low = rel.lower()
        return not (low == self._index_rel or low.startswith(self._index_rel + "/"))

    def _undecodable_name(self, message: str, delay: float) -> float:
        """An event named a path that is not valid UTF-8. watchfiles cannot hand it over,
        and the watcher object that met it fails on every later call, so it is replaced
        by one that polls the folder: reading, opening or listing such a name then goes
        unnoticed, and only a change to it costs another restart. The restart brings a
        full reconciliation, which catches what the lost batch held. Said once (a
        warning); returns how long to wait before the restart."""
        self.undecodable += 1
        now = time.monotonic()
        quick = now - self._undecodable_at >= STABLE_S
        self._undecodable_at = now
        self.polling = True
        if self.undecodable == 1:
            found = re.search(r'path "(.*)" to string', message)
            name = found.group(1) if found else "an entry"
            if name.startswith(self._root + "/"):
                name = name[len(self._root) + 1 :]
            name = re.sub(r"\\x[0-9A-F]{2}", lambda m: m.group(0).lower(), name)  # as the walk
            log.warning(
                "live sync: the file watcher cannot report changes to %s, whose name is "
                "not valid UTF-8; it polls the folder every %gs from now on, and a full "
                "reconciliation picks up what it missed. Renaming the entry avoids this.",
                name,
                POLL_MS / 1000,
            )
        else:
            log.debug("live sync: the file watcher met a name that is not valid UTF-8 again")
        return 0.0 if quick else delay


__all__ = ["POLL_MS", "RESTART_BACKOFF_S", "STABLE_S", "STEP_MS", "TICK_MS", "Changes",
           "EventReader"]
