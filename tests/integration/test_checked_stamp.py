"""A whole-folder run skips SQLite's quick check when the index database is the file the
last clean run left, and checks every page otherwise (decision 0058): a damaged page
written since, even with the modification time set back, is still refused with the same
one-line message."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from kbmcp_adapters.app.index_state import CHECKED, state_dir
from kbmcp_adapters.store import checked_stamp
from kbmcp_adapters.store.sql_store import SqlIndexStore
from kbmcp_core.errors import StoreCorrupt
from tests.conftest import OpenKb, write_files
from tests.integration.test_index_lifecycle import damage_a_middle_chunk_page


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The runs' kept facts in the test's own folder (``app/index_state.py``)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The quick checks the runs make."""
    made: list[float] = []
    real = SqlIndexStore.quick_check

    def counted(self: SqlIndexStore, budget_s: float) -> list[str] | None:
        made.append(budget_s)
        return real(self, budget_s)

    monkeypatch.setattr(SqlIndexStore, "quick_check", counted)
    return made


def _folder(root: Path) -> Path:
    body = " ".join(f"word{i}" for i in range(150))
    write_files(root, {f"n{i:02d}.md": f"# Note {i}\n\n{body} note{i}\n" for i in range(40)})
    return root


def test_a_run_after_a_clean_run_skips_the_check(tmp_path: Path, open_kb: OpenKb,
                                                 checks: list[float]) -> None:
    kb = open_kb(_folder(tmp_path / "kb"))
    kb.index()
    assert len(checks) == 1
    write_files(tmp_path / "kb", {"new.md": "# New\n\nA new note about lighthouses.\n"})
    assert kb.index().added == 1
    kb.index()
    assert len(checks) == 1  # the file was only ever written by these runs
    db = tmp_path / "kb" / ".kb-mcp" / "index.db"
    assert checked_stamp.unchanged(db, state_dir(db.parent) / CHECKED)


def test_a_page_damaged_since_is_refused_even_with_its_time_set_back(
        tmp_path: Path, open_kb: OpenKb, checks: list[float]) -> None:
    root = _folder(tmp_path / "kb")
    first = open_kb(root)
    first.index()
    first.close()
    db = root / ".kb-mcp" / "index.db"
    before = os.stat(db)
    damage_a_middle_chunk_page(db)
    os.utime(db, ns=(before.st_atime_ns, before.st_mtime_ns))  # the change time moves
    with pytest.raises(StoreCorrupt, match="damaged"):
        open_kb(root).index()
    assert len(checks) == 2
    assert not checked_stamp.unchanged(db, state_dir(db.parent) / CHECKED)


def test_another_writer_makes_the_next_run_check_every_page(
        tmp_path: Path, open_kb: OpenKb, checks: list[float]) -> None:
    root = _folder(tmp_path / "kb")
    kb = open_kb(root)
    kb.index()
    db = root / ".kb-mcp" / "index.db"
    conn = sqlite3.connect(db, isolation_level=None)  # a write kb-mcp did not make
    try:
        conn.execute("INSERT INTO index_meta(key, value) VALUES ('written', 'elsewhere')")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    kb.index()
    assert len(checks) == 2
    assert checked_stamp.unchanged(db, state_dir(db.parent) / CHECKED)  # checked, kept


def test_a_check_out_of_time_lets_the_run_go_on_and_the_next_skip_it(
        tmp_path: Path, open_kb: OpenKb, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file too large to check in time (None): the run goes on, as before, and the
    unchanged file is not checked again by the next run."""
    made: list[float] = []

    def out_of_time(self: SqlIndexStore, budget_s: float) -> list[str] | None:
        made.append(budget_s)
        return None

    monkeypatch.setattr(SqlIndexStore, "quick_check", out_of_time)
    kb = open_kb(_folder(tmp_path / "kb"))
    assert kb.index().added == 40
    kb.index()
    assert len(made) == 1
