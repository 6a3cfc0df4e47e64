"""OCR (decision 0053): which engine reads scanned pages best, and what a scanned copy
costs retrieval.

``cer``: an English and a Japanese page (text written for this benchmark) rendered with
pymupdf at 150-300 dpi and degraded with Pillow/numpy (Gaussian blur, 2 degree skew,
Gaussian noise, all three at 150 dpi), read by RapidOCR (the models its wheel carries, on
ONNX Runtime) and by Debian's Tesseract (``tesseract-ocr-eng``/``-jpn``, through
``pytesseract``, told the page's language); character error rate (edit distance over the
reference length, NFKC, whitespace left out: Tesseract spaces Japanese characters apart)
and seconds per page (median of ``--repeats``, this process, 2 cores shared).

``retrieval``: real PDFs (default: those under ``/usr/share/doc``) indexed as they are,
then every page rendered at 200 dpi (grey, JPEG quality 80, as an office scanner
saves) into an image-only PDF and indexed with ``ocr``
enabled; golden queries are sentences taken from each page's text layer (one per page
with enough text), a hit is any chunk of that page. nDCG@10 and hit@1 of both sets, the
seconds per page of the indexing run and the pages refused (their warnings), at kb-mcp's
default budgets unless ``--memory-mb`` or ``--timeout`` says otherwise (each scanned page
adds ``ocr.OCR_PAGE_SECONDS`` to the timeout).

``python -m benchmarks.ocr_bench [cer|retrieval|both] [--engines rapidocr,tesseract]
[--pdfs DIR] [--repeats N] [--memory-mb N] [--timeout S] [--quick]``
"""

from __future__ import annotations

import argparse
import math
import random
import re
import shutil
import statistics
import tempfile
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENGLISH = (
    "Every archive keeps a few pages that were never typed: a signed contract returned by "
    "fax, the minutes of a meeting photographed from a whiteboard, a receipt scanned at the "
    "front desk. A search that cannot read them misses exactly the documents people "
    "remember least well. This page was written to measure how much of such a scan an "
    "optical character reader recovers. It mixes short and long words, numbers such as "
    "2024, 3.14 and 1,250, capitals like NASA and RFC 9110, punctuation (commas; colons: "
    "and quotes) and a few hyphenated terms like well-known and read-only. The reader must "
    "keep the order of the lines and the spaces between the words, because a keyword index "
    "splits the text on them. Blur, a small skew and speckled noise are what an office "
    "scanner adds to a page; a lower resolution makes each letter fewer pixels tall."
)
JAPANESE = (
    "書類の中には、一度も入力されたことのないページがあります。ファクスで戻ってきた契約書、"
    "ホワイトボードを撮影した会議の記録、受付でスキャンした領収書などです。これらを読めない"
    "検索は、人が最も覚えていない文書を見落とします。このページは、光学文字認識がスキャンから"
    "どれだけの文字を取り戻せるかを測るために書かれました。漢字、ひらがな、カタカナ、数字の"
    "二〇二四年や三・一四、そして句読点が混ざっています。ぼかし、わずかな傾き、点状の雑音は、"
    "事務所のスキャナーがページに加えるものです。解像度が低いと、一文字あたりの画素が少なく"
    "なります。索引は行の順序を保つ必要があります。"
)
#: (label, dpi, blur radius, skew degrees, noise sigma)
CONDITIONS: tuple[tuple[str, int, float, float, float], ...] = (
    ("300 dpi clean", 300, 0.0, 0.0, 0.0),
    ("200 dpi clean", 200, 0.0, 0.0, 0.0),
    ("150 dpi clean", 150, 0.0, 0.0, 0.0),
    ("200 dpi blur 1.2 px", 200, 1.2, 0.0, 0.0),
    ("200 dpi skew 2 deg", 200, 0.0, 2.0, 0.0),
    ("200 dpi noise s=40", 200, 0.0, 0.0, 40.0),
    ("150 dpi blur+skew+noise", 150, 0.8, 2.0, 30.0),
)
_SPACE = re.compile(r"\s+")


