"""A server of several collections over MCP (decision 0042), through the SDK's own client
connected in memory to ``build_server``: every search stays inside the collections it
names, a wrong name is ``invalid_argument`` listing the real ones, ``kb://doc/{collection}/``
reads pass the guard chain of that collection only, ``list_collections`` and completion
tell what there is, and every tool's result matches its published output schema.

Real SQLite stores and LanceDB folders with the ANN index forced on (a low threshold), the
hashing embedder.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.shared.exceptions import MCPError

from kbmcp_adapters.app import bootstrap as bootstrap_module
from kbmcp_adapters.app.collections import Collections, open_collections
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.mcp_server.host import Host
from kbmcp_adapters.vectors.lance_store import LanceVectorStore
from kbmcp_core.settings import Settings
from tests.conftest import write_files
from tests.hashing_embedder import HashingEmbedder
from tests.mcp_memory import serve_in_memory, tool_error, tool_payload
from tests.term_overlap_reranker import TermOverlapReranker

NAMES = ("north", "south", "east")
FILL = 160
DOCUMENTS = 9 + FILL
#: the ANN index is built from this many vector rows (the product's threshold is 20,000)
ANN_ROWS = 150
DEFAULTS = ("north", "south")
RESOURCE_NOT_FOUND = -32002
WORDS = ["deploy", "rollback", "garden", "tomato", "invoice", "budget", "kernel", "cache",
         "harbor", "lantern"]
QUERIES = ["deploy rollback", "garden tomato budget", "kernel cache", "harbor lantern plan",
           "invoice", "item 7", "rollback details", "tomato -garden", '"lantern plan"',
           "budget notes mention kernel", "north", "south", "east", "marker"]


def _doc(i: int, name: str) -> str:
    a, b, c = WORDS[i % 10], WORDS[(i * 3 + 1) % 10], WORDS[(i * 7 + 2) % 10]
    return (f"# {a.title()} {i}\n\nThe {a} notes of {name} mention {b} and {c} for item "
            f"{i}; {name}marker.\n\n## {b.title()} details\n\nMore about {b} with {c}.\n")


def _files(name: str, offset: int) -> dict[str, str]:
    files = {f"docs/note-{i:02d}.md": _doc(i + offset, name) for i in range(8)}
    # enough rows for the vector leg's ANN index (forced on below at a low threshold)
    files.update({f"fill/f-{i:03d}.md": _doc(i * 7 + offset, name) for i in range(FILL)})
    # a folder named like another collection: inside this collection, just a folder
    files["south/inside.md"] = f"# Inside {name}\n\nA page of {name} in a folder named south.\n"
    return files


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("collections")
    for i, name in enumerate(NAMES):
        write_files(root / name, _files(name, i * 3))
    (root / "outside.md").write_text("# Outside\n\nthe launch codes\n", encoding="utf-8")
    # links out of north: to south's folder and out of every collection
    os.symlink(root / "south" / "docs" / "note-01.md", root / "north" / "to-south.md")
    os.symlink(root / "outside.md", root / "north" / "to-outside.md")
    (root / "kb-mcp.toml").write_text(
        '[[collections]]\nname = "north"\npath = "north"\ndescription = "The north wing"\n\n'
        '[[collections]]\nname = "south"\npath = "south"\ndescription = "The south wing"\n\n'
        '[[collections]]\nname = "east"\npath = "east"\ndescription = "Archive"\n'
        'default = false\n', encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def collections(root: Path) -> Iterator[Collections]:
    settings = build_settings(root / "kb-mcp.toml", user_config=False, env={})

    def few_rows_ann(s: Settings, dimension: int) -> LanceVectorStore:
        return LanceVectorStore(s.vectors_location, dimension, ann_min_rows=ANN_ROWS)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bootstrap_module, "real_vectors", few_rows_ann)
        opened = open_collections(settings, embedder=HashingEmbedder(dimension=32),
                                  reranker=TermOverlapReranker())
        for name in opened.names:
            assert opened.kb(name).index().added == DOCUMENTS
            vectors = opened.kb(name)._container.vectors
            assert isinstance(vectors, LanceVectorStore) and vectors.ann_state() is not None
    yield opened
    opened.close()


def serve(collections: Collections, body: Callable[[Client], Awaitable[None]]) -> None:
    rs = Host(collections)
    serve_in_memory(rs, body)


def _on_disk(root: Path, name: str) -> set[str]:
    folder = root / name
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*.md") if not p.is_symlink()}


def test_every_search_stays_inside_the_collections_it_names(
        root: Path, collections: Collections) -> None:
    disk = {n: _on_disk(root, n) for n in NAMES}
    scopes: list[tuple[Any, set[str]]] = [
        (None, set(DEFAULTS)), ("north", {"north"}), ("east", {"east"}),
        (["south"], {"south"}), (["north", "east"], {"north", "east"}), (list(NAMES), set(NAMES))]

    async def body(client: Client) -> None:
        seen: dict[str, set[str]] = {n: set() for n in NAMES}
        for query in QUERIES:
            for mode in ("several per document", "one per document"):
                for selector, allowed in scopes:
                    args: dict[str, Any] = {"query": query, "limit": 20}
                    if selector is not None:
                        args["collection"] = selector
                    if mode == "one per document":
                        args["chunks_per_document"] = 1
                    result = await client.call_tool("search", args)
                    assert not result.is_error, result.content
                    for hit in tool_payload(result)["results"]:
                        name = hit["collection"]
                        assert name in allowed, (query, selector, hit)
                        assert hit["path"] in disk[name]
                        assert hit["uri"] == f"kb://doc/{name}/{hit['path']}"
                        # the passage really is in that collection's file
                        text = (root / name / hit["path"]).read_text(encoding="utf-8")
                        assert hit["content"].split("\n")[-1] in text
                        seen[name].add(query)
        # each collection answered something, and its marker only ever found itself
        assert all(seen[n] for n in NAMES)
        for name in NAMES:
            result = await client.call_tool("search", {"query": f"{name}marker",
                                                       "collection": list(NAMES)})
            hits = tool_payload(result)["results"]
            assert hits and {h["collection"] for h in hits} == {name}

    serve(collections, body)


def test_a_wrong_collection_name_is_invalid_argument_naming_the_real_ones(
        collections: Collections) -> None:
    async def body(client: Client) -> None:
        for tool, args in [("search", {"query": "deploy"}), ("get_document", {"path": "x.md"}),
                           ("list_topics", {}), ("rebuild_index", {}), ("index_status", {}),
                           ("get_connection_graph", {"query": "deploy"}),
                           ("get_documents", {"glob": "docs/*"})]:
            for wrong in ("west", ["north", "west"], "North"):
                error = tool_error(await client.call_tool(tool, {**args, "collection": wrong}))
                assert error["code"] == "invalid_argument", (tool, error)
                assert "west" in error["message"] or "North" in error["message"]
                assert all(n in error["message"] for n in NAMES), error

    serve(collections, body)


def test_collection_uris_read_their_own_collection_and_links_name_it(
        collections: Collections) -> None:
    async def body(client: Client) -> None:
        result = await client.call_tool("search", {"query": "southmarker", "collection": "south"})
        links = [b for b in result.content if isinstance(b, types.ResourceLink)]
        assert links and all(str(b.uri).startswith("kb://doc/south/") and "#L" in str(b.uri)
                             for b in links)
        read = await client.read_resource(str(links[0].uri))
        assert "southmarker" in read.contents[0].text  # type: ignore[union-attr]
        # a folder named like another collection: the first segment decides
        own = await client.read_resource("kb://doc/north/south/inside.md")
        assert "A page of north" in own.contents[0].text  # type: ignore[union-attr]
        there = await client.read_resource("kb://doc/south/south/inside.md")
        assert "A page of south" in there.contents[0].text  # type: ignore[union-attr]
        topic = await client.read_resource("kb://topic/east/docs")
        assert "kb://doc/east/docs/note-00.md" in topic.contents[0].text  # type: ignore
        # no collection named and two defaults: refused, naming the form
        with pytest.raises(MCPError) as refused:
            await client.read_resource("kb://doc/docs/note-01.md")
        assert refused.value.error.code == RESOURCE_NOT_FOUND
        assert "kb://doc/{collection}/" in str(refused.value.error.data)

    serve(collections, body)


@pytest.mark.parametrize("uri", [
    "kb://doc/north/../south/docs/note-01.md", "kb://doc/north/%2e%2e/outside.md",
    "kb://doc/north//etc/passwd", "kb://doc/north/%2Fetc%2Fpasswd",
    "kb://doc/north/to-south.md", "kb://doc/north/to-outside.md",
    "kb://doc/north/docs/../../south/docs/note-01.md", "kb://doc/west/docs/note-01.md",
])
def test_a_collection_uri_cannot_reach_outside_its_collection(
        collections: Collections, uri: str) -> None:
    async def body(client: Client) -> None:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri)
        assert refused.value.error.code == RESOURCE_NOT_FOUND
        assert "launch codes" not in str(refused.value.error)

        for path in ("../outside.md", "/etc/passwd", "to-south.md", "to-outside.md"):
            error = tool_error(await client.call_tool("get_document", {"path": path,
                                                                       "collection": "north"}))
            assert error["code"] == "path_refused", (path, error)

    serve(collections, body)


def test_list_collections_resources_and_completion_cover_every_collection(
        collections: Collections) -> None:
    async def body(client: Client) -> None:
        assert "list_collections" in (client.instructions or "")
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "list_collections" in tools
        result = await client.call_tool("list_collections", {})
        assert not result.is_error, result.content
        Draft202012Validator(tools["list_collections"].output_schema).validate(
            result.structured_content)
        listed = {c["name"]: c for c in tool_payload(result)["collections"]}
        assert list(listed) == list(NAMES)
        assert listed["north"]["description"] == "The north wing"
        assert [listed[n]["default"] for n in NAMES] == [True, True, False]
        assert all(listed[n]["documents"] == DOCUMENTS and listed[n]["ready"] for n in NAMES)
        assert all(listed[n]["last_indexed"] for n in NAMES)

        resources = (await client.list_resources()).resources
        assert {str(r.uri).split("/")[3] for r in resources} == set(NAMES)
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["kb://doc/{collection}/{path}"]

        ref = types.ResourceTemplateReference(uri="kb://doc/{collection}/{path}")
        names = (await client.complete(ref, {"name": "collection", "value": "so"})).completion
        assert names.values == ["south"]
        paths = (await client.complete(ref, {"name": "path", "value": "south/"},
                                       {"collection": "east"})).completion
        assert paths.values == ["south/inside.md"]
        # two defaults and no collection chosen: nothing to guess from
        none = (await client.complete(ref, {"name": "path", "value": "docs/"})).completion
        assert none.values == []

    serve(collections, body)


def test_every_tool_result_matches_its_published_output_schema(
        collections: Collections) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
             ("search", {"query": "deploy", "collection": ["north", "east"], "explain": True}),
             ("get_document", {"path": "docs/note-02.md", "collection": "east"}),
             ("get_document", {"path": "south/inside.md"}),  # in both defaults: which?
             ("get_documents", {"glob": "docs/*", "collection": "south", "max_chars": 400}),
             ("list_topics", {}), ("list_topics", {"collection": list(NAMES)}),
             ("get_connection_graph", {"path": "docs/note-01.md", "collection": "north"}),
             ("rebuild_index", {"collection": "east"}), ("rebuild_index", {}),
             ("index_status", {"collection": "east"}), ("index_status", {})]

    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name, args in calls:
            result = await client.call_tool(name, args)
            if name == "get_document" and "collection" not in args:
                error = tool_error(result)  # the path is in north and in south
                assert error["code"] == "invalid_argument" and "north, south" in error["message"]
                continue
            assert not result.is_error, (name, result.content)
            Draft202012Validator(tools[name].output_schema).validate(result.structured_content)
            data = tool_payload(result)
            if name == "list_topics":
                assert {t["collection"] for t in data["topics"]} == (
                    set(args.get("collection", DEFAULTS)))
                assert all(t["uri"].startswith(f"kb://topic/{t['collection']}")
                           for t in data["topics"])
            if name == "rebuild_index" and not args:
                assert [r["collection"] for r in data["runs"]] == list(NAMES)
                assert data["state"] == "finished"
            if name == "get_connection_graph":
                assert all(n["uri"].startswith("kb://doc/north/") for n in data["nodes"])
        # a path held by one default only needs no collection
        result = await client.call_tool("get_document", {"path": "docs/note-03.md"})
        assert tool_error(result)["code"] == "invalid_argument"  # north and south both hold it
        error = tool_error(await client.call_tool("index_status", {"run_id": "run-1"}))
        assert "per collection" in error["message"]

    serve(collections, body)


def test_a_read_only_server_serves_every_collection_and_writes_none(root: Path,
                                                                    collections: Collections
                                                                    ) -> None:
    """``serve --read-only`` of several collections: each runtime is a replica."""
    from dataclasses import replace

    settings = build_settings(root / "kb-mcp.toml", user_config=False, env={})
    replica = open_collections(replace(settings, read_only=True),
                               embedder=HashingEmbedder(dimension=32))
    folders = [replica.settings(n).index_dir for n in NAMES]
    before = {p: p.stat().st_mtime_ns for f in folders for p in f.rglob("*") if p.is_file()}

    async def body(client: Client) -> None:
        for args in ({}, {"collection": "east"}):
            error = tool_error(await client.call_tool("rebuild_index", args))
            assert error["code"] == "index_read_only", error
        result = await client.call_tool("search", {"query": "eastmarker", "collection": "east"})
        assert {h["collection"] for h in tool_payload(result)["results"]} == {"east"}

    try:
        serve_in_memory(Host(replica, read_only=True), body)
    finally:
        replica.close()
    after = {p: p.stat().st_mtime_ns for f in folders for p in f.rglob("*") if p.is_file()}
    assert after == before
