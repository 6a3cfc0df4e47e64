"""When an index is *ready*: a whole-folder run has ended phase one (every file searchable by
keywords) at least once. Runs that stop earlier, watcher runs over a few paths, and indexes
left by a run that wrote nothing are not; indexes from before the mark that hold a model or
a summary are."""

from __future__ import annotations

import pytest

from kbmcp_core import index_run
from kbmcp_core.index_deps import IndexDeps, index_ready
from kbmcp_core.index_run import run_index
from kbmcp_core.meta_keys import META_MODEL, META_READY
from kbmcp_core.models import DiskScan, Refusal
from kbmcp_core.ports import HashNeeded
from tests.fakes import FakeFileSystem, FakeScanner, fake_deps


class Stop(Exception):
    """Stands in for the shutdown that ends a run at a safe point."""


@pytest.fixture
def world() -> IndexDeps:
    return fake_deps(FakeFileSystem({f"n{i}.md": f"# N{i}\nword{i} text\n".encode()
                                     for i in range(5)}))


def test_a_fresh_index_becomes_ready_when_phase_one_of_a_whole_run_ends(
    world: IndexDeps,
) -> None:
    seen: list[tuple[str, bool, bool]] = []

    def progress(phase: str, done: int, total: int, _item: str) -> None:
        seen.append((phase, done == total, index_ready(world.store)))

    assert not index_ready(world.store)
    run_index(world, progress=progress)
    assert index_ready(world.store)
    # not ready while files are still being read; the report of phase one's last step
    # comes once the index is marked ready (a stop there leaves phase one done)
    assert all(not ready for phase, last, ready in seen if phase == "text" and not last)
    assert [ready for phase, last, ready in seen if phase == "text" and last] == [True]
    assert all(ready for phase, _, ready in seen if phase == "vectors")


def test_a_first_run_stopped_in_phase_one_leaves_the_index_not_ready(world: IndexDeps) -> None:
    def stop_after_two(phase: str, done: int, total: int, _item: str) -> None:
        if phase == "text" and done == 2:
            raise Stop

    with pytest.raises(Stop):
        run_index(world, progress=stop_after_two)
    assert not index_ready(world.store)
    run_index(world)
    assert index_ready(world.store)


def test_a_first_run_stopped_in_phase_two_is_ready_keywords_cover_every_file(
    world: IndexDeps,
) -> None:
    def stop_in_vectors(phase: str, done: int, total: int, _item: str) -> None:
        if phase == "vectors":
            raise Stop

    with pytest.raises(Stop):
        run_index(world, progress=stop_in_vectors)
    assert index_ready(world.store)


def test_a_watcher_run_over_some_paths_never_makes_an_index_ready(world: IndexDeps) -> None:
    run_index(world, paths=["n1.md"])
    assert world.store.chunk_ids()  # it wrote that file's rows
    assert not index_ready(world.store)


def test_indexes_from_before_the_mark(world: IndexDeps) -> None:
    store = world.store
    assert not index_ready(store)  # what a run that failed before writing anything left
    store.set_meta(META_MODEL, "fake-model")
    assert index_ready(store)  # a run wrote rows: treated as complete, as before
    run_index(world)
    assert store.get_meta(META_READY)  # the next run writes the mark down


def test_a_first_run_that_wrote_rows_and_then_stopped_is_not_taken_for_an_old_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(index_run, "WRITE_BATCHES", 1)  # rows written every 32 chunks
    world = fake_deps(FakeFileSystem({f"n{i:02d}.md": f"# N{i}\nword{i} text\n".encode()
                                      for i in range(40)}), batch_size=1)

    def stop_late(phase: str, done: int, total: int, _item: str) -> None:
        if phase == "text" and done == 35:
            raise Stop

    with pytest.raises(Stop):
        run_index(world, progress=stop_late)
    # rows and a model were written (32 chunks make a write batch): an index from before
    # the mark would look like this, but this one says "not yet"
    assert world.store.chunk_ids() and world.store.get_meta(META_MODEL)
    assert world.store.get_meta(META_READY) == ""
    assert not index_ready(world.store)


def test_a_run_that_could_not_list_the_folder_does_not_make_it_ready(world: IndexDeps) -> None:
    class Unlistable(FakeScanner):
        def scan(self, needs_hash: HashNeeded | None = None) -> DiskScan:
            return DiskScan({}, (Refusal(".", "cannot list the folder: permission denied"),))

    assert isinstance(world.fs, FakeFileSystem)
    world.scanner = Unlistable(world.fs)
    summary = run_index(world)
    assert summary.failed == 1 and summary.scanned == 1
    assert not index_ready(world.store)
