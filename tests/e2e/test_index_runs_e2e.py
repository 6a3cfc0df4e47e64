"""rebuild_index progress and background runs through the real ``kb-mcp serve`` (decision
0034), driven by the SDK's client over stdio and streamable HTTP.

A forced rebuild of the 44-file corpus re-embeds everything with the real model, so it has
steps to report; the assertions never depend on how long it takes: the first notification
is sent as the run starts and the last as it ends.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client

from tests.e2e.conftest import DEADLINE, Env, stdio_session, stop, text_of
from tests.e2e.test_mcp_http import start_http

Heard = list[tuple[float, float | None, str | None]]
#: What a per-step progress line would look like in the server's log.
STEP_LINE = re.compile(r"(indexing|embedding) [\d,]+ of [\d,]+ (files|chunks)")


def run(test: Any) -> None:
    async def bounded() -> None:
        with anyio.fail_after(DEADLINE * 2):
            await test()

    anyio.run(bounded)


async def forced_rebuild_with_progress(client: Client) -> tuple[dict[str, Any], Heard]:
    heard: Heard = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    result = await client.call_tool("rebuild_index", {"force": True, "background": False},
                                    progress_callback=on_progress)
    assert not result.is_error, result.content
    return dict(text_of(result)), heard


def assert_progress(summary: dict[str, Any], heard: Heard) -> None:
    assert summary["state"] == "finished" and summary["chunks_embedded"] > 0, summary
    assert len(heard) >= 2, heard
    progress = [p for p, _, _ in heard]
    assert progress == sorted(set(progress)), heard  # strictly increasing
    last, total, message = heard[-1]
    assert total is not None and last == total, heard
    assert message is not None and message.startswith("finished: "), heard


async def status_until(client: Client, run_id: str, state: str) -> dict[str, Any]:
    """index_status once the run is in ``state`` (the test's deadline bounds the wait)."""
    while True:
        status = dict(text_of(await client.call_tool("index_status", {"run_id": run_id})))
        if status["state"] == state:
            return status
        await anyio.to_thread.run_sync(lambda: None)


def test_stdio_progress_background_runs_and_a_quiet_log(
    fresh_kb: Path, tmp_path: Path, server_env: Env
) -> None:
    log = tmp_path / "err.log"

    async def body() -> None:
        async with stdio_session(fresh_kb, log, server_env) as client:
            summary, heard = await forced_rebuild_with_progress(client)
            assert_progress(summary, heard)
            started = dict(text_of(await client.call_tool(
                "rebuild_index", {"force": True, "background": True})))
            assert started["state"] == "running" and started["run_id"] != summary["run_id"]
            done = await status_until(client, started["run_id"], "finished")
            assert done["scanned"] == 44 and done["chunks_embedded"] > 0
            assert done["done"] == done["total"] and done["finished"] >= done["started"]

    run(body)
    text = log.read_text(encoding="utf-8")
    assert not STEP_LINE.search(text), text  # per-step progress is DEBUG only
    assert len(re.findall(r"rebuild_index: run-\d+ started", text)) == 2, text
    assert len(re.findall(r"rebuild_index: run-\d+ finished: scanned 44", text)) == 2, text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_http_progress_reaches_the_client(fresh_kb: Path, server_env: Env, mode: str) -> None:
    server = start_http(fresh_kb, server_env)
    try:
        async def body() -> None:
            async with Client(server.url, mode=mode, read_timeout_seconds=DEADLINE) as client:
                summary, heard = await forced_rebuild_with_progress(client)
                assert_progress(summary, heard)

        run(body)
    finally:
        stop(server.proc)
        server.log.drain()
