"""The ``ocr`` format: images as documents, and the image-only pages of PDFs (0053).

``ImageParser`` reads ``.png``, ``.jpg``/``.jpeg``, ``.tif``/``.tiff`` and ``.webp``
(Pillow decodes; a multi-page TIFF is one page per frame): each page's recognised lines
are the served text, pages separated by a blank line, and each chunk cites the page and
the lines of that text it holds. ``PdfParser`` calls ``recognise`` for a page without
a text layer when ``ocr`` is enabled.

Budgets, per page: a page larger than ``MAX_PIXELS`` once rendered (or decoded) is
refused by name, with the rest of the document kept. Time: a document's pages to
recognise add ``OCR_PAGE_SECONDS`` each to the conversion's ``[parsers].timeout_seconds``
(``OcrBudget.plan``), and at most ``MAX_OCR_PAGES`` of them are read: the pages past it,
and those left when the time runs out, are refused by name. A blank page (no contrast)
is not recognised, and a page is begun only while the time left would fit one and a half
of the slowest page so far. The memory cap of the parser worker holds the whole conversion.
The engine is loaded once per process (in a worker, before its memory cap is set).
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from typing import Any

from kbmcp_adapters.parsers.budget import DEFAULT_LIMITS, Meter, ParserLimits
from kbmcp_adapters.parsers.chunking import Unit, join_lines, merge_tiny, split_range
from kbmcp_adapters.parsers.formats import IMAGE_EXTENSIONS
from kbmcp_adapters.parsers.headings import title_from_path
from kbmcp_adapters.parsers.ocrengine import INSTALL_HINT, RapidEngine
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ChunkDraft, ParsedDocument
from kbmcp_core.ports import ChunkBudget

__all__ = ["IMAGE_EXTENSIONS", "INSTALL_HINT", "MAX_OCR_PAGES", "MAX_PIXELS", "OCR_DPI",
           "OCR_PAGE_SECONDS", "ImageParser", "OcrBudget", "engine"]

#: The resolution a PDF page without text is rendered at for recognition.
OCR_DPI = 200
#: The largest page recognised: 40 megapixels (an A4 page at 200 dpi is 3.9).
MAX_PIXELS = 40_000_000
#: Seconds each page to recognise adds to the conversion's time budget: an A4 page takes
#: 3-9 s in one process at load 6, 21-30 s in a worker at load 6-13 (docs/benchmarks.md).
OCR_PAGE_SECONDS = 30.0
#: The most pages of one document recognised (150 x 30 s, 75 minutes, is the most time
#: OCR adds to one file): a PDF of 10,000 image pages must not run for hours.
MAX_OCR_PAGES = 150
#: A page is begun only while the time left is this many times the slowest page so far:
#: a page cannot be stopped midway, and one begun too late overran the pool's clock,
#: which killed the worker and lost the whole document.
SLOWEST_PAGES_LEFT = 1.5
#: A page whose darkest and lightest pixels differ by less than this is blank.
BLANK_CONTRAST = 32
_ENGINE: list[Any] = []


def engine() -> Any:
    """This process's OCR engine (``ocrengine.RapidEngine``), loaded on first use."""
    if not _ENGINE:
        _tame_malloc()
        _ENGINE.append(RapidEngine())
    return _ENGINE[0]


def _tame_malloc() -> None:
    """glibc's malloc set for ONNX Runtime's large, short-lived buffers (0053):

    * two arenas, not one per thread: ONNX Runtime's threads each reserve a 64 MiB arena
      of address space, which alone broke a worker's 1,024 MiB cap on an A4 page;
    * a fixed 1 MiB mmap threshold: by default glibc raises it (up to 32 MiB) each time
      a large block is freed, so ONNX Runtime's tensors then came from the heap, which
      kept about 420 MiB after each page and peaked 890-950 MiB over the worker's ready
      size on a dense page (the cap is 1,024): the late pages of a scan were refused
      "out of memory". Fixed, each such buffer is its own mapping, returned when freed:
      ~170 MiB kept, peaks of ~480 MiB (measured per page, docs/benchmarks.md).

    No-op where the C library has no ``mallopt`` (macOS, musl)."""
    import contextlib
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        libc.mallopt(_M_ARENA_MAX, 2)
        libc.mallopt(_M_MMAP_THRESHOLD, 1024 * 1024)


#: glibc's ``M_ARENA_MAX`` and ``M_MMAP_THRESHOLD`` options of ``mallopt``.
_M_ARENA_MAX = -8
_M_MMAP_THRESHOLD = -3


