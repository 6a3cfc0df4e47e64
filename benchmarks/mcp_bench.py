"""MCP stdio measurements: `kb-mcp serve` driven by the SDK's client, and raw start-up timing."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from benchmarks.measure import CHILD_ENV, kb_mcp

#: Every wait on the server ends by this many seconds.
DEADLINE = 300.0


def serve_args(kb: Path) -> list[str]:
    return ["serve", "--kb-path", str(kb), "--no-watch", "--quiet"]


@asynccontextmanager
async def session(kb: Path, errlog: Path) -> AsyncIterator[Any]:
    """The SDK client on a fresh `kb-mcp serve` subprocess (handshake protocol, no client
    cache, so every call reaches the server)."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=kb_mcp(), args=serve_args(kb), env=dict(CHILD_ENV))
    with errlog.open("a", encoding="utf-8") as err:
        async with Client(
            stdio_client(params, errlog=err),
            mode="legacy",
            cache=None,
            read_timeout_seconds=DEADLINE,
        ) as client:
            yield client


async def _timed(calls: int, call: Callable[[], Awaitable[Any]]) -> list[float]:
    out = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        out.append(time.perf_counter() - started)
    return out


def _check(result: Any) -> Any:
    if getattr(result, "is_error", False):
        raise RuntimeError(f"tool call failed: {result.content}")
    return result


def search_latencies(kb: Path, queries: list[str], warmup: int, errlog: Path) -> list[float]:
    """Per-call latency of the `search` tool (limit 5) for ``queries[warmup:]``, after the
    first ``warmup`` queries have loaded the index and the model."""
    import anyio

    async def body() -> list[float]:
        async with session(kb, errlog) as client:
            for q in queries[:warmup]:
                _check(await client.call_tool("search", {"query": q, "limit": 5}))
            out = []
            for q in queries[warmup:]:
                started = time.perf_counter()
                _check(await client.call_tool("search", {"query": q, "limit": 5}))
                out.append(time.perf_counter() - started)
            return out

    return anyio.run(body)


def listing_latencies(kb: Path, calls: int, errlog: Path) -> dict[str, Any]:
    """`resources/list` (every page) and the `list_topics` tool, ``calls`` times each after
    one warm-up call of each."""
    import anyio

    async def body() -> dict[str, Any]:
        async with session(kb, errlog) as client:
            pages = {"n": 0, "resources": 0}

            async def list_all() -> None:
                cursor, pages["n"], pages["resources"] = None, 0, 0
                while True:
                    result = await client.list_resources(cursor=cursor)
                    pages["n"] += 1
                    pages["resources"] += len(result.resources)
                    cursor = result.next_cursor
                    if not cursor:
                        return

            async def topics() -> None:
                _check(await client.call_tool("list_topics", {}))

            first_list = await _timed(1, list_all)
            first_topics = await _timed(1, topics)
            listed = await _timed(calls, list_all)
            topic_calls = await _timed(calls, topics)
            return {
                "resources_list_s": listed,
                "list_topics_s": topic_calls,
                "first_resources_list_s": first_list[0],
                "first_list_topics_s": first_topics[0],
                "pages": pages["n"],
                "resources": pages["resources"],
            }

    return anyio.run(body)


def initialize_time(kb: Path) -> float:
    """Seconds from spawning `kb-mcp serve` to the `initialize` result on its stdout.

    The request is written at once (it waits in the pipe), as a client does."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "kb-mcp-bench", "version": "1"},
        },
    }
    env = {**os.environ, **CHILD_ENV}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [kb_mcp(), *serve_args(kb)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    watchdog = threading.Timer(DEADLINE, proc.kill)  # a hung server ends the read below
    watchdog.start()
    try:
        proc.stdin.write((json.dumps(request) + "\n").encode())
        proc.stdin.flush()
        while True:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("kb-mcp serve closed stdout before answering initialize")
            reply = json.loads(line)
            if reply.get("id") == 1:
                elapsed = time.perf_counter() - started
                if "result" not in reply:
                    raise RuntimeError(f"initialize failed: {reply}")
                return elapsed
    finally:
        watchdog.cancel()
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
