"""Why a first hit's cited span misses the answer: each question with line-level answers
classified by what went wrong (decision 0056, eighth addendum).

* ``hit``: the first hit's ``answer_lines`` overlap the answer;
* ``span`` (a): the first hit's chunk holds the answer, its span chosen inside it does not
  (``kbmcp_core.answer_lines``);
* ``section`` (b): the first hit is the right document, another of its chunks (the
  sections step, ``kbmcp_core.inside_documents``);
* ``document`` (c): the first hit is another document (ranking).

For each miss it also says where the right document's first chunk and the answering chunk
were ranked, and whether the document's first chunk would have cited the answer::

    python -m benchmarks.span_misses --config kb.toml --golden golden.yml [--limit 50]
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kbmcp_core.evaluation import Expected

Lines = tuple[int, int]
CLASSES = ("hit", "span", "section", "document")


@dataclass(frozen=True, slots=True)
class Hit:
    """What a search hit cites: its document, its chunk's lines and its ``answer_lines``."""

    path: str
    chunk: Lines | None
    span: Lines | None


def _overlaps(a: Lines | None, b: Lines | None) -> bool:
    return a is not None and b is not None and a[0] <= b[1] and a[1] >= b[0]


def _holds(hit: Hit, wanted: Sequence[Expected], lines: Lines | None) -> bool:
    return any(hit.path == e.path and _overlaps(lines, e.lines) for e in wanted)


def classify(hits: Sequence[Hit], expected: Sequence[Expected]) -> str:
    """One of ``CLASSES`` for a question's hits (best first) and its line-level answers."""
    wanted = [e for e in expected if e.lines is not None]
    if not hits:
        return "document"
    first = hits[0]
    if _holds(first, wanted, first.span or first.chunk):
        return "hit"
    if _holds(first, wanted, first.chunk):
        return "span"
    return "section" if any(first.path == e.path for e in wanted) else "document"


def ranks(hits: Sequence[Hit], expected: Sequence[Expected]) -> tuple[int | None, int | None,
                                                                      bool]:
    """The 1-based rank of the right document's first hit and of the first hit whose chunk
    holds the answer, and whether that document's first hit cites the answer."""
    wanted = [e for e in expected if e.lines is not None]
    paths = {e.path for e in wanted}
    doc = next((i for i, h in enumerate(hits) if h.path in paths), None)
    chunk = next((i for i, h in enumerate(hits) if _holds(h, wanted, h.chunk)), None)
    cited = doc is not None and _holds(hits[doc], wanted, hits[doc].span or hits[doc].chunk)
    return (None if doc is None else doc + 1, None if chunk is None else chunk + 1, cited)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, required=True, help="The set's kb.toml.")
    parser.add_argument("--golden", type=Path, required=True, help="Its golden YAML.")
    parser.add_argument("--limit", type=int, default=50, help="Hits per search (eval's 50).")
    args = parser.parse_args(argv)

    from kbmcp_adapters.app.bootstrap import bootstrap
    from kbmcp_adapters.app.config import build_settings
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase
    from kbmcp_adapters.evaluation.golden import load_golden

    counts: Counter[str] = Counter()
    kb = KnowledgeBase(bootstrap(build_settings(args.config)))
    try:
        for q in load_golden(args.golden):
            if not any(e.lines is not None for e in q.expected):
                continue
            res = kb.search(q.query, limit=args.limit)
            hits = [Hit(h.path, None if h.start_line is None or h.end_line is None
                        else (h.start_line, h.end_line), h.answer_lines) for h in res.results]
            kind = classify(hits, q.expected)
            counts[kind] += 1
            if kind != "hit":
                doc, chunk, cited = ranks(hits, q.expected)
                first = hits[0] if hits else None
                print(f"{kind:<8} {q.id}: document rank {doc}, answering chunk rank {chunk}"
                      f"{', its first hit cites it' if cited else ''}; first hit "
                      f"{first.path if first else None} {first.chunk if first else None} — "
                      f"{q.query[:60]}")
    finally:
        kb.close()
    total = sum(counts.values())
    print(f"{args.golden}: " + ", ".join(f"{c} {counts[c]}" for c in CLASSES)
          + f" of {total}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
