"""Fusion of the two search legs into one ranking, and its parameters.

Chosen by measurement over four sets at once: docs/decisions/0015-fusion-ii.md (which
supersedes the weights of 0007). ``kb-mcp tune`` searches a small grid of these parameters
on a golden file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

FusionMethod = Literal["weighted", "rrf"]
VectorScale = Literal["cosine", "relative"]
METHODS: tuple[FusionMethod, ...] = ("weighted", "rrf")
VECTOR_SCALES: tuple[VectorScale, ...] = ("cosine", "relative")

#: Weight of the lexical leg in the fused score when its best match holds the whole query;
#: the vector leg gets the rest.
LEXICAL_WEIGHT = 0.55
#: ... and when its best match holds none of it: the weight slides between the two with the
#: best lexical relevance of the query (decision 0015).
LEXICAL_WEIGHT_MIN = 0.3


@dataclass(frozen=True, slots=True)
class Fusion:
    """How the legs are combined (``[search]`` keys of the same names).

    ``weighted``: w × the lexical relevance in [0, 1] plus (1 − w) × the vector leg's score
    — its cosine similarity as is (``cosine``), or relative to the query's best similarity
    (``relative``). The lexical weight w depends on how much of the query the lexical leg
    matched: with ``m`` the best lexical relevance of the query (1 when a chunk holds every
    word of it, less the fewer and commoner the words it holds),
    ``w = lexical_weight_min + (lexical_weight − lexical_weight_min) × m``; equal values give
    a fixed weight (a ``lexical_weight_min`` above ``lexical_weight`` counts as equal to it,
    so setting ``lexical_weight`` alone low is a fixed low weight). ``rrf``: reciprocal rank
    fusion, ``w / (rrf_k + rank)`` per leg, with the lexical leg weighed ``lexical_weight``
    and the vector leg the rest.
    """

    method: FusionMethod = "weighted"
    lexical_weight: float = LEXICAL_WEIGHT
    lexical_weight_min: float = LEXICAL_WEIGHT_MIN
    vector_scale: VectorScale = "cosine"
    rrf_k: int = 60

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem:
            raise ValueError(problem)

    def problem(self) -> str | None:
        """What is wrong with these parameters, in the words of the config keys."""
        if self.method not in METHODS:
            return f"fusion must be one of {', '.join(METHODS)}"
        if self.vector_scale not in VECTOR_SCALES:
            return f"vector_scale must be one of {', '.join(VECTOR_SCALES)}"
        if not 0.0 <= self.lexical_weight <= 1.0:
            return "lexical_weight must be between 0 and 1"
        if not 0.0 <= self.lexical_weight_min <= 1.0:
            return "lexical_weight_min must be between 0 and 1"
        if self.rrf_k < 1:
            return "rrf_k must be at least 1"
        return None

    def as_toml(self) -> list[str]:
        """The ``[search]`` lines that select this fusion (for ``kb-mcp tune``)."""
        lines = [f'fusion = "{self.method}"', f"lexical_weight = {self.lexical_weight:g}"]
        if self.method == "weighted":
            lines.append(f"lexical_weight_min = {self.lexical_weight_min:g}")
            lines.append(f'vector_scale = "{self.vector_scale}"')
        else:
            lines.append(f"rrf_k = {self.rrf_k}")
        return lines

    def label(self) -> str:
        if self.method == "rrf":
            return f"rrf k={self.rrf_k} lexical_weight={self.lexical_weight:g}"
        return (f"weighted lexical_weight={self.lexical_weight:g} "
                f"lexical_weight_min={self.lexical_weight_min:g} "
                f"vector_scale={self.vector_scale}")


DEFAULT_FUSION = Fusion()


def fuse(
    vector: Sequence[tuple[int, float]],
    lexical: Sequence[tuple[int, float]],
    lexical_weight: float = LEXICAL_WEIGHT,
    coverage: float = 1.0,
    fusion: Fusion | None = None,
) -> list[tuple[int, float]]:
    """One ranking of the legs' ``(chunk id, score)`` lists, best first.

    The lexical leg scores its relevance in [0, 1] (BM25 relative to the query's best,
    weighed by how much of the query the chunk contains); the vector leg its cosine
    similarity. The vector leg's weight is scaled by ``coverage``² — the share of the query
    the model can read — so an English model adds no noise to a Japanese query. A chunk
    found by one leg only gets that leg's share. Ties break by the better of the chunk's
    ranks in the two legs, then by chunk id, so results never depend on how ids were drawn.
    Without ``fusion``, a fixed ``lexical_weight`` (the fusion of decision 0007).
    """
    f = fusion or Fusion(lexical_weight=lexical_weight, lexical_weight_min=lexical_weight)
    w = leg_weights(vector, lexical, coverage, f)
    scores: dict[int, float] = {}
    if f.method == "rrf":
        for weight, leg in ((w.lexical, lexical), (w.vector, vector)):
            for rank, (cid, _) in enumerate(leg, 1):
                scores[cid] = scores.get(cid, 0.0) + weight / (f.rrf_k + rank)
        return _ranked(scores, vector, lexical)
    scores = {cid: w.lexical * min(max(s, 0.0), 1.0) for cid, s in lexical}
    for cid, sim in vector:
        scores[cid] = scores.get(cid, 0.0) + w.vector * max(sim, 0.0)
    return _ranked(scores, vector, lexical)


@dataclass(frozen=True, slots=True)
class LegWeights:
    """The weights ``fuse`` gave the two legs of one query (what ``explain`` reports):
    ``weighted`` multiplies a chunk's lexical relevance (clamped to 0..1) by ``lexical``
    and its similarity (negative counts as 0) by ``vector``; ``rrf`` divides each weight by
    ``rrf_k`` + the chunk's rank in that leg. The fused score is the sum of the two."""

    method: FusionMethod
    lexical: float
    vector: float
    rrf_k: int

    def lexical_part(self, relevance: float, rank: int) -> float:
        """The lexical leg's share of a chunk's fused score (``rank`` counts from 1)."""
        if self.method == "rrf":
            return self.lexical / (self.rrf_k + rank)
        return self.lexical * min(max(relevance, 0.0), 1.0)

    def vector_part(self, similarity: float, rank: int) -> float:
        """The vector leg's share of a chunk's fused score (``rank`` counts from 1)."""
        if self.method == "rrf":
            return self.vector / (self.rrf_k + rank)
        return self.vector * max(similarity, 0.0)


