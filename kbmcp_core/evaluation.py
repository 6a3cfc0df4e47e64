"""Retrieval metrics for ``kb-mcp eval``: recall@k, MRR@10, nDCG@10, document and section level."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

KS = (1, 5, 10)
METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")


@dataclass(frozen=True, slots=True)
class Expected:
    """Where an answer is: a document, and optionally its section, named by its heading
    and/or by a 1-based inclusive line range ``lines`` (a hit overlapping it is right)."""

    path: str
    heading: str | None = None
    lines: tuple[int, int] | None = None

    @property
    def sectioned(self) -> bool:
        """Scored at section level as well (a heading or a line range is given)."""
        return self.heading is not None or self.lines is not None


@dataclass(frozen=True, slots=True)
class GoldenQuery:
    id: str
    query: str
    expected: tuple[Expected, ...]
    kind: str | None = None


@dataclass(frozen=True, slots=True)
class Ranked:
    """One returned section, in rank order (its line range when it has one: PDF pages
    have none)."""

    path: str
    heading: str
    start_line: int | None = None
    end_line: int | None = None
    #: the lines of it that answer (``answer_lines``), when the retriever says
    answer_lines: tuple[int, int] | None = None


@dataclass(slots=True)
class QueryOutcome:
    query: GoldenQuery
    doc_rank: int | None
    section_rank: int | None
    top: list[Ranked] = field(default_factory=list)


def fold(text: str) -> str:
    """Case-fold and collapse whitespace (headings are compared this way)."""
    return re.sub(r"\s+", " ", text).strip().casefold()


def _scores(ranks: Sequence[int | None], n_expected: int) -> dict[str, float]:
    found = sorted(r for r in ranks if r is not None)
    out = {f"recall@{k}": sum(1 for r in found if r <= k) / n_expected for k in KS}
    first = next((r for r in found if r <= 10), None)
    out["mrr@10"] = 1.0 / first if first else 0.0
    dcg = sum(1.0 / math.log2(r + 1) for r in found if r <= 10)
    idcg = sum(1.0 / math.log2(r + 1) for r in range(1, min(n_expected, 10) + 1))
    out["ndcg@10"] = dcg / idcg if idcg else 0.0
    return out


def rank_query(
    q: GoldenQuery, ranked: Sequence[Ranked], clean: Callable[[str], str]
) -> tuple[dict[str, float], dict[str, float], QueryOutcome]:
    """Score one query at document level (distinct paths) and section level."""
    docs: list[str] = []
    for r in ranked:
        if r.path not in docs:
            docs.append(r.path)
    doc_ranks: list[int | None] = []
    sec_ranks: list[int | None] = []
    used_docs: set[int] = set()
    used_secs: set[int] = set()
    for e in q.expected:
        doc_ranks.append(_consume(
            (i for i, p in enumerate(docs, 1) if p == e.path and i not in used_docs), used_docs))
        if e.sectioned:
            sec_ranks.append(_consume(
                (i for i, r in enumerate(ranked, 1)
                 if i not in used_secs and section_hit(e, r, clean)), used_secs))
    n = len(q.expected)
    n_sec = sum(1 for e in q.expected if e.sectioned)
    outcome = QueryOutcome(q, min((r for r in doc_ranks if r), default=None),
                           min((r for r in sec_ranks if r), default=None), list(ranked[:5]))
    return _scores(doc_ranks, n), (_scores(sec_ranks, n_sec) if n_sec else {}), outcome


def section_hit(e: Expected, r: Ranked, clean: Callable[[str], str]) -> bool:
    """The returned section ``r`` is the expected one: same path, the same heading (after
    ``clean`` and ``fold``) when one is expected, and a line range overlapping ``lines``
    when those are expected (a hit without a line range never overlaps)."""
    if r.path != e.path:
        return False
    if e.heading is not None and fold(clean(r.heading)) != fold(clean(e.heading)):
        return False
    if e.lines is not None:
        if r.start_line is None:
            return False
        end = r.end_line if r.end_line is not None else r.start_line
        return r.start_line <= e.lines[1] and end >= e.lines[0]
    return True


def _consume(candidates: object, used: set[int]) -> int | None:
    for i in candidates:  # type: ignore[attr-defined]
        used.add(i)
        return int(i)
    return None


@dataclass(slots=True)
class EvalReport:
    mode: str
    n: int
    document: dict[str, float]
    section: dict[str, float]
    per_kind: dict[str, dict[str, dict[str, float]]]
    misses: list[QueryOutcome]
    #: queries per ``kind`` (the kind-less ones under "all"), in the golden file's order
    kind_counts: dict[str, int] = field(default_factory=dict)
    #: how often ``low_confidence`` was said, when the retriever says (``Retrieved``)
    flagged: Flagged | None = None
    #: how often the first hit's cited lines hold the answer (queries with ``lines``)
    cited: Cited | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "queries": self.n,
            "document": {k: round(v, 4) for k, v in self.document.items()},
            "section": {k: round(v, 4) for k, v in self.section.items()},
            "per_kind": {
                kind: {lvl: {k: round(v, 4) for k, v in m.items()} for lvl, m in levels.items()}
                for kind, levels in self.per_kind.items()
            },
            "queries_per_kind": dict(self.kind_counts),
            **({"low_confidence": self.flagged.as_dict()} if self.flagged else {}),
            **({"cited_lines": self.cited.as_dict()} if self.cited else {}),
            "misses": [
                {
                    "id": o.query.id,
                    "query": o.query.query,
                    "expected": [_expected_json(e) for e in o.query.expected],
                    "document_rank": o.doc_rank,
                    "section_rank": o.section_rank,
                    "top": [_ranked_json(r) for r in o.top],
                }
                for o in self.misses
            ],
        }


def _expected_json(e: Expected) -> dict[str, object]:
    out: dict[str, object] = {"path": e.path, "heading": e.heading}
    if e.lines is not None:
        out["lines"] = list(e.lines)
    return out


def _ranked_json(r: Ranked) -> dict[str, object]:
    out: dict[str, object] = {"path": r.path, "heading": r.heading}
    if r.start_line is not None:
        out["lines"] = [r.start_line, r.end_line]
    return out


@dataclass(frozen=True, slots=True)
class Retrieved:
    """What a retriever gives ``evaluate`` for one query: the ranked sections, and whether
    the response said ``low_confidence`` (None when the retriever does not say)."""

    ranked: Sequence[Ranked]
    low_confidence: bool | None = None


@dataclass(slots=True)
class Flagged:
    """How often responses were flagged ``low_confidence``: on the questions the knowledge
    base has no answer to (``expected: []``, should be flagged) and on the others."""

    no_answer: int = 0
    no_answer_flagged: int = 0
    answerable: int = 0
    answerable_flagged: int = 0

    def add(self, answerable: bool, flagged: bool) -> None:
        if answerable:
            self.answerable += 1
            self.answerable_flagged += flagged
        else:
            self.no_answer += 1
            self.no_answer_flagged += flagged

    def as_dict(self) -> dict[str, object]:
        return {
            "no_answer_queries": self.no_answer,
            "no_answer_flagged": round(self.no_answer_flagged / self.no_answer, 4)
            if self.no_answer else None,
            "answerable_queries": self.answerable,
            "answerable_flagged": round(self.answerable_flagged / self.answerable, 4)
            if self.answerable else None,
        }


@dataclass(slots=True)
class Cited:
    """Whether the first hit's cited lines hold the answer, over the queries whose answer
    is given by ``lines``: its ``answer_lines`` (``held``), and its whole line range
    (``held_by_chunk``: what a hit cited before ``answer_lines``); and how long each is."""

    queries: int = 0
    held: int = 0
    held_by_chunk: int = 0
    span_lines: list[int] = field(default_factory=list)
    chunk_lines: list[int] = field(default_factory=list)

    def add(self, q: GoldenQuery, ranked: Sequence[Ranked]) -> None:
        wanted = [e for e in q.expected if e.lines is not None]
        if not wanted:
            return
        self.queries += 1
        first = ranked[0] if ranked else None
        if first is None or first.start_line is None:
            return
        whole = (first.start_line, first.end_line if first.end_line is not None
                 else first.start_line)
        span = first.answer_lines or whole
        self.span_lines.append(span[1] - span[0] + 1)
        self.chunk_lines.append(whole[1] - whole[0] + 1)
        self.held += any(_overlaps(first.path, span, e) for e in wanted)
        self.held_by_chunk += any(_overlaps(first.path, whole, e) for e in wanted)

    def as_dict(self) -> dict[str, object]:
        n = self.queries
        return {"queries": n,
                "first_hit_span_holds_answer": round(self.held / n, 4) if n else None,
                "first_hit_chunk_holds_answer": round(self.held_by_chunk / n, 4) if n else None,
                "median_span_lines": _median(self.span_lines),
                "median_chunk_lines": _median(self.chunk_lines)}


def _overlaps(path: str, span: tuple[int, int], e: Expected) -> bool:
    return (e.lines is not None and path == e.path and span[0] <= e.lines[1]
            and span[1] >= e.lines[0])


def _median(values: Sequence[int]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return float(ordered[mid]) if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def evaluate(
    mode: str,
    queries: Sequence[GoldenQuery],
    retrieve: Callable[[str], Sequence[Ranked] | Retrieved],
    clean: Callable[[str], str],
) -> EvalReport:
    """Run every query through ``retrieve`` and average the metrics over the queries with
    an answer; a query with ``expected: []`` only counts towards ``flagged`` (its response
    should say ``low_confidence``), as does every query whose retriever says."""
    doc_sum: dict[str, float] = dict.fromkeys(METRICS, 0.0)
    sec_sum: dict[str, float] = dict.fromkeys(METRICS, 0.0)
    n_sec = n_doc = 0
    kinds: dict[str, list[tuple[dict[str, float], dict[str, float]]]] = {}
    counts: dict[str, int] = {}
    misses: list[QueryOutcome] = []
    flagged = Flagged()
    cited = Cited()
    for q in queries:
        got = retrieve(q.query)
        ranked, low = (got.ranked, got.low_confidence) if isinstance(got, Retrieved) else (
            got, None)
        counts[q.kind or "all"] = counts.get(q.kind or "all", 0) + 1
        if low is not None:
            flagged.add(bool(q.expected), low)
        if not q.expected:
            continue
        d, s, outcome = rank_query(q, ranked, clean)
        cited.add(q, ranked)
        n_doc += 1
        for k in METRICS:
            doc_sum[k] += d[k]
            if s:
                sec_sum[k] += s[k]
        n_sec += 1 if s else 0
        kinds.setdefault(q.kind or "all", []).append((d, s))
        if outcome.doc_rank is None or outcome.doc_rank > 10 or (
            s and (outcome.section_rank is None or outcome.section_rank > 10)
        ):
            misses.append(outcome)
    per_kind = {
        kind: {
            "document": _mean([d for d, _ in rows]),
            "section": _mean([s for _, s in rows if s]),
        }
        for kind, rows in kinds.items()
    }
    return EvalReport(
        mode=mode,
        n=len(queries),
        document={k: v / n_doc for k, v in doc_sum.items()} if n_doc else {},
        section={k: v / max(n_sec, 1) for k, v in sec_sum.items()} if n_sec else {},
        per_kind=per_kind,
        misses=misses,
        kind_counts=counts,
        flagged=flagged if flagged.no_answer or flagged.answerable else None,
        cited=cited if cited.queries else None,
    )


def _mean(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {k: sum(r[k] for r in rows) / len(rows) for k in METRICS}


# --- saved runs: the metrics of a run, and the diff between two runs -------------------------

#: A drop smaller than this is float noise, never a regression (even with threshold 0).
_EPSILON = 1e-9

#: ``{mode: {"document": {metric: v}, "section": {...}, "per_kind": {kind: {level: {...}}}}}``
RunMetrics = dict[str, dict[str, object]]


def run_metrics(reports: Sequence[EvalReport]) -> RunMetrics:
    """The metrics of every mode that ran (no misses), as plain data to save or compare."""
    return {
        r.mode: {
            "document": dict(r.document),
            "section": dict(r.section),
            "per_kind": {kind: {lvl: dict(m) for lvl, m in levels.items()}
                         for kind, levels in r.per_kind.items()},
            **({"low_confidence": r.flagged.as_dict()} if r.flagged else {}),
            **({"cited_lines": r.cited.as_dict()} if r.cited else {}),
        }
        for r in reports
    }


@dataclass(frozen=True, slots=True)
class MetricDiff:
    """One metric of one mode/level (``kind`` None = overall) in a saved run and now.
    ``saved`` or ``now`` is None when only one run measured it (then ``delta`` is None)."""

    metric: str
    mode: str
    level: str
    kind: str | None
    saved: float | None
    now: float | None
    delta: float | None
    regressed: bool

    def as_dict(self) -> dict[str, object]:
        return {"metric": self.metric, "mode": self.mode, "level": self.level,
                "kind": self.kind, "saved": self.saved, "now": self.now,
                "delta": self.delta, "regressed": self.regressed}


def _flatten(metrics: Mapping[str, object]) -> dict[tuple[str, str, str | None, str], float]:
    """``(mode, level, kind, metric) -> value``; entries that are not numbers are skipped."""
    out: dict[tuple[str, str, str | None, str], float] = {}

    def put(mode: str, level: str, kind: str | None, values: object) -> None:
        if isinstance(values, Mapping):
            for name, v in values.items():
                if isinstance(v, int | float) and not isinstance(v, bool):
                    out[(mode, level, kind, str(name))] = float(v)

    for mode, levels in metrics.items():
        if not isinstance(levels, Mapping):
            continue
        for level in ("document", "section"):
            put(mode, level, None, levels.get(level))
        kinds = levels.get("per_kind")
        if isinstance(kinds, Mapping):
            for kind, by_level in kinds.items():
                if isinstance(by_level, Mapping):
                    for level in ("document", "section"):
                        put(mode, level, str(kind), by_level.get(level))
    return out


def compare_metrics(saved: Mapping[str, object], now: Mapping[str, object],
                    threshold: float) -> tuple[list[MetricDiff], bool]:
    """Diff two ``run_metrics`` values. A metric regressed when it dropped by more than
    ``threshold``; the flag says whether any did. Metrics only one run has are listed with
    no delta and never count as a regression."""
    if threshold < 0:
        raise ValueError("threshold must be >= 0")
    before, after = _flatten(saved), _flatten(now)
    mode_order = list(dict.fromkeys([k[0] for k in after] + [k[0] for k in before]))
    metric_order = {m: i for i, m in enumerate(METRICS)}

    def order(key: tuple[str, str, str | None, str]) -> tuple[int, int, str, int, str]:
        mode, level, kind, metric = key
        return (mode_order.index(mode), 0 if kind is None else 1, kind or "",
                0 if level == "document" else 1, f"{metric_order.get(metric, 99):02d}{metric}")

    rows: list[MetricDiff] = []
    for key in sorted(before.keys() | after.keys(), key=order):
        mode, level, kind, metric = key
        s, n = before.get(key), after.get(key)
        delta = n - s if s is not None and n is not None else None
        regressed = delta is not None and -delta > threshold + _EPSILON
        rows.append(MetricDiff(metric, mode, level, kind, s, n, delta, regressed))
    return rows, any(r.regressed for r in rows)
