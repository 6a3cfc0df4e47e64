"""The README's path, walked: `kb-mcp init` on a folder (a real process), the printed
`claude mcp add ... -- COMMAND` line pasted as it is, and a search through the server that
command starts, driven by the MCP SDK's own stdio client."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.e2e.conftest import DEADLINE, Env, kb_mcp_command, write


def test_init_then_the_printed_client_line_serves_a_search(tmp_path: Path,
                                                           server_env: Env) -> None:
    kb = tmp_path / "my notes"  # a space, as in many real folder names
    write(kb, "ops/keys.md", "# Rotating keys\n\nRotate the signing keys every 90 days with "
          "the vault CLI.\n")
    write(kb, "garden.md", "# Garden\n\nTomatoes need staking in June.\n")
    elsewhere = tmp_path / "elsewhere"  # clients start servers from a folder of their own
    elsewhere.mkdir()
    env = {**os.environ, **server_env}
    done = subprocess.run([*kb_mcp_command(), "init", "--kb-path", "my notes"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=DEADLINE,
                          stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr
    assert (kb / "kb-mcp.toml").is_file()
    pasted = [line.strip() for line in done.stdout.splitlines()
              if line.strip().startswith("claude mcp add ")]
    assert len(pasted) == 1, done.stdout
    args = shlex.split(pasted[0])
    assert args[:5] == ["claude", "mcp", "add", "kb", "--"]
    command = args[5:]
    assert os.path.isabs(command[0]) and command[-2:] == ["--kb-path", str(kb)]
    block = json.loads(done.stdout[done.stdout.index('{\n  "mcpServers"'):])
    assert [block["mcpServers"]["kb"]["command"], *block["mcpServers"]["kb"]["args"]] == command

    async def search() -> types.CallToolResult:
        params = StdioServerParameters(
            command=command[0], args=command[1:], cwd=str(elsewhere),
            env={"XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"], **server_env})
        with (tmp_path / "serve.log").open("w", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog),
                              read_timeout_seconds=DEADLINE) as client:
                return await client.call_tool("search", {"query": "rotate the signing keys"})

    async def bounded() -> types.CallToolResult:
        with anyio.fail_after(DEADLINE * 2):
            return await search()

    result = anyio.run(bounded)
    assert not result.is_error, result.content
    hits = result.structured_content["results"]
    assert hits and hits[0]["path"] == "ops/keys.md"
