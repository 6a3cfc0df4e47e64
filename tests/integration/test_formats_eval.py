"""Search quality on a knowledge base of converted formats: HTML, Word, PowerPoint, Excel, EPUB.

``tests/fixtures/formats_kb.py`` writes the knowledge base (three files per format, written
with the libraries users' tools write them with, and two Markdown distractors);
``tests/fixtures/formats-kb.golden.yml`` asks questions whose answers sit in table cells,
on slides, in speaker notes, in rows far down a sheet and inside EPUB chapters, each with the
section (heading) the parser gives that answer. The index is built through the library with
the real model, measured with the same code as ``kb-mcp eval``, and ``kb-mcp eval`` itself is
run on it. A parser that drops notes, table cells or rows, or loses its locator in the
heading, moves a number asserted here; failure messages carry the whole measured table.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_adapters.evaluation.golden import load_golden
from kbmcp_adapters.parsers.headings import clean_heading
from kbmcp_adapters.parsers.registry import build_registry
from kbmcp_core.evaluation import METRICS, GoldenQuery, fold
from kbmcp_core.ports import ChunkBudget
from tests.conftest import OpenKb
from tests.eval_support import measure, table
from tests.fixtures.formats_kb import FILES, build_formats_kb

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "formats-kb.golden.yml"
FORMATS = ("md", "html", "docx", "pptx", "xlsx", "epub")
#: One kind per converted format; Markdown files are distractors only.
KINDS = {"html", "docx", "pptx", "xlsx", "epub"}

#: The issue's bar: hybrid section-level recall@5 over all queries.
SECTION_RECALL5_FLOOR = 0.9
#: Per format, hybrid section-level recall@5: the measured value less one query's worth
#: (each kind has 6 to 8 queries, so one miss at most). Measured 2026-11-30: 1.000 for all.
KIND_SECTION_RECALL5_FLOOR = {
    "html": 0.83,  # 6 queries
    "docx": 0.85,  # 7 queries
    "pptx": 0.87,  # 8 queries
    "xlsx": 0.85,  # 7 queries
    "epub": 0.83,  # 6 queries
}
#: A speaker-notes hit is headed "Notes on slide N"; its heading path must also start with
#: the right slide's title.
NOTES_SLIDE = {
    "pptx-emea-bookings-notes": "Slide 2: Where we landed in Q2",
    "pptx-pushback-notes": "Slide 4: Pricing changes from 1 August",
    "pptx-onprem-notes": "Slide 4: What we are not doing",
    "pptx-phishing-report-notes": "Slide 2: Spotting phishing",
    "pptx-stolen-laptop-hotline": "Slide 4: Lost or stolen laptop",
}


@pytest.fixture
def formats_root(tmp_path: Path) -> Path:
    root = tmp_path / "formats-kb"
    build_formats_kb(root)
    return root


@pytest.fixture(scope="module")
def queries() -> list[GoldenQuery]:
    return load_golden(GOLDEN)


def index_formats_kb(open_kb: OpenKb, root: Path) -> KnowledgeBase:
    """Index the whole fixture with every format enabled; every file must make it in."""
    kb = open_kb(root, enabled_formats=FORMATS)
    summary = kb.index()
    assert (summary.added, summary.failed, summary.skipped) == (len(FILES), 0, 0), (
        summary.warnings
    )
    return kb


def test_golden_sections_are_sections_the_parsers_produce(
    tmp_path: Path, queries: list[GoldenQuery], embedder: FastEmbedEmbedder
) -> None:
    """A renamed heading or a shifted row range would otherwise just read as a bad score."""
    build_formats_kb(tmp_path)
    assert {q.kind for q in queries} == KINDS
    assert len({q.id for q in queries}) == len(queries)
    registry = build_registry(FORMATS)
    budget = ChunkBudget(max_tokens=embedder.max_tokens, min_tokens=24,
                         counter=lambda text: embedder.count_tokens([text])[0])
    headings: dict[str, set[str]] = {}
    for rel in FILES:
        parser = registry.parser_for(rel.rsplit(".", 1)[1])
        assert parser is not None, rel
        doc = parser.parse(rel, (tmp_path / rel).read_bytes(), budget)
        headings[rel] = {fold(clean_heading(c.heading)) for c in doc.chunks}
    for q in queries:
        for e in q.expected:
            assert e.path in headings, f"{q.id}: {e.path} is not in the fixture"
            assert e.path.endswith("." + (q.kind or "")), f"{q.id}: kind is not the format"
            assert e.heading is not None, f"{q.id}: every query is checked at section level"
            assert fold(clean_heading(e.heading)) in headings[e.path], (
                q.id, e.heading, sorted(headings[e.path]))


def test_answers_in_tables_slides_notes_and_rows_are_found_at_section_level(
    open_kb: OpenKb, formats_root: Path, queries: list[GoldenQuery]
) -> None:
    kb = index_formats_kb(open_kb, formats_root)
    reports = measure(kb, queries)
    print(table(reports))
    hybrid = reports["hybrid"]
    assert hybrid.section["recall@5"] >= SECTION_RECALL5_FLOOR, table(reports)
    assert set(hybrid.per_kind) == KINDS
    for kind, floor in KIND_SECTION_RECALL5_FLOOR.items():
        assert hybrid.per_kind[kind]["section"]["recall@5"] >= floor, kind + table(reports)
    by_id = {q.id: q for q in queries}
    for qid, slide in NOTES_SLIDE.items():
        q = by_id[qid]
        deck = q.expected[0].path
        hits = kb.search(q.query, limit=5, mode="hybrid").results
        notes = [h.heading_path for h in hits
                 if h.path == deck and h.heading.startswith("Notes on slide")]
        assert notes and notes[0][0] == slide, (qid, [(h.path, h.heading_path) for h in hits])


def test_kb_mcp_eval_prints_the_metrics_for_the_formats_kb(
    open_kb: OpenKb, formats_root: Path, queries: list[GoldenQuery], kb_env: dict[str, str]
) -> None:
    index_formats_kb(open_kb, formats_root).close()
    enabled = ", ".join(f'"{f}"' for f in FORMATS)
    (formats_root / "kb-mcp.toml").write_text(f"[parsers]\nenabled = [{enabled}]\n", "utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "kbmcp_cli", "eval", "--golden", str(GOLDEN),
         "--kb-path", str(formats_root)],
        cwd=formats_root,
        env=kb_env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"{len(queries)} queries" in out, out
    assert re.search(r"^mode\s+level\s+" + r"\s+".join(map(re.escape, METRICS)) + r"\s*$", out,
                     re.M), out
    rows = {
        m.group(1): [float(v) for v in m.group(2).split()]
        for m in re.finditer(r"^hybrid\s+(document|section)\s+([\d. ]+)$", out, re.M)
    }
    assert set(rows) == {"document", "section"}, out
    assert all(len(v) == len(METRICS) for v in rows.values()), out
    recall5 = METRICS.index("recall@5")
    assert rows["section"][recall5] >= SECTION_RECALL5_FLOOR, out
