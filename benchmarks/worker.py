"""Child-process tasks of the benchmarks: `python -m benchmarks.worker TASK JSON-PARAMS`.

Each task runs in a fresh interpreter so its peak RSS and import costs are its own, and
hands its numbers back through ``measure.write_result``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks import rerank_bench
from benchmarks.corpus import edit_one
from benchmarks.measure import write_result


def _open(kb_path: str, standin: bool = False) -> Any:
    from kbmcp_adapters.app.bootstrap import bootstrap, real_embedder, settings_for
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase

    settings = settings_for(kb_path)
    if not standin:
        return KnowledgeBase(bootstrap(settings))
    from benchmarks.standin import HashEmbedder

    return KnowledgeBase(bootstrap(settings, embedder=HashEmbedder(real_embedder(settings))))


def _parts(kb_path: str) -> tuple[Any, Any, Any, Any]:
    """The knowledge base with the adapters it searches through, built here so their own
    calls can be timed on the very objects the facade uses: (kb, store, vectors, embedder).
    """
    from kbmcp_adapters.app.bootstrap import (
        bootstrap,
        real_embedder,
        real_store,
        real_vectors,
        settings_for,
    )
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase

    settings = settings_for(kb_path)
    embedder = real_embedder(settings)
    store = real_store(settings)
    vectors = real_vectors(settings, embedder.dimension)
    kb = KnowledgeBase(bootstrap(settings, store=store, vectors=vectors, embedder=embedder))
    return kb, store, vectors, embedder


def _timed_index(kb: str, *, standin: bool) -> dict[str, Any]:
    started = time.perf_counter()
    base = _open(kb, standin=standin)
    summary = base.index()
    seconds = time.perf_counter() - started
    stats = base.stats()
    return {
        "seconds": seconds,
        "summary": summary.as_dict(),
        "documents": stats.documents,
        "chunks": stats.chunks,
    }


class _Metered:
    """The embedder the index run uses, adding up the wall and CPU seconds (every thread
    of this process) spent inside its ``embed_documents`` calls: the run's embedding, so
    that the rest of its CPU time is kb-mcp's own. Everything else is the inner one's."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.wall_s = 0.0
        self.cpu_s = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed_documents(self, texts: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return self._inner.embed_documents(texts)
        finally:
            self.wall_s += time.perf_counter() - wall
            self.cpu_s += time.process_time() - cpu


def _cpu_now() -> float:
    """CPU seconds of this process (all its threads) and of its children it has reaped
    (the parser workers, once the knowledge base is closed)."""
    import resource

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def build(kb: str) -> dict[str, Any]:
    """Index with the stand-in embedder (a large index without the model's cost)."""
    return _timed_index(kb, standin=True)


def build_with_model(kb: str) -> dict[str, Any]:
    """Index with the stand-in's vectors, the real model loaded by the run's first
    embedding call and run there once on a full batch of texts as long as its window
    (``benchmarks.index_rss``); released when a ``kb-mcp index`` run releases it."""
    from benchmarks.standin import HashEmbedder
    from kbmcp_adapters.app.bootstrap import bootstrap, real_embedder, settings_for
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase

    settings = settings_for(kb)
    real = real_embedder(settings)
    ran: list[int] = []

    class ModelLoaded(HashEmbedder):
        def embed_documents(self, texts: Any) -> Any:
            if not ran:
                ran.append(len(real.embed_documents(window_long(texts, real.max_tokens,
                                                                settings.embedding_batch_size))))
            return super().embed_documents(texts)

        def release(self) -> None:  # what ``kb-mcp index`` asks of the real model
            release = getattr(real, "release", None)
            if release is not None:
                release()

    started = time.perf_counter()
    base = KnowledgeBase(bootstrap(settings, embedder=ModelLoaded(real)))
    summary = base.index(release_model=True)  # as ``kb-mcp index`` runs it
    seconds = time.perf_counter() - started
    stats = base.stats()
    return {"seconds": seconds, "summary": summary.as_dict(), "documents": stats.documents,
            "chunks": stats.chunks, "model_texts": sum(ran), "model": real.model_id}


def window_long(texts: list[str], window: int, count: int) -> list[str]:
    """``count`` texts made of ``texts``' words, each at least ``window`` words long: the
    model truncates them to its window, the longest a chunk can be. A call of the run
    hands over its texts shortest first (the facade's stop-check groups), and the model's
    memory grows with the longest text it has run, so its first call's own texts would
    leave out what the longest chunks of the run add (about 40 MB, pool route)."""
    words = " ".join(texts).split() or ["word"]
    out = []
    for i in range(count):
        start = (i * 7) % len(words)
        rolled = words[start:] + words[:start]
        out.append(" ".join((rolled * (window // len(rolled) + 1))[:window]))
    return out


def index(kb: str) -> dict[str, Any]:
    """A full index with the real default model: open + index, timed in-process, in wall
    and CPU seconds (this process and its parser workers), and the share of both spent
    inside the embedder's calls. kb-mcp's imports are inside the timed part, as before."""
    cpu, started = _cpu_now(), time.perf_counter()
    from kbmcp_adapters.app.bootstrap import bootstrap, real_embedder, settings_for
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase

    settings = settings_for(kb)
    metered = _Metered(real_embedder(settings))
    base = KnowledgeBase(bootstrap(settings, embedder=metered))
    summary = base.index()
    seconds = time.perf_counter() - started
    stats = base.stats()
    base.close()  # stops (and reaps) the parser workers, so their CPU is counted
    cpu_s = _cpu_now() - cpu
    return {
        "seconds": seconds,
        "cpu_s": cpu_s,
        "embed_wall_s": metered.wall_s,
        "embed_cpu_s": metered.cpu_s,
        "summary": summary.as_dict(),
        "documents": stats.documents,
        "chunks": stats.chunks,
    }


def embed_only(kb: str) -> dict[str, Any]:
    """The floor of a full index: embed exactly the chunk texts the index holds, in one call
    to the same embedder (same model, batch size, threads), the model already loaded."""
    from kbmcp_core.models import vector_text_of

    base, store, _vectors, embedder = _parts(kb)
    chunks = store.get_chunks(store.chunk_ids())
    ordered = sorted(chunks.values(), key=lambda c: (c.document_path, c.start_line or 0, c.id))
    # what the run embeds: each distinct text once, its folders, trail and prose (0056)
    texts = list(dict.fromkeys(vector_text_of(c.heading_path, c.content, c.document_path)
                               for c in ordered))
    started = time.perf_counter()
    embedder.embed_documents(["warm up the model"])
    load = time.perf_counter() - started
    tokens = sum(embedder.count_tokens(texts))
    started, cpu = time.perf_counter(), time.process_time()
    vectors = embedder.embed_documents(texts)
    seconds = time.perf_counter() - started
    cpu_s = time.process_time() - cpu
    assert len(vectors) == len(texts)
    return {
        "seconds": seconds,
        "cpu_s": cpu_s,
        "model_load_s": load,
        "texts": len(texts),
        "tokens": tokens,
        "batch_size": base.settings.embedding_batch_size,
    }


def nochange(kb: str, runs: int) -> dict[str, Any]:
    """No-change re-index through the library: the first call in a fresh process (imports
    included), then ``runs`` more in the same warm process."""
    started = time.perf_counter()
    base = _open(kb)
    first = base.index()
    first_s = time.perf_counter() - started
    assert first.added == first.updated == first.deleted == 0, first.line()
    warm = []
    for _ in range(runs):
        started = time.perf_counter()
        summary = base.index()
        warm.append(time.perf_counter() - started)
    return {
        "first_s": first_s,
        "warm_s": warm,
        "scanned": summary.scanned,
        "unchanged": summary.unchanged,
    }


def single_change(kb: str, edits: list[int]) -> dict[str, Any]:
    """Edit one file, re-index; the model is loaded first (a long-lived process, as in the
    server). Each edit is timed twice: a full scan, and the watcher's route (``paths=``)."""
    base = _open(kb)
    base.warm_up()
    root = Path(kb)
    full, targeted = [], []
    for nth in edits:
        edit_one(root, nth)
        started = time.perf_counter()
        summary = base.index()
        full.append(time.perf_counter() - started)
        assert summary.updated == 1, summary.line()
        rel = edit_one(root, nth + 1).relative_to(root).as_posix()
        started = time.perf_counter()
        summary = base.index(paths=[rel])
        targeted.append(time.perf_counter() - started)
        assert summary.updated == 1, summary.line()
    return {"full_scan_s": full, "paths_s": targeted}


def search(kb: str, queries: list[str], warmup: int) -> dict[str, Any]:
    """Warm search latency through the library, and its raw parts measured per query in the
    same process: query embedding, one k-NN, one lexical query (same pool size as search)."""
    base, store, vectors, embedder = _parts(kb)
    s = base.settings
    pool = max(50, s.search_default_limit * s.search_chunks_per_document * 5)
    for q in queries[:warmup]:
        base.search(q)
    full: list[float] = []
    embed: list[float] = []
    knn: list[float] = []
    lexical: list[float] = []
    hits = 0

    def timed(fn: Callable[[], Any], into: list[float]) -> Any:
        started = time.perf_counter()
        out = fn()
        into.append(time.perf_counter() - started)
        return out

    def parts(q: str) -> None:
        qv = timed(lambda: embedder.embed_query(q), embed)
        timed(lambda: vectors.search(qv, pool), knn)
        timed(lambda: store.lexical_search(q, pool), lexical)

    raw_fts = _raw_fts(base.settings.sqlite_path, pool)
    fts: list[float] = []
    # the paragraph step's model runs (decision 0028, session 11), timed where the search
    # makes them: a raw part of its work, as the query embedding is
    paragraphs: list[float] = []
    in_search: list[float] = []
    read_spans = getattr(embedder, "embed_spans", None)
    if read_spans is not None:
        def timed_spans(items: Any) -> Any:
            return timed(lambda: read_spans(items), in_search)

        embedder.embed_spans = timed_spans

    def whole(q: str) -> int:
        in_search.clear()
        found = len(timed(lambda: base.search(q), full).results)
        paragraphs.append(sum(in_search))
        return found

    for i, q in enumerate(queries[warmup:]):
        if i % 2:  # alternate the order so neither side always runs on the warmer cache
            parts(q)
            hits += whole(q)
        else:
            hits += whole(q)
            parts(q)
        if raw_fts is not None:
            timed(partial(raw_fts, q), fts)
    return {
        "search_s": full,
        "embed_s": embed,
        "knn_s": knn,
        "lexical_s": lexical,
        "paragraphs_s": paragraphs if read_spans is not None else [],
        "raw_fts_s": fts,
        "pool": pool,
        "hits": hits,
        "chunks": base.stats().chunks,
    }


def _raw_fts(db: Path, limit: int) -> Callable[[str], int] | None:
    """One bare FTS5 BM25 query on the word index (no weighting, no merging), through
    the stdlib sqlite3 driver: what a lexical lookup costs at the very least. None when
    the index layout is not the one this knows."""
    import sqlite3

    try:
        from kbmcp_adapters.store.lexical import compile_query
        from kbmcp_adapters.store.ranking import bm25_score
        from kbmcp_adapters.store.tables import FTS_WORDS
    except ImportError:
        return None
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
    sql = (  # the store's own BM25 expression and weights
        f"SELECT rowid, {bm25_score(FTS_WORDS)} AS score FROM {FTS_WORDS} "
        f"WHERE {FTS_WORDS} MATCH ? ORDER BY score DESC LIMIT ?"
    )

    def run(q: str) -> int:
        words = compile_query(q).words
        return len(conn.execute(sql, (words, limit)).fetchall()) if words else 0

    try:
        run("probe query")
    except sqlite3.Error:
        return None
    return run


TASKS: dict[str, Callable[..., dict[str, Any]]] = {
    "build": build,
    "build_with_model": build_with_model,
    "index": index,
    "embed_only": embed_only,
    "nochange": nochange,
    "single_change": single_change,
    "search": search,
    "rerank": rerank_bench.latency,
}


def main(argv: list[str]) -> None:
    import logging

    logging.basicConfig(level=logging.ERROR)
    task, params = argv[0], json.loads(argv[1]) if len(argv) > 1 else {}
    write_result(TASKS[task](**params))


if __name__ == "__main__":
    main(sys.argv[1:])
