"""``kb-mcp watch``, the headless writer, as a user runs it: index, follow, stop on a signal."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from tests.conftest import write_files
from tests.e2e.conftest import DEADLINE, Env, LineReader, kb_mcp_command, run_index, stop
from tests.e2e.test_readonly_index import make_read_only, make_writable, unprivileged
from tests.e2e.test_server_faults import bulk_folder, kb_mcp_json
from tests.integration.test_writer_lock import hold_in_child
from tests.slow_service import slow_embedding_config
from tests.store_faults import no_traceback

#: How long a change on disk may take to reach the index (debounce + one sync).
SYNC_DEADLINE = 60.0


def start_watch(kb: Path, env: Env, *extra: str) -> tuple[subprocess.Popen[str], LineReader]:
    proc = subprocess.Popen([*kb_mcp_command(), "watch", "--kb-path", str(kb), *extra],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **env})
    assert proc.stderr is not None and proc.stdout is not None
    return proc, LineReader(proc.stderr)


def finish(proc: subprocess.Popen[str]) -> None:
    """Stop the process if a check failed first, and close its stdout (stderr is closed
    by its LineReader)."""
    stop(proc)
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.fixture
def reader(embedder: FastEmbedEmbedder) -> Iterator[Callable[[Path], KnowledgeBase]]:
    """A fresh library reader per look, so every look sees the writer's latest commit."""
    opened: list[KnowledgeBase] = []

    def open_reader(kb: Path) -> KnowledgeBase:
        kb_obj = KnowledgeBase(bootstrap(build_settings(None, cwd=kb, kb_path=kb),
                                         embedder=embedder))
        opened.append(kb_obj)
        return kb_obj

    yield open_reader
    for kb_obj in opened:
        kb_obj.close()


def eventually(check: Callable[[], bool], what: str, deadline: float = SYNC_DEADLINE) -> None:
    end = time.monotonic() + deadline
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"not within {deadline}s: {what}")
        time.sleep(0.2)


def test_watch_indexes_then_follows_the_folder_and_exits_0_on_sigterm(
    tmp_path: Path, server_env: Env, reader: Callable[[Path], KnowledgeBase]
) -> None:
    kb = tmp_path / "kb"
    write_files(kb, {"keys.md": "# Keys\n\nRotate the vault signing keys every 90 days.\n",
                     "garden.md": "# Garden\n\nTomatoes need staking in June.\n"})
    proc, err = start_watch(kb, server_env)
    try:
        err.wait_for(r"watching .* for changes", DEADLINE)

        def paths(query: str) -> list[str]:
            return [h.path for h in reader(kb).search(query, limit=10).results]

        # it indexed the folder at start (there was no index before)
        assert "keys.md" in paths("vault signing keys")
        # a new file becomes searchable
        write_files(kb, {"recipes/soup.md": "# Soup\n\nSimmer the leek stock for an hour.\n"})
        eventually(lambda: "recipes/soup.md" in paths("leek stock simmer"),
                   "the new file is searchable")
        # a deleted file disappears
        (kb / "garden.md").unlink()
        eventually(lambda: "garden.md" not in reader(kb).indexed_paths(),
                   "the deleted file left the index")
        assert "garden.md" not in paths("tomatoes staking June")
        err.wait_for(r"live sync: .*deleted", DEADLINE)  # each sync is logged on stderr
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert proc.stdout is not None
        assert proc.stdout.read() == ""  # it serves nothing: stdout stays empty
    finally:
        finish(proc)
    logged = err.drain()
    no_traceback(logged)
    assert "SIGTERM: stopping" in logged


def test_watch_exits_0_on_sigint(tmp_path: Path, server_env: Env) -> None:
    kb = tmp_path / "kb"
    write_files(kb, {"a.md": "# A\n\nalpha\n"})
    proc, err = start_watch(kb, server_env)
    try:
        err.wait_for(r"watching .* for changes", DEADLINE)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        finish(proc)
    no_traceback(err.drain())


