"""Properties of MCP requests: any JSON value for any tool argument, any resource URI.

The real server (``build_server(KbRuntime(settings))``) is driven in process by the SDK's
``Client``, both in the handshake-era ("legacy", JSON-RPC messages over memory streams) and
the modern per-request mode. Every reply is a result, an ``isError`` result with a stable
code, or a JSON-RPC error with the right code (-32602 invalid params; -32002 for a resource
not found) — never an internal error, never a hang, and never something that cannot be
written to the wire as UTF-8 JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import assume, given, settings
from hypothesis import event as hypothesis_event
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from mcp import Client
from mcp.shared.exceptions import MCPError

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_adapters.mcp_server import KbRuntime, build_server
from kbmcp_core.search_request import MAX_QUERY_CHARS
from tests.property.support import SYNTAX, any_text, budget, hostile_text, open_kb, write_tree
from tests.property.test_path_properties import raw_paths, uris

SECRET = "SECRET-LAUNCH-CODES-4242"
#: Every code an isError result may carry for a client's bad input or a refused read.
STABLE_CODES = frozenset({"invalid_argument", "path_refused", "not_servable", "writer_busy"})
RESOURCE_NOT_FOUND = -32002
#: No reply may take longer than this (the first one loads the model).
REPLY_DEADLINE_S = 60.0


@dataclass
class Served:
    portal: BlockingPortal
    client: Client
    root: Path
    mode: str

    def run(self, method: str, *args: Any) -> Any:
        async def call() -> Any:
            with anyio.fail_after(REPLY_DEADLINE_S):
                return await getattr(self.client, method)(*args)

        return self.portal.call(call)


@pytest.fixture(scope="module", params=["legacy", "auto"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           embedder: FastEmbedEmbedder) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("tools")
    root = base / "kb"
    write_tree(root, {
        "guides/keys.md": "---\ntitle: Keys\ntags: [ops]\ndate: 2026-02-10\n---\n# Keys\n\n"
                          "Rotate the signing keys every 90 days.\n",
        "notes/日本語.md": "# 設定\n\n設定ファイルの更新手順。\n",
        "readme.md": "# About\n\nThe team handbook.\n",
    })  # fmt: skip
    write_tree(base, {"secret.md": f"# Secret\n\n{SECRET}\n"})
    (root / "link.md").symlink_to("../secret.md")
    indexed = open_kb(root, embedder)
    indexed.index()
    indexed.close()

    settings_ = build_settings(None, cwd=root, kb_path=root)
    runtime = KbRuntime(settings_, open_kb=lambda s: KnowledgeBase(bootstrap(s, embedder=embedder)))
    client = Client(build_server(runtime), mode=request.param,
                    read_timeout_seconds=REPLY_DEADLINE_S)
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(client):
        yield Served(portal, client, root, request.param)
    runtime.close()


# -- strategies -------------------------------------------------------------------------------
json_text = st.one_of(
    st.text(max_size=20), any_text(10), st.sampled_from(SYNTAX), st.just(""),
    st.builds(lambda c, n: c * n, st.sampled_from("x 日\x00"), st.integers(500, 5000)),
)  # fmt: skip
json_numbers = st.one_of(
    st.integers(),
    st.sampled_from([0, -1, 1, 2, 5, 10, 11, 50, 51, 2**31, 2**63, -(2**63), 10**30]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1.0, 1.5, -0.0, 0.5, 1e308, 5e-324]),
)
json_scalars = st.one_of(st.none(), st.booleans(), json_numbers, json_text)
#: Object keys: the SDK's client cannot serialize a lone surrogate in a key (values are fine).
json_keys = st.text(max_size=12) | st.sampled_from(SYNTAX)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(json_keys, inner, max_size=3),
    max_leaves=8,
)
dates = st.sampled_from([
    "2026-02-10", "2026-02-30", "2026-13-01", "0000-01-01", "9999-12-31", "2026-1-1",
    "2026-01-01T00:00", "2026-01-01\n", "２０２６-０１-０１", "٢٠٢٦-٠١-٠١", "20260101", "",
])  # fmt: skip
string_lists = st.one_of(
    st.lists(json_text, max_size=4),
    st.lists(st.sampled_from(["guides/**", "!notes/*", "*", "[", "**/*.md", "ops"]),
             max_size=4),
    st.just([]),
    st.builds(lambda n: ["ops"] * n, st.integers(60, 70)),
)


def typed(name: str) -> st.SearchStrategy[Any]:
    """Values of the argument's own type, mostly plausible, some at and past its bounds."""
    if name == "query":
        return hostile_text() | st.sampled_from(["signing keys", "設定", "handbook"]) | st.just(
            "x" * (MAX_QUERY_CHARS + 1))
    if name in ("limit", "chunks_per_document"):
        return st.integers(-2, 60) | json_numbers
    if name in ("path_globs", "tags_any", "tags_all"):
        return string_lists
    if name in ("date_from", "date_to"):
        return dates | st.dates().map(str)
    if name == "path":
        return st.sampled_from(["guides/keys.md", "readme.md", "notes/日本語.md", "link.md",
                                "./readme.md", "guides//keys.md"]) | raw_paths(
            ("/etc/passwd", "../secret.md"))
    if name == "force":
        return st.booleans()
    if name == "run_id":
        return st.sampled_from(["run-1", "run-2", "run-99"]) | json_text
    return json_text | st.sampled_from(["ops", "guides"])


