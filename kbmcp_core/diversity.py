"""Maximal marginal relevance: reorder ranked chunks so the page is not one document.

Each pick maximises ``λ · relevance − (1 − λ) · redundancy``, where relevance is the
fused score relative to the best candidate's (so it lies in [0, 1]) and redundancy is
the highest similarity to a chunk already picked. ``λ = 1`` keeps the ranking as it is.

Similarity between two chunks is the cosine of their stored vectors when every
candidate has one, else the overlap (Jaccard) of their word stems — the lexical-only
mode and a search whose vectors cannot be read still get a diversified page. The score a
hit reports stays its fused relevance; only the order changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from kbmcp_core.models import Vector
from kbmcp_core.porter import stem
from kbmcp_core.spans import fold, word_pieces

Ranked = list[tuple[int, float]]
Similarity = Callable[[int, int], float]


def mmr(ranked: Sequence[tuple[int, float]], similarity: Similarity, lam: float,
        picks: int) -> Ranked:
    """The first ``picks`` of ``ranked`` chosen by MMR, then the rest in their order.

    ``similarity(a, b)`` is in [0, 1]. Ties keep the earlier (better ranked) chunk.
    """
    if lam >= 1.0 or len(ranked) < 2 or picks < 2:
        return list(ranked)
    top = max((s for _, s in ranked), default=0.0)
    scale = top if top > 0 else 1.0
    rest = list(ranked)
    chosen: Ranked = [rest.pop(0)]
    # the highest similarity of each remaining candidate to anything chosen so far
    redundancy = [similarity(cid, chosen[0][0]) for cid, _ in rest]
    while rest and len(chosen) < picks:
        best_i, best_value = 0, -math.inf
        for i, (_, score) in enumerate(rest):
            value = lam * (score / scale) - (1.0 - lam) * redundancy[i]
            if value > best_value:
                best_i, best_value = i, value
        pick = rest.pop(best_i)
        redundancy.pop(best_i)
        chosen.append(pick)
        redundancy = [max(r, similarity(cid, pick[0])) for r, (cid, _) in zip(redundancy, rest,
                                                                              strict=True)]
    return chosen + rest


def cosine_similarity(vectors: Mapping[int, Vector]) -> Similarity:
    """Cosine of two stored vectors (unit length), clipped to [0, 1]."""
    norms = {cid: math.sqrt(sum(x * x for x in v)) or 1.0 for cid, v in vectors.items()}

    def similarity(a: int, b: int) -> float:
        va, vb = vectors[a], vectors[b]
        dot = sum(x * y for x, y in zip(va, vb, strict=True))
        return max(0.0, min(1.0, dot / (norms[a] * norms[b])))

    return similarity


def word_similarity(texts: Mapping[int, str]) -> Similarity:
    """Jaccard overlap of the word stems (and CJK characters) of two texts."""
    bags: dict[int, frozenset[str]] = {}
    for cid, text in texts.items():
        items: set[str] = set()
        for start, end, cjk in word_pieces(text):
            piece = text[start:end]
            if cjk:
                items.update(piece[i : i + 2] for i in range(max(len(piece) - 1, 1)))
            else:
                items.add(stem(fold(piece)))
        bags[cid] = frozenset(items)

    def similarity(a: int, b: int) -> float:
        x, y = bags[a], bags[b]
        union = len(x | y)
        return len(x & y) / union if union else 0.0

    return similarity
