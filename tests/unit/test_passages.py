"""Paragraph re-scoring of the best candidates (``kbmcp_core/passages.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from kbmcp_adapters.app.config import build_settings
from kbmcp_core.errors import ConfigError
from kbmcp_core.models import StoredChunk, Vector
from kbmcp_core.passages import (
    AUTO_CANDIDATES,
    PASSAGE_CANDIDATES,
    candidates_for,
    paragraph_groups,
    paragraphs_of,
    passage_similarities,
)


class KeywordEmbedder:
    """A vector per text: (mentions "reset", anything else)."""

    @staticmethod
    def rule(text: str) -> Vector:
        return [1.0, 0.0] if "reset" in text else [0.0, 1.0]

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.seen = list(texts)
        return [self.rule(t) for t in texts]


def _chunk(cid: int, content: str) -> StoredChunk:
    return StoredChunk(id=cid, document_path="a.md", title="A", heading="H",
                       heading_path=("A", "H"), content=content, start_line=1,
                       end_line=9, page=None, tags=(), date=None, topic=None,
                       category=None)


def test_paragraphs_are_cut_at_blank_lines() -> None:
    long_a, long_b = "a" * 90, "b" * 90
    assert paragraphs_of(f"{long_a}\n\n{long_b}") == [long_a, long_b]
    assert paragraphs_of(f"For example:\n  \n{long_b}\n\n\n") == ["For example:", long_b]
    # code is left to the lexical leg, as for the chunk's own vector
    assert paragraphs_of(f"{long_a}\n\n```\nrm -rf x\n```\n\n{long_b}") == [long_a, long_b]


def test_a_candidate_moves_half_way_to_its_nearest_paragraphs_similarity() -> None:
    mixed = _chunk(1, f"{'x' * 90}\n\nTo reset it, use the link. {'y' * 80}")
    single = _chunk(2, "One paragraph about reset links only, long enough to stand alone.")
    embedder = KeywordEmbedder()
    legs = passage_similarities([1.0, 0.0], [(2, 0.5), (1, 0.4)], [(2, 0.6), (1, 0.3)],
                                {1: mixed, 2: single}, embedder,  # type: ignore[arg-type]
                                candidates=10)
    assert legs == [(1, pytest.approx(0.65)), (2, 0.6)]
    # a chunk of one paragraph keeps its own vector's similarity and is not embedded again
    assert all("One paragraph" not in t for t in embedder.seen)
    # the heading trail goes with every paragraph, as with the chunk
    assert all(t.startswith("A > H\n") for t in embedder.seen)


def test_only_the_first_candidates_are_rescored() -> None:
    mixed = _chunk(1, f"{'x' * 90}\n\nTo reset it, use the link. {'y' * 80}")
    legs = passage_similarities([1.0, 0.0], [(2, 0.5), (1, 0.4)], [(2, 0.6), (1, 0.2)],
                                {1: mixed}, KeywordEmbedder(), candidates=1)  # type: ignore[arg-type]
    assert legs == [(2, 0.6), (1, 0.2)]


def test_passage_candidates_is_read_and_checked(tmp_path: Path) -> None:
    assert build_settings(None, cwd=tmp_path, kb_path=tmp_path
                          ).search_passage_candidates == PASSAGE_CANDIDATES
    for value, ok in ((0, True), (50, True), (-1, False), (51, False)):
        cfg = tmp_path / "kb.toml"
        cfg.write_text(f"kb_path = '.'\n[search]\npassage_candidates = {value}\n")
        if ok:
            assert build_settings(cfg, cwd=tmp_path).search_passage_candidates == value
        else:
            with pytest.raises(ConfigError, match="passage_candidates"):
                build_settings(cfg, cwd=tmp_path)


def test_an_embedding_service_failing_mid_search_leaves_the_chunks_scores(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import kbmcp_core.search_legs
    from kbmcp_core.errors import EmbeddingUnreachable
    from kbmcp_core.search_request import SearchRequest
    from tests.unit.test_search import build, doc

    searcher, _ = build({f"d{i}.md": doc(i) for i in range(4)})
    searcher.passages = 0
    without = searcher.search(SearchRequest("apple banana"))
    calls: list[int] = []

    def down(*args: object, **kwargs: object) -> list[tuple[int, float]]:
        calls.append(1)
        raise EmbeddingUnreachable("connection refused")

    monkeypatch.setattr(kbmcp_core.search_legs, "passage_similarities", down)
    searcher.passages = 10
    failed = searcher.search(SearchRequest("apple banana"))
    assert calls and without.results  # the paragraphs were asked for, and failed
    assert [(h.chunk_id, h.score) for h in failed.results] == [
        (h.chunk_id, h.score) for h in without.results]


class SpanReader(KeywordEmbedder):
    """Reads each group's last range in context: the same rule as ``KeywordEmbedder``,
    applied to the characters named (so the ranges must be the paragraph's own)."""

    def __init__(self) -> None:
        self.runs: list[str] = []

    def embed_spans(self, items: Sequence[tuple[str, Sequence[Sequence[tuple[int, int]]]]],
                    ) -> list[list[Vector | None]]:
        out: list[list[Vector | None]] = []
        for text, groups in items:
            self.runs.append(text)
            out.append([self.rule(text[g[-1][0]:g[-1][1]]) for g in groups])
        return out


def test_paragraph_groups_name_each_paragraph_and_the_heading_trail() -> None:
    content = "First part of it.\n\n```\ncode\n```\n\nSecond part, after code."
    text, groups = paragraph_groups(("A", "H"), content)
    assert text == "A > H\nFirst part of it.\n\nSecond part, after code."
    assert [[text[a:b] for a, b in g] for g in groups] == [
        ["A > H", "First part of it."], ["A > H", "Second part, after code."]]
    text, groups = paragraph_groups((), "One.\n\nTwo.")
    assert [[text[a:b] for a, b in g] for g in groups] == [["One."], ["Two."]]


def test_an_embedder_that_reads_in_context_runs_once_per_chunk_and_embeds_nothing() -> None:
    mixed = _chunk(1, f"{'x' * 90}\n\nTo reset it, use the link. {'y' * 80}")
    reader = SpanReader()
    legs = passage_similarities([1.0, 0.0], [(2, 0.5), (1, 0.4)], [(2, 0.6), (1, 0.3)],
                                {1: mixed}, reader, candidates=10)  # type: ignore[arg-type]
    assert legs == [(1, pytest.approx(0.65)), (2, 0.6)]
    assert reader.runs == [f"A > H\n{mixed.content}"]  # one run, over what the chunk embeds
    assert not hasattr(reader, "seen")  # no paragraph embedded on its own


def test_by_default_the_step_runs_only_for_an_embedder_that_reads_in_context() -> None:
    assert PASSAGE_CANDIDATES is None
    assert candidates_for(None, SpanReader()) == AUTO_CANDIDATES  # type: ignore[arg-type]
    assert candidates_for(None, KeywordEmbedder()) == 0  # type: ignore[arg-type]
    assert candidates_for(0, SpanReader()) == 0  # type: ignore[arg-type]
    assert candidates_for(3, KeywordEmbedder()) == 3  # type: ignore[arg-type]
    # asked for by default but unreadable in context: nothing is embedded one by one
    mixed = _chunk(1, f"{'x' * 90}\n\nTo reset it, use the link. {'y' * 80}")
    embedder = KeywordEmbedder()
    legs = passage_similarities([1.0, 0.0], [(1, 0.4)], [(1, 0.3)], {1: mixed},
                                embedder, candidates=10, separately=False)  # type: ignore[arg-type]
    assert legs == [(1, 0.3)] and not hasattr(embedder, "seen")
