"""Links, multi-get, completion and the small parts of the spec, in memory: the SDK's own
client against ``build_server`` over real files indexed into the fakes (no process, no
model). The transports themselves are in tests/e2e/test_mcp_reading_desk_e2e.py."""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import anyio
import mcp_types as types
import pytest
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.shared.exceptions import MCPError

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.mcp_server import KbRuntime, build_server
from kbmcp_adapters.mcp_server.links import hit_link
from kbmcp_core.batch_read import MAX_BATCH_CHARS
from kbmcp_core.uris import doc_range_uri
from tests.fakes import FakeEmbedder, FakeIndexStore, FakeVectorStore
from tests.integration.test_mcp_in_memory import FILES, SECRET, settings_for, write

DEADLINE = 30.0
MIB = 1024 * 1024
#: Past the 50 MiB index cap: never offered, whatever the read caps become.
NOT_OFFERED_SIZE = 60 * MIB
DOC_TEMPLATE = types.ResourceTemplateReference(uri="kb://doc/{path}")
TOPIC_PROMPT = types.PromptReference(name="summarize_topic")


def build(tmp_path: Path, extra: dict[str, str] | None = None) -> tuple[KbRuntime,
                                                                           FakeIndexStore]:
    """The four documents of test_mcp_in_memory (plus ``extra``), indexed; a secret outside
    the root and a file written after the index run inside it."""
    root = tmp_path / "kb"
    for rel, text in {**FILES, **(extra or {})}.items():
        write(root, rel, text)
    write(tmp_path, "secret.md", f"# Secret\n\n{SECRET}\n")
    settings = settings_for(root)
    store = FakeIndexStore()
    kb = KnowledgeBase(bootstrap(settings, store=store, vectors=FakeVectorStore(),
                                 embedder=FakeEmbedder()))
    kb.index()
    write(root, "guides/unindexed.md", "# Not yet indexed\n\nwritten after the index run\n")
    return KbRuntime(settings, open_kb=lambda s: kb), store


def run(runtime: KbRuntime, body: Callable[[Client], Awaitable[None]], mode: str = "legacy"
        ) -> None:
    async def bounded() -> None:
        with anyio.fail_after(DEADLINE):
            async with Client(build_server(runtime), mode=mode,
                              read_timeout_seconds=DEADLINE) as client:
                await body(client)

    try:
        anyio.run(bounded)
    finally:
        runtime.close()


def drawn(icon: types.Icon) -> ElementTree.Element:
    """The SVG a ``data:`` icon carries, parsed (a malformed drawing raises)."""
    head, _, data = icon.src.partition(",")
    assert head == "data:image/svg+xml;base64"
    return ElementTree.fromstring(base64.b64decode(data))


def links_of(result: types.CallToolResult) -> list[types.ResourceLink]:
    return [b for b in result.content if isinstance(b, types.ResourceLink)]


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    return dict(result.structured_content or {})


# -- resource links ----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_each_search_hit_is_also_a_resource_link_to_the_lines_that_answer(
    tmp_path: Path, mode: str
) -> None:
    runtime, _ = build(tmp_path)
    root = tmp_path / "kb"

    async def body(client: Client) -> None:
        result = await client.call_tool("search", {"query": "rotate the signing keys backups"})
        assert not result.is_error
        first = result.content[0]
        assert isinstance(first, types.TextContent)  # the JSON text stays the first block
        assert json.loads(first.text) == result.structured_content
        hits = (result.structured_content or {})["results"]
        links = links_of(result)
        assert len(links) == len(hits) >= 2 and len(result.content) == 1 + len(hits)
        for hit, link in zip(hits, links, strict=True):
            assert hit["uri"] == f"kb://doc/{hit['path']}"  # the structured hit is unchanged
            assert link.name == hit["path"]
            assert link.title and hit["title"] in link.title
            # the link opens the lines that answer (decision 0056), inside the cited ones
            first, last = hit["answer_lines"]
            assert hit["start_line"] <= first <= last <= hit["end_line"]
            assert link.uri == doc_range_uri(hit["path"], first, last)
            assert link.mime_type == "text/markdown"
            read = (await client.read_resource(link.uri)).contents[0]
            assert isinstance(read, types.TextResourceContents)
            lines = (root / hit["path"]).read_text("utf-8").splitlines(keepends=True)
            cited = "".join(lines[hit["start_line"] - 1:hit["end_line"]])
            answer = "".join(lines[first - 1:last])
            assert hit["content"] in cited and answer.strip() in read.text
            # the size of the passage the link names, as the index holds it
            held = (hit["content"] if (first, last) == (hit["start_line"], hit["end_line"])
                    else answer.rstrip("\n"))
            assert link.size == len(held.encode("utf-8"))
            assert "---\ntitle:" not in read.text  # the front matter is not in the range

    run(runtime, body, mode)