def leg_weights(
    vector: Sequence[tuple[int, float]],
    lexical: Sequence[tuple[int, float]],
    coverage: float,
    fusion: Fusion,
) -> LegWeights:
    """The legs' weights for this query, as ``fuse`` applies them (its docstring)."""
    cov = max(0.0, min(coverage, 1.0)) ** 2
    alpha = fusion.lexical_weight
    if fusion.method == "rrf":
        return LegWeights("rrf", alpha, (1.0 - alpha) * cov, fusion.rrf_k)
    best_lexical = min(max((s for _, s in lexical), default=0.0), 1.0)
    low = min(fusion.lexical_weight_min, alpha)
    alpha = low + (alpha - low) * max(best_lexical, 0.0)
    scale = 1.0
    if fusion.vector_scale == "relative" and vector:
        best = max(sim for _, sim in vector)
        scale = 1.0 / best if best > 0 else 1.0
    return LegWeights("weighted", alpha, (1.0 - alpha) * cov * scale, fusion.rrf_k)


def _ranked(scores: dict[int, float], *legs: Sequence[tuple[int, float]]
            ) -> list[tuple[int, float]]:
    """``scores`` best first; a tie goes to the chunk one of the legs ranked higher."""
    leg_rank: dict[int, int] = {}
    for leg in legs:
        for rank, (cid, _) in enumerate(leg):
            leg_rank[cid] = min(rank, leg_rank.get(cid, rank))
    return sorted(scores.items(), key=lambda x: (-x[1], leg_rank.get(x[0], 0), x[0]))


def tuning_grid() -> list[Fusion]:
    """The settings ``kb-mcp tune`` tries: small on purpose (every one is scored on every
    query, and a large grid only finds noise on a small golden file)."""
    grid = [Fusion("weighted", w, low, scale)
            for scale in VECTOR_SCALES for w in (0.4, 0.55, 0.7) for low in (0.2, 0.3, w)
            if low <= w]
    grid += [Fusion("rrf", w, rrf_k=k) for k in (10, 30, 60) for w in (0.5, 0.6)]
    return grid
