"""Where the suite's time goes: each test's CPU seconds, logged when ``KB_TEST_CPU_LOG`` is set.

Wall-clock on a shared machine says more about the neighbours than about a test, so this
plugin records what a test costs in CPU: the test process's own user + system time (every
thread, the model's included) and that of the child processes it waited for (a ``kb-mcp``
process, a PostgreSQL server stopped by its fixture), over setup, call and teardown. A
module- or session-scoped fixture is charged to the first test that asks for it.

``KB_TEST_CPU_LOG=/tmp/cpu.tsv pytest tests/e2e`` appends one tab-separated line per test
(``nodeid  wall  cpu_self  cpu_children``); every xdist worker appends to the same file.
Unset, the plugin does nothing. Read the totals with ``python -m tests.cpu_log FILE``.
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
    line = f"{item.nodeid}\t{took:.2f}\t{own1 - own0:.2f}\t{kids1 - kids0:.2f}\n"
    with open(target, "a", encoding="utf-8") as out:
        out.write(line)


def summarize(path: Path, top: int = 40) -> str:
    """The costliest tests and files of a log, by CPU (own + children)."""
    rows: list[tuple[str, float, float, float]] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        name, wall, own, kids = raw.rsplit("\t", 3)
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


if __name__ == "__main__":
    print(summarize(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 40))
