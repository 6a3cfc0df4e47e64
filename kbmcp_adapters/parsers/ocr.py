"""The ``ocr`` format: images as documents, and the image-only pages of PDFs (0053).

``ImageParser`` reads ``.png``, ``.jpg``/``.jpeg``, ``.tif``/``.tiff`` and ``.webp``
(Pillow decodes; a multi-page TIFF is one page per frame): each page's recognised lines
are the served text, pages separated by a blank line, and each chunk cites the page and
the lines of that text it holds. ``PdfParser`` calls ``recognise`` for a page without
a text layer when ``ocr`` is enabled.

Budgets, per page: a page larger than ``MAX_PIXELS`` once rendered (or decoded) is
refused by name, with the rest of the document kept; a page is begun only while the
conversion's ``[parsers].timeout_seconds`` leaves time, and the pages left when it runs
out are refused by name. The memory cap of the parser worker holds the whole conversion.
The engine is loaded once per process (in a worker, before its memory cap is set).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from kbmcp_adapters.parsers.budget import DEFAULT_LIMITS, Meter, ParserLimits
from kbmcp_adapters.parsers.chunking import Unit, join_lines, merge_tiny, split_range
from kbmcp_adapters.parsers.headings import title_from_path
from kbmcp_adapters.parsers.ocrengine import INSTALL_HINT, RapidEngine
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ChunkDraft, ParsedDocument
from kbmcp_core.ports import ChunkBudget

__all__ = ["IMAGE_EXTENSIONS", "INSTALL_HINT", "MAX_PIXELS", "OCR_DPI", "ImageParser",
           "OcrBudget", "engine"]

IMAGE_EXTENSIONS: tuple[str, ...] = ("png", "jpg", "jpeg", "tif", "tiff", "webp")
#: The resolution a PDF page without text is rendered at for recognition.
OCR_DPI = 200
#: The largest page recognised: 40 megapixels (an A4 page at 200 dpi is 3.9).
MAX_PIXELS = 40_000_000
_ENGINE: list[Any] = []


def engine() -> Any:
    """This process's OCR engine (``ocrengine.RapidEngine``), loaded on first use."""
    if not _ENGINE:
        _fewer_malloc_arenas()
        _ENGINE.append(RapidEngine())
    return _ENGINE[0]


def _fewer_malloc_arenas() -> None:
    """Two glibc malloc arenas, not one per thread: ONNX Runtime's threads each reserve
    a 64 MiB arena of address space, which alone broke a worker's 1,024 MiB cap on an A4
    page. No-op where the C library has no ``mallopt`` (macOS, musl)."""
    import contextlib
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).mallopt(_M_ARENA_MAX, 2)


#: glibc's ``M_ARENA_MAX`` option of ``mallopt``.
_M_ARENA_MAX = -8


class OcrBudget:
    """The per-page budgets of one conversion; ``refused`` names each page it refused."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.refused: list[str] = []
        self._out_of_time: list[int] = []

    def allows(self, number: int, width: float, height: float) -> bool:
        """Whether page ``number`` (1-based), ``width`` × ``height`` pixels, is read."""
        if self._out_of_time or self.meter.remaining() <= 0:
            self._out_of_time.append(number)
            return False
        if width * height > MAX_PIXELS:
            self.refused.append(
                f"page {number} not recognised: {width:,.0f} x {height:,.0f} pixels is over "
                f"the {MAX_PIXELS:,} an OCR page may have")
            return False
        return True

    def warnings(self) -> tuple[str, ...]:
        late = self._out_of_time
        if late:
            pages = f"page {late[0]}" if len(late) == 1 else f"pages {late[0]}-{late[-1]}"
            self.refused.append(
                f"{pages} not recognised: the conversion ran out of its "
                f"{self.meter.limits.timeout_seconds:g} s; limit [parsers].timeout_seconds")
            late.clear()
        return tuple(self.refused)


    def read(self, number: int, image: Any) -> list[str]:
        """The lines of page ``number``, a Pillow image; an engine failure (ONNX Runtime
        out of memory under the worker's cap) refuses the page by name."""
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
            why = f": {converted.warnings[0]}" if converted.warnings else ""
            raise ParseError(f"no text recognised in this image{why}")
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
