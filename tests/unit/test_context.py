"""context: a hit returned with its neighbours or its whole section, marked and capped."""

from __future__ import annotations

import pytest

from kbmcp_core.context import MAX_CONTEXT_CHARS, build_context
from kbmcp_core.errors import InvalidQuery
from kbmcp_core.models import StoredChunk
from kbmcp_core.search_request import SearchRequest
from tests.unit.test_search import build


def chunk(cid: int, heading_path: tuple[str, ...], content: str, line: int) -> StoredChunk:
    return StoredChunk(cid, "guide.md", "Guide", heading_path[-1], heading_path, content,
                       line, line + 4, None, (), None, None, None)


WINDOW = [
    chunk(1, ("Guide", "Install"), "install with pip", 1),
    chunk(2, ("Guide", "Deploy"), "deploy overview", 6),
    chunk(3, ("Guide", "Deploy", "Canary"), "canary steps", 11),
    chunk(4, ("Guide", "Deploy", "Rollback"), "rollback steps", 16),
    chunk(5, ("Guide", "Monitor"), "dashboards", 21),
]


def test_adjacent_context_holds_the_neighbours_in_document_order() -> None:
    ctx = build_context(3, WINDOW, "adjacent", 1)
    assert ctx is not None
    assert ctx.text == "deploy overview\n\ncanary steps\n\nrollback steps"
    assert ctx.chunk_ids == (2, 3, 4)
    assert (ctx.start_line, ctx.end_line) == (6, 20)
    assert ctx.as_dict()["expanded"] is True and ctx.as_dict()["kind"] == "adjacent"
    assert ctx.truncated is False


def test_section_context_is_the_hits_heading_with_its_subsections() -> None:
    ctx = build_context(2, WINDOW, "section")
    assert ctx is not None and ctx.chunk_ids == (2, 3, 4)
    # from a subsection, the section is that subsection only
    sub = build_context(4, WINDOW, "section")
    assert sub is not None and sub.chunk_ids == (4,)


def test_context_never_exceeds_the_cap_and_says_it_was_cut() -> None:
    big = [chunk(i, ("Guide",), f"{i} " + "word " * 700, i * 10) for i in range(1, 8)]
    ctx = build_context(4, big, "section")
    assert ctx is not None
    assert len(ctx.text) <= MAX_CONTEXT_CHARS
    assert 4 in ctx.chunk_ids and len(ctx.chunk_ids) < 7
    assert ctx.truncated is True


def test_search_returns_context_only_when_asked() -> None:
    body = "".join(f"# Step {i}\nstep {i} of the rollout plan {'canary' if i == 2 else ''}\n"
                   for i in range(5))
    searcher, _ = build({"plan.md": body.encode()})
    plain = searcher.search(SearchRequest("canary", mode="lexical")).results[0]
    assert plain.context is None and "context" not in plain.as_dict()
    hit = searcher.search(SearchRequest("canary", mode="lexical", context="adjacent",
                                        context_chunks=2)).results[0]
    assert hit.context is not None
    assert [line.split(" of")[0] for line in hit.context.text.split("\n\n")] == [
        "step 0", "step 1", "step 2", "step 3", "step 4"]
    assert hit.content in hit.context.text


@pytest.mark.parametrize("params", [{"context": "paragraph"}, {"context_chunks": 0},
                                    {"context_chunks": 6}])
def test_bad_context_values_are_refused(params: dict[str, object]) -> None:
    searcher, _ = build({"a.md": b"# A\nalpha\n"})
    with pytest.raises(InvalidQuery, match="context"):
        searcher.search(SearchRequest("alpha", **params))  # type: ignore[arg-type]