def _mupdf() -> Any:
    from kbmcp_adapters.parsers.mupdf import pymupdf

    return pymupdf


def render(text: str, japanese: bool) -> Any:
    """An A4 page with ``text`` set in 11 pt (pymupdf's Base-14 Helvetica, or its CJK
    font for Japanese): a one-page PDF document."""
    pymupdf = _mupdf()
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(60, 60, 535, 780), text, fontsize=11,
                        fontname="japan" if japanese else "helv", lineheight=1.5)
    return doc


def degrade(doc: Any, dpi: int, blur: float, skew: float, noise: float, seed: int = 7) -> Any:
    """The first page of ``doc`` as a grey Pillow image at ``dpi``, degraded."""
    import numpy as np
    from PIL import Image, ImageFilter

    pix = doc[0].get_pixmap(dpi=dpi, colorspace=_mupdf().csGRAY)
    image = Image.frombytes("L", (pix.width, pix.height), pix.samples)
    if blur:
        image = image.filter(ImageFilter.GaussianBlur(blur))
    if skew:
        image = image.rotate(skew, resample=Image.Resampling.BILINEAR, expand=True, fillcolor=255)
    if noise:
        pixels = np.asarray(image, dtype=np.float32)
        pixels += np.random.default_rng(seed).normal(0.0, noise, pixels.shape)
        image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    return image


def _normal(text: str) -> str:
    return _SPACE.sub("", unicodedata.normalize("NFKC", text))


def cer(reference: str, found: str) -> float:
    """Character error rate: Levenshtein distance / reference length (NFKC, no spaces)."""
    a, b = _normal(reference), _normal(found)
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1] / max(1, len(a))


def _rapidocr() -> Callable[[Any, bool], str]:
    import numpy as np

    from kbmcp_adapters.parsers.ocrengine import RapidEngine

    engine = RapidEngine()
    return lambda image, japanese: engine.read(np.asarray(image.convert("RGB")))


def _tesseract() -> Callable[[Any, bool], str]:
    import pytesseract

    return lambda image, japanese: str(
        pytesseract.image_to_string(image, lang="jpn" if japanese else "eng"))


ENGINES: dict[str, Callable[[], Callable[[Any, bool], str]]] = {
    "rapidocr": _rapidocr, "tesseract": _tesseract}


def cer_table(engines: list[str], repeats: int, quick: bool) -> None:
    conditions = CONDITIONS[:1] if quick else CONDITIONS
    pages = {"en": render(ENGLISH, False), "ja": render(JAPANESE, True)}
    print("| engine | language | page | CER | s/page |")
    print("| --- | --- | --- | ---: | ---: |")
    for name in engines:
        start = time.perf_counter()
        read = ENGINES[name]()
        print(f"<!-- {name}: engine loaded in {time.perf_counter() - start:.2f} s -->")
        for language, doc in pages.items():
            reference = ENGLISH if language == "en" else JAPANESE
            for label, dpi, blur, skew, noise in conditions:
                image = degrade(doc, dpi, blur, skew, noise)
                times: list[float] = []
                found = ""
                for _ in range(repeats):
                    start = time.perf_counter()
                    found = read(image, language == "ja")
                    times.append(time.perf_counter() - start)
                print(f"| {name} | {language} | {label} | {cer(reference, found):.3f} | "
                      f"{statistics.median(times):.2f} |", flush=True)


