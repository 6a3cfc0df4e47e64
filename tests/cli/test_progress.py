"""Index progress on stderr: labelled with the phase and its counts; without a terminal a
line when a phase starts and ends, and at least every ``every_s`` seconds even while no step
finishes (a fake clock and a short interval here, never a timed assertion)."""

from __future__ import annotations

import io
import time

from kbmcp_cli.progress import IndexProgress


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_at_phase_ends_and_every_interval_by_the_clock() -> None:
    out, clock = io.StringIO(), FakeClock()
    progress = IndexProgress(False, tty=False, every_s=10.0, clock=clock, out=out)
    try:
        for step in range(0, 41):  # one step a second
            clock.now = float(step)
            progress("text", step, 40, f"n{step}.md")
        clock.now = 41.0
        progress("vectors", 0, 80, "")
    finally:
        progress.close()
    lines = out.getvalue().splitlines()
    assert lines == [
        "kb-mcp: indexing: text 0/40 files",
        "kb-mcp: indexing: text 10/40 files",
        "kb-mcp: indexing: text 20/40 files",
        "kb-mcp: indexing: text 30/40 files",
        "kb-mcp: indexing: text 40/40 files",
        "kb-mcp: every file is now searchable by keywords",
        "kb-mcp: indexing: text 40/40 files · vectors 0/80 chunks",
    ]


def test_a_long_step_still_gets_a_line_every_interval() -> None:
    out = io.StringIO()
    progress = IndexProgress(False, tty=False, every_s=0.02, out=out)
    try:
        progress("vectors", 3, 80, "")  # then nothing: a model loading, a huge file
        deadline = time.monotonic() + 30
        while out.getvalue().count("still working") < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        progress.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "kb-mcp: indexing: vectors 3/80 chunks"
    assert lines[1:4] == ["kb-mcp: indexing: vectors 3/80 chunks (still working)"] * 3
    after = out.getvalue()
    assert progress._heartbeat is not None and not progress._heartbeat.is_alive()
    assert out.getvalue() == after  # closed: no more lines


def test_quiet_prints_nothing() -> None:
    out = io.StringIO()
    progress = IndexProgress(True, tty=False, every_s=0.01, out=out)
    progress("text", 0, 3, "")
    progress.close()
    assert out.getvalue() == ""
