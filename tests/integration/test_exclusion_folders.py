"""The exclusion rules answer from each folder's remembered verdict (decision 0058's
addendum) exactly as they do looking at every part of the path again: excluded folder
names, the index folder, a folder holding another index, ``.kb-mcpignore`` patterns
(negations and folder patterns included), any case."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbmcp_adapters.filesystem.exclusion import ExclusionRules

IGNORE = ["*.tmp", "drafts/", "!drafts/keep.md", "build/**/out.md", "Secret*", "/top.md",
          "deep/*/x.md"]

PATHS = [
    "a.md", "top.md", "sub/top.md", "x.tmp", "notes/x.TMP", "drafts/a.md", "drafts/keep.md",
    "Drafts/b.md", "build/1/2/out.md", "build/out.md", "secrets.md", "notes/SecretPlan.md",
    "node_modules/p/readme.md", "src/Node_Modules/x.md", ".git/config", "idx/index.db",
    "old/.kb-mcp/index.db", "other/held/index.db", "other/held/x.md", "deep/a/x.md",
    "deep/a/b/x.md", "a//b.md", "a/./b.md", "./c.md", "a/b/", "a/.", "..", "a/../b.md",
    "notes", "notes/sub", "drafts", "build/1", ".kb-mcp", "/abs.md", "ünï/Çé.md",
]


@pytest.fixture
def rules(tmp_path: Path) -> ExclusionRules:
    held = tmp_path / "other" / "held"
    (held / "vectors").mkdir(parents=True)
    (held / "index.db").write_bytes(b"")
    return ExclusionRules(["Node_Modules"], IGNORE, index_dir_rel=".kb-mcp", root=tmp_path)


@pytest.mark.parametrize("is_dir", [False, True])
def test_a_folder_remembered_answers_as_every_part_looked_at_again(
        rules: ExclusionRules, is_dir: bool) -> None:
    for rel in PATHS * 2:  # the second time from what the first remembered
        assert rules.reason(rel, is_dir) == rules.whole_reason(rel, is_dir), rel


def test_what_is_excluded_under_a_remembered_folder(rules: ExclusionRules) -> None:
    assert rules.reason("drafts/a.md") is not None
    assert rules.reason("drafts/x/y.md") is not None  # nothing under it comes back
    assert rules.reason("node_modules/p/readme.md") is not None
    assert rules.reason("other/held/x.md") is not None
    assert rules.reason("notes/a.md") is None
