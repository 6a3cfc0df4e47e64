"""What a ranged read costs (decision 0033): 1,000 lines of a document over the read cap
through ``KnowledgeBase.get_document(start_line=..., max_lines=1000)`` against reading the
same file from disk in the same process and cutting the same lines out of it.

    .venv/bin/python -m benchmarks.ranged_read WORK [--quick]

The document is Markdown of about 3 MiB (0.5 MiB with ``--quick``), indexed with the
model-free hashing embedder. Each round reads one range both ways, alternating which goes
first, at a start line that moves through the document (never line 1, whose reply also
carries the outline). The ranged read pays for the guard chain (a root-bound open, one
``fstat``, the whole file read through that descriptor), the document's row in the index
and the range's bookkeeping; the floor pays for ``read_bytes`` and the same cut. Goal:
median ranged / median floor <= 1.2.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.measure import summary
from benchmarks.report import Row, ms, spread, verdict

DOC = "notes/ledger.md"
LINES = 1000
#: ranged / floor, median of each
TARGET = 1.2


def write_document(path: Path, mib: float) -> int:
    """Markdown of about ``mib`` MiB: 40 sections of numbered rows with some non-ASCII."""
    target = int(mib * 1024 * 1024)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8", newline="") as out:
        out.write("# Ledger\n\n")
        for section in range(40):
            out.write(f"## Part {section}\n\n")
            while out.tell() < target * (section + 1) // 40:
                out.write(f"row {n} of part {section}: shipment ÆØÅ-{n * 7919 % 100003} "
                          f"cleared customs on day {n % 365}\n")
                n += 1
            out.write("\n")
    return path.stat().st_size


def _floor(path: Path, start: int) -> str:
    """The same lines, read in this process without kb-mcp."""
    lines = path.read_bytes().decode("utf-8").split("\n")
    return "\n".join(lines[start - 1:start - 1 + LINES]) + "\n"


def measure(work: Path, quick: bool = False) -> dict[str, Any]:
    from kbmcp_adapters.app.bootstrap import bootstrap
    from kbmcp_adapters.app.config import build_settings
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase
    from tests.hashing_embedder import HashingEmbedder

    mib, rounds, warmup = (0.5, 20, 3) if quick else (3.0, 200, 20)
    root = work / "ranged-read-kb"
    if root.exists():
        shutil.rmtree(root)
    size = write_document(root / DOC, mib)
    settings = build_settings(None, cwd=root, kb_path=root)
    kb = KnowledgeBase(bootstrap(settings, embedder=HashingEmbedder()))
    path = root / DOC
    try:
        kb.index()
        total = int(str(kb.get_document(DOC, start_line=2, max_lines=1).as_dict()["total_lines"]))
        starts = [2 + (i * 7919) % max(total - LINES, 1) for i in range(rounds + warmup)]
        ranged: list[float] = []
        floor: list[float] = []
        for i, start in enumerate(starts):
            order = ("ranged", "floor") if i % 2 else ("floor", "ranged")
            got: dict[str, str] = {}
            for what in order:
                began = time.perf_counter()
                if what == "ranged":
                    got[what] = kb.get_document(DOC, start_line=start, max_lines=LINES).content
                else:
                    got[what] = _floor(path, start)
                spent = time.perf_counter() - began
                if i >= warmup:
                    (ranged if what == "ranged" else floor).append(spent)
            if got["ranged"] != got["floor"]:
                raise AssertionError(f"the ranged read of lines {start}+ differs from the file")
    finally:
        kb.close()
    return {
        "bytes": size, "total_lines": total, "lines": LINES, "rounds": rounds,
        "ranged_s": summary(ranged), "floor_s": summary(floor),
        "ratio": statistics.median(ranged) / statistics.median(floor),
    }


def rows(result: Any) -> list[Row]:
    if not isinstance(result, dict) or "ratio" not in result:
        return []
    mib = result["bytes"] / (1024 * 1024)
    return [
        Row(f"ranged read, {result['lines']:,} lines of a {mib:.1f} MiB document",
            ms(result["ranged_s"]["median"]), spread(result["ranged_s"], p95=True)),
        Row("  the same lines read from disk in the process", ms(result["floor_s"]["median"]),
            spread(result["floor_s"], p95=True)),
        Row("  ranged read / disk read", f"{result['ratio']:.2f}x",
            f"{result['rounds']} rounds", f"<= {TARGET}x", verdict(result["ratio"] <= TARGET)),
    ]


if __name__ == "__main__":
    print(json.dumps(measure(Path(sys.argv[1]), quick="--quick" in sys.argv), indent=1))
