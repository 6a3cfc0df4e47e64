"""``kb-mcp search --field`` / ``--not-field`` on a knowledge base whose ``kb-mcp.toml``
declares ``[fields]`` (decision 0036): exact, any-of and range tests, and the errors a user
sees for an undeclared field, a wrong type and a test that does not parse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import Invoke
from tests.conftest import write_files

FILES = {
    "a.md": "---\nstatus: draft\nyear: 2021\nteam: [infra, web]\n---\n# Release\n\n"
            "Release checklist for the storage service.\n",
    "b.md": "---\nstatus: final\nyear: 2019\nteam: web\n---\n# Release\n\n"
            "Release checklist for the web storage front.\n",
    "c.md": "---\nstatus: final\nyear: 2024\n---\n# Release\n\n"
            "Release checklist for the storage backups.\n",
}  # fmt: skip
CONFIG = '[fields]\nstatus = "string"\nyear = "number"\nteam = "list"\n'


@pytest.fixture
def root(tmp_path: Path, kb_mcp: Invoke) -> Path:
    root = tmp_path / "kb"
    write_files(root, {**FILES, "kb-mcp.toml": CONFIG})
    result = kb_mcp("index", "--kb-path", str(root))
    assert result.exit_code == 0, result.output
    return root


def _found(kb_mcp: Invoke, root: Path, *options: str) -> set[str]:
    result = kb_mcp("search", "release checklist storage", "--kb-path", str(root),
                    "--no-server", "--format", "json", *options)
    assert result.exit_code == 0, result.output
    return {hit["path"] for hit in json.loads(result.stdout)["results"]}


def test_field_options_filter_the_search(kb_mcp: Invoke, root: Path) -> None:
    assert _found(kb_mcp, root) == {"a.md", "b.md", "c.md"}
    assert _found(kb_mcp, root, "--field", "status=final") == {"b.md", "c.md"}
    assert _found(kb_mcp, root, "--field", "team=infra", "--field", "team=WEB") == {
        "a.md", "b.md"}
    assert _found(kb_mcp, root, "--field", "year>=2020", "--field", "year<2024") == {"a.md"}
    assert _found(kb_mcp, root, "--field", "year > 2019") == {"a.md", "c.md"}
    assert _found(kb_mcp, root, "--not-field", "team=web") == {"c.md"}
    assert _found(kb_mcp, root, "--field", "status=final", "--not-field", "year<=2019") == {
        "c.md"}


def test_field_mistakes_are_one_clear_line(kb_mcp: Invoke, root: Path) -> None:
    undeclared = kb_mcp("search", "release", "--kb-path", str(root), "--no-server",
                        "--field", "owner=ana")
    assert undeclared.exit_code == 2
    assert ("fields: 'owner' is not a declared field; declared fields: status (string), "
            "team (list), year (number)") in undeclared.output
    wrong = kb_mcp("search", "release", "--kb-path", str(root), "--no-server",
                   "--field", "year>=recent")
    assert wrong.exit_code == 2
    assert "fields.year.gte: 'recent' is not a number" in wrong.output
    unparsed = kb_mcp("search", "release", "--kb-path", str(root), "--no-server",
                      "--field", "year")
    assert unparsed.exit_code == 2
    assert "write NAME=VALUE" in unparsed.output
    mixed = kb_mcp("search", "release", "--kb-path", str(root), "--no-server",
                   "--field", "year=2021", "--field", "year<2030")
    assert mixed.exit_code == 2
    assert "either values (=) or bounds" in mixed.output
