"""Where the suite's time goes: each test's CPU seconds, logged when ``KB_TEST_CPU_LOG`` is set.

Wall-clock on a shared machine says more about the neighbours than about a test, so this
plugin records what a test costs in CPU: the test process's own user + system time (every
thread, the model's included) and that of the child processes it waited for (a ``kb-mcp``
process, a PostgreSQL server stopped by its fixture), over setup, call and teardown. A
module- or session-scoped fixture is charged to the first test that asks for it.

``KB_TEST_CPU_LOG=/tmp/cpu.tsv pytest tests/e2e`` appends one tab-separated line per test
(``nodeid  wall  cpu_self  cpu_children  worker  start``: the xdist worker's name and the
test's start as a Unix time, for the workers' timelines); every xdist worker appends to the
same file. Unset, the plugin does nothing. Read the totals with ``python -m tests.cpu_log
FILE``; ``python -m tests.cpu_log --costs FILE > tests/file_costs.tsv`` rewrites the table
of each file's seconds that orders the files for the workers (``tests/schedule.py``).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Generator
from pathlib import Path

import pytest

ENV = "KB_TEST_CPU_LOG"


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    target = os.environ.get(ENV)
    if not target:
        yield
        return
    wall0 = time.monotonic()
    own0, kids0 = _cpu()
    yield
    own1, kids1 = _cpu()
    took = time.monotonic() - wall0
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    line = (f"{item.nodeid}\t{took:.2f}\t{own1 - own0:.2f}\t{kids1 - kids0:.2f}"
            f"\t{worker}\t{time.time() - took:.2f}\n")
    with open(target, "a", encoding="utf-8") as out:
        out.write(line)


def summarize(path: Path, top: int = 40) -> str:
    """The costliest tests and files of a log, by CPU (own + children)."""
    rows: list[tuple[str, float, float, float]] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        name, wall, own, kids = raw.split("\t")[:4]
        rows.append((name, float(wall), float(own), float(kids)))
    by_file: dict[str, float] = {}
    for row in rows:
        where = row[0].split("::", 1)[0]
        by_file[where] = by_file.get(where, 0.0) + row[2] + row[3]
    lines = [f"{len(rows)} tests, {sum(r[2] + r[3] for r in rows):.1f} CPU s, "
             f"{sum(r[1] for r in rows):.1f} wall s"]
    lines.append("-- tests by CPU (cpu, own, children, wall)")
    for test, took, mine, theirs in sorted(rows, key=lambda r: -(r[2] + r[3]))[:top]:
        lines.append(f"{mine + theirs:7.1f} {mine:7.1f} {theirs:7.1f} {took:7.1f}  {test}")
    lines.append("-- files by CPU")
    for name, cpu in sorted(by_file.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"{cpu:7.1f}  {name}")
    return "\n".join(lines)


def costs_table(path: Path) -> str:
    """Each test file's seconds in a log, costliest first, as ``tests/file_costs.tsv``.

    A file's cost is what it holds a worker for: the sum of its tests' wall-clock or of
    their CPU seconds, whichever is larger (a test waiting on a server's deadline costs
    wall-clock; under load, a test embedding costs CPU that its wall-clock overstates)."""
    wall: dict[str, float] = {}
    cpu: dict[str, float] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        fields = raw.split("\t")
        where = fields[0].split("::", 1)[0]
        wall[where] = wall.get(where, 0.0) + float(fields[1])
        cpu[where] = cpu.get(where, 0.0) + float(fields[2]) + float(fields[3])
    cost = {name: max(wall[name], cpu[name]) for name in wall}
    lines = ["# seconds<TAB>test file: the order files go to the pytest-xdist workers",
             "# (tests/schedule.py); rewrite with python -m tests.cpu_log --costs LOG"]
    lines += [f"{seconds:.1f}\t{name}" for name, seconds in
              sorted(cost.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if sys.argv[1] == "--costs":
        sys.stdout.write(costs_table(Path(sys.argv[2])))
    else:
        print(summarize(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 40))
