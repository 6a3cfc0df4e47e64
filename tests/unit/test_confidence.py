"""The ``low_confidence`` decision (decision 0028): keywords that match clearly, or a
semantic match that is close and stands out, make a response confident; neither makes it
low."""

from __future__ import annotations

import pytest

from kbmcp_core.confidence import MIN_LEAD, MIN_LEXICAL, MIN_SIMILARITY, low_confidence


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
