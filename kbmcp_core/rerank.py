"""Reranking: a second opinion on the best fused candidates from a ``Reranker`` port.

A cross-encoder reads the query and a passage together and scores the pair; that is
more accurate than comparing two separately embedded texts, and far slower, so it only
reorders the top ``RERANK_CANDIDATES`` of the fused ranking. The rest keep their order
after them.

The reranker does not get the last word unconditionally (decision 0016): its say, the
*trust* ``t``, is how confident it is that its best candidate answers the query, times how
much of the query it can read. Each candidate is then ordered by
``t × reranker score + (1 − t) × fused score``, both rescaled to 0–1 over the candidates;
that blend, put back on the candidates' fused scale (``on_fused_scale``), is the score
each hit shows, so scores fall in the order printed (decision 0056).
A cross-encoder that finds nothing relevant (every score near 0: a paraphrase it does not
recognise, an identifier it cannot judge) or that cannot read the query (Japanese for an
English model) leaves the fused order as it was; one that is sure of its best candidate
decides the order.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kbmcp_core.models import StoredChunk, whole_text_of
from kbmcp_core.ports import Reranker

#: How many of the best fused candidates the reranker reads unless ``[search]`` says.
RERANK_CANDIDATES = 20
#: The most ``[search].rerank_candidates`` may ask for (each costs ~30 ms on 2 cores).
MAX_RERANK_CANDIDATES = 50
#: The log-odds of the best candidate's probability at which the reranker gets half the
#: say: even odds that its best candidate answers (decision 0016, re-derived on five sets
#: with two of natural questions in session 12); each unit of log-odds above or below
#: moves the trust along a logistic curve.
TRUST_MIDPOINT = 0.0
_EDGE = 1e-9


@dataclass(frozen=True, slots=True)
class RerankOutcome:
    ranked: list[tuple[int, float]]
    scores: dict[int, float]
    model_id: str
    candidates: int
    ms: float
    #: how much say the reranker had over the order, 0 to 1
    trust: float = 1.0

    def as_dict(self) -> dict[str, object]:
        return {"model": self.model_id, "candidates": self.candidates, "ms": round(self.ms, 1),
                "trust": round(self.trust, 3)}


def log_odds(p: float) -> float:
    """The logit of a probability, kept finite at 0 and 1."""
    q = min(max(float(p), _EDGE), 1.0 - _EDGE)
    return math.log(q / (1.0 - q))


def trust(best: float, readable: float) -> float:
    """The reranker's say: confidence in its best candidate (a logistic of its log-odds
    around ``TRUST_MIDPOINT``) times the share of the query it reads."""
    confidence = 1.0 / (1.0 + math.exp(-(log_odds(best) - TRUST_MIDPOINT)))
    return confidence * min(max(float(readable), 0.0), 1.0)


def _rescaled(values: Sequence[float]) -> list[float]:
    lo, hi = min(values), max(values)
    span = hi - lo
    return [(v - lo) / span if span > 0 else 0.0 for v in values]


def blend(fused: Sequence[float], probabilities: Sequence[float], say: float) -> list[int]:
    """Positions of the candidates in their new order: by ``say`` × the reranker's log-odds
    plus (1 − ``say``) × the fused score, each rescaled over the candidates; ties keep the
    fused order."""
    key = blended(fused, probabilities, say)
    return sorted(range(len(key)), key=lambda i: (-key[i], i))


def blended(fused: Sequence[float], probabilities: Sequence[float], say: float
            ) -> list[float]:
    """Each candidate's blended score (``blend`` orders by it), 0 to 1."""
    if len(fused) != len(probabilities):
        raise ValueError("one fused score and one reranker score per candidate")
    if not fused:
        return []
    mine = _rescaled([log_odds(p) for p in probabilities])
    theirs = _rescaled(list(fused))
    return [say * m + (1.0 - say) * t for m, t in zip(mine, theirs, strict=True)]


def on_fused_scale(fused: Sequence[float], key: Sequence[float]) -> list[float]:
    """Blended scores (0 to 1) put back on the candidates' fused scale: from their lowest
    fused score to their highest, so a reordered candidate still scores at least as much
    as every one the reranker did not read (those after them keep their fused scores),
    and the scores fall in the order printed (decision 0056)."""
    lo, hi = min(fused, default=0.0), max(fused, default=0.0)
    return [lo + k * (hi - lo) for k in key]


def rerank(
    query: str,
    ranked: Sequence[tuple[int, float]],
    chunks: Mapping[int, StoredChunk],
    reranker: Reranker,
    candidates: int = RERANK_CANDIDATES,
) -> RerankOutcome:
    """``ranked`` with its first ``candidates`` existing chunks reordered as the module
    docstring says; the reranker's score is returned per chunk id."""
    known = [(cid, s) for cid, s in ranked if cid in chunks]
    head, tail = known[:candidates], known[candidates:]
    started = time.perf_counter()
    passages = [whole_text_of(chunks[cid].heading_path, chunks[cid].content) for cid, _ in head]
    scores = reranker.score(query, passages) if head else []
    ms = (time.perf_counter() - started) * 1000.0
    if len(scores) != len(head):
        raise ValueError(f"the reranker returned {len(scores)} scores for {len(head)} passages")
    if any(not 0.0 <= s <= 1.0 for s in scores):
        raise ValueError("the reranker returned a score outside 0..1")
    say = trust(max(scores), reranker.coverage(query)) if scores else 0.0
    fused = [s for _, s in head]
    key = blended(fused, scores, say)
    order = sorted(range(len(key)), key=lambda i: (-key[i], i))
    shown = on_fused_scale(fused, key)
    return RerankOutcome(
        ranked=[(head[i][0], shown[i]) for i in order] + tail,
        scores={head[i][0]: float(scores[i]) for i in range(len(head))},
        model_id=reranker.model_id,
        candidates=len(head),
        ms=ms,
        trust=say,
    )