def test_a_hit_whose_document_is_not_offered_has_no_link(tmp_path: Path) -> None:
    runtime, store = build(tmp_path)
    store.record_size("guides/keys.md", NOT_OFFERED_SIZE)

    async def body(client: Client) -> None:
        result = await client.call_tool("search", {"query": "rotate the signing keys backups"})
        hits = (result.structured_content or {})["results"]
        assert "guides/keys.md" in {h["path"] for h in hits}
        linked = {link.name for link in links_of(result)}
        assert "guides/keys.md" not in linked
        assert linked == {h["path"] for h in hits if "uri" in h} != set()

    run(runtime, body)


def test_a_page_hit_links_to_the_whole_document_and_an_unoffered_hit_to_nothing() -> None:
    page = hit_link({"path": "scans/report.pdf", "title": "Report", "heading": "Page 3",
                     "page": 3, "uri": "kb://doc/scans/report.pdf", "content": "figures"})
    assert page is not None and page.uri == "kb://doc/scans/report.pdf"
    assert page.mime_type == "text/plain" and page.size is None  # the text's size is unknown
    assert page.title == "Report — Page 3" and "page 3" in (page.description or "")
    assert hit_link({"path": "a.md", "title": "A", "start_line": 1, "end_line": 2,
                     "content": "x"}) is None


# -- get_documents -----------------------------------------------------------------------------
def test_get_documents_reads_several_and_reports_each_bad_path(tmp_path: Path) -> None:
    runtime, _ = build(tmp_path)

    async def body(client: Client) -> None:
        got = await call(client, "get_documents", {"paths": [
            "guides/keys.md", "nope.md", "../secret.md", "guides/unindexed.md",
            "notes/garden.md", "guides/keys.md"]})
        assert [d["path"] for d in got["documents"]] == ["guides/keys.md", "notes/garden.md"]
        keys = got["documents"][0]
        assert keys["title"] == "Rotating signing keys" and "vault CLI" in keys["content"]
        assert keys["truncated"] is False
        errors = {e["path"]: e for e in got["errors"]}
        assert set(errors) == {"nope.md", "../secret.md", "guides/unindexed.md"}
        assert all(e["code"] == "path_refused" for e in errors.values())
        assert "not offered" in errors["guides/unindexed.md"]["message"]
        assert "'..'" in errors["../secret.md"]["message"]
        assert SECRET not in json.dumps(got)
        assert got["left_out"] == []
        assert got["chars"] == sum(len(d["content"]) for d in got["documents"])

    run(runtime, body)


def test_get_documents_stays_within_its_budget_and_says_what_it_left_out(
    tmp_path: Path,
) -> None:
    runtime, _ = build(tmp_path)

    async def body(client: Client) -> None:
        whole = await call(client, "get_documents", {"glob": "guides/*"})
        assert whole["matched"] == 2  # unindexed.md is not offered
        sizes = {d["path"]: len(d["content"]) for d in whole["documents"]}
        budget = sizes["guides/backup.md"] + 10  # the first fits, the second does not
        got = await call(client, "get_documents", {"glob": "guides/*", "max_chars": budget})
        assert [d["path"] for d in got["documents"]] == ["guides/backup.md"]
        assert got["chars"] == sizes["guides/backup.md"] <= got["max_chars"] == budget
        [left] = got["left_out"]
        assert left["path"] == "guides/keys.md"
        assert f"{sizes['guides/keys.md']} characters" in left["reason"]
        # the text sent is whole: nothing is ever cut to fit
        assert got["documents"][0]["content"] == whole["documents"][0]["content"]

        tiny = await call(client, "get_documents", {"paths": ["guides/keys.md"],
                                                    "max_chars": 5})
        assert tiny["documents"] == [] and "larger than the whole budget" in \
            tiny["left_out"][0]["reason"]

    run(runtime, body)


