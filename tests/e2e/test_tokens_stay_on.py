"""Token auth survives a file that appears in the folder: a found ``kb-mcp.toml`` keeps the
user's ``[server].tokens_file``, and a knowledge base that has had tokens is never served
without one unless ``--no-auth`` says so, on loopback too (decision 0047)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.mcp_server.tokens import add_token
from tests.e2e.conftest import DEADLINE, Env, LineReader, kb_mcp_command, stop, write
from tests.e2e.http_support import READY, Served, environment, serve, start

#: What the server logs when it answers every program on the machine.
OPEN = "NO AUTHENTICATION"


@pytest.fixture()
def kb(tmp_path: Path) -> Path:
    """No index needed: only access control is under test (servers get --no-index)."""
    root = tmp_path / "notes"
    write(root, "a.md", "# A\n\nalpha\n")
    return root


@pytest.fixture()
def servers() -> Iterator[list[Served]]:
    started: list[Served] = []
    yield started
    for running in started:
        stop(running.proc)
        running.log.drain()


def test_a_config_that_appears_in_the_folder_keeps_the_users_tokens_file(
        kb: Path, tmp_path: Path, user_config_home: Path, server_env: Env,
        servers: list[Served]) -> None:
    tokens = tmp_path / "secrets" / "tokens.json"
    tokens.parent.mkdir()
    add_token(tokens, "laptop")
    mine = user_config_home / "kb-mcp" / "config.toml"
    mine.parent.mkdir()
    mine.write_text(f'[server]\ntokens_file = "{tokens}"\n', encoding="utf-8")
    (kb / "kb-mcp.toml").write_text('[parsers]\nenabled = ["md"]\n', encoding="utf-8")

    servers.append(start(kb, environment(server_env), "--no-index", "--no-watch"))
    assert servers[0].request("GET", "/ui/api/topics")[0] == 401
    assert servers[0].request("POST", "/mcp", {})[0] == 401
    assert OPEN not in "".join(servers[0].log.lines)


def test_a_kb_that_has_had_tokens_is_not_served_open_unless_no_auth_says_so(
        kb: Path, server_env: Env, servers: list[Served]) -> None:
    env = environment(server_env)
    made = subprocess.run([*kb_mcp_command(), "token", "create", "ci", "--kb-path", str(kb)],
                          env=env, capture_output=True, text=True, timeout=DEADLINE,
                          check=False)
    assert made.returncode == 0, made.stderr
    # an untrusted found file may move the index folder, and with it the default tokens file
    (kb / "kb-mcp.toml").write_text('index_dir = ".elsewhere"\n', encoding="utf-8")

    proc = serve(kb, env, "--no-index", "--no-watch")
    assert proc.stderr is not None
    log = LineReader(proc.stderr)
    try:
        seen = log.wait_for(rf"refusing to serve|{READY}").group(0)
        assert seen.startswith("refusing to serve"), "".join(log.lines)
        assert proc.wait(timeout=DEADLINE) == 2
    finally:
        stop(proc)
    err = log.drain()
    lines = [line for line in err.splitlines() if line.strip() and "INFO" not in line]
    assert len(lines) == 1 and "has had tokens since" in lines[0], err
    assert "--no-auth" in lines[0] and "Traceback" not in err

    servers.append(start(kb, env, "--no-index", "--no-watch", "--no-auth"))
    servers[0].log.wait_for(r"WARNING: .*has had tokens .*WITHOUT AUTHENTICATION")
    assert servers[0].request("GET", "/ui/api/topics")[0] == 200  # told so in so many words