def _pdfs(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.pdf") if p.is_file())


def scan_copy(source: Path, target: Path, dpi: int = 200) -> int:
    """``source`` rendered page by page at ``dpi`` into an image-only PDF at ``target``."""
    pymupdf = _mupdf()
    with pymupdf.open(source) as doc, pymupdf.open() as out:
        for page in doc:
            pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
            new = out.new_page(width=page.rect.width, height=page.rect.height)
            new.insert_image(new.rect, stream=pix.tobytes("jpg", jpg_quality=80))
        out.save(target)
        return int(doc.page_count)


def golden(pdfs: list[Path], root: Path, rng: random.Random) -> list[tuple[str, str, int]]:
    """(query, relative path, 1-based page): one sentence-like run of 6-10 words taken
    from each page's text layer that has one."""
    pymupdf = _mupdf()
    queries: list[tuple[str, str, int]] = []
    for path in pdfs:
        with pymupdf.open(path) as doc:
            for number, page in enumerate(doc, 1):
                words = [w for w in re.findall(r"[A-Za-z][A-Za-z'-]+", page.get_text())
                         if len(w) > 2]
                if len(words) < 40:
                    continue
                start = rng.randrange(0, len(words) - 10)
                queries.append((" ".join(words[start:start + rng.randint(6, 10)]),
                                str(path.relative_to(root)), number))
    return queries


def _index_and_score(kb_path: Path, formats: tuple[str, ...], queries: list[tuple[str, str, int]],
                     memory_mb: int, timeout: float) -> tuple[float, float, float, list[str]]:
    from kbmcp_adapters.app.bootstrap import bootstrap
    from kbmcp_adapters.app.config import build_settings
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase

    settings = build_settings(None, cwd=kb_path, kb_path=kb_path, enabled_formats=formats,
                              parsers_timeout_seconds=timeout,
                              parsers_memory_limit_mb=memory_mb)
    kb = KnowledgeBase(bootstrap(settings))
    try:
        start = time.perf_counter()
        summary = kb.index()
        took = time.perf_counter() - start
        ndcg = first = 0.0
        for query, path, page in queries:
            hits = kb.search(query, limit=10).results
            rank = next((k for k, h in enumerate(hits, 1)
                         if h.path == path and h.page == page), None)
            if rank is not None:
                ndcg += 1 / math.log2(rank + 1)
                first += rank == 1
        n = max(1, len(queries))
        refused = list(summary.warnings)  # pages refused, files failed
        return ndcg / n, first / n, took, refused
    finally:
        kb.close()


def retrieval(root: Path, quick: bool, memory_mb: int = 1024, timeout: float = 60.0) -> None:
    pdfs = _pdfs(root)
    rng = random.Random(39)
    with tempfile.TemporaryDirectory() as scratch:
        original, scanned = Path(scratch) / "original", Path(scratch) / "scanned"
        pages = 0
        for path in pdfs:
            rel = path.relative_to(root)
            for kb in (original, scanned):
                (kb / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, original / rel)
            pages += scan_copy(path, scanned / rel)
            if quick:
                break
        queries = golden(_pdfs(original), original, rng)
        if quick:
            queries = queries[:5]
        print(f"retrieval: {len(pdfs) if not quick else 1} PDFs, {pages} pages, "
              f"{len(queries)} golden queries")
        print(f"memory_limit_mb {memory_mb}, timeout_seconds {timeout:g}")
        print("| set | nDCG@10 | hit@1 | index s | s/page | warnings |")
        print("| --- | ---: | ---: | ---: | ---: | --- |")
        for label, kb, formats in (("text layer", original, ("pdf",)),
                                   ("scanned, OCR", scanned, ("pdf", "ocr"))):
            ndcg, first, took, refused = _index_and_score(kb, formats, queries, memory_mb,
                                                          timeout)
            print(f"| {label} | {ndcg:.3f} | {first:.3f} | {took:.1f} | {took / pages:.2f} | "
                  f"{'; '.join(refused) or 'none'} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("what", nargs="?", default="both", choices=("cer", "retrieval", "both"))
    parser.add_argument("--engines", default="rapidocr,tesseract")
    parser.add_argument("--pdfs", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one condition, one PDF")
    parser.add_argument("--memory-mb", type=int, default=1024,
                        help="[parsers].memory_limit_mb of both index runs")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="[parsers].timeout_seconds of both index runs")
    args = parser.parse_args()
    if args.what in ("cer", "both"):
        cer_table(args.engines.split(","), 1 if args.quick else args.repeats, args.quick)
    if args.what in ("retrieval", "both"):
        retrieval(args.pdfs, args.quick, args.memory_mb, args.timeout)


if __name__ == "__main__":
    main()
