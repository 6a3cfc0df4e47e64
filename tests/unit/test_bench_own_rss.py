"""A benchmark child's peak RSS is its own (decision 0045): Linux carries the parent's
resident memory into a child's ``ru_maxrss`` at fork and exec, so a searching process
started by a step that had just built 100,000 vectors in memory reported the step's
1,152 MB instead of its own ~400 MB. Children report ``VmHWM`` instead."""

from __future__ import annotations

import sys

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
