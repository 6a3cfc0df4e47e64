"""The ``code`` format (decision 0048): how fast source files are chunked at their
definitions, and whether a search by a symbol's name finds its definition first.

``speed``: every source file under ``--src`` (default: this checkout's Python packages and
tests) converted (tree-sitter, in this process) and chunked (the whitespace stand-in
tokenizer), timed apart; files, lines and MB per second, median of ``--repeats``.

``symbols``: ``--src`` copied into a fresh knowledge base with only ``code`` enabled,
indexed with the default model, then every function, method and class name that is
defined exactly once there searched for by its bare name (hybrid search, 10 hits): the
share whose first hit is the chunk of its definition (hit@1), its reciprocal rank (MRR@10),
and the share not found in 10.

``python -m benchmarks.code_bench [speed|symbols|both] [--src DIR] [--repeats N]``
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from kbmcp_adapters.parsers.code import CodeParser
from kbmcp_adapters.parsers.codelangs import CODE_EXTENSIONS
from kbmcp_core.models import extension_of
from kbmcp_core.ports import ChunkBudget

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SRC = ROOT / "kbmcp_core"
BUDGET = ChunkBudget(max_tokens=256, min_tokens=24, counter=lambda text: len(text.split()) + 2)


def _sources(src: Path) -> list[Path]:
    return sorted(p for p in src.rglob("*") if p.is_file()
                  and extension_of(p.name) in CODE_EXTENSIONS and "__pycache__" not in p.parts
                  and not any(part.startswith(".") for part in p.relative_to(src).parts))


def speed(src: Path, repeats: int) -> None:
    files = [(str(p.relative_to(src)), p.read_bytes()) for p in _sources(src)]
    parser = CodeParser()
    lines = sum(data.count(b"\n") + 1 for _, data in files)
    size = sum(len(data) for _, data in files)
    converts: list[float] = []
    chunkings: list[float] = []
    chunks = 0
    for _ in range(repeats):
        start = time.perf_counter()
        outlines = [(path, parser.convert(path, data)) for path, data in files]
        middle = time.perf_counter()
        chunks = sum(len(parser.document(path, outline, BUDGET).chunks)
                     for path, outline in outlines)
        converts.append(middle - start)
        chunkings.append(time.perf_counter() - middle)
    convert, chunking = statistics.median(converts), statistics.median(chunkings)
    total = convert + chunking
    print(f"speed: {len(files)} files, {lines:,} lines, {size / 1e6:.2f} MB -> {chunks} chunks")
    print(f"  convert (tree-sitter + definitions) {convert:.3f} s, chunking {chunking:.3f} s")
    print(f"  {len(files) / total:,.0f} files/s, {lines / total:,.0f} lines/s, "
          f"{size / 1e6 / total:.2f} MB/s (median of {repeats})")


def symbols(src: Path) -> None:
    from kbmcp_adapters.app.bootstrap import bootstrap
    from kbmcp_adapters.app.config import build_settings
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase

    with tempfile.TemporaryDirectory() as scratch:
        kb_path = Path(scratch) / "kb"
        shutil.copytree(src, kb_path, ignore=shutil.ignore_patterns("__pycache__"))
        settings = build_settings(None, cwd=kb_path, kb_path=kb_path, enabled_formats=("code",))
        kb = KnowledgeBase(bootstrap(settings))
        try:
            start = time.perf_counter()
            summary = kb.index()
            took = time.perf_counter() - start
            defined: Counter[str] = Counter()
            where: dict[str, str] = {}
            parser = CodeParser()
            for path in _sources(kb_path):
                rel = str(path.relative_to(kb_path))
                outline = parser.convert(rel, path.read_bytes())
                for _, _, trail in outline.regions:
                    if len(trail) > 1:
                        defined[trail[-1]] += 1
                        where[trail[-1]] = rel
            names = sorted(n for n, count in defined.items() if count == 1 and len(n) > 3)
            first = reciprocal = missed = 0.0
            for name in names:
                hits = kb.search(name, limit=10).results
                rank = next((k for k, h in enumerate(hits, 1) if h.path == where[name]
                             and h.heading_path and h.heading_path[-1] == name), None)
                if rank is None:
                    missed += 1
                    continue
                first += rank == 1
                reciprocal += 1 / rank
            n = len(names)
            print(f"symbols: {summary.added} files indexed in {took:.1f} s "
                  f"({summary.chunks_embedded} chunks embedded); {n} names defined once")
            print(f"  hit@1 {first / n:.3f}, MRR@10 {reciprocal / n:.3f}, "
                  f"not in the top 10 {missed / n:.3f}")
        finally:
            kb.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", default="both", choices=("speed", "symbols", "both"))
    parser.add_argument("--src", type=Path, default=DEFAULT_SRC)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if args.what in ("speed", "both"):
        speed(args.src, args.repeats)
    if args.what in ("symbols", "both"):
        symbols(args.src)


if __name__ == "__main__":
    main()
