"""Measuring a knowledge base on golden queries in tests, exactly as `kb-mcp eval` does."""

from __future__ import annotations

from collections.abc import Callable

from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.parsers.headings import clean_heading
from kbmcp_core.evaluation import METRICS, EvalReport, GoldenQuery, Ranked, Retrieved, evaluate
from kbmcp_core.search_request import MODES


def measure(kb: KnowledgeBase, queries: list[GoldenQuery]) -> dict[str, EvalReport]:
    """The three retrievers (hybrid, vector, lexical) measured on the golden queries."""

    def retriever(mode: str) -> Callable[[str], Retrieved]:
        def retrieve(query: str) -> Retrieved:
            res = kb.search(query, limit=50, mode=mode)
            return Retrieved([Ranked(h.path, h.heading, h.start_line, h.end_line)
                              for h in res.results], res.low_confidence)

        return retrieve

    return {m: evaluate(m, queries, retriever(m), clean_heading) for m in MODES}


def table(reports: dict[str, EvalReport]) -> str:
    """The measured numbers, overall and per kind, and every miss: for prints and messages."""
    lines = [f"{'mode':<8} {'kind':<9} {'level':<8} " + " ".join(f"{m:>9}" for m in METRICS)]
    for mode, r in reports.items():
        rows = [("all", "document", r.document), ("all", "section", r.section)]
        rows += [(k, lvl, v) for k, lv in sorted(r.per_kind.items()) for lvl, v in lv.items()]
        for kind, level, values in rows:
            lines.append(f"{mode:<8} {kind:<9} {level:<8} "
                         + " ".join(f"{values[m]:>9.3f}" for m in METRICS))
    for mode, r in reports.items():
        for o in r.misses:
            top = "; ".join(f"{t.path}#{t.heading}" for t in o.top[:3])
            lines.append(f"miss {mode}: {o.query.id} doc@{o.doc_rank} sec@{o.section_rank}"
                         f" top: {top}")
    return "\n" + "\n".join(lines)
