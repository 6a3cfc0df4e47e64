"""``low_confidence`` is a property of the question and the index (decision 0056): the same
at every ``limit``, and unchanged by a document nothing asks about."""

from __future__ import annotations

from kbmcp_core.confidence import CONFIDENCE_DEPTH
from kbmcp_core.search import Searcher
from kbmcp_core.search_request import SearchRequest
from tests.unit.test_search import build

#: two of its eleven words occur in the folder (keywords alone cannot vouch: 2/11 < 0.20)
QUESTION = "zebra lion tiger wolf bear moose elk deer fox hare crow"


def folder(extra: dict[str, bytes] | None = None) -> Searcher:
    """One long document whose 70 sections all read alike, and twelve short ones just as
    near the question: nothing stands out, so the question is not answered here."""
    files = {"big.md": b"# S\nzebra lion\n" * 70}
    files |= {f"o{i:02d}.md": b"# S\nzebra lion\n" for i in range(12)}
    return build(files | (extra or {}))[0]


def test_the_flag_does_not_depend_on_how_many_results_were_asked_for() -> None:
    searcher = folder()
    flags = {limit: searcher.search(SearchRequest(QUESTION, limit=limit)).low_confidence
             for limit in (1, 2, 3, 5, 10, 20)}
    # before: a small limit fetched 50 candidates, all from the long document (one
    # document, no tenth to lead), so only limits of 5 and more said "not found"
    assert set(flags.values()) == {True}, flags


def test_the_evidence_reads_a_fixed_depth_of_candidates() -> None:
    searcher = folder()
    small = searcher.search(SearchRequest(QUESTION, limit=1)).evidence
    large = searcher.search(SearchRequest(QUESTION, limit=20)).evidence
    assert small is not None and large is not None
    assert (small.similarities, small.best_lexical) == (large.similarities, large.best_lexical)
    assert small.similarities is not None and len(small.similarities) == 13  # every document
    assert CONFIDENCE_DEPTH >= 50


def test_an_unrelated_document_changes_neither_flag() -> None:
    answered = "zebra lion"
    before = folder()
    after = folder({"kitchen/bread.md": b"# Bread\nflour water salt starter oven\n"})
    for q in (QUESTION, answered):
        assert (before.search(SearchRequest(q)).low_confidence
                == after.search(SearchRequest(q)).low_confidence)
    assert before.search(SearchRequest(QUESTION)).low_confidence
    assert not before.search(SearchRequest(answered)).low_confidence
