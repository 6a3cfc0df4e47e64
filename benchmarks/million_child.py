"""The children of ``benchmarks.million``: ``python -m benchmarks.million_child TASK JSON``
with TASK ``index``, ``search``, ``paired``, ``keywords``, ``tables``, ``pooled`` or
``recall``, each on the index one config file names, with the stand-in embedder (or, with
``KB_BENCH_REAL_MODEL=1``, the real model: the one run that checks the stand-in changes
nothing else); the numbers go back through ``measure.write_result``."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from benchmarks.measure import percentile, write_result

if TYPE_CHECKING:
    from kbmcp_adapters.vectors.lance_store import LanceVectorStore


#: Set to "1", every child embeds with the real model instead of the stand-in.
REAL_MODEL_ENV = "KB_BENCH_REAL_MODEL"


def _embedder(settings: Any) -> Any:
    """The stand-in over the settings' model, or the model itself (``REAL_MODEL_ENV``)."""
    from kbmcp_adapters.app.bootstrap import real_embedder

    model = real_embedder(settings)
    if os.environ.get(REAL_MODEL_ENV) == "1":
        return model
    from benchmarks.standin import HashEmbedder

    return HashEmbedder(model)


def _open(config: str) -> Any:
    from kbmcp_adapters.app.bootstrap import bootstrap, settings_for
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase

    settings = settings_for(config=Path(config))
    return KnowledgeBase(bootstrap(settings, embedder=_embedder(settings)))


def _parts(config: str) -> tuple[Any, Any, Any, Any]:
    """(knowledge base, its store, its vectors, its stand-in embedder), so the legs of a
    search can be timed on the very objects the facade uses."""
    from kbmcp_adapters.app.bootstrap import bootstrap, real_store, real_vectors, settings_for
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase

    settings = settings_for(config=Path(config))
    embedder = _embedder(settings)
    store = real_store(settings)
    vectors = real_vectors(settings, embedder.dimension)
    kb = KnowledgeBase(bootstrap(settings, store=store, vectors=vectors, embedder=embedder))
    return kb, store, vectors, embedder


def index(config: str) -> dict[str, Any]:
    """One index run, as ``kb-mcp index`` runs it; its summary and the index's size."""
    started = time.perf_counter()
    kb = _open(config)
    try:
        summary = kb.index(release_model=True)
        seconds = time.perf_counter() - started
        stats = kb.stats()
    finally:
        kb.close()  # the parser workers reaped: their CPU is the child's
    return {"seconds": seconds, "summary": summary.as_dict(), "documents": stats.documents,
            "chunks": stats.chunks}


def filters() -> dict[str, dict[str, Any]]:
    """The searches measured: unfiltered, and under a folder, a tag and a year."""
    from benchmarks.corpus import AREAS

    area = sorted(AREAS)[1]
    tag = AREAS[area][0].replace(" ", "-")
    return {"unfiltered": {}, "folder": {"path_globs": [f"{area}/**"]},
            "tag": {"tags_any": [tag]},
            "year": {"date_from": "2024-01-01", "date_to": "2024-12-31"}}


def search(config: str, queries: int, warmup: int) -> dict[str, Any]:
    """Hybrid searches through the facade, each query through every variant in a rotating
    order (a change of load favours none); p50/p95 per variant."""
    from benchmarks.corpus import queries as make_queries

    kb, store, vectors, embedder = _parts(config)
    pool = 50
    variants = filters()
    names = list(variants)
    texts = make_queries(queries + warmup, seed=47)
    for q in texts[:warmup]:
        for name in names:
            kb.search(q, **variants[name])
    samples: dict[str, list[float]] = {name: [] for name in names}
    hits: dict[str, int] = dict.fromkeys(names, 0)
    legs: dict[str, list[float]] = {"keywords": [], "vectors": []}
    for i, q in enumerate(texts[warmup:]):
        for name in names[i % len(names):] + names[:i % len(names)]:
            started = time.perf_counter()
            got = kb.search(q, **variants[name])
            samples[name].append(time.perf_counter() - started)
            hits[name] += len(got.results)
        # the unfiltered search's two legs on their own (their pool of 50)
        started = time.perf_counter()
        store.lexical_search(q, pool)
        legs["keywords"].append(time.perf_counter() - started)
        started = time.perf_counter()
        vectors.search(embedder.embed_query(q), pool)
        legs["vectors"].append(time.perf_counter() - started)
    kb.close()
    return {"variants": {name: _stats(s) | {"hits": hits[name]} for name, s in samples.items()},
            "legs": {name: _stats(s) for name, s in legs.items()}, "filters": variants}