def test_a_document_past_the_read_cap_is_left_out_and_pointed_to_ranged_reads(
    tmp_path: Path,
) -> None:
    runtime, store = build(tmp_path)
    store.record_size("guides/keys.md", 2 * MIB)  # as if it grew past the 1 MiB read cap

    async def body(client: Client) -> None:
        got = await call(client, "get_documents", {"paths": ["guides/keys.md", "readme.md"],
                                                   "max_chars": MAX_BATCH_CHARS})
        assert [d["path"] for d in got["documents"]] == ["readme.md"]
        [left] = got["left_out"]
        assert left["path"] == "guides/keys.md" and "read cap" in left["reason"]
        assert "get_document" in left["reason"] and got["errors"] == []

    run(runtime, body)


def test_get_documents_never_sends_more_than_the_read_cap_in_bytes(tmp_path: Path) -> None:
    wide = "é" * 300_000  # 300,000 characters, 600,000 bytes of UTF-8
    runtime, _ = build(tmp_path, {f"wide/w{i}.md": f"# Wide {i}\n\n{wide}\n"
                                  for i in range(3)})

    async def body(client: Client) -> None:
        got = await call(client, "get_documents", {"glob": "wide/*",
                                                   "max_chars": MAX_BATCH_CHARS})
        sent = sum(len(d["content"].encode("utf-8")) for d in got["documents"])
        assert len(got["documents"]) == 1 and sent <= MIB
        assert [x["path"] for x in got["left_out"]] == ["wide/w1.md", "wide/w2.md"]

    run(runtime, body)


@pytest.mark.parametrize(("args", "message"), [
    ({"paths": ["a.md"], "glob": "*"}, "not both"),
    ({}, "not both and not neither"),
    ({"paths": []}, "'paths' must not be empty"),
    ({"paths": ["a.md"] * 51}, "at most 50"),
    ({"glob": "*", "max_chars": MAX_BATCH_CHARS + 1}, "between 1 and 1048576"),
])
def test_get_documents_refuses_a_malformed_call(tmp_path: Path, args: dict[str, Any],
                                                message: str) -> None:
    runtime, _ = build(tmp_path)

    async def body(client: Client) -> None:
        result = await client.call_tool("get_documents", args)
        assert result.is_error
        error = json.loads(result.content[0].text)["error"]  # type: ignore[union-attr]
        assert error["code"] == "invalid_argument" and message in error["message"]

    run(runtime, body)


def test_the_library_reads_a_batch_too(tmp_path: Path) -> None:
    runtime, _ = build(tmp_path)
    kb = runtime.open_index()
    batch = kb.get_documents(["readme.md", "nope.md"], max_chars=1000)
    assert [d.path for d in batch.documents] == ["readme.md"]
    assert [(e.path, e.code) for e in batch.errors] == [("nope.md", "path_refused")]
    runtime.close()


# -- completion --------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_completion_offers_only_offered_documents_by_prefix(tmp_path: Path, mode: str) -> None:
    runtime, store = build(tmp_path)
    store.record_size("notes/garden.md", NOT_OFFERED_SIZE)

    async def body(client: Client) -> None:
        assert client.server_capabilities.completions is not None
        paths = (await client.complete(DOC_TEMPLATE, {"name": "path", "value": "guides/"}
                                       )).completion
        # guides/unindexed.md is on disk but not indexed: it never completes
        assert paths.values == ["guides/backup.md", "guides/keys.md"]
        assert paths.total == 2 and paths.has_more is False
        everything = (await client.complete(DOC_TEMPLATE, {"name": "path", "value": ""}
                                            )).completion
        assert everything.values == ["guides/backup.md", "guides/keys.md", "readme.md"]
        none = (await client.complete(DOC_TEMPLATE, {"name": "path", "value": "notes/"}
                                      )).completion
        assert none.values == [] and none.total == 0  # garden.md is past every cap

        topics = (await client.complete(TOPIC_PROMPT, {"name": "topic", "value": "GU"}
                                        )).completion
        assert topics.values == ["guides"]
        asked = (await client.complete(types.PromptReference(name="deep_dive"),
                                       {"name": "question", "value": "how"})).completion
        assert asked.values == []
        with pytest.raises(MCPError) as unknown:
            await client.complete(types.PromptReference(name="nope"),
                                  {"name": "topic", "value": ""})
        assert unknown.value.code == types.INVALID_PARAMS

    run(runtime, body, mode)


