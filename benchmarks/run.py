"""`python -m benchmarks.run` (`make bench`): run every measurement, print the table, save JSON."""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import (
    cold_search,
    corpus,
    embed_speed,
    explain_bench,
    fast_cli,
    goals,
    index_rss,
    install_size,
    many_clients,
    million,
    paragraph_bench,
    pg_japanese,
    ranged_read,
    real_folder,
    report,
    rerank_bench,
    service_overhead,
    steps,
    tails,
    team,
    two_phase,
    ui_bench,
)
from benchmarks.measure import REPO

#: A 1-minute load average above this at the start earns a warning.
BUSY_LOAD = 1.0
STEPS = ("full", "two_phase", "reindex", "search", "rerank", "fastcli", "initialize", "listings",
         "team", "ui", "tails", "install", "embed", "real", "service", "explain", "ranged",
         "japanese", "index100k", "paragraphs", "coldsearch", "coldsearch100k", "clients50",
         "million")
#: Steps run only when named with --only: long, or needing what a plain run may lack.
OPT_IN = frozenset({"coldsearch100k", "clients50", "million"})


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    p.add_argument(
        "--quick",
        action="store_true",
        help="a small smoke run (tiny corpora, few repetitions); targets not judged",
    )
    p.add_argument(
        "--corpus",
        type=Path,
        metavar="DIR",
        help="use a copy of this directory instead of generated notes for the full "
        "index and the re-index/search steps (the original is never written)",
    )
    p.add_argument(
        "--work",
        type=Path,
        metavar="DIR",
        help="where corpora and indexes go (default: a temporary directory, removed "
        "afterwards; a --work directory is kept)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=REPO / "bench-results",
        metavar="DIR",
        help="where the JSON results go (default: bench-results/)",
    )
    p.add_argument(
        "--only",
        action="append",
        choices=STEPS,
        metavar="STEP",
        help=f"run only these steps (repeatable): {', '.join(STEPS)}; "
        f"{', '.join(sorted(OPT_IN))} run only when named here",
    )
    args = p.parse_args(argv)
    if args.corpus is not None and not args.corpus.is_dir():
        p.error(f"--corpus {args.corpus} is not a directory")
    return args


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    cfg = steps.Config.quick_run() if args.quick else steps.Config()
    wanted = set(args.only or [s for s in STEPS if s not in OPT_IN])
    source = args.corpus.resolve() if args.corpus else None
    errlog = work / "serve-stderr.log"
    results: dict[str, Any] = {}

    def step(name: str, fn: Callable[[], dict[str, Any]]) -> None:
        started = time.perf_counter()
        load = os.getloadavg()[0]
        try:
            results[name] = fn()
        except Exception as exc:  # one broken step must not hide the others' numbers
            steps.say(f"{name} failed: {type(exc).__name__}: {exc}")
            results[name] = {
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(),
            }
        results[name]["step_seconds"] = time.perf_counter() - started
        results[name]["load_before"] = load
        results[name]["load_after"] = os.getloadavg()[0]

    if "embed" in wanted:  # the default model against the packaged file (issue 29.1)
        step("embed_speed", lambda: embed_speed.measure(work, quick=args.quick))
    if "service" in wanted:  # the embedding-service provider against a bare POST (0037)
        step("service_overhead", lambda: service_overhead.measure(work, quick=args.quick))
    if "explain" in wanted:  # explain off against the search before it (0035)
        step("explain", lambda: explain_bench.measure(work, quick=args.quick))
    if "ranged" in wanted:  # a 1,000-line ranged read against a disk read (0033)
        step("ranged_read", lambda: ranged_read.measure(work, quick=args.quick))
    if "paragraphs" in wanted:  # paragraphs read in context, on against off (issue 25)
        step("paragraphs", lambda: paragraph_bench.measure(work, quick=args.quick))
    if "full" in wanted:
        step("full_index", lambda: steps.full_index(cfg, work, source))
    if "real" in wanted:  # a real, mixed folder from /usr/share/doc (issue 29.2)
        step("real_folder", lambda: real_folder.measure(work, quick=args.quick))
    if "japanese" in wanted:  # Japanese keywords, PostgreSQL against SQLite (issue 29.4)
        step("pg_japanese", lambda: pg_japanese.measure(work, quick=args.quick))
    if "two_phase" in wanted:
        step("two_phase", lambda: two_phase.keyword_ready(
            work, files=cfg.large_files, repeats=cfg.full_repeats, seed=cfg.seed + 3))
    if wanted & {"reindex", "search", "rerank", "fastcli", "initialize"}:
        large: dict[str, Path] = {}

        def build() -> dict[str, Any]:
            large["kb"], facts = steps.large_corpus(cfg, work, source)
            return facts

        step("large", build)
        if "kb" in large:
            kb = large["kb"]
            if "search" in wanted:  # before the edits of the re-index step
                step("search", lambda: steps.search(cfg, kb, errlog))
            if "rerank" in wanted:  # what the cross-encoder adds (issue 13.3)
                step("rerank", lambda: rerank_bench.measure(
                    corpus.queries(cfg.rerank_queries + cfg.warmup, seed=17),
                    cfg.warmup, kb))
            if "reindex" in wanted:
                step("reindex", lambda: steps.reindex(cfg, kb))
            if "initialize" in wanted:
                step("initialize", lambda: steps.initialize(cfg, kb))
            if "fastcli" in wanted:  # kb-mcp search through a running server (issue 14.2)
                step("fast_cli", lambda: fast_cli.measure(cfg.queries, cfg.warmup, kb))
    if "listings" in wanted:
        step("listings", lambda: steps.listings(cfg, work, errlog))
    if wanted & {"coldsearch", "coldsearch100k"}:  # a fresh kb-mcp search (issue 43.1)
        step("cold_search", lambda: cold_search.measure(
            work, quick=args.quick, large="coldsearch100k" in wanted))
    if "clients50" in wanted:  # fifty HTTP clients at once (issue 43.3)
        step("many_clients", lambda: many_clients.measure(work, quick=args.quick))
    if "million" in wanted:  # a million chunks, SQLite and PostgreSQL + S3 (issue 43.2)
        step("million", lambda: million.measure(work, quick=args.quick))
    if "tails" in wanted:  # search tails at 20k chunks, ANN at 100k (issue 14.3-4)
        step("tails", lambda: tails.measure(work / "tails", quick=args.quick))
    if "index100k" in wanted:  # peak RSS while indexing 100k chunks (issue 29.3)
        step("index_rss", lambda: index_rss.measure(work, quick=args.quick))
    if "team" in wanted:
        steps.say("team mode: PostgreSQL store, one writer, read-only replicas under load")
        step("team", lambda: team.team_load(
            work, files=cfg.team_files, growth=cfg.team_growth, clients=cfg.team_clients,
            searches=cfg.team_searches))
    if "ui" in wanted:
        steps.say("the /ui page in headless Chromium: first paint, search vs MCP, 500-node graph")
        step("ui", lambda: ui_bench.ui_step(work, files=12 if args.quick else 60,
                                            repeats=3 if args.quick else 10))
    if "install" in wanted:  # the runtime install's size; built in full runs only (issue 24)
        step("install", lambda: install_size.measure(work, build=not args.quick))
    return {"config": cfg.as_dict(), **results}


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    started = datetime.now(UTC)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    temporary = args.work is None
    work = Path(tempfile.mkdtemp(prefix="kb-mcp-bench-")) if temporary else args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    steps.say(f"work directory: {work}{' (quick run)' if args.quick else ''}")
    load = os.getloadavg()
    if load[0] > BUSY_LOAD:
        steps.say(
            f"warning: load average {load[0]:.1f} on {os.cpu_count()} CPUs: other "
            "processes are using the CPU, so the numbers will be slow and noisy"
        )
    clock = time.perf_counter()
    try:
        results = run(args, work)
    finally:
        if temporary:
            shutil.rmtree(work, ignore_errors=True)
    total = time.perf_counter() - clock
    table_rows = report.rows(results)
    goal_rows = goals.goals(results)
    record = {
        "started_at": started.isoformat(timespec="seconds"),
        "total_seconds": round(total, 1),
        "quick": args.quick,
        "corpus": str(args.corpus) if args.corpus else None,
        "load_average_start": load,
        "load_average_end": os.getloadavg(),
        "environment": report.environment(),
        "table": [r.as_dict() for r in table_rows],
        "goals": [dataclasses.asdict(g) for g in goal_rows],
        "results": results,
    }
    path = report.write_json(args.out, stamp, record)
    print()
    print(report.table(table_rows))
    print()
    print(goals.table(goal_rows))
    print()
    note = " (quick run: sizes are below the targets' sizes; PASS/MISS is indicative)"
    print(
        f"total {total / 60:.1f} min; load average {load[0]:.1f} at start, "
        f"{os.getloadavg()[0]:.1f} at end; results: {path}{note if args.quick else ''}"
    )
    failed = any(r.result == "ERROR" for r in table_rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
