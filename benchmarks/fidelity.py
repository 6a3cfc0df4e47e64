"""Conversion fidelity of the office parsers against the original files and markitdown.

For every ``.docx``, ``.pptx``, ``.xlsx`` and ``.epub`` under DIR, the *original's words* are taken
from the file's own XML (read with lxml, or openpyxl for cell values), split into parts:

* Word: ``body`` (paragraph text outside tables), ``tables``, ``footnotes`` (footnotes
  and endnotes), ``alt text`` (pictures' descriptions), ``links`` (hyperlink targets);
* PowerPoint: ``body`` (slide text outside tables), ``tables``, ``notes`` (the speaker
  notes' body), ``alt text``, ``charts`` (each chart's distinct cached strings: titles,
  categories, series names, values, numbers as the chart shows them);
* Excel: ``body`` (every cell value, as a spreadsheet shows it), ``charts``;
* EPUB: ``body`` (the text of every XHTML file but the navigation document, joined as
  a reader sees it; ruby readings and scripts left out), ``alt text``, ``svg`` (text
  inside inline SVG).

Words are ``\\w+`` runs, case-folded. A part's score is the share of its words (counted
with repeats) that the converter's text holds, a word counted at most as often as that
text holds it. kb-mcp is ``extract_text`` of its parser in this process; markitdown runs
in its own interpreter (``--markitdown``, a venv with ``markitdown[docx,pptx,xlsx]``),
converting every file once; both are timed per file, after one untimed file per format
(interpreter start-up and library imports are not a file's cost).

``python -m benchmarks.fidelity DIR [--markitdown /tmp/mdvenv/bin/python] [--json OUT]``
``python -m benchmarks.fidelity --big-epub`` times kb-mcp on a generated 11 MB book, and
``--styles`` on a generated Word file of 2,672 chained paragraph styles.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import statistics
import subprocess
import sys
import time
import zipfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from benchmarks.conversion_speed import time_big_epub, time_many_styles
from kbmcp_adapters.parsers.registry import build_registry

_WORD = re.compile(r"\w+")
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_WP = "{http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing}"
_R_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_RELS = "{http://schemas.openxmlformats.org/package/2006/relationships}"

_MARKITDOWN = """
import json, sys, time
from markitdown import MarkItDown
md = MarkItDown()
out = {}
paths = json.load(sys.stdin)
warm = {}
for path in paths:  # one untimed file per extension: imports are not a file's cost
    warm.setdefault(path.rsplit(".", 1)[-1], path)
for path in warm.values():
    try:
        md.convert(path)
    except Exception:
        pass
for path in paths:
    start = time.perf_counter()
    try:
        text = md.convert(path).text_content
    except Exception as exc:
        text = ""
    out[path] = [text, time.perf_counter() - start]
