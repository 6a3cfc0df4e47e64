"""A real, mixed folder's first index (issue 29.2): documentation copied from this machine's
``/usr/share/doc`` at run time (Markdown, HTML, plain text and its PDFs), indexed from
nothing with the default model, against embedding the same chunks' texts alone.

The selection is deterministic for a given ``/usr/share/doc``: every candidate file (a
regular file, not a link, with one of ``EXTENSIONS``, not empty, at most ``FILE_CAP``
bytes, a PDF ``PDF_CAP``) in sorted path order; the PDFs first (at most ``PDFS``), then
every n-th of the rest, spread over the whole sorted list so each package's kind of
writing is in it, until ``files`` files or ``max_bytes`` bytes. The copy keeps each
file's path below the source and gets a ``kb-mcp.toml`` that enables those formats (what
``kb-mcp init`` would write for such a folder) and embeds with one thread (see ``CONFIG``).
Nothing from the source is kept in the repository. A full run copies about 5 MB (6,000
chunks on the development machine); the goal is judged on CPU seconds (decision 0045).

``python -m benchmarks.real_folder [--quick]`` prints the selection.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.report import Row, ms, verdict

SOURCE = Path("/usr/share/doc")
#: The formats of the copy, and the file extensions selected for them.
FORMATS = ("md", "txt", "html", "pdf")
EXTENSIONS = frozenset({"md", "markdown", "txt", "html", "htm", "pdf"})
#: A file larger than this is left out (a multi-megabyte changelog or manual would be
#: most of the run on its own); a PDF holds less text per byte, so its cap is higher.
FILE_CAP = 128 * 1024
PDF_CAP = 320 * 1024
PDFS = 2
TARGET = 1.15
#: The copy's config: the formats, and one embedding thread. With more, ONNX Runtime's
#: pool threads spin while they wait for a core, so the CPU time of the same embedding
#: grows with other processes' load; with one there is no pool, and the CPU time of both
#: children is the work itself: the figure the goal is judged on.
CONFIG = '[parsers]\nenabled = [{}]\n\n[embedding]\nthreads = 1\n'


@dataclass(frozen=True, slots=True)
class Selection:
    """How much of the source a run copies."""

    files: int
    max_bytes: int
    repeats: int


FULL = Selection(files=450, max_bytes=5_000_000, repeats=1)
QUICK = Selection(files=8, max_bytes=60_000, repeats=1)


def candidates(source: Path) -> list[Path]:
    """Every file of the source a run may take, sorted by path (see the module docstring)."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(source):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder, name)
            if name.rsplit(".", 1)[-1].lower() not in EXTENSIONS or path.is_symlink():
                continue
            try:
                size = path.stat().st_size
            except OSError:
                continue
            if 0 < size <= (PDF_CAP if name.lower().endswith(".pdf") else FILE_CAP):
                found.append(path)
    return sorted(found)


def select(found: list[Path], files: int, max_bytes: int) -> list[Path]:
    """The PDFs first, then every n-th other file, within both caps."""
    pdfs = [p for p in found if p.suffix.lower() == ".pdf"][:PDFS]
    rest = [p for p in found if p.suffix.lower() != ".pdf"]
    step = max(1, len(rest) // max(1, files - len(pdfs)))
    chosen: list[Path] = []
    total = 0
    for path in pdfs + rest[::step]:
        size = path.stat().st_size
        if len(chosen) >= files or total + size > max_bytes:
            continue
        chosen.append(path)
        total += size
    return chosen


def copy(source: Path, target: Path, selection: Selection) -> dict[str, Any]:
    """A fresh copy of the selected files at ``target``, with its config; the facts."""
    if target.exists():
        shutil.rmtree(target)
    chosen = select(candidates(source), selection.files, selection.max_bytes)
    if not chosen:
        raise RuntimeError(f"no Markdown, HTML, text or PDF files under {source}")
    kinds: dict[str, int] = {}
    for path in chosen:
        dest = target / path.relative_to(source)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
        kind = path.suffix.lower().lstrip(".")
        kinds[kind] = kinds.get(kind, 0) + 1
    (target / "kb-mcp.toml").write_text(
        CONFIG.format(", ".join(f'"{f}"' for f in FORMATS)), encoding="utf-8")
    return {"source": str(source), "files": len(chosen), "kinds": kinds,
            "bytes": sum(p.stat().st_size for p in chosen)}


def measure(work: Path, *, quick: bool = False, source: Path = SOURCE) -> dict[str, Any]:
    """The ``real`` step of ``benchmarks.run``."""
    from benchmarks.steps import index_against_embed, say

    selection = QUICK if quick else FULL
    kb, floor = work / "real-folder", work / "real-folder-floor"
    facts = copy(source, kb, selection)
    copy(source, floor, selection)  # embed-only's texts, so both children run at once
    say(f"real folder: {facts['files']} files from {source} ({facts['kinds']}), "
        f"{facts['bytes'] / 1e6:.1f} MB, {selection.repeats} x (index beside embed-only)")
    return {"corpus": facts, "side_by_side": True,
            **index_against_embed(kb, selection.repeats, floor=floor)}


def rows(real: Any) -> list[Row]:
    """The report's rows: the index against its floor, chunks/s and peak RSS."""
    if not isinstance(real, dict) or "index_s" not in real:
        return []
    idx, emb, corpus = real["index_s"], real["embed_only_s"], real["corpus"]
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(corpus["kinds"].items()))
    out = [
        Row(f"real folder ({kinds}), {real['chunks']} chunks: full index", ms(idx["median"]),
            f"{real['chunks_per_s']['median']:.1f} chunks/s"),
        Row("  embed-only, same chunks", ms(emb["median"]),
            f"{real['embed_chunks_per_s']['median']:.1f} chunks/s"),
    ]
    judged = "run_cpu_ratio_of_medians" in real
    if judged:  # the goal: CPU seconds, which other processes' load does not add to
        cpu, own = real["run_cpu_ratio"], real["own_cpu_s"]
        out += [
            Row("  CPU time, index run / embedding call",
                f"{real['run_cpu_ratio_of_medians']:.3f}x",
                f"{ms(real['index_run_cpu_s']['median'])} / "
                f"{ms(real['embed_call_cpu_s']['median'])}; pairs {cpu['min']:.3f} .. "
                f"{cpu['max']:.3f}", f"<= {TARGET}x",
                verdict(real["run_cpu_ratio_of_medians"] <= TARGET)),
            Row("    of which kb-mcp's own (outside the embedder)", ms(own["median"]),
                f"{own['median'] / real['embed_call_cpu_s']['median']:.1%} of the embedding"),
        ]
    wall = real["ratio_of_medians"]
    out += [  # informational beside the CPU row: other processes' load is in it
        Row("  wall time, index / embed-only", f"{wall:.2f}x",
            f"{real['ratio']['min']:.2f} .. {real['ratio']['max']:.2f}",
            *(() if judged else (f"<= {TARGET}x", verdict(wall <= TARGET)))),
        Row("  peak RSS while indexing it", f"{real['peak_rss_mb']['max']:.0f} MB",
            f"embed-only {real['embed_only_peak_rss_mb']['max']:.0f} MB", "<= 1024 MB",
            verdict(real["peak_rss_mb"]["max"] <= 1024)),
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.real_folder", description=__doc__)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--source", type=Path, default=SOURCE)
    args = p.parse_args(argv)
    selection = QUICK if args.quick else FULL
    for path in select(candidates(args.source), selection.files, selection.max_bytes):
        print(f"{path.stat().st_size:>8}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