def stored_documents(kb: Path) -> int:
    """Documents committed so far, read as a reader would (nothing written)."""
    db = kb / ".kb-mcp" / "index.db"
    if not (db.exists() and (kb / ".kb-mcp" / "index.db-shm").exists()):
        return 0
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        try:
            return int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])
        except sqlite3.OperationalError:  # the tables are not there yet
            return 0


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_signal_during_the_first_index_run_exits_0_and_leaves_nothing_to_repair(
    tmp_path: Path, server_env: Env, signum: signal.Signals
) -> None:
    kb = tmp_path / "kb"
    bulk_folder(kb / "bulk", 120)
    config = tmp_path / "slow" / "kb-mcp.toml"
    at = ("--config", str(config))
    # vectors from a slow loopback service: a first run that lasts, at no model's cost
    with slow_embedding_config(config) as service:
        proc, err = start_watch(kb, server_env, *at)
        try:
            err.wait_for(r"indexing ", DEADLINE)
            eventually(lambda: stored_documents(kb) > 0, "the first documents are committed")
            started = time.monotonic()
            proc.send_signal(signum)
            assert proc.wait(timeout=30) == 0
            took = time.monotonic() - started
        finally:
            finish(proc)
        service.delay_s = 0.0  # the run that resumes need not wait
        stopped_cleanly_then_resumed(kb, server_env, err.drain(), signum, took, at)


def stopped_cleanly_then_resumed(kb: Path, server_env: Env, logged: str,
                                 signum: signal.Signals, took: float,
                                 at: tuple[str, ...]) -> None:
    """The signalled run's log and exit time, then what it left: checked by status, doctor
    and the next run (with the config ``at`` names, while its service still answers)."""
    no_traceback(logged)
    assert f"{signum.name}: stopping" in logged and "watching" not in logged, logged
    assert took < 30
    # only what the stopped run had not reached is left: documents not yet stored, chunks
    # not yet embedded (doctor names nothing else); the next run does exactly that
    _, status = kb_mcp_json(kb, server_env, "status", *at)
    stored, chunks = int(status["documents"]), int(status["chunks"])
    _, doctor = kb_mcp_json(kb, server_env, "doctor", *at)
    found = {finding["check"]: int(finding.get("count", 0)) for finding in doctor["findings"]}
    assert set(found) <= {"missing-vector"}, doctor
    code, summary = kb_mcp_json(kb, server_env, "index", *at)
    assert code == 0, summary
    assert summary["added"] == 120 - stored and summary["unchanged"] == stored, summary
    assert summary["updated"] == summary["deleted"] == summary["failed"] == 0, summary
    _, status = kb_mcp_json(kb, server_env, "status", *at)
    new_chunks = int(status["chunks"]) - chunks
    assert summary["chunks_embedded"] == found.get("missing-vector", 0) + new_chunks, summary
    code, doctor = kb_mcp_json(kb, server_env, "doctor", *at)
    assert code == 0 and doctor["findings"] == [], doctor


def test_watch_on_a_read_only_index_exits_2_with_one_sentence(
    tmp_path: Path, server_env: Env
) -> None:
    kb = tmp_path / "kb"
    write_files(kb, {"a.md": "# A\n\nalpha\n"})
    run_index(kb, server_env)
    make_read_only(kb / ".kb-mcp")
    try:
        done = subprocess.run([*unprivileged(), *kb_mcp_command(), "watch", "--kb-path",
                               str(kb)], env={**os.environ, **server_env},
                              capture_output=True, text=True, timeout=DEADLINE,
                              stdin=subprocess.DEVNULL, check=False)
    finally:
        make_writable(kb / ".kb-mcp")
    assert done.returncode == 2, done.stderr
    no_traceback(done.stderr)
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(errors) == 1, done.stderr
    assert "cannot write the index" in errors[0] and "search" in errors[0]