def paired(config: str, queries: int, warmup: int) -> dict[str, Any]:
    """Each filtered hybrid search twice in turn (which goes first alternates), on the same
    objects: the vector leg filtered by the chunks' labels (LanceDB's prefilter on the
    indexed label columns) and by the allowed chunk ids as before them (the store's
    ``search_labelled`` answering None, as a store without labels does); p50/p95 per
    filter and way, and whether the two ways returned the same hits (decision 0058's
    addendum)."""
    from benchmarks.corpus import queries as make_queries

    kb, _store, vectors, _embedder = _parts(config)
    assert vectors.labelled(), "the vector table carries no labels: run `kb-mcp index` first"
    by_labels = vectors.search_labelled
    ways: dict[str, Callable[..., Any]] = {"labels": by_labels, "ids": lambda *_: None}
    variants = {name: spec for name, spec in filters().items() if spec}
    texts = make_queries(queries + warmup, seed=47)
    samples: dict[tuple[str, str], list[float]] = {
        (name, way): [] for name in variants for way in ways}
    same = dict.fromkeys(variants, 0)
    for i, q in enumerate(texts):
        for name, spec in variants.items():
            order = list(ways) if i % 2 == 0 else list(ways)[::-1]
            got = {}
            for way in order:
                vectors.search_labelled = ways[way]
                started = time.perf_counter()
                got[way] = [(h.chunk_id, round(h.score, 6)) for h in kb.search(q, **spec).results]
                if i >= warmup:
                    samples[(name, way)].append(time.perf_counter() - started)
            same[name] += i >= warmup and got["labels"] == got["ids"]
    vectors.search_labelled = by_labels
    kb.close()
    return {"variants": {f"{name} by {way}": _stats(s) for (name, way), s in samples.items()},
            "same_hits": same, "queries": queries, "filters": variants}


def keywords(config: str, queries: int, warmup: int, k: int = 10) -> dict[str, Any]:
    """Each filtered search with SQLite's keyword leg within its budget and with the whole
    query scored on every match the filter keeps (the budget lifted: the exact leg), in
    turn in one process (which goes first alternates): the keyword leg alone (its pool
    of 100) and the hybrid search through the facade, p50/p95 each way, and the budgeted
    one's recall@k of the exact one's hits (decision 0058's addendum "the keyword leg
    under a filter"). The first search of each filter, which reads the filter, is timed
    apart (``first_s``)."""
    from benchmarks.corpus import queries as make_queries
    from kbmcp_adapters.store import ranking
    from kbmcp_core.search_request import SearchDefaults, SearchRequest, resolve

    kb, store, _vectors, _embedder = _parts(config)
    budget: int = getattr(ranking, "KEYWORD_BUDGET")  # noqa: B009 - ranking's own copy
    ways = {"budget": budget, "exact": 1 << 62}
    variants = {name: spec for name, spec in filters().items() if spec}
    texts = make_queries(queries + warmup, seed=59)
    samples: dict[str, list[float]] = {}
    found: dict[str, list[float]] = {}
    first: dict[str, float] = {}
    for name, spec in variants.items():
        started = time.perf_counter()
        paths = store.matching_paths(resolve(SearchRequest.of("x", **spec),
                                             SearchDefaults()).documents)
        first[name] = time.perf_counter() - started
        for i, q in enumerate(texts):
            got: dict[str, tuple[list[int], list[int]]] = {}
            for way in (list(ways) if i % 2 == 0 else list(ways)[::-1]):
                setattr(ranking, "KEYWORD_BUDGET", ways[way])  # noqa: B010
                started = time.perf_counter()
                leg = [cid for cid, _ in store.lexical_search(q, 100, paths)]
                middle = time.perf_counter()
                hits = [h.chunk_id for h in kb.search(q, **spec).results]
                ended = time.perf_counter()
                got[way] = (leg[:k], hits)
                if i >= warmup:
                    samples.setdefault(f"{name} leg {way}", []).append(middle - started)
                    samples.setdefault(f"{name} hybrid {way}", []).append(ended - middle)
            if i >= warmup:
                for part, n in (("leg", 0), ("hybrid", 1)):
                    exact = got["exact"][n]
                    if exact:
                        found.setdefault(f"{name} {part}", []).append(
                            len(set(got["budget"][n]) & set(exact)) / len(exact))
    setattr(ranking, "KEYWORD_BUDGET", budget)  # noqa: B010
    kb.close()
    return {"variants": {key: _stats(s) for key, s in samples.items()},
            "recall_at_10": {key: statistics.fmean(v) for key, v in found.items()},
            "first_s": first, "queries": queries, "filters": variants}