def test_completion_is_capped_at_a_hundred_values_and_says_there_are_more(
    tmp_path: Path,
) -> None:
    runtime, _ = build(tmp_path, {f"many/m{i:03d}.md": f"# M {i}\n\nnote {i}\n"
                                  for i in range(120)})

    async def body(client: Client) -> None:
        found = (await client.complete(DOC_TEMPLATE, {"name": "path", "value": "many/m"}
                                       )).completion
        assert len(found.values) == 100 and found.values[0] == "many/m000.md"
        assert found.total == 120 and found.has_more is True

    run(runtime, body)


# -- the small parts of the spec ---------------------------------------------------------------
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_handshake_and_every_listing_carry_titles_icons_and_instructions(
    tmp_path: Path, mode: str
) -> None:
    runtime, _ = build(tmp_path)

    async def body(client: Client) -> None:
        info = client.server_info
        assert info is not None and info.title and info.description
        assert info.icons and info.icons[0].src.startswith("data:image/svg+xml;base64,")
        assert info.icons[0].mime_type == "image/svg+xml"
        instructions = client.instructions or ""
        assert "get_documents" in instructions and "resource_link" in instructions
        for tool in (await client.list_tools()).tools:
            assert tool.title, tool.name
            assert tool.icons and tool.icons[0].src.startswith("data:image/svg+xml"), tool.name
            assert drawn(tool.icons[0]).tag == "{http://www.w3.org/2000/svg}svg"
        for prompt in (await client.list_prompts()).prompts:
            assert prompt.title, prompt.name
        for resource in (await client.list_resources()).resources:
            assert resource.title, resource.uri
        for template in (await client.list_resource_templates()).resource_templates:
            assert template.title, template.uri_template

    run(runtime, body, mode)


#: One real call per tool; a tool added later without an entry is called with no arguments.
SAMPLE_CALLS: dict[str, dict[str, Any]] = {
    "search": {"query": "rotate the signing keys", "context": "section"},
    "get_document": {"path": "guides/keys.md"},
    "get_documents": {"glob": "*", "max_chars": 300},
    "get_connection_graph": {"path": "guides/keys.md"},
}


def test_every_tool_result_matches_its_published_output_schema(tmp_path: Path) -> None:
    runtime, _ = build(tmp_path)

    async def body(client: Client) -> None:
        tools = (await client.list_tools()).tools
        assert {"search", "get_documents"} <= {t.name for t in tools}
        for tool in tools:
            assert tool.output_schema is not None, tool.name
            Draft202012Validator.check_schema(tool.output_schema)
            result = await client.call_tool(tool.name, SAMPLE_CALLS.get(tool.name, {}))
            assert not result.is_error, (tool.name, result.content)
            Draft202012Validator(tool.output_schema).validate(result.structured_content)

    run(runtime, body)


@pytest.mark.parametrize("index_on_start", [True, False])
def test_without_an_index_get_documents_says_indexing_or_how_to_build_one(
    tmp_path: Path, index_on_start: bool
) -> None:
    root = tmp_path / "kb"
    write(root, "readme.md", "# About\n\nThis is the team handbook.\n")
    runtime = KbRuntime(settings_for(root), index_on_start=index_on_start,
                        open_kb=lambda s: KnowledgeBase(bootstrap(
                            s, vectors=FakeVectorStore(), embedder=FakeEmbedder())))

    async def body(client: Client) -> None:
        result = await client.call_tool("get_documents", {"paths": ["readme.md"]})
        if index_on_start:  # serve's start run is due: not an error, and says so
            got = result.structured_content or {}
            assert not result.is_error and got["documents"] == []
            assert got["indexing"]["status"] and "try again" in got["notice"]
            [tool] = [t for t in (await client.list_tools()).tools if t.name == "get_documents"]
            Draft202012Validator(tool.output_schema or {}).validate(got)
        else:
            assert result.is_error
            error = json.loads(result.content[0].text)["error"]  # type: ignore[union-attr]
            assert error["code"] == "index_not_found" and "kb-mcp index" in error["message"]
        completed = (await client.complete(DOC_TEMPLATE, {"name": "path", "value": ""}
                                           )).completion
        assert completed.values == [] and completed.total == 0

    run(runtime, body)
    assert not (root / ".kb-mcp").exists()  # neither call created an index
