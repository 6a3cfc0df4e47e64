"""`kb-mcp eval` breaks the metrics down per `kind` of golden query, in text and in JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import Invoke, indexed_eval_kb
from tests.conftest import OpenKb

GOLDEN = """\
queries:
  - id: rotate
    kind: exact
    query: key rotation schedule
    expected: [{path: keys.md, heading: Rotation}]
  - id: handover
    kind: exact
    query: pager duty handover
    expected: [{path: oncall.md}]
  - id: undo
    kind: paraphrase
    query: how do I undo a bad release
    expected: [{path: deploys.md, heading: Rollbacks}]
"""


@pytest.fixture
def kinds_kb(tmp_path: Path, open_kb: OpenKb) -> tuple[Path, Path]:
    return indexed_eval_kb(tmp_path, lambda root: open_kb(root).index().added, GOLDEN)


def _eval(kb_mcp: Invoke, kb: tuple[Path, Path], *args: str) -> str:
    result = kb_mcp("eval", "--kb-path", str(kb[0]), "--golden", str(kb[1]), "--mode", "all",
                    *args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def test_the_text_report_has_a_table_per_kind(kb_mcp: Invoke,
                                             kinds_kb: tuple[Path, Path]) -> None:
    text = _eval(kb_mcp, kinds_kb, "--no-misses")
    data = json.loads(_eval(kb_mcp, kinds_kb, "--format", "json"))
    assert "per kind (exact: 2, paraphrase: 1 queries)" in text
    rows = {tuple(line.split()[:3]): [float(x) for x in line.split()[3:]]
            for line in text.split("per kind", 1)[1].splitlines()[2:] if line.strip()}
    # every mode, kind and level the JSON has, with the same numbers
    expected = {
        (m["mode"], kind, level): [round(values[k], 3) for k in m["document"]]
        for m in data["modes"] for kind, levels in m["per_kind"].items()
        for level, values in levels.items() if values
    }
    assert len(expected) == 3 * 2 * 2  # modes x kinds x levels
    assert rows == expected


def test_the_json_report_counts_the_queries_of_each_kind(kb_mcp: Invoke,
                                                        kinds_kb: tuple[Path, Path]) -> None:
    data = json.loads(_eval(kb_mcp, kinds_kb, "--format", "json"))
    for m in data["modes"]:
        assert m["queries_per_kind"] == {"exact": 2, "paraphrase": 1}


def test_a_golden_file_without_kinds_prints_no_per_kind_table(
    kb_mcp: Invoke, kinds_kb: tuple[Path, Path]
) -> None:
    root, golden = kinds_kb
    golden.write_text(GOLDEN.replace("    kind: exact\n", "").replace(
        "    kind: paraphrase\n", ""), encoding="utf-8")
    assert "per kind" not in _eval(kb_mcp, kinds_kb)
