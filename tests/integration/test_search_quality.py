"""Search-quality floors on the in-repo eval fixture: each leg, the fusion, and `kb-mcp eval`.

The fixture (``tests/fixtures/eval-kb/``, golden file beside it) is a small company handbook
with golden queries of four kinds, each answerable by one retriever in particular:

* ``lexical``: rare tokens only the text contains (error codes, config keys, code names);
* ``semantic``: paraphrases that share no word with the answering document;
* ``mixed``: ordinary questions both legs can answer;
* ``japanese``: Japanese questions, which the default English model cannot read.

A regression in the lexical leg, the vector leg or the fusion therefore moves a number
asserted here. Failure messages carry the whole measured table.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_adapters.evaluation.golden import load_golden
from kbmcp_adapters.parsers.headings import clean_heading
from kbmcp_core.evaluation import METRICS, EvalReport, GoldenQuery, fold
from kbmcp_core.search_request import MODES
from tests.eval_support import measure, table

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "eval-kb"
GOLDEN = FIXTURE.with_name("eval-kb.golden.yml")
KINDS = {"lexical", "semantic", "mixed", "japanese"}

#: Hybrid may trail the better single leg by this much nDCG@10 (rounding, one tie).
NDCG_SLACK = 0.01
#: Hybrid document recall@5 floor. Vector-only alone reaches 0.951 on this fixture; a
#: hybrid below 0.90 is losing answers that one of its legs already ranks in the top 5.
HYBRID_RECALL5_FLOOR = 0.95  # measured 1.000 (2026-11-29)
#: CI floors of hybrid search on this fixture, just below the figures measured with the
#: fusion of decision 0015 (2026-11-30, in brackets): one of 41 answers slipping from rank 1
#: to rank 2 stays above them; two, or a fusion that leans too far to one leg (a fixed
#: lexical weight of 0.7 measures 0.935 / 0.917 nDCG@10), fails the build.
HYBRID_FLOORS = {
    ("document", "ndcg@10"): 0.955,  # 0.962
    ("document", "mrr@10"): 0.94,  # 0.950
    ("document", "recall@1"): 0.90,  # 0.927
    ("section", "ndcg@10"): 0.935,  # 0.944
    ("section", "mrr@10"): 0.915,  # 0.926
    ("section", "recall@1"): 0.85,  # 0.878
}
#: "Clearly beats": the leg a kind is written for leads the other by this much nDCG@10
#: (measured: lexical kind 1.000 vs 0.664, semantic kind 0.892 vs 0.000).
KIND_MARGIN = 0.20
#: "Hybrid keeps it": per kind, hybrid trails the winning leg by at most this much
#: (about two of fourteen queries slipping from rank 1 to rank 2).
KIND_KEEP = 0.05

#: Only the lexical leg can find this: the embedding of the query is pulled to other
#: documents about invoices, while the flag key is written only in the feature-flag guide.
LEXICAL_ONLY = ("invoices.bulk_export", "engineering/feature-flags.md")
#: Only the vector leg can find this: no word of the query (after stemming) occurs anywhere
#: in the parental-leave document, yet it is what the question is about.
VECTOR_ONLY = ("how much time off do new mothers and fathers get", "people/parental-leave.md")


@pytest.fixture(scope="module")
def indexed(
    tmp_path_factory: pytest.TempPathFactory, embedder: FastEmbedEmbedder
) -> Iterator[tuple[Path, KnowledgeBase]]:
    """A copy of the fixture (the repository is never written), indexed once per module."""
    root = tmp_path_factory.mktemp("quality") / "eval-kb"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns(".kb-mcp"))
    # The same construction as the `open_kb` fixture, at module scope.
    settings = build_settings(None, cwd=root, kb_path=root)
    kb = KnowledgeBase(bootstrap(settings, embedder=embedder))
    try:
        summary = kb.index()
        n_docs = len(list(FIXTURE.rglob("*.md")))
        outcome = (summary.added, summary.failed, summary.skipped)
        assert outcome == (n_docs, 0, 0), summary.warnings
        yield root, kb
    finally:
        kb.close()


@pytest.fixture(scope="module")
def queries() -> list[GoldenQuery]:
    return load_golden(GOLDEN)


@pytest.fixture(scope="module")
def reports(
    indexed: tuple[Path, KnowledgeBase], queries: list[GoldenQuery]
) -> dict[str, EvalReport]:
    """The three retrievers measured on the golden queries, as `kb-mcp eval` measures them."""
    return measure(indexed[1], queries)


def kind_ndcg(report: EvalReport, kind: str) -> float:
    return report.per_kind[kind]["document"]["ndcg@10"]


def paths(kb: KnowledgeBase, query: str, mode: str, limit: int) -> list[str]:
    return [h.path for h in kb.search(query, limit=limit, mode=mode).results]


def test_golden_file_points_at_real_sections(queries: list[GoldenQuery]) -> None:
    """A renamed file or heading in the fixture would otherwise just read as a bad score."""
    assert {q.kind for q in queries} == KINDS
    assert len({q.id for q in queries}) == len(queries)
    for q in queries:
        for e in q.expected:
            doc = FIXTURE / e.path
            assert doc.is_file(), f"{q.id}: {e.path} is not in the fixture"
            headings = {
                fold(clean_heading(m))
                for m in re.findall(r"^#{1,6} (.+)$", doc.read_text("utf-8"), re.M)
            }
            assert e.heading is not None and fold(e.heading) in headings, (q.id, e.heading)


def test_hybrid_ranks_at_least_as_well_as_the_better_leg(reports: dict[str, EvalReport]) -> None:
    hybrid, vector, lexical = (reports[m] for m in MODES)
    for level in ("document", "section"):
        best = max(getattr(vector, level)["ndcg@10"], getattr(lexical, level)["ndcg@10"])
        assert getattr(hybrid, level)["ndcg@10"] >= best - NDCG_SLACK, level + table(reports)


def test_hybrid_finds_most_answers_in_its_top_five(reports: dict[str, EvalReport]) -> None:
    assert reports["hybrid"].document["recall@5"] >= HYBRID_RECALL5_FLOOR, table(reports)


@pytest.mark.parametrize(("level", "metric"), sorted(HYBRID_FLOORS))
def test_hybrid_stays_above_the_ci_floors(reports: dict[str, EvalReport], level: str,
                                         metric: str) -> None:
    measured = getattr(reports["hybrid"], level)[metric]
    assert measured >= HYBRID_FLOORS[(level, metric)], f"{level} {metric}" + table(reports)


def test_rare_tokens_need_the_lexical_leg_and_hybrid_keeps_them(
    reports: dict[str, EvalReport],
) -> None:
    hybrid, vector, lexical = (kind_ndcg(reports[m], "lexical") for m in MODES)
    assert lexical >= vector + KIND_MARGIN, table(reports)
    assert hybrid >= lexical - KIND_KEEP, table(reports)


def test_paraphrases_need_the_vector_leg_and_hybrid_keeps_them(
    reports: dict[str, EvalReport],
) -> None:
    hybrid, vector, lexical = (kind_ndcg(reports[m], "semantic") for m in MODES)
    assert vector >= lexical + KIND_MARGIN, table(reports)
    assert hybrid >= vector - KIND_KEEP, table(reports)


def test_japanese_and_plain_questions_are_answered_first(reports: dict[str, EvalReport]) -> None:
    """Japanese rides on the trigram leg; ordinary questions on both legs."""
    lexical_ja = reports["lexical"].per_kind["japanese"]["document"]
    hybrid_ja = reports["hybrid"].per_kind["japanese"]["document"]
    hybrid_mixed = reports["hybrid"].per_kind["mixed"]["document"]
    assert lexical_ja["recall@1"] >= 0.8, table(reports)
    assert hybrid_ja["ndcg@10"] >= lexical_ja["ndcg@10"] - KIND_KEEP, table(reports)
    assert hybrid_mixed["recall@1"] >= 0.875, table(reports)


def test_an_answer_only_the_lexical_leg_finds_is_in_the_hybrid_top_three(
    indexed: tuple[Path, KnowledgeBase],
) -> None:
    _, kb = indexed
    query, answer = LEXICAL_ONLY
    assert answer in paths(kb, query, "lexical", 3)
    assert answer not in paths(kb, query, "vector", 10)
    assert answer in paths(kb, query, "hybrid", 3), paths(kb, query, "hybrid", 10)


def test_an_answer_only_the_vector_leg_finds_is_in_the_hybrid_top_three(
    indexed: tuple[Path, KnowledgeBase],
) -> None:
    _, kb = indexed
    query, answer = VECTOR_ONLY
    assert answer in paths(kb, query, "vector", 3)
    assert answer not in paths(kb, query, "lexical", 50)
    assert answer in paths(kb, query, "hybrid", 3), paths(kb, query, "hybrid", 10)


def test_kb_mcp_eval_reports_the_three_retrievers_side_by_side(
    indexed: tuple[Path, KnowledgeBase],
    queries: list[GoldenQuery],
    reports: dict[str, EvalReport],
    kb_env: dict[str, str],
) -> None:
    root, _ = indexed
    argv = ["eval", "--kb-path", str(root), "--golden", str(GOLDEN), "--mode", "all"]
    proc = subprocess.run(
        [sys.executable, "-m", "kbmcp_cli", *argv, "--format", "json"],
        env=kb_env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    modes = json.loads(proc.stdout)["modes"]
    assert [m["mode"] for m in modes] == list(MODES)
    for m in modes:
        assert m["queries"] == len(queries)
        assert set(m["document"]) == set(m["section"]) == set(METRICS)
        assert set(m["per_kind"]) == KINDS
        for levels in m["per_kind"].values():
            assert set(levels) == {"document", "section"}
            assert all(set(v) == set(METRICS) for v in levels.values())
        # the CLI measures exactly what the library measures on the same index
        assert m["document"] == pytest.approx(reports[m["mode"]].as_dict()["document"], abs=1e-3)
        assert all({"id", "document_rank", "section_rank", "top"} <= set(x) for x in m["misses"])
