"""Flat tails and scale (issue 14, items 3 and 4): search latency percentiles on generated
indexes written straight into the store (no parsing, no model: the stand-in hashing
embedder gives the vectors), and the vector leg at 100k chunks with LanceDB's ANN index.

Run alone: ``python -m benchmarks.tails [--quick] [--work DIR] [--filters-only]``
(``--filters-only``: the 10k-document searches only, no 100k-chunk vector leg);
``benchmarks.run`` calls ``measure`` as its ``tails`` step.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from benchmarks.corpus import AREAS, _Writer, queries
from benchmarks.measure import own_peak_rss_mb, percentile

#: Dimension of the stand-in vectors (the default model's).
DIMENSION = 384


def say(message: str) -> None:
    print(f"[tails] {message}", file=sys.stderr, flush=True)


def _records(docs: int, chunks_per_doc: int, seed: int) -> Any:
    """(DocumentRecord, [ChunkRecord]) pairs; chunk ids 1.. in order. Every document has
    tags, a date, a topic and a category, spread so each filter keeps about a tenth."""
    from kbmcp_core.models import ChunkRecord, DocumentRecord

    rng = random.Random(seed)
    areas = sorted(AREAS)
    next_id = 1
    for d in range(docs):
        area = areas[d % len(areas)]
        w = _Writer(rng, area)
        nouns = w.area_nouns
        title = f"{rng.choice(nouns)} {d}"
        year = 2016 + d % 10
        doc = DocumentRecord(
            path=f"{area}/batch-{d // 500:03d}/note-{d:06d}.md", title=title,
            content_hash=hashlib.sha256(f"{seed}:{d}".encode()).hexdigest(),
            size_bytes=1000, date=f"{year}-{1 + d % 12:02d}-{1 + d % 28:02d}",
            topic=area, category=f"cat{d % 10}",
            tags=tuple(sorted({f"t{d % 10}", rng.choice(nouns).replace(" ", "-")})),
            metadata={}, last_indexed="2026-01-01T00:00:00Z")
        chunks = []
        for o in range(chunks_per_doc):
            body = w.paragraph()
            chunks.append(ChunkRecord(
                id=next_id, ordinal=o, heading=title, heading_path=(title,), content=body,
                text_hash=hashlib.sha256(body.encode()).hexdigest(), start_line=1 + o,
                end_line=2 + o, page=None))
            next_id += 1
        yield doc, chunks


def build(db: Path, vectors: Path | None, docs: int, chunks_per_doc: int,
          seed: int = 5) -> dict[str, Any]:
    """Write a generated index (and its stand-in vectors when ``vectors`` is given)."""
    from kbmcp_adapters.store.sql_store import SqlIndexStore
    from kbmcp_adapters.vectors.lance_store import LanceVectorStore
    from tests.hashing_embedder import HashingEmbedder

    started = time.perf_counter()
    embedder = HashingEmbedder(dimension=DIMENSION)
    lance = None if vectors is None else LanceVectorStore(vectors, DIMENSION)
    ids: list[int] = []
    texts: list[str] = []
    with SqlIndexStore(f"sqlite:///{db}", create=True) as store:
        for doc, chunks in _records(docs, chunks_per_doc, seed):
            store.write_document(doc, chunks)
            ids += [c.id for c in chunks]
            texts += [c.content for c in chunks]
            if lance is not None and len(ids) >= 5000:
                lance.add(ids, embedder.embed_documents(texts))
                ids, texts = [], []
    if lance is not None and ids:
        lance.add(ids, embedder.embed_documents(texts))
    if lance is not None:
        lance.compact()
    return {"documents": docs, "chunks": docs * chunks_per_doc,
            "build_seconds": time.perf_counter() - started}


def _latencies(fn: Callable[[Any], object], texts: Sequence[Any], warmup: int
               ) -> dict[str, float]:
    for q in texts[:warmup]:
        fn(q)
    samples = []
    for q in texts:
        t = time.perf_counter()
        fn(q)
        samples.append(time.perf_counter() - t)
    return _summary(samples)


def _interleaved(variants: dict[str, Callable[[str], object]], texts: list[str],
                 warmup: int) -> dict[str, dict[str, float]]:
    """Each query through every variant, in an order that rotates from query to query, so
    a change of the machine's load or a warmer cache favours none of them."""
    names = list(variants)
    for q in texts[:warmup]:
        for name in names:
            variants[name](q)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for i, q in enumerate(texts):
        for name in names[i % len(names):] + names[:i % len(names)]:
            t = time.perf_counter()
            variants[name](q)
            samples[name].append(time.perf_counter() - t)
    return {name: _summary(values) for name, values in samples.items()}


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p50, p95 = statistics.median(ordered), percentile(ordered, 95)
    return {"n": len(ordered), "p50_ms": p50 * 1000, "p95_ms": p95 * 1000,
            "p95_over_p50": p95 / p50 if p50 else 0.0}


