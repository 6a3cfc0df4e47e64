"""Embedding throughput of the default model before and after issue 29.1, in one run.

Three routes run in fresh child processes, alternating, over the same texts: the
repository's own Markdown pages cut into paragraphs of at most ~150 words (the size of a
chunk). ``default`` ("before") is the packaged file in length-bucketed batches: the default
model and route when the issue was filed; ``pooled`` the same file one text per run,
several runs at once on one-thread sessions (the same vectors; the default route from
decision 0044's addendum until 0046); ``integer`` ("after") the integer copy, the default
model for a new index since decision 0046. Each child loads its model, warms it up on one
short text (for the integer model this also makes or finds its copy, which is not timed),
then times one ``embed_documents`` call over every text (wall and process CPU). Target for
the new default against ``default``: at least 1.5x the chunks per second.

``python -m benchmarks.embed_speed child JSON`` is the child's entry point.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.measure import REPO, run_child, write_result
from benchmarks.report import Row, verdict

TARGET = 1.5
WORDS_PER_TEXT = 150


def texts(count: int) -> list[str]:
    """``count`` paragraph texts from docs/ and README.md (deterministic order)."""
    out: list[str] = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        words: list[str] = []
        for paragraph in path.read_text(encoding="utf-8").split("\n\n"):
            words += paragraph.split()
            if len(words) >= 40:
                out.append(" ".join(words[:WORDS_PER_TEXT]))
                words = []
    return out[:count]


def measure(work: Path, quick: bool = False) -> dict[str, Any]:
    """Seconds to embed the same texts with each model, in alternating fresh children."""
    from kbmcp_adapters.embedding.fastembed_embedder import DEFAULT_MODEL_ID, PACKAGED_MODEL_ID

    sample = texts(48 if quick else 600)
    rounds = 1 if quick else 3
    cache = work / "embed-speed-models"
    data = work / "embed-speed-texts.json"
    data.write_text(json.dumps(sample), encoding="utf-8")
    routes = (("default", PACKAGED_MODEL_ID, False), ("pooled", PACKAGED_MODEL_ID, True),
              ("integer", DEFAULT_MODEL_ID, True))
    runs: dict[str, list[dict[str, Any]]] = {key: [] for key, _, _ in routes}
    for _ in range(rounds):
        for key, model, pool in routes:
            params = {"model": model, "cache": str(cache), "texts": str(data), "pool": pool}
            child = run_child([sys.executable, "-m", "benchmarks.embed_speed", "child",
                               json.dumps(params)])
            runs[key].append({**child.data, "rss_mb": child.max_rss_mb})
    default, pooled, integer = (statistics.median(r["seconds"] for r in runs[key])
                                for key in ("default", "pooled", "integer"))
    pairs = [d["seconds"] / i["seconds"]
             for d, i in zip(runs["default"], runs["integer"], strict=True)]
    pool_pairs = [d["seconds"] / p["seconds"]
                  for d, p in zip(runs["default"], runs["pooled"], strict=True)]
    cpu = {key: statistics.median(r["cpu_s"] for r in runs[key]) for key in runs}
    return {"texts": len(sample), "runs": runs, "default_s": default, "integer_s": integer,
            "ratio": default / integer, "pair_ratios": pairs,
            "pooled_s": pooled, "pooled_ratio": default / pooled, "pooled_pairs": pool_pairs,
            "pooled_cpu_ratio": cpu["default"] / cpu["pooled"],
            "cpu_ratio": cpu["default"] / cpu["integer"],
            "model": runs["integer"][0].get("model_id")}


def rows(result: Any) -> list[Row]:
    if not isinstance(result, dict) or "ratio" not in result:
        return []
    n = result["texts"]
    pairs = result["pair_ratios"]
    rss = {k: max(r["rss_mb"] for r in result["runs"][k]) for k in result["runs"]}
    pool = result.get("pooled_pairs")
    pooled = [] if pool is None else [
        Row("embed throughput, packaged file one text per run in parallel (default 0044-0046)",
            f"{n / result['pooled_s']:.1f} chunks/s", f"peak RSS {rss['pooled']:.0f} MB"),
        Row("packaged file: one text per run / batches", f"{result['pooled_ratio']:.2f}x",
            f"pairs {min(pool):.2f}-{max(pool):.2f}, CPU {result['pooled_cpu_ratio']:.2f}x"),
        Row("new default / packaged file one text per run",
            f"{result['pooled_s'] / result['integer_s']:.2f}x"),
    ]
    return [
        Row(f"embed throughput, before: packaged file in batches ({n} chunks)",
            f"{n / result['default_s']:.1f} chunks/s", f"peak RSS {rss['default']:.0f} MB"),
        *pooled,
        Row(f"embed throughput, after: the default {result['model']}",
            f"{n / result['integer_s']:.1f} chunks/s", f"peak RSS {rss['integer']:.0f} MB"),
        Row("new default (integer copy) / before (packaged file in batches)",
            f"{result['ratio']:.2f}x", f"pairs {min(pairs):.2f}-{max(pairs):.2f}, CPU "
            f"{result.get('cpu_ratio', 0.0):.2f}x", f">= {TARGET}x",
            verdict(result["ratio"] >= TARGET)),
    ]


def _child(params: dict[str, Any]) -> None:
    from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder

    sample = json.loads(Path(params["texts"]).read_text(encoding="utf-8"))
    embedder = FastEmbedEmbedder(params["model"], cache_dir=Path(params["cache"]),
                                 text_pool=params.get("pool", True))
    embedder.embed_documents(["warm up"])  # loads the model (and makes the integer copy)
    started, cpu = time.perf_counter(), time.process_time()
    vectors = embedder.embed_documents(sample)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert len(vectors) == len(sample)
    write_result({"seconds": seconds, "cpu_s": cpu, "model_id": embedder.model_id})


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        _child(json.loads(sys.argv[2]))
    else:
        print(json.dumps(measure(Path(sys.argv[1]), quick="--quick" in sys.argv), indent=1))