json.dump(out, sys.stdout)
"""


def words(text: str) -> Counter[str]:
    return Counter(w.casefold() for w in _WORD.findall(text))


def _xml(archive: zipfile.ZipFile, name: str) -> Any:
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, recover=True)
    return etree.fromstring(archive.read(name), parser)


def _inside(element: Any, tag: str) -> bool:
    return any(a.tag == tag for a in element.iterancestors())


def _docx_parts(archive: zipfile.ZipFile) -> dict[str, str]:
    names = set(archive.namelist())
    parts: dict[str, list[str]] = defaultdict(list)
    doc = _xml(archive, "word/document.xml")
    for t in doc.iter(_W + "t"):
        parts["tables" if _inside(t, _W + "tbl") else "body"].append(t.text or "")
    for pr in doc.iter(_WP + "docPr"):
        parts["alt text"].append(pr.get("descr") or "")
    rels = {}
    if "word/_rels/document.xml.rels" in names:
        for rel in _xml(archive, "word/_rels/document.xml.rels").iter(_RELS + "Relationship"):
            if rel.get("TargetMode") == "External" and rel.get("Type", "").endswith("/hyperlink"):
                rels[rel.get("Id")] = rel.get("Target", "")
    for link in doc.iter(_W + "hyperlink"):
        parts["links"].append(rels.get(link.get(_R_ID), ""))
    for name, kind in (("word/footnotes.xml", "footnote"), ("word/endnotes.xml", "endnote")):
        if name in names:
            for note in _xml(archive, name).iter(_W + kind):
                if note.get(_W + "type") in (None, "normal"):
                    parts["footnotes"].extend(t.text or "" for t in note.iter(_W + "t"))
    return {part: " ".join(texts) for part, texts in parts.items()}


def _pptx_parts(archive: zipfile.ZipFile) -> dict[str, str]:
    parts: dict[str, list[str]] = defaultdict(list)
    for name in sorted(archive.namelist()):
        if re.fullmatch(r"ppt/slides/slide\d+\.xml", name):
            slide = _xml(archive, name)
            for t in slide.iter(_A + "t"):
                parts["tables" if _inside(t, _A + "tbl") else "body"].append(t.text or "")
            for pr in slide.iter(_P + "cNvPr"):
                parts["alt text"].append(pr.get("descr") or "")
        elif re.fullmatch(r"ppt/notesSlides/notesSlide\d+\.xml", name):
            for shape in _xml(archive, name).iter(_P + "sp"):
                kinds = [ph.get("type") for ph in shape.iter(_P + "ph")]
                if "body" in kinds:
                    parts["notes"].extend(t.text or "" for t in shape.iter(_A + "t"))
        elif re.fullmatch(r"ppt/charts/chart\d+\.xml", name):
            parts["charts"].extend(_chart_strings(_xml(archive, name)))
    return {part: " ".join(texts) for part, texts in parts.items()}


def _chart_strings(chart: Any) -> list[str]:
    """A chart's distinct cached strings (each series repeats the categories), numbers as
    a chart shows them (``2.0`` is shown ``2``)."""
    seen: dict[str, None] = {}
    for node in chart.iter(_C + "v", _A + "t"):
        text = (node.text or "").strip()
        try:
            number = float(text)
            text = str(int(number)) if number.is_integer() else f"{number:.15g}"
        except ValueError:
            pass
        seen.setdefault(text, None)
    return list(seen)


def _cell(value: object) -> str:
    import datetime as dt

    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime) and value.time() == dt.time(0, 0):
        return value.date().isoformat()
    return "" if value is None else str(value)


def _xlsx_parts(archive: zipfile.ZipFile, data: bytes) -> dict[str, str]:
    import warnings

    from openpyxl import load_workbook

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        book = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        cells = [
            _cell(v) for sheet in book.worksheets for row in sheet.iter_rows(values_only=True)
            for v in row
        ]  # fmt: skip
        book.close()
    charts = [
        text
        for name in archive.namelist()
        if re.fullmatch(r"xl/charts/chart\d+\.xml", name)
        for text in _chart_strings(_xml(archive, name))
    ]
    return {"body": " ".join(cells), "charts": " ".join(charts)}


_EPUB_SKIPPED = frozenset({"script", "style", "rt", "rp", "head"})
_EPUB_BLOCKS = frozenset(
    {"p", "div", "li", "td", "th", "tr", "br", "h1", "h2", "h3", "h4", "h5", "h6",
     "section", "blockquote", "pre", "dt", "dd", "figcaption", "caption", "text"}
)  # fmt: skip


def _epub_parts(archive: zipfile.ZipFile) -> dict[str, str]:
    """Text of every (X)HTML file but the navigation document, joined as a reader sees it:
    inline elements run together, block elements apart."""
    parts: dict[str, list[str]] = defaultdict(list)

    def walk(element: Any, part: str) -> None:
        tag = _local(element.tag)
        if tag in _EPUB_SKIPPED or not tag:
            return
        if tag == "img" and element.get("alt"):
            parts["alt text"].append(" " + (element.get("alt") or "") + " ")
        part = "svg" if tag == "svg" else part
        gap = " " if tag in _EPUB_BLOCKS else ""
        parts[part].append(gap + (element.text or ""))
        for child in element:
            walk(child, part)
            parts[part].append(child.tail or "")
        parts[part].append(gap)

    for name in archive.namelist():
        if not name.lower().endswith((".xhtml", ".html", ".htm")):
            continue
        root = _xml(archive, name)
        if root is None or any(_local(e.tag) == "nav" for e in root.iter()):
            continue
        walk(next((e for e in root.iter() if _local(e.tag) == "body"), root), "body")
    return {part: "".join(texts) for part, texts in parts.items()}


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""


def reference(path: Path) -> dict[str, Counter[str]]:
    data = path.read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        ext = path.suffix.lower()
        if ext == ".docx":
            parts = _docx_parts(archive)
        elif ext == ".pptx":
            parts = _pptx_parts(archive)
        elif ext == ".epub":
            parts = _epub_parts(archive)
        else:
            parts = _xlsx_parts(archive, data)
    return {part: words(text) for part, text in parts.items() if words(text)}


def kept(ref: Counter[str], out: Counter[str]) -> int:
    return sum(min(count, out[word]) for word, count in ref.items())


def kbmcp(paths: list[Path]) -> dict[str, tuple[str, float]]:
    registry = build_registry(["docx", "pptx", "xlsx", "epub"])
    out: dict[str, tuple[str, float]] = {}
    warm = {path.suffix: path for path in reversed(paths)}
    for path in warm.values():  # one untimed file per extension: imports are not its cost
        warm_parser: Any = registry.parser_for(path.suffix)
        with contextlib.suppress(Exception):  # a refused file is reported below
            warm_parser.extract_text(str(path), path.read_bytes())
    for path in paths:
        parser: Any = registry.parser_for(path.suffix)
        data = path.read_bytes()
        start = time.perf_counter()
        try:
            text = parser.extract_text(str(path), data)
        except Exception as exc:  # a refused file keeps nothing (its reason is printed)
            print(f"kb-mcp refused {path.name}: {exc}", file=sys.stderr)
            text = ""
        out[str(path)] = (text, time.perf_counter() - start)
    return out


def markitdown(python: str, paths: list[Path]) -> dict[str, tuple[str, float]]:
    done = subprocess.run(
        [python, "-c", _MARKITDOWN],
        input=json.dumps([str(p) for p in paths]),
        capture_output=True,
        text=True,
        check=True,
        timeout=3600,
    )
    return {path: (text, seconds) for path, (text, seconds) in json.loads(done.stdout).items()}


def compare(root: Path, python: str) -> dict[str, Any]:
    kinds = (".docx", ".pptx", ".xlsx", ".epub")
    paths = sorted(p for p in root.rglob("*") if p.suffix.lower() in kinds)
    refs: dict[str, dict[str, Counter[str]]] = {}
    for path in paths:
        try:
            refs[str(path)] = reference(path)
        except Exception:  # not a readable package: no reference, not compared
            continue
    paths = [p for p in paths if str(p) in refs]
    ours, theirs = kbmcp(paths), markitdown(python, paths)
    table: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    times: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for path in paths:
        fmt = path.suffix.lower().lstrip(".")
        mine, other = words(ours[str(path)][0]), words(theirs[str(path)][0])
        for part, ref in refs[str(path)].items():
            row = table[fmt][part]
            row[0] += sum(ref.values())
            row[1] += kept(ref, mine)
            row[2] += kept(ref, other)
        times[fmt].append((ours[str(path)][1], theirs[str(path)][1]))
    return {
        "files": {fmt: len(t) for fmt, t in times.items()},
        "parts": {
            fmt: {
                part: {"words": n, "kb-mcp": a / n, "markitdown": b / n}
                for part, (n, a, b) in sorted(parts.items())
            }
            for fmt, parts in sorted(table.items())
        },  # fmt: skip
        "seconds": {
            fmt: {
                "kb-mcp total": sum(a for a, _ in t),
                "markitdown total": sum(b for _, b in t),
                "kb-mcp median": statistics.median(a for a, _ in t),
                "markitdown median": statistics.median(b for _, b in t),
                "median per-file speed-up": statistics.median(b / max(a, 1e-6) for a, b in t),
            }
            for fmt, t in sorted(times.items())
        },
    }


def show(result: dict[str, Any]) -> None:
    print("| format | part | words | kb-mcp | markitdown |")
    print("|---|---|---:|---:|---:|")
    for fmt, parts in result["parts"].items():
        for part, row in parts.items():
            print(
                f"| {fmt} ({result['files'][fmt]} files) | {part} | {row['words']:,} | "
                f"{row['kb-mcp']:.1%} | {row['markitdown']:.1%} |"
            )
    print()
    print("| format | kb-mcp total s | markitdown total s | kb-mcp median ms | "
          "markitdown median ms | median speed-up |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|")
    for fmt, s in result["seconds"].items():
        print(
            f"| {fmt} | {s['kb-mcp total']:.2f} | {s['markitdown total']:.2f} | "
            f"{s['kb-mcp median'] * 1000:.1f} | {s['markitdown median'] * 1000:.1f} | "
            f"{s['median per-file speed-up']:.1f}x |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir", nargs="?", type=Path, help="folder of .docx/.pptx/.xlsx files")
    parser.add_argument("--markitdown", default="/tmp/mdvenv/bin/python",
                        help="a Python with markitdown[docx,pptx,xlsx] installed")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the result as JSON here")
    parser.add_argument("--big-epub", action="store_true", help="time a generated 11 MB book")
    parser.add_argument("--styles", action="store_true", help="time a Word file of 2,672 styles")
    args = parser.parse_args()
    if args.big_epub:
        time_big_epub()
    if args.styles:
        time_many_styles()
    if args.dir is None:
        if not (args.big_epub or args.styles):
            parser.error("give DIR, --big-epub or --styles")
        return
    result = compare(args.dir, args.markitdown)
    show(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
