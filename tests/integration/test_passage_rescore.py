"""A chunk holding several answers is as near a question as its nearest paragraph
(``kbmcp_core/passages.py``, decision 0028 addendum of session 9), with the real default
model.

"Everyday tasks" holds three answers, one of them how to get back in when the
password is forgotten; "Password rules" is all about passwords and answers something
else. The whole-chunk vector of the mixed section is far from the question, so without
paragraph re-scoring the rules come first; with it, the section that answers does.
The step is opt-in (`[search] passage_candidates`, off by default for its cost): these
tests turn it on as a user would, in the config file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_core.search_request import SearchRequest

PAGE = """# Account help

## Everyday tasks

You stay signed in for thirty days on a trusted device; sign out from the account menu
to end every session at once, for example after using a shared computer.

Your storage quota depends on the plan: the free plan holds 5 GB, the team plan 100 GB
per seat. Files in the trash count towards the quota until the trash is emptied.

Cannot remember your password and locked out? Open the sign-in page, choose
"Send reset link" and follow the link we e-mail you; it stays valid for one hour.

## Password rules

Passwords must be at least twelve characters long and may not repeat one of your last
five passwords. A password that appears in a public breach list is refused. Passwords
of administrators expire every ninety days; everyone else keeps theirs until they change
it. Two-factor sign-in is recommended for every account and required for administrators.
"""
QUESTION = "how can I get back into my account when I cannot remember my password"


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory,
       embedder: FastEmbedEmbedder) -> Iterator[KnowledgeBase]:
    root = tmp_path_factory.mktemp("passages")
    (root / "account.md").write_text(PAGE, encoding="utf-8")
    config = root / "kb.toml"
    config.write_text("kb_path = '.'\n[search]\npassage_candidates = 10\n", encoding="utf-8")
    kb = KnowledgeBase(bootstrap(build_settings(config, cwd=root), embedder=embedder))
    try:
        assert kb.index().failed == 0
        yield kb
    finally:
        kb.close()


def _headings(kb: KnowledgeBase, passages: int | None = None) -> list[str]:
    searcher = kb.searcher()
    if passages is not None:
        searcher.passages = passages
    return [h.heading for h in searcher.search(SearchRequest(QUESTION, limit=2)).results]


def test_the_section_whose_paragraph_answers_comes_first(kb: KnowledgeBase) -> None:
    assert kb.search(QUESTION, limit=2).results[0].heading == "Everyday tasks"


def test_without_paragraph_rescoring_the_whole_chunk_vector_loses(kb: KnowledgeBase) -> None:
    # the mechanism is what puts it first: the chunks' own vectors rank the rules higher
    assert _headings(kb, passages=0) == ["Password rules", "Everyday tasks"]
    assert _headings(kb) == ["Everyday tasks", "Password rules"]


def test_the_default_configuration_does_not_rescore(tmp_path: Path,
                                                    embedder: FastEmbedEmbedder) -> None:
    (tmp_path / "account.md").write_text(PAGE, encoding="utf-8")
    kb = KnowledgeBase(bootstrap(build_settings(None, cwd=tmp_path, kb_path=tmp_path),
                                 embedder=embedder))
    try:
        assert kb.index().failed == 0
        assert kb.settings.search_passage_candidates == 0
        assert [h.heading for h in kb.search(QUESTION, limit=2).results] == [
            "Password rules", "Everyday tasks"]
    finally:
        kb.close()


def test_explain_reports_the_paragraph_similarity(kb: KnowledgeBase) -> None:
    hit = kb.search(QUESTION, limit=1, explain=True).results[0]
    assert hit.explain is not None
    parts = hit.explain.as_dict()
    fusion, vector = parts["fusion"], parts["vector"]
    assert isinstance(fusion, dict) and isinstance(vector, dict)
    # the score is still the sum of the legs' parts, with the paragraph's similarity
    assert fusion["lexical_part"] + fusion["vector_part"] == pytest.approx(hit.score, abs=1e-4)
    assert vector["rank"] == 1
