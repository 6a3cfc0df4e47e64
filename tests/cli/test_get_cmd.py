"""``kb-mcp get``: a whole document, some lines, a section, an outline, and the errors."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Invoke
from tests.integration.test_ranged_reads import GUIDE, SETUP, ledger_text


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


def test_get_reads_a_document_over_the_read_cap_in_parts(kb_mcp: Invoke, kb: Path) -> None:
    text = ledger_text(2 * 1024 * 1024)
    (kb / "ledger.md").write_bytes(text.encode())
    refused = kb_mcp("get", "ledger.md", "--kb-path", str(kb))
    assert refused.exit_code == 1 and "--lines 1-1000" in refused.stderr
    parts, start = [], 1
    while start:
        got = json.loads(kb_mcp("get", "ledger.md", "--lines", f"{start}-{start + 40_000}",
                                "--format", "json", "--kb-path", str(kb)).stdout)
        parts.append(got["content"])
        start = got["next_start_line"]
    assert len(parts) >= 2 and "".join(parts) == text


def test_get_section_and_outline_come_from_the_index(kb_mcp: Invoke, kb: Path) -> None:
    (kb / "guide.md").write_text(GUIDE, encoding="utf-8")
    no_index = kb_mcp("get", "guide.md", "--section", "Setup", "--kb-path", str(kb))
    assert no_index.exit_code == 2 and "not indexed" in no_index.stderr
    assert kb_mcp("index", "--kb-path", str(kb), "--quiet").exit_code == 0
    section = kb_mcp("get", "guide.md", "--section", "Setup", "--kb-path", str(kb))
    assert section.exit_code == 0, section.stderr
    assert section.stdout == SETUP and "lines 5-8 of 12" in section.stderr
    outline = kb_mcp("get", "guide.md", "--outline", "--kb-path", str(kb))
    assert outline.stdout.splitlines() == [
        "Guide  (lines 1-12)", "  Setup  (lines 5-8)", "  Usage  (lines 10-12)"]
    both = kb_mcp("get", "guide.md", "--section", "Setup", "--page", "2", "--kb-path", str(kb))
    assert both.exit_code == 2 and "at most one of" in both.stderr
