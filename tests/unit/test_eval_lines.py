"""`kb-mcp eval` golden entries with `lines: [first, last]`: a returned section is right at
section level when its path matches and its line range overlaps those lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbmcp_adapters.evaluation.golden import load_golden
from kbmcp_core.errors import ConfigError
from kbmcp_core.evaluation import Expected, GoldenQuery, Ranked, evaluate, rank_query


def same(text: str) -> str:
    return text


def query(*expected: Expected) -> GoldenQuery:
    return GoldenQuery("q", "how do I log in", tuple(expected))


def test_a_hit_overlapping_the_lines_is_a_section_hit_at_its_rank() -> None:
    q = query(Expected("faq/admin.md", lines=(10, 14)))
    ranked = [Ranked("faq/admin.md", "Intro", 1, 9),      # same file, ends just before
              Ranked("faq/other.md", "Login", 10, 14),    # same lines, other file
              Ranked("faq/admin.md", "", 14, 30)]         # overlaps on line 14
    doc, sec, outcome = rank_query(q, ranked, same)
    assert outcome.doc_rank == 1
    assert outcome.section_rank == 3
    assert sec["recall@1"] == 0.0 and sec["recall@5"] == 1.0
    assert sec["mrr@10"] == pytest.approx(1 / 3)
    assert doc["mrr@10"] == 1.0


def test_a_hit_without_lines_or_apart_from_them_is_no_section_hit() -> None:
    q = query(Expected("faq/admin.md", lines=(10, 14)))
    ranked = [Ranked("faq/admin.md", "Page 2"),           # a PDF page: no line range
              Ranked("faq/admin.md", "Setup", 15, 40)]
    _, sec, outcome = rank_query(q, ranked, same)
    assert outcome.section_rank is None
    assert sec["recall@10"] == 0.0


def test_heading_and_lines_together_must_both_match() -> None:
    q = query(Expected("a.md", heading="Login", lines=(5, 6)))
    wrong_heading = Ranked("a.md", "Logout", 1, 20)
    right = Ranked("a.md", "login", 4, 5)
    assert rank_query(q, [wrong_heading, right], same)[2].section_rank == 2


def test_evaluate_scores_line_queries_at_section_level() -> None:
    queries = [query(Expected("a.md", lines=(3, 7))),
               GoldenQuery("h", "x", (Expected("a.md", heading="Intro"),))]
    hits = {"how do I log in": [Ranked("a.md", "", 5, 5)], "x": [Ranked("a.md", "Intro", 1, 2)]}
    report = evaluate("hybrid", queries, lambda text: hits[text], same)
    assert report.section["recall@1"] == 1.0
    assert not report.misses
    assert report.as_dict()["section"] == {k: 1.0 for k in report.section}


def test_the_loader_reads_lines_and_the_miss_report_shows_them(tmp_path: Path) -> None:
    golden = tmp_path / "golden.yml"
    golden.write_text('queries:\n  - id: q1\n    query: "why"\n    expected:\n'
                      '      - path: "a.md"\n        lines: [3, 7]\n', encoding="utf-8")
    [q] = load_golden(golden)
    assert q.expected == (Expected("a.md", None, (3, 7)),)
    report = evaluate("hybrid", [q], lambda _: [Ranked("a.md", "", 8, 9)], same)
    misses = report.as_dict()["misses"]
    assert isinstance(misses, list) and len(misses) == 1
    miss = misses[0]
    assert miss["expected"] == [{"path": "a.md", "heading": None, "lines": [3, 7]}]
    assert miss["top"] == [{"path": "a.md", "heading": "", "lines": [8, 9]}]


@pytest.mark.parametrize("bad", ["[3]", "[7, 3]", "[0, 2]", '"3-7"', "[1.5, 2]", "[true, 2]"])
def test_a_bad_line_range_is_a_clear_error(tmp_path: Path, bad: str) -> None:
    golden = tmp_path / "golden.yml"
    golden.write_text('queries:\n  - id: q1\n    query: "why"\n    expected:\n'
                      f'      - path: "a.md"\n        lines: {bad}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"queries\[0\].*'lines' must be \[first, last\]"):
        load_golden(golden)
