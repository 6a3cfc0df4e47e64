"""Numeric options out of range are usage errors (exit 2), never a silent clamp."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import DEADLINE, Env, kb_mcp_command, write


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["search", "keys", "--limit", "0"], "--limit"),
        (["search", "keys", "--limit", "-1"], "--limit"),
        (["search", "keys", "-n", "0"], "--limit"),
        (["search", "keys", "--chunks-per-document", "0"], "--chunks-per-document"),
        (["eval", "--limit", "0"], "--limit"),
        (["serve", "--max-sessions", "0"], "--max-sessions"),
        (["serve", "--body-timeout", "0"], "--body-timeout"),
        (["serve", "--session-idle-timeout", "-5"], "--session-idle-timeout"),
    ],
)
def test_an_out_of_range_number_is_a_usage_error(
    args: list[str], option: str, tmp_path: Path, server_env: Env
) -> None:
    kb = tmp_path / "kb"
    write(kb, "a.md", "# A\n\nalpha\n")
    done = subprocess.run(
        [*kb_mcp_command(), *args, "--kb-path", str(kb)],
        env={**os.environ, **server_env}, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=DEADLINE, check=False,
    )
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert f"Invalid value for '{option}'" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
