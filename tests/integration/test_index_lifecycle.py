"""An index's life from a user's seat: a run refused for its configuration creates nothing;
an index no run has finished reading the folder into is "not ready" for status, doctor,
search, the library and the MCP tool (never "healthy" or "no results"); a damaged index
database is never written into; a file in the vectors' place is moved aside by the remedy
doctor names; the run's counts add up and `--strict` turns failures into exit 1."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.mcp_server import KbRuntime, build_server
from kbmcp_adapters.store.sql_store import SqlIndexStore
from kbmcp_core.errors import IndexNotReady, StoreCorrupt
from kbmcp_core.meta_keys import META_READY
from kbmcp_core.settings import Settings
from tests.conftest import OpenKb, write_files
from tests.fakes import FakeEmbedder, FakeVectorStore
from tests.store_faults import PAGES, no_traceback
from tests.store_faults import kb_mcp_here as kb_mcp

Env = dict[str, str]


def at(kb: Path) -> list[str]:
    return ["--kb-path", str(kb)]


def left_by_a_failed_run(kb: Path) -> None:
    """What a first run that failed after opening the store left: an index with its
    schema and nothing else (what `[parsers].enabled = ["bogus"]` used to leave)."""
    (kb / ".kb-mcp").mkdir(parents=True, exist_ok=True)
    SqlIndexStore(f"sqlite:///{kb / '.kb-mcp' / 'index.db'}", create=True).close()


# -- item 4: validate first; "not ready" everywhere ---------------------------------------


def test_a_run_refused_for_its_configuration_creates_nothing(
    tmp_path: Path, kb_env: Env
) -> None:
    kb = tmp_path / "kb"
    write_files(kb, {"a.md": "# A\n\nalpha\n", "kb-mcp.toml": '[parsers]\nenabled = ["md", '
                                                              '"bogus"]\n'})
    done = kb_mcp(["index", *at(kb), "--config", str(kb / "kb-mcp.toml")], kb_env)
    no_traceback(done.stderr)
    assert done.returncode == 2, done.stderr
    assert "[parsers].enabled" in done.stderr and "'bogus'" in done.stderr
    assert not (kb / ".kb-mcp").exists(), sorted(p.name for p in (kb / ".kb-mcp").iterdir())


def test_an_index_no_run_finished_is_reported_not_ready_until_kb_mcp_index(
    tmp_path: Path, kb_env: Env
) -> None:
    kb = tmp_path / "kb"
    write_files(kb, dict(PAGES))
    left_by_a_failed_run(kb)

    status = kb_mcp(["status", *at(kb), "--format", "json"], kb_env)
    assert status.returncode == 2, status.stdout + status.stderr  # as "no index yet"
    assert json.loads(status.stdout)["ready"] is False
    text = kb_mcp(["status", *at(kb)], kb_env)
    assert text.returncode == 2 and "ready: no" in text.stdout and "kb-mcp index" in text.stdout

    doctor = kb_mcp(["doctor", *at(kb), "--format", "json"], kb_env)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    findings = {f["check"]: f for f in json.loads(doctor.stdout)["findings"]}
    assert "index-incomplete" in findings
    assert "`kb-mcp index`" in findings["index-incomplete"]["remedy"]

    search = kb_mcp(["search", "rotate the signing keys", *at(kb)], kb_env)
    no_traceback(search.stderr)
    assert search.returncode == 2, search.stdout + search.stderr
    assert "no results" not in search.stdout
    assert "not ready" in search.stderr and "kb-mcp index" in search.stderr

    done = kb_mcp(["index", *at(kb), "-q"], kb_env)
    assert done.returncode == 0, done.stderr
    assert kb_mcp(["status", *at(kb)], kb_env).returncode == 0
    assert kb_mcp(["doctor", *at(kb)], kb_env).returncode == 0
    found = kb_mcp(["search", "rotate the signing keys", *at(kb), "--format", "json"], kb_env)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["path"] == "keys.md"


def test_an_empty_index_file_is_not_ready_not_no_results(tmp_path: Path, kb_env: Env) -> None:
    kb = tmp_path / "kb"
    write_files(kb, dict(PAGES))
    (kb / ".kb-mcp").mkdir()
    (kb / ".kb-mcp" / "index.db").write_bytes(b"")
    doctor = kb_mcp(["doctor", *at(kb), "--format", "json"], kb_env)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert [f["check"] for f in json.loads(doctor.stdout)["findings"]] == ["index-incomplete"]
    search = kb_mcp(["search", "garden", *at(kb)], kb_env)
    no_traceback(search.stderr)
    assert search.returncode == 2 and "not ready" in search.stderr, search.stdout + search.stderr


def fake_kb(settings: Settings) -> KnowledgeBase:
    """The knowledge base with the model-free embedder (no model needed to be refused)."""
    return KnowledgeBase(bootstrap(settings, embedder=FakeEmbedder(),
                                   vectors=FakeVectorStore()))


def test_the_library_and_the_mcp_tool_say_index_not_ready(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write_files(kb, dict(PAGES))
    left_by_a_failed_run(kb)
    settings = build_settings(None, cwd=kb, kb_path=kb)
    library = fake_kb(settings)
    try:
        assert not library.is_ready()
        with pytest.raises(IndexNotReady, match="kb-mcp index"):
            library.search("garden")
    finally:
        library.close()

    runtime = KbRuntime(settings, open_kb=fake_kb)

    async def body() -> None:
        with anyio.fail_after(60):
            async with Client(build_server(runtime), mode="legacy") as client:
                result = await client.call_tool("search", {"query": "garden"})
        assert result.is_error
        block = result.content[0]
        assert isinstance(block, types.TextContent)
        error = json.loads(block.text)["error"]
        assert error["code"] == "index_not_ready", error
        assert "kb-mcp index" in error["message"] and str(tmp_path) not in error["message"]

    try:
        anyio.run(body)
    finally:
        runtime.close()


def test_an_index_from_before_the_ready_mark_stays_searchable(
    tmp_path: Path, open_kb: OpenKb, kb_env: Env
) -> None:
    kb = tmp_path / "kb"
    write_files(kb, dict(PAGES))
    built = open_kb(kb)
    built.index()
    built.close()
    conn = sqlite3.connect(kb / ".kb-mcp" / "index.db")
    try:
        conn.execute("DELETE FROM index_meta WHERE key = ?", (META_READY,))
        conn.commit()
    finally:
        conn.close()
    assert kb_mcp(["status", *at(kb)], kb_env).returncode == 0
    found = kb_mcp(["search", "staking tomatoes", *at(kb), "--format", "json"], kb_env)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["path"] == "garden.md"


# -- item 11: a damaged database is not written into; a file where the vectors go ---------


def damage_a_middle_chunk_page(db: Path) -> None:
    """Random bytes over a leaf page in the middle of the chunks table: pages an unchanged
    run, and a run adding a file, never read."""
    conn = sqlite3.connect(db)
    try:
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        leaves = [p for (p,) in conn.execute(
            "SELECT pageno FROM dbstat WHERE name = 'chunks' AND pagetype = 'leaf' "
            "ORDER BY pageno")]
    finally:
        conn.close()
    assert len(leaves) >= 3, leaves
    with db.open("r+b") as f:
        f.seek((leaves[len(leaves) // 2] - 1) * size)
        f.write(os.urandom(size))


def test_index_refuses_to_write_into_a_damaged_database(
    tmp_path: Path, open_kb: OpenKb, kb_env: Env
) -> None:
    kb = tmp_path / "kb"
    body = " ".join(f"word{i}" for i in range(150))
    write_files(kb, {f"n{i:02d}.md": f"# Note {i}\n\n{body} note{i}\n" for i in range(40)})
    built = open_kb(kb)
    built.index()
    built.close()
    db = kb / ".kb-mcp" / "index.db"
    damage_a_middle_chunk_page(db)
    write_files(kb, {"new.md": "# New\n\nA new note about lighthouses.\n"})
    before = hashlib.sha256(db.read_bytes()).hexdigest()

    done = kb_mcp(["index", *at(kb)], kb_env)
    no_traceback(done.stderr)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "damaged" in lines[0] and "kb-mcp index" in lines[0], lines
    assert f"delete {db}" in lines[0]
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before  # nothing written
    library = open_kb(kb)
    with pytest.raises(StoreCorrupt):
        library.index()


def test_a_file_in_the_place_of_the_vectors_folder_is_moved_aside_by_kb_mcp_index(
    tmp_path: Path, open_kb: OpenKb, kb_env: Env
) -> None:
    kb = tmp_path / "kb"
    write_files(kb, dict(PAGES))
    built = open_kb(kb)
    built.index()
    built.close()
    vectors = kb / ".kb-mcp" / "vectors"
    for path in sorted(vectors.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    vectors.rmdir()
    vectors.write_text("not a folder\n")

    reader = open_kb(kb)
    response = reader.search("staking tomatoes in June")
    assert response.results[0].path == "garden.md"
    assert response.notice is not None and "keyword search only" in response.notice
    assert str(tmp_path) not in response.notice
    found = [f for f in reader.doctor().findings if f.check == "vectors-unreadable"]
    assert found and "`kb-mcp index`" in found[0].remedy
    reader.close()

    done = kb_mcp(["index", *at(kb)], kb_env)
    no_traceback(done.stderr)
    assert done.returncode == 0, done.stderr
    assert "moved it aside" in done.stderr
    assert (kb / ".kb-mcp" / "vectors.not-a-folder").read_text() == "not a folder\n"
    after = open_kb(kb)
    assert after.doctor().healthy
    hit = after.search("staking tomatoes in June", mode="vector")
    assert hit.notice is None and hit.results[0].path == "garden.md"


# -- item 7: counts that add up, file names with -v, --strict -----------------------------


def test_index_json_counts_add_up_names_files_with_v_and_strict_exits_1(
    tmp_path: Path, kb_env: Env
) -> None:
    kb = tmp_path / "kb"
    write_files(kb, {"a.md": "# A\n\nalpha about otters\n", "photo.heic": b"\x89PNG",
                     "broken.md": b"# Broken \xff\xfe\n", "sub/b.md": "# B\n\nbeta\n"})
    os.symlink("a.md", kb / "link.md")
    done = kb_mcp(["index", *at(kb), "--format", "json", "-v"], kb_env)
    assert done.returncode == 0, done.stderr  # failures alone never change the exit code
    s = json.loads(done.stdout)
    assert s["scanned"] == 5 == (s["added"] + s["updated"] + s["renamed"] + s["unchanged"]
                                 + s["skipped"] + s["failed"])
    assert (s["added"], s["skipped"], s["failed"]) == (2, 2, 1)
    assert s["skipped_reasons"] == {"not a supported format": 1, "symbolic link": 1}
    assert s["failed_reasons"] == {"could not be read as its format": 1}
    assert s["skipped_files"] == {"not a supported format": ["photo.heic"],
                                  "symbolic link": ["link.md"]}
    assert s["failed_files"] == {"could not be read as its format": ["broken.md"]}

    plain = kb_mcp(["index", *at(kb), "--format", "json"], kb_env)
    assert plain.returncode == 0 and "skipped_files" not in json.loads(plain.stdout)
    strict = kb_mcp(["index", *at(kb), "--strict"], kb_env)
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "2 unchanged" in strict.stdout and "1 failed" in strict.stdout
    (kb / "broken.md").unlink()
    assert kb_mcp(["index", *at(kb), "--strict", "-q"], kb_env).returncode == 0
