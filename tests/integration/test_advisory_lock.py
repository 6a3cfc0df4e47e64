"""One writer per PostgreSQL index across processes (and hosts): the advisory writer lock."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbmcp_adapters.store.advisory_lock import (
    FREED_WITHIN_S,
    advisory_lock,
    is_postgresql_url,
)
from kbmcp_adapters.store.cross_process_lock import writer_lock
from kbmcp_core.errors import StoreError, StoreUnreachable, WriterBusy
from tests.pg_cluster import USER, PgCluster
from tests.pg_relay import relay_to

HOLD = """
import sys
from kbmcp_adapters.store.advisory_lock import advisory_lock
with advisory_lock(sys.argv[1], 5):
    print("held", flush=True)
    sys.stdin.readline()
"""

DEADLINE = 60.0


def hold_in_child(url: str) -> subprocess.Popen[str]:
    """Another process holding the lock until its stdin closes (or it is killed)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, url], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


def end(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()


def test_second_writer_gets_writer_busy_naming_the_holder_s_pid_and_host(pg_url: str) -> None:
    proc = hold_in_child(pg_url)
    try:
        started = time.monotonic()
        with pytest.raises(WriterBusy) as caught, advisory_lock(pg_url, 0.5):
            pass
        assert time.monotonic() - started >= 0.5  # it waited its timeout before giving up
        message = str(caught.value)
        assert f"pid {proc.pid}" in message
        assert f"on host {socket.gethostname()[:20]}" in message
        assert "writing since 20" in message
    finally:
        end(proc)


def test_the_writer_lock_on_a_postgresql_store_is_the_advisory_lock(
    pg_url: str, tmp_path: Path
) -> None:
    """``writer_lock`` with a PostgreSQL store URL excludes a writer on another host (here:
    another process holding the advisory lock), and leaves the local index folder alone."""
    index_dir = tmp_path / "index"
    proc = hold_in_child(pg_url)
    try:
        with (pytest.raises(WriterBusy, match=f"pid {proc.pid} on host"),
              writer_lock(index_dir, 0.3, store_url=pg_url)):
            pass
    finally:
        end(proc)
    with writer_lock(index_dir, 5, store_url=pg_url):
        pass
    assert not index_dir.exists()  # no file lock was taken


def test_a_sigkilled_holder_frees_the_lock_for_the_next_writer(pg_url: str) -> None:
    proc = hold_in_child(pg_url)
    os.kill(proc.pid, signal.SIGKILL)
    end(proc)
    # the server notices the closed socket and frees the lock; the next writer waits for it
    with advisory_lock(pg_url, DEADLINE) as held:
        assert held.still_held()


def test_a_waiting_writer_proceeds_once_the_holder_releases(pg_url: str) -> None:
    proc = hold_in_child(pg_url)
    polls: list[int] = []

    def waiting() -> None:
        if not polls:  # first poll: the lock is taken; tell the holder to let go
            assert proc.stdin is not None
            proc.stdin.close()
        polls.append(1)

    try:
        with advisory_lock(pg_url, DEADLINE, check=waiting) as held:
            assert held.still_held()
        assert polls, "the second writer never had to wait"
        assert proc.wait(timeout=30) == 0
    finally:
        end(proc)


def test_the_lock_connection_has_keepalives_so_a_vanished_host_frees_it(pg_url: str) -> None:
    with advisory_lock(pg_url, 5) as held:
        shown = {name: held.connection.execute(f"SHOW {name}").fetchone()[0]
                 for name in ("tcp_keepalives_idle", "tcp_keepalives_interval",
                              "tcp_keepalives_count")}
    idle, interval, count = (int(str(v).rstrip("s")) for v in shown.values())
    assert 0 < idle + interval * count <= FREED_WITHIN_S


def test_a_lock_released_normally_is_free_at_once_and_held_is_false_after(pg_url: str) -> None:
    with advisory_lock(pg_url, 5) as held:
        pass
    assert not held.still_held()  # its connection is closed
    with advisory_lock(pg_url, 0):  # no wait at all: it is free
        pass


def test_an_unreachable_database_is_a_store_error_without_the_password(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"postgresql+psycopg://kb:s3cret-pw@127.0.0.1:{port}/kb"
    with pytest.raises(StoreError) as caught, advisory_lock(url, 1):
        pass
    assert str(caught.value).startswith(OUTAGE.format(where=f"kb:***@127.0.0.1:{port}/kb"))
    assert "s3cret-pw" not in str(caught.value)


#: The one sentence an unreachable PostgreSQL store gets, whichever way the outage shows.
OUTAGE = "cannot connect to the PostgreSQL index store at postgresql+psycopg://{where} ("


def test_a_lock_connection_lost_while_waiting_reads_as_the_same_outage(
        pg_cluster: PgCluster) -> None:
    """An outage can meet the lock's connection before it connects (refused, above) or
    while it waits (the server closed it): the same one sentence either way, never the
    driver's own words ("consuming input failed: ...") instead."""
    url = pg_cluster.new_database()
    database = url.rsplit("/", 1)[1]
    with relay_to(pg_cluster) as relay, advisory_lock(url, 5):  # held: the other one waits
        through = f"postgresql+psycopg://{USER}@127.0.0.1:{relay.port}/{database}"
        with pytest.raises(StoreUnreachable) as caught, advisory_lock(
                through, 30, check=relay.cut):  # the outage comes while it waits
            pass
    where = f"{USER}@127.0.0.1:{relay.port}/{database}"
    assert str(caught.value).startswith(OUTAGE.format(where=where)), caught.value
    assert "check that the server runs" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_which_urls_are_postgresql() -> None:
    assert is_postgresql_url("postgresql+psycopg://u@h/db")
    assert is_postgresql_url("postgresql://u@h/db")
    assert is_postgresql_url("postgres://u@h/db")
    assert not is_postgresql_url("sqlite:////tmp/index.db")


def test_index_runs_on_a_postgresql_store_take_the_advisory_lock(
    pg_url: str, tmp_path: Path
) -> None:
    """``KnowledgeBase.index`` with a PostgreSQL ``database_url``: a writer elsewhere
    holding the database's lock makes it wait, then fail naming that writer; once the
    writer is gone it runs. (The store and vectors are fakes: this is about the lock.)"""
    from kbmcp_adapters.app.bootstrap import bootstrap
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase
    from kbmcp_core.settings import Settings
    from tests.conftest import write_files
    from tests.fakes import FakeEmbedder, FakeIndexStore, FakeVectorStore

    root = tmp_path / "kb"
    write_files(root, {"a.md": "# A\n\nalpha beta gamma\n"})
    settings = Settings(kb_path=root, index_dir=root / ".kb-mcp", database_url=pg_url,
                        writer_lock_timeout_s=0.5)
    store = FakeIndexStore()
    kb = KnowledgeBase(bootstrap(settings, store=store, vectors=FakeVectorStore(),
                                 embedder=FakeEmbedder()))
    proc = hold_in_child(pg_url)
    try:
        with pytest.raises(WriterBusy, match=f"pid {proc.pid} on host"):
            kb.index()
        assert "a.md" not in store.docs
    finally:
        end(proc)
    summary = kb.index()
    assert summary.added == 1 and "a.md" in store.docs
    assert not (root / ".kb-mcp" / "writer.lock").exists()  # no file lock on this store
