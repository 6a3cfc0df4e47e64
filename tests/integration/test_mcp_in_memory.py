"""The MCP surface in memory: ``build_server(KbRuntime(...))`` driven by the SDK's own client.

The knowledge base is real files in a temporary folder, read by the real file system and
parsers, indexed into the fake store, vector store and embedder of ``tests.fakes``: no
process, no model. What needs the process itself (stdio purity, shutdown, the transports)
stays in ``tests/e2e``.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import pytest
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.shared.exceptions import MCPError

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.mcp_server import KbRuntime, build_server
from kbmcp_core.models import Vector
from kbmcp_core.settings import Settings
from tests.fakes import FakeEmbedder, FakeIndexStore, FakeVectorStore

#: Every wait in these tests ends by then.
DEADLINE = 30.0
MIB = 1024 * 1024
RESOURCE_NOT_FOUND = -32002
TOOLS = {"search", "get_document", "get_documents", "list_topics", "get_connection_graph",
         "rebuild_index", "index_status"}
PROMPTS = {
    "summarize_topic": {"topic": "ops"},
    "deep_dive": {"question": "How are keys rotated?"},
    "whats_new": {"since": "2026-01-01"},
}
SECRET = "the launch codes"
FILES = {
    "guides/keys.md": "---\ntitle: Rotating signing keys\ntags: [ops, security]\n"
                      "date: 2026-02-10\n---\n# Rotating keys\n\nRotate the signing keys every "
                      "90 days with the vault CLI.\n\n## Rollback\n\nKeep the previous key for "
                      "one week so old tokens still verify.\n",
    "guides/backup.md": "---\ntitle: Nightly backups\ntags: [ops]\ndate: 2025-11-02\n---\n"
                        "# Backups\n\nThe database backups are dumped at 02:00 and copied to "
                        "cold storage.\n",
    "notes/garden.md": "# Garden\n\nTomatoes need staking in June; basil likes the south bed.\n",
    "readme.md": "# About\n\nThis is the team handbook.\n",
}  # fmt: skip


class GatedEmbedder(FakeEmbedder):
    """A fake embedder whose ``embed_documents`` can be made to wait until released."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if self.armed:
            self.entered.set()
            assert self.release.wait(DEADLINE), "the test never released the embedder"
        return super().embed_documents(texts)


@dataclass
class Kb:
    root: Path
    settings: Settings
    store: FakeIndexStore
    embedder: GatedEmbedder
    runtime: KbRuntime


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def settings_for(root: Path) -> Settings:
    return build_settings(None, cwd=root, kb_path=root)


@pytest.fixture()
def kb(tmp_path: Path) -> Kb:
    """Four documents in three topic groups, indexed; a secret outside the root, a symlink
    to it and a file written after the index run inside it."""
    root = tmp_path / "kb"
    for rel, text in FILES.items():
        write(root, rel, text)
    write(tmp_path, "secret.md", f"# Secret\n\n{SECRET}\n")
    (root / "notes/escape.md").symlink_to(tmp_path / "secret.md")
    settings = settings_for(root)
    store, vectors, embedder = FakeIndexStore(), FakeVectorStore(), GatedEmbedder()
    knowledge_base = KnowledgeBase(
        bootstrap(settings, store=store, vectors=vectors, embedder=embedder)
    )
    summary = knowledge_base.index()
    assert summary.added == len(FILES) - 0, summary  # the symlink is not indexed
    write(root, "guides/unindexed.md", "# Not yet indexed\n\nwritten after the index run\n")
    runtime = KbRuntime(settings, open_kb=lambda s: knowledge_base)
    return Kb(root, settings, store, embedder, runtime)


@contextlib.asynccontextmanager
async def connected(
    runtime: KbRuntime, mode: str = "legacy", message_handler: Any = None
) -> AsyncIterator[Client]:
    async with Client(build_server(runtime), mode=mode, message_handler=message_handler,
                      read_timeout_seconds=DEADLINE) as client:
        yield client


