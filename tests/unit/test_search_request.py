"""The one search request constructor: defaults from ``[search]``, bounds shared with the
MCP schema and the command line, and the one answer to "does this search need the model"."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click
import pytest

from kbmcp_adapters.mcp_server.schemas import search_input
from kbmcp_adapters.mcp_server.tools import tool_specs
from kbmcp_cli import search_fast
from kbmcp_cli.search_cmd import search as search_command
from kbmcp_core.errors import InvalidQuery
from kbmcp_core.search_request import (
    MAX_CONTEXT_CHUNKS,
    MAX_FILTER_ITEMS,
    MAX_QUERY_CHARS,
    MODES,
    SearchDefaults,
    SearchRequest,
    needs_embedder,
    resolve,
)
from kbmcp_core.settings import Settings
from kbmcp_core.shaping import ShapeOptions


def settings(**values: object) -> Settings:
    return Settings(kb_path=Path("/kb"), index_dir=Path("/kb/.kb-mcp"), **values)  # type: ignore[arg-type]


def test_the_settings_defaults_are_the_request_defaults() -> None:
    assert SearchDefaults.from_settings(settings()) == SearchDefaults()


def test_resolve_fills_every_default_from_the_settings_and_clamps_the_limit() -> None:
    d = SearchDefaults.from_settings(settings(
        search_default_limit=80, search_max_limit=30, search_chunks_per_document=4,
        search_diversity=0.5, search_context="section", search_context_chunks=3,
        search_rerank=True, search_rerank_candidates=9))
    req = resolve(SearchRequest("keys"), d)
    assert (req.limit, req.chunks_per_document, req.mode, req.explain) == (30, 4, "hybrid",
                                                                           False)
    assert req.shape == ShapeOptions(diversity=0.5, context="section", context_chunks=3,
                                     rerank=True, rerank_candidates=9)
    asked = resolve(SearchRequest("keys", limit=0, chunks_per_document=1, diversity=1.0,
                                  context="none", context_chunks=1, rerank=False), d)
    assert (asked.limit, asked.chunks_per_document, asked.shape.diversity, asked.shape.context,
            asked.shape.context_chunks, asked.shape.rerank) == (1, 1, 1.0, "none", 1, False)
    assert resolve(SearchRequest("keys"), d) == req  # the same request resolves the same


def test_a_resolved_request_leaves_nothing_optional() -> None:
    # one value the stages read: no None left for a stage to fill in or cast away
    req = resolve(SearchRequest.of("keys -draft", tags_any=["a"], fields=None), SearchDefaults())
    assert (req.text.strip(), req.parsed.excluded, req.documents.tags_any) == ("keys", ("draft",),
                                                                      ("a",))
    assert dict(req.filters) == {"tags_any": ["a"]} and req.applied is not None
    assert all(getattr(req, name) is not None for name in req.__slots__)


def test_a_request_from_front_arguments_takes_lists_and_leaves_none_out() -> None:
    req = SearchRequest.of("keys", path_globs=["a/**"], tags_any=None, tags_all=["x"],
                           limit=None, mode=None)
    assert req == SearchRequest("keys", path_globs=("a/**",), tags_all=("x",))
    with pytest.raises(TypeError):
        SearchRequest.of("keys", limits=3)
    with pytest.raises(InvalidQuery, match="^mode must be one of hybrid, vector, lexical$"):
        resolve(SearchRequest.of("keys", mode="fuzzy"), SearchDefaults())


def test_only_the_lexical_mode_goes_without_the_embedding_model() -> None:
    assert [needs_embedder(m) for m in (*MODES, None)] == [True, True, False, True]


def test_the_mcp_schema_states_the_bounds_and_defaults_resolve_applies() -> None:
    s = settings(search_default_limit=7, search_max_limit=12, search_rerank_candidates=9)
    props = search_input(s)["properties"]
    assert (props["limit"]["maximum"], props["limit"]["default"]) == (12, 7)
    assert props["query"]["maxLength"] == MAX_QUERY_CHARS
    assert props["tags_any"]["maxItems"] == MAX_FILTER_ITEMS
    assert props["context_chunks"]["maximum"] == MAX_CONTEXT_CHUNKS
    assert "best 9 candidates" in props["rerank"]["description"]
    spec = next(t for t in tool_specs(s) if t.name == "search")
    assert "best 9 candidates" in spec.input_schema["properties"]["rerank"]["description"]
    capped = search_input(replace(s, search_default_limit=99))["properties"]["limit"]
    assert capped["default"] == 12


def test_the_command_line_offers_the_same_modes_and_bounds() -> None:
    params = {p.name: p for p in search_command.params}
    mode = params["mode"].type
    assert isinstance(mode, click.Choice) and tuple(mode.choices) == MODES
    assert search_fast._OPTIONS["--mode"][1] == frozenset(MODES)
    chunks = params["context_chunks"].type
    assert isinstance(chunks, click.IntRange) and chunks.max == MAX_CONTEXT_CHUNKS
    assert "best [search].rerank_candidates (20)" in (params["rerank"].help or "")
