"""Issue 28's done-when for collections, end to end (decision 0042): three collections served
by one real `kb-mcp serve` process, over stdio and over HTTP. Each collection is indexed by
its own watcher as the server starts; searches scoped to a collection return only its
documents (over many queries); `kb://doc/{collection}/...` reads pass that collection's
guard chain; and a new file written in one collection becomes searchable there within a
deadline and never appears in the others. Every wait has a deadline; the test stops the
servers it starts."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from tests.conftest import write_files
from tests.e2e.conftest import DEADLINE, Env, LineReader, kb_mcp_command, stop, text_of
from tests.e2e.http_support import READY

NAMES = ("alpha", "beta", "gamma")
TOPICS = {
    "alpha": ["signing keys rotation vault", "incident pager escalation", "backup restore"],
    "beta": ["tomato garden staking", "basil compost soil", "orchard pruning apples"],
    "gamma": ["invoice budget ledger", "payroll tax filing", "supplier contract renewal"],
}
QUERIES = ["keys", "garden", "budget", "how do I restore a backup", "pruning", "tax",
           "rotation", "soil", "contract", "vault escalation", "apples ledger", "notes"]
#: the new file's word, written into beta while the server runs
NEW_WORD = "zephyrquokka"


def _corpus(root: Path) -> Path:
    for name in NAMES:
        files = {}
        for i, topic in enumerate(TOPICS[name]):
            files[f"notes/{name}-{i}.md"] = (f"# {topic.title()}\n\nThe {name} notes about "
                                             f"{topic}. Marker {name}word{i}.\n")
        files["readme.md"] = f"# About {name}\n\nThe {name} collection's notes.\n"
        write_files(root / name, files)
    (root / "secret.md").write_text("# Secret\n\nthe launch codes\n", encoding="utf-8")
    config = root / "kb-mcp.toml"
    config.write_text("".join(f'[[collections]]\nname = "{n}"\npath = "{n}"\n'
                              f'description = "The {n} notes"\n\n' for n in NAMES),
                      encoding="utf-8")
    return config


def _paths(root: Path, name: str) -> set[str]:
    folder = root / name
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*.md")}


@asynccontextmanager
async def _stdio(config: Path, env: Env, log: Path,
                 *extra: str) -> AsyncIterator[tuple[Client, None]]:
    command = kb_mcp_command()
    params = StdioServerParameters(
        command=command[0], args=[*command[1:], "serve", "--config", str(config), *extra],
        env={"XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"], **env})
    with log.open("w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog),
                          read_timeout_seconds=DEADLINE) as client:
            yield client, None


@asynccontextmanager
async def _http(config: Path, env: Env, log: Path) -> AsyncIterator[tuple[Client, int]]:
    proc = subprocess.Popen(
        [*kb_mcp_command(), "serve", "--config", str(config), "--transport", "http",
         "--port", "0"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, encoding="utf-8", env={**os.environ, **env})
    assert proc.stderr is not None
    lines = LineReader(proc.stderr)
    try:
        port = int(lines.wait_for(READY).group(1))
        async with Client(f"http://127.0.0.1:{port}/mcp",
                          read_timeout_seconds=DEADLINE) as client:
            yield client, port
    finally:
        stop(proc)
        log.write_text("\n".join(lines.lines), encoding="utf-8")


async def _until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    with anyio.fail_after(DEADLINE, shield=False):
        while not await check():
            await anyio.sleep(0.3)
    assert await check(), what


async def _search(client: Client, query: str, collection: Any = None) -> list[dict[str, Any]]:
    args: dict[str, Any] = {"query": query, "limit": 10}
    if collection is not None:
        args["collection"] = collection
    result = await client.call_tool("search", args)
    assert not result.is_error, result.content
    return list(text_of(result)["results"])


async def _done_when(client: Client, root: Path) -> set[str]:
    expected = {n: len(_paths(root, n)) for n in NAMES}

    async def all_ready() -> bool:
        got = text_of(await client.call_tool("list_collections", {}))["collections"]
        return {c["name"]: (c["ready"], c["documents"]) for c in got} == {
            n: (True, expected[n]) for n in NAMES}

    await _until(all_ready, "every collection indexed by its watcher")
    disk = {n: _paths(root, n) for n in NAMES}
    for query in QUERIES:
        for name in NAMES:
            for hit in await _search(client, query, name):
                assert hit["collection"] == name, (query, name, hit)
                assert hit["path"] in disk[name]
                assert hit["uri"] == f"kb://doc/{name}/{hit['path']}"
        for hit in await _search(client, query, ["alpha", "gamma"]):
            assert hit["collection"] in ("alpha", "gamma") and hit["path"] in disk[
                hit["collection"]]
    for name in NAMES:  # each marker is found in its own collection, whatever is searched
        hits = await _search(client, f"{name}word1")
        assert hits and hits[0]["collection"] == name and hits[0]["path"] == \
            f"notes/{name}-1.md"
        body = await client.read_resource(f"kb://doc/{name}/notes/{name}-1.md")
        assert f"{name}word1" in body.contents[0].text  # type: ignore[union-attr]
    for uri in ("kb://doc/alpha/../beta/notes/beta-0.md", "kb://doc/alpha/%2e%2e/secret.md",
                "kb://doc/alpha//etc/passwd", "kb://doc/notes/alpha-0.md"):
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri)
        assert refused.value.error.code == -32002
        assert "launch codes" not in str(refused.value.error)

    # a new file in beta: searchable there within the deadline, never in the others
    write_files(root / "beta", {"fresh/new.md": f"# Fresh\n\nA {NEW_WORD} appeared.\n"})

    async def found_in_beta() -> bool:
        return any(h["path"] == "fresh/new.md" for h in await _search(client, NEW_WORD,
                                                                         "beta"))

    await _until(found_in_beta, "the new file searchable in beta")
    for hit in await _search(client, NEW_WORD, ["alpha", "gamma"]):
        assert hit["collection"] != "beta" and hit["path"] != "fresh/new.md"
    everywhere = [h for h in await _search(client, NEW_WORD) if h["path"] == "fresh/new.md"]
    assert everywhere
    for name in ("alpha", "gamma"):
        error = await client.call_tool("get_document", {"path": "fresh/new.md",
                                                        "collection": name})
        assert error.is_error
    return {h["collection"] for h in everywhere}


async def _a_replica_serves_every_collection_and_writes_none(client: Client) -> None:
    listed = text_of(await client.call_tool("list_collections", {}))["collections"]
    assert [(c["name"], c["ready"]) for c in listed] == [(n, True) for n in NAMES]
    for name in NAMES:
        hits = await _search(client, f"{name}word2", name)
        assert hits and {h["collection"] for h in hits} == {name}
    for args in ({}, {"collection": "beta"}):
        result = await client.call_tool("rebuild_index", args)
        assert result.is_error and text_of(result)["error"]["code"] == "index_read_only"


def _ui(port: int, path: str, body: Any = None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE)
    try:
        data = None if body is None else json.dumps(body).encode()
        conn.request("GET" if data is None else "POST", path, body=data,
                     headers={"Content-Type": "application/json"} if data else {})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def _the_page_shows_each_collection(port: int) -> None:
    """/ui's API: the picker's list, hits labelled and scoped, health per collection."""
    status, listed = _ui(port, "/ui/api/collections")
    assert status == 200 and [c["name"] for c in listed["collections"]] == list(NAMES)
    for name in NAMES:
        status, found = _ui(port, "/ui/api/search", {"query": "notes", "collection": name,
                                                     "mode": "lexical"})
        assert status == 200 and found["results"]
        assert {h["collection"] for h in found["results"]} == {name}
    status, found = _ui(port, "/ui/api/search", {"query": "notes", "collection": "delta"})
    assert status == 400 and "alpha, beta, gamma" in found["error"]["message"]
    status, health = _ui(port, "/ui/api/health")
    assert status == 200, health
    assert [(c["name"], c["indexed"]) for c in health["collections"]] == [
        (n, True) for n in NAMES]
    assert health["status"]["documents"] == sum(c["documents"] for c in health["collections"])
    status, read = _ui(port, "/ui/api/read", {"uri": "kb://doc/gamma/notes/gamma-0.md"})
    assert status == 200 and "gammaword0" in read["text"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_three_collections_in_one_server(tmp_path: Path, server_env: Env,
                                         transport: str) -> None:
    config = _corpus(tmp_path / "team")
    serve = _stdio if transport == "stdio" else _http

    found_in: list[set[str]] = []

    async def body() -> None:
        with anyio.fail_after(DEADLINE * 3):
            async with serve(config, server_env, tmp_path / "server.log") as (client, port):
                found_in.append(await _done_when(client, config.parent))
                if port is not None:
                    await anyio.to_thread.run_sync(_the_page_shows_each_collection, port)
            if transport == "stdio":  # then a read-only replica of the same collections
                async with _stdio(config, server_env, tmp_path / "replica.log",
                                  "--read-only") as (client, _):
                    await _a_replica_serves_every_collection_and_writes_none(client)

    anyio.run(body)
    # the file written into beta while the server ran was found there, and only there
    assert found_in == [{"beta"}]
