"""One writer at a time across processes; a killed holder never blocks the next writer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbmcp_adapters.app.writer_lock import writer_lock
from kbmcp_core.errors import WriterBusy
from tests.conftest import write_files

HOLD = """
import sys, time
from pathlib import Path
from kbmcp_adapters.app.writer_lock import writer_lock
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


def test_waiting_writer_gets_the_lock_when_released(tmp_path: Path) -> None:
    proc = hold_in_child(tmp_path)
    try:
        proc.send_signal(signal.SIGTERM)  # the holder exits on its own, releasing the lock
        with writer_lock(tmp_path, 30):
            pass
    finally:
        proc.kill()
        proc.wait(timeout=30)


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
