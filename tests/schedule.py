"""The order test files reach the workers: the costliest first (decision 0038, addendum).

Under ``pytest -n N --dist loadfile`` each test file runs whole on one worker, and the
controller hands files out in the order it has them. By default pytest-xdist sorts them by
how many tests they hold, most first, so the files with a few long end-to-end tests (a
corpus indexed, servers started) came last, and a long one handed out at the very end kept
one worker busy while the other sat idle. This plugin puts the files in the order of a measured
cost instead: ``tests/file_costs.tsv`` (seconds, a tab, the file), written from a
``KB_TEST_CPU_LOG`` log by ``python -m tests.cpu_log --costs LOG``. A file the table does not
know yet runs first (its cost is unknown, so it may be long). Within a file the tests keep
their order. Without xdist (one process) nothing is reordered.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

#: the table, relative to the rootdir (where the test ids start)
COSTS = Path("tests") / "file_costs.tsv"


def read_costs(path: Path) -> dict[str, float]:
    """The table: test file (relative to the repository) -> seconds. Missing: empty."""
    if not path.exists():
        return {}
    costs: dict[str, float] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        try:
            seconds, name = raw.split("\t")
            costs[name] = float(seconds)
        except ValueError:
            raise pytest.UsageError(
                f"{path}:{number}: expected 'seconds<TAB>test file', got {raw!r}; rewrite the "
                "table with python -m tests.cpu_log --costs LOG") from None
    return costs


def file_order(files: Sequence[str], costs: Mapping[str, float]) -> list[str]:
    """``files`` (each once, in collection order) costliest first; unknown ones before all
    known ones; ties keep the collection order."""
    unknown = float("inf")
    return sorted(files, key=lambda name: -costs.get(name, unknown))


def _file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def pytest_configure(config: pytest.Config) -> None:
    # xdist's own reordering (by number of tests) would undo the cost order below
    if getattr(config.option, "dist", "no") == "loadfile":
        config.option.loadscopereorder = False


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return
    files = list(dict.fromkeys(_file_of(item) for item in items))
    costs = read_costs(config.rootpath / COSTS)
    rank = {name: i for i, name in enumerate(file_order(files, costs))}
    items.sort(key=lambda item: rank[_file_of(item)])
