"""``kb-mcp search --explain`` as text, on the route through a running server and in
process alike (``search_fast.render``): a ``why:`` line under each hit whose parts add up
to the score shown, and what the query and the filters applied."""

from __future__ import annotations

from kbmcp_cli.search_fast import parse, render, search_params
from kbmcp_core.search import Searcher
from kbmcp_core.search_request import SearchRequest
from tests.unit.test_query_syntax_search import FILES
from tests.unit.test_search import build


def test_the_fast_route_passes_explain_on() -> None:
    got = parse(["--explain", "deploy -staging"])
    assert got is not None
    assert search_params(got) == {"explain": True}


def test_text_output_shows_why_and_what_was_applied() -> None:
    searcher: Searcher = build(FILES)[0]
    response = searcher.search(SearchRequest("release -staging", explain=True,
                                             path_globs=("ops/**",)))
    text = render(response.as_dict(), "text", color=False)
    lines = text.splitlines()
    why = [line for line in lines if line.strip().startswith("why: ")]
    assert len(why) == len(response.results) > 0
    for line, hit in zip(why, response.results, strict=True):
        assert f"-> {hit.score:.4f}" in line
        assert "lexical #" in line or "vector #" in line
    assert "(query: phrases [], excluded ['staging'])" in lines
    assert any(line.startswith("(filters: path_globs -2 documents, excluded -1 documents, "
                               "searched 1 of 4 documents")
               for line in lines), lines
    plain = render(searcher.search(SearchRequest("release")).as_dict(), "text", color=False)
    assert "why:" not in plain and "(query:" not in plain and "(filters:" not in plain
