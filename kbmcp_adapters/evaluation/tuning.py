"""``kb-mcp tune`` on an open knowledge base: fetch both legs once per golden query, then
score every fusion setting of the grid on them and cross-validate (``kbmcp_core.tuning``)."""

from __future__ import annotations

from collections.abc import Sequence

from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.parsers.headings import clean_heading
from kbmcp_core.evaluation import GoldenQuery, Ranked
from kbmcp_core.fusion import Fusion, tuning_grid
from kbmcp_core.tuning import (
    Candidate,
    Legs,
    TuneResult,
    cross_validate,
    pool_size,
    ranked,
    score_queries,
)

#: Results fetched per query, as ``kb-mcp eval`` does (the legs' pools follow from it).
LIMIT = 50


def tune_fusion(kb: KnowledgeBase, queries: Sequence[GoldenQuery], *, folds: int,
                metric: str, level: str) -> TuneResult[Fusion]:
    """The current fusion setting and the grid, scored and cross-validated on ``queries``."""
    current = kb.settings.fusion
    per_doc = kb.settings.search_chunks_per_document
    searcher = kb.searcher()
    pool = pool_size(LIMIT, per_doc)
    legs: dict[str, Legs] = {}
    for q in queries:
        if q.query not in legs:
            vector = searcher.vectors.search(searcher.embedder.embed_query(q.query), pool)
            legs[q.query] = Legs(tuple(vector),
                                 tuple(searcher.store.lexical_search(q.query, pool)),
                                 searcher.embedder.coverage(q.query), q.query)
    ids = {cid for lg in legs.values() for cid, _ in (*lg.vector, *lg.lexical)}
    sections = {cid: Ranked(c.document_path, c.heading, c.start_line, c.end_line)
                for cid, c in searcher.store.get_chunks(ids).items()}

    def candidate(fusion: Fusion) -> Candidate[Fusion]:
        def retrieve(query: str) -> list[Ranked]:
            return ranked(legs[query], fusion, sections, per_doc, LIMIT)

        return Candidate(fusion, score_queries(queries, retrieve, clean_heading, metric, level))

    scored = [candidate(f) for f in [current, *(f for f in tuning_grid() if f != current)]]
    return cross_validate(scored[0], scored, folds)
