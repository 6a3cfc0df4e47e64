"""Paragraph re-scoring of the best candidates (decision 0028, addenda of sessions 9 and 11).

A chunk's one vector is the model's reading of all of it. When a chunk holds several
answers (an FAQ whose question headings are gone, a reference section describing three
options), its vector is a mix, and a question about one of them may find another chunk
nearer. So after fusion, the best few candidates have their prose split into paragraphs,
and a candidate's similarity in the vector leg moves half way from its own towards its
nearest paragraph's, when that is higher. Then the legs are fused again: a chunk only
gains, and only by half of what one of its paragraphs says better than the whole (the
whole still counts: measured, the full step let chunks of the wrong document climb).

Where the paragraph vectors come from: an embedder that reads parts of a text in context
(``SpanEmbedder``, the default MiniLM) runs once over the chunk's embedded text and pools
each paragraph's tokens (with the heading trail's) out of that one run, so a candidate
costs one model run and nothing is stored; another embedder embeds each paragraph on its
own, about 20 times the cost of a search, so there the step runs only when
``[search] passage_candidates`` asks for it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from kbmcp_core.models import StoredChunk, Vector, prose_of, vector_text_of, whole_text_of
from kbmcp_core.ports import Embedder, SpanEmbedder, SpanGroup

#: How many of the best fused candidates are re-scored by their paragraphs (``[search]
#: passage_candidates``): None, the default, means ``AUTO_CANDIDATES`` when the embedder
#: reads paragraphs in context (one model run per candidate) and off otherwise (each
#: paragraph embedded on its own: about 20 times the search without it); 0 turns it off.
PASSAGE_CANDIDATES: int | None = None
#: The candidates re-scored by default, when the embedder reads paragraphs in context.
AUTO_CANDIDATES = 10
#: The most ``passage_candidates`` may ask for (each candidate costs an embedding per
#: paragraph at query time).
MAX_PASSAGE_CANDIDATES = 50
#: How far a candidate's similarity moves towards its nearest paragraph's (when higher).
PARAGRAPH_SHARE = 0.5
_BREAK = re.compile(r"\n[ \t]*\n")


def paragraphs_of(content: str) -> list[str]:
    """The prose of a chunk (``prose_of``: code left out) cut at blank lines."""
    return [p for part in _BREAK.split(prose_of(content)) if (p := part.strip())]


def paragraph_groups(heading_path: tuple[str, ...], content: str,
                     ) -> tuple[str, list[SpanGroup]]:
    """The text a chunk's vector is made from (``vector_text_of``) and, for each of its
    paragraphs (``paragraphs_of``), the characters that paragraph is read with: the
    heading trail and the paragraph, as ``whole_text_of(heading_path, paragraph)`` would
    give them on their own."""
    trail = " > ".join(h for h in heading_path if h)
    prose = prose_of(content)
    base = len(trail) + 1 if trail else 0
    groups: list[SpanGroup] = []
    pos = 0
    for para in paragraphs_of(content):
        at = prose.find(para, pos)
        pos = at + len(para)
        span = (base + at, base + at + len(para))
        groups.append([(0, len(trail)), span] if trail else [span])
    return vector_text_of(heading_path, content), groups


def candidates_for(passages: int | None, embedder: Embedder) -> int:
    """How many candidates a search re-scores: ``passages`` when set, else
    ``AUTO_CANDIDATES`` for an embedder that reads paragraphs in context, else none."""
    if passages is not None:
        return max(passages, 0)
    return AUTO_CANDIDATES if isinstance(embedder, SpanEmbedder) else 0


def cosine(a: Vector, b: Vector) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def passage_similarities(
    query_vector: Vector,
    fused: Sequence[tuple[int, float]],
    vector: Sequence[tuple[int, float]],
    chunks: Mapping[int, StoredChunk],
    embedder: Embedder,
    candidates: int = AUTO_CANDIDATES,
    *,
    separately: bool = True,
    read: dict[int, list[float | None]] | None = None,
) -> list[tuple[int, float]]:
    """The vector leg with the first ``candidates`` of ``fused`` re-scored: each one's
    similarity moves ``PARAGRAPH_SHARE`` of the way up to its nearest paragraph's (a
    chunk of one paragraph keeps what it had; one the leg did not return counts from 0).
    Best first, as the leg is; the rest of the leg unchanged. Paragraphs are read in
    context when the embedder can; else embedded one by one, only when ``separately``.
    ``read``, when given, gets each re-scored chunk's paragraph similarities
    (``paragraph_similarities``: what ``answer_lines`` reads meaning from)."""
    found = paragraph_similarities(query_vector, fused, chunks, embedder, candidates,
                                   separately=separately)
    if read is not None:
        read.update(found)
    return rescore(vector, found)


def paragraph_similarities(
    query_vector: Vector,
    fused: Sequence[tuple[int, float]],
    chunks: Mapping[int, StoredChunk],
    embedder: Embedder,
    candidates: int = AUTO_CANDIDATES,
    *,
    separately: bool = True,
) -> dict[int, list[float | None]]:
    """Of the first ``candidates`` of ``fused`` with two paragraphs or more, each one's
    paragraphs' (``paragraphs_of``) cosine similarities to the query, in order (None for
    one the embedder did not read); a chunk the embedder read nothing of is left out."""
    picked: list[tuple[int, StoredChunk]] = []
    for cid, _ in fused[:max(candidates, 0)]:
        chunk = chunks.get(cid)
        if chunk is not None and len(paragraphs_of(chunk.content)) >= 2:
            picked.append((cid, chunk))
    if not picked:
        return {}
    found = _paragraph_vectors(picked, embedder, separately)
    return {cid: [None if v is None else cosine(query_vector, v) for v in vs]
            for cid, vs in found.items() if any(v is not None for v in vs)}


def rescore(vector: Sequence[tuple[int, float]],
            paragraphs: Mapping[int, Sequence[float | None]]) -> list[tuple[int, float]]:
    """The vector leg with each chunk of ``paragraphs`` moved ``PARAGRAPH_SHARE`` of the
    way up to its nearest paragraph's similarity (when higher), best first."""
    nearest = {cid: max(s for s in sims if s is not None) for cid, sims in paragraphs.items()}
    sims = dict(vector)
    for cid, sim in nearest.items():
        own = sims.get(cid, 0.0)
        if sim > own:
            sims[cid] = own + PARAGRAPH_SHARE * (sim - own)
    return sorted(sims.items(), key=lambda x: (-x[1], x[0]))


def _paragraph_vectors(picked: Sequence[tuple[int, StoredChunk]], embedder: Embedder,
                       separately: bool) -> dict[int, list[Vector | None]]:
    """Each picked chunk's paragraph vectors, in order (None for one not read): pooled
    from one run over the chunk when the embedder reads parts in context, else each
    paragraph embedded on its own (only when ``separately``), else none."""
    if isinstance(embedder, SpanEmbedder):
        read = embedder.embed_spans([paragraph_groups(c.heading_path, c.content)
                                     for _, c in picked])
        if read is not None:
            return {cid: list(vs) for (cid, _), vs in zip(picked, read, strict=True)}
    if not separately:
        return {}
    texts: list[str] = []
    owners: list[int] = []
    for cid, chunk in picked:
        paras = paragraphs_of(chunk.content)
        texts += [whole_text_of(chunk.heading_path, p) for p in paras]
        owners += [cid] * len(paras)
    out: dict[int, list[Vector | None]] = {}
    for cid, v in zip(owners, embedder.embed_documents(texts), strict=True):
        out.setdefault(cid, []).append(v)
    return out
