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

A section's heading names what it is about, and a question that names it too says which
section it asks for: lsof's FAQ groups its answers under titles like "Solaris 7, 8 and 9
Problems" and "/proc-based Linux lsof Questions", whose answers the model reads a few
hundredths apart. So the key also holds ``INSIDE_HEADING`` × the share of the question's
words its section's heading holds, each word weighed by how few of the document's places'
headings hold it (``answer_lines.keyword_scores``): a word every heading has (the
document's title) moves nothing, the words of the document's path are left out ("Lsof --
what is it?" asks lsof's FAQ, not its sections whose titles say "lsof"), and a heading
counts only when it holds ``HEADING_WORDS`` of the question's words (decision 0056, ninth
part).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kbmcp_core.answer_lines import keyword_scores, stems_of
from kbmcp_core.spans import QueryTerms

Ranking = list[tuple[int, float]]
#: The keyword relevance's share in ordering one document's sections for a question (the
#: rest is meaning). Measured on every line-level set (decision 0056, third addendum):
#: 0 lets the Debian FAQs' sections lose 0.04 nDCG@10; 0.15 and above gains nothing on
#: ``dev-eval/faq``.
INSIDE_LEXICAL = 0.1
#: The weight of the question's words a section's heading holds, beside the key's 0 to 1
#: (measured on every line-level set, decision 0056, ninth part: 0.1 to 0.3 lift the
#: Debian FAQs' first hits by one or two, and move no other set's).
INSIDE_HEADING = 0.2
#: How many of the question's words a heading must hold to count: one shared word is as
#: often a circumstance ("… deleted after a rollout" against `Percentage rollouts`) as the
#: subject; two name it ("Solaris 7, 8 or 9" against `Solaris 7, 8 and 9 Problems`).
HEADING_WORDS = 2


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


def _not_in(terms: QueryTerms, path: str) -> QueryTerms:
    """``terms`` less the words of the document's path ("lsof" in ``lsof/00FAQ.txt``): they
    say which document, which fusion has decided, not which of its sections."""
    return QueryTerms(terms.stems - stems_of(path), terms.substrings)


def inside_documents(
    ranked: Sequence[tuple[int, float]],
    paths: Mapping[int, str],
    *,
    lexical: Sequence[tuple[int, float]],
    vector: Sequence[tuple[int, float]],
    paragraphs: Mapping[int, Sequence[float | None]],
    headings: Mapping[int, str] | None = None,
    terms: QueryTerms | None = None,
) -> Ranking:
    """``ranked`` with each document's chunks (``paths``: each chunk's document) dealt into
    the places the document holds, best first by ``INSIDE_LEXICAL`` × keyword relevance +
    the rest × ``meaning`` + ``INSIDE_HEADING`` × the query's ``terms`` its heading holds
    (``headings``: each chunk's section heading; ties keep their order); each place keeps
    its score. A chunk ``paths`` lacks stays put. The searcher and ``kb-mcp tune`` (which
    reads no paragraphs) both order a question's sections with it."""
    lex = {cid: min(max(s, 0.0), 1.0) for cid, s in lexical}
    near = meaning(dict(vector), paragraphs)
    named: dict[int, float] = {}

    def key(cid: int) -> float:
        return (INSIDE_LEXICAL * lex.get(cid, 0.0) + (1 - INSIDE_LEXICAL) * near.get(cid, 0.0)
                + INSIDE_HEADING * named.get(cid, 0.0))

    places: dict[str, list[int]] = {}
    for i, (cid, _) in enumerate(ranked):
        path = paths.get(cid)
        if path is not None:
            places.setdefault(path, []).append(i)
    out = list(ranked)
    for at in places.values():
        if len(at) < 2:
            continue
        if headings and terms:
            ids = [ranked[i][0] for i in at]
            asked = _not_in(terms, paths[ids[0]])
            texts = [headings.get(c, "") for c in ids]
            named.update((cid, share) for cid, share, text
                         in zip(ids, keyword_scores(texts, asked), texts, strict=True)
                         if len(asked.stems & stems_of(text)) >= HEADING_WORDS)
        dealt = sorted((ranked[i][0] for i in at), key=lambda cid: -key(cid))
        for i, cid in zip(at, dealt, strict=True):
            out[i] = (cid, ranked[i][1])
    return out
