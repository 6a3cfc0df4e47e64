"""Measure a read of a large converted document: converted on the spot vs kept by the index.

    .venv/bin/python -m benchmarks.converted_read [--mib 20] [--dir /tmp/kb-read]

Writes an HTML page of one table of about ``--mib`` MiB, indexes it with the model-free
hashing embedder (parser budgets raised, conversion in process), then reads it through
``KnowledgeBase.get_document`` in fresh child processes: once with the index's kept text
(decision 0023), once with the kept text removed (what every read cost before). Each child
reports its wall time and peak RSS; a child that only opens the knowledge base gives the
baseline. Prints one JSON object. Not a test: the numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import resource
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PAGE = "ledger.html"
FORMATS = ("md", "html")


def write_page(path: Path, mib: float) -> int:
    """One table of about ``mib`` MiB: the shape of an exported spreadsheet or log."""
    row = "<tr><td>row {n}</td><td>account {a}</td><td>{v:.2f}</td><td>settled</td></tr>\n"
    target = int(mib * 1024 * 1024)
    with path.open("w", encoding="utf-8") as out:
        out.write("<html><head><title>Ledger</title></head><body><h1>Ledger</h1><table>\n"
                  "<tr><th>row</th><th>account</th><th>value</th><th>state</th></tr>\n")
        n = 0
        while out.tell() < target:
            out.write(row.format(n=n, a=n % 977, v=n * 1.37))
            n += 1
        out.write("</table></body></html>\n")
    return path.stat().st_size


def open_kb(root: Path) -> Any:
    from kbmcp_adapters.app.bootstrap import bootstrap
    from kbmcp_adapters.app.config import build_settings
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase
    from tests.hashing_embedder import HashingEmbedder

    # budgets raised and conversion in this process: the page is converted whole, and its
    # cost shows in this process's peak RSS
    settings = build_settings(None, cwd=root, kb_path=root, enabled_formats=FORMATS,
                              parsers_max_elements=100_000_000,
                              parsers_max_output_chars=1_000_000_000,
                              parsers_timeout_seconds=3600.0, parsers_isolate=False)
    return KnowledgeBase(bootstrap(settings, embedder=HashingEmbedder(settings.embedding_model)))


def child(root: Path, what: str) -> None:
    """In a fresh process: open the knowledge base, then read the page (unless baseline)."""
    kb = open_kb(root)
    started = time.monotonic()
    if what == "index":
        kb.index()
    else:
        kb.stats()  # the store is open in every case
        started = time.monotonic()
    chars = 0
    if what in ("kept", "converted"):
        chars = len(kb.get_document(PAGE).content)
    seconds = time.monotonic() - started
    kb.close()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": round(seconds, 3), "peak_rss_mib": round(peak_kib / 1024, 1),
                      "chars": chars}))


def measure(root: Path, what: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "benchmarks.converted_read", "--child", what,
                          "--dir", str(root)], check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=20.0, help="size of the HTML page")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/kb-converted-read"),
                        help="the knowledge base folder (created)")
    parser.add_argument("--child", choices=("index", "baseline", "kept", "converted"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    root: Path = args.dir
    if args.child:
        child(root, args.child)
        return
    root.mkdir(parents=True, exist_ok=True)
    size = write_page(root / PAGE, args.mib)
    # every step in a child of this small process: Linux carries a process's peak RSS
    # over exec, so a child of a process that indexed would report the indexing's peak
    report: dict[str, Any] = {"page_bytes": size, "index": measure(root, "index"),
                              "baseline": measure(root, "baseline"),
                              "kept": measure(root, "kept")}
    with sqlite3.connect(root / ".kb-mcp" / "index.db") as conn:  # as before decision 0023
        conn.execute("DELETE FROM converted_text")
    conn.close()
    report["converted"] = measure(root, "converted")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
