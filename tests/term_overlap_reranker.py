"""A model-free, deterministic ``Reranker`` for tests of the rerank seam (not in the wheel).

It scores a passage by the share of the query's word stems (and CJK pieces) it contains,
ties broken by nothing: it claims no quality, it makes reranking observable. Pass it as
``bootstrap(settings, reranker=TermOverlapReranker())``; no configuration selects it.
"""

from __future__ import annotations

from collections.abc import Sequence

from kbmcp_core.porter import stem
from kbmcp_core.spans import fold, query_terms, word_pieces


class TermOverlapReranker:
    """Score = share of distinct query terms found in the passage, in [0, 1]."""

    model_id = "kb-mcp/term-overlap-test"

    def __init__(self) -> None:
        #: every (query, passages) call, for tests that check what was reranked
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def coverage(self, text: str) -> float:
        return 1.0

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        self.calls.append((query, tuple(passages)))
        terms = query_terms(query)
        wanted = len(terms.stems) + len(terms.substrings)
        if not wanted:
            return [0.0] * len(passages)
        out: list[float] = []
        for text in passages:
            stems = {stem(fold(text[s:e])) for s, e, cjk in word_pieces(text) if not cjk}
            found = len(terms.stems & stems) + sum(1 for sub in terms.substrings if sub in text)
            out.append(found / wanted)
        return out


__all__ = ["TermOverlapReranker"]
