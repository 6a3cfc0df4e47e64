"""Paragraph re-scoring of the best candidates: a chunk moves towards its nearest paragraph
(decision 0028, addendum of session 9).

A chunk's one vector is the model's reading of all of it. When a chunk holds several
answers (an FAQ whose question headings are gone, a reference section describing three
options), its vector is a mix, and a question about one of them may find another chunk
nearer. So after fusion, the best few candidates (``[search] passage_candidates``; off by
default for its cost) have their
prose split into paragraphs, each embedded with the chunk's heading trail at query time,
and a candidate's similarity in the vector leg moves half way from its own towards its
nearest paragraph's, when that is higher. Then the legs are fused again: a chunk only
gains, and only by half of what one of its paragraphs says better than the whole (the
whole still counts: measured, the full step let chunks of the wrong document climb).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from kbmcp_core.models import StoredChunk, Vector, prose_of, whole_text_of
from kbmcp_core.ports import Embedder

#: How many of the best fused candidates are re-scored by their paragraphs (``[search]
#: passage_candidates``; 0, the default, turns it off: each re-scored candidate costs an
#: embedding per paragraph on every search, about 20 times the search without it).
PASSAGE_CANDIDATES = 0
#: The most ``passage_candidates`` may ask for (each candidate costs an embedding per
#: paragraph at query time).
MAX_PASSAGE_CANDIDATES = 50
#: How far a candidate's similarity moves towards its nearest paragraph's (when higher).
PARAGRAPH_SHARE = 0.5
_BREAK = re.compile(r"\n[ \t]*\n")


def paragraphs_of(content: str) -> list[str]:
    """The prose of a chunk (``prose_of``: code left out) cut at blank lines."""
    return [p for part in _BREAK.split(prose_of(content)) if (p := part.strip())]


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
    candidates: int = PASSAGE_CANDIDATES,
) -> list[tuple[int, float]]:
    """The vector leg with the first ``candidates`` of ``fused`` re-scored: each one's
    similarity moves ``PARAGRAPH_SHARE`` of the way up to its nearest paragraph's (a
    chunk of one paragraph keeps what it had; one the leg did not return counts from 0).
    Best first, as the leg is; the rest of the leg unchanged."""
    sims = dict(vector)
    nearest: dict[int, float] = {}
    texts: list[str] = []
    owners: list[int] = []
    for cid, _ in fused[:max(candidates, 0)]:
        chunk = chunks.get(cid)
        if chunk is None:
            continue
        paras = paragraphs_of(chunk.content)
        if len(paras) < 2:
            continue
        texts += [whole_text_of(chunk.heading_path, p) for p in paras]
        owners += [cid] * len(paras)
    if not texts:
        return list(vector)
    for cid, v in zip(owners, embedder.embed_documents(texts), strict=True):
        nearest[cid] = max(cosine(query_vector, v), nearest.get(cid, -1.0))
    for cid, sim in nearest.items():
        own = sims.get(cid, 0.0)
        if sim > own:
            sims[cid] = own + PARAGRAPH_SHARE * (sim - own)
    return sorted(sims.items(), key=lambda x: (-x[1], x[0]))