def run(runtime: KbRuntime, body: Callable[[Client], Awaitable[None]], mode: str = "legacy"
        ) -> None:
    """Run ``body`` against a client connected in memory, under the deadline."""

    async def bounded() -> None:
        with anyio.fail_after(DEADLINE):
            async with connected(runtime, mode) as client:
                await body(client)

    try:
        anyio.run(bounded)
    finally:
        runtime.close()


def structured(result: types.CallToolResult, tool: types.Tool) -> dict[str, Any]:
    """A successful result, checked against the tool's published output schema."""
    assert not result.is_error, result.content
    assert tool.output_schema is not None
    Draft202012Validator(tool.output_schema).validate(result.structured_content)
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    assert json.loads(block.text) == result.structured_content
    return dict(result.structured_content or {})


def error_of(result: types.CallToolResult) -> dict[str, str]:
    assert result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return dict(json.loads(block.text)["error"])


async def tools_of(client: Client) -> dict[str, types.Tool]:
    return {t.name: t for t in (await client.list_tools()).tools}


async def refused_read(client: Client, uri: str) -> MCPError:
    with pytest.raises(MCPError) as refused:
        await client.read_resource(uri)
    return refused.value


# -- listings ----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_listings_describe_the_whole_surface(kb: Kb, mode: str) -> None:
    async def body(client: Client) -> None:
        tools = await tools_of(client)
        assert set(tools) == TOOLS
        for name in ("search", "get_document", "list_topics"):
            hints = tools[name].annotations
            assert hints is not None and hints.read_only_hint and hints.idempotent_hint
            assert hints.open_world_hint is False
        rebuild_hints = tools["rebuild_index"].annotations
        assert rebuild_hints is not None and rebuild_hints.read_only_hint is False
        assert rebuild_hints.destructive_hint is False
        for tool in tools.values():
            Draft202012Validator.check_schema(tool.input_schema)
            assert tool.input_schema["additionalProperties"] is False
            schemas = json.dumps([tool.input_schema, tool.output_schema])
            assert "$ref" not in schemas and "anyOf" not in schemas
        search = tools["search"].input_schema
        limit = search["properties"]["limit"]
        assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 50, 5)
        assert search["required"] == ["query"]
        assert search["properties"]["query"]["maxLength"] == 2000
        assert search["properties"]["date_from"]["format"] == "date"
        assert search["properties"]["tags_any"]["minItems"] == 1

        assert {p.name for p in (await client.list_prompts()).prompts} == set(PROMPTS)
        listed = (await client.list_resources()).resources
        assert [r.uri for r in listed] == ["kb://topic/", "kb://topic/guides",
                                           "kb://topic/notes"]
        guides = next(r for r in listed if r.uri == "kb://topic/guides")
        assert guides.mime_type == "text/markdown"
        assert "2 documents" in (guides.description or "")
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["kb://doc/{path}"]

    run(kb.runtime, body, mode)


def test_the_handshake_declares_that_the_resource_list_changes(kb: Kb) -> None:
    async def body(client: Client) -> None:
        caps = client.server_capabilities
        assert caps.resources is not None and caps.resources.list_changed is True
        assert client.server_info is not None and client.server_info.name == "kb-mcp"

    run(kb.runtime, body)


