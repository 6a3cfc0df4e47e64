"""Reads bound to the root by construction: no swap, link or odd path escapes it."""

from __future__ import annotations

import ctypes
import errno
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.filesystem.local import LocalFileSystem
from kbmcp_core.errors import NoSuchDocument, PathRefused
from kbmcp_core.ports import FileSystem
from kbmcp_core.uris import doc_uri
from tests.conftest import OpenKb, write_files
from tests.fakes import FakeFileSystem

INSIDE = "# Race\n\nINSIDE-MARKER the real page about sailing knots.\n"
SECRET = "SECRET-OUTSIDE-MARKER"
#: reads made while the folder is being swapped (at least; more until one was refused)
READS = 5000
DEADLINE = 60.0


_RENAME_EXCHANGE = 2  # renameat2(2): swap two names atomically (Linux)
_AT_FDCWD = -100
_LIBC = ctypes.CDLL(None, use_errno=True)


def exchange(a: Path, b: Path) -> bool:
    """Swap two names in one step, leaving no moment where either is missing; False
    where the system cannot (then the swap is done by renames instead)."""
    renameat2 = getattr(_LIBC, "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL):
        return False
    raise OSError(code, os.strerror(code))


@dataclass
class Swapper:
    """Swaps the folder ``kb/sub`` for a link to an outside folder and back, as fast as it
    can: in one atomic step where the system allows it (the strongest attack: the name is
    never missing), else by renaming the folder away and putting a link in its place."""

    kb: Path
    outside: Path
    #: how long each state lasts, at most, in system calls (random, so reads land anywhere)
    link_calls: int = 50
    real_calls: int = 200
    stop: threading.Event = field(default_factory=threading.Event)
    swaps: int = 0
    error: BaseException | None = None
    rng: random.Random = field(default_factory=lambda: random.Random(10))

    def run(self) -> None:
        sub, away, link = self.kb / "sub", self.kb / "sub.away", self.kb / "sub.link"
        try:
            os.symlink(self.outside, link)
            atomic = exchange(sub, link) and exchange(sub, link)
            while not self.stop.is_set():
                if atomic:
                    exchange(sub, link)
                else:
                    os.rename(sub, away)
                    os.symlink(self.outside, sub)
                self._hold(sub, self.link_calls)
                if atomic:
                    exchange(sub, link)
                else:
                    os.unlink(sub)
                    os.rename(away, sub)
                self.swaps += 1
                self._hold(sub, self.real_calls)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def _hold(self, path: Path, most: int) -> None:
        for _ in range(self.rng.randrange(most + 1)):
            os.lstat(path)


@dataclass
class Tally:
    reads: int = 0
    served: int = 0
    refused: int = 0
    leaks: int = 0
    other: list[str] = field(default_factory=list)
    swaps: int = 0

    def body(self, text: str) -> None:
        """Count a served read: the outside file is a leak, anything but the page is odd."""
        self.served += 1
        self.leaks += SECRET in text
        if SECRET not in text and INSIDE not in text:
            self.other.append(f"unexpected body {text[:80]!r}")


def make_race_kb(base: Path) -> tuple[Path, Path]:
    kb, outside = base / "kb", base / "outside"
    write_files(kb, {"sub/race.md": INSIDE, "notes/plain.md": "# Plain\n\nbread\n"})
    write_files(outside, {"race.md": f"# Race\n\n{SECRET} launch codes\n"})
    return kb, outside


@pytest.fixture
def race_kb(tmp_path: Path, open_kb: OpenKb) -> Iterator[tuple[KnowledgeBase, Path]]:
    kb_path, outside = make_race_kb(tmp_path)
    kb = open_kb(kb_path)
    kb.index()
    assert "sub/race.md" in kb.offered_paths()
    yield kb, outside


def race_reads(kb: KnowledgeBase, outside: Path, read: Callable[[int], str]) -> Tally:
    """Read ``read(n)`` over and over (n counts the reads) while a thread swaps a folder on
    the way to the document for a link to ``outside``, and count what came back. Fails
    when the swapper failed; the caller asserts on the tally."""
    swapper = Swapper(kb.settings.kb_path, outside)
    thread = threading.Thread(target=swapper.run, daemon=True)
    tally = Tally()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # hand the interpreter back and forth as often as it can
    thread.start()
    end = time.monotonic() + DEADLINE
    try:
        while (tally.reads < READS or tally.refused == 0) and time.monotonic() < end:
            try:
                text = read(tally.reads)
            except PathRefused as exc:  # NotOffered is a PathRefused too
                tally.refused += 1
                assert SECRET not in str(exc)
            except Exception as exc:  # noqa: BLE001 - the test counts what escaped
                tally.other.append(f"{type(exc).__name__}: {exc}")
            else:
                tally.body(text)
            tally.reads += 1
    finally:
        swapper.stop.set()
        thread.join(timeout=DEADLINE)
        sys.setswitchinterval(interval)
    print(f"\nreads under a folder swap: {tally.reads} reads, {tally.served} served, "
          f"{tally.refused} refused, {tally.leaks} outside, {len(tally.other)} other errors, "
          f"{swapper.swaps} swaps")
    assert swapper.error is None, swapper.error
    tally.swaps = swapper.swaps
    return tally


def test_a_folder_swapped_for_a_link_never_serves_outside_bytes(
    race_kb: tuple[KnowledgeBase, Path],
) -> None:
    kb, outside = race_kb
    uri = doc_uri("sub/race.md")
    tally = race_reads(kb, outside, lambda n: kb.read_resource(uri).text if n % 2
                       else kb.get_document("sub/race.md").content)
    assert tally.leaks == 0, f"{tally.leaks} reads returned the outside file"
    assert tally.other == [], tally.other[:5]
    assert tally.swaps > 0 and tally.served > 0 and tally.refused > 0
    assert tally.reads >= READS


def test_the_watcher_route_never_indexes_through_a_linked_folder(
    race_kb: tuple[KnowledgeBase, Path],
) -> None:
    """A folder replaced by a link between two runs: the single-path route the watcher
    takes refuses the file instead of indexing the outside one."""
    kb, outside = race_kb
    root = kb.settings.kb_path
    os.rename(root / "sub", root / "sub.away")
    os.symlink(outside, root / "sub")
    summary = kb.index(paths=["sub/race.md"])
    hits = kb.search("SECRET-OUTSIDE-MARKER launch codes").results
    assert all(SECRET not in h.content for h in hits)
    assert all("launch codes" not in h.content for h in hits)
    assert summary.added == summary.updated == 0
    assert any("sub/race.md" in w for w in summary.warnings)


@pytest.fixture
def odd_kb(tmp_path: Path, open_kb: OpenKb) -> KnowledgeBase:
    kb_path = tmp_path / "kb"
    write_files(kb_path, {"notes/plain.md": "# Plain\n\nbread\n", "guides.md/x.md": "# X\n"})
    write_files(tmp_path, {"elsewhere/x.md": "# Elsewhere\n\nSECRET-OUTSIDE-MARKER\n"})
    os.symlink(tmp_path / "elsewhere", kb_path / "linked")
    os.symlink(tmp_path / "elsewhere" / "x.md", kb_path / "notes" / "link.md")
    return open_kb(kb_path)


def refusal(kb: KnowledgeBase, path: str) -> str:
    """What a client is told; for a name that is not served, the log's reason follows."""
    with pytest.raises(PathRefused) as exc:
        kb.get_document(path)
    reason = exc.value.reason
    assert str(kb.settings.kb_path.parent) not in str(exc.value)
    if isinstance(exc.value, NoSuchDocument) and exc.value.why != reason:
        return f"{reason} (log: {exc.value.why})"
    return reason


def test_a_folder_on_the_way_that_is_a_link_is_named_as_such_in_the_log_only(
        odd_kb: KnowledgeBase) -> None:
    assert refusal(odd_kb, "linked/x.md") == (
        "no such document (log: a folder on the way is a symbolic link; links are never "
        "followed)")


def test_the_document_itself_being_a_link_is_named_as_such_in_the_log_only(
        odd_kb: KnowledgeBase) -> None:
    assert refusal(odd_kb, "notes/link.md") == (
        "no such document (log: is a symbolic link; links are never followed)")


@pytest.mark.parametrize("path", ["notes", "guides.md"])
def test_a_folder_asked_for_as_a_document_is_no_such_document_and_logged_as_a_folder(
    odd_kb: KnowledgeBase, path: str
) -> None:
    assert refusal(odd_kb, path) in (
        "no such document (log: is a folder, not a document)",
        "no such document (log: not a supported format: a file without an extension is read "
        "only when its name is one of the text names (README, NEWS, AUTHORS, CHANGELOG, ...))")


@pytest.mark.parametrize("path", ["notes/missing.md", "notes/plain.md/x.md", "nowhere/x.md"])
def test_missing_paths_say_no_such_document(odd_kb: KnowledgeBase, path: str) -> None:
    assert refusal(odd_kb, path) == "no such document"


@pytest.mark.parametrize("path", ["\ud800.md", "notes/\udcff.md", "notes/\ud83d.md"])
def test_paths_no_file_system_can_name_are_refused_not_crashed(
    odd_kb: KnowledgeBase, path: str
) -> None:
    assert refusal(odd_kb, path)  # a PathRefused with a reason, never an encoding error


@pytest.fixture(params=["local", "fake"])
def any_fs(request: pytest.FixtureRequest, tmp_path: Path) -> FileSystem:
    """The real adapter and the unit tests' fake, holding the same two documents."""
    files = {"a.md": b"# A\n\nalpha\n", "sub/b.md": b"# B\n\n" + b"beta " * 100}
    if request.param == "fake":
        return FakeFileSystem(files)
    write_files(tmp_path, files)
    return LocalFileSystem(tmp_path)


def test_the_fake_file_system_keeps_the_real_ones_contract(any_fs: FileSystem) -> None:
    with any_fs.open_file("sub/b.md") as handle:
        assert handle.size == 505
        assert handle.read(100) is None  # over the cap: nothing is handed out
    with any_fs.open_file("a.md") as handle:
        assert handle.read(1024) == b"# A\n\nalpha\n"
    with pytest.raises(PathRefused) as exc, any_fs.open_file("missing.md"):
        pass
    assert exc.value.reason == "no such document"
