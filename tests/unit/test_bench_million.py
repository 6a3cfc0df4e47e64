"""The million-chunk bench row (issue 43, goal 2): each store's rows judged against their
limits, the config a child indexes with read back as settings, the 1 % of notes the
incremental run changes, and ``--reuse`` refusing an index the code would rebuild."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from benchmarks import million
from kbmcp_adapters.app.bootstrap import settings_for
from kbmcp_adapters.parsers.registry import CONVERSION_VERSIONS
from kbmcp_core.models import EMBED_TEXT


def _store(rss: float, p95: float, recall: float, cpu: float) -> dict[str, Any]:
    stats = {"n": 100, "p50_s": p95 / 2, "p95_s": p95, "hits": 1000}
    return {
        "index": {"chunks": 1_000_000, "own_peak_rss_mb": rss, "wall_s": 3000.0,
                  "cpu_s": 2500.0},
        "search": {"variants": {"unfiltered": stats, "folder": stats}},
        "recall": {"recall_at_10": recall, "index": [1_000_000, 1_000_000], "nprobes": 500},
        "incremental": {"changed_files": 2225, "cpu_ratio": cpu,
                        "run": {"cpu_s": 60.0 * cpu, "wall_s": 90.0},
                        "floor": {"cpu_s": 60.0, "wall_s": 70.0}},
    }


def test_each_store_gets_its_rows_each_judged_against_its_limit() -> None:
    result = {"files": 222_500, "sqlite": _store(900, 0.120, 0.97, 1.5),
              "pg_s3": _store(1700, 0.400, 0.90, 2.5)}
    rows = million.rows(result)
    verdicts = [(r.name.strip().split(",")[0], r.result) for r in rows]
    assert [v for _, v in verdicts] == ["PASS"] * 5 + ["MISS"] * 5
    assert rows[0].name.startswith("SQLite, 1,000,000 chunks")
    assert rows[5].name.startswith("PostgreSQL + S3")
    assert "2,225 files changed" in rows[4].name


def test_a_failed_store_is_left_out_of_the_rows() -> None:
    assert million.rows({"files": 10, "sqlite": {"error": "boom"}}) == []


def test_the_childs_config_names_the_store_and_the_object_store_options(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    store = {"database_url": "postgresql+psycopg://u@127.0.0.1:5/db",
             "vectors_uri": "s3://bucket/million",
             "storage_options": {"aws_endpoint": "http://127.0.0.1:9", "allow_http": "true"}}
    path = million.config(tmp_path / "pg.toml", kb, tmp_path / "index", store)
    s = settings_for(config=path)
    assert s.database_url == store["database_url"]
    assert s.vectors_uri == store["vectors_uri"]
    assert dict(s.vectors_storage_options)["aws_endpoint"] == "http://127.0.0.1:9"
    assert Path(s.index_dir) == tmp_path / "index"


def test_one_note_in_a_hundred_changes(tmp_path: Path) -> None:
    for i in range(300):
        (tmp_path / f"note-{i:03d}.md").write_text("x\n", encoding="utf-8")
    changed = million._changed(tmp_path, million.CHANGED_SHARE)  # noqa: SLF001
    assert len(changed) == 3
    assert len({p.name[5:7] for p in changed}) == 3  # spread over the folder


def test_the_paired_filtered_searches_print_before_and_after_in_one_row() -> None:
    got = _store(900, 0.120, 0.97, 1.5)
    got["paired"] = {
        "filters": {"folder": {"path_globs": ["a/**"]}},
        "variants": {"folder by labels": {"n": 30, "p50_s": 0.2, "p95_s": 0.3},
                     "folder by ids": {"n": 30, "p50_s": 0.8, "p95_s": 1.3}},
        "same_hits": {"folder": 29}}
    rows = million.rows({"files": 222_500, "sqlite": got})
    paired = [r for r in rows if "by ids -> by labels" in r.name]
    assert len(paired) == 1 and "folder" in paired[0].name
    assert "same hits 29 of 30" in paired[0].spread


def test_the_filtered_keyword_leg_prints_exact_then_budget_with_its_recall() -> None:
    got = _store(900, 0.120, 0.97, 1.5)
    stats = {"n": 20, "p50_s": 0.1, "p95_s": 0.2}
    got["keywords"] = {
        "filters": {"folder": {"path_globs": ["a/**"]}},
        "variants": {f"folder {part} {way}": stats for part in ("leg", "hybrid")
                     for way in ("budget", "exact")},
        "recall_at_10": {"folder leg": 0.9, "folder hybrid": 0.99}}
    rows = million.rows({"files": 222_500, "sqlite": got})
    legs = [r for r in rows if "exact -> budget" in r.name]
    assert [r.result for r in legs] == ["MISS", "PASS"]
    assert "recall@10 of exact 0.990" in legs[1].spread


def test_the_joint_searchs_pooled_legs_print_every_match_then_budget() -> None:
    got = _store(900, 0.120, 0.97, 1.5)
    got["pooled"] = {
        "variants": {f"{part} {way}": {"n": 30, "p50_s": p50, "p95_s": 2 * p50}
                     for part in ("legs", "hybrid")
                     for way, p50 in (("every match", 0.5), ("budget", 0.05))},
        "same_top": {"every match one": 0, "every match two": 1, "budget one": 30,
                     "budget two": 29}, "queries": 30, "k": 10}
    rows = million.rows({"files": 22_500, "sqlite": got})
    joint = [r for r in rows if "joint search of two collections" in r.name]
    assert [r.value for r in joint] == ["1.00 s -> 100.0 ms"] * 2
    top = next(r for r in rows if "top 10" in r.name)
    assert (top.value, top.spread) == ("0 / 1 -> 30 / 29", "of 30 queries")


def _index_meta(index_dir: Path, embed_text: str, md: int) -> None:
    index_dir.mkdir(parents=True)
    with closing(sqlite3.connect(index_dir / "index.db")) as conn, conn:
        conn.execute("CREATE TABLE index_meta (key TEXT PRIMARY KEY, value TEXT)")
        conn.executemany("INSERT INTO index_meta VALUES (?, ?)", [
            ("embed_text", embed_text), ("parsed_with", json.dumps({"md": md}))])


def test_reuse_refuses_an_index_the_code_would_embed_again(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An index whose vectors were made from another embed text: ``--reuse`` stops with
    one line before any child runs (its settle run would have re-embedded every chunk)."""
    base = tmp_path / f"million-{million.QUICK_FILES}"
    (base / "kb").mkdir(parents=True)
    (base / "complete").write_text("0 0\n", encoding="utf-8")
    (base / "sqlite-result.json").write_text(json.dumps({"index": {"chunks": 9}}),
                                             encoding="utf-8")
    _index_meta(base / "index-sqlite", "prose-1", CONVERSION_VERSIONS["md"])
    code = million.main([str(tmp_path), "--quick", "--reuse", "--stores", "sqlite",
                         "--parts", "search"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "--reuse refused" in err and "'prose-1'" in err and EMBED_TEXT in err
    assert json.loads((base / "sqlite-result.json").read_text(encoding="utf-8")) == {
        "index": {"chunks": 9}}  # nothing measured, nothing overwritten


def test_reuse_refuses_another_chunker_and_keeps_the_codes_own(tmp_path: Path) -> None:
    older = tmp_path / "older"
    _index_meta(older, EMBED_TEXT, CONVERSION_VERSIONS["md"] - 1)
    with pytest.raises(million.StaleIndex, match="chunked by Markdown parser"):
        million.refuse_stale(older)
    same = tmp_path / "same"
    _index_meta(same, EMBED_TEXT, CONVERSION_VERSIONS["md"])
    million.refuse_stale(same)
