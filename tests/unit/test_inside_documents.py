"""A question's sections inside one document ordered by meaning
(``kbmcp_core/inside_documents.py``; decision 0056, third addendum)."""

from __future__ import annotations

from collections.abc import Collection

import pytest

from kbmcp_core.evaluation import Ranked
from kbmcp_core.fusion import Fusion
from kbmcp_core.index_run import run_index
from kbmcp_core.inside_documents import INSIDE_LEXICAL, inside_documents, meaning
from kbmcp_core.offer import OfferRules
from kbmcp_core.search import Searcher
from kbmcp_core.search_request import SearchRequest
from kbmcp_core.spans import query_terms
from kbmcp_core.tuning import Legs, ranked
from tests.fakes import (
    FakeFileSystem,
    FakeIndexStore,
    FakeRegistry,
    FakeVectorStore,
    fake_deps,
)


def test_a_documents_chunks_are_dealt_into_its_places_by_meaning() -> None:
    paths = {1: "a.md", 2: "b.md", 3: "a.md"}
    ranked = [(1, 0.9), (2, 0.8), (3, 0.7)]
    out = inside_documents(ranked, paths, lexical=[(1, 1.0), (3, 0.1)],
                           vector=[(1, 0.3), (2, 0.9), (3, 0.5)], paragraphs={})
    # a.md keeps places 1 and 3, b.md place 2; each place keeps its score
    assert out == [(3, 0.9), (2, 0.8), (1, 0.7)]


def test_the_keywords_keep_a_small_share_and_ties_keep_their_order() -> None:
    paths = {1: "a.md", 2: "a.md"}
    # the same meaning: the words decide; the same words and meaning: the order stands
    assert [c for c, _ in inside_documents([(1, 0.9), (2, 0.8)], paths,
                                           lexical=[(2, 1.0)], vector=[(1, 0.5), (2, 0.5)],
                                           paragraphs={})] == [2, 1]
    assert [c for c, _ in inside_documents([(1, 0.9), (2, 0.8)], paths, lexical=[],
                                           vector=[(1, 0.5), (2, 0.5)],
                                           paragraphs={})] == [1, 2]
    # the words count INSIDE_LEXICAL: a relevance of 1 outweighs 0.1 of similarity at most
    lead = INSIDE_LEXICAL / (1 - INSIDE_LEXICAL)
    assert [c for c, _ in inside_documents([(1, 0.9), (2, 0.8)], paths,
                                           lexical=[(1, 1.0)],
                                           vector=[(1, 0.5), (2, 0.5 + lead * 1.01)],
                                           paragraphs={})] == [2, 1]


def test_a_chunks_meaning_is_its_nearest_paragraph_when_that_is_nearer() -> None:
    assert meaning({1: 0.3, 2: 0.6}, {1: [None, 0.7, 0.2], 2: [0.5]}) == {1: 0.7, 2: 0.6}


def _searcher() -> tuple[Searcher, dict[str, int]]:
    files = {"faq.md": b"# Words\nundo the deploy button\n# Answer\nreturn to what worked\n",
             "other.md": b"# Other\nsomething near\n"}
    store, vectors = FakeIndexStore(), FakeVectorStore()
    deps = fake_deps(FakeFileSystem(files), store=store, vectors=vectors)
    run_index(deps)
    chunks = store.get_chunks(store.chunk_ids())
    ids = {c.heading: cid for cid, c in chunks.items()}

    # The legs of a question whose words are in one section of faq.md and whose answer,
    # by meaning, is the next section (the asker's words are not the author's).
    def lexical_search(query: str, limit: int,
                       document_paths: Collection[str] | None = None
                       ) -> list[tuple[int, float]]:
        return [(ids["Words"], 1.0), (ids["Answer"], 0.1)]

    def vector_search(vector: list[float], limit: int,
                      allowed_ids: Collection[int] | None = None) -> list[tuple[int, float]]:
        return [(ids["Answer"], 0.5), (ids["Other"], 0.45), (ids["Words"], 0.3)]

    store.lexical_search = lexical_search  # type: ignore[method-assign]
    vectors.search = vector_search  # type: ignore[method-assign]
    return Searcher(store, vectors, deps.embedder, OfferRules(store, FakeRegistry())), ids


