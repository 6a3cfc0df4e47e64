"""One million chunks on one machine (issue 43, goal 2): index peak RSS, hybrid search p95
with and without filters, ANN recall@10 against exact search, and an incremental run after
1 % of the files changed against re-indexing those files alone; on SQLite with local
vectors and on PostgreSQL with the vectors in S3 (the tests' throwaway cluster and moto).

The folder is generated short notes (1-4.5 KB, about 4.5 chunks each: 222,500 notes make
about a million chunks), built once under the work folder and kept for the next run
(``<work>/million-<files>/kb``; the edits of the incremental run are undone afterwards).
Every vector comes from the stand-in embedder (``benchmarks.standin``: the real tokenizer,
so the chunking is the real model's; hashed vectors), queries included, so the model's
time is not what is measured. Each part runs in a fresh child (its own peak RSS).

The ``million`` step of ``benchmarks.run`` (opt-in); alone:
``python -m benchmarks.million WORK [--files N] [--stores sqlite,pg_s3] [--quick]
[--parts search,paired,keywords,recall,incremental,pooled] [--real-model]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from benchmarks.measure import run_child
from benchmarks.million_child import REAL_MODEL_ENV
from benchmarks.report import Row, ms, verdict

FILES, QUICK_FILES = 222_500, 400
SEED = 71
#: the share of the files the incremental run finds changed
CHANGED_SHARE = 0.01
QUERIES, QUICK_QUERIES, WARMUP = 100, 10, 10
RSS_LIMIT_MB = 1536
P95_LIMIT_MS = 250
RECALL_LIMIT = 0.95
INCREMENTAL_LIMIT = 2.0
STORES = ("sqlite", "pg_s3")
#: the parts of a store's measurement after its index, in order (``--parts`` picks some)
PARTS = ("search", "paired", "keywords", "recall", "incremental")
#: parts run only when ``--parts`` names them (``pooled`` copies the SQLite index)
OPT_IN_PARTS = ("pooled",)
#: every child ends by this (a million chunks on two busy cores take a while)
CHILD_TIMEOUT_S = 6 * 3600.0


def say(message: str) -> None:
    from benchmarks.steps import say as bench_say

    bench_say(f"million: {message}")


def ensure_corpus(work: Path, files: int) -> Path:
    """The generated folder of ``files`` notes, made once (a marker says it is whole)."""
    from benchmarks import corpus

    base = work / f"million-{files}"
    kb, marker = base / "kb", base / "complete"
    if not marker.exists():
        if kb.exists():
            shutil.rmtree(kb)
        say(f"generating {files:,} notes in {kb}")
        info = corpus.generate(kb, files, seed=SEED, max_kb=4.5)
        marker.write_text(f"{info.files} {info.bytes}\n", encoding="utf-8")
    return kb


def _child(task: str, **params: Any) -> Any:
    return run_child([sys.executable, "-m", "benchmarks.million_child", task,
                      json.dumps(params)], timeout=CHILD_TIMEOUT_S)


@contextmanager
def _store(kind: str, base: Path) -> Iterator[dict[str, Any]]:
    """The settings of one store kind: an index folder for SQLite and local vectors, or a
    fresh PostgreSQL database and S3 bucket (both stopped at the end)."""
    if kind == "sqlite":
        yield {}
        return
    from tests.pg_cluster import start_cluster
    from tests.s3_server import S3Server

    cluster = start_cluster()
    s3 = S3Server.start()
    try:
        yield {"database_url": cluster.new_database("million"),
               "vectors_uri": f"s3://{s3.new_bucket()}/million",
               "storage_options": s3.storage_options(),
               "fresh": lambda name: {"database_url": cluster.new_database(name),
                                      "vectors_uri": f"s3://{s3.new_bucket()}/{name}"}}
    finally:
        s3.stop()
        cluster.stop()


def config(path: Path, kb: Path, index_dir: Path, store: dict[str, Any]) -> Path:
    """A config file for one index of ``kb``."""
    lines = [f'kb_path = "{kb}"', f'index_dir = "{index_dir}"']
    for key in ("database_url", "vectors_uri"):
        if store.get(key):
            lines.append(f'{key} = "{store[key]}"')
    if store.get("storage_options"):
        lines.append("[vectors.storage_options]")
        lines += [f'{k} = "{v}"' for k, v in store["storage_options"].items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class StaleIndex(Exception):
    """``--reuse`` of an index the code would rebuild: its next run re-embeds every chunk."""


def refuse_stale(index_dir: Path) -> None:
    """Raise ``StaleIndex`` when the SQLite index in ``index_dir`` records another embed
    text or Markdown parser generation than this code's (its settle run would embed or
    chunk the whole folder again: hours with the real model, and no longer the index the
    earlier figures were measured on)."""
    from kbmcp_adapters.parsers.registry import CONVERSION_VERSIONS
    from kbmcp_core.meta_keys import META_EMBED_TEXT, META_PARSED_WITH
    from kbmcp_core.models import EMBED_TEXT

    db = index_dir / "index.db"
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            meta = dict(conn.execute("SELECT key, value FROM index_meta WHERE key IN (?, ?)",
                                     (META_EMBED_TEXT, META_PARSED_WITH)).fetchall())
    except sqlite3.Error as exc:
        raise StaleIndex(f"--reuse: cannot read {db}: {exc}") from exc
    embedded = meta.get(META_EMBED_TEXT)
    parsed = json.loads(meta.get(META_PARSED_WITH) or "{}").get("md")
    why = None
    if parsed != CONVERSION_VERSIONS["md"]:
        why = f"chunked by Markdown parser {parsed}, this code's {CONVERSION_VERSIONS['md']}"
    if embedded != EMBED_TEXT:
        why = f"vectors of embed text {embedded!r}, this code's {EMBED_TEXT!r}"
    if why is not None:
        raise StaleIndex(f"--reuse refused: {index_dir} would be rebuilt ({why}); run "
                         "without --reuse to index anew")


def _changed(kb: Path, share: float) -> list[Path]:
    """Every ``1/share``-th note in sorted order, from a seeded start."""
    paths = sorted(kb.rglob("*.md"))
    step = max(1, round(1 / share))
    start = random.Random(SEED).randrange(step)
    return paths[start::step]


def incremental(kb: Path, base: Path, kind: str, store: dict[str, Any]) -> dict[str, Any]:
    """Change 1 % of the notes (a paragraph appended), index again, and index a copy of
    those notes alone into a fresh index; the edits are undone afterwards."""
    from benchmarks.corpus import AREAS, _Writer

    changed = _changed(kb, CHANGED_SHARE)
    floor_kb = base / f"floor-{kind}"
    for left in (floor_kb, base / f"floor-{kind}-index"):  # the floor starts from nothing
        if left.exists():
            shutil.rmtree(left)
    originals = {p: p.read_bytes() for p in changed}
    try:
        for n, path in enumerate(changed):
            w = _Writer(random.Random(n), sorted(AREAS)[n % len(AREAS)])
            with path.open("a", encoding="utf-8") as handle:
                handle.write(f"\n## Edit {n}\n\n{w.paragraph()}\n")
            copy = floor_kb / path.relative_to(kb)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
        say(f"{kind}: incremental run after {len(changed):,} notes changed")
        run = _child("index", config=str(base / f"{kind}.toml"))
        fresh = store["fresh"]("floor") if "fresh" in store else {}
        floor_config = config(base / f"floor-{kind}.toml", floor_kb,
                              base / f"floor-{kind}-index", {**store, **fresh})
        say(f"{kind}: those {len(changed):,} notes alone, from nothing")
        floor = _child("index", config=str(floor_config))
    finally:
        for path, data in originals.items():
            path.write_bytes(data)
    return {"changed_files": len(changed), "run": _facts(run), "floor": _facts(floor),
            "cpu_ratio": run.cpu_s / floor.cpu_s, "wall_ratio": run.wall_s / floor.wall_s}


def twin(base: Path, index_dir: Path, kb: Path, store: dict[str, Any]) -> str:
    """A second collection for a joint search: a copy of the SQLite index (made anew each
    time, so it is the index as it is), and its config."""
    copy = base / f"{index_dir.name}-twin"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(index_dir, copy)
    return str(config(base / f"{index_dir.name}-twin.toml", kb, copy, store))


def _facts(child: Any) -> dict[str, Any]:
    return {**child.data, "wall_s": child.wall_s, "cpu_s": child.cpu_s,
            "wait4_max_rss_mb": child.max_rss_mb}


def measure_store(kb: Path, kind: str, *, quick: bool, reuse: bool = False,
                  queries: int | None = None, parts: tuple[str, ...] = PARTS
                  ) -> dict[str, Any]:
    """``reuse`` (SQLite only): an index built by an earlier run is kept, with that run's
    first-index figures; one unmeasured run first brings it to the folder as it is (the
    earlier run's incremental edits were undone on disk, not in the index)."""
    base = kb.parent
    model = "-real" if os.environ.get(REAL_MODEL_ENV) == "1" else ""  # its own index
    index_dir = base / f"index-{kind}{model}"
    saved = base / f"{kind}{model}-result.json"
    before = json.loads(saved.read_text(encoding="utf-8")) if saved.exists() else {}
    reused = reuse and kind == "sqlite" and index_dir.exists() and "index" in before
    if reused:
        refuse_stale(index_dir)
    if index_dir.exists() and not reused:
        shutil.rmtree(index_dir)
    out: dict[str, Any] = {"store": kind, "load_before": os.getloadavg()[0]}
    # each part's figures saved as they come: a run stopped half-way keeps them

    def keep(key: str, value: Any) -> None:
        out[key] = value
        saved.write_text(json.dumps(out, indent=1, default=str), encoding="utf-8")

    with _store(kind, base) as store:
        cfg = str(config(base / f"{kind}{model}.toml", kb, index_dir, store))
        if reused:
            keep("index", built := before["index"] | {"reused": True})
            say(f"{kind}: the index kept; one run to bring it to the folder")
            keep("settle", _facts(_child("index", config=cfg)))
        else:
            say(f"{kind}: indexing from nothing ({'the real model' if model else 'stand-in'} "
                "vectors)")
            keep("index", built := _facts(_child("index", config=cfg)))
        say(f"{kind}: {built['chunks']:,} chunks in {built['wall_s']:.0f} s, peak "
            f"{built['own_peak_rss_mb']:.0f} MB; searches")
        n = queries or (QUICK_QUERIES if quick else QUERIES)
        for part in parts:  # in the order asked
            if part == "search":
                keep("search", _child("search", config=cfg, queries=n, warmup=WARMUP).data)
            elif part == "paired":
                say(f"{kind}: filtered searches by the chunks' labels and by ids, paired")
                keep("paired", _child("paired", config=cfg, queries=n, warmup=WARMUP).data)
            elif part == "keywords":
                if kind == "sqlite":  # the budget of decision 0058 is SQLite's
                    say(f"{kind}: filtered keyword legs within the budget and exact, paired")
                    keep("keywords", _child("keywords", config=cfg, queries=n,
                                            warmup=WARMUP).data)
            elif part == "pooled":
                if kind == "sqlite":  # PostgreSQL's: decision 0058's "PostgreSQL's first index"
                    say(f"{kind}: a joint search of the index and a copy, pooled keyword legs "
                        "within the budget and scoring every match, paired")
                    keep("pooled", _child("pooled", config=cfg, queries=n, warmup=WARMUP,
                                          twin=twin(base, index_dir, kb, store)).data)
            elif part == "recall":
                say(f"{kind}: recall@10 of the approximate index against exact search")
                keep("recall", _child("recall", config=cfg, queries=n).data)
            else:
                keep("incremental", incremental(kb, base, kind, store))
    keep("load_after", os.getloadavg()[0])
    return out


def measure(work: Path, *, quick: bool = False, files: int | None = None,
            stores: tuple[str, ...] = STORES, reuse: bool = False,
            queries: int | None = None, parts: tuple[str, ...] = PARTS) -> dict[str, Any]:
    """The ``million`` step: every store kind on the same generated folder."""
    count = files or (QUICK_FILES if quick else FILES)
    kb = ensure_corpus(work, count)
    out: dict[str, Any] = {"files": count}
    for kind in stores:
        try:
            out[kind] = measure_store(kb, kind, quick=quick, reuse=reuse, queries=queries,
                                      parts=parts)
        except StaleIndex:
            raise  # asked to keep what cannot be kept: nothing is measured
        except Exception as exc:  # the other store's numbers still count
            say(f"{kind} failed: {type(exc).__name__}: {exc}")
            out[kind] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def rows(result: Any) -> list[Row]:
    """Per store: index peak RSS, search p95 unfiltered and filtered, recall@10, and the
    incremental run against its floor, each against its limit."""
    if not isinstance(result, dict):
        return []
    out: list[Row] = []
    for kind in STORES:
        got = result.get(kind)
        if not isinstance(got, dict) or "index" not in got:
            continue
        built, name = got["index"], "SQLite" if kind == "sqlite" else "PostgreSQL + S3"
        out.append(Row(
            f"{name}, {built['chunks']:,} chunks: index peak RSS",
            f"{built['own_peak_rss_mb']:.0f} MB",
            f"{result['files']:,} files in {built['wall_s']:.0f} s, {built['cpu_s']:.0f} CPU s",
            f"<= {RSS_LIMIT_MB} MB", verdict(built["own_peak_rss_mb"] <= RSS_LIMIT_MB)))
        for variant, stats in got.get("search", {}).get("variants", {}).items():
            out.append(Row(
                f"  hybrid search p95, {variant}", ms(stats["p95_s"]),
                f"p50 {ms(stats['p50_s'])}, n={stats['n']}", f"<= {P95_LIMIT_MS} ms",
                verdict(stats["p95_s"] * 1000 <= P95_LIMIT_MS)))
        for leg, stats in got.get("search", {}).get("legs", {}).items():
            out.append(Row(f"    its {leg} leg alone, p95", ms(stats["p95_s"]),
                           f"p50 {ms(stats['p50_s'])}, pool of 50, unfiltered"))
        paired = got.get("paired", {}).get("variants", {})
        for variant in got.get("paired", {}).get("filters", {}):
            old, new = paired[f"{variant} by ids"], paired[f"{variant} by labels"]
            out.append(Row(
                f"    hybrid search p95, {variant}: by ids -> by labels",
                f"{ms(old['p95_s'])} -> {ms(new['p95_s'])}",
                f"p50 {ms(old['p50_s'])} -> {ms(new['p50_s'])}, paired in one process; same "
                f"hits {got['paired']['same_hits'][variant]} of {new['n']}"))
        out += _keyword_rows(got.get("keywords"))
        out += _pooled_rows(got.get("pooled"))
        rec = got.get("recall")
        if rec is not None:
            out += _recall_rows(rec)
        inc = got.get("incremental")
        if inc is None:
            continue
        out.append(Row(
            f"  incremental run, {inc['changed_files']:,} files changed / those alone",
            f"{inc['cpu_ratio']:.2f}x CPU",
            f"{inc['run']['cpu_s']:.0f} / {inc['floor']['cpu_s']:.0f} CPU s; wall "
            f"{inc['run']['wall_s']:.0f} / {inc['floor']['wall_s']:.0f} s",
            f"<= {INCREMENTAL_LIMIT}x", verdict(inc["cpu_ratio"] <= INCREMENTAL_LIMIT)))
    return out


def _keyword_rows(got: dict[str, Any] | None) -> list[Row]:
    """Each filter's keyword leg within its budget against the exact one (``keywords``)."""
    if got is None:
        return []
    out = []
    stats, recall = got["variants"], got["recall_at_10"]
    for variant in got["filters"]:
        for part in ("leg", "hybrid"):
            new, old = stats[f"{variant} {part} budget"], stats[f"{variant} {part} exact"]
            found = recall.get(f"{variant} {part}")
            out.append(Row(
                f"    {variant}: {'keyword leg' if part == 'leg' else 'hybrid'} p95, exact "
                "-> budget", f"{ms(old['p95_s'])} -> {ms(new['p95_s'])}",
                f"p50 {ms(old['p50_s'])} -> {ms(new['p50_s'])}; recall@10 of exact "
                f"{'-' if found is None else f'{found:.3f}'}", f">= {RECALL_LIMIT}",
                verdict(found is not None and found >= RECALL_LIMIT)))
    return out


def _pooled_rows(got: dict[str, Any] | None) -> list[Row]:
    """A joint search's pooled keyword legs scoring every match against within the
    budget (``pooled``), and how many queries keep the single leg's top 10."""
    if got is None:
        return []
    stats, same, n = got["variants"], got["same_top"], got["queries"]
    out = []
    for part, what in (("legs", "pooled keyword legs"), ("hybrid", "hybrid")):
        old, new = stats[f"{part} every match"], stats[f"{part} budget"]
        out.append(Row(
            f"    joint search of two collections: {what} p95, every match -> budget",
            f"{ms(old['p95_s'])} -> {ms(new['p95_s'])}",
            f"p50 {ms(old['p50_s'])} -> {ms(new['p50_s'])}, paired in one process"))
    out.append(Row(
        "    the single leg's top 10, one collection / two: every match -> budget",
        f"{same['every match one']} / {same['every match two']} -> {same['budget one']} / "
        f"{same['budget two']}", f"of {n} queries"))
    return out


def _recall_rows(rec: dict[str, Any]) -> list[Row]:
    """recall@10 unfiltered and under each filter, against its limit."""
    out = [Row("  ANN recall@10 / exact", f"{rec['recall_at_10']:.3f}",
               f"index {rec['index']}, nprobes {rec['nprobes']}",
               f">= {RECALL_LIMIT}", verdict(rec["recall_at_10"] >= RECALL_LIMIT))]
    for variant, value in rec.get("filtered_recall_at_10", {}).items():
        if variant != "unfiltered":
            out.append(Row(f"    filtered by {variant}", f"{value:.3f}",
                           f"{rec['query_s'][variant] * 1000:.0f} ms a query",
                           f">= {RECALL_LIMIT}", verdict(value >= RECALL_LIMIT)))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.million", description=__doc__)
    p.add_argument("work", type=Path)
    p.add_argument("--files", type=int)
    p.add_argument("--stores", default=",".join(STORES))
    p.add_argument("--quick", action="store_true")
    p.add_argument("--reuse", action="store_true",
                   help="keep a SQLite index an earlier run built (and its first-index figures)")
    p.add_argument("--queries", type=int, help="searches per variant (default 100)")
    p.add_argument("--real-model", action="store_true",
                   help="embed with the real model, not the stand-in, into an index of its "
                        "own (the check that the stand-in changes nothing else: hours at 100k)")
    p.add_argument("--parts", default=",".join(PARTS),
                   help="what to measure after the index, in this order (default: "
                        f"{','.join(PARTS)}; also: {','.join(OPT_IN_PARTS)})")
    args = p.parse_args(argv)
    # a stopped run (`kill`, `timeout`) stops its cluster, S3 server and child on the way out
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    if args.real_model:
        os.environ[REAL_MODEL_ENV] = "1"  # the children inherit it
    stores = tuple(s for s in args.stores.split(",") if s)
    parts = tuple(s for s in args.parts.split(",") if s)
    if unknown := set(parts) - set(PARTS) - set(OPT_IN_PARTS):
        p.error(f"--parts: not one of {', '.join(PARTS + OPT_IN_PARTS)}: "
                f"{', '.join(sorted(unknown))}")
    try:
        result = measure(args.work.resolve(), quick=args.quick, files=args.files,
                         stores=stores, reuse=args.reuse, queries=args.queries, parts=parts)
    except StaleIndex as exc:
        print(f"million: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1, default=str))
    for row in rows(result):
        print(" | ".join(str(v) for v in row.as_dict().values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
