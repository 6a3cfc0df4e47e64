"""One writer at a time across processes; a killed holder never blocks the next writer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbmcp_adapters.store.cross_process_lock import writer_lock
from kbmcp_core.errors import WriterBusy
from tests.conftest import write_files

HOLD = """
import sys, time
from pathlib import Path
from kbmcp_adapters.store.cross_process_lock import writer_lock
with writer_lock(Path(sys.argv[1]), 5):
    print("held", flush=True)
    time.sleep(120)
"""


def hold_in_child(index_dir: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(index_dir)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline().strip() == "held"
    finally:
        proc.stdout.close()
    return proc


def test_second_writer_waits_then_fails_naming_the_holder(tmp_path: Path) -> None:
    proc = hold_in_child(tmp_path)
    try:
        started = time.monotonic()
        with pytest.raises(WriterBusy, match=f"pid {proc.pid}"), writer_lock(tmp_path, 0.5):
            pass
        assert time.monotonic() - started >= 0.5
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_a_sigkilled_holder_does_not_block_the_next_writer(tmp_path: Path) -> None:
    proc = hold_in_child(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    with writer_lock(tmp_path, 5):
        assert (tmp_path / "writer.lock").exists()


HOLD_UNTIL_TOLD = """
import sys
from pathlib import Path
from kbmcp_adapters.store.cross_process_lock import writer_lock
with writer_lock(Path(sys.argv[1]), 5):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_waiting_writer_gets_the_lock_when_released(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", HOLD_UNTIL_TOLD, str(tmp_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    polls: list[int] = []

    def waiting() -> None:
        """Called by the writer at each poll while the lock is taken: the first time, the
        holder is told to release it."""
        if not polls:
            assert proc.stdin is not None
            proc.stdin.write("release\n")
            proc.stdin.flush()
        polls.append(proc.pid)

    try:
        assert proc.stdout.readline().strip() == "held"
        with writer_lock(tmp_path, 60, check=waiting):
            holder = json.loads((tmp_path / "writer.lock").read_text(encoding="utf-8"))
        assert polls, "the second writer never had to wait"
        assert holder["pid"] == os.getpid()  # the waiting writer, not the old holder
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait(timeout=30)
        proc.stdin.close()
        proc.stdout.close()


def test_cli_index_refuses_while_another_writer_runs(tmp_path: Path,
                                                     kb_env: dict[str, str]) -> None:
    kb = tmp_path / "kb"
    write_files(kb, {"a.md": "# A\n\nalpha\n", "kb-mcp.toml": "[lock]\ntimeout_seconds = 1\n"})
    proc = hold_in_child(kb / ".kb-mcp")
    try:
        r = subprocess.run([sys.executable, "-m", "kbmcp_cli", "index", "--kb-path", str(kb),
                            "--config", str(kb / "kb-mcp.toml")], env=kb_env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 1
        assert f"pid {proc.pid}" in r.stderr
    finally:
        proc.kill()
        proc.wait(timeout=30)
    r = subprocess.run([sys.executable, "-m", "kbmcp_cli", "index", "--kb-path", str(kb),
                        "--config", str(kb / "kb-mcp.toml")], env=kb_env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "kbmcp_cli", "doctor", "--kb-path", str(kb),
                        "--config", str(kb / "kb-mcp.toml")], env=kb_env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout  # the refused writer left nothing behind


def test_a_sqlite_store_url_keeps_the_file_lock(tmp_path: Path) -> None:
    """Only a PostgreSQL store moves the lock into the database: with the SQLite URL the
    index folder's file lock still excludes the other writer and names it."""
    proc = hold_in_child(tmp_path)
    try:
        with (pytest.raises(WriterBusy, match=f"pid {proc.pid}, writing since"),
              writer_lock(tmp_path, 0.3, store_url=f"sqlite:///{tmp_path / 'index.db'}")):
            pass
    finally:
        proc.kill()
        proc.wait(timeout=30)
