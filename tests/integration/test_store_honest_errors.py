"""Honest errors from the index store, through the MCP surface a client sees.

A filter value no document can hold is ``invalid_argument`` on SQLite and on PostgreSQL
alike. A PostgreSQL server that goes away (a relay on a loopback port, cut by the test)
is a server failure: ``store_error`` for tools and JSON-RPC -32603 for reads, never "not
offered"; the client hears that the store is unreachable and never the database URL,
which the server logs on one line without a traceback.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.mcp_server import KbRuntime
from kbmcp_core.errors import StoreUnreachable
from tests.conftest import write_files
from tests.fakes import FakeEmbedder, FakeIndexStore, FakeVectorStore
from tests.mcp_memory import serve_in_memory, tool_error
from tests.pg_cluster import USER, PgCluster
from tests.pg_relay import Relay, relay_to

DEADLINE = 30.0
RESOURCE_NOT_FOUND = -32002
PASSWORD = "s3cret-pw"
PAGES: dict[str, str | bytes] = {
    "ops/deploy.md": "---\ntitle: Deploying billing\ncategory: guide\ntags: [ops]\n---\n"
                     "# Deployment\n\nWe deploy the billing service with blue-green "
                     "deployments.\n",
    "ops/backup.md": "# Backups\n\nNightly snapshots of the ledger database go to cold "
                     "storage.\n",
}
#: a search argument holding NUL, and the parameter its refusal names
NUL_FILTERS: list[tuple[str, object]] = [
    ("category", "guide\x00"), ("topic", "\x00ops"), ("tags_any", ["ops\x00"]),
    ("tags_all", ["\x00"]), ("path_globs", ["ops/\x00*"]),
]


@pytest.fixture
def relay(pg_cluster: PgCluster) -> Iterator[Relay]:
    with relay_to(pg_cluster) as relayed:
        yield relayed


def _pg_kb(tmp_path: Path, url: str) -> KnowledgeBase:
    write_files(tmp_path / "kb", PAGES)
    settings = build_settings(None, cwd=tmp_path / "kb", kb_path=tmp_path / "kb",
                              database_url=url)
    kb = KnowledgeBase(bootstrap(settings, vectors=FakeVectorStore(), embedder=FakeEmbedder()))
    assert kb.index().added == len(PAGES)
    return kb


def _sqlite_kb(tmp_path: Path) -> KnowledgeBase:
    write_files(tmp_path / "kb", PAGES)
    settings = build_settings(None, cwd=tmp_path / "kb", kb_path=tmp_path / "kb")
    kb = KnowledgeBase(bootstrap(settings, vectors=FakeVectorStore(), embedder=FakeEmbedder()))
    assert kb.index().added == len(PAGES)
    return kb


def _serve(kb: KnowledgeBase, body: Callable[[Client], Awaitable[None]], *,
           read_only: bool = False) -> None:
    """``body`` against the MCP server of ``kb`` in memory, under the deadline."""
    runtime = KbRuntime(kb.settings, open_kb=lambda _s: kb, read_only=read_only)
    try:
        serve_in_memory(runtime, body)
    finally:
        kb.close()


_error = tool_error


# -- a filter no document can hold -------------------------------------------------------
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_nul_in_a_filter_or_the_graph_path_is_invalid_argument_on_both_stores(
        tmp_path: Path, request: pytest.FixtureRequest, backend: str) -> None:
    if backend == "postgresql":
        kb = _pg_kb(tmp_path, request.getfixturevalue("pg_cluster").new_database())
    else:
        kb = _sqlite_kb(tmp_path)

    async def body(client: Client) -> None:
        for name, value in NUL_FILTERS:
            result = await client.call_tool("search", {"query": "billing", name: value})
            error = _error(result)
            assert error["code"] == "invalid_argument", (name, error)
            assert error["message"].startswith(name) and "control characters" in error[
                "message"], error
        graph = _error(await client.call_tool("get_connection_graph",
                                              {"path": "ops/deploy.md\x00"}))
        assert graph["code"] == "invalid_argument", graph
        assert graph["message"].startswith("path must not contain NUL"), graph
        plain = await client.call_tool("search", {"query": "billing", "category": "guide"})
        assert not plain.is_error  # the same filter without NUL still answers
        assert [r["path"] for r in (plain.structured_content or {})["results"]] == [
            "ops/deploy.md"]

    _serve(kb, body)


def test_the_command_line_refuses_a_control_character_in_a_filter_naming_it(
        tmp_path: Path, kb_env: dict[str, str]) -> None:
    from tests.store_faults import kb_mcp, no_traceback

    _sqlite_kb(tmp_path).close()
    for option in (["--category", "guide\x1b"], ["--tag", "ops\x07"], ["--path-glob", "a\tb"]):
        done = kb_mcp(["search", "billing", "--mode", "lexical", "--no-server", "--kb-path",
                       str(tmp_path / "kb"), *option], kb_env)
        no_traceback(done.stderr)
        assert done.returncode == 2, done.stderr  # a usage error (decision 0027)
        assert "must not contain NUL or other control characters" in done.stderr, option


# -- the PostgreSQL server goes away -----------------------------------------------------
def test_an_outage_is_a_store_error_never_not_offered_and_hides_the_url(
        tmp_path: Path, pg_cluster: PgCluster, relay: Relay,
        caplog: pytest.LogCaptureFixture) -> None:
    database = pg_cluster.new_database().rsplit("/", 1)[1]
    url = f"postgresql+psycopg://{USER}:{PASSWORD}@127.0.0.1:{relay.port}/{database}"
    kb = _pg_kb(tmp_path, url)
    caplog.set_level(logging.INFO)  # as `serve` runs: tracebacks are for -v (debug)
    said: list[str] = []

    async def body(client: Client) -> None:
        before = await client.call_tool("get_document", {"path": "ops/deploy.md"})
        assert (before.structured_content or {})["title"] == "Deploying billing"
        assert (await client.read_resource("kb://doc/ops/deploy.md")).contents
        relay.cut()
        caplog.clear()
        for uri in ("kb://doc/ops/deploy.md", "kb://topic/ops"):
            with pytest.raises(MCPError) as failed:
                await client.read_resource(uri)
            assert failed.value.code == types.INTERNAL_ERROR, (uri, failed.value)
            said.append(failed.value.message + json.dumps(failed.value.data))
        for tool, arguments in [("get_document", {"path": "ops/deploy.md"}),
                                ("search", {"query": "billing"}),
                                ("search", {"query": "billing", "category": "guide"}),
                                ("list_topics", {}),
                                ("get_connection_graph", {"path": "ops/deploy.md"})]:
            error = _error(await client.call_tool(tool, arguments))
            assert error["code"] == "store_error", (tool, error)
            assert error["message"] == StoreUnreachable.PUBLIC, (tool, error)
            said.append(error["message"])
        relay.restore()  # the same server answers again once the database is back
        again = await client.call_tool("get_document", {"path": "ops/deploy.md"})
        assert (again.structured_content or {})["title"] == "Deploying billing", again
        assert (await client.read_resource("kb://doc/ops/deploy.md")).contents

    _serve(kb, body, read_only=True)
    for text in said:  # the client learns nothing of where the database is
        for secret in (PASSWORD, USER, str(relay.port), "127.0.0.1", "postgresql", database):
            assert secret not in text, (secret, text)
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(failures) == len(said), [r.getMessage() for r in failures]
    for record in failures:  # the server's log names the server, one line, no traceback
        line = record.getMessage()
        assert f"{USER}:***@127.0.0.1:{relay.port}/{database}" in line, line
        assert PASSWORD not in line and "\n" not in line
        assert not record.exc_info, line
    assert not [r for r in caplog.records if r.exc_info and r.levelno > logging.DEBUG]


def test_a_failing_size_lookup_is_a_server_error_not_a_document_not_offered(
        tmp_path: Path) -> None:
    """OfferRules used to answer "not offered" whenever the store failed under it."""
    write_files(tmp_path / "kb", PAGES)
    settings = build_settings(None, cwd=tmp_path / "kb", kb_path=tmp_path / "kb")
    store = FakeIndexStore()
    kb = KnowledgeBase(bootstrap(settings, store=store, vectors=FakeVectorStore(),
                                 embedder=FakeEmbedder()))
    kb.index()

    def down(*_args: Any) -> Any:
        raise StoreUnreachable("cannot connect to the PostgreSQL index store at "
                               "postgresql://kb:***@db.internal:5432/kb (Connection refused)")

    store.sizes_over = down  # type: ignore[method-assign,assignment]

    async def body(client: Client) -> None:
        with pytest.raises(MCPError) as failed:
            await client.read_resource("kb://doc/ops/deploy.md")
        assert failed.value.code == types.INTERNAL_ERROR
        assert failed.value.code != RESOURCE_NOT_FOUND
        error = _error(await client.call_tool("search", {"query": "billing"}))
        assert error == {"code": "store_error", "message": StoreUnreachable.PUBLIC}

    _serve(kb, body)


def test_a_statement_postgresql_refuses_is_told_to_a_client_without_the_driver_words(
        pg_url: str) -> None:
    from kbmcp_adapters.store.sql_store import SqlIndexStore
    from kbmcp_core.errors import StoreFailed

    with SqlIndexStore(pg_url, create=True) as store, pytest.raises(StoreFailed) as failed:
        store.get_document("a\x00.md")  # past every check of kb-mcp's own, on purpose
    assert failed.value.code == "store_error"
    assert "NUL" in failed.value.message  # for the terminal and the server's log
    assert failed.value.public_message == StoreFailed.PUBLIC


# -- the command line ----------------------------------------------------------------------
def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_database_exits_1_from_every_command(
        tmp_path: Path, kb_env: dict[str, str]) -> None:
    from tests.store_faults import kb_mcp, kb_mcp_here, no_traceback

    write_files(tmp_path / "kb", PAGES)
    port = _closed_port()
    config = tmp_path / "kb-mcp.toml"
    config.write_text(f'kb_path = "{tmp_path / "kb"}"\ndatabase_url = '
                      f'"postgresql://kb:{PASSWORD}@127.0.0.1:{port}/kb"\n')
    for command in (["status"], ["search", "billing", "--no-server"], ["index"], ["doctor"],
                    ["watch"], ["serve"], ["serve", "--read-only"]):
        # the commands that hold a process (signals, stdin) run as one; the others here
        run = kb_mcp if command[0] in ("watch", "serve") else kb_mcp_here
        done = run([*command, "--config", str(config)], kb_env)
        no_traceback(done.stderr)
        assert done.returncode == 1, (command, done.returncode, done.stderr)
        errors = [line for line in done.stderr.splitlines()
                  if not line.startswith(("kb-mcp: INFO:", "kb-mcp: WARNING:"))]
        assert len(errors) == 1 and "cannot connect to the" in errors[0], (command, errors)
        assert f"127.0.0.1:{port}" in errors[0] or f"port {port}" in errors[0], errors
        assert PASSWORD not in done.stderr + done.stdout


def test_live_sync_through_an_outage_logs_one_line_per_failure_and_catches_up(
        tmp_path: Path, pg_cluster: PgCluster, relay: Relay,
        caplog: pytest.LogCaptureFixture) -> None:
    from kbmcp_adapters.live.watcher import Watcher
    from tests.integration.test_watcher import WAIT_S, Live

    database = pg_cluster.new_database().rsplit("/", 1)[1]
    url = f"postgresql+psycopg://{USER}:{PASSWORD}@127.0.0.1:{relay.port}/{database}"
    kb = _pg_kb(tmp_path, url)
    caplog.set_level(logging.INFO)
    lv = Live(tmp_path / "kb", kb)
    lv.watcher = Watcher(kb, debounce_ms=200, on_synced=lv.on_synced)
    lv.w.start()
    try:
        assert lv.w.wait_ready(WAIT_S), lv.w.status()
        relay.cut()
        lv.write("ops/rollback.md", "# Rollback\n\nRoll back with the previous blue stack.\n")
        lv.wait_until(lambda: bool(lv.w.status().get("last_error")), "the failed sync")
        relay.restore()  # the watcher retries on its own and catches up
        lv.wait_until(lambda: "ops/rollback.md" in kb.offered_paths(), "the sync after it")
    finally:
        assert lv.w.stop(timeout=WAIT_S), "the watcher thread did not end"
        kb.close()
    failures = [r for r in caplog.records
                if r.name == "kbmcp_adapters.live.watcher" and r.levelno >= logging.ERROR]
    assert failures, "the failed sync was not logged"
    # the outage may meet the writer lock's connection before it connects or while it
    # waits, or the store's own: whichever, one sentence naming the store (password hidden)
    where = f"cannot connect to the PostgreSQL index store at postgresql+psycopg://{USER}:***@"
    for record in failures:
        line = record.getMessage()
        assert where in line and PASSWORD not in line, line
        assert "\n" not in line and not record.exc_info, line  # the traceback only with -v