def tables(config: str, queries: int, warmup: int) -> dict[str, Any]:
    """Each filtered search with SQLite's keyword leg checking its matches against the
    connection's table of the filter's chunk ids and against their JSON list in every
    statement (the code before the tables), in turn in one process (which goes first
    alternating): the keyword leg alone (the searcher's pool of 50) and the hybrid search,
    p50/p95 each way, in wall time and in the process's CPU time (``... cpu``: steadier
    than wall time on a loaded machine), and how many queries had the same hits both ways
    (decision 0058's addendum "the last 50 ms")."""
    from benchmarks.corpus import queries as make_queries
    from kbmcp_adapters.store import keyword_filter
    from kbmcp_core.search_request import SearchDefaults, SearchRequest, resolve

    kb, store, _vectors, _embedder = _parts(config)
    made = keyword_filter.id_table
    ways: dict[str, Callable[..., Any]] = {"table": made, "json": lambda *_: None}
    variants = {name: spec for name, spec in filters().items() if spec}
    texts = make_queries(queries + warmup, seed=61)
    samples: dict[str, list[float]] = {}
    same = dict.fromkeys(variants, 0)
    for name, spec in variants.items():
        paths = store.matching_paths(resolve(SearchRequest.of("x", **spec),
                                             SearchDefaults()).documents)
        for i, q in enumerate(texts):
            got = {}
            for way in (list(ways) if i % 2 == 0 else list(ways)[::-1]):
                setattr(keyword_filter, "id_table", ways[way])  # noqa: B010
                started, cpu = time.perf_counter(), time.process_time()
                leg = store.lexical_search(q, 50, paths)
                middle, cpu_middle = time.perf_counter(), time.process_time()
                hits = [(h.chunk_id, round(h.score, 6)) for h in kb.search(q, **spec).results]
                ended, cpu_ended = time.perf_counter(), time.process_time()
                got[way] = (leg, hits)
                if i >= warmup:
                    for key, took in ((f"{name} leg {way}", middle - started),
                                      (f"{name} hybrid {way}", ended - middle),
                                      (f"{name} leg {way} cpu", cpu_middle - cpu),
                                      (f"{name} hybrid {way} cpu", cpu_ended - cpu_middle)):
                        samples.setdefault(key, []).append(took)
            same[name] += i >= warmup and got["table"] == got["json"]
    setattr(keyword_filter, "id_table", made)  # noqa: B010
    kb.close()
    return {"variants": {key: _stats(s) for key, s in samples.items()}, "same_hits": same,
            "queries": queries, "filters": variants}


