"""Live sync with real watchfiles, real files and the real model: the index follows the disk."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.filesystem.exclusion import ExclusionRules
from kbmcp_adapters.live import watcher as watcher_module
from kbmcp_adapters.live.watcher import SyncReport, Watcher, select_paths
from kbmcp_adapters.store.cross_process_lock import writer_lock
from kbmcp_core.models import INDEX_CAP_BYTES
from tests.conftest import OpenKb, write_files

#: Longest wait for any change to show: the debounce plus a generous margin for slow CI.
WAIT_S = 20.0


def note(word: str, title: str = "Note") -> str:
    return (
        f"# {title}\n\nThis note is about {word}. The {word} appears in a paragraph long "
        "enough to make a real chunk for the index, with some ordinary words around it so "
        f"that search has something to match besides {word} itself.\n"
    )


class Live:
    """One watched knowledge base and the reports its watcher delivered."""

    def __init__(self, root: Path, kb: KnowledgeBase) -> None:
        self.root = root
        self.kb = kb
        self.reports: list[SyncReport] = []
        self._cv = threading.Condition()
        self.watcher: Watcher | None = None

    def on_synced(self, report: SyncReport) -> None:
        with self._cv:
            self.reports.append(report)
            self._cv.notify_all()

    @property
    def w(self) -> Watcher:
        assert self.watcher is not None
        return self.watcher

    def wait_until(self, cond: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
        """Re-check ``cond`` after every sync (and at least every 0.25 s) until a deadline."""
        deadline = time.monotonic() + timeout
        while True:
            seen = len(self.reports)
            if cond():
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                status = self.watcher.status() if self.watcher else None
                raise AssertionError(
                    f"timed out after {timeout}s waiting for {what}; watcher status: {status}"
                )
            with self._cv:
                self._cv.wait_for(partial(self._synced_since, seen), min(remaining, 0.25))

    def _synced_since(self, count: int) -> bool:
        return len(self.reports) != count

    def write(self, rel: str, text: str) -> None:
        write_files(self.root, {rel: text})

    def indexed(self, rel: str) -> bool:
        return self.kb.document(rel) is not None

    def finds(self, word: str, rel: str) -> bool:
        """Search for ``word`` returns ``rel`` with a passage that contains it."""
        hits = self.kb.search(word, limit=10).results
        return any(hit.path == rel and word in hit.content for hit in hits)

    def reports_since(self, start: int) -> list[SyncReport]:
        with self._cv:
            return list(self.reports[start:])


StartLive = Callable[..., Live]


@pytest.fixture
def live(tmp_path: Path, open_kb: OpenKb) -> Iterator[StartLive]:
    """Index ``files``, start a watcher, wait until it watches; always stopped at the end."""
    started: list[Live] = []

    def _start(
        files: dict[str, str | bytes],
        *,
        settings: dict[str, Any] | None = None,
        index: bool = True,
        **watcher_kw: Any,
    ) -> Live:
        root = tmp_path / "kb"
        root.mkdir()
        write_files(root, files)
        kb = open_kb(root, **(settings or {}))
        if index:
            kb.index()
        lv = Live(root, kb)
        watcher_kw.setdefault("debounce_ms", 400)
        lv.watcher = Watcher(kb, on_synced=lv.on_synced, **watcher_kw)
        started.append(lv)
        lv.w.start()
        assert lv.w.wait_ready(WAIT_S), lv.w.status()
        if index and lv.w.reconcile_on_start:
            lv.wait_until(lambda: any(r.full for r in lv.reports), "the start-up reconciliation")
        return lv

    yield _start
    for lv in started:
        assert lv.w.stop(timeout=WAIT_S), "the watcher thread did not end"
        assert lv.w.status()["alive"] is False


def test_edit_create_and_delete_show_in_search(live: StartLive) -> None:
    lv = live({"a.md": note("marmalade")})
    lv.write("new.md", note("quokkaberry"))
    lv.wait_until(lambda: lv.finds("quokkaberry", "new.md"), "the created file in search")

    lv.write("a.md", note("zephyrine"))
    lv.wait_until(lambda: lv.finds("zephyrine", "a.md"), "the edited file in search")
    assert not lv.finds("marmalade", "a.md")

    (lv.root / "a.md").unlink()
    lv.wait_until(lambda: not lv.indexed("a.md"), "the deleted file to leave the index")
    assert not lv.finds("zephyrine", "a.md")
    assert lv.indexed("new.md")
    status = lv.w.status()
    assert status["alive"] and status["watching"] and status["last_sync"] is not None
    assert isinstance(status["events_seen"], int) and status["events_seen"] >= 3


def test_rename_and_moves_reuse_vectors(live: StartLive) -> None:
    lv = live({"a.md": note("cardamom"), "sub/keep.md": note("saffron")})

    def moved(old: str, new: str, *, one_batch: bool = True) -> None:
        start = len(lv.reports)
        os.makedirs((lv.root / new).parent, exist_ok=True)
        os.rename(lv.root / old, lv.root / new)

        def reported() -> bool:  # the run that removed the old path has reported
            return any(
                any(old == p or old.startswith(p + "/") for p in r.changed_paths)
                for r in lv.reports_since(start)
            )

        lv.wait_until(
            lambda: lv.indexed(new) and not lv.indexed(old) and reported(), f"{old} -> {new}"
        )
        done = lv.reports_since(start)
        assert sum(r.summary.chunks_embedded for r in done) == 0
        if one_batch:  # one rename(2): both paths arrive in one batch, paired as a rename
            assert sum(r.summary.renamed for r in done) == 1
        assert lv.finds("cardamom", new)
        assert not lv.finds("cardamom", old)

    moved("a.md", "b.md")  # rename
    moved("b.md", "sub/b.md")  # move into an existing subdirectory
    # into directories created just now: the new folder may be walked in a batch of its
    # own, before the old path's event; the vectors are reused by chunk hash all the same
    moved("sub/b.md", "fresh/deeper/b.md", one_batch=False)


def test_new_directory_is_scanned_and_a_deleted_one_removed(
    live: StartLive, tmp_path: Path
) -> None:
    lv = live({"a.md": note("basalt")})
    lv.write("topic/one.md", note("obsidianite"))
    lv.write("topic/deep/two.md", note("pumiceous"))
    lv.wait_until(
        lambda: lv.indexed("topic/one.md") and lv.indexed("topic/deep/two.md"),
        "files in a new directory",
    )

    # A folder moved in whole: the only event names the folder, not the files inside.
    outside = tmp_path / "outside"
    write_files(outside, {"pack/x.md": note("feldspar"), "pack/inner/y.md": note("gneissy")})
    os.rename(outside / "pack", lv.root / "pack")
    lv.wait_until(
        lambda: lv.finds("feldspar", "pack/x.md") and lv.indexed("pack/inner/y.md"),
        "a folder moved into the knowledge base",
    )

    shutil.rmtree(lv.root / "topic")
    lv.wait_until(
        lambda: not lv.indexed("topic/one.md") and not lv.indexed("topic/deep/two.md"),
        "a deleted folder to leave the index",
    )
    assert lv.indexed("a.md") and lv.indexed("pack/x.md")


def test_a_file_grown_past_the_index_cap_is_withdrawn_with_its_size(live: StartLive) -> None:
    lv = live({"big.md": note("granite"), "small.md": note("slate")})
    assert "big.md" in lv.kb.offered_paths()
    start = len(lv.reports)
    os.truncate(lv.root / "big.md", INDEX_CAP_BYTES + 1)  # sparse: no 50 MiB written

    def size() -> int | None:
        row = lv.kb.document("big.md")
        return None if row is None else row.size_bytes

    lv.wait_until(
        lambda: (
            size() == INDEX_CAP_BYTES + 1 and any(r.offer_changed for r in lv.reports_since(start))
        ),
        "the new size recorded and the offer change reported",
    )
    assert lv.indexed("big.md"), "the row is kept"
    assert "big.md" not in lv.kb.offered_paths()
    assert "small.md" in lv.kb.offered_paths()


def test_an_ignore_file_edit_applies_at_once_and_to_later_events(live: StartLive) -> None:
    lv = live({"archive/old.md": note("parchment"), "keep.md": note("vellum")})
    lv.write(".kb-mcpignore", "archive/\n")
    lv.wait_until(lambda: not lv.indexed("archive/old.md"), "the newly ignored file removed")
    assert lv.indexed("keep.md")

    lv.write("archive/new.md", note("papyrus"))
    lv.write("barrier.md", note("quill"))  # processed after the event before it
    lv.wait_until(lambda: lv.indexed("barrier.md"), "the barrier file")
    assert not lv.indexed("archive/new.md")

    lv.write(".kb-mcpignore", "")
    lv.wait_until(
        lambda: lv.indexed("archive/old.md") and lv.indexed("archive/new.md"),
        "files no longer ignored to come back",
    )


IGNORE = "*.draft.md\n!keep.draft.md\nprivate/\n!private/allowed.md\n"

#: (path, indexed?) — the walk and the watcher must both give the expected answer.
CASES = [
    (".git/notes.md", False),  # fail-safe directory
    ("BUILD/output.md", False),  # exclude_dirs entry "build", other letter case
    ("notes/idea.draft.md", False),  # ignored glob
    ("Notes/SHOUT.DRAFT.MD", False),  # ignored glob, other letter case
    ("notes/keep.draft.md", True),  # re-included by a negation
    ("private/secret.md", False),  # under an ignored directory
    ("private/allowed.md", False),  # a negation cannot reach into an ignored directory
    ("notes/plain.md", True),  # an ordinary file
    (".kb-mcp/stray.md", False),  # inside the index directory
]


def test_the_walk_and_the_watcher_agree_on_every_case(live: StartLive) -> None:
    lv = live({"seed.md": note("lichen")})
    fulls = sum(r.full for r in lv.reports)
    lv.write(".kb-mcpignore", IGNORE)
    lv.wait_until(
        lambda: sum(r.full for r in lv.reports) > fulls,
        "the reconciliation after the ignore file changed",
    )
    for i, (path, _) in enumerate(CASES):
        lv.write(path, note(f"casefile{i}"))
    lv.write("zz-barrier.md", note("moss"))
    lv.wait_until(lambda: lv.indexed("zz-barrier.md"), "the barrier file")

    walked = lv.kb.scan().files
    for path, expected in CASES:
        assert (lv.indexed(path), path in walked) == (expected, expected), path


def test_links_are_refused_like_the_walk_refuses_them(live: StartLive, tmp_path: Path) -> None:
    lv = live({"a.md": note("quartz"), "b.md": note("mica")})
    outside = tmp_path / "outside"
    write_files(outside, {"linked.md": note("topaz"), "dir/z.md": note("beryl")})
    os.symlink(lv.root / "a.md", lv.root / "alias.md")
    os.symlink(outside / "dir", lv.root / "linkdir")
    os.link(outside / "linked.md", lv.root / "hard.md")
    os.link(lv.root / "b.md", lv.root / "b-twin.md")  # b.md itself now has two links
    lv.write("zz-barrier.md", note("amber"))
    lv.wait_until(lambda: lv.indexed("zz-barrier.md"), "the barrier file")

    scan = lv.kb.scan()
    refused = {r.path for r in scan.refused}
    for path in ("alias.md", "linkdir", "hard.md", "b-twin.md", "b.md"):
        assert not lv.indexed(path), path
        assert path not in scan.files and path in refused, path
    assert lv.indexed("a.md") and "a.md" in scan.files
    assert not lv.indexed("linkdir/z.md") and "linkdir/z.md" not in scan.files


def test_reconciliation_catches_what_no_event_reports(live: StartLive) -> None:
    lv = live({"a.md": note("jasper")}, reconcile_interval_s=1.0)
    os.link(lv.root / "a.md", lv.root / "twin.md")
    lv.wait_until(lambda: not lv.indexed("a.md"), "a.md refused once it has two links")
    start = len(lv.reports)
    # Removing the twin reports only the twin; a.md is a document again, which only a
    # reconciliation can notice.
    (lv.root / "twin.md").unlink()
    lv.wait_until(
        lambda: any(r.full and r.summary.added == 1 for r in lv.reports_since(start)),
        "a reconciliation to bring a.md back",
    )
    assert lv.indexed("a.md")


def test_a_burst_of_many_paths_becomes_one_full_run(
    live: StartLive, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watcher_module, "FULL_RUN_OVER", 2)
    lv = live({"a.md": note("pyrite")})
    start = len(lv.reports)
    write_files(lv.root, {f"burst{i}.md": note(f"burstword{i}") for i in range(6)})
    lv.wait_until(
        lambda: any(r.full and r.summary.added >= 3 for r in lv.reports_since(start)),
        "a full run for the burst",
    )
    assert all(lv.indexed(f"burst{i}.md") for i in range(6))


def test_select_paths_keeps_what_the_run_must_see(tmp_path: Path) -> None:
    write_files(tmp_path, {"new/a.md": "x", "new/b.md": "y", "c.txt": "z", "d.md": "w"})
    (tmp_path / "build").mkdir()
    rules = ExclusionRules(["build"], ["d.md"])
    indexed = sorted(["gone/old.md", "d.md", "kept.md"])
    changed = ["new", "new/a.md", "gone", "c.txt", "build", "vanished.md", "d.md"]
    # a folder covers its files; a deleted folder with indexed files is kept; an excluded
    # but indexed file is kept (to be removed); the rest is dropped
    assert select_paths(tmp_path, changed, indexed, rules, {"md"}) == ["d.md", "gone", "new"]


def test_changes_made_before_the_start_are_picked_up(tmp_path: Path, open_kb: OpenKb) -> None:
    root = tmp_path / "kb"
    write_files(root, {"a.md": note("onyx")})
    kb = open_kb(root)
    kb.index()
    write_files(root, {"late.md": note("agate")})
    lv = Live(root, kb)
    lv.watcher = Watcher(kb, debounce_ms=400, on_synced=lv.on_synced)
    lv.w.start()
    try:
        lv.wait_until(lambda: lv.finds("agate", "late.md"), "the start-up reconciliation")
    finally:
        assert lv.w.stop(WAIT_S)


def test_a_failing_batch_is_logged_and_the_watcher_goes_on(
    live: StartLive, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    lv = live({"a.md": note("cobalt")})
    real_index = lv.kb.index
    failures: list[object] = []

    def index_failing_once(**kw: Any) -> Any:
        if kw.get("paths") is not None and not failures:
            failures.append(kw["paths"])
            raise RuntimeError("disk on fire")
        return real_index(**kw)

    monkeypatch.setattr(lv.kb, "index", index_failing_once)
    with caplog.at_level(logging.ERROR, logger="kbmcp_adapters.live.watcher"):
        lv.write("first.md", note("nickel"))
        lv.wait_until(
            lambda: "disk on fire" in str(lv.w.status()["last_error"]), "the failure to be reported"
        )
        status = lv.w.status()
        assert status["alive"] and status["watching"]
        assert any("disk on fire" in r.getMessage() for r in caplog.records)

        lv.write("second.md", note("zinc"))
        lv.wait_until(lambda: lv.finds("zinc", "second.md"), "the next event")
    # the failed batch was kept and retried with the next one
    assert lv.finds("nickel", "first.md")


def test_a_busy_index_is_retried_when_the_other_writer_is_done(live: StartLive) -> None:
    lv = live({"a.md": note("tungsten")}, settings={"writer_lock_timeout_s": 0.2})
    with writer_lock(lv.kb.settings.index_dir, 5):
        lv.write("later.md", note("vanadium"))
        lv.wait_until(
            lambda: "another writer" in str(lv.w.status()["last_error"]),
            "the watcher to meet the held lock",
        )
        assert not lv.indexed("later.md")
        assert lv.w.status()["pending"] == 1
    # no new event: the kept path is retried on its own
    lv.wait_until(lambda: lv.finds("vanadium", "later.md"), "the retry after the lock")


def test_a_dead_file_watcher_is_restarted_and_catches_up(
    tmp_path: Path, open_kb: OpenKb, monkeypatch: pytest.MonkeyPatch
) -> None:
    import watchfiles

    real_watch = watchfiles.watch
    entered, release = threading.Event(), threading.Event()

    def dying_once(*args: Any, **kwargs: Any) -> Any:
        if not entered.is_set():
            entered.set()
            release.wait(WAIT_S)
            raise OSError("inotify watch limit reached")
        return real_watch(*args, **kwargs)

    monkeypatch.setattr(watchfiles, "watch", dying_once)
    root = tmp_path / "kb"
    write_files(root, {"a.md": note("iridium")})
    kb = open_kb(root)
    kb.index()
    lv = Live(root, kb)
    lv.watcher = Watcher(kb, debounce_ms=400, on_synced=lv.on_synced, reconcile_on_start=False)
    lv.w.start()
    try:
        assert entered.wait(WAIT_S)
        lv.write("missed.md", note("osmium"))  # nothing is watching: no event for this
        release.set()
        lv.wait_until(lambda: lv.finds("osmium", "missed.md"), "the catch-up after a restart")
        status = lv.w.status()
        assert status["restarts"] == 1 and status["alive"]
        assert "inotify watch limit" in str(status["last_error"])
        lv.write("after.md", note("rhodium"))
        lv.wait_until(lambda: lv.finds("rhodium", "after.md"), "an event after the restart")
    finally:
        release.set()
        assert lv.w.stop(WAIT_S)


def test_without_an_index_the_watcher_waits_and_creates_nothing(live: StartLive) -> None:
    lv = live({"a.md": note("helium")}, index=False)
    lv.write("b.md", note("neon"))

    def handled() -> bool:
        st = lv.w.status()
        seen = isinstance(st["events_seen"], int) and st["events_seen"] >= 1
        return seen and st["pending"] == 0 and "no index" in str(st["last_error"])

    lv.wait_until(handled, "the event to be handled without an index")
    assert not lv.kb.settings.sqlite_path.exists()
    assert lv.w.status()["alive"]
    assert lv.reports == []


def test_stop_ends_the_thread_promptly(live: StartLive) -> None:
    lv = live({"a.md": note("argon")})
    assert lv.w.stop(timeout=5.0)
    status = lv.w.status()
    assert status["alive"] is False and status["watching"] is False


def test_delay_from_write_to_search(live: StartLive, record_property: Any) -> None:
    """Measured, not a speed target: printed, and bounded only by the test's deadline."""
    lv = live({"a.md": note("xenon")})
    delays: list[float] = []
    for i in range(5):
        word = f"delaymark{i}quark"
        started = time.monotonic()
        lv.write(f"timed/{i}.md", note(word))
        lv.wait_until(partial(lv.finds, word, f"timed/{i}.md"), f"write {i}")
        delays.append(time.monotonic() - started)
    median = statistics.median(delays)
    record_property("write_to_search_median_s", round(median, 3))
    print(
        f"\nwrite-to-search delay at debounce 400 ms: median {median * 1000:.0f} ms, "
        f"all {[round(d * 1000) for d in delays]} ms"
    )
    assert median < WAIT_S


def test_a_sync_reports_its_progress_to_the_server_while_it_runs(live: StartLive) -> None:
    """What /ui's health page shows during a live sync: the server's tracker is entered for
    the sync and hears both phases, file by file, then closed."""
    seen: list[tuple[str, int, int, str]] = []
    open_runs: list[int] = []

    @contextlib.contextmanager
    def tracking() -> Iterator[Callable[[str, int, int, str], None]]:
        open_runs.append(1)
        try:
            yield lambda phase, done, total, item: seen.append((phase, done, total, item))
        finally:
            open_runs.pop()

    lv = live({"a.md": note("marmalade")}, tracking=tracking)
    seen.clear()
    lv.write("new.md", note("quokkaberry"))
    lv.wait_until(lambda: lv.finds("quokkaberry", "new.md"), "the created file in search")
    lv.wait_until(lambda: any(p == "vectors" for p, *_ in seen), "phase two's progress")
    assert ("text", 1, 1, "new.md") in seen
    lv.wait_until(lambda: not open_runs, "the tracker closed after the sync")
