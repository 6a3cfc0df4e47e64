"""A question is ranked by meaning first (decision 0028, session-8 addendum), with the real
default model on the in-repo handbook fixture.

"which feature flags should be deleted after a rollout" shares its rarest word, *rollout*,
with the section on percentage rollouts; the section that answers it ("Cleaning up stale
flags") says *remove* and *expired*, and is nearer in meaning. Fused as a keyword query,
"Percentage rollouts" came first; fused as a question, the answering section does.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "eval-kb"
QUESTION = "which feature flags should be deleted after a rollout"


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory,
       embedder: FastEmbedEmbedder) -> Iterator[KnowledgeBase]:
    root = tmp_path_factory.mktemp("questions") / "eval-kb"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns(".kb-mcp"))
    kb = KnowledgeBase(bootstrap(build_settings(None, cwd=root, kb_path=root),
                                 embedder=embedder))
    try:
        assert kb.index().failed == 0
        yield kb
    finally:
        kb.close()


def test_the_section_that_answers_a_question_comes_first(kb: KnowledgeBase) -> None:
    hits = kb.search(QUESTION, limit=5).results
    assert (hits[0].path, hits[0].heading) == ("engineering/feature-flags.md",
                                               "Cleaning up stale flags"), [
        (h.path, h.heading, round(h.score, 3)) for h in hits]


def test_explain_shows_the_question_leaning_on_the_vector_leg(kb: KnowledgeBase) -> None:
    question = kb.search(QUESTION, limit=1, explain=True).results[0].explain
    statement = kb.search("feature flags deleted after a rollout", limit=1,
                          explain=True).results[0].explain
    assert question is not None and statement is not None
    q_fusion, s_fusion = question.as_dict()["fusion"], statement.as_dict()["fusion"]
    assert isinstance(q_fusion, dict) and isinstance(s_fusion, dict)
    # a statement slides between 0.3 and 0.55, a question between 0 and 0.3
    assert q_fusion["lexical_weight"] <= 0.3 < s_fusion["lexical_weight"]