def pooled(config: str, twin: str, queries: int, warmup: int, k: int = 10) -> dict[str, Any]:
    """A joint search of two collections (the index and ``twin``, a copy of it) with
    SQLite's pooled keyword legs within the keyword budget and with the budget lifted
    (every match scored, as the pooled legs did before decision 0058's addendum "SQLite's
    pooled keyword legs"), in turn in one process (which goes first alternates): the
    pooled legs alone (both stores' statistics, then each store's hits on their sum, one
    after the other; pool of 50) and the hybrid joint search (``search_collections``),
    p50/p95 in wall and CPU time each way; and how many queries' pooled leg over one
    collection has the single leg's top ``k`` (ids and order), and over the two the single
    leg's top ``k`` as its top ``2k`` (each chunk twice)."""
    from benchmarks.corpus import queries as make_queries
    from kbmcp_adapters.app.search_collections import search_collections
    from kbmcp_adapters.store import ranking
    from kbmcp_core.keyword_pool import pooled_relevance

    kb, store, _vectors, _embedder = _parts(config)
    kb2, store2, _vectors2, _embedder2 = _parts(twin)
    kbs = {"a": kb, "b": kb2}
    budget: int = getattr(ranking, "KEYWORD_BUDGET")  # noqa: B009 - ranking's own copy
    ways = {"budget": budget, "every match": 1 << 62}
    texts = make_queries(queries + warmup, seed=67)
    samples: dict[str, list[float]] = {}
    same: dict[str, int] = {f"{way} {n}": 0 for way in ways for n in ("one", "two")}
    pool = 50
    for i, q in enumerate(texts):
        setattr(ranking, "KEYWORD_BUDGET", budget)  # noqa: B010 - the single leg's own
        single = [cid for cid, _ in store.lexical_search(q, pool)][:k]
        for way in (list(ways) if i % 2 == 0 else list(ways)[::-1]):
            setattr(ranking, "KEYWORD_BUDGET", ways[way])  # noqa: B010
            clock = [(time.perf_counter(), time.process_time())]
            each = [s.keyword_statistics(q) for s in (store, store2)]
            counts = each[0] + each[1]
            clock.append((time.perf_counter(), time.process_time()))
            hits = [s.keyword_hits(q, pool, None, counts) for s in (store, store2)]
            clock.append((time.perf_counter(), time.process_time()))
            search_collections(kbs, q)
            clock.append((time.perf_counter(), time.process_time()))
            if i < warmup:
                continue
            for name, (a, b) in (("statistics", (0, 1)), ("hits", (1, 2)), ("legs", (0, 2)),
                                 ("hybrid", (2, 3))):
                samples.setdefault(f"{name} {way}", []).append(clock[b][0] - clock[a][0])
                samples.setdefault(f"{name} {way} cpu", []).append(clock[b][1] - clock[a][1])
            joint = pooled_relevance(((h.chunk_id * 2 + n, h) for n, found in enumerate(hits)
                                      for h in found), pool)
            own = store.keyword_hits(q, pool, None, store.keyword_statistics(q))
            alone = pooled_relevance(((h.chunk_id, h) for h in own), pool)
            same[f"{way} one"] += [cid for cid, _ in alone][:k] == single
            same[f"{way} two"] += {cid // 2 for cid, _ in joint[:2 * k]} == set(single)
    setattr(ranking, "KEYWORD_BUDGET", budget)  # noqa: B010
    kb.close()
    kb2.close()
    return {"variants": {key: _stats(s) for key, s in samples.items()},
            "same_top": same, "queries": queries, "k": k}


def _stats(samples: list[float]) -> dict[str, Any]:
    return {"n": len(samples), "p50_s": statistics.median(samples),
            "p95_s": percentile(sorted(samples), 95)}


def recall(config: str, queries: int, k: int = 10) -> dict[str, Any]:
    """recall@k of the vector search as the searcher runs it (its pool of 50, the table's
    approximate index if it has one) against exact cosine search over every vector (one
    pass over the table, all queries at once), unfiltered and under each filter of
    ``filters`` (exact: over the filter's allowed ids; decision 0058). A hit counts when
    its exact similarity is at least the k-th exact one (ties at the k-th place are all
    right answers)."""
    import numpy as np

    from benchmarks.corpus import queries as make_queries
    from kbmcp_adapters.app.bootstrap import real_store, real_vectors, settings_for
    from kbmcp_adapters.vectors import ann_policy
    from kbmcp_core.chunk_labels import label_filter
    from kbmcp_core.search_request import SearchDefaults, SearchRequest, resolve

    settings = settings_for(config=Path(config))
    embedder = _embedder(settings)
    store = real_vectors(settings, embedder.dimension)
    index = real_store(settings)
    allowed: dict[str, Any] = {"unfiltered": None}
    #: the same filters said on the chunks' labels, when the table carries them (0058)
    where: dict[str, Any] = {}
    for name, spec in filters().items():
        if spec:
            req = resolve(SearchRequest.of("x", **spec), SearchDefaults())
            allowed[name] = np.asarray(sorted(index.chunk_ids_for(
                index.matching_paths(req.documents))), dtype=np.int64)
            said = label_filter(req.documents)
            if said is not None and store.labelled():
                where[f"{name} by labels"] = (name, said)
    qs = np.asarray([embedder.embed_query(q) for q in make_queries(queries, seed=53)],
                    dtype=np.float32)
    qs /= np.maximum(np.linalg.norm(qs, axis=1, keepdims=True), 1e-12)
    approx: dict[str, list[list[tuple[int, float]]]] = {}
    seconds: dict[str, float] = {}
    for name, ids in allowed.items():
        started = time.perf_counter()
        approx[name] = [store.search(q.tolist(), 50, None if ids is None else ids.tolist())[:k]
                        for q in qs]
        seconds[name] = (time.perf_counter() - started) / len(qs)
    for name, (_base, said) in where.items():
        started = time.perf_counter()
        approx[name] = [(store.search_labelled(q.tolist(), 50, said) or [])[:k] for q in qs]
        seconds[name] = (time.perf_counter() - started) / len(qs)
    table = cast("LanceVectorStore", store)._existing()  # noqa: SLF001 - read it whole
    assert table is not None, "no vector table"
    best = {name: np.full((len(qs), k), -2.0, dtype=np.float32) for name in allowed}
    rows = 0
    for batch in table.search().select(["chunk_id", "vector"]).limit(None).to_batches(65_536):
        flat = batch.column("vector").flatten().to_numpy(zero_copy_only=False)
        matrix = flat.astype(np.float32).reshape(batch.num_rows, -1)
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        sims = qs @ matrix.T
        chunk_ids = batch.column("chunk_id").to_numpy()
        for name, ids in allowed.items():
            part = sims if ids is None else sims[:, np.isin(chunk_ids, ids)]
            both = np.concatenate([best[name], part], axis=1)
            best[name] = np.partition(both, -k, axis=1)[:, -k:]
        rows += batch.num_rows
    found: dict[str, float] = {}
    for name in [*allowed, *where]:
        kth = best[where[name][0] if name in where else name].min(axis=1)
        found[name] = statistics.fmean(
            sum(1 for _id, sim in hits if sim >= kth[i] - 1e-5) / min(k, max(1, len(hits)))
            for i, hits in enumerate(approx[name]))
    index.close()
    state = cast("LanceVectorStore", store).ann_state()
    trained = None if state is None else state[0]
    return {"recall_at_10": found["unfiltered"], "filtered_recall_at_10": found,
            "rows": rows, "index": state,
            "nprobes": None if trained is None else ann_policy.probes(trained),
            "ann_query_s": seconds["unfiltered"], "query_s": seconds, "queries": len(qs)}


TASKS: dict[str, Callable[..., dict[str, Any]]] = {
    "index": index, "search": search, "recall": recall, "paired": paired,
    "keywords": keywords, "tables": tables, "pooled": pooled}


def main(argv: list[str]) -> None:
    import logging

    logging.basicConfig(level=logging.ERROR)
    task, params = argv[0], json.loads(argv[1])
    write_result(TASKS[task](**params))


if __name__ == "__main__":
    main(sys.argv[1:])
