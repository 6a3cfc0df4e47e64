"""A whole-folder run reads again only the files changed since the last walk hashed them
(decision 0058): the others' stamps (inode, size, modification and change times) are
the ones kept with their hashes in the index's state folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kbmcp_adapters.app.index_state import CHECKED, SCAN_HASHES, state_dir
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.filesystem import hash_cache
from kbmcp_adapters.filesystem.local import OpenedFile
from tests.conftest import OpenKb, write_files


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files whose bytes are read (by the walk or the run)."""
    read: list[str] = []
    real = OpenedFile.read

    def counted(self: OpenedFile, cap: int) -> bytes | None:
        read.append(self._rel)  # noqa: SLF001
        return real(self, cap)

    monkeypatch.setattr(OpenedFile, "read", counted)
    monkeypatch.setattr(hash_cache, "RACY_SECONDS", 0.0)  # files written just now count
    return read


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The runs' kept facts in the test's own folder (``app/index_state.py``)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def _folder(root: Path) -> None:
    write_files(root, {f"n{i:02d}.md": f"# Note {i}\n\nThe lantern {i} by the harbor.\n"
                       for i in range(12)})


def _hashed(root: Path, open_kb: OpenKb) -> KnowledgeBase:
    """The folder indexed twice: the second walk hashes the files of their indexed size,
    and keeps the hashes."""
    _folder(root)
    kb = open_kb(root)
    kb.index()
    kb.index()
    return kb


def test_an_unchanged_folder_is_walked_without_reading_a_file(
        tmp_path: Path, open_kb: OpenKb, reads: list[str]) -> None:
    kb = _hashed(tmp_path / "kb", open_kb)
    reads.clear()
    summary = kb.index()
    assert summary.unchanged == 12
    assert reads == []


def test_a_file_changed_to_the_same_size_is_read_and_indexed_again(
        tmp_path: Path, open_kb: OpenKb, reads: list[str]) -> None:
    root = tmp_path / "kb"
    kb = _hashed(root, open_kb)
    changed = root / "n03.md"
    before = os.stat(changed)
    changed.write_text("# Note 3\n\nThe beacons 3 by the harbor.\n", encoding="utf-8")
    os.utime(changed, ns=(before.st_atime_ns, before.st_mtime_ns))  # ctime still moves
    assert changed.stat().st_size == before.st_size
    reads.clear()
    summary = kb.index()
    assert summary.updated == 1
    assert summary.unchanged == 11
    assert sorted(set(reads)) == ["n03.md"]
    assert [h.path for h in kb.search("beacons", mode="lexical").results] == ["n03.md"]


def test_a_scan_that_writes_nothing_keeps_no_hashes(tmp_path: Path, open_kb: OpenKb,
                                                    reads: list[str]) -> None:
    root = tmp_path / "kb"
    _folder(root)
    kb = open_kb(root)
    kb.scan()
    assert not (state_dir(root / ".kb-mcp") / SCAN_HASHES).exists()
    kb.index()
    kb.index()  # the walk of the second run hashes the files, and keeps their hashes
    assert (state_dir(root / ".kb-mcp") / SCAN_HASHES).exists()
    names = {p.name for p in (root / ".kb-mcp").iterdir()}
    assert not names & {SCAN_HASHES, CHECKED}  # the index folder holds the index only


@pytest.mark.parametrize("damage", ["a flipped byte", "cut short", "another format"])
def test_a_damaged_hash_file_is_not_trusted(
        tmp_path: Path, open_kb: OpenKb, reads: list[str], damage: str) -> None:
    """The kept hashes are read only when the whole file checks out (its digest, count
    and length): a byte changed anywhere, even in a kept hash, and every file the run
    compares is read again."""
    root = tmp_path / "kb"
    kb = _hashed(root, open_kb)
    kept = state_dir(root / ".kb-mcp") / SCAN_HASHES
    data = bytearray(kept.read_bytes())
    if damage == "a flipped byte":
        data[len(data) // 2] ^= 0x01
    elif damage == "cut short":
        del data[-40:]
    else:
        data[:20] = b'{"version": 1, "fil'
    kept.write_bytes(bytes(data))
    reads.clear()
    summary = kb.index()
    assert summary.unchanged == 12
    assert sorted(set(reads)) == [f"n{i:02d}.md" for i in range(12)]
    reads.clear()
    assert kb.index().unchanged == 12  # the walk kept its hashes again
    assert reads == []
