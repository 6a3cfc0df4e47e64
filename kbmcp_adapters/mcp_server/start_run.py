"""The index run ``serve`` starts with (decision 0024): what the tools say while it goes on,
and the background task that runs it when no watcher does.

With the watcher on, its first sync is that run (``live/serve_task.py``); without it,
``start_index_task`` runs one incremental index run. Either way the run goes through
``KbRuntime.tracking``, which is how ``StartRun`` learns how each attempt ended.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

import anyio

from kbmcp_adapters.app.in_process_lock import IndexRunStopped
from kbmcp_core.errors import KbError, WriterBusy
from kbmcp_core.models import RunSummary
from kbmcp_core.settings import Settings

log = logging.getLogger(__name__)

#: The start run begins this long after the server, so ``initialize`` never waits on its
#: walk (the watcher's first sync waits as long: ``live.serve_task.START_DELAY_S``).
START_DELAY_S = 1.0
#: Pause (s) before trying again while another writer holds the index: each attempt
#: already waits ``[lock].timeout_seconds`` for it, which may be 0.
RETRY_S = 2.0
#: How the start run names itself to other writers (``WriterBusy`` messages, the lock file).
START_PURPOSE = "the index run kb-mcp serve started with"
#: What an agent is told to do while the start run has not made the folder searchable.
RETRY_HINT = ("search answers by keywords as soon as every file is read (meaning-based "
              "results follow as the vectors are computed); try again in a few seconds")

_DUE, _WAITING, _FAILED = "due", "waiting", "failed"


class StartRun:
    """Whether the start run is still to complete, and why not yet.

    ``due`` from the start until a run of this server completes; ``waiting`` while another
    writer (``kb-mcp index``, ``kb-mcp watch``, another server) holds the index and this
    run waits for it, never fighting it; ``failed`` when the run hit an error, after which
    the tools answer the error they would answer without a start run.
    """

    def __init__(self, enabled: bool) -> None:
        self._state: str | None = _DUE if enabled else None

    @property
    def pending(self) -> bool:
        """The start run has not completed (and has not failed)."""
        return self._state in (_DUE, _WAITING)

    def ended(self, error: BaseException | None) -> None:
        """How one index run of this server ended (None: it completed)."""
        if self._state is None:
            return
        if error is None:
            self._state = None
        elif isinstance(error, WriterBusy):  # the log names the writer; tools do not
            self._state = _WAITING
        elif not isinstance(error, IndexRunStopped):  # a stop is shutdown, not a failure
            self._state = _FAILED

    def status(self, progress: Mapping[str, object] | None) -> dict[str, object] | None:
        """What the tools say instead of "no index yet" while the run is pending: a
        sentence (``status``) and, once files are being read, ``done`` of ``total``."""
        if not self.pending:
            return None
        out: dict[str, object] = {}
        if progress is not None and progress.get("phase") == "index":
            done, total = progress.get("done"), progress.get("total")
            out.update(done=done, total=total)
            if progress.get("step") == "vectors":
                out["status"] = (f"indexing: every file is searchable by keywords; "
                                 f"{done} of {total} chunks embedded")
            else:
                out["status"] = f"indexing: {done} of {total} files"
        elif self._state == _WAITING:  # the next attempt waits for the lock again
            out["status"] = ("indexing: waiting for another process that is writing this "
                             "index (kb-mcp index, kb-mcp watch or another server) to "
                             "finish")
        else:
            out["status"] = "indexing: looking at the files"
        if progress is not None and progress.get("started"):
            out["started"] = progress["started"]
        return out


class StartHost(Protocol):
    """What ``start_index_task`` needs of the server's runtime (``KbRuntime``)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def start_run(self) -> StartRun: ...

    @property
    def stopping(self) -> bool: ...

    async def index_at_start(self) -> RunSummary: ...


async def start_index_task(rt: StartHost) -> None:
    """A background task of ``serve`` without a watcher: one incremental index run shortly
    after the start (the run itself finds what changed: nothing to do costs a walk), tried
    again while another writer holds the index. Stops with the server."""
    await anyio.sleep(START_DELAY_S)
    log.info("indexing %s in the background", rt.settings.kb_path)
    said_busy = False
    while rt.start_run.pending and not rt.stopping:
        try:
            summary = await rt.index_at_start()
        except WriterBusy as exc:  # each attempt waited [lock].timeout_seconds already
            log.log(logging.DEBUG if said_busy else logging.WARNING,
                    "another writer holds the index; this server waits for it: %s", exc)
            said_busy = True
            await anyio.sleep(RETRY_S)
            continue
        except IndexRunStopped:
            return
        except KbError as exc:
            log.warning("the index run serve started with did not complete: %s", exc)
            return
        except Exception:  # never a reason to end the server
            log.exception("the index run serve started with failed")
            return
        log.info("indexed: %s", summary.line())
        return


__all__ = ["RETRY_HINT", "START_PURPOSE", "StartHost", "StartRun", "start_index_task"]
