"""The real `kb-mcp` process: index offline, survive SIGKILL, config discovery, status."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import write_files
from tests.embedding_server import EmbeddingServer
from tests.slow_service import slow_embedding_config

KB_MCP = [sys.executable, "-m", "kbmcp_cli"]


def run(
    args: list[str], env: dict[str, str], cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KB_MCP, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def corpus(root: Path, n: int) -> None:
    write_files(
        root,
        {
            f"topic{i % 7}/note-{i:03d}.md": (
                f"---\ntitle: Note {i}\ntags: [t{i % 3}]\n---\n# Note {i}\n\n"
                f"Paragraph one of note {i} talks about subject {i * 7919 % 1000}.\n\n"
                f"## Details\n\nDetails of note {i}: {'lorem ipsum ' * 30}\n"
            )
            for i in range(n)
        },
    )


def test_index_runs_with_the_network_unavailable(tmp_path: Path, kb_env: dict[str, str]) -> None:
    corpus(tmp_path / "kb", 5)
    port = closed_port()
    env = dict(kb_env)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env[var] = f"http://127.0.0.1:{port}"
    env["XDG_CACHE_HOME"] = str(tmp_path / "fresh-cache")  # nothing cached beforehand
    env["HF_HUB_OFFLINE"] = "1"
    r = run(["index", "--kb-path", str(tmp_path / "kb"), "--format", "json"], env)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["added"] == 5 and summary["chunks_embedded"] >= 5
    r = run(
        ["search", "subject of note 3", "--kb-path", str(tmp_path / "kb"), "--format", "json"], env
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["results"]


def test_a_killed_run_leaves_an_index_the_next_run_completes(
    tmp_path: Path, kb_env: dict[str, str]
) -> None:
    # vectors from a slow loopback service: a run that lasts, at no model's cost
    with slow_embedding_config(tmp_path / "slow" / "kb-mcp.toml") as service:
        completed = killed_then_completed(tmp_path, kb_env, tmp_path / "slow" / "kb-mcp.toml",
                                          service)
    assert completed == 60  # every note indexed in the end: the killed run lost nothing


def killed_then_completed(tmp_path: Path, kb_env: dict[str, str], config: Path,
                          service: EmbeddingServer) -> int:
    """Kill a run once it has committed something, check what survived, complete it with
    the next run; the number of documents the index then holds."""
    kb = tmp_path / "kb"
    corpus(kb, 60)
    db = kb / ".kb-mcp" / "index.db"
    proc = subprocess.Popen(
        [*KB_MCP, "index", "--kb-path", str(kb), "--config", str(config)],
        env=kb_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        committed = 0
        while time.monotonic() < deadline and proc.poll() is None:
            if db.exists():
                try:
                    with sqlite3.connect(db, timeout=1) as conn:
                        committed = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
                except sqlite3.OperationalError:
                    committed = 0
                if committed > 0:
                    break
            time.sleep(0.05)
        assert proc.poll() is None, "the run finished before it could be killed"
        assert 0 < committed <= 60  # killed in phase one, or in phase two (vectors)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    service.delay_s = 0.0  # the runs that follow need not wait

    # what survived is whole: every chunk has lexical rows; every document has chunks
    with sqlite3.connect(db) as conn:
        docs = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        no_chunks = conn.execute(
            "SELECT count(*) FROM documents WHERE id NOT IN (SELECT document_id FROM chunks)"
        ).fetchone()[0]
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        fts = conn.execute("SELECT count(*) FROM fts_words").fetchone()[0]
    assert docs > 0 and no_chunks == 0 and chunks == fts

    r = run(
        ["doctor", "--kb-path", str(kb), "--config", str(config), "--format", "json"],
        kb_env,
    )
    findings = {f["check"] for f in json.loads(r.stdout)["findings"]}
    assert not findings & {"missing-lexical-row", "chunk-without-document",
                           "document-without-chunks"}
    # what was stored is searchable by keywords even if its vectors were still to come; a
    # run killed before it finished reading the folder (phase one) leaves an index that
    # says so instead (a busy machine can land the kill there)
    r = run(["search", "subject", "--kb-path", str(kb), "--config", str(config), "--mode",
             "lexical", "--format", "json"], kb_env)
    if r.returncode == 2:
        assert "not ready" in r.stderr and r.stdout == "", r.stderr
    else:
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["results"]

    r = run(
        ["index", "--kb-path", str(kb), "--config", str(config), "--format", "json"],
        kb_env,
    )
    assert r.returncode == 0, r.stderr
    added = json.loads(r.stdout)["added"]
    assert added == 60 - docs
    r = run(["doctor", "--kb-path", str(kb), "--config", str(config)], kb_env)
    assert r.returncode == 0, r.stdout + r.stderr
    return int(docs + added)


def test_config_discovery_strict_keys_and_flags_win(tmp_path: Path, kb_env: dict[str, str]) -> None:
    kb = tmp_path / "kb"
    write_files(kb, {"a.md": "# A\n\nalpha\n", "b.txt": "beta text\n"})
    work = tmp_path / "work"
    work.mkdir()
    (work / "kb-mcp.toml").write_text(f'kb_path = "{kb}"\n[parsers]\nenabled = ["md", "txt"]\n')
    r = run(["index", "--format", "json"], kb_env, cwd=work)  # ./kb-mcp.toml is found ...
    assert r.returncode == 2 and "sets kb_path" in r.stderr, r.stderr  # ... names another folder
    assert run(["trust", str(work / "kb-mcp.toml")], kb_env).returncode == 0  # issue 37 item 5
    r = run(["index", "--format", "json"], kb_env, cwd=work)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["added"] == 2

    other = tmp_path / "other"
    write_files(other, {"c.md": "# C\n\ngamma\n"})
    r = run(["index", "--kb-path", str(other), "--format", "json"], kb_env, cwd=work)
    assert r.returncode == 0 and json.loads(r.stdout)["added"] == 1  # the flag wins

    (work / "kb-mcp.toml").write_text('kb_path = "."\n[parsers]\nenabeld = ["md"]\n')
    r = run(["index"], kb_env, cwd=work)
    assert r.returncode == 2
    assert "unknown key 'parsers.enabeld'" in r.stderr

    r = run(["index", "--kb-path", str(tmp_path / "missing")], kb_env)
    assert r.returncode == 2 and "not a directory" in r.stderr

    (work / "kb-mcp.toml").write_text('kb_path = "."\n[parsers]\nenabled = ["doc"]\n')
    r = run(["index"], kb_env, cwd=work)
    assert r.returncode == 2 and "unknown format 'doc'" in r.stderr


def test_status_and_model_mismatch_from_the_cli(tmp_path: Path, kb_env: dict[str, str]) -> None:
    kb = tmp_path / "kb"
    corpus(kb, 3)
    r = run(["status", "--kb-path", str(kb)], kb_env)
    assert r.returncode == 2 and "kb-mcp index" in r.stderr
    assert run(["index", "--kb-path", str(kb), "--quiet"], kb_env).returncode == 0
    r = run(["status", "--kb-path", str(kb), "--format", "json"], kb_env)
    status = json.loads(r.stdout)
    assert (status["documents"], status["model"], status["dimension"]) == (
        3,
        "kb-mcp/all-MiniLM-L6-v2-int8-dynamic",  # the default for a new index (0046)
        384,
    )
    assert status["last_run"]["added"] == 3
    (kb / "kb-mcp.toml").write_text('[embedding]\nmodel = "BAAI/bge-small-en-v1.5"\n')
    r = run(["index", "--kb-path", str(kb), "--config", str(kb / "kb-mcp.toml")], kb_env)
    assert r.returncode == 2
    assert "--force" in r.stderr and "kb-mcp/all-MiniLM-L6-v2-int8-dynamic" in r.stderr