# -- tools -------------------------------------------------------------------------------------
def test_every_tool_answers_with_its_output_schema(kb: Kb) -> None:
    async def body(client: Client) -> None:
        tools = await tools_of(client)
        found = structured(await client.call_tool(
            "search", {"query": "rotate the signing keys", "limit": 3}), tools["search"])
        assert found["results"][0]["path"] == "guides/keys.md"
        assert found["results"][0]["uri"] == "kb://doc/guides/keys.md"
        assert len(found["results"]) <= 3

        doc = structured(await client.call_tool("get_document", {"path": "guides/keys.md"}),
                         tools["get_document"])
        assert doc["title"] == "Rotating signing keys" and doc["truncated"] is False
        assert doc["tags"] == ["ops", "security"] and doc["date"] == "2026-02-10"
        assert "vault CLI" in doc["content"]

        topics = structured(await client.call_tool("list_topics", {}), tools["list_topics"])
        assert topics["documents"] == 4 and topics["last_indexed"]
        assert topics["watcher"] == {"alive": False}
        guides = next(t for t in topics["topics"] if t["prefix"] == "guides")
        assert guides == {"prefix": "guides", "uri": "kb://topic/guides", "documents": 2,
                          "titles": ["Nightly backups", "Rotating signing keys"]}

        summary = structured(await client.call_tool("rebuild_index", {}),
                             tools["rebuild_index"])
        assert summary["unchanged"] == 4 and summary["added"] == 1  # guides/unindexed.md
        assert summary["chunks_embedded"] > 0

    run(kb.runtime, body)


def test_search_filters_apply_and_are_echoed(kb: Kb) -> None:
    async def body(client: Client) -> None:
        def paths(result: types.CallToolResult) -> set[str]:
            assert not result.is_error, result.content
            return {h["path"] for h in (result.structured_content or {})["results"]}

        tagged = await client.call_tool("search", {
            "query": "keys backups storage", "tags_all": ["ops"], "path_globs": ["guides/*"],
            "date_from": "2026-01-01"})
        assert paths(tagged) == {"guides/keys.md"}
        applied = (tagged.structured_content or {})["filter_applied"]
        assert applied["date_from"] == "2026-01-01" and applied["tags_all"] == ["ops"]
        excluded = await client.call_tool("search", {
            "query": "keys backups storage tomatoes", "path_globs": ["!guides/**"]})
        assert "guides/keys.md" not in paths(excluded)
        assert paths(await client.call_tool("search", {
            "query": "keys backups", "tags_any": ["security"]})) == {"guides/keys.md"}
        assert paths(await client.call_tool("search", {
            "query": "keys backups", "date_to": "2025-12-31"})) == {"guides/backup.md"}

    run(kb.runtime, body)


def test_a_document_past_the_index_cap_is_found_but_not_offered(kb: Kb) -> None:
    # as if it grew past the 50 MiB index cap; one past the 1 MiB read cap stays offered,
    # since a read of it takes ranges (decision 0033)
    kb.store.record_size("guides/keys.md", 51 * MIB)

    async def body(client: Client) -> None:
        found = await client.call_tool("search", {"query": "rotate the signing keys"})
        hit = next(h for h in (found.structured_content or {})["results"]
                   if h["path"] == "guides/keys.md")
        assert "uri" not in hit
        topic = (await client.read_resource("kb://topic/guides")).contents[0]
        assert isinstance(topic, types.TextResourceContents)
        assert "guides/backup.md" in topic.text and "guides/keys.md" not in topic.text
        refused = await refused_read(client, "kb://doc/guides/keys.md")
        assert refused.code == RESOURCE_NOT_FOUND

    run(kb.runtime, body)


