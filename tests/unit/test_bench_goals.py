"""`make bench` ends with issue 14's goals: before, now, floor, ratio, verdict."""

from __future__ import annotations

from typing import Any

from benchmarks.goals import goals, table


def summary(median: float) -> dict[str, float]:
    return {"median": median, "min": median, "max": median}


def test_each_goal_is_judged_against_its_target() -> None:
    results: dict[str, Any] = {
        "two_phase": {"ready_s": summary(30.0), "floor_s": summary(12.0),
                      "ratio_of_medians": 2.5, "documents": 5000},
        "fast_cli": {
            "server_hybrid": {"s": summary(0.12), "floor_s": summary(0.1), "ratio": 1.2},
            "server_lexical": {"s": summary(0.2), "floor_s": summary(0.1), "ratio": 2.0},
            "local_hybrid_s": summary(2.5),
        },
        "tails": {
            "search": {
                "hybrid": {"p50_ms": 40.0, "p95_ms": 60.0, "p95_over_p50": 1.5},
                "hybrid_tags": {"p50_ms": 20.0},
                "hybrid_globs": {"p50_ms": 44.0},
                "hybrid_new_filter": {"p50_ms": 400.0},
            },
            "ann": {"ann": {"p50_ms": 27.0}, "exact": {"p50_ms": 385.0},
                    "recall_at_10": 0.97, "rows": 100_000,
                    "query_process": {"max_rss_mb": 400.0, "p50_ms": 20.0, "p95_ms": 50.0,
                                      "p95_over_p50": 2.5},
                    "query_process_lancedb_default": {"max_rss_mb": 1400.0, "p50_ms": 20.0,
                                                      "p95_ms": 30.0, "p95_over_p50": 1.5}},
        },
        "full_index": {"index_s": summary(110.0), "embed_only_s": summary(100.0),
                       "ratio_of_medians": 1.1, "peak_rss_mb": summary(1200.0)},
        "real_folder": {"index_s": summary(120.0), "embed_only_s": summary(100.0),
                        "ratio_of_medians": 1.2, "peak_rss_mb": summary(900.0),
                        "chunks": 1299},
    }
    verdicts = {g.name: g.result for g in goals(results)}
    assert list(verdicts.values())[:12] == [
        "MISS", "PASS", "MISS", "PASS", "MISS", "PASS", "PASS", "MISS",
        "MISS", "PASS", "PASS", "MISS"]  # issue 29: real folder ratio, its RSS; search RSS, p95
    search_rss = next(g for g in goals(results) if g.name.startswith("29.3 peak RSS searching"))
    assert (search_rss.before, search_rss.now) == ("1400 MB", "400 MB")  # same run, both
    worst = next(g for g in goals(results) if g.name.startswith("3. filtered"))
    assert worst.ratio == "1.10x" and "globs" in worst.now  # the new-filter row is not a goal
    text = table(goals(results))
    assert "2.50x" in text and "4.3 s" in text and "before, from:" in text


def test_a_step_that_did_not_run_says_so() -> None:
    rows = goals({})
    assert {g.now for g in rows} == {"not run"} and all(g.result == "" for g in rows)
