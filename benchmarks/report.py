"""The results table (measurement, median, spread, target, PASS/MISS) and the JSON record."""

from __future__ import annotations

import json
import os
import platform
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    value: str
    spread: str = ""
    target: str = ""
    result: str = ""  # PASS, MISS, ERROR or "" (informational)

    def as_dict(self) -> dict[str, str]:
        return {
            "measurement": self.name,
            "value": self.value,
            "spread": self.spread,
            "target": self.target,
            "result": self.result,
        }


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def spread(s: dict[str, Any], p95: bool = False) -> str:
    if not s.get("n"):
        return ""
    low, high = ms(s["min"]), ms(s["max"])
    tail = f", p95 {ms(s['p95'])}" if p95 else ""
    return f"{low} .. {high}{tail} (n={s['n']})"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def rows(results: dict[str, Any]) -> list[Row]:
    out: list[Row] = []
    full = results.get("full_index")
    if isinstance(full, dict) and "index_s" in full:
        idx, emb = full["index_s"], full["embed_only_s"]
        out += [
            Row(
                f"full index, {full['chunks']} chunks (real model)", ms(idx["median"]), spread(idx)
            ),
            Row("  embed-only, same chunks", ms(emb["median"]), spread(emb)),
            Row(
                "  index / embed-only",
                f"{full['ratio_of_medians']:.2f}x",
                f"{full['ratio']['min']:.2f} .. {full['ratio']['max']:.2f}",
                "<= 1.15x",
                verdict(full["ratio_of_medians"] <= 1.15),
            ),
            Row(
                "  chunks/s (index | embed-only)",
                f"{full['chunks_per_s']['median']:.1f} | "
                f"{full['embed_chunks_per_s']['median']:.1f}",
            ),
            Row(
                f"  peak RSS while indexing {full['corpus']['files']} files",
                f"{full['peak_rss_mb']['median']:.0f} MB",
                f"max {full['peak_rss_mb']['max']:.0f} MB; embed-only "
                f"{full['embed_only_peak_rss_mb']['max']:.0f} MB",
                "<= 1024 MB",
                verdict(full["peak_rss_mb"]["max"] <= 1024),
            ),
        ]
    out += two_phase_rows(results.get("two_phase"))
    large = results.get("large")
    files = large["build"]["documents"] if isinstance(large, dict) and "build" in large else "?"
    if isinstance(large, dict) and "build" in large:
        b = large["build"]
        out.append(
            Row(
                f"stand-in index (no model), {files} files, {b['chunks']} chunks",
                ms(b["seconds"]),
                f"peak RSS {b['peak_rss_mb']:.0f} MB (no model)",
            )
        )
    re = results.get("reindex")
    if isinstance(re, dict) and "nochange_cli_s" in re:
        cli = re["nochange_cli_s"]
        out += [
            Row(
                f"no-change re-index, {files} files (kb-mcp index)",
                ms(cli["median"]),
                spread(cli),
                "<= 3 s",
                verdict(cli["median"] <= 3.0),
            ),
            Row(
                "  library kb.index(), warm process",
                ms(re["nochange_library_warm_s"]["median"]),
                spread(re["nochange_library_warm_s"]),
            ),
            Row(
                "  floor: walk + read + sha256",
                ms(re["floor_read_hash_s"]["median"]),
                spread(re["floor_read_hash_s"]),
            ),
            Row("  library / floor", f"{re['nochange_ratio_to_floor']:.2f}x"),
            Row(
                "single-file change (kb-mcp index)",
                ms(re["change_cli_s"]["median"]),
                spread(re["change_cli_s"]),
            ),
            Row(
                "  library, full scan (model loaded)",
                ms(re["change_library_scan_s"]["median"]),
                spread(re["change_library_scan_s"]),
            ),
            Row(
                "  library, paths=[file] (watcher route)",
                ms(re["change_library_paths_s"]["median"]),
                spread(re["change_library_paths_s"]),
            ),
        ]
    se = results.get("search")
    if isinstance(se, dict) and "library_s" in se:
        lib, parts = se["library_s"], se["parts_s"]
        out += [
            Row(
                f"search p50 via library, {se['chunks']} chunks",
                ms(lib["median"]),
                spread(lib, p95=True),
            ),
            Row(
                "  part: query embedding (real model)",
                ms(parts["embed"]["median"]),
                spread(parts["embed"], p95=True),
            ),
            Row(
                f"  part: LanceDB k-NN (k={se['pool']})",
                ms(parts["knn"]["median"]),
                spread(parts["knn"], p95=True),
            ),
            Row(
                f"  part: lexical query (limit {se['pool']})",
                ms(parts["lexical"]["median"]),
                spread(parts["lexical"], p95=True),
            ),
        ]
        if "paragraphs" in parts:  # the best candidates' paragraphs, read in context (0028)
            out.append(
                Row(
                    "  part: paragraphs read in context (model runs)",
                    ms(parts["paragraphs"]["median"]),
                    spread(parts["paragraphs"], p95=True),
                )
            )
        if se.get("raw_fts_s", {}).get("n"):
            out.append(
                Row(
                    "    (bare FTS5 BM25 query, for reference)",
                    ms(se["raw_fts_s"]["median"]),
                    spread(se["raw_fts_s"], p95=True),
                )
            )
        out += [
            Row(
                "  library p50 / sum of part p50s",
                f"{se['library_ratio']:.2f}x",
                f"parts sum {ms(se['parts_p50_sum_s'])}",
                "<= 1.5x",
                verdict(se["library_ratio"] <= 1.5),
            ),
        ]
        if "mcp_s" in se:
            out += [
                Row(
                    "search p50 via MCP stdio",
                    ms(se["mcp_s"]["median"]),
                    spread(se["mcp_s"], p95=True),
                ),
                Row(
                    "  MCP p50 / sum of part p50s",
                    f"{se['mcp_ratio']:.2f}x",
                    "",
                    "<= 2x",
                    verdict(se["mcp_ratio"] <= 2.0),
                ),
            ]
        else:
            out.append(
                Row("search via MCP stdio", "-", se.get("mcp_error", "")[:60], "<= 2x", "ERROR")
            )
    out += rerank_rows(results.get("rerank"))
    ini = results.get("initialize")
    if isinstance(ini, dict) and "initialize_s" in ini:
        s = ini["initialize_s"]
        out.append(
            Row(
                "serve start -> initialize answered",
                ms(s["median"]),
                spread(s),
                "<= 1 s",
                verdict(s["median"] <= 1.0),
            )
        )
    li = results.get("listings")
    if isinstance(li, dict) and "resources_list_s" in li:
        rl, lt = li["resources_list_s"], li["list_topics_s"]
        out += [
            Row(
                f"resources/list, {li['documents']} docs ({li['resources']} topics)",
                ms(rl["median"]),
                spread(rl, p95=True),
                "<= 50 ms",
                verdict(rl["median"] <= 0.050),
            ),
            Row(f"list_topics, {li['documents']} docs", ms(lt["median"]), spread(lt, p95=True)),
        ]
    out += team_rows(results.get("team"))
    out += ui_rows(results.get("ui"))
    from benchmarks import fast_cli  # it builds rows with this module's Row

    out += fast_cli.rows(results.get("fast_cli"))
    from benchmarks import tails  # likewise

    out += tails.rows(results.get("tails"))
    from benchmarks import install_size  # likewise

    out += install_size.rows(results.get("install"))
    from benchmarks import embed_speed  # likewise

    out += embed_speed.rows(results.get("embed_speed"))
    from benchmarks import explain_bench  # likewise

    out += explain_bench.rows(results.get("explain"))
    from benchmarks import paragraph_bench  # likewise

    out += paragraph_bench.rows(results.get("paragraphs"))
    from benchmarks import service_overhead  # likewise

    out += service_overhead.rows(results.get("service_overhead"))
    from benchmarks import ranged_read  # likewise

    out += ranged_read.rows(results.get("ranged_read"))
    from benchmarks import real_folder  # likewise

    out += real_folder.rows(results.get("real_folder"))
    from benchmarks import index_rss  # likewise

    out += index_rss.rows(results.get("index_rss"))
    from benchmarks import pg_japanese  # likewise

    out += pg_japanese.rows(results.get("pg_japanese"))
    from benchmarks import cold_search  # likewise

    out += cold_search.rows(results.get("cold_search"))
    from benchmarks import many_clients  # likewise

    out += many_clients.rows(results.get("many_clients"))
    from benchmarks import million  # likewise

    out += million.rows(results.get("million"))
    for step, value in results.items():
        if isinstance(value, dict) and "error" in value:
            out.append(Row(f"{step}: failed", "-", value["error"][:70], "", "ERROR"))
    return out


