"""A benchmark child's peak RSS is its own (decision 0045): Linux carries the parent's
resident memory into a child's ``ru_maxrss`` at fork and exec, so a searching process
started by a step that had just built 100,000 vectors in memory reported the step's
1,152 MB instead of its own ~400 MB. Children report ``VmHWM`` instead."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from benchmarks import measure
from benchmarks.measure import run_child

CHILD = ("from benchmarks.measure import write_result; "
         "write_result({'small': len(b'x' * (8 << 20))})")


def test_a_child_of_a_big_parent_reports_its_own_peak_not_the_parents() -> None:
    held = b"\1" * (300 << 20)  # the parent holds 300 MB, every page touched
    child = run_child([sys.executable, "-c", CHILD], timeout=120)
    assert len(held) == 300 << 20
    own = child.data["own_peak_rss_mb"]
    assert own is not None and own < 150, own  # an interpreter and 8 MB
    # what wait4 says includes the parent's memory: the figure the rows no longer use
    assert child.max_rss_mb > 300 > own


def test_a_stopped_bench_kills_and_reaps_its_child(monkeypatch: pytest.MonkeyPatch) -> None:
    # a bench stopped by Ctrl-C or SIGTERM while a child runs (an index of a million chunks)
    # must not leave that child running on the machine
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])

    def interrupted(_: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(time, "sleep", interrupted)  # the wait between two polls
    with pytest.raises(KeyboardInterrupt):
        measure._wait4(child, time.perf_counter() + 60)
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)  # killed and already reaped
