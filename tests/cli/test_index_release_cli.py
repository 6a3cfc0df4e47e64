"""``kb-mcp index`` releases the embedding model once its vectors are written, before they
are compacted (decision 0045, session-10 addendum), and says so with ``-v``."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Invoke


def test_kb_mcp_index_releases_the_model_before_compacting(kb_mcp: Invoke, kb: Path) -> None:
    result = kb_mcp("index", "--kb-path", str(kb), "-v")
    assert result.exit_code == 0, result.stderr
    assert "released the embedding model before compacting the vectors" in result.stderr
    found = kb_mcp("search", "key rotation", "--kb-path", str(kb), "--mode", "vector")
    assert found.exit_code == 0, found.stderr
    assert "a.md" in found.stdout