def rerank_rows(rr: Any) -> list[Row]:
    """What the cross-encoder adds to a warm search, against the bare model's own time."""
    if not isinstance(rr, dict) or "added_s" not in rr:
        return []
    add, bare = rr["added_s"], rr["bare_s"]
    out = [
        Row(f"search p50 with rerank ({rr['candidates']} candidates)",
            ms(rr["reranked_s"]["median"]), spread(rr["reranked_s"], p95=True)),
        Row("  same searches without rerank", ms(rr["plain_s"]["median"]),
            spread(rr["plain_s"], p95=True)),
        Row("  added by rerank", ms(add["median"]), spread(add, p95=True)),
        Row("  bare cross-encoder, same passages, one batch", ms(bare["median"]),
            spread(bare, p95=True)),
    ]
    if "added_ratio" in rr:
        out.append(Row("  added p50 / bare model p50", f"{rr['added_ratio']:.2f}x", "",
                       "<= 1.2x", verdict(rr["added_ratio"] <= 1.2)))
    return out


def two_phase_rows(tp: Any) -> list[Row]:
    """Time to full keyword search (phase one of `kb-mcp index`) against the bare script."""
    if not isinstance(tp, dict) or "ready_s" not in tp:
        return []
    ready, floor = tp["ready_s"], tp["floor_s"]
    return [
        Row(f"time to full keyword search, {tp['documents']} files, {tp['chunks']} chunks "
            "(kb-mcp index)", ms(ready["median"]), spread(ready)),
        Row("  floor: one script reads, splits, inserts into SQLite FTS5", ms(floor["median"]),
            spread(floor)),
        Row("  keyword search ready / floor", f"{tp['ratio_of_medians']:.2f}x",
            f"{tp['ratio']['min']:.2f} .. {tp['ratio']['max']:.2f}", "<= 2x",
            verdict(tp["ratio_of_medians"] <= 2.0)),
    ]


