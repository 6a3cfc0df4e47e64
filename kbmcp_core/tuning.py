"""``kb-mcp tune``: choose fusion parameters on golden queries by k-fold cross-validation.

Every candidate setting is scored once per query; a fold then only picks, among the
candidates, the best one on the other folds' queries and reads its score on its own. The
mean of those held-out scores says how well *choosing by this golden file* generalises —
the honest number to weigh against the current setting's score.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from kbmcp_core.evaluation import GoldenQuery, Ranked, rank_query
from kbmcp_core.fusion import Fusion, fuse
from kbmcp_core.inside_documents import inside_documents
from kbmcp_core.questions import fusion_for, is_question
from kbmcp_core.releases import named_release_first
from kbmcp_core.spans import query_terms

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Candidate(Generic[S]):
    setting: S
    #: the metric of each golden query, in the golden file's order
    per_query: tuple[float, ...]

    @property
    def mean(self) -> float:
        return sum(self.per_query) / len(self.per_query) if self.per_query else 0.0


@dataclass(frozen=True, slots=True)
class TuneResult(Generic[S]):
    current: Candidate[S]
    best: Candidate[S]
    #: the mean over folds of the held-out score of the setting chosen on the other folds
    held_out: float
    #: how often each setting was the one chosen, per fold (a stable choice repeats)
    chosen_per_fold: tuple[S, ...]
    candidates: tuple[Candidate[S], ...]


def fold_of(index: int, folds: int) -> int:
    """Queries are dealt round-robin, so a golden file sorted by kind spreads every kind
    over every fold."""
    return index % folds


def score_queries(
    queries: Sequence[GoldenQuery],
    retrieve: Callable[[str], Sequence[Ranked]],
    clean: Callable[[str], str],
    metric: str,
    level: str,
) -> tuple[float, ...]:
    """``metric`` of each query at ``level`` (document or section; a query without a
    heading has no section score and counts its document score there)."""
    out: list[float] = []
    for q in queries:
        doc, sec, _ = rank_query(q, retrieve(q.query), clean)
        out.append((sec or doc)[metric] if level == "section" else doc[metric])
    return tuple(out)


def cross_validate(
    current: Candidate[S], candidates: Sequence[Candidate[S]], folds: int
) -> TuneResult[S]:
    """Pick the best candidate on each training split and average its held-out score.

    Ties keep the earlier candidate (list the current setting first: a tie never moves
    away from it). ``folds`` is clamped to the number of queries."""
    n = len(current.per_query)
    if n == 0 or not candidates:
        raise ValueError("no queries or no candidates to tune over")
    if any(len(c.per_query) != n for c in candidates):
        raise ValueError("every candidate must score the same queries")
    k = max(2, min(folds, n))
    held: list[float] = []
    chosen: list[S] = []
    for f in range(k):
        train = [i for i in range(n) if fold_of(i, k) != f]
        test = [i for i in range(n) if fold_of(i, k) == f]
        pick = max(candidates,
                   key=lambda c: sum(c.per_query[i] for i in train))  # first max wins
        held.extend(pick.per_query[i] for i in test)
        chosen.append(pick.setting)
    best = max(candidates, key=lambda c: c.mean)
    return TuneResult(current=current, best=best, held_out=sum(held) / n,
                      chosen_per_fold=tuple(chosen), candidates=tuple(candidates))



@dataclass(frozen=True, slots=True)
class Legs:
    """Both legs' raw results for one query: fetched once, re-fused for every setting."""

    vector: tuple[tuple[int, float], ...]
    lexical: tuple[tuple[int, float], ...]
    coverage: float
    #: the query itself: a question is fused leaning on the vector leg, as search does
    query: str = ""


def pool_size(limit: int, chunks_per_document: int) -> int:
    """Candidates each leg returns for a search of ``limit`` hits (as ``Searcher`` asks)."""
    return max(50, limit * chunks_per_document * 5)


def ranked(legs: Legs, fusion: Fusion, sections: Mapping[int, Ranked],
           chunks_per_document: int, limit: int) -> list[Ranked]:
    """The hybrid ranking under ``fusion``, as search orders it: fused, the notes of a
    release the query names first (``named_release_first``), a question's sections ordered
    by meaning inside each document (``inside_documents``, without the paragraphs search
    reads), then at most ``chunks_per_document`` sections per document, ``limit`` in all
    (diversity and reranking are not applied)."""
    counts: dict[str, int] = {}
    out: list[Ranked] = []
    paths = {cid: s.path for cid, s in sections.items()}
    fused = named_release_first(fuse(legs.vector, legs.lexical, coverage=legs.coverage,
                                     fusion=fusion_for(legs.query, fusion)),
                                paths, legs.query)
    if legs.vector and is_question(legs.query):
        fused = inside_documents(fused, paths,
                                 lexical=legs.lexical, vector=legs.vector, paragraphs={},
                                 headings={cid: s.heading for cid, s in sections.items()},
                                 terms=query_terms(legs.query))
    for cid, _ in fused:
        section = sections.get(cid)
        if section is None or counts.get(section.path, 0) >= chunks_per_document:
            continue
        counts[section.path] = counts.get(section.path, 0) + 1
        out.append(section)
        if len(out) >= limit:
            break
    return out