TOOL_ARGS = {
    "search": ("query", "limit", "path_globs", "tags_any", "tags_all", "date_from", "date_to",
               "category", "topic", "chunks_per_document"),
    "get_document": ("path",),
    "list_topics": (),
    "rebuild_index": ("force",),
    "index_status": ("run_id",),
}
REQUIRED = {"search": ("query",), "get_document": ("path",)}


def arguments(tool: str) -> st.SearchStrategy[dict[str, Any]]:
    """Mostly well-typed arguments (so calls get past the checks), sometimes anything at all:
    any JSON value for any argument, unknown arguments, missing required ones."""
    names = TOOL_ARGS[tool]
    required = {n: typed(n) for n in REQUIRED.get(tool, ())}
    optional = {n: typed(n) for n in names if n not in required}
    plausible = st.fixed_dictionaries(required, optional=optional)
    anything = {n: st.one_of(typed(n), json_values) for n in names}
    extra = st.dictionaries(st.sampled_from(["extra", "Query", "query ", "", "__proto__"])
                            | json_keys, json_values, max_size=2)
    wild = st.builds(lambda k, e: {**e, **k}, st.fixed_dictionaries({}, optional=anything),
                     extra)
    return st.one_of(plausible, plausible, wild)


tool_names = st.sampled_from(
    ["search"] * 5 + ["get_document"] * 3 + ["list_topics", "rebuild_index", "index_status",
                                              "Search", "", "search ", "../search"]
)


# -- the oracle -------------------------------------------------------------------------------
def event(label: str) -> None:
    """Tally an outcome (``--hypothesis-show-statistics``) when run by Hypothesis."""
    if currently_in_test_context():
        hypothesis_event(label)


def assert_writable(result: types.Result) -> None:
    """The reply can go over the wire: UTF-8 JSON (a lone surrogate cannot)."""
    json.dumps(result.model_dump(mode="json", by_alias=True), ensure_ascii=False).encode()


def check_tool_call(s: Served, name: str, args: dict[str, Any]) -> None:
    try:
        result = s.run("call_tool", name, args)
    except MCPError as exc:
        event(f"{name[:20]}: JSON-RPC error {exc.code}")
        assert exc.code == types.INVALID_PARAMS, (exc.code, exc.message)
        return
    assert isinstance(result, types.CallToolResult)
    assert_writable(result)
    text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
    assert SECRET not in text
    if result.is_error:
        error = json.loads(text)["error"]
        event(f"{name}: {error['code']}")
        assert error["code"] in STABLE_CODES, error
        return
    event(f"{name}: result")
    assert name in TOOL_ARGS, f"unknown tool {name!r} answered"
    assert isinstance(result.structured_content, dict)
    if name == "search":
        assert isinstance(result.structured_content["results"], list)


@settings(max_examples=budget(300))
@given(data=st.data())
def test_any_tool_arguments_get_a_result_or_a_stable_error(served: Served, data: st.DataObject
                                                            ) -> None:
    name = data.draw(tool_names, label="tool")
    args = data.draw(arguments(name if name in TOOL_ARGS else "search"), label="arguments")
    if name == "rebuild_index" and args.get("force") is True:
        args["force"] = False  # a forced rebuild re-embeds everything: one test below does it
    check_tool_call(served, name, args)


def test_forced_rebuild_and_bad_force_values(served: Served) -> None:
    forces: tuple[object, ...] = (True, "true", 1, None, [], {"force": True})
    for force in forces:
        check_tool_call(served, "rebuild_index", {"force": force})


@settings(max_examples=budget(250))
@given(uri=uris(("/etc", "../secret.md")))
def test_any_resource_uri_gets_contents_or_resource_not_found(served: Served, uri: str) -> None:
    # The modern client puts the URI in a header, which cannot carry a lone surrogate; the
    # handshake-era client sends it in the JSON body, where a \\ud800 escape can.
    assume(served.mode == "legacy" or not any(0xD800 <= ord(c) <= 0xDFFF for c in uri))
    try:
        result = served.run("read_resource", uri)
    except MCPError as exc:
        assert exc.code == RESOURCE_NOT_FOUND or (
            exc.code == types.INVALID_PARAMS and not uri.startswith("kb://")
        ) or (  # a fragment names lines (decision 0033): one that names none is invalid
            exc.code == types.INVALID_PARAMS and uri.startswith("kb://doc/") and "#" in uri
        ), (exc.code, exc.message, exc.data)
        return
    assert isinstance(result, types.ReadResourceResult)
    assert_writable(result)
    for content in result.contents:
        assert isinstance(content, types.TextResourceContents)
        assert SECRET not in content.text
