"""compare_metrics: the per-metric diff behind `kb-mcp eval --compare`, and its regression flag."""

from __future__ import annotations

import json

import pytest

from kbmcp_core.evaluation import (
    METRICS,
    EvalReport,
    MetricDiff,
    compare_metrics,
    run_metrics,
)


def levels(value: float, section: float | None = None) -> dict[str, object]:
    sec = {} if section is None else dict.fromkeys(METRICS, section)
    return {"document": dict.fromkeys(METRICS, value), "section": sec,
            "per_kind": {"paraphrase": {"document": dict.fromkeys(METRICS, value),
                                        "section": sec}}}


def row(rows: list[MetricDiff], metric: str, mode: str = "hybrid", level: str = "document",
        kind: str | None = None) -> MetricDiff:
    [found] = [r for r in rows if (r.metric, r.mode, r.level, r.kind)
               == (metric, mode, level, kind)]
    return found


def test_the_same_metrics_are_no_regression_even_with_threshold_zero() -> None:
    rows, regressed = compare_metrics({"hybrid": levels(0.8, 0.6)},
                                      {"hybrid": levels(0.8, 0.6)}, 0.0)
    assert not regressed
    # 5 metrics x 2 levels, overall and for the one kind
    assert len(rows) == 20
    assert all(r.delta == 0.0 and not r.regressed for r in rows)


def test_a_drop_beyond_the_threshold_is_a_regression_and_names_the_metric() -> None:
    now = levels(0.8)
    now["document"] = {**dict.fromkeys(METRICS, 0.8), "ndcg@10": 0.7}
    rows, regressed = compare_metrics({"hybrid": levels(0.8)}, {"hybrid": now}, 0.01)
    assert regressed
    assert [(r.metric, r.level, r.kind) for r in rows if r.regressed] == [
        ("ndcg@10", "document", None)]
    hit = row(rows, "ndcg@10")
    assert (hit.saved, hit.now) == (0.8, 0.7)
    assert hit.delta == pytest.approx(-0.1)


def test_a_drop_within_the_threshold_or_a_gain_is_not_a_regression() -> None:
    now = levels(0.9)
    now["document"] = {**dict.fromkeys(METRICS, 0.9), "mrr@10": 0.795}
    rows, regressed = compare_metrics({"hybrid": levels(0.8)}, {"hybrid": now}, 0.01)
    assert not regressed
    assert row(rows, "mrr@10").delta == pytest.approx(-0.005)
    assert row(rows, "recall@1", kind="paraphrase").delta == pytest.approx(0.1)


def test_a_per_kind_drop_counts_too() -> None:
    now = levels(0.8, 0.5)
    now["per_kind"] = {"paraphrase": {"document": dict.fromkeys(METRICS, 0.8),
                                      "section": {**dict.fromkeys(METRICS, 0.5),
                                                  "recall@5": 0.2}}}
    rows, regressed = compare_metrics({"hybrid": levels(0.8, 0.5)}, {"hybrid": now}, 0.01)
    assert regressed
    assert [(r.metric, r.level, r.kind) for r in rows if r.regressed] == [
        ("recall@5", "section", "paraphrase")]


def test_metrics_only_one_run_has_are_listed_without_a_delta_and_never_regress() -> None:
    rows, regressed = compare_metrics({"hybrid": levels(0.8), "vector": levels(0.9)},
                                      {"hybrid": levels(0.8), "lexical": levels(0.1)}, 0.0)
    assert not regressed
    gone, new = row(rows, "ndcg@10", mode="vector"), row(rows, "ndcg@10", mode="lexical")
    assert (gone.saved, gone.now, gone.delta) == (0.9, None, None)
    assert (new.saved, new.now, new.delta) == (None, 0.1, None)
    # rows follow the current run's modes first, overall before per kind, document first
    assert [r.mode for r in rows[:1]] == ["hybrid"]
    assert rows[0].kind is None and rows[0].level == "document"
    assert [r.metric for r in rows[:5]] == list(METRICS)


def test_a_negative_threshold_is_refused() -> None:
    with pytest.raises(ValueError, match="threshold"):
        compare_metrics({}, {}, -0.1)


def test_run_metrics_round_trips_through_json_without_changing_a_diff() -> None:
    report = EvalReport(mode="hybrid", n=3, document=dict.fromkeys(METRICS, 1 / 3),
                        section=dict.fromkeys(METRICS, 2 / 3),
                        per_kind={"lexical": {"document": dict.fromkeys(METRICS, 1 / 7),
                                              "section": {}}},
                        misses=[])
    now = run_metrics([report])
    saved = json.loads(json.dumps(now))
    rows, regressed = compare_metrics(saved, now, 0.0)
    assert not regressed and len(rows) == 15
    assert all(r.delta == 0.0 for r in rows)
