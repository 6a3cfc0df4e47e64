"""Peak RSS while indexing 100,000 chunks (issue 29.3, "peak RSS while indexing stays
<= 1 GB"): a generated folder of short notes indexed from nothing by ``KnowledgeBase.index``
in a fresh child, as ``kb-mcp index`` runs it (the model released before ``compact``), with
the real model loaded by the first embedding call and run there once on a full batch of
texts as long as its window, on the route the run's texts take (so its weights, and its
arena, which grows to the longest text it runs, are in the process), and the stand-in's
hashed vectors for every chunk (embedding 100,000 chunks for real takes hours on two
cores). What grows with the folder (rows, ids, the plan, LanceDB's writes) is all there;
the model's share is what a real run holds too. The row names the model that was loaded.

The ``index100k`` step of ``benchmarks.run``; a quick run indexes 2,000 chunks.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from benchmarks.measure import run_child, worker
from benchmarks.report import Row, verdict

#: short notes (1-4.5 KB) make about four chunks each
FILES, QUICK_FILES = 22_500, 500
LIMIT_MB = 1024


def measure(work: Path, *, quick: bool = False) -> dict[str, Any]:
    from benchmarks import corpus
    from benchmarks.steps import say

    kb = work / "index-rss"
    if kb.exists():
        shutil.rmtree(kb)
    files = QUICK_FILES if quick else FILES
    info = corpus.generate(kb, files, seed=41, max_kb=4.5)
    say(f"index RSS: {info.files} generated notes, {info.bytes / 1e6:.1f} MB, indexed with the "
        "model loaded (one batch through it, every vector hashed)")
    load = os.getloadavg()[0]
    child = run_child(worker("build_with_model", kb=str(kb)), timeout=7200.0)
    return {"files": info.files, "bytes": info.bytes, "chunks": child.data["chunks"],
            "seconds": child.data["seconds"], "model_texts": child.data["model_texts"],
            "model": child.data.get("model", "?"),
            # the child's own peak (VmHWM); wait4's figure also holds what the parent had
            "peak_rss_mb": child.data["own_peak_rss_mb"], "wait4_max_rss_mb": child.max_rss_mb,
            "cpu_s": child.cpu_s, "load_before": load,
            "load_after": os.getloadavg()[0]}


def rows(got: Any) -> list[Row]:
    """The row: the index child's peak RSS against the 1 GB limit."""
    if not isinstance(got, dict) or "peak_rss_mb" not in got:
        return []
    return [Row(f"peak RSS while indexing {got['chunks']:,} chunks (model loaded)",
                f"{got['peak_rss_mb']:.0f} MB",
                f"{got['files']:,} files in {got['seconds']:.0f} s; {got['model_texts']} "
                f"window-long texts through {got.get('model', '?')}, the rest hashed",
                f"<= {LIMIT_MB} MB", verdict(got["peak_rss_mb"] <= LIMIT_MB))]
