"""Question-shaped queries lean on the vector leg (decision 0028, session-8 addendum)."""

from __future__ import annotations

from collections.abc import Collection

import pytest

from kbmcp_core.evaluation import Ranked
from kbmcp_core.fusion import Fusion
from kbmcp_core.index_deps import IndexDeps
from kbmcp_core.index_run import run_index
from kbmcp_core.offer import OfferRules
from kbmcp_core.ports import ChunkBudget
from kbmcp_core.questions import fusion_for, is_question
from kbmcp_core.search import Searcher
from kbmcp_core.search_request import SearchRequest
from kbmcp_core.tuning import Legs, ranked
from tests.fakes import (
    FakeClock,
    FakeEmbedder,
    FakeFileSystem,
    FakeIndexStore,
    FakeRegistry,
    FakeScanner,
    FakeVectorStore,
)


@pytest.mark.parametrize("query", [
    "How do I roll back a deploy",
    "what counts as a SEV1 incident",
    "Which sites use Django",
    "Who's behind this",
    "can I carry vacation days over",
    "Do we pay for conference tickets",
    "Can't I log in with my email",
    "is there a dark mode",
    "rollback after a failed deploy?",
])
def test_questions_are_recognised(query: str) -> None:
    assert is_question(query)


@pytest.mark.parametrize("query", [
    "rollback after a failed deploy",
    "OTM-4471",
    "do nothing, successfully",          # an imperative (tldr's `true`)
    "When you first install React 18, you will see a warning",
    "I can't log in with my email",      # a statement of a problem, not a question
    "tar xzf",
    "howto write a unit",                # a word that starts like one is not one
])
def test_statements_and_names_are_not_questions(query: str) -> None:
    assert not is_question(query)


def test_a_question_moves_a_sliding_lexical_weight_one_step_down() -> None:
    default = Fusion()
    q = fusion_for("how do I roll back", default)
    assert (q.lexical_weight_min, q.lexical_weight) == (0.0, default.lexical_weight_min)
    assert fusion_for("roll back", default) is default
    fixed = Fusion("weighted", 0.4, 0.4)  # a fixed weight is set on purpose: kept
    assert fusion_for("how do I roll back", fixed) is fixed
    tuned = Fusion("weighted", 0.7, 0.2)
    assert (fusion_for("how do I roll back", tuned).lexical_weight_min,
            fusion_for("how do I roll back", tuned).lexical_weight) == (0.0, 0.2)
    rrf = Fusion("rrf", 0.5)
    assert fusion_for("how do I roll back", rrf) is rrf


def _searcher() -> tuple[Searcher, dict[str, int]]:
    files = {"ops/deploys.md": b"# Deploys\nship a release with the deploy button\n",
             "ops/rollback.md": b"# Rollback\nreturn to the version that worked\n"}
    fs = FakeFileSystem(files)
    store, vectors, emb = FakeIndexStore(), FakeVectorStore(), FakeEmbedder()
    run_index(IndexDeps(store=store, vectors=vectors, embedder=emb, registry=FakeRegistry(),
                        fs=fs, scanner=FakeScanner(fs), clock=FakeClock(),
                        budget=ChunkBudget(64, 1, lambda t: len(t.split()))))
    chunks = store.get_chunks(store.chunk_ids())
    by_path = {c.document_path: cid for cid, c in chunks.items()}
    words, meaning = by_path["ops/deploys.md"], by_path["ops/rollback.md"]

    # The legs as a natural question sees them: the page sharing the asker's words holds
    # all of them (relevance 1), the page answering it shares none but is nearer in meaning.
    def lexical_search(query: str, limit: int,
                       document_paths: Collection[str] | None = None
                       ) -> list[tuple[int, float]]:
        return [(words, 1.0)]

    def vector_search(vector: list[float], limit: int,
                      allowed_ids: Collection[int] | None = None) -> list[tuple[int, float]]:
        return [(meaning, 0.8), (words, 0.3)]

    store.lexical_search = lexical_search  # type: ignore[method-assign]
    vectors.search = vector_search  # type: ignore[method-assign]
    searcher = Searcher(store, vectors, emb, OfferRules(store, FakeRegistry()))
    return searcher, {"words": words, "meaning": meaning}


def test_a_question_is_answered_by_meaning_where_a_statement_is_answered_by_words() -> None:
    searcher, _ = _searcher()
    # 0.55 × 1 + 0.45 × 0.3 = 0.685 against 0.45 × 0.8 = 0.36: the words win
    statement = searcher.search(SearchRequest("undo the deploy button", explain=True))
    assert [h.path for h in statement.results] == ["ops/deploys.md", "ops/rollback.md"]
    # as a question: 0.3 × 1 + 0.7 × 0.3 = 0.51 against 0.7 × 0.8 = 0.56: the meaning wins
    question = searcher.search(SearchRequest("how do I undo the deploy button", explain=True))
    assert [h.path for h in question.results] == ["ops/rollback.md", "ops/deploys.md"]
    # explain reports the weights the question was fused with, and they add up to the score
    top = question.results[0]
    assert top.explain is not None
    fusion = top.explain.as_dict()["fusion"]
    assert isinstance(fusion, dict)
    assert fusion["lexical_weight"] == pytest.approx(0.3)
    assert top.score == pytest.approx(0.56)


def test_tune_scores_a_question_as_search_ranks_it() -> None:
    legs = Legs(((2, 0.8), (1, 0.3)), ((1, 1.0),), 1.0, "how do I undo the deploy button")
    sections = {1: Ranked("ops/deploys.md", "Deploys", 1, 2),
                2: Ranked("ops/rollback.md", "Rollback", 1, 2)}
    order = ranked(legs, Fusion(), sections, chunks_per_document=2, limit=10)
    assert [r.path for r in order] == ["ops/rollback.md", "ops/deploys.md"]
