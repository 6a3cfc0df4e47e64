"""`kb-mcp eval --save NAME` / `--compare NAME` on a small real index: runs are kept under
the index folder, never overwritten silently, and a drop beyond the threshold is exit 1."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import Result

from tests.cli.conftest import Invoke, indexed_eval_kb
from tests.conftest import OpenKb

GOLDEN = """\
queries:
  - id: rotate
    kind: lexical
    query: key rotation schedule
    expected: [{path: keys.md, heading: Rotation}]
  - id: deploy
    kind: paraphrase
    query: how do I undo a bad release
    expected: [{path: deploys.md, heading: Rollbacks}]
  - id: oncall
    kind: lexical
    query: pager duty handover
    expected: [{path: oncall.md}]
"""


@pytest.fixture
def evalkb(tmp_path: Path, open_kb: OpenKb) -> tuple[Path, Path]:
    """A three-document knowledge base, indexed, and its golden file (outside the KB)."""
    return indexed_eval_kb(tmp_path, lambda root: open_kb(root).index().added, GOLDEN)


def _eval(kb_mcp: Invoke, kb: tuple[Path, Path], *args: str) -> Result:
    return kb_mcp("eval", "--kb-path", str(kb[0]), "--golden", str(kb[1]), *args)


def _saved(kb: tuple[Path, Path], name: str) -> Path:
    return kb[0] / ".kb-mcp" / "evals" / f"{name}.json"


def test_save_keeps_every_mode_and_what_it_was_measured_on(kb_mcp: Invoke,
                                                          evalkb: tuple[Path, Path]) -> None:
    result = _eval(kb_mcp, evalkb, "--mode", "all", "--save", "base")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    data = json.loads(_saved(evalkb, "base").read_text(encoding="utf-8"))
    assert sorted(data["modes"]) == ["hybrid", "lexical", "vector"]
    hybrid = data["modes"]["hybrid"]
    assert set(hybrid["document"]) == {"recall@1", "recall@5", "recall@10", "mrr@10",
                                       "ndcg@10"}
    assert set(hybrid["section"]) == set(hybrid["document"])
    assert sorted(hybrid["per_kind"]) == ["lexical", "paraphrase"]
    assert data["queries"] == 3
    assert data["golden"]["path"] == str(evalkb[1].resolve())
    assert data["golden"]["sha256"] == hashlib.sha256(evalkb[1].read_bytes()).hexdigest()
    assert data["model"] == "kb-mcp/all-MiniLM-L6-v2-int8"
    assert data["date"][:4].isdigit()


def test_compare_with_the_same_run_is_exit_0(kb_mcp: Invoke,
                                            evalkb: tuple[Path, Path]) -> None:
    assert _eval(kb_mcp, evalkb, "--save", "base").exit_code == 0
    result = _eval(kb_mcp, evalkb, "--compare", "base")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "compared with saved run 'base'" in result.stdout
    assert "no metric dropped by more than 0.01" in result.stdout
    assert "warning" not in result.stderr
    js = _eval(kb_mcp, evalkb, "--compare", "base", "--format", "json", "--threshold", "0")
    assert js.exit_code == 0, js.stderr
    cmp = json.loads(js.stdout)["compare"]
    assert cmp["regressed"] is False and cmp["threshold"] == 0
    assert {r["delta"] for r in cmp["metrics"]} == {0.0}
    assert {(r["mode"], r["level"]) for r in cmp["metrics"]} == {("hybrid", "document"),
                                                                ("hybrid", "section")}


def test_a_saved_run_with_higher_numbers_makes_compare_exit_1_naming_the_metric(
        kb_mcp: Invoke, evalkb: tuple[Path, Path]) -> None:
    assert _eval(kb_mcp, evalkb, "--save", "base").exit_code == 0
    path = _saved(evalkb, "base")
    data = json.loads(path.read_text(encoding="utf-8"))
    now_mrr = data["modes"]["hybrid"]["document"]["mrr@10"]
    data["modes"]["hybrid"]["document"]["mrr@10"] = now_mrr + 0.5
    path.write_text(json.dumps(data), encoding="utf-8")

    result = _eval(kb_mcp, evalkb, "--compare", "base")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    [line] = [ln for ln in result.stdout.splitlines() if "REGRESSED" in ln]
    assert line.split()[:4] == ["mrr@10", "hybrid", "document", "(overall)"]
    assert "1 metric(s) dropped by more than 0.01: mrr@10 (hybrid, document)" in result.stdout
    js = _eval(kb_mcp, evalkb, "--compare", "base", "--format", "json")
    assert js.exit_code == 1
    worse = [r for r in json.loads(js.stdout)["compare"]["metrics"] if r["regressed"]]
    assert [(r["metric"], r["level"], r["kind"]) for r in worse] == [
        ("mrr@10", "document", None)]
    assert worse[0]["delta"] == pytest.approx(-0.5)
    # a threshold wider than the drop lets it pass
    assert _eval(kb_mcp, evalkb, "--compare", "base", "--threshold", "0.6").exit_code == 0


def test_compare_warns_once_when_the_golden_file_changed(kb_mcp: Invoke,
                                                        evalkb: tuple[Path, Path]) -> None:
    assert _eval(kb_mcp, evalkb, "--save", "base").exit_code == 0
    evalkb[1].write_text(GOLDEN + "# edited\n", encoding="utf-8")
    result = _eval(kb_mcp, evalkb, "--compare", "base")
    assert result.exit_code == 0, result.stderr
    warnings = [ln for ln in result.stderr.splitlines() if "warning" in ln]
    assert len(warnings) == 1 and "golden file differs" in warnings[0]


@pytest.mark.parametrize("name", ["../escape", "a/b", "", "x" * 65, "sp ace"])
@pytest.mark.parametrize("option", ["--save", "--compare"])
def test_a_bad_name_is_a_usage_error(kb_mcp: Invoke, evalkb: tuple[Path, Path],
                                     option: str, name: str) -> None:
    result = _eval(kb_mcp, evalkb, option, name)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert f"Invalid value for '{option}'" in result.stderr
    assert not (evalkb[0] / ".kb-mcp" / "evals").exists()


def test_compare_with_a_run_that_does_not_exist_is_exit_2(kb_mcp: Invoke,
                                                         evalkb: tuple[Path, Path]) -> None:
    result = _eval(kb_mcp, evalkb, "--compare", "nope")
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith("kb-mcp: error: no saved eval run 'nope'")
    assert result.stdout == ""


def test_save_refuses_to_overwrite_without_the_flag(kb_mcp: Invoke,
                                                   evalkb: tuple[Path, Path]) -> None:
    assert _eval(kb_mcp, evalkb, "--save", "base").exit_code == 0
    path = _saved(evalkb, "base")
    path.write_text(path.read_text(encoding="utf-8").replace('"queries": 3', '"queries": 99'),
                    encoding="utf-8")
    refused = _eval(kb_mcp, evalkb, "--save", "base")
    assert refused.exit_code == 2, (refused.stdout, refused.stderr)
    assert "already exists" in refused.stderr and "--overwrite" in refused.stderr
    assert json.loads(path.read_text(encoding="utf-8"))["queries"] == 99
    replaced = _eval(kb_mcp, evalkb, "--save", "base", "--overwrite")
    assert replaced.exit_code == 0, replaced.stderr
    assert json.loads(path.read_text(encoding="utf-8"))["queries"] == 3
    assert sorted(p.name for p in path.parent.iterdir()) == ["base.json"]


def test_compare_then_save_in_one_run(kb_mcp: Invoke, evalkb: tuple[Path, Path]) -> None:
    assert _eval(kb_mcp, evalkb, "--save", "v1").exit_code == 0
    result = _eval(kb_mcp, evalkb, "--compare", "v1", "--save", "v2")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "compared with saved run 'v1'" in result.stdout
    assert sorted(p.name for p in _saved(evalkb, "v1").parent.iterdir()) == [
        "v1.json", "v2.json"]


def test_compare_covers_only_the_modes_measured_now(kb_mcp: Invoke,
                                                   evalkb: tuple[Path, Path]) -> None:
    assert _eval(kb_mcp, evalkb, "--mode", "all", "--save", "all3").exit_code == 0
    result = _eval(kb_mcp, evalkb, "--mode", "vector", "--compare", "all3", "--format", "json")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["compare"]["metrics"]
    assert {r["mode"] for r in rows} == {"vector"}
    assert all(r["delta"] == 0.0 for r in rows)
