"""Exit codes on a real index: 0 done, 1 a failure while running (doctor: findings; an
unreachable database), 2 a usage error or could not run (decision 0027). The index is
built once per test with the session's embedding model."""

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
    assert (data["documents"], data["read_only"], data["schema_revision"]) == (2, False, "0008")
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


@pytest.mark.parametrize(("args", "message"), [
    (("", ), "query must be a non-empty string"),
    (("keys", "--date-from", "2024-02-01", "--date-to", "2024-01-01"),
     "date_from is after date_to"),
    (("keys", "--date-from", "yesterday"), "date_from must be a date as YYYY-MM-DD"),
    (("keys", "--date-to", "2024-02-30"), "date_to is not a real date"),
])
def test_a_bad_query_is_a_usage_error_exit_2_with_one_line(
        kb_mcp: Invoke, indexed: Path, args: tuple[str, ...], message: str) -> None:
    result = kb_mcp("search", *args, "--kb-path", str(indexed), "--no-server")
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr.startswith(f"kb-mcp: error: {message}")
    assert result.stderr.count("\n") == 1


def test_a_bad_option_is_exit_2(kb_mcp: Invoke, indexed: Path) -> None:
    result = kb_mcp("search", "keys", "--kb-path", str(indexed), "--limit", "0")
    assert result.exit_code == 2 and "--limit" in result.stderr


def test_an_unreachable_database_is_a_runtime_failure_exit_1(
        kb_mcp: Invoke, kb: Path, tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = _config(tmp_path, f'database_url = "postgresql+psycopg://kb:pw@127.0.0.1:{port}/kb"\n')
    for command in (("status",), ("search", "keys", "--no-server")):
        result = kb_mcp(*command, "--kb-path", str(kb), "--config", config)
        assert result.exit_code == 1, (command, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("kb-mcp: error: cannot connect"), lines
        assert "pw" not in result.stderr and result.stdout == ""


def test_an_index_run_on_a_full_disk_is_one_line_exit_1_and_loses_nothing(
        kb_mcp: Invoke, indexed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills up between two runs: the second one's first write (the writer lock's
    holder line) fails, and the run ends there in one sentence, the index as it was."""
    import errno
    import os

    config = _config(tmp_path, '[parsers]\nenabled = ["md", "txt"]\n')
    (indexed / "c.md").write_text("# Gamma\n\nGamma notes on the backup window.\n",
                                  encoding="utf-8")

    def full(fd: int, data: bytes, offset: int) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patch:
        patch.setattr(os, "pwrite", full)
        result = kb_mcp("index", "--kb-path", str(indexed), "--config", config)
    assert result.exit_code == 1, (result.stdout, result.stderr, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines  # no traceback
    assert lines[0].startswith("kb-mcp: error: cannot write the index at "), lines
    assert os.strerror(errno.ENOSPC) in lines[0] and "free some space" in lines[0]
    status = json.loads(kb_mcp("status", "--kb-path", str(indexed), "--format", "json").stdout)
    assert status["documents"] == 2  # nothing lost, nothing half-added
    again = kb_mcp("index", "--kb-path", str(indexed), "--config", config)
    assert again.exit_code == 0, again.stderr  # space back: the next run adds the new file
    status = json.loads(kb_mcp("status", "--kb-path", str(indexed), "--format", "json").stdout)
    assert status["documents"] == 3
