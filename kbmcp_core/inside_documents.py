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

from kbmcp_core.models import StoredChunk
from kbmcp_core.ports import Reranker
from kbmcp_core.rerank import RerankOutcome, blended, read_by, trust

Ranking = list[tuple[int, float]]
#: The keyword relevance's share in ordering one document's sections for a question (the
#: rest is meaning). Measured on every line-level set (decision 0056, third addendum):
#: 0 lets the Debian FAQs' sections lose 0.04 nDCG@10; 0.15 and above gains nothing on
#: ``dev-eval/faq``.
INSIDE_LEXICAL = 0.1
#: With ``rerank`` on, how many of a question's first document's places the reranker
#: reads and deals again (decision 0056, fifth addendum): instead of the best 20
#: candidates of every document, which costs ``dev-eval/faq`` 0.037 section MRR@10.
SECTION_PLACES = 3


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


def section_keys(lexical: Sequence[tuple[int, float]], vector: Sequence[tuple[int, float]],
                 paragraphs: Mapping[int, Sequence[float | None]]) -> dict[int, float]:
    """Each chunk's key for ordering a question's sections: ``INSIDE_LEXICAL`` × its
    keyword relevance (clipped to 0..1) + the rest × its ``meaning``."""
    lex = {cid: min(max(s, 0.0), 1.0) for cid, s in lexical}
    near = meaning(dict(vector), paragraphs)
    return {cid: INSIDE_LEXICAL * lex.get(cid, 0.0) + (1 - INSIDE_LEXICAL) * near.get(cid, 0.0)
            for cid in lex.keys() | near.keys()}


def inside_documents(
    ranked: Sequence[tuple[int, float]],
    paths: Mapping[int, str],
    *,
    lexical: Sequence[tuple[int, float]],
    vector: Sequence[tuple[int, float]],
    paragraphs: Mapping[int, Sequence[float | None]],
) -> Ranking:
    """``ranked`` with each document's chunks (``paths``: each chunk's document) dealt into
    the places the document holds, best first by ``section_keys`` (ties keep their order);
    each place keeps its score. A chunk ``paths`` lacks stays put. The searcher and
    ``kb-mcp tune`` (which reads no paragraphs) both order a question's sections with it."""
    return dealt_by(ranked, paths, section_keys(lexical, vector, paragraphs))


def dealt_by(ranked: Sequence[tuple[int, float]], paths: Mapping[int, str],
             keys: Mapping[int, float]) -> Ranking:
    """``inside_documents`` on keys already computed (``section_keys``)."""
    places: dict[str, list[int]] = {}
    for i, (cid, _) in enumerate(ranked):
        path = paths.get(cid)
        if path is not None:
            places.setdefault(path, []).append(i)
    out = list(ranked)
    for at in places.values():
        if len(at) >= 2:
            deal(out, at, sorted((ranked[i][0] for i in at),
                                 key=lambda cid: -keys.get(cid, 0.0)))
    return out


def deal(ranking: Ranking, at: Sequence[int], chunks: Sequence[int]) -> None:
    """Put ``chunks`` into ``ranking``'s positions ``at``, in order; each position keeps
    its score."""
    for i, cid in zip(at, chunks, strict=True):
        ranking[i] = (cid, ranking[i][1])


def first_document_places(ranked: Sequence[tuple[int, float]], paths: Mapping[int, str],
                          places: int) -> list[int]:
    """The positions in ``ranked`` of the first document's first ``places`` chunks."""
    if not ranked or paths.get(ranked[0][0]) is None:
        return []
    first = paths[ranked[0][0]]
    return [i for i, (cid, _) in enumerate(ranked) if paths.get(cid) == first][:places]


def rerank_sections(query: str, ranked: Sequence[tuple[int, float]],
                    chunks: Mapping[int, StoredChunk], keys: Mapping[int, float],
                    reranker: Reranker, places: int = SECTION_PLACES) -> RerankOutcome:
    """A question's ``ranked`` (``dealt_by`` its ``keys``) with the first document's first
    ``places`` chunks read by the reranker and dealt into those places again, best first
    by ``trust`` × the reranker's log-odds + the rest × their keys, each rescaled over
    them (``rerank.blended``, the fused scores' part played by the keys). Which document
    comes where and every place's score stay; so do the other documents' chunks."""
    paths = {cid: c.document_path for cid, c in chunks.items()}
    at = first_document_places(ranked, paths, places)
    head = [ranked[i][0] for i in at]
    scores, ms = read_by(reranker, query, [chunks[cid] for cid in head])
    say = trust(max(scores), reranker.coverage(query)) if scores else 0.0
    key = blended([keys.get(cid, 0.0) for cid in head], scores, say) if head else []
    out = list(ranked)
    deal(out, at, [head[i] for i in sorted(range(len(head)), key=lambda i: (-key[i], i))])
    return RerankOutcome(ranked=out, scores=dict(zip(head, scores, strict=True)),
                         model_id=reranker.model_id, candidates=len(head), ms=ms, trust=say)
