"""`kb-mcp serve` on a folder that was never indexed builds its index in the background
(decision 0024): tools answer "indexing" (never an error) until keyword search covers the
folder, then find documents; clients hear that the resource list changed.

The real process over stdio (watcher on, its first sync being the start run) and over HTTP
(--no-watch: one start run); the in-process details are in
tests/integration/test_serve_start_run.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from tests.e2e.conftest import (
    DEADLINE,
    Env,
    RawStdio,
    make_corpus,
    stdio_session,
    stop,
    text_of,
)
from tests.e2e.test_mcp_http import start_http

Call = Callable[[str, dict[str, Any]], Awaitable[types.CallToolResult]]


def run(test: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(DEADLINE * 2):
            await test()

    anyio.run(bounded)


async def first_answers_then_hits(call: Call) -> None:
    """What a client sees right after the start: search and list_topics answer without an
    error (a status while indexing, or already hits); then, within the deadline, a search
    by keyword finds the document and list_topics lists its topic."""
    first = await call("search", {"query": "vault rotate signing"})
    assert not first.is_error, first.content
    body = first.structured_content or {}
    assert text_of(first) == body  # the text block says the same (the status included)
    if "indexing" in body:  # not indexed yet: a status an agent can pass on, no hits
        assert body["indexing"]["status"].startswith("indexing")
        assert body["notice"].startswith("indexing") and body["results"] == []
    topics = await call("list_topics", {})
    assert not topics.is_error, topics.content
    end = time.monotonic() + DEADLINE
    while True:
        found = await call("search", {"query": "vault rotate signing"})
        assert not found.is_error, found.content
        paths = [hit["path"] for hit in (found.structured_content or {})["results"]]
        if "guides/keys.md" in paths:
            break
        assert time.monotonic() < end, found.structured_content
        await anyio.sleep(0.2)
    while True:
        listed = (await call("list_topics", {})).structured_content or {}
        if {"guides", "notes"} <= {t["prefix"] for t in listed["topics"]}:
            break
        assert time.monotonic() < end, listed
        await anyio.sleep(0.2)


def test_serve_over_stdio_indexes_a_fresh_folder_and_tells_the_client(
    tmp_path: Path, server_env: Env
) -> None:
    kb = make_corpus(tmp_path)  # never indexed
    log = tmp_path / "err.log"
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            changed.set()

    async def body() -> None:
        async with stdio_session(kb, log, server_env, message_handler=on_message,
                                 watch=True) as client:
            await first_answers_then_hits(client.call_tool)
            await changed.wait()  # the run's end changed the offer: the client heard it
            uris = {r.uri for r in (await client.list_resources()).resources}
            assert {"kb://topic/guides", "kb://topic/notes"} <= uris

    run(body)
    stderr = log.read_text(encoding="utf-8")
    assert "no index yet" in stderr and "building it in the background" in stderr
    assert "Traceback" not in stderr, stderr
    assert "waiting for the index" not in stderr  # one writer: the watcher's first sync
    assert (kb / ".kb-mcp" / "index.db").is_file()


def test_serve_over_http_indexes_a_fresh_folder_without_a_watcher(
    tmp_path: Path, server_env: Env
) -> None:
    kb = make_corpus(tmp_path)
    running = start_http(kb, server_env)  # --no-watch: the start run is a run of its own
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            changed.set()

    async def body() -> None:
        async with Client(running.url, mode="legacy", message_handler=on_message,
                          read_timeout_seconds=DEADLINE) as client:
            await first_answers_then_hits(client.call_tool)
            await changed.wait()

    try:
        run(body)
    finally:
        stop(running.proc)
        running.log.drain()
    assert changed.is_set()  # the client heard that the offer changed
    assert (kb / ".kb-mcp" / "index.db").is_file()  # the server built the index itself


def test_stdin_closed_while_the_start_run_indexes_ends_the_server_cleanly(
    tmp_path: Path, raw_stdio: list[RawStdio], server_env: Env
) -> None:
    kb = make_corpus(tmp_path)
    for i in range(300):  # enough that the run is still going when the client leaves
        (kb / "bulk").mkdir(exist_ok=True)
        (kb / "bulk" / f"n{i:03d}.md").write_text(
            f"# Note {i}\n\nInventory figures for lane {i}, signed off by the warehouse.\n",
            encoding="utf-8")
    server = RawStdio(kb, server_env)
    raw_stdio.append(server)
    server.initialize()
    reply = server.send("tools/call", {"name": "search", "arguments": {"query": "lane"}})
    assert reply is not None and reply["result"]["isError"] is False, reply
    stdout, stderr, code = server.close()
    assert code == 0, stderr
    assert "Traceback" not in stderr and "ResourceWarning" not in stderr, stderr
    for line in stdout.splitlines():  # stdout stayed the protocol's alone
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_a_read_only_server_never_indexes_a_fresh_folder(
    tmp_path: Path, raw_stdio: list[RawStdio], server_env: Env
) -> None:
    kb = make_corpus(tmp_path)
    server = RawStdio(kb, server_env, "--read-only")
    raw_stdio.append(server)
    server.initialize()
    reply = server.send("tools/call", {"name": "search", "arguments": {"query": "vault"}})
    assert reply is not None and reply["result"]["isError"] is True, reply
    error = json.loads(reply["result"]["content"][0]["text"])["error"]
    assert error["code"] == "index_not_found"
    _, stderr, code = server.close()
    assert code == 0, stderr
    assert not (kb / ".kb-mcp").exists()  # a replica writes nothing, not even a first index
