"""The measurements: each step prepares its corpus, runs its children, and returns raw numbers."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks import corpus, mcp_bench
from benchmarks.measure import ChildResult, kb_mcp, run_child, summary, worker

INDEX_DIR = ".kb-mcp"


@dataclass(frozen=True, slots=True)
class Config:
    """Sizes and repetitions. ``quick()`` is the smoke-run variant."""

    full_files: int = 300
    full_repeats: int = 3
    large_files: int = 5000
    listing_docs: int = 10000
    nochange_runs: int = 5
    change_edits: int = 3
    queries: int = 100
    warmup: int = 10
    mcp_queries: int = 100
    rerank_queries: int = 40
    initialize_starts: int = 7
    listing_calls: int = 30
    team_files: int = 300
    team_growth: int = 100
    team_clients: int = 10
    team_searches: int = 100
    seed: int = 7
    quick: bool = False

    @classmethod
    def quick_run(cls) -> Config:
        """Every step once on tiny corpora (`make bench-quick`, CI's smoke test): proves the
        benchmark runs, in well under a minute; its numbers are not worth comparing."""
        return cls(
            full_files=4,
            full_repeats=1,
            large_files=60,
            listing_docs=200,
            nochange_runs=1,
            change_edits=1,
            queries=5,
            warmup=1,
            mcp_queries=5,
            rerank_queries=3,
            initialize_starts=1,
            listing_calls=2,
            team_files=12,
            team_growth=6,
            team_clients=3,
            team_searches=4,
            quick=True,
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def say(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def prepare(
    target: Path, files: int, seed: int, source: Path | None, kind: str = "notes"
) -> dict[str, Any]:
    """A fresh corpus at ``target``: a copy of ``source`` (its index left out) or generated.

    ``kind``: "notes" (1-8 KB, ~6 chunks each), "short" (1-4.5 KB, ~4 chunks each, so 5,000
    files make ~20k chunks) or "small" (one chunk each, for listings)."""
    if target.exists():
        shutil.rmtree(target)
    if source is not None:
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(INDEX_DIR))
        paths = [p for p in target.rglob("*") if p.is_file()]
        return {
            "source": str(source),
            "files": len(paths),
            "bytes": sum(p.stat().st_size for p in paths),
        }
    max_kb = 4.5 if kind == "short" else 8.0
    info = corpus.generate(target, files, seed, small=kind == "small", max_kb=max_kb)
    return {"generated": True, "kind": kind, "seed": seed, "files": info.files, "bytes": info.bytes}


def build_standin(kb: Path) -> dict[str, Any]:
    res = run_child(worker("build", kb=str(kb)))
    return {**res.data, "wall_s": res.wall_s, "peak_rss_mb": res.max_rss_mb}


def read_and_hash(root: Path) -> tuple[float, int]:
    """The floor of a no-change re-index: walk, read and sha256 every Markdown file."""
    started = time.perf_counter()
    count = 0
    stack = [root]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != INDEX_DIR:
                        stack.append(Path(entry.path))
                elif entry.name.endswith(".md"):
                    with open(entry.path, "rb") as handle:
                        hashlib.sha256(handle.read()).hexdigest()
                    count += 1
    return time.perf_counter() - started, count


def cli_index(kb: Path) -> ChildResult:
    return run_child([kb_mcp(), "index", "--kb-path", str(kb), "--quiet"])


# -- 1. full index ------------------------------------------------------------------------
def full_index(cfg: Config, work: Path, source: Path | None) -> dict[str, Any]:
    kb = work / "full"
    facts = prepare(kb, cfg.full_files, cfg.seed, source)
    say(
        f"full index: {facts['files']} files, {facts['bytes'] / 1e6:.1f} MB, "
        f"{cfg.full_repeats} x (index + embed-only) with the real model"
    )
    return {"corpus": facts, **index_against_embed(kb, cfg.full_repeats)}


def index_against_embed(kb: Path, repeats: int, floor: Path | None = None) -> dict[str, Any]:
    """``repeats`` x (a full index of ``kb`` from nothing, then embedding the same chunks'
    texts alone), each in a fresh child; the medians, the ratios and the peak RSS.

    ``floor``: a copy of ``kb`` whose index (built here with the stand-in embedder, whose
    chunking is the real one) gives embed-only its texts, so the two children run side by
    side instead of one after the other: whatever other processes do to the machine, they
    do to both (the real-folder step; decision 0045)."""
    floor_chunks = None
    if floor is not None:
        shutil.rmtree(floor / INDEX_DIR, ignore_errors=True)
        floor_chunks = run_child(worker("build", kb=str(floor))).data["chunks"]
    runs = []
    for r in range(repeats):
        shutil.rmtree(kb / INDEX_DIR, ignore_errors=True)
        if floor is None:
            idx = run_child(worker("index", kb=str(kb)))
            emb = run_child(worker("embed_only", kb=str(kb)))
        else:
            idx, emb = _side_by_side(worker("index", kb=str(kb)),
                                     worker("embed_only", kb=str(floor)))
            if idx.data["chunks"] != floor_chunks:  # the same chunking, or no floor
                raise RuntimeError(f"the index holds {idx.data['chunks']} chunks, the "
                                   f"embed-only copy {floor_chunks}")
        run = {
            "index_s": idx.data["seconds"],
            "index_process_s": idx.wall_s,
            "peak_rss_mb": idx.max_rss_mb,
            "chunks": idx.data["chunks"],
            "chunks_embedded": idx.data["summary"]["chunks_embedded"],
            "documents": idx.data["documents"],
            "embed_only_s": emb.data["seconds"],
            "embed_texts": emb.data["texts"],
            "embed_tokens": emb.data["tokens"],
            "model_load_s": emb.data["model_load_s"],
            "embed_only_peak_rss_mb": emb.max_rss_mb,
            # CPU seconds of each whole child (interpreter start and imports included)
            "index_cpu_s": idx.cpu_s,
            "embed_only_cpu_s": emb.cpu_s,
            # CPU seconds of what each child times (the index run with its parser workers;
            # the one embedding call), and the index run's CPU inside its embedding calls
            "index_run_cpu_s": idx.data.get("cpu_s"),
            "embed_call_cpu_s": emb.data.get("cpu_s"),
            "index_embed_cpu_s": idx.data.get("embed_cpu_s"),
        }
        run["ratio"] = run["index_s"] / run["embed_only_s"]
        if run["index_run_cpu_s"] and run["embed_call_cpu_s"]:
            run["run_cpu_ratio"] = run["index_run_cpu_s"] / run["embed_call_cpu_s"]
            run["own_cpu_s"] = run["index_run_cpu_s"] - run["index_embed_cpu_s"]
        runs.append(run)
        say(
            f"  run {r + 1}: index {run['index_s']:.1f}s ({run['chunks_embedded']} chunks), "
            f"embed-only {run['embed_only_s']:.1f}s, ratio {run['ratio']:.2f}, "
            f"CPU ratio {run.get('run_cpu_ratio', 0.0):.3f}, "
            f"peak RSS {run['peak_rss_mb']:.0f} MB, load {os.getloadavg()[0]:.1f}"
        )
    index_s = summary([r["index_s"] for r in runs])
    embed_s = summary([r["embed_only_s"] for r in runs])
    return {
        "runs": runs,
        "index_s": index_s,
        "embed_only_s": embed_s,
        "ratio": summary([r["ratio"] for r in runs]),
        "ratio_of_medians": index_s["median"] / embed_s["median"],
        "chunks_per_s": summary([r["chunks_embedded"] / r["index_s"] for r in runs]),
        "embed_chunks_per_s": summary([r["embed_texts"] / r["embed_only_s"] for r in runs]),
        "peak_rss_mb": summary([r["peak_rss_mb"] for r in runs]),
        "embed_only_peak_rss_mb": summary([r["embed_only_peak_rss_mb"] for r in runs]),
        "chunks": runs[-1]["chunks"],
        "cpu_ratio": summary([r["index_cpu_s"] / r["embed_only_cpu_s"] for r in runs]),
        **_run_cpu(runs),
    }


def _side_by_side(first: list[str], second: list[str]) -> tuple[ChildResult, ChildResult]:
    """Two children started together; both results (the first failure is raised)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:
        a, b = pool.submit(run_child, first), pool.submit(run_child, second)
        return a.result(), b.result()


def _run_cpu(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """CPU time of the index run (its parser workers included) against that of the
    embedding call, and the run's own CPU (outside the embedder): what other processes
    sway least (the real-folder step judges its goal on it)."""
    if not all("run_cpu_ratio" in r for r in runs):
        return {}
    cpu = summary([r["index_run_cpu_s"] for r in runs])
    floor = summary([r["embed_call_cpu_s"] for r in runs])
    return {
        "index_run_cpu_s": cpu,
        "embed_call_cpu_s": floor,
        "own_cpu_s": summary([r["own_cpu_s"] for r in runs]),
        "run_cpu_ratio": summary([r["run_cpu_ratio"] for r in runs]),
        "run_cpu_ratio_of_medians": cpu["median"] / floor["median"],
    }


# -- 2./3. re-index -------------------------------------------------------------------------
def reindex(cfg: Config, kb: Path) -> dict[str, Any]:
    say(f"no-change re-index x{cfg.nochange_runs} (CLI) + library, and the read+hash floor")
    floors = [read_and_hash(kb) for _ in range(cfg.nochange_runs)]
    cli = [cli_index(kb).wall_s for _ in range(cfg.nochange_runs)]
    lib = run_child(worker("nochange", kb=str(kb), runs=cfg.nochange_runs)).data
    floor = summary([f[0] for f in floors])
    warm = summary(lib["warm_s"])
    say(f"single-file change x{cfg.change_edits} (CLI, library full scan, library paths=)")
    edited = []
    for i in range(cfg.change_edits):
        corpus.edit_one(kb, 1000 + 37 * i)
        edited.append(cli_index(kb).wall_s)
    edits = [2000 + 2 * 41 * i for i in range(cfg.change_edits)]
    lib_change = run_child(worker("single_change", kb=str(kb), edits=edits)).data
    return {
        "files_hashed": floors[0][1],
        "floor_read_hash_s": floor,
        "nochange_cli_s": summary(cli),
        "nochange_library_first_s": lib["first_s"],
        "nochange_library_warm_s": warm,
        "nochange_ratio_to_floor": warm["median"] / floor["median"],
        "change_cli_s": summary(edited),
        "change_library_scan_s": summary(lib_change["full_scan_s"]),
        "change_library_paths_s": summary(lib_change["paths_s"]),
    }


# -- 4. search -------------------------------------------------------------------------------
def search(cfg: Config, kb: Path, errlog: Path) -> dict[str, Any]:
    qs = corpus.queries(cfg.queries + cfg.warmup)
    say(f"warm search through the library: {cfg.queries} queries, parts measured per query")
    lib = run_child(worker("search", kb=str(kb), queries=qs, warmup=cfg.warmup)).data
    # the paragraph step's model runs (0028, session 11) are a raw part of the search too
    parts = {k: summary(lib[f"{k}_s"]) for k in ("embed", "knn", "lexical", "paragraphs")
             if lib.get(f"{k}_s")}
    parts_p50 = sum(p["median"] for p in parts.values())
    full = summary(lib["search_s"])
    out: dict[str, Any] = {
        "chunks": lib["chunks"],
        "pool": lib["pool"],
        "library_s": full,
        "parts_s": parts,
        "parts_p50_sum_s": parts_p50,
        "library_ratio": full["median"] / parts_p50,
        "raw_fts_s": summary(lib["raw_fts_s"]),
    }
    say(f"warm search through MCP stdio: {cfg.mcp_queries} calls")
    mcp_qs = corpus.queries(cfg.mcp_queries + cfg.warmup, seed=13)
    try:
        lat = mcp_bench.search_latencies(kb, mcp_qs, cfg.warmup, errlog)
    except Exception as exc:  # the report says what failed; the other numbers still count
        out["mcp_error"] = f"{type(exc).__name__}: {exc}"
        return out
    out["mcp_s"] = summary(lat)
    out["mcp_ratio"] = out["mcp_s"]["median"] / parts_p50
    return out


# -- 5. initialize ---------------------------------------------------------------------------
def initialize(cfg: Config, kb: Path) -> dict[str, Any]:
    say(f"serve start to answered initialize x{cfg.initialize_starts}")
    return {
        "initialize_s": summary(
            [mcp_bench.initialize_time(kb) for _ in range(cfg.initialize_starts)]
        )
    }


# -- 6. listings -----------------------------------------------------------------------------
def listings(cfg: Config, work: Path, errlog: Path) -> dict[str, Any]:
    kb = work / "listing"
    facts = prepare(kb, cfg.listing_docs, cfg.seed + 2, None, "small")
    say(f"listing corpus: {facts['files']} small documents, building with the stand-in")
    built = build_standin(kb)
    say(f"  built in {built['wall_s']:.1f}s; resources/list and list_topics x{cfg.listing_calls}")
    got = mcp_bench.listing_latencies(kb, cfg.listing_calls, errlog)
    return {
        "corpus": facts,
        "build": built,
        "documents": built["documents"],
        "resources_list_s": summary(got["resources_list_s"]),
        "list_topics_s": summary(got["list_topics_s"]),
        "first_resources_list_s": got["first_resources_list_s"],
        "first_list_topics_s": got["first_list_topics_s"],
        "pages": got["pages"],
        "resources": got["resources"],
    }


# -- the corpus of steps 2-5 -------------------------------------------------------------------
def large_corpus(cfg: Config, work: Path, source: Path | None) -> tuple[Path, dict[str, Any]]:
    kb = work / "large"
    facts = prepare(kb, cfg.large_files, cfg.seed + 1, source, "short")
    say(
        f"large corpus: {facts['files']} files, {facts['bytes'] / 1e6:.1f} MB, building with "
        "the stand-in embedder"
    )
    built = build_standin(kb)
    say(
        f"  built in {built['wall_s']:.1f}s: {built['documents']} documents, "
        f"{built['chunks']} chunks"
    )
    return kb, {"corpus": facts, "build": built}
