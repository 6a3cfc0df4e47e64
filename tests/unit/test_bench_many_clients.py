"""The fifty-clients bench row (issue 43, goal 3): the two-replica part is judged by whether
a second read-only replica behind nginx answers the same paced load sooner, without errors,
and says why when nginx is missing."""

from __future__ import annotations

from typing import Any

from benchmarks import many_clients


def _run(search_p95: float, calls: float, errors: int = 0) -> dict[str, Any]:
    return {"clients": 50, "seconds": 150.0, "calls": int(calls * 150), "errors": errors,
            "calls_per_s": calls, "single_search_p95_s": 0.17, "single_read_p95_s": 0.005,
            "search_p50_s": search_p95 / 2, "search_p95_s": search_p95, "read_p95_s": 0.1,
            "searches": 3000, "reads": 3000, "rss_first_minute_mb": 600.0,
            "rss_end_mb": 620.0, "rss_max_mb": 630.0, "load_average": (2.0, 2.0, 2.0)}


def _replica_rows(result: dict[str, Any]) -> list[Any]:
    return [r for r in many_clients.rows({"now": _run(0.9, 43.0), **result})
            if "replica" in r.name]


def test_two_replicas_pass_when_they_answer_the_same_load_sooner() -> None:
    faster = _replica_rows({"replicas1": _run(0.98, 43.0), "replicas2": _run(0.41, 43.5)})
    assert faster[0].result == "PASS" and "2.39x" in faster[0].value
    slower = _replica_rows({"replicas1": _run(0.41, 43.0), "replicas2": _run(0.98, 43.0)})
    assert slower[0].result == "MISS"
    failing = _replica_rows({"replicas1": _run(0.98, 43.0), "replicas2": _run(0.41, 43.0, 3)})
    assert failing[0].result == "MISS" and "0 + 3 errors" in failing[0].spread
    fewer = _replica_rows({"replicas1": _run(0.98, 43.0), "replicas2": _run(0.41, 30.0)})
    assert fewer[0].result == "MISS"  # sooner only because fewer calls were answered


def test_without_nginx_the_row_says_why_it_was_not_measured() -> None:
    rows = _replica_rows({"replicas": "nginx is not installed (apt-get install nginx-light)"})
    assert [r.value for r in rows] == ["not measured"] and "nginx-light" in rows[0].spread
