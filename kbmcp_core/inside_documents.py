"""A question's sections inside one document, ordered by meaning (issue 42; decision 0056,
third addendum).

Fusion decides which documents answer a question, and it does that well (document-level
MRR@10 0.98 on ``dev-eval/faq``); the section of the right document it puts first is the
wrong one for a quarter of the questions. Looked at one by one, those misses are a
neighbouring section of the same document that holds more of the question's words: the
keyword leg's relevance spreads from 0 to 1 between two sections of one page, while the
model's similarities of its sections differ by a few hundredths, so the words decide. And
the paragraph re-scoring moves a chunk only half way to its nearest paragraph, a guard
against chunks of *other* documents climbing (decision 0028) that has nothing to guard
between the sections of one document.

So for a question-shaped query (``questions.is_question``) that the vector leg answered,
each document keeps the places fusion gave it, and its chunks are dealt into those places
by their meaning: the nearest of the chunk's and its paragraphs' similarities, with the
keyword relevance at ``INSIDE_LEXICAL``. Which documents come where, and every place's
score, stay as fused: document-level metrics cannot move, and the scores stay in order
(decision 0056: one score per hit); a chunk dealt into another place keeps its own fused
score as ``fused_score``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Ranking = list[tuple[int, float]]
#: The keyword relevance's share in ordering one document's sections for a question (the
#: rest is meaning). Measured on every line-level set (decision 0056, third addendum):
#: 0 lets the Debian FAQs' sections lose 0.04 nDCG@10; 0.15 and above gains nothing on
#: ``dev-eval/faq``.
INSIDE_LEXICAL = 0.1


def meaning(vector: Mapping[int, float],
            paragraphs: Mapping[int, Sequence[float | None]]) -> dict[int, float]:
    """Each chunk's nearest similarity to the query: its own, or its best paragraph's when
    higher (``paragraphs``: the candidates the search read paragraph by paragraph)."""
    out = dict(vector)
    for cid, sims in paragraphs.items():
        best = max((s for s in sims if s is not None), default=None)
        if best is not None and best > out.get(cid, 0.0):
            out[cid] = best
    return out


def inside_documents(
    ranked: Sequence[tuple[int, float]],
    paths: Mapping[int, str],
    *,
    lexical: Sequence[tuple[int, float]],
    vector: Sequence[tuple[int, float]],
    paragraphs: Mapping[int, Sequence[float | None]],
) -> Ranking:
    """``ranked`` with each document's chunks (``paths``: each chunk's document) dealt into
    the places the document holds, best first by ``INSIDE_LEXICAL`` × keyword relevance +
    the rest × ``meaning`` (ties keep their order); each place keeps its score. A chunk
    ``paths`` lacks stays put. The searcher and ``kb-mcp tune`` (which reads no
    paragraphs) both order a question's sections with it."""
    lex = {cid: min(max(s, 0.0), 1.0) for cid, s in lexical}
    near = meaning(dict(vector), paragraphs)

    def key(cid: int) -> float:
        return INSIDE_LEXICAL * lex.get(cid, 0.0) + (1 - INSIDE_LEXICAL) * near.get(cid, 0.0)

    places: dict[str, list[int]] = {}
    for i, (cid, _) in enumerate(ranked):
        path = paths.get(cid)
        if path is not None:
            places.setdefault(path, []).append(i)
    out = list(ranked)
    for at in places.values():
        if len(at) < 2:
            continue
        dealt = sorted((ranked[i][0] for i in at), key=lambda cid: -key(cid))
        for i, cid in zip(at, dealt, strict=True):
            out[i] = (cid, ranked[i][1])
    return out
