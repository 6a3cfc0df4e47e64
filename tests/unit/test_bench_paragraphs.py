"""The paragraphs row (issue 25): what reading a candidate's paragraphs in context costs a
search, on against off, judged where the step's design allows a goal: a question asked
again costs what the search without the step costs (the memory of recent texts), the added
CPU of a first-time question is the model runs themselves, and a full memory is small."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks import paragraph_bench, real_folder, report
from benchmarks.run import parse
from kbmcp_adapters.app.bootstrap import settings_for
from kbmcp_core.passages import candidates_for
from kbmcp_core.questions import is_question


def child_data(*, cold: float, warm: float, off: float, floor: float,
               runs: list[int], texts: int = 1024) -> dict[str, Any]:
    """What the search child hands back for len(runs) questions (same CPU and wall)."""
    n = len(runs)
    data: dict[str, Any] = {"chunks": 1500, "candidates": 10, "runs": runs,
                            "session_runs": [2] * n,
                            "memory": {"texts": texts, "size": 1024, "rss_growth_mb": 7.5,
                                       "held_mb": 7.2, "full_held_mb": 7.2}}
    per_query = {"cold": [cold + 0.1 * k if r else off for k, r in enumerate(runs)],
                 "warm": [warm] * n, "off": [off] * (2 * n), "session": [0.1] * n,
                 "query": [0.005] * n, "floor": [floor if r else 0.0 for r in runs]}
    for key, values in per_query.items():
        data[f"{key}_s"], data[f"{key}_cpu"] = values, list(values)
    return data


def judged(result: dict[str, Any]) -> dict[str, str]:
    return {r.name.strip(): r.result for r in paragraph_bench.rows(result)}


def test_the_added_cost_is_read_against_the_model_runs_it_makes() -> None:
    # three questions read 8 texts each, one read none (every candidate one paragraph)
    data = child_data(cold=0.3, warm=0.035, off=0.03, floor=0.28, runs=[8, 8, 0, 8])
    got = paragraph_bench.summarise(data, {"kind": "faq", "doc_files": 150}, 40.0)
    assert got["cold_ratio_cpu"] == pytest.approx(0.35 / 0.03)  # median of 0.03 .. 0.5
    # the question that read nothing is left out of the floor's comparison
    assert got["added_over_floor_cpu"] == pytest.approx(0.37 / 0.28)
    assert got["added_in_queries_cpu"] == pytest.approx(0.32 / 0.005)
    rows = judged(got)
    assert rows["step on / off, cold (memory emptied), CPU"] == ""  # shown, not judged
    assert rows["step on / off, warm (same question again), CPU"] == "PASS"
    assert rows["added / the same texts embedded as documents, CPU"] == "MISS"
    assert rows["memory of recent texts, 1024 of 1024 texts read"] == "PASS"


def test_a_repeated_question_that_runs_the_model_again_misses() -> None:
    # the memory forgot: the warm search costs what the cold one does
    data = child_data(cold=0.3, warm=0.3, off=0.03, floor=0.3, runs=[8, 8])
    rows = judged(paragraph_bench.summarise(data, {"kind": "generated", "files": 8}, 5.0))
    assert rows["step on / off, warm (same question again), CPU"] == "MISS"
    assert rows["added / the same texts embedded as documents, CPU"] == "PASS"


def test_a_memory_not_filled_is_shown_but_not_judged() -> None:
    data = child_data(cold=0.3, warm=0.03, off=0.03, floor=0.3, runs=[8], texts=8)
    rows = judged(paragraph_bench.summarise(data, {"kind": "generated", "files": 8}, 5.0))
    assert rows["memory of recent texts, 8 of 1024 texts read"] == ""


def test_the_step_runs_alone_and_its_rows_reach_the_report() -> None:
    assert parse(["--only", "paragraphs"]).only == ["paragraphs"]
    data = child_data(cold=0.3, warm=0.03, off=0.03, floor=0.3, runs=[8])
    result = paragraph_bench.summarise(data, {"kind": "generated", "files": 8}, 5.0)
    names = [r.name for r in report.rows({"paragraphs": result})]
    assert any(n.startswith("hybrid search, paragraphs read in context") for n in names)


def test_without_the_faq_set_the_row_uses_generated_questions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paragraph_bench, "FAQ", tmp_path / "absent")
    kb, queries, facts = paragraph_bench.prepare(tmp_path, quick=False)
    assert facts["kind"] == "generated" and len(queries) == 60
    assert all(is_question(q) for q in queries)  # the page-order step is for questions
    assert len(list(kb.rglob("*.md"))) == 300
    assert settings_for(kb).embedding_threads == 1  # CPU seconds without spinning threads


def test_the_faq_set_is_indexed_with_a_doc_sample_and_asked_its_own_questions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    faq, doc = tmp_path / "faq", tmp_path / "doc"
    (faq / "corpus" / "git").mkdir(parents=True)
    (faq / "corpus" / "git" / "gitfaq.md").write_text("# Git\n\nAn answer.\n", "utf-8")
    (faq / "golden.yml").write_text(
        'queries:\n  - id: q1\n    query: "How do I undo a commit"\n    expected:\n'
        '      - path: "git/gitfaq.md"\n        lines: [3, 3]\n', "utf-8")
    (doc / "pkg").mkdir(parents=True)
    (doc / "pkg" / "NEWS.txt").write_text("Release notes.\n", "utf-8")
    (doc / "pkg" / "manual.pdf").write_bytes(b"%PDF-1.4\n")
    monkeypatch.setattr(paragraph_bench, "FAQ", faq)
    monkeypatch.setattr(real_folder, "SOURCE", doc)
    kb, queries, facts = paragraph_bench.prepare(tmp_path / "work", quick=False)
    assert queries == ["How do I undo a commit"] and facts["doc_files"] == 1
    assert (kb / "faq" / "git" / "gitfaq.md").is_file()
    assert (kb / "doc" / "pkg" / "NEWS.txt").is_file() and not list(kb.rglob("*.pdf"))
    settings = settings_for(kb)
    assert {"md", "txt", "html"} <= set(settings.enabled_formats)
    assert settings.search_passage_candidates is None  # the default configuration
    assert settings.embedding_threads == 1


class Spans:
    """A stand-in for the default embedder's reading of parts (no model)."""

    model_id = "stand-in"

    def embed_spans(self, items: Any) -> list[list[None]]:
        return [[None for _ in groups] for _, groups in items]


def test_the_recording_embedder_is_still_one_that_reads_paragraphs() -> None:
    spans = paragraph_bench.Recording(Spans())
    assert candidates_for(None, spans) == 10  # so the default search re-scores with it
    assert spans.embed_spans([("a text", [[(0, 1)]])]) == [[None]]
    assert spans.calls == [["a text"]] and spans.model_id == "stand-in"
