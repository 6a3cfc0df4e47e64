"""The cost of the parser worker pool (decision 0022), and the shared-strings workbook.

``pool``: a generated folder of office files (Word, PowerPoint, Excel in turn) parsed
through the registry in this process and through the worker pool; the per-file cost of
isolation is the difference of the two totals per file (the first file of each side, which
imports the libraries or starts the worker, is timed apart).

``shared``: an index run (real embedder) over POI's poc-shared-strings.xlsx rebuilt and one
note: wall time, this process's peak RSS above its baseline, the worker's peak RSS, and the
message the workbook gets.

``python -m benchmarks.parser_pool [pool|shared|both] [--files N] [--repeats N]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from kbmcp_adapters.parsers.budget import ParserLimits
from kbmcp_adapters.parsers.isolation import Isolation
from kbmcp_adapters.parsers.registry import FormatRegistry, build_registry
from kbmcp_core.ports import ChunkBudget

FORMATS = ("md", "docx", "pptx", "xlsx")
BUDGET = ChunkBudget(max_tokens=256, min_tokens=24, counter=lambda text: len(text.split()) + 2)


def _status_kib(pid: int | str, field: str) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _parse_all(registry: FormatRegistry, files: dict[str, bytes]) -> tuple[float, float]:
    """(seconds for the first file, seconds for all the others)."""
    names = sorted(files)
    started = time.perf_counter()
    for n, name in enumerate(names):
        if n == 1:
            first, started = time.perf_counter() - started, time.perf_counter()
        parser = registry.parser_for(name.rsplit(".", 1)[1])
        assert parser is not None
        assert parser.parse(name, files[name], BUDGET).chunks
    return first, time.perf_counter() - started


def pool(count: int, repeats: int) -> dict[str, Any]:
    from tests.integration.amplifiers import office_folder

    files = office_folder(count)
    sides: dict[str, list[tuple[float, float]]] = {"in_process": [], "pool": []}
    for _ in range(repeats):
        for side in sides:
            isolation = Isolation() if side == "pool" else None
            registry = build_registry(FORMATS, ParserLimits(), isolation)
            try:
                sides[side].append(_parse_all(registry, files))
            finally:
                registry.close()
    rest = {side: min(rest for _, rest in runs) for side, runs in sides.items()}
    per_file = {side: round(rest[side] / (count - 1) * 1000, 2) for side in sides}
    return {
        "files": count,
        "first_file_s": {
            side: round(statistics.median(f for f, _ in runs), 3) for side, runs in sides.items()
        },
        "per_file_ms": per_file,
        "pool_cost_per_file_ms": round(per_file["pool"] - per_file["in_process"], 2),
    }


def shared() -> dict[str, Any]:
    from kbmcp_adapters.app.knowledge_base import open_knowledge_base
    from tests.integration.amplifiers import shared_strings_workbook

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "poc-shared-strings.xlsx").write_bytes(shared_strings_workbook())
        (root / "note.md").write_text("# Note\n\nCompost the leaves.\n", encoding="utf-8")
        kb = open_knowledge_base(root, enabled_formats=("md", "xlsx"))
        kb.warm_up()
        baseline = _status_kib("self", "VmRSS")
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")  # the peak (VmHWM) starts again from here
        started = time.perf_counter()
        summary = kb.index()
        seconds = time.perf_counter() - started
        parent_peak = _status_kib("self", "VmHWM")
        pool = getattr(kb._container.registry, "pool", None)  # the registry bootstrap built
        workers = pool.pids() if pool is not None else ()
        worker_peak = max((_status_kib(pid, "VmHWM") for pid in workers), default=0)
        kb.close()
    return {
        "seconds": round(seconds, 2),
        "parent_baseline_mib": baseline // 1024,
        "parent_peak_mib": parent_peak // 1024,
        "worker_peak_mib": worker_peak // 1024,
        "messages": [w for w in summary.warnings if w.startswith("poc-shared-strings")],
        "added": summary.added,
        "failed": summary.failed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", default="both", choices=("pool", "shared", "both"))
    parser.add_argument("--files", type=int, default=200, help="office files in the folder")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each side")
    args = parser.parse_args()
    if args.what in ("shared", "both"):
        print("shared-strings workbook:", shared())
    if args.what in ("pool", "both"):
        print("parser pool:", pool(args.files, args.repeats))


if __name__ == "__main__":
    main()
