"""`kb-mcp tune`'s cross-validation: a setting is judged on queries it was not chosen on."""

from __future__ import annotations

import pytest

from kbmcp_core.evaluation import Expected, GoldenQuery, Ranked
from kbmcp_core.tuning import Candidate, cross_validate, score_queries


def test_a_setting_that_only_wins_on_some_queries_scores_low_held_out() -> None:
    # folds of 2 deal queries 0, 2 to fold 0 and 1, 3 to fold 1
    current = Candidate("current", (0.5, 0.5, 0.5, 0.5))
    lucky = Candidate("lucky", (1.0, 0.0, 1.0, 0.0))  # perfect on fold 0, useless on fold 1
    steady = Candidate("steady", (0.6, 0.6, 0.6, 0.6))
    result = cross_validate(current, [current, lucky, steady], folds=2)
    assert result.best.setting == "steady"
    assert result.best.mean == pytest.approx(0.6)
    # fold 0 trains on 1, 3 -> steady, tests 0.6 twice; fold 1 trains on 0, 2 -> lucky,
    # which then scores 0 on queries 1 and 3: choosing by this file is worth 0.3
    assert result.chosen_per_fold == ("steady", "lucky")
    assert result.held_out == pytest.approx(0.3)


def test_a_tie_keeps_the_current_setting() -> None:
    current = Candidate("current", (1.0, 0.0, 1.0))
    same = Candidate("other", (1.0, 0.0, 1.0))
    result = cross_validate(current, [current, same], folds=5)
    assert result.best.setting == "current"
    assert set(result.chosen_per_fold) == {"current"}
    assert len(result.chosen_per_fold) == 3  # never more folds than queries


def test_candidates_must_score_the_same_queries() -> None:
    with pytest.raises(ValueError, match="same queries"):
        cross_validate(Candidate("a", (1.0, 1.0)), [Candidate("b", (1.0,))], folds=2)


def test_queries_are_scored_at_the_level_asked() -> None:
    queries = [
        GoldenQuery("q1", "alpha", (Expected("a.md", "Intro"),)),
        GoldenQuery("q2", "beta", (Expected("b.md"),)),  # no heading: document score
    ]
    ranked = {"alpha": [Ranked("a.md", "Other"), Ranked("a.md", "Intro")],
              "beta": [Ranked("c.md", "x"), Ranked("b.md", "y")]}

    def retrieve(query: str) -> list[Ranked]:
        return ranked[query]

    assert score_queries(queries, retrieve, str, "mrr@10", "document") == (1.0, 0.5)
    assert score_queries(queries, retrieve, str, "mrr@10", "section") == (0.5, 0.5)
