"""The registry of rebuild_index runs (``IndexRuns``, decision 0034) with a scripted run:
one at a time, progress on one growing scale, how a run ends, what a client is told."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable

import anyio
import anyio.to_thread

from kbmcp_adapters.app.in_process_lock import IndexRunStopped
from kbmcp_adapters.mcp_server.index_runs import KEPT, IndexRuns, Step
from kbmcp_core.errors import WriterBusy
from kbmcp_core.models import RunSummary

DEADLINE = 10.0


class Script:
    """A run that reports the steps it is given, then waits for the test (or fails)."""

    def __init__(self, steps: list[tuple[str, int, int]], error: BaseException | None = None
                 ) -> None:
        self.steps, self.error = steps, error
        self.reported = threading.Event()
        self.release = threading.Event()
        self.announced = 0

    def work(self, force: bool, step: Step) -> tuple[RunSummary, bool]:
        for phase, done, total in self.steps:
            step(phase, done, total, "")
        self.reported.set()
        assert self.release.wait(DEADLINE)
        if self.error is not None:
            raise self.error
        return RunSummary(scanned=3, updated=3), True

    async def offer_changed(self) -> None:
        self.announced += 1


def scripted(body: Callable[[IndexRuns, Script], Awaitable[None]], script: Script) -> None:
    async def main() -> None:
        with anyio.fail_after(DEADLINE):
            await body(IndexRuns(script.work, script.offer_changed), script)

    anyio.run(main)


def test_one_run_at_a_time_with_growing_progress_and_its_summary_at_the_end() -> None:
    script = Script([("text", 0, 3), ("text", 3, 3), ("vectors", 0, 10), ("vectors", 4, 10)])

    async def body(runs: IndexRuns, script: Script) -> None:
        view, run, started = runs.start(force=True)
        assert started and view["state"] == "running" and view["run_id"] == "run-1"
        assert await anyio.to_thread.run_sync(script.reported.wait, DEADLINE)
        again, same, started_again = runs.start(force=False)
        assert not started_again and same is run and again["run_id"] == "run-1"
        _, (done, total), message, ended = runs.snapshot(run)
        assert (done, total, message, ended) == (7, 13, "embedding 4 of 10 chunks", False)
        assert runs.running_since() is not None
        script.release.set()
        assert await anyio.to_thread.run_sync(runs.wait_ended, run, DEADLINE)
        final = runs.view(run)
        assert final["state"] == "finished" and final["updated"] == 3
        assert str(final["message"]).startswith("finished: scanned 3")
        assert script.announced == 1 and runs.running_since() is None
        assert runs.start(force=False)[0]["run_id"] == "run-2"  # free again
        script.release.set()

    scripted(body, script)


def test_a_failed_or_stopped_run_tells_its_code_never_the_server_s_details() -> None:
    for error, state, code in [(WriterBusy("held by pid 7"), "failed", "writer_busy"),
                               (IndexRunStopped(), "stopped", "server_stopping"),
                               (RuntimeError("/srv/secret/path"), "failed", "internal_error")]:
        script = Script([("text", 0, 2)], error)

        async def body(runs: IndexRuns, script: Script, state: str = state,
                       code: str = code) -> None:
            _, run, _ = runs.start(force=False)
            script.release.set()
            assert await anyio.to_thread.run_sync(runs.wait_ended, run, DEADLINE)
            view = runs.view(run)
            assert view["state"] == state and view["error"]["code"] == code  # type: ignore[index]
            assert "/srv/secret" not in str(view) and "updated" not in view
            assert script.announced == 0

        scripted(body, script)


def test_only_the_last_runs_are_kept() -> None:
    script = Script([])
    script.release.set()

    async def body(runs: IndexRuns, script: Script) -> None:
        for _ in range(KEPT + 2):
            _, run, _ = runs.start(force=False)
            assert await anyio.to_thread.run_sync(runs.wait_ended, run, DEADLINE)
        assert runs.get("run-1") is None and runs.get(f"run-{KEPT + 2}") is not None
        assert len(runs.known()) == KEPT
        latest = runs.get()
        assert latest is not None and latest.run_id == f"run-{KEPT + 2}"

    scripted(body, script)
