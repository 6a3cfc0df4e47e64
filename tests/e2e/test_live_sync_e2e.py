"""Live sync through the real server: the watcher keeps search and the offer current."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types

from tests.e2e.conftest import DEADLINE, Env, kb_mcp_command, stdio_session, text_of, write
from tests.e2e.test_mcp_stdio import run

MIB = 1024 * 1024


async def eventually(check: Any, what: str, deadline: float = 30.0) -> Any:
    """Poll an async condition until it holds or the deadline passes."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        value = await check()
        if value:
            return value
        await anyio.sleep(0.1)
    raise AssertionError(f"not within {deadline}s: {what}")


def test_the_watcher_keeps_search_and_the_offer_current(
    fresh_kb: Path, tmp_path: Path, server_env: Env
) -> None:
    notices: list[float] = []
    delays: list[float] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            notices.append(time.monotonic())

    def notified_since(count: int) -> Any:
        async def check() -> bool:
            return len(notices) > count
        return check

    async def paths(client: Any, query: str) -> list[str]:
        found = text_of(await client.call_tool("search", {"query": query, "limit": 10}))
        return [h["path"] for h in found["results"]]

    async def body() -> None:
        async with stdio_session(fresh_kb, tmp_path / "err.log", server_env, watch=True,
                                 message_handler=on_message) as client:
            async def watcher_alive() -> bool:
                topics = text_of(await client.call_tool("list_topics", {}))
                return bool(topics["watcher"]["alive"])

            await eventually(watcher_alive, "the watcher reports alive")
            # create: a new topic appears, the client is told, search finds it
            started = time.monotonic()
            write(fresh_kb, "recipes/soup.md", "# Soup\n\nSimmer the leek stock for an hour.\n")

            async def soup_found() -> bool:
                return "recipes/soup.md" in await paths(client, "leek stock simmer")

            await eventually(soup_found, "the new file is searchable")
            delays.append(time.monotonic() - started)
            await eventually(notified_since(0), "list_changed after the file was added")
            uris = {r.uri for r in (await client.list_resources()).resources}
            assert "kb://topic/recipes" in uris
            # edit
            write(fresh_kb, "recipes/soup.md", "# Soup\n\nRoast the pumpkin seeds first.\n")

            async def edit_seen() -> bool:
                return "recipes/soup.md" in await paths(client, "roast pumpkin seeds")

            await eventually(edit_seen, "the edit is searchable")
            # grown past the index cap: row kept, withdrawn from the offer, client told
            seen = len(notices)
            with open(fresh_kb / "guides/keys.md", "r+b") as f:
                f.truncate(60 * MIB)
            await eventually(notified_since(seen), "list_changed after the file outgrew the cap")
            body = (await client.read_resource("kb://topic/guides")).contents[0]
            assert isinstance(body, types.TextResourceContents)
            assert "keys.md" not in body.text
            assert "guides/keys.md" in await paths(client, "rotate signing keys vault")
            # delete
            (fresh_kb / "recipes/soup.md").unlink()

            async def gone() -> bool:
                return "recipes/soup.md" not in await paths(client, "roast pumpkin seeds")

            await eventually(gone, "the deleted file leaves search")
            status = subprocess.run(
                [*kb_mcp_command(), "status", "--kb-path", str(fresh_kb), "--format", "json"],
                env={**os.environ, **server_env}, capture_output=True, text=True,
                timeout=DEADLINE, check=True)
            watcher = json.loads(status.stdout)["watcher"]
            assert watcher["alive"] is True and watcher["pid"] > 0

    run(body)
    assert delays and delays[0] < 30
    status = subprocess.run(
        [*kb_mcp_command(), "status", "--kb-path", str(fresh_kb), "--format", "json"],
        env={**os.environ, **server_env}, capture_output=True, text=True, timeout=DEADLINE,
        check=True)
    assert json.loads(status.stdout)["watcher"]["alive"] is False  # the server has stopped