def searcher(db: Path, vectors: Path) -> Any:
    from kbmcp_adapters.parsers.registry import build_registry
    from kbmcp_adapters.store.sql_store import SqlIndexStore
    from kbmcp_adapters.vectors.lance_store import LanceVectorStore
    from kbmcp_core.offer import OfferRules
    from kbmcp_core.search import Searcher
    from tests.hashing_embedder import HashingEmbedder

    store = SqlIndexStore(f"sqlite:///{db}")
    return Searcher(store, LanceVectorStore(vectors, DIMENSION),
                    HashingEmbedder(dimension=DIMENSION),
                    OfferRules(store, build_registry(["md"])))


#: The filters measured against the unfiltered search: each keeps about a tenth, and
#: every query of a run uses the same one (as an agent scoped to a tag or a folder does).
FILTERS: dict[str, dict[str, Any]] = {
    "tags": {"tags_any": ("t3",)},
    "dates": {"date_from": "2019-01-01", "date_to": "2019-12-31"},
    "globs": {"path_globs": ("*/note-*3.md",)},
    "topic": {"topic": sorted(AREAS)[3]},
    "category": {"category": "cat3"},
}


def _new_window(i: int) -> dict[str, Any]:
    """A date filter never seen before for query ``i``: a year from a day of its own
    (keeps about a tenth of the dated documents), so nothing a filter kept can be reused."""
    start = date(2017, 1, 1) + timedelta(days=i)
    return {"date_from": start.isoformat(),
            "date_to": (start + timedelta(days=364)).isoformat()}


def search_tails(db: Path, vectors: Path, n_queries: int, warmup: int) -> dict[str, Any]:
    """Hybrid and lexical p50/p95 unfiltered, and hybrid under each filter kind."""
    from kbmcp_core.search_request import Mode, SearchRequest

    s = searcher(db, vectors)
    texts = queries(n_queries, seed=23)
    def with_mode(mode: Mode) -> Callable[[str], object]:
        return lambda q: s.search(SearchRequest(q, 10, mode=mode))

    def with_filter(kwargs: dict[str, Any]) -> Callable[[str], object]:
        return lambda q: s.search(SearchRequest(q, 10, **kwargs))

    variants: dict[str, Callable[[str], object]] = {
        "hybrid": with_mode("hybrid"), "lexical": with_mode("lexical")}
    for name, kwargs in FILTERS.items():
        variants[f"hybrid_{name}"] = with_filter(kwargs)
    # a new filter for every query: the first search under a filter (informational)
    fresh = iter(range(10**6))
    variants["hybrid_new_filter"] = lambda q: s.search(
        SearchRequest(q, 10, **_new_window(next(fresh))))
    out: dict[str, Any] = _interleaved(variants, texts, warmup)
    s.store.close()
    return out


