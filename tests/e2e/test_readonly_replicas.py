"""Read-only replicas: two `kb-mcp serve --read-only` on one index answer alike, any
request can go to either (no sessions), and neither writes anything."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Env, stop, write
from tests.e2e.http_support import Served, environment, initialize_params, start

NEW_FILE = "guides/zeppelin.md"


#: SQLite's shared-memory files, which any reader of a WAL database may create.
READER_FILES = {"index.db-wal", "index.db-shm"}


def snapshot(index_dir: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file in the index folder (index.db, the vector store, any
    status file), a reader's WAL files aside."""
    return {str(p.relative_to(index_dir)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in index_dir.rglob("*") if p.is_file() and p.name not in READER_FILES}


@pytest.fixture()
def replicas(fresh_kb: Path, server_env: Env) -> Iterator[tuple[Served, Served]]:
    started: list[Served] = []
    try:
        for _ in range(2):  # no --no-watch: read-only alone must keep the watcher off
            started.append(start(fresh_kb, environment(server_env), "--read-only"))
        yield started[0], started[1]
    finally:
        for running in started:
            stop(running.proc)
            running.log.drain()


def call(replica: Served, ident: int, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    reply = replica.rpc("tools/call", {"name": tool, "arguments": args}, ident=ident)
    assert reply is not None and "result" in reply, reply
    return dict(reply["result"])


def test_two_replicas_answer_any_request_alike_and_write_nothing(
        replicas: tuple[Served, Served], fresh_kb: Path) -> None:
    a, b = replicas
    index_dir = fresh_kb / ".kb-mcp"
    before = snapshot(index_dir)
    write(fresh_kb, NEW_FILE, "# Zeppelin hangar\n\nThe zeppelin hangar opens at dawn.\n")

    # One client's conversation, spread by a load balancer over both replicas.
    hello = a.rpc("initialize", initialize_params(), ident=1)
    assert hello is not None and hello["result"]["serverInfo"]["name"] == "kb-mcp"
    b.rpc("notifications/initialized", ident=None)
    tools = a.rpc("tools/list", ident=2)
    assert tools is not None
    assert {t["name"] for t in tools["result"]["tools"]} >= {"search", "rebuild_index"}
    query = {"query": "signing keys rotation", "limit": 5}
    from_b = call(b, 3, "search", query)
    from_a = call(a, 4, "search", query)
    assert not from_a.get("isError") and from_a["structuredContent"]["results"]
    assert from_a["structuredContent"] == from_b["structuredContent"]
    assert from_a["structuredContent"]["results"][0]["path"] == "guides/keys.md"

    refused = call(b, 5, "rebuild_index", {})
    assert refused["isError"] is True
    message = refused["content"][0]["text"]
    assert "index_read_only" in message and "read-only replica" in message
    assert "kb-mcp watch" in message and str(fresh_kb) not in message

    for replica in (a, b):  # the new file was never indexed by either
        found = call(replica, 6, "search", {"query": "zeppelin hangar dawn"})
        assert NEW_FILE not in [h["path"] for h in found["structuredContent"]["results"]]
        topics = call(replica, 7, "list_topics", {})["structuredContent"]
        assert topics["watcher"] == {"alive": False}
        status, _, body = replica.request("GET", "/healthz")
        assert status == 200 and json.loads(body)["read_only"] is True
    stop(a.proc)
    stop(b.proc)
    assert snapshot(index_dir) == before
    logs = "".join(a.log.lines + b.log.lines)
    assert "watching" not in logs and "Traceback" not in logs
