"""What `status` and `index -v` say about who keeps the index fresh and what it leaves out:
both writers are named, "None" never shows, and every skipped file is named with a reason
that tells a format kb-mcp reads but the config disabled from one it cannot read."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kbmcp_adapters.live.watch_status import write_status
from tests.cli.conftest import Invoke
from tests.conftest import OpenKb


@pytest.fixture
def mixed(kb: Path, open_kb: OpenKb) -> Path:
    """``kb`` indexed (Markdown only) beside a text file, a photo and a link."""
    (kb / "notes.txt").write_text("Plain text notes.\n", encoding="utf-8")
    (kb / "photo.heic").write_bytes(b"\x89PNG\r\n")
    os.symlink("a.md", kb / "link.md")
    open_kb(kb).index()
    return kb


def test_status_names_both_writers_when_nothing_watches(kb_mcp: Invoke, mixed: Path) -> None:
    text = kb_mcp("status", "--kb-path", str(mixed))
    assert text.exit_code == 0, text.stderr
    line = next(x for x in text.stdout.splitlines() if x.startswith("watcher:"))
    assert "`kb-mcp serve`" in line and "`kb-mcp watch`" in line, line


def test_a_watcher_that_never_synced_is_not_none(kb_mcp: Invoke, mixed: Path) -> None:
    write_status(mixed / ".kb-mcp", {"alive": True, "watching": True, "last_sync": None,
                                     "last_error": None})
    text = kb_mcp("status", "--kb-path", str(mixed))
    assert text.exit_code == 0, text.stderr
    assert "None" not in text.stdout, text.stdout
    assert f"watcher: alive (pid {os.getpid()}), no sync yet" in text.stdout


def test_status_skipped_names_each_file_with_its_reason(kb_mcp: Invoke, mixed: Path) -> None:
    text = kb_mcp("status", "--kb-path", str(mixed), "--skipped")
    assert text.exit_code == 0, text.stderr
    lines = text.stdout.splitlines()
    assert "skipped: 3" in lines
    assert "  format not enabled: notes.txt" in lines
    assert "  not a supported format: photo.heic" in lines
    assert any(x.startswith("  symbolic link: link.md (") for x in lines), lines
    data = json.loads(kb_mcp("status", "--kb-path", str(mixed), "--skipped",
                             "--format", "json").stdout)
    assert data["skipped_files"]["format not enabled"] == ["notes.txt"]
    assert data["skipped_files"]["not a supported format"] == ["photo.heic"]
    plain = json.loads(kb_mcp("status", "--kb-path", str(mixed), "--format", "json").stdout)
    assert "skipped_files" not in plain


def test_index_v_names_each_skipped_file_with_its_reason(kb_mcp: Invoke, mixed: Path) -> None:
    (mixed / "scan.djvu").write_bytes(b"II*\x00")
    done = kb_mcp("index", "--kb-path", str(mixed), "-v")
    assert done.exit_code == 0, done.stderr
    assert "kb-mcp: skipped (format not enabled): notes.txt" in done.stderr
    assert "kb-mcp: skipped (not a supported format): photo.heic" in done.stderr
    assert "kb-mcp: skipped (not a supported format): scan.djvu" in done.stderr
    assert "not a supported format: 2" in done.stdout, done.stdout


def test_index_names_the_formats_it_left_out_and_how_to_take_them_in(
        kb_mcp: Invoke, mixed: Path) -> None:
    (mixed / "page.html").write_text("<h1>Page</h1><p>Text.</p>", encoding="utf-8")
    (mixed / "more.txt").write_text("More notes.\n", encoding="utf-8")
    done = kb_mcp("index", "--kb-path", str(mixed))
    assert done.exit_code == 0, done.stderr
    hint = next(x for x in done.stderr.splitlines() if "formats not enabled" in x)
    assert hint.startswith("kb-mcp: files in formats not enabled: txt (2), html (1); ")
    assert "[parsers].enabled" in hint and "kb-mcp init" in hint
    quiet = kb_mcp("index", "--kb-path", str(mixed), "-q")
    assert "formats not enabled:" not in quiet.stderr  # -q: the summary only
    (mixed / "kb-mcp.toml").write_text('[parsers]\nenabled = ["md", "txt", "html"]\n',
                                       encoding="utf-8")
    taken = kb_mcp("index", "--kb-path", str(mixed))
    assert "3 added" in taken.stdout and "formats not enabled" not in taken.stderr


def test_status_says_when_the_last_run_left_out_formats_it_could_read(
        kb_mcp: Invoke, mixed: Path) -> None:
    text = kb_mcp("status", "--kb-path", str(mixed))
    assert text.exit_code == 0, text.stderr
    note = next(x for x in text.stdout.splitlines() if x.startswith("note:"))
    assert "left out 1 file(s) of formats kb-mcp reads" in note and "kb-mcp init" in note


def test_status_of_an_index_with_nothing_embedded_says_so_not_none(
        kb_mcp: Invoke, tmp_path: Path) -> None:
    empty = tmp_path / "photos"
    empty.mkdir()
    (empty / "cat.heic").write_bytes(b"\x89PNG\r\n")
    assert kb_mcp("index", "--kb-path", str(empty), "-q").exit_code == 0
    text = kb_mcp("status", "--kb-path", str(empty))
    assert text.exit_code == 0, text.stderr
    assert "model: none yet (no chunk embedded)" in text.stdout
    assert "None" not in text.stdout, text.stdout
    assert "note:" not in text.stdout  # a photo is no format kb-mcp reads


def test_a_found_config_that_needs_no_trust_is_named_without_a_warning(
        kb_mcp: Invoke, mixed: Path) -> None:
    # issue 41: the file `kb-mcp init` wrote is greeted as what it is, not as a risk
    assert kb_mcp("init", "--kb-path", str(mixed)).exit_code == 0
    for command in ("status", "doctor"):
        text = kb_mcp(command, "--kb-path", str(mixed))
        line = next(x for x in text.stdout.splitlines() if x.startswith("config:"))
        assert line.endswith("(found in the knowledge base; written by kb-mcp init, formats "
                             "only: needs no trust)"), (command, line)
    (mixed / "kb-mcp.toml").write_text('[parsers]\nenabled = ["md"]\n', encoding="utf-8")
    line = next(x for x in kb_mcp("status", "--kb-path", str(mixed)).stdout.splitlines()
                if x.startswith("config:"))
    assert "not trusted, and needs no trust: it sets nothing that says where data goes" in line
    assert "it may not say where data goes" not in line