def test_a_question_gets_the_section_that_answers_it_first() -> None:
    searcher, ids = _searcher()
    # fused as a question: Words 0.3 × 1 + 0.7 × 0.3 = 0.51, Answer 0.3 × 0.1 + 0.7 × 0.5
    # = 0.38, Other 0.7 × 0.45 = 0.315; inside faq.md the meaning puts Answer first
    res = searcher.search(SearchRequest("how do I undo the deploy button", explain=True))
    assert [h.heading for h in res.results] == ["Answer", "Words", "Other"]
    # which document comes where is the fusion's, and the scores stay in order
    assert [h.path for h in res.results] == ["faq.md", "faq.md", "other.md"]
    assert [h.score for h in res.results] == pytest.approx([0.51, 0.38, 0.315])
    first = res.results[0]
    # the hit keeps its own fused score, and explain's parts add up to it
    assert first.fused_score == pytest.approx(0.38)
    assert first.explain is not None
    assert first.explain.lexical_part + first.explain.vector_part == pytest.approx(0.38)
    assert first.as_dict()["fused_score"] == pytest.approx(0.38)
    assert res.results[2].fused_score is None  # a hit left in its place shows one score


def test_a_statement_keeps_the_fused_order() -> None:
    searcher, _ = _searcher()
    res = searcher.search(SearchRequest("undo the deploy button"))
    assert [h.heading for h in res.results] == ["Words", "Answer", "Other"]
    assert all(h.fused_score is None for h in res.results)


def test_tune_orders_a_questions_sections_as_search_does() -> None:
    # the legs of the search above: kb-mcp tune scores fusion settings on this order
    legs = Legs(((3, 0.5), (2, 0.45), (1, 0.3)), ((1, 1.0), (3, 0.1)), 1.0,
                "how do I undo the deploy button")
    sections = {1: Ranked("faq.md", "Words", 1, 2), 2: Ranked("other.md", "Other", 1, 2),
                3: Ranked("faq.md", "Answer", 3, 4)}
    order = ranked(legs, Fusion(), sections, chunks_per_document=4, limit=10)
    assert [r.heading for r in order] == ["Answer", "Words", "Other"]
    statement = Legs(legs.vector, legs.lexical, 1.0, "undo the deploy button")
    assert [r.heading for r in ranked(statement, Fusion(), sections, 4, 10)] == [
        "Words", "Answer", "Other"]


def test_a_question_naming_a_sections_heading_gets_that_section_first() -> None:
    # lsof's FAQ groups its answers under headings the question names ("Solaris"); the
    # model reads the two answers a few hundredths apart, the other one nearer
    files = {"faq.md": b"# Linux Problems\nthe kernel symbols are not readable\n"
                        b"# Solaris Problems\nthe namelist cannot be read\n"}
    store, vectors = FakeIndexStore(), FakeVectorStore()
    deps = fake_deps(FakeFileSystem(files), store=store, vectors=vectors)
    run_index(deps)
    ids = {c.heading: cid for cid, c in store.get_chunks(store.chunk_ids()).items()}

    def lexical_search(query: str, limit: int,
                       document_paths: Collection[str] | None = None
                       ) -> list[tuple[int, float]]:
        return []

    def vector_search(vector: list[float], limit: int,
                      allowed_ids: Collection[int] | None = None) -> list[tuple[int, float]]:
        return [(ids["Linux Problems"], 0.52), (ids["Solaris Problems"], 0.50)]

    store.lexical_search = lexical_search  # type: ignore[method-assign]
    vectors.search = vector_search  # type: ignore[method-assign]
    searcher = Searcher(store, vectors, deps.embedder, OfferRules(store, FakeRegistry()))
    res = searcher.search(SearchRequest("why does lsof have problems on Solaris?"))
    assert [h.heading for h in res.results] == ["Solaris Problems", "Linux Problems"]
    assert [h.score for h in res.results] == sorted((h.score for h in res.results),
                                                    reverse=True)
    # a statement is not dealt by meaning or heading: the fused order stands
    plain = searcher.search(SearchRequest("lsof problems Solaris"))
    assert [h.heading for h in plain.results] == ["Linux Problems", "Solaris Problems"]


def test_a_heading_counts_when_it_holds_two_of_the_questions_words() -> None:
    paths = {1: "lsof/faq.txt", 2: "lsof/faq.txt", 3: "lsof/faq.txt"}
    headings = {1: "Linux lsof Problems", 2: "General Problems", 3: "AIX Problems"}
    ranked_in = [(1, 0.9), (2, 0.8), (3, 0.7)]
    vector = [(1, 0.50), (2, 0.52), (3, 0.49)]

    def order(question: str) -> list[tuple[int, float]]:
        return inside_documents(ranked_in, paths, lexical=[], vector=vector, paragraphs={},
                                headings=headings, terms=query_terms(question))

    # "problems" is in every heading, "lsof" names the document (its path): meaning decides
    assert [c for c, _ in order("why do problems happen?")] == [2, 1, 3]
    assert [c for c, _ in order("lsof problems -- what are they?")] == [2, 1, 3]
    # one word of the question in a heading may be a circumstance: meaning decides
    assert [c for c, _ in order("why does it fail after moving to AIX?")] == [2, 1, 3]
    # two name the section: it comes first, each place keeping its score
    assert order("what problems are known on AIX?") == [(3, 0.9), (2, 0.8), (1, 0.7)]
