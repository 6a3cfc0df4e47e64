"""The ``low_confidence`` decision (decision 0028): keywords that match clearly, or a
semantic match that is close and stands out, make a response confident; neither makes it
low; nor does a question with a word a large folder never uses (decision 0056, addendum) unless its
match is close."""

from __future__ import annotations

import pytest

from kbmcp_core.confidence import (
    MIN_LEAD,
    MIN_LEXICAL,
    MIN_SIMILARITY,
    UNSEEN_MIN_CHUNKS,
    UNSEEN_SIMILARITY,
    best_per_document,
    evidence,
    low_confidence,
    unseen_terms,
)
from kbmcp_core.keyword_pool import KeywordStatistics
from kbmcp_core.models import StoredChunk


def sims(best: float, tenth: float) -> list[float]:
    return [best] + [tenth] * 9


def test_no_hit_is_always_low() -> None:
    assert low_confidence(hits=0, similarities=sims(0.9, 0.1), best_lexical=1.0, readable=1.0)


@pytest.mark.parametrize(("similarities", "lexical", "low"), [
    (sims(0.12, 0.05), 0.02, True),   # a question about software the corpus does not cover
    (sims(0.29, 0.05), 0.19, True),   # weak on both legs
    (sims(0.55, 0.48), 0.05, True),   # near many pages, about none (a large corpus)
    (sims(0.12, 0.05), MIN_LEXICAL, False),  # the words match clearly (a rare name)
    (sims(MIN_SIMILARITY, MIN_SIMILARITY - MIN_LEAD), 0.0, False),  # a paraphrase
    (sims(0.62, 0.30), 0.05, False),
    ([0.45, 0.40], 0.0, False),       # fewer than ten candidates (a filtered search)
])
def test_either_leg_can_vouch_for_the_answer(similarities: list[float], lexical: float,
                                              low: bool) -> None:
    assert low_confidence(hits=5, similarities=similarities, best_lexical=lexical,
                          readable=1.0) is low


def test_a_query_the_model_cannot_read_is_judged_by_keywords_alone() -> None:
    # Japanese for an English model: its similarity says nothing either way
    assert not low_confidence(hits=5, similarities=sims(0.05, 0.04), best_lexical=0.08,
                              readable=0.0)
    assert low_confidence(hits=5, similarities=sims(0.9, 0.1), best_lexical=0.0, readable=0.2)


def test_one_leg_modes() -> None:
    assert low_confidence(hits=5, similarities=sims(0.2, 0.1), best_lexical=None, readable=1.0)
    assert not low_confidence(hits=5, similarities=sims(0.5, 0.2), best_lexical=None,
                              readable=1.0)
    # vector mode: a best match that does not stand out is not enough to say "not found"
    assert not low_confidence(hits=5, similarities=sims(0.5, 0.45), best_lexical=None,
                              readable=1.0)
    assert not low_confidence(hits=5, similarities=None, best_lexical=0.05, readable=0.0)


def _chunk(cid: int, path: str) -> StoredChunk:
    return StoredChunk(id=cid, document_path=path, title="T", heading="H", heading_path=("H",),
                       content="text", start_line=cid, end_line=cid, page=None, tags=(),
                       date=None, topic=None, category=None)


def test_the_lead_is_over_the_tenth_best_document_not_chunk() -> None:
    # a long FAQ that answers: its own chunks crowd the first ten places, all near the
    # question; the rest of the folder is far below
    vector = [(i, 0.52 - i * 0.005) for i in range(12)] + [
        (100 + i, 0.30 - i * 0.01) for i in range(10)]
    chunks = {i: _chunk(i, "lsof/00FAQ.txt") for i in range(12)}
    chunks |= {100 + i: _chunk(100 + i, f"other/{i}.txt") for i in range(10)}
    per_document = best_per_document(vector, chunks)
    assert per_document[:2] == [0.52, 0.30] and len(per_document) == 11
    assert not low_confidence(hits=5, similarities=per_document, best_lexical=0.05,
                              readable=1.0)
    # counted by chunks, the answering document hid its own lead
    assert low_confidence(hits=5, similarities=[s for _, s in vector], best_lexical=0.05,
                          readable=1.0)
    # nothing stands out from nine other documents: still low
    flat = [(200 + i, 0.50 - i * 0.005) for i in range(12)]
    spread = {200 + i: _chunk(200 + i, f"page{i}.md") for i in range(12)}
    assert low_confidence(hits=5, similarities=best_per_document(flat, spread),
                          best_lexical=0.05, readable=1.0)


def test_a_vector_whose_chunk_is_gone_counts_as_a_document_of_its_own() -> None:
    assert best_per_document([(1, 0.4), (2, 0.6)], {}) == [0.6, 0.4]


def _asked(unseen: int, chunks: int, best: float = 0.38, lexical: float = 0.04) -> bool:
    return low_confidence(hits=5, similarities=sims(best, 0.27), best_lexical=lexical,
                          readable=1.0, unseen=unseen, chunks=chunks)


def test_a_word_no_chunk_of_a_large_folder_holds_says_not_found() -> None:
    # decision 0056, addendum: "How do I mount an NFS share at boot with systemd" on React's docs
    # (7,228 chunks): near some pages (0.38, leading the tenth by 0.11) but "nfs", "boot"
    # and "systemd" occur nowhere; before, the similarity and its lead passed it
    assert not _asked(unseen=0, chunks=7228)
    assert _asked(unseen=3, chunks=7228)
    # a small folder lacks everyday words by chance: the handbook's 114 chunks have no
    # "fever" although they answer who to tell when one cannot come in (0.46, clear of the
    # rest: a lead of 0.11 asks for more of a question with an unseen word, ninth addendum)
    assert not _asked(unseen=3, chunks=UNSEEN_MIN_CHUNKS - 1, best=0.46)
    # an answer reads close to its question even in words the folder does not use
    assert not _asked(unseen=1, chunks=7228, best=UNSEEN_SIMILARITY)
    # and keywords that match clearly still vouch
    assert not _asked(unseen=1, chunks=7228, lexical=MIN_LEXICAL)


def test_unseen_terms_counts_the_terms_no_leg_finds_anywhere() -> None:
    statistics = KeywordStatistics(2000, {("words", "install"): 59, ("grams", "install"): 65,
                                          ("words", "conda"): 0, ("grams", "conda"): 1,
                                          ("words", "poetry"): 0, ("grams", "poetry"): 0})
    assert unseen_terms(statistics) == 1  # "conda" is inside a word somewhere: not unseen
    found = evidence(hits=5, vector=[(1, 0.4)], chunks={}, lexical=[(1, 0.1)], readable=1.0,
                     statistics=statistics)
    assert (found.unseen, found.chunks) == (1, 2000)
    no_keywords = evidence(hits=5, vector=[(1, 0.4)], chunks={}, lexical=None, readable=1.0)
    assert (no_keywords.unseen, no_keywords.chunks) == (0, 0)
