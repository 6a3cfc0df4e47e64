"""The ``rebuild_index`` runs of one server (decision 0034): one at a time, each with an id,
run in a thread of its own that outlives the call that started it, followed by whoever
waits for it and reported by ``index_status``.

A run's progress comes from the tracker every index run of the server goes through
(``KbRuntime.tracking``): the run records each step it is handed, and ``wait_*`` let a
caller (in a worker thread) wait for the run to end or to move on.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

import anyio.from_thread
import anyio.lowlevel

from kbmcp_adapters.app.in_process_lock import IndexRunStopped
from kbmcp_core.errors import KbError
from kbmcp_core.models import RunSummary

log = logging.getLogger(__name__)

RUNNING, FINISHED, FAILED, STOPPED = "running", "finished", "failed", "stopped"
#: Ended runs an ``index_status`` call can still ask for by id (the oldest is forgotten).
KEPT = 16
#: ``step(phase, done, total, item)``: what a run is handed of its progress (as ``Progress``).
Step = Callable[[str, int, int, str], None]
#: ``work(force, step)``: one index run (blocking), its summary and whether the offer changed.
Work = Callable[[bool, Step], tuple[RunSummary, bool]]


def _now() -> datetime:
    return datetime.now(UTC)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class IndexRunRecord:
    """One run: what it is doing now (``phase``, the counts of phase one and two) and,
    once it ended, its summary or the error it ended with. Changed under the registry's
    lock only; ``version`` counts the changes."""

    run_id: str
    force: bool
    started: datetime
    state: str = RUNNING
    phase: str = "scanning"
    files: tuple[int, int] | None = None
    chunks: tuple[int, int] | None = None
    finished: datetime | None = None
    summary: RunSummary | None = None
    error: BaseException | None = None
    version: int = 0

    @property
    def ended(self) -> bool:
        return self.state != RUNNING

    def message(self) -> str:
        """The phase in words: "indexing 12 of 40 files", "embedding 300 of 900 chunks"."""
        if self.state == FINISHED and self.summary is not None:
            return f"finished: {self.summary.line()}"
        if self.state in (FAILED, STOPPED):
            return f"{self.state}: {self.error_pair()[1]}"
        if self.phase == "embedding" and self.chunks is not None:
            return f"embedding {self.chunks[0]:,} of {self.chunks[1]:,} chunks"
        if self.phase == "indexing" and self.files is not None:
            return f"indexing {self.files[0]:,} of {self.files[1]:,} files"
        return "scanning the folder for changes"

    def steps(self) -> tuple[int, int | None]:
        """Progress on one scale for ``notifications/progress``: files read plus chunks
        embedded, of the files plus chunks known so far (None before any is known)."""
        parts = [p for p in (self.files, self.chunks) if p is not None]
        if not parts:
            return 0, None
        return sum(p[0] for p in parts), sum(p[1] for p in parts)

    def view(self) -> dict[str, object]:
        """What ``rebuild_index`` and ``index_status`` answer about this run."""
        done, total = self.steps()
        out: dict[str, object] = {
            "run_id": self.run_id, "state": self.state, "phase": self.phase,
            "message": self.message(), "force": self.force, "started": _stamp(self.started),
            "done": done, "total": total,
            "finished": _stamp(self.finished) if self.finished else None,
        }
        if self.summary is not None:
            out.update(self.summary.as_dict())
        if self.error is not None:
            code, message = self.error_pair()
            out["error"] = {"code": code, "message": message}
        return out

    def error_pair(self) -> tuple[str, str]:
        """The code and the message a client is told of the error the run ended with
        (never a server path: a ``KbError``'s public message)."""
        error = self.error
        if isinstance(error, IndexRunStopped):
            return "server_stopping", ("the server shut down during the run; it stopped "
                                       "between two documents and the next run completes it")
        if isinstance(error, KbError):
            return error.code, error.public_message
        return "internal_error", "the run hit an unexpected error; the server's log says why"


class IndexRuns:
    """The runs of one server: ``start`` one (or learn the one running), ``get`` one by
    id, wait for one to end. ``work`` does the index run; ``offer_changed`` tells the
    clients when the run changed the offered documents (on the event loop the run was
    started from); ``counted`` wraps the whole of a run's thread (in the runtime: counted,
    so shutdown waits for the run to end and say so)."""

    def __init__(self, work: Work, offer_changed: Callable[[], Coroutine[Any, Any, None]],
                 counted: Callable[[Callable[[], None]], None] = lambda body: body()) -> None:
        self._work = work
        self._offer_changed = offer_changed
        self._counted = counted
        self._changed = threading.Condition()
        self._runs: OrderedDict[str, IndexRunRecord] = OrderedDict()
        self._running: IndexRunRecord | None = None
        self._ids = itertools.count(1)

    def start(self, *, force: bool) -> tuple[dict[str, object], IndexRunRecord, bool]:
        """Start a run in a thread of its own, unless one runs: the run's view as it
        starts, the run, and whether it was started by this call (False: it was running).
        Call from the event loop (the run tells the clients there when it ends)."""
        token = anyio.lowlevel.current_token()
        with self._changed:
            if self._running is not None:
                return self._running.view(), self._running, False
            run = IndexRunRecord(f"run-{next(self._ids)}", force, _now())
            self._running = run
            self._runs[run.run_id] = run
            while len(self._runs) > KEPT:
                self._runs.popitem(last=False)
            view = run.view()  # running, whatever the thread does next
        log.info("rebuild_index: %s started%s", run.run_id, " (force)" if force else "")
        threading.Thread(target=self._counted, args=(partial(self._run, run, token),),
                         daemon=True, name=f"kb-mcp-{run.run_id}").start()
        return view, run, True

    def get(self, run_id: str | None = None) -> IndexRunRecord | None:
        """The run ``run_id``; without it the running one, else the latest (None: none)."""
        with self._changed:
            if run_id is not None:
                return self._runs.get(run_id)
            if self._running is not None:
                return self._running
            return next(reversed(self._runs.values()), None)

    def known(self) -> list[str]:
        with self._changed:
            return list(self._runs)

    def running_since(self) -> datetime | None:
        with self._changed:
            return self._running.started if self._running is not None else None

    def view(self, run: IndexRunRecord) -> dict[str, object]:
        with self._changed:
            return run.view()

    def snapshot(self, run: IndexRunRecord) -> tuple[int, tuple[int, int | None], str, bool]:
        """(version, (done, total), message, ended), read at one instant."""
        with self._changed:
            return run.version, run.steps(), run.message(), run.ended

    # -- blocking: call these from worker threads ------------------------------------------
    def wait_ended(self, run: IndexRunRecord, timeout: float | None) -> bool:
        """Wait at most ``timeout`` s (None: no bound) for the run to end; whether it did."""
        with self._changed:
            return self._changed.wait_for(lambda: run.ended, timeout)

    # -- the run's thread -----------------------------------------------------------------
    def _step(self, run: IndexRunRecord) -> Step:
        def step(phase: str, done: int, total: int, _item: str) -> None:
            with self._changed:
                if phase == "text":
                    run.phase, run.files = "indexing", (done, total)
                else:
                    run.phase, run.chunks = "embedding", (done, total)
                run.version += 1
                message = run.message()
            log.debug("rebuild_index: %s %s", run.run_id, message)

        return step

    def _run(self, run: IndexRunRecord, token: anyio.lowlevel.EventLoopToken) -> None:
        try:
            summary, offer_changed = self._work(run.force, self._step(run))
        except BaseException as exc:  # noqa: BLE001 - recorded, then told to the waiters
            self._end(run, None, exc)
            return
        if offer_changed:  # before the run says it ended: a waiter's reply comes after it
            try:
                anyio.from_thread.run(self._offer_changed, token=token)
            except Exception as exc:  # the loop is gone (shutdown): nobody to tell
                log.debug("rebuild_index: %s: could not announce the new offer: %s",
                          run.run_id, exc)
        self._end(run, summary, None)

    def _end(self, run: IndexRunRecord, summary: RunSummary | None,
             error: BaseException | None) -> None:
        with self._changed:
            run.summary, run.error, run.finished = summary, error, _now()
            if error is None:
                run.state = run.phase = FINISHED
            else:
                run.state = STOPPED if isinstance(error, IndexRunStopped) else FAILED
            run.version += 1
            self._running = None
            self._changed.notify_all()
        if summary is not None:
            log.info("rebuild_index: %s finished: %s", run.run_id, summary.line())
        elif isinstance(error, (KbError, IndexRunStopped)):
            log.info("rebuild_index: %s %s: %s", run.run_id, run.state, error)
        else:
            log.error("rebuild_index: %s failed", run.run_id, exc_info=error)


__all__ = ["FAILED", "FINISHED", "KEPT", "RUNNING", "STOPPED", "IndexRunRecord", "IndexRuns",
           "Step", "Work"]