def test_watch_with_a_bad_config_exits_2_naming_the_key(tmp_path: Path,
                                                        server_env: Env) -> None:
    kb = tmp_path / "kb"
    write_files(kb, {"a.md": "# A\n", "kb-mcp.toml": "[lock]\ntimeout_secs = 1\n"})
    done = subprocess.run([*kb_mcp_command(), "watch", "--kb-path", str(kb), "--config",
                           str(kb / "kb-mcp.toml")], env={**os.environ, **server_env},
                          capture_output=True, text=True, timeout=DEADLINE,
                          stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "timeout_secs" in done.stderr, done.stderr


def test_watch_while_another_writer_holds_the_index_names_it(tmp_path: Path,
                                                             server_env: Env) -> None:
    kb = tmp_path / "kb"
    write_files(kb, {"a.md": "# A\n\nalpha\n", "kb-mcp.toml": "[lock]\ntimeout_seconds = 1\n"})
    holder = hold_in_child(kb / ".kb-mcp")
    try:
        done = subprocess.run([*kb_mcp_command(), "watch", "--kb-path", str(kb), "--config",
                               str(kb / "kb-mcp.toml")], env={**os.environ, **server_env},
                              capture_output=True, text=True, timeout=DEADLINE,
                              stdin=subprocess.DEVNULL, check=False)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert done.returncode == 1, done.stderr
    no_traceback(done.stderr)
    assert f"another writer holds the index lock (pid {holder.pid}" in done.stderr


def pg_config(kb: Path, url: str, timeout_s: float = 30) -> Path:
    config = kb / "kb-mcp.toml"
    config.write_text(f'database_url = "{url}"\n\n[lock]\ntimeout_seconds = {timeout_s}\n',
                      encoding="utf-8")
    return config


def test_watch_on_a_postgresql_store_indexes_and_follows(
    tmp_path: Path, server_env: Env, pg_url: str
) -> None:
    kb = tmp_path / "kb"
    write_files(kb, {"keys.md": "# Keys\n\nRotate the vault signing keys every 90 days.\n"})
    config = pg_config(kb, pg_url)
    proc, err = start_watch(kb, server_env, "--config", str(config))
    try:
        err.wait_for(r"watching .* for changes", DEADLINE)
        write_files(kb, {"soup.md": "# Soup\n\nSimmer the leek stock for an hour.\n"})

        def found() -> bool:
            done = subprocess.run([*kb_mcp_command(), "search", "leek stock simmer",
                                   "--kb-path", str(kb), "--config", str(config),
                                   "--format", "json"], env={**os.environ, **server_env},
                                  capture_output=True, text=True, timeout=DEADLINE,
                                  stdin=subprocess.DEVNULL, check=False)
            assert done.returncode == 0, done.stderr
            return '"soup.md"' in done.stdout

        eventually(found, "the new file is searchable from the PostgreSQL store")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        finish(proc)
    no_traceback(err.drain())


def test_watch_on_a_postgresql_store_names_a_writer_on_another_host(
    tmp_path: Path, server_env: Env, pg_url: str
) -> None:
    """Another writer holds the database's advisory lock (a process standing in for a
    writer on another machine): watch waits its timeout, then names that writer."""
    from tests.integration.test_advisory_lock import end
    from tests.integration.test_advisory_lock import hold_in_child as hold_pg_lock

    kb = tmp_path / "kb"
    write_files(kb, {"a.md": "# A\n\nalpha\n"})
    config = pg_config(kb, pg_url, timeout_s=1)
    holder = hold_pg_lock(pg_url)
    try:
        done = subprocess.run([*kb_mcp_command(), "watch", "--kb-path", str(kb), "--config",
                               str(config)], env={**os.environ, **server_env},
                              capture_output=True, text=True, timeout=DEADLINE,
                              stdin=subprocess.DEVNULL, check=False)
    finally:
        end(holder)
    assert done.returncode == 1, done.stderr
    no_traceback(done.stderr)
    assert f"another writer holds the index lock (pid {holder.pid} on host" in done.stderr