class OcrBudget:
    """The per-page budgets of one conversion; ``refused`` names each page it refused."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.refused: list[str] = []
        self._out_of_time: list[int] = []
        self._over_count: list[int] = []
        self._begun = 0
        self._slowest = 0.0

    def plan(self, pages: int) -> None:
        """The document holds ``pages`` pages to recognise: each (up to ``MAX_OCR_PAGES``)
        gives the conversion ``OCR_PAGE_SECONDS`` more."""
        self.meter.extend(min(pages, MAX_OCR_PAGES) * OCR_PAGE_SECONDS)

    def allows(self, number: int, width: float, height: float) -> bool:
        """Whether page ``number`` (1-based), ``width`` × ``height`` pixels, is read."""
        self._begun += 1
        if self._begun > MAX_OCR_PAGES:
            self._over_count.append(number)
            return False
        if self._out_of_time or self.meter.remaining() <= SLOWEST_PAGES_LEFT * self._slowest:
            self._out_of_time.append(number)
            return False
        if width * height > MAX_PIXELS:
            self.refused.append(
                f"page {number} not recognised: {width:,.0f} x {height:,.0f} pixels is over "
                f"the {MAX_PIXELS:,} an OCR page may have")
            return False
        return True

    def warnings(self) -> tuple[str, ...]:
        late, over = self._out_of_time, self._over_count
        if late:
            self.refused.append(
                f"{_pages(late)} not recognised: the conversion ran out of its "
                f"{self.meter.seconds:g} s ([parsers].timeout_seconds and "
                f"{OCR_PAGE_SECONDS:g} s a scanned page); limit [parsers].timeout_seconds")
            late.clear()
        if over:
            self.refused.append(
                f"{_pages(over)} not recognised: kb-mcp recognises at most "
                f"{MAX_OCR_PAGES} scanned pages of one document")
            over.clear()
        return tuple(self.refused)

    def read(self, number: int, image: Any) -> list[str]:
        """The lines of page ``number``, a Pillow image (none when it is blank); an
        engine failure (ONNX Runtime out of memory under the worker's cap) refuses the
        page by name."""
        darkest, lightest = image.convert("L").getextrema()
        if lightest - darkest < BLANK_CONTRAST:
            return []
        began = time.monotonic()
        try:
            return recognise(image, self.meter)
        except (ParseError, MemoryError):
            raise
        except Exception as exc:  # noqa: BLE001  (RapidOCR wraps ONNX Runtime's errors)
            said = [line for line in str(exc).splitlines() if line.strip()]
            why = said[-1].strip()[-160:] if said else type(exc).__name__
            if "bad_alloc" in why:
                why = "out of memory; limit [parsers].memory_limit_mb"
            self.refused.append(f"page {number} not recognised: {why}")
            return []
        finally:
            self._slowest = max(self._slowest, time.monotonic() - began)


def _pages(numbers: list[int]) -> str:
    return f"page {numbers[0]}" if len(numbers) == 1 else f"pages {numbers[0]}-{numbers[-1]}"


def recognise(image: Any, meter: Meter) -> list[str]:
    """The lines of a Pillow image, counted against ``meter``."""
    import numpy as np

    lines: list[str] = engine().read_lines(np.asarray(image.convert("RGB")))
    meter.elements(1 + len(lines))
    for line in lines:
        meter.chars(len(line) + 1)
    return lines


@dataclass(frozen=True, slots=True)
class ImagePages:
    """An image converted: each page's recognised lines, and the pages refused."""

    pages: tuple[tuple[str, ...], ...]
    warnings: tuple[str, ...]


class ImageParser:
    """Reads images by OCR (the ``ocr`` format)."""

    extensions: tuple[str, ...] = IMAGE_EXTENSIONS

    def __init__(self, limits: ParserLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits

    def convert(self, path: str, data: bytes) -> ImagePages:
        from PIL import Image, ImageSequence, UnidentifiedImageError

        meter = Meter(self.limits)
        budget = OcrBudget(meter)
        Image.MAX_IMAGE_PIXELS = None  # the page budget below names the limit instead
        try:
            image = Image.open(io.BytesIO(data))
            budget.plan(int(getattr(image, "n_frames", 1)))
            pages: list[tuple[str, ...]] = []
            for number, frame in enumerate(ImageSequence.Iterator(image), 1):
                if budget.allows(number, *frame.size):
                    pages.append(tuple(budget.read(number, frame)))
                else:
                    pages.append(())
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:120]
            raise ParseError(f"not a readable image ({reason})") from None
        return ImagePages(tuple(pages), budget.warnings())

    def text_of(self, converted: ImagePages) -> str:
        return "\n\n".join("\n".join(lines) for lines in converted.pages if lines)

    def extract_text(self, path: str, data: bytes) -> str:
        return self.text_of(self.convert(path, data))

    def headings(self, path: str, text: str) -> None:
        return None  # an image's outline is its pages, which the index holds

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        return self.document(path, self.convert(path, data), budget)

    def document(self, path: str, converted: ImagePages, budget: ChunkBudget) -> ParsedDocument:
        if not any(converted.pages):
            if converted.warnings:  # pages refused by the budget: not read, so a failure
                raise ParseError(f"no text recognised in this image: {converted.warnings[0]}")
            # read whole and nothing found (an icon, a photo): a document with no text,
            # which the run skips as "no text to index" like an empty file, never a failure
            return ParsedDocument(title=title_from_path(path), chunks=(), warnings=(), text="")
        chunks: list[ChunkDraft] = []
        first = 0  # the page's first line in the served text (0-based)
        multi = len(converted.pages) > 1
        for number, lines in enumerate(converted.pages, 1):
            if not lines:
                continue
            path_here = (f"Page {number}",) if multi else ()
            for unit in page_units(list(lines), path_here, budget, number):
                chunks.append(ChunkDraft(
                    ordinal=len(chunks), heading=path_here[-1] if path_here else "",
                    heading_path=path_here, content=unit.text, page=number,
                    start_line=first + unit.start + 1, end_line=first + unit.end + 1))
            first += len(lines) + 1
        return ParsedDocument(title=title_from_path(path), chunks=tuple(chunks),
                              warnings=converted.warnings, text=self.text_of(converted))


def page_units(lines: list[str], path: tuple[str, ...], budget: ChunkBudget,
               label: int) -> list[Unit]:
    """One page's lines packed under the budget (line ranges 0-based in ``lines``)."""
    units = split_range(lines, 0, len(lines) - 1, path, budget, label)

    def render(start: int, end: int, unit_label: int) -> str:
        return join_lines(lines, start, end)

    return merge_tiny(units, budget, render=render, path_of=lambda _: path,
                      across_labels=False)
