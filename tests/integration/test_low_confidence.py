"""``low_confidence`` on real questions: true for questions the knowledge base has no answer
to, false for those it answers (decision 0028), measured as ``kb-mcp eval`` measures it.

The in-repo handbook fixture (``tests/fixtures/eval-kb/``) is searched with its own golden
questions (answerable) and with ``tests/fixtures/no-answer/eval-kb.yml``: questions about
software and subjects the handbook never mentions, ``expected: []``. Before decision 0028
the flag fired only when no keyword matched at all, which a natural question almost never
allows: 2 of the 20 no-answer questions were flagged.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_adapters.evaluation.golden import load_golden
from kbmcp_core.evaluation import Flagged
from tests.eval_support import measure

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NO_ANSWER = FIXTURES / "no-answer" / "eval-kb.yml"
ANSWERABLE = FIXTURES / "eval-kb.golden.yml"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory,
            embedder: FastEmbedEmbedder) -> Iterator[tuple[Path, KnowledgeBase]]:
    root = tmp_path_factory.mktemp("lowconf") / "eval-kb"
    shutil.copytree(FIXTURES / "eval-kb", root, ignore=shutil.ignore_patterns(".kb-mcp"))
    kb = KnowledgeBase(bootstrap(build_settings(None, cwd=root, kb_path=root),
                                 embedder=embedder))
    try:
        assert kb.index().failed == 0
        yield root, kb
    finally:
        kb.close()


def test_no_answer_questions_are_flagged_and_answerable_ones_are_not(
        indexed: tuple[Path, KnowledgeBase]) -> None:
    queries = load_golden(NO_ANSWER) + load_golden(ANSWERABLE)
    flagged = measure(indexed[1], queries)["hybrid"].flagged
    assert isinstance(flagged, Flagged)
    assert flagged.no_answer == 20 and flagged.answerable == 41
    assert flagged.no_answer_flagged >= 16, flagged  # >= 80 %
    assert flagged.answerable_flagged <= 4, flagged  # <= 10 %


def test_the_flag_reaches_the_cli_json_and_eval_scores_it(
        indexed: tuple[Path, KnowledgeBase]) -> None:
    from kbmcp_cli.commands import cli

    root, kb = indexed
    res = kb.search("What are the opening hours of the Louvre museum")
    assert res.results and res.low_confidence
    assert res.as_dict()["low_confidence"] is True
    runner = CliRunner()
    out = runner.invoke(cli, ["eval", "--kb-path", str(root), "--golden", str(NO_ANSWER),
                              "--format", "json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["low_confidence"]["no_answer_queries"] == 20
    assert report["low_confidence"]["no_answer_flagged"] >= 0.8
    assert report["document"] == {} and report["misses"] == []
    found = runner.invoke(cli, ["search", "--kb-path", str(root), "--format", "json",
                                "how do we rotate API keys stored in Strongroom"])
    assert found.exit_code == 0, found.output
    assert json.loads(found.output)["low_confidence"] is False
