"""A whole-folder run does not even open a file whose listing shows the stamp it had when
the walk last hashed it (decision 0058's addendum): the folder's root-bound listing
already says what it is (a regular file of one link, no link followed), and the same
inode, size and times mean the same bytes. What the open refused is still refused."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.filesystem import hash_cache
from kbmcp_adapters.filesystem.local import LocalFileSystem, OpenedFile
from kbmcp_core.models import SKIP_HARD_LINK, SKIP_LINK
from tests.conftest import OpenKb, write_files


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The files opened (by the walk or the run)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(hash_cache, "RACY_SECONDS", 0.0)  # files written just now count
    seen: list[str] = []
    real = LocalFileSystem.open_file

    def counted(self: LocalFileSystem, rel_path: str) -> AbstractContextManager[OpenedFile]:
        seen.append(rel_path)
        return real(self, rel_path)

    monkeypatch.setattr(LocalFileSystem, "open_file", counted)
    return seen


def _hashed(root: Path, open_kb: OpenKb) -> KnowledgeBase:
    write_files(root, {f"n{i:02d}.md": f"# Note {i}\n\nThe lantern {i} by the harbor.\n"
                       for i in range(8)})
    kb = open_kb(root)
    kb.index()
    kb.index()  # this walk hashes the files and keeps their stamps
    return kb


def test_an_unchanged_folder_is_walked_without_opening_a_file(
        tmp_path: Path, open_kb: OpenKb, opened: list[str]) -> None:
    kb = _hashed(tmp_path / "kb", open_kb)
    opened.clear()
    summary = kb.index()
    assert summary.unchanged == 8
    assert opened == []


def test_a_hashed_file_replaced_by_a_link_is_refused(
        tmp_path: Path, open_kb: OpenKb, opened: list[str]) -> None:
    root = tmp_path / "kb"
    kb = _hashed(root, open_kb)
    (root / "n03.md").unlink()
    (root / "n03.md").symlink_to(root / "n04.md")
    summary = kb.index()
    assert summary.skipped_reasons.get(SKIP_LINK) == 1
    assert "n03.md" not in {h.path for h in kb.search("lantern 3", mode="lexical").results}


def test_a_hashed_file_given_a_second_link_is_refused(
        tmp_path: Path, open_kb: OpenKb, opened: list[str]) -> None:
    root = tmp_path / "kb"
    kb = _hashed(root, open_kb)
    os.link(root / "n05.md", tmp_path / "elsewhere.md")
    summary = kb.index()
    assert summary.skipped_reasons.get(SKIP_HARD_LINK) == 1
    assert "n05.md" not in {h.path for h in kb.search("lantern 5", mode="lexical").results}
