"""`kb-mcp tune`: a cross-validated grid over the fusion keys that prints, never writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbmcp_core.fusion import tuning_grid
from tests.cli.conftest import Invoke
from tests.conftest import OpenKb

DOCS = {
    "parental-leave.md": "# Parental leave\n\nNew parents may take sixteen paid weeks after a "
                         "birth or an adoption, in one block or split in two.\n",
    "keys.md": "# Keys\n\n## Rotation\n\nSigning keys follow a rotation schedule of 90 days.\n",
    "deploys.md": "# Deploys\n\n## Rollbacks\n\nTo revert a broken deploy, redeploy the "
                  "previous tag and confirm the health checks.\n",
    "oncall.md": "# On-call\n\nThe pager duty handover happens every Monday at ten.\n",
    "laptops.md": "# Laptops\n\nEngineers get a new laptop every three years; return the old "
                  "one to IT.\n",
    "travel.md": "# Travel\n\nBook flights through the travel desk; economy below six hours.\n",
    # distractors: each shares one word with a query, not its meaning
    "remote.md": "# Remote work\n\nStaff may work from home on Fridays.\n",
    "changelog.md": "# Changelog\n\nThe release added dark mode and faster builds.\n",
    "lab.md": "# Lab notebook\n\nEvery experiment goes in the lab notebook.\n",
    "plan.md": "# Business plan\n\nThe business plan lists the markets for next year.\n",
}
#: Paraphrases: no query word is in the answering document, so only the vector leg finds
#: them, while a distractor shares their words.
GOLDEN = """\
queries:
  - {id: leave, query: how long can mothers and fathers stay home with a baby,
     expected: [{path: parental-leave.md}]}
  - {id: undo, query: go back to the last good release, expected: [{path: deploys.md}]}
  - {id: computer, query: when is my notebook computer replaced, expected: [{path: laptops.md}]}
  - {id: trip, query: who buys plane tickets for business trips, expected: [{path: travel.md}]}
"""


@pytest.fixture
def tune_kb(tmp_path: Path, open_kb: OpenKb) -> tuple[Path, Path, Path]:
    """A small indexed knowledge base, its golden file, and a config that switches the
    vector leg off in hybrid search (a fixed lexical weight of 1)."""
    root = tmp_path / "kb"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    config = tmp_path / "kb-mcp.toml"
    config.write_text(f'kb_path = "{root.as_posix()}"\n\n[search]\nlexical_weight = 1.0\n'
                      "lexical_weight_min = 1.0\n", encoding="utf-8")
    assert open_kb(root).index().added == len(DOCS)
    golden = tmp_path / "golden.yml"
    golden.write_text(GOLDEN, encoding="utf-8")
    return root, golden, config


def _tune(kb_mcp: Invoke, kb: tuple[Path, Path, Path], *args: str) -> str:
    result = kb_mcp("tune", "--config", str(kb[2]), "--golden", str(kb[1]), "--folds", "2",
                    *args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def test_tune_finds_a_better_fusion_and_prints_the_lines_to_paste(
    kb_mcp: Invoke, tune_kb: tuple[Path, Path, Path]
) -> None:
    before = tune_kb[2].read_bytes()
    out = _tune(kb_mcp, tune_kb)
    assert "current: " in out and "lexical_weight=1 " in out.split("current: ")[1]
    held_out = float(out.split("held-out score of choosing by this file: ")[1].split()[0])
    current = float(out.split("current: ")[1].split()[0])
    assert held_out > current
    assert "put these lines in kb-mcp.toml (nothing was written)" in out
    assert "[search]\nfusion = " in out
    assert tune_kb[2].read_bytes() == before  # the config is never written


def test_tune_json_scores_the_current_setting_and_the_whole_grid(
    kb_mcp: Invoke, tune_kb: tuple[Path, Path, Path]
) -> None:
    data = json.loads(_tune(kb_mcp, tune_kb, "--format", "json"))
    assert data["queries"] == 4 and data["metric"] == "ndcg@10"
    assert data["current"]["setting"]["lexical_weight"] == 1.0
    # the current setting first, then every grid point
    assert len(data["candidates"]) == 1 + len(tuning_grid())
    assert data["best"]["score"] == max(c["score"] for c in data["candidates"])
    assert data["best"]["score"] > data["current"]["score"]
    assert data["best"]["toml"][0] == "[search]"
    assert len(data["chosen_per_fold"]) == 2


def test_a_bad_fusion_key_is_refused_before_anything_runs(
    kb_mcp: Invoke, tune_kb: tuple[Path, Path, Path]
) -> None:
    tune_kb[2].write_text(f'kb_path = "{tune_kb[0].as_posix()}"\n\n[search]\n'
                          'fusion = "average"\n', encoding="utf-8")
    result = kb_mcp("tune", "--config", str(tune_kb[2]), "--golden", str(tune_kb[1]))
    assert result.exit_code == 2
    assert "[search].fusion must be one of weighted, rrf" in result.stderr
