"""A stop that takes effect on the last step of phase one (Ctrl-C, SIGTERM, a server shutting
down just as the last file's rows commit) leaves an index that is ready for keyword search:
every document is in, so only vectors are left for the next run, and `doctor` reports no
"index-incomplete" (tests/e2e/test_watch_cmd.py's signal tests meet this moment by chance)."""

from __future__ import annotations

import pytest

from kbmcp_core.index_deps import index_ready
from kbmcp_core.index_run import IndexRun
from tests.fakes import FakeFileSystem, FakeIndexStore, fake_deps


class Stop(Exception):
    pass


def test_a_stop_on_the_last_step_of_phase_one_leaves_a_ready_index() -> None:
    fs = FakeFileSystem({f"n{i}.md": f"# Note {i}\nword{i} text\n".encode() for i in range(4)})
    store = FakeIndexStore()
    deps = fake_deps(fs, store=store)
    seen: list[tuple[str, int, int]] = []

    def progress(phase: str, done: int, total: int, item: str) -> None:
        seen.append((phase, done, total))
        if phase == "text" and done == total and total:
            raise Stop  # what the run's stop check does at a report

    with pytest.raises(Stop):
        IndexRun(deps, progress=progress).run()
    assert ("text", 4, 4) in seen
    assert len(store.document_paths()) == 4  # every document is in: keyword search covers them
    assert index_ready(store)