def _stand_in_matrix(n: int, seed: int) -> Any:
    """``n`` stand-in vectors (float32, unit length) of generated chunk texts."""
    import numpy as np

    from tests.hashing_embedder import HashingEmbedder

    embedder = HashingEmbedder(dimension=DIMENSION)
    parts, texts = [], []
    for _doc, chunks in _records((n + 1) // 2, 2, seed):
        texts += [c.content for c in chunks]
        if len(texts) >= 5000:
            parts.append(np.asarray(embedder.embed_documents(texts), dtype=np.float32))
            texts = []
    if texts:
        parts.append(np.asarray(embedder.embed_documents(texts), dtype=np.float32))
    return np.concatenate(parts)[:n]


def _vector_queries(n: int) -> list[list[float]]:
    from tests.hashing_embedder import HashingEmbedder

    embedder = HashingEmbedder(dimension=DIMENSION)
    return [embedder.embed_query(q) for q in queries(n, seed=31)]


def ann(work: Path, rows: int, n_queries: int, *, threshold: int | None = None) -> dict[str, Any]:
    """The vector leg at ``rows`` chunks: exact k-NN, then the IVF_PQ index ``compact``
    builds (when ``rows`` passes the threshold), its build time, query latency and
    recall@10 against the exact answer (k = 50, the searcher's pool), and the peak RSS of
    a fresh process that opens the table and runs the queries."""
    from kbmcp_adapters.vectors import ann_policy
    from kbmcp_adapters.vectors.lance_store import LanceVectorStore

    folder = work / f"ann-{rows}"
    minimum = ann_policy.ANN_MIN_ROWS if threshold is None else threshold
    store = LanceVectorStore(folder, DIMENSION, ann_min_rows=minimum)
    store.reset()
    say(f"vector leg: {rows} stand-in vectors")
    matrix = _stand_in_matrix(rows, seed=9)
    store.add(list(range(1, rows + 1)), matrix)
    del matrix
    qs = _vector_queries(n_queries)
    exact = [[cid for cid, _ in store.search(q, 50)] for q in qs]
    out: dict[str, Any] = {"rows": rows, "threshold": minimum,
                           "exact": _latencies(lambda q: store.search(q, 50), qs, 5)}
    started = time.perf_counter()
    store.compact()
    out["index_build_seconds"] = time.perf_counter() - started
    out["index"] = store.ann_state()
    approx = [[cid for cid, _ in store.search(q, 50)] for q in qs]
    out["ann"] = _latencies(lambda q: store.search(q, 50), qs, 5)
    out["recall_at_10"] = statistics.fmean(
        len(set(a[:10]) & set(e[:10])) / 10 for a, e in zip(approx, exact, strict=True))
    trained = rows if out["index"] is None else out["index"][0]
    out["nprobes"], out["refine_factor"] = ann_policy.probes(trained), ann_policy.ANN_REFINE
    # a fresh searching process with kb-mcp's cache budget, then with LanceDB's default
    # session (the settings before decision 0039), in the same run
    for key, extra in (("query_process", []), ("query_process_lancedb_default",
                                                ["--lancedb-default-session"])):
        child = subprocess.run(
            [sys.executable, "-m", "benchmarks.tails", "--rss-of", str(folder),
             "--queries", str(n_queries), *extra], capture_output=True, text=True,
            timeout=1800, check=True)
        out[key] = json.loads(child.stdout)
    out["query_process_rss_mb"] = out["query_process"]["max_rss_mb"]
    return out


def _rss_of(folder: Path, n_queries: int, lancedb_default: bool = False) -> dict[str, Any]:
    """Load the default model and embed the query texts with it, open the vector table as
    a server does, run the vector searches (5 warm-up), report peak RSS, the searches'
    latencies and what LanceDB's session caches. ``lancedb_default``: with LanceDB's
    default session (6 GiB index cache, 1 GiB metadata cache) instead of kb-mcp's budget
    (``lance_cache``). The stand-in table is searched with the stand-in query vectors
    (the model's would find nothing meaningful in it; they cost the same)."""
    from kbmcp_adapters.embedding.factory import make_embedder
    from kbmcp_adapters.embedding.fastembed_embedder import DEFAULT_MODEL_ID
    from kbmcp_adapters.vectors import lance_cache
    from kbmcp_adapters.vectors.lance_store import LanceVectorStore

    if lancedb_default:  # imported as kb-mcp imports it, so only the session differs
        from kbmcp_adapters.vectors.lance_import import import_lancedb

        import_lancedb()
        from lancedb import Session

        lance_cache._session = Session.default()
    model = make_embedder(DEFAULT_MODEL_ID)
    for text in queries(n_queries, seed=31):  # a server embeds every query
        model.embed_query(text)
    store = LanceVectorStore(folder, DIMENSION)
    out: dict[str, Any] = _latencies(lambda q: store.search(q, 50),
                                     _vector_queries(n_queries), 5)
    session = lance_cache.session()
    # this process's own peak: ru_maxrss would also hold the parent's (the step that
    # built 100,000 vectors in memory), which Linux carries over at fork and exec
    return {**out, "max_rss_mb": own_peak_rss_mb(),
            "ru_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "session_bytes": session.size_bytes, "session_items": session.approx_num_items}


def measure(work: Path, *, quick: bool = False, filters_only: bool = False) -> dict[str, Any]:
    """The ``tails`` step of ``benchmarks.run``; ``filters_only`` skips the 100k-chunk
    vector leg."""
    work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    results: dict[str, Any] = {"load_before": load}
    # 20k chunks (hybrid tails) over 10k documents (filters): two chunks a document
    docs, per_doc, n = (500, 2, 40) if quick else (10_000, 2, 200)
    db, vec = work / "tails.sqlite", work / "tails-vectors"
    say(f"building {docs * per_doc} chunks over {docs} documents")
    results["index"] = build(db, vec, docs, per_doc)
    results["search"] = search_tails(db, vec, n, warmup=10)
    # 100k chunks: the vector leg with the approximate index (a quick run: a tiny one)
    if not filters_only:
        results["ann"] = (ann(work, 3000, 20, threshold=1000) if quick
                          else ann(work, 100_000, 100))
    results["load_after"] = os.getloadavg()[0]
    return results


def rows(tails: Any) -> list[Any]:
    """The report's rows: measured / floor / ratio for each goal of issue 14 items 3-4."""
    from benchmarks.report import Row, verdict

    if not isinstance(tails, dict) or "search" not in tails:
        return []
    se, idx = tails["search"], tails["index"]
    hy = se["hybrid"]
    out = [
        Row(f"hybrid search p95 / p50, {idx['chunks']} chunks", f"{hy['p95_over_p50']:.2f}x",
            f"p50 {hy['p50_ms']:.1f} ms, p95 {hy['p95_ms']:.1f} ms (n={hy['n']})", "<= 2x",
            verdict(hy["p95_over_p50"] <= 2.0)),
    ]
    for name in FILTERS:
        f = se[f"hybrid_{name}"]
        ratio = f["p50_ms"] / hy["p50_ms"]
        out.append(Row(
            f"  filtered by {name} / unfiltered (p50), {idx['documents']} docs", f"{ratio:.2f}x",
            f"{f['p50_ms']:.1f} ms / {hy['p50_ms']:.1f} ms, p95 {f['p95_ms']:.1f} ms",
            "<= 1x", verdict(ratio <= 1.0)))
    if "hybrid_new_filter" in se:
        f = se["hybrid_new_filter"]
        out.append(Row(
            "  a new filter every query / unfiltered (p50)", f"{f['p50_ms'] / hy['p50_ms']:.2f}x",
            f"{f['p50_ms']:.1f} ms / {hy['p50_ms']:.1f} ms, p95 {f['p95_ms']:.1f} ms"))
    an = tails.get("ann")
    if isinstance(an, dict) and "ann" in an:
        out += [
            Row(f"vector leg, {an['rows']} chunks, ANN p50", f"{an['ann']['p50_ms']:.1f} ms",
                f"p95 {an['ann']['p95_ms']:.1f} ms; exact p50 {an['exact']['p50_ms']:.1f} ms, "
                f"p95 {an['exact']['p95_ms']:.1f} ms"),
            Row("  recall@10 of ANN / exact", f"{an['recall_at_10']:.3f}",
                f"nprobes {an['nprobes']}, refine {an['refine_factor']}", ">= 0.95",
                verdict(an["recall_at_10"] >= 0.95)),
            Row("  ANN index build (compact)", f"{an['index_build_seconds']:.1f} s",
                f"threshold {an['threshold']} rows"),
            Row("  peak RSS of a process searching it", f"{an['query_process_rss_mb']:.0f} MB",
                _with_default_session(an), "<= 1024 MB",
                verdict(an["query_process_rss_mb"] <= 1024)),
        ]
    return out


def _with_default_session(an: dict[str, Any]) -> str:
    """The searching process's p50/p95 and cache, and the same with LanceDB's default."""
    if "query_process" not in an:
        return ""
    now, old = an["query_process"], an["query_process_lancedb_default"]
    return (f"p50 {now['p50_ms']:.0f} / p95 {now['p95_ms']:.0f} ms, cache "
            f"{now['session_bytes'] / 1e6:.1f} MB; LanceDB's default session "
            f"{old['max_rss_mb']:.0f} MB, p50 {old['p50_ms']:.0f} / p95 {old['p95_ms']:.0f} ms")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.tails", description=__doc__)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--work", type=Path)
    p.add_argument("--filters-only", action="store_true",
                   help="only the searches at 10k documents (no 100k-chunk vector leg)")
    p.add_argument("--rss-of", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--queries", type=int, default=100, help=argparse.SUPPRESS)
    p.add_argument("--lancedb-default-session", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.rss_of is not None:
        print(json.dumps(_rss_of(args.rss_of, args.queries, args.lancedb_default_session)))
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="kb-tails-"))
    print(json.dumps(measure(work, quick=args.quick, filters_only=args.filters_only),
                     indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