BAD_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    ("search", {"query": 42}, "'query' must be a string, got a number"),
    ("search", {"query": "keys", "limit": "ten"}, "'limit' must be an integer, got a string"),
    ("search", {"query": "keys", "limit": 0}, "'limit' must be between 1 and 50, got 0"),
    ("search", {"query": "keys", "limit": 500}, "between 1 and 50, got 500"),
    ("search", {"query": "keys", "limit": 2.5}, "'limit' must be an integer"),
    ("search", {"query": "keys", "limit": 1e300}, "between 1 and 50"),
    ("search", {"query": "keys", "path_globs": []}, "'path_globs' must not be empty"),
    ("search", {"query": "keys", "tags_any": ["ops"] * 65}, "has 65 items; at most 64"),
    ("search", {"query": "keys", "tags_all": ["ops", 7]},
     "item 2 of 'tags_all' must be a string"),
    ("search", {"query": "keys", "tags_any": ["ops", "  "]},
     "item 2 of 'tags_any' must not be empty"),
    ("search", {"query": "q" * 1_000_000}, "1000000 characters long; the limit is 2000"),
    ("search", {"query": "   "}, "'query' must not be empty"),
    ("search", {"query": ""}, "'query' must not be empty"),
    ("search", {"query": "keys", "date_from": "last week"}, "a date as YYYY-MM-DD"),
    ("search", {"query": "keys", "date_to": "2026-02-31"}, "'date_to' is not a real date"),
    ("search", {"query": "keys", "date_to": "2026-01-01\n"}, "not a real date"),
    ("search", {"query": "keys", "date_from": "２０２６-０１-０１"}, "not a real date"),
    ("search", {"query": "keys", "tags_any": "ops"}, "must be an array of strings"),
    ("search", {"query": "keys", "chunks_per_document": 11}, "between 1 and 10"),
    ("search", {"query": "keys", "category": "x" * 600}, "the limit is 512"),
    ("search", {"query": "keys", "colour": "red"}, "unknown argument 'colour'; expected: query"),
    ("search", {"query": "keys", "c" * 500: 1}, "unknown argument"),
    ("search", {}, "missing required argument 'query'"),
    ("search", {"query": None}, "missing required argument 'query'"),
    ("get_document", {"path": ["a.md"]}, "'path' must be a string, got an array"),
    ("get_document", {"path": "a" * 5000}, "the limit is 4096"),
    # an open upper bound reads as one (never "between 1 and None")
    ("get_document", {"path": "guides/keys.md", "start_line": 0},
     "'start_line' must be at least 1, got 0"),
    ("get_document", {"path": "guides/keys.md", "page": -3}, "'page' must be at least 1, got -3"),
    ("list_topics", {"verbose": True}, "unknown argument 'verbose'; expected: no arguments"),
    ("rebuild_index", {"force": "yes"}, "'force' must be true or false, got a string"),
]


