"""Faults in the stores: damaged vector files, a damaged index database, a bad
database_url, and stores changed behind kb-mcp's back (deleted index.db or vectors/)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.store.sql_store import SqlIndexStore
from kbmcp_adapters.vectors.lance_store import LanceVectorStore
from kbmcp_core.errors import ConfigError, StoreCorrupt
from kbmcp_core.models import ChunkRecord, DocumentRecord
from tests.conftest import OpenKb, write_files
from tests.store_faults import (
    PAGES,
    damage_manifests,
    damage_store,
    damage_tables,
    kb_mcp,
    kb_mcp_here,
    no_traceback,
)


def checks(report: dict[str, object]) -> set[str]:
    findings = report["findings"]
    assert isinstance(findings, list)
    return {f["check"] for f in findings}


@pytest.fixture
def indexed(tmp_path: Path, open_kb: OpenKb) -> Path:
    kb = tmp_path / "kb"
    write_files(kb, dict(PAGES))
    first = open_kb(kb)
    assert first.index().added == len(PAGES)
    first.close()  # as a finished `kb-mcp index` leaves it: the WAL checkpointed
    return kb


# -- damaged vector files (item 4) ---------------------------------------------------


@pytest.mark.parametrize("how", ["length", "garbage"])
def test_search_on_damaged_vectors_answers_from_keywords_with_a_notice(
    indexed: Path, open_kb: OpenKb, how: str
) -> None:
    damage_manifests(indexed / ".kb-mcp" / "vectors", how)
    response = open_kb(indexed).search("staking tomatoes in June")
    assert [h.path for h in response.results][:1] == ["garden.md"]
    assert response.notice is not None and "keyword search only" in response.notice
    assert "kb-mcp index" in response.notice


@pytest.mark.parametrize("how", ["length", "garbage"])
def test_doctor_names_unreadable_vectors_and_a_plain_index_rebuilds_them(
    indexed: Path, open_kb: OpenKb, how: str
) -> None:
    damage_manifests(indexed / ".kb-mcp" / "vectors", how)
    report = open_kb(indexed).doctor()
    assert [f.check for f in report.findings] == ["vectors-unreadable"]
    assert "kb-mcp index`" in report.findings[0].remedy

    summary = open_kb(indexed).index()
    assert summary.unchanged == len(PAGES)
    assert summary.chunks_embedded == report.chunks  # rebuilt from the stored chunks
    kb = open_kb(indexed)
    assert kb.doctor().healthy
    response = kb.search("staking tomatoes in June", mode="vector")
    assert response.notice is None and response.results[0].path == "garden.md"


def test_cli_search_and_doctor_on_a_panicking_vector_table_print_no_traceback(
    indexed: Path, kb_env: dict[str, str]
) -> None:
    damage_manifests(indexed / ".kb-mcp" / "vectors", "length")
    found = kb_mcp(["search", "vault signing keys", "--kb-path", str(indexed),
                    "--format", "json"], kb_env)
    assert found.returncode == 0, found.stderr
    no_traceback(found.stderr)
    body = json.loads(found.stdout)
    assert body["results"][0]["path"] == "keys.md"
    assert "keyword search only" in body["notice"]
    text = kb_mcp(["search", "vault signing keys", "--kb-path", str(indexed)], kb_env)
    assert text.returncode == 0 and "keyword search only" in text.stdout, text.stderr
    doctor = kb_mcp(["doctor", "--kb-path", str(indexed), "--format", "json"], kb_env)
    assert doctor.returncode == 1, doctor.stderr
    no_traceback(doctor.stderr)
    assert checks(json.loads(doctor.stdout)) == {"vectors-unreadable"}


# -- a damaged index database (item 5) -----------------------------------------------


def _store_with_chunks(db: Path, documents: int) -> SqlIndexStore:
    store = SqlIndexStore(f"sqlite:///{db}", create=True)
    chunk_id = 1
    for d in range(documents):
        chunks = []
        for ordinal in range(3):
            text = f"section {ordinal} of document {d}: " + "lorem ipsum dolor " * 40
            chunks.append(ChunkRecord(chunk_id, ordinal, f"H{ordinal}", (f"H{ordinal}",), text,
                                      f"h{chunk_id}", 1, 2, None))
            chunk_id += 1
        store.write_document(DocumentRecord(f"doc{d}.md", f"Doc {d}", str(d), 100, None, None,
                                            None, (), {}, "2026-01-01T00:00:00Z"), chunks)
    return store


def test_quick_check_finds_8_kb_of_garbage_in_the_middle_of_the_store(tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    store = _store_with_chunks(db, 100)  # 300 chunks
    assert store.quick_check(20.0) == []
    store.close()
    damage_store(db)
    with SqlIndexStore(f"sqlite:///{db}", create=False, migrate_schema=False) as damaged:
        problems = damaged.quick_check(20.0)
        assert problems, "quick_check found nothing"
    damage_store(db, size=db.stat().st_size - 4096, seed=1)  # everything but the header
    with SqlIndexStore(f"sqlite:///{db}", create=False, migrate_schema=False) as ruined:
        assert ruined.quick_check(20.0)
        with pytest.raises(StoreCorrupt, match="damaged"):
            ruined.get_chunks(range(1, 301))


def test_a_damaged_store_is_reported_by_doctor_and_search_fails_in_one_line(
    indexed: Path, kb_env: dict[str, str]
) -> None:
    db = indexed / ".kb-mcp" / "index.db"
    assert damage_tables(db, {"chunks"}) > 0  # the rows every search reads its hits from
    doctor = kb_mcp(["doctor", "--kb-path", str(indexed), "--format", "json"], kb_env)
    no_traceback(doctor.stderr)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    report = json.loads(doctor.stdout)
    assert checks(report) == {"store-corrupt"} and report["store_check"] == "damaged"
    assert str(db) in report["findings"][0]["remedy"]

    found = kb_mcp(["search", "vault signing keys", "--kb-path", str(indexed)], kb_env)
    no_traceback(found.stderr)
    assert found.returncode in (1, 2)
    lines = found.stderr.strip().splitlines()
    assert len(lines) == 1 and "damaged" in lines[0] and "kb-mcp index" in lines[0], lines


# -- a bad database_url (item 6) -----------------------------------------------------


@pytest.mark.parametrize("url", ["not a url", "mysql://kb:s3cret@db.example/kb",
                                 "sqlite://", "sqlite+aiosqlite:///x.db"])
def test_a_bad_database_url_is_a_config_error_naming_the_key(
    tmp_path: Path, kb_env: dict[str, str], url: str
) -> None:
    (tmp_path / "kb-mcp.toml").write_text(f'kb_path = "."\ndatabase_url = "{url}"\n')
    with pytest.raises(ConfigError, match="database_url"):
        build_settings(tmp_path / "kb-mcp.toml")
    for command in (["status"], ["index"], ["search", "keys"]):  # in this process: its words
        done = kb_mcp_here([*command, "--config", str(tmp_path / "kb-mcp.toml")], kb_env)
        assert done.returncode == 2, done.stderr
        no_traceback(done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "database_url" in lines[0] and "SQLite" in lines[0], lines
        assert "s3cret" not in done.stderr


@pytest.mark.parametrize("url", ["not a url", "mysql://kb@db.example/kb",
                                 "postgresql+psycopg2://kb@db.example/kb"])
def test_the_store_refuses_a_url_it_cannot_open_with_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError, match="database_url"):
        SqlIndexStore(url, create=True)


def test_an_index_folder_whose_name_needs_escaping_in_a_url_opens(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    kb = tmp_path / "50%20off?#notes"
    write_files(kb, {"keys.md": PAGES["keys.md"]})
    assert open_kb(kb).index().added == 1
    assert (kb / ".kb-mcp" / "index.db").is_file()
    assert open_kb(kb).stats().documents == 1


# -- stores changed behind kb-mcp's back (item 9) ------------------------------------


def test_a_plain_run_after_index_db_was_deleted_leaves_no_orphan_vectors(
    indexed: Path, open_kb: OpenKb
) -> None:
    index_dir = indexed / ".kb-mcp"
    for name in ("index.db", "index.db-wal", "index.db-shm"):
        (index_dir / name).unlink(missing_ok=True)
    assert open_kb(indexed).index().added == len(PAGES)
    for _ in range(2):
        report = open_kb(indexed).doctor()
        assert report.healthy, [(f.check, f.summary) for f in report.findings]
        assert open_kb(indexed).index().unchanged == len(PAGES)
    vectors = LanceVectorStore(index_dir / "vectors", 384)
    assert vectors.count() == report.chunks


def test_a_plain_run_after_vectors_were_deleted_embeds_every_chunk_again(
    indexed: Path, open_kb: OpenKb
) -> None:
    chunks = open_kb(indexed).stats().chunks
    shutil.rmtree(indexed / ".kb-mcp" / "vectors")
    summary = open_kb(indexed).index()
    assert summary.unchanged == len(PAGES) and summary.chunks_embedded == chunks
    kb = open_kb(indexed)
    assert kb.doctor().healthy
    assert kb.search("staking tomatoes", mode="vector").results[0].path == "garden.md"


def test_an_unchanged_clean_index_is_checked_without_loading_the_vector_store(
    indexed: Path, tmp_path: Path, kb_env: dict[str, str]
) -> None:
    """The repair stays cheap to skip: an unchanged run after a clean one never imports
    LanceDB (about 1.5 s of imports, twice the rest of such a run)."""
    assert kb_mcp(["index", "--kb-path", str(indexed), "-q"], kb_env).returncode == 0
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\nfrom kbmcp_cli.main import main\n"
        f"sys.argv = ['kb-mcp', 'index', '--kb-path', {str(indexed)!r}, '-q']\n"
        "try:\n    main()\nfinally:\n"
        "    print('lancedb loaded:', 'lancedb' in sys.modules, file=sys.stderr)\n")
    done = subprocess.run([sys.executable, str(script)], env=kb_env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "lancedb loaded: False" in done.stderr
