"""`kb-mcp index` on a real terminal (a pseudo-terminal): the bar is labelled with its phase
and counts in every frame, and a warning raised mid-run is printed on a line of its own
above the bar, never into it."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import write_files
from tests.e2e.conftest import DEADLINE
from tests.e2e.test_cli_index import KB_MCP
from tests.slow_service import slow_embedding_config

WARNING = "kb-mcp: WARNING: m-broken.md: "
#: the end of every frame of the bar: elapsed<remaining
BAR_CLOCK = re.compile(r"\d\d:\d\d<(\?|\d\d:\d\d)\s*$")


def read_all(fd: int, sink: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the other end closed
            return
        if not chunk:
            return
        sink.append(chunk)


@pytest.fixture()
def config(tmp_path: Path) -> Iterator[Path]:
    """Vectors from a slow loopback service (tests/slow_service.py): what is on the terminal
    is the bar, whatever computes the vectors, and no model is loaded for it."""
    path = tmp_path / "slow" / "kb-mcp.toml"
    with slow_embedding_config(path):
        yield path


def test_the_bar_is_labelled_and_warnings_print_above_it(
        tmp_path: Path, kb_env: dict[str, str], config: Path) -> None:
    kb = tmp_path / "kb"
    files: dict[str, str | bytes] = {
        f"n{i:03d}.md": f"# Note {i}\n\nSubject {i} " + "lorem ipsum " * 40 + "\n"
        for i in range(40)}
    files["m-broken.md"] = b"# Broken \xff\xfe\n"  # parsed mid-run: a warning while the bar runs
    write_files(kb, files)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # 120 columns
    sink: list[bytes] = []
    reader = threading.Thread(target=read_all, args=(master, sink), daemon=True)
    try:
        proc = subprocess.Popen([*KB_MCP, "index", "--kb-path", str(kb), "--config", str(config)],
                                env={**kb_env, "TERM": "xterm"},
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=slave)
        os.close(slave)
        reader.start()
        out, _ = proc.communicate(timeout=DEADLINE * 2)
        reader.join(timeout=DEADLINE)
    finally:
        os.close(master)
    assert proc.returncode == 0, b"".join(sink)
    assert b"40 added" in out and b"1 failed" in out, out
    screen = b"".join(sink).decode("utf-8", "replace")
    frames = [f for f in re.split(r"[\r\n]", screen) if f.strip()]
    bars = [f for f in frames if BAR_CLOCK.search(f)]
    assert bars, screen
    for frame in bars:  # every frame of the bar says which phase and how far
        assert re.search(r"indexing: text \d+/41 files", frame), frame
    warnings = [f for f in frames if WARNING in f]
    assert warnings, screen
    for line in warnings:  # a line of its own: nothing of the bar before it
        assert line.lstrip("\x1b[A ").startswith(WARNING), repr(line)