def ui_rows(ui: Any) -> list[Row]:
    """The /ui page (benchmarks/ui_bench.py)."""
    if not isinstance(ui, dict) or "first_paint_s" not in ui:
        return []
    fp, ps, gr = ui["first_paint_s"], ui["page_search_s"], ui["graph_render_s"]
    return [
        Row("/ui first contentful paint (loopback)", ms(fp["median"]), spread(fp),
            "<= 300 ms", verdict(fp["median"] <= 0.300)),
        Row("search from the page / same search through MCP (HTTP)",
            f"{ui['search_ratio']:.2f}x", f"page {ms(ps['median'])}, MCP "
            f"{ms(ui['mcp_search_s']['median'])}", "<= 1.2x", verdict(ui["search_ratio"] <= 1.2)),
        Row(f"graph of {ui['graph_nodes']} documents drawn on the page", ms(gr["median"]),
            spread(gr), "<= 1 s", verdict(gr["median"] <= 1.0)),
    ]


def team_rows(team: Any) -> list[Row]:
    """Team mode: per-replica latency and errors, the killed replica, the resumed writer."""
    if not isinstance(team, dict) or "replicas" not in team:
        return []
    out = [Row(f"team: {team['clients']} clients x {team['searches']} searches over "
               f"{len(team['replicas'])} read-only replicas, writer adding {team['growth']} files",
               ms(team["load_s"]), "wall time of the load")]
    for name, r in team["replicas"].items():
        lat = r["latency_s"]
        killed = name == team["killed_replica"]
        p50 = ms(lat["median"]) if lat.get("n") else "-"
        out.append(Row(
            f"  replica {name}{' (SIGKILLed half-way)' if killed else ''}: p50 | errors",
            f"{p50} | {r['errors']}", spread(lat, p95=True),
            f"errors <= {team['killed_in_flight']} in flight" if killed else "0 errors",
            verdict(r["errors"] <= team["killed_in_flight"] if killed else r["errors"] == 0)))
    out += [
        Row("  same results on every replica once the writer is idle",
            str(team["identical_after_idle"]), f"{team['replicas_compared']} replicas, 20 queries",
            "True", verdict(bool(team["identical_after_idle"]))),
        Row("  writer SIGKILLed mid-run, next `kb-mcp index`: documents",
            f"{team['documents_after_resume']}/{team['documents_expected']}",
            f"killed with {team['writer_killed_with_documents']} documents written"
            f"{'' if team['writer_killed_mid_run'] else ' (finished before the kill)'}; findings "
            f"{team['doctor_findings'] or 'none'}", "all, doctor healthy",
            verdict(team["documents_after_resume"] == team["documents_expected"]
                    and team["writer_killed_mid_run"]
                    and team["resume_exit"] == 0 and not team["doctor_findings"])),
    ]
    return out


def table(rows_: list[Row]) -> str:
    headers = ("Measurement", "Median", "Spread", "Target", "Result")
    cells = [headers] + [(r.name, r.value, r.spread, r.target, r.result) for r in rows_]
    widths = [max(len(c[i]) for c in cells) for i in range(len(headers))]
    lines = []
    for n, c in enumerate(cells):
        lines.append(" | ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def environment() -> dict[str, Any]:
    versions: dict[str, str | None] = {}
    for name in ("kb-mcp", "fastembed", "onnxruntime", "lancedb", "mcp", "SQLAlchemy"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "versions": versions,
    }


def write_json(out_dir: Path, stamp: str, record: dict[str, Any]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, indent=2, sort_keys=False)
    path = out_dir / f"{stamp}.json"
    path.write_text(text + "\n")
    (out_dir / "latest.json").write_text(text + "\n")
    return path
