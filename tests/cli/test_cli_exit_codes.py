"""Exit codes on a real index: 0 done, 1 a failure while running (doctor: findings),
2 could not run. The index is built once per test with the session's embedding model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import Invoke
from tests.conftest import OpenKb


@pytest.fixture
def indexed(kb: Path, open_kb: OpenKb) -> Path:
    """``kb`` with a Markdown and a text file, indexed with both formats enabled."""
    (kb / "b.txt").write_text("Plain text notes on the staging server.\n", encoding="utf-8")
    summary = open_kb(kb, enabled_formats=("md", "txt")).index()
    assert summary.added == 2
    return kb


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "kb-mcp.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_status_reads_the_index_through_the_facade(kb_mcp: Invoke, indexed: Path) -> None:
    result = kb_mcp("status", "--kb-path", str(indexed), "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["documents"], data["read_only"], data["schema_revision"]) == (2, False, "0004")
    assert data["kb_path"] == str(indexed.resolve())
    text = kb_mcp("status", "--kb-path", str(indexed))
    assert text.exit_code == 0
    assert "documents: 2" in text.stdout
    assert "watcher: not running" in text.stdout


def test_doctor_exits_0_when_healthy(kb_mcp: Invoke, indexed: Path, tmp_path: Path) -> None:
    config = _config(tmp_path, '[parsers]\nenabled = ["md", "txt"]\n')
    result = kb_mcp("doctor", "--kb-path", str(indexed), "--config", config)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "healthy: no findings" in result.stdout


def test_doctor_exits_1_on_findings(kb_mcp: Invoke, indexed: Path) -> None:
    # The default configuration enables Markdown only: the indexed text file is a finding.
    result = kb_mcp("doctor", "--kb-path", str(indexed), "--format", "json")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    checks = [f["check"] for f in json.loads(result.stdout)["findings"]]
    assert checks == ["extension-not-enabled"]


def test_a_model_mismatch_is_exit_2(kb_mcp: Invoke, indexed: Path, tmp_path: Path) -> None:
    config = _config(tmp_path, '[embedding]\nmodel = "BAAI/bge-small-en-v1.5"\n')
    result = kb_mcp("index", "--kb-path", str(indexed), "--config", config)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr.startswith("kb-mcp: error: ")
    assert "--force" in result.stderr and "kb-mcp/all-MiniLM-L6-v2-int8" in result.stderr


def test_a_bad_query_is_exit_1_with_one_line(kb_mcp: Invoke, indexed: Path) -> None:
    result = kb_mcp("search", "keys", "--kb-path", str(indexed), "--date-from", "2024-02-01",
                    "--date-to", "2024-01-01")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr == "kb-mcp: error: date_from is after date_to\n"
