"""``kb-mcp get``: a whole document, some lines, a section, an outline, and the errors."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Invoke
from tests.integration.test_one_refusal import NOT_SERVED, hostile_folder
from tests.integration.test_ranged_reads import GUIDE, PART_TWO, SETUP, SMALL, ledger_text


def test_get_prints_a_document_or_the_lines_asked_for(kb_mcp: Invoke, kb: Path) -> None:
    whole = kb_mcp("get", "a.md", "--kb-path", str(kb))
    assert whole.exit_code == 0, whole.stderr
    assert whole.stdout == (kb / "a.md").read_text(encoding="utf-8")
    assert whole.stderr == ""
    part = kb_mcp("get", "a.md", "--lines", "3-3", "--kb-path", str(kb))
    assert part.exit_code == 0, part.stderr
    assert part.stdout == "The alpha notes talk about key rotation.\n"
    assert "lines 3-3 of 3; that is the end" in part.stderr
    data = json.loads(kb_mcp("get", "a.md", "--lines", "1-2", "--format", "json",
                             "--kb-path", str(kb)).stdout)
    assert (data["content"], data["is_range"], data["next_start_line"]) == (
        "# Alpha\n\n", True, 3)
    assert not (kb / ".kb-mcp").exists()  # reading never creates an index


def test_get_past_the_end_is_exit_2_naming_the_length(kb_mcp: Invoke, kb: Path) -> None:
    result = kb_mcp("get", "a.md", "--lines", "7-9", "--kb-path", str(kb))
    assert result.exit_code == 2 and result.stdout == ""
    assert "start_line 7 is past the end of 'a.md', which has 3 lines" in result.stderr


def test_get_prints_the_first_part_of_a_document_over_the_read_cap_and_how_to_go_on(
        kb_mcp: Invoke, kb: Path) -> None:
    text = ledger_text(2 * 1024 * 1024)
    (kb / "ledger.md").write_bytes(text.encode())
    first = kb_mcp("get", "ledger.md", "--kb-path", str(kb))
    assert first.exit_code == 0, first.stderr
    printed = first.stdout_bytes.decode()  # (``stdout`` would read CRLF as LF)
    assert 0 < len(printed.encode()) <= 1024 * 1024 and text.startswith(printed)
    shown = printed.count("\n")
    total = text.count("\n")
    notes = first.stderr.splitlines()
    assert notes[0] == "kb-mcp: outline:" and notes[1].startswith("Ledger  (lines 1-")
    assert notes[2].startswith("  Ledger part 0  (lines 3-") and len(notes) == 1 + 41 + 1
    assert notes[-1] == (f"kb-mcp: lines 1-{shown} of {total}; next: --lines "
                         f"{shown + 1}-{min(2 * shown, total)}")
    parts, start = [printed], shown + 1
    while start:
        got = json.loads(kb_mcp("get", "ledger.md", "--lines", f"{start}-{start + 40_000}",
                                "--format", "json", "--kb-path", str(kb)).stdout)
        parts.append(got["content"])
        start = got["next_start_line"]
    assert len(parts) >= 2 and "".join(parts) == text


def test_get_help_says_what_a_big_document_prints(kb_mcp: Invoke) -> None:
    shown = " ".join(kb_mcp("get", "--help").stdout.split())
    assert "with no --lines, --section or --page it prints its first part" in shown
    assert "its outline and the --lines of the next part" in shown


def test_get_section_and_outline_come_from_the_files_headings(kb_mcp: Invoke, kb: Path
                                                              ) -> None:
    (kb / "guide.md").write_text(GUIDE, encoding="utf-8")
    (kb / "small.md").write_text(SMALL, encoding="utf-8")
    for indexed in (False, True):  # the same before and after an index run merged chunks
        if indexed:
            assert kb_mcp("index", "--kb-path", str(kb), "--quiet").exit_code == 0
        section = kb_mcp("get", "guide.md", "--section", "Setup", "--kb-path", str(kb))
        assert section.exit_code == 0, section.stderr
        assert section.stdout == SETUP and "lines 5-8 of 12" in section.stderr
        two = kb_mcp("get", "small.md", "--section", "Part two", "--kb-path", str(kb))
        assert two.stdout == PART_TWO and "Part one" not in two.stdout, indexed
        outline = kb_mcp("get", "guide.md", "--outline", "--kb-path", str(kb))
        assert outline.stdout.splitlines() == [
            "Guide  (lines 1-12)", "  Setup  (lines 5-8)", "  Usage  (lines 10-12)"]
    unknown = kb_mcp("get", "small.md", "--section", "Part three", "--kb-path", str(kb))
    assert unknown.exit_code == 2 and "its sections: Intro (lines 1-11)" in unknown.stderr
    both = kb_mcp("get", "guide.md", "--section", "Setup", "--page", "2", "--kb-path", str(kb))
    assert both.exit_code == 2 and "at most one of" in both.stderr


def test_get_refuses_a_name_that_is_not_served_as_it_refuses_a_missing_one(
        kb_mcp: Invoke, tmp_path: Path) -> None:
    hostile, empty = tmp_path / "hostile", tmp_path / "empty"
    hostile_folder(hostile, tmp_path / "outside")
    (empty / "a.md").parent.mkdir()
    (empty / "a.md").write_text("# Alpha\n\nplain notes\n", encoding="utf-8")
    for name in NOT_SERVED:
        got = kb_mcp("get", name, "--kb-path", str(hostile))
        missing = kb_mcp("get", name, "--kb-path", str(empty))
        assert (got.exit_code, got.stdout, got.stderr) == (
            missing.exit_code, missing.stdout, missing.stderr), name
        assert missing.exit_code == 1
        assert missing.stderr == f"kb-mcp: error: {name!r} refused: no such document\n"
    why = kb_mcp("get", "link.md", "-v", "--kb-path", str(hostile))
    assert "symbolic link" in why.stderr  # asked for: the reason, on the user's terminal