def test_bad_arguments_are_tool_errors_that_name_the_argument_and_the_rule(kb: Kb) -> None:
    async def body(client: Client) -> None:
        tools = await tools_of(client)
        for tool, arguments, says in BAD_ARGUMENTS:
            # the schema tools/list publishes refuses it too: one schema, one check
            published = Draft202012Validator(
                tools[tool].input_schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
            assert not published.is_valid(arguments), (tool, arguments)
            error = error_of(await client.call_tool(tool, arguments))
            assert error["code"] == "invalid_argument", (tool, arguments, error)
            assert says in error["message"], (says, error)
            assert len(error["message"]) < 300  # never echoes a huge value back
        found = await client.call_tool("search", {"query": "tomatoes"})
        assert not found.is_error  # the server keeps serving
        assert (found.structured_content or {})["results"][0]["path"] == "notes/garden.md"

    run(kb.runtime, body)


def test_a_null_optional_is_omitted_and_a_whole_float_is_an_integer(kb: Kb) -> None:
    async def body(client: Client) -> None:
        tools = await tools_of(client)
        nulls = {"query": "keys backups tomatoes", "limit": None, "tags_any": None,
                 "date_from": None, "path_globs": None}
        found = structured(await client.call_tool("search", nulls), tools["search"])
        omitted = structured(await client.call_tool(
            "search", {"query": "keys backups tomatoes"}), tools["search"])
        assert found == omitted and len(found["results"]) == 4  # every document, no filter
        two = structured(await client.call_tool(
            "search", {"query": "keys backups tomatoes", "limit": 2.0}), tools["search"])
        assert len(two["results"]) == 2
        assert not (await client.call_tool("rebuild_index", {"force": None})).is_error

    run(kb.runtime, body)


def test_get_document_serves_files_under_the_root_and_refuses_the_rest(kb: Kb) -> None:
    (kb.root / "notes/folder.md").mkdir()

    async def body(client: Client) -> None:
        unindexed = await client.call_tool("get_document", {"path": "guides/unindexed.md"})
        assert (unindexed.structured_content or {})["content"].startswith("# Not yet indexed")
        assert (unindexed.structured_content or {})["title"] == "unindexed"
        for path in ["../secret.md", "notes/escape.md", "/etc/passwd", str(kb.root.parent),
                     "guides\\keys.md", "guides/keys.md\x00", "notes/folder.md",
                     "guides/missing.md", "notes/photo.jpg", "%2e%2e/secret.md"]:
            error = error_of(await client.call_tool("get_document", {"path": path}))
            assert error["code"] == "path_refused", (path, error)
            assert str(kb.root) not in error["message"] and SECRET not in error["message"]

    run(kb.runtime, body)


def test_a_second_rebuild_while_one_runs_answers_that_run(kb: Kb) -> None:
    embedder = kb.embedder

    async def body(client: Client) -> None:
        results: list[types.CallToolResult] = []

        async def first() -> None:
            results.append(await client.call_tool("rebuild_index", {"force": True}))

        embedder.armed = True
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(first)
                assert await anyio.to_thread.run_sync(embedder.entered.wait, DEADLINE)
                busy = await client.call_tool("rebuild_index", {})  # answered at once (0034)
                running = dict(busy.structured_content or {})
                assert running["already_running"] is True and running["state"] == "running"
                assert "running since" in running["note"] and running["run_id"] in running["note"]
                embedder.release.set()
        finally:
            embedder.release.set()
        assert not results[0].is_error
        assert (results[0].structured_content or {})["chunks_embedded"] > 0
        embedder.armed = False
        assert not (await client.call_tool("rebuild_index", {})).is_error  # free again

    run(kb.runtime, body)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_rebuild_that_changes_the_offer_notifies_the_client(kb: Kb, mode: str) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            changed.set()

    async def body() -> None:
        with anyio.fail_after(DEADLINE):
            async with connected(kb.runtime, mode, on_message) as client:
                before = {r.uri for r in (await client.list_resources()).resources}
                write(kb.root, "recipes/soup.md", "# Soup\n\nSimmer the stock for an hour.\n")
                if mode == "legacy":  # handshake era: a spontaneous notification
                    assert not (await client.call_tool("rebuild_index", {})).is_error
                    await changed.wait()
                else:  # 2026 era: only on a subscriptions/listen stream the client opened
                    async with client.listen(resources_list_changed=True) as events:
                        assert not (await client.call_tool("rebuild_index", {})).is_error
                        async for _event in events:
                            break
                after = {r.uri for r in (await client.list_resources()).resources}
                assert after - before == {"kb://topic/recipes"}

    try:
        anyio.run(body)
    finally:
        kb.runtime.close()


# -- resources ---------------------------------------------------------------------------------
def test_resources_read_as_text_and_topic_lists(kb: Kb) -> None:
    async def body(client: Client) -> None:
        topic = (await client.read_resource("kb://topic/guides")).contents[0]
        assert isinstance(topic, types.TextResourceContents)
        assert topic.mime_type == "text/markdown"
        assert "kb://doc/guides/keys.md" in topic.text
        assert "kb://doc/guides/backup.md" in topic.text
        top = (await client.read_resource("kb://topic/")).contents[0]
        assert isinstance(top, types.TextResourceContents) and "kb://doc/readme.md" in top.text
        doc = (await client.read_resource("kb://doc/guides/keys.md")).contents[0]
        assert isinstance(doc, types.TextResourceContents)
        assert doc.mime_type == "text/markdown" and doc.uri == "kb://doc/guides/keys.md"
        assert doc.text.startswith("---\ntitle: Rotating signing keys")

    run(kb.runtime, body)


def test_refused_and_unoffered_reads_are_resource_not_found(kb: Kb) -> None:
    async def body(client: Client) -> None:
        for uri in [
            "kb://doc/%2e%2e%2fsecret.md",
            "kb://doc/%2E%2E/secret.md",
            "kb://doc/../secret.md",
            "kb://doc/notes/escape.md",
            "kb://doc/guides/unindexed.md",
            f"kb://doc/{kb.root.parent}/secret.md",
            "kb://doc/guides%5Ckeys.md",
            "kb://doc/guides/keys.md%00",
            "kb://doc/guides/missing.md",
            "kb://doc/%ff%fe.md",
            "kb://topic/nowhere",
            "kb://elsewhere/readme.md",
            "file:///etc/passwd",
        ]:
            refused = await refused_read(client, uri)
            assert refused.code == RESOURCE_NOT_FOUND, (uri, refused)
            said = refused.message + json.dumps(refused.data)
            assert str(kb.root) not in said.replace(str(kb.root.parent) + "/secret.md", "")
            assert SECRET not in said

    run(kb.runtime, body)


def test_a_broken_store_is_an_internal_error_never_resource_not_found(
    kb: Kb, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire at /srv/private/index.db")

    kb.store.document_paths = broken  # type: ignore[method-assign]
    kb.store.get_document = broken  # type: ignore[method-assign]

    async def body(client: Client) -> None:
        reads: list[Callable[[], Awaitable[Any]]] = [
            client.list_resources,
            partial(client.read_resource, "kb://doc/readme.md"),
            partial(client.read_resource, "kb://topic/guides"),
        ]
        for read in reads:
            with pytest.raises(MCPError) as failed:
                await read()
            assert failed.value.code == types.INTERNAL_ERROR
            assert "/srv/private" not in failed.value.message + json.dumps(failed.value.data)
        error = error_of(await client.call_tool("list_topics", {}))
        assert error["code"] == "internal_error" and "/srv/private" not in error["message"]

    run(kb.runtime, body)
    assert "disk on fire" in caplog.text  # the details went to the server's log


def test_without_an_index_tools_say_how_to_build_one_and_nothing_is_offered(
    tmp_path: Path,
) -> None:
    root = tmp_path / "kb"
    for rel, text in FILES.items():
        write(root, rel, text)
    runtime = KbRuntime(settings_for(root), open_kb=lambda s: KnowledgeBase(
        bootstrap(s, vectors=FakeVectorStore(), embedder=FakeEmbedder())))

    async def body(client: Client) -> None:
        for tool, arguments in [("list_topics", {}), ("search", {"query": "keys"})]:
            error = error_of(await client.call_tool(tool, arguments))
            assert error["code"] == "index_not_found" and "kb-mcp index" in error["message"]
        assert (await client.list_resources()).resources == []
        refused = await refused_read(client, "kb://doc/readme.md")
        assert refused.code == RESOURCE_NOT_FOUND and "no index" in json.dumps(refused.data)
        doc = await client.call_tool("get_document", {"path": "readme.md"})
        assert not doc.is_error and "team handbook" in (doc.structured_content or {})["content"]

    run(runtime, body)
    assert not (root / ".kb-mcp").exists()  # reading never creates an index


# -- prompts -----------------------------------------------------------------------------------
def test_each_prompt_teaches_the_tools_and_citing(kb: Kb) -> None:
    async def body(client: Client) -> None:
        for name, arguments in PROMPTS.items():
            prompt = await client.get_prompt(name, arguments)
            content = prompt.messages[0].content
            assert isinstance(content, types.TextContent)
            assert "search" in content.text and "get_document" in content.text
            assert "Cite the path" in content.text and "say so" in content.text
            assert next(iter(arguments.values())) in content.text
        undated = (await client.get_prompt("whats_new", {})).messages[0].content
        assert isinstance(undated, types.TextContent) and "since" not in undated.text
        for name, arguments in [("summarize_topic", {}), ("whats_new", {"since": "May"}),
                                ("deep_dive", {"question": "q" * 3000}),
                                ("no_such_prompt", {})]:
            with pytest.raises(MCPError) as refused:
                await client.get_prompt(name, arguments)
            assert refused.value.code == types.INVALID_PARAMS, name

    run(kb.runtime, body)
