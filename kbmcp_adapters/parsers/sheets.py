"""Excel parser (openpyxl, imported lazily): each sheet as Markdown rows, then chunked.

* The bytes pass ``zipguard.check_archive`` first (ZIP bombs, encrypted workbooks); a
  file openpyxl cannot read is a ``ParseError`` with a one-line reason.
* The workbook is read in read-only mode with ``data_only``: a formula cell reads as the
  value the spreadsheet application last computed and stored. A workbook written by a
  program and never opened in Excel or LibreOffice stores no such value, so its formula
  cells read as empty.
* Each sheet with a value in it becomes a ``# <sheet name>`` section (empty sheets are
  left out, in workbook order otherwise). Its first non-empty row is the header when every
  value in it is text; otherwise the columns are named by their letters (A, B, ...) and
  that row is data. An empty header cell is named by its column letter. Rows of a single
  value above a header of three or more (a title, a note) are not the header: they are
  kept as lines of their own before the rows. A sheet hidden
  in the workbook is read too, its heading marked ``# <sheet name> (hidden sheet)``.
* Every other non-empty row becomes one line of ``header: value`` pairs joined by
  `` | `` (empty cells left out), so any run of lines, and any chunk, names its columns.
  Cell text is kept on one line (line breaks read as spaces). When a header names a
  column with no value under it, the header row is kept as a line of its own (the first
  of the sheet's rows), so that header's words are not lost. Rows are grouped in blocks
  of about ``BLOCK_TOKENS`` tokens (estimated from the text alone), each under a
  ``## rows A–B`` heading with the real spreadsheet row numbers, so a hit's heading path
  is ``(sheet, "rows A–B")``.
* ``extract_text`` returns exactly that Markdown and ``parse`` chunks it with
  ``markdown_chunks``; the blocks cannot depend on the embedding budget (reads have none),
  so when a block does not fit the budget and is split, each piece's heading path names
  the rows that piece really holds. A chunk never mixes two sheets.
* Work is bounded: after ``MAX_CELLS`` cells (empty ones included) in a workbook the rest
  is not read; the text served to a reader ends with a note saying so, and the parse has
  one warning.
* Work is budgeted (``budget.Meter``): every cell read counts as an element and every
  character of cell text as produced, so a workbook whose shared strings multiply into
  more text than ``[parsers].max_output_chars`` is refused, saying so, after reading only
  as many cells as that takes.
* A Strict OOXML workbook (``purl.oclc.org`` namespaces) is read through
  ``strict.transitional``, which renames its namespaces to the Transitional ones.
* ``convert`` does the reading (in a parser worker process when isolation is on) and
  gives a picklable ``_Book``; ``text_of`` and ``document`` turn it into the served text
  and the chunks.
* Title from the workbook properties, else the file name; date from its creation date.
"""

from __future__ import annotations

import datetime as dt
import io
import math
import re
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from kbmcp_adapters.parsers.budget import DEFAULT_LIMITS, Meter, ParserLimits
from kbmcp_adapters.parsers.chunking import token_count
from kbmcp_adapters.parsers.headings import clean_heading, title_from_path
from kbmcp_adapters.parsers.markdown import markdown_chunks, markdown_headings
from kbmcp_adapters.parsers.strict import transitional
from kbmcp_adapters.parsers.zipguard import check_archive
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ChunkDraft, ParsedDocument
from kbmcp_core.outline import HeadingMark
from kbmcp_core.ports import ChunkBudget

__all__ = ["BLOCK_TOKENS", "MAX_CELLS", "XlsxParser"]

#: Cells (empty ones included) read from one workbook at most.
MAX_CELLS = 200_000
#: Estimated tokens of row lines per ``## rows`` block, so that a block usually fits the
#: default 256-token window whole, heading trail included.
BLOCK_TOKENS = 200
#: What a subword tokenizer reads as at least one token each: a CJK character, a run of
#: up to six other word characters, one punctuation mark.
_CJK = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff"
_PIECE = re.compile(f"[{_CJK}]|[^\\W{_CJK}]{{1,6}}|[^\\w\\s]")
_SPACE = re.compile(r"\s+")
#: A line start Markdown would read as a heading or a code fence.
_MARKDOWN_START = re.compile(r"^(?:#|`{3}|~{3})")
#: Characters a heading's clean-up reads as markup; escaped when a sheet name holds them.
_MARKUP = re.compile(r"([\\`*_{}\[\]()#+\-.!<>|~])")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")


class XlsxParser:
    """Parses ``.xlsx`` workbooks through openpyxl."""

    extensions: tuple[str, ...] = ("xlsx",)

    def __init__(self, limits: ParserLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits

    def convert(self, path: str, data: bytes) -> _Book:
        return _read_workbook(data, Meter(self.limits))

    def text_of(self, book: _Book) -> str:
        return book.text + book.notice

    def extract_text(self, path: str, data: bytes) -> str:
        return self.text_of(self.convert(path, data))

    def headings(self, path: str, text: str) -> tuple[HeadingMark, ...]:
        return markdown_headings(text)  # the Markdown it was converted to

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        return self.document(path, self.convert(path, data), budget)

    def document(self, path: str, book: _Book, budget: ChunkBudget) -> ParsedDocument:
        # Only a heading with no text of its own (``# Sheet``) folds into the block below
        # it: merging a small block into a neighbour would cite the wrong rows or sheet.
        no_merge = ChunkBudget(budget.max_tokens, 1, budget.counter)
        chunks, _ = markdown_chunks(book.text, no_merge)
        return ParsedDocument(
            title=book.title or title_from_path(path),
            chunks=tuple(_exact_rows(chunk, book, budget) for chunk in chunks),
            date=book.date,
            warnings=book.warnings,
            text=book.text + book.notice,
        )


@dataclass(slots=True)
class _Book:
    """A workbook as Markdown, and which sheet row each line of it shows."""

    text: str = ""
    title: str | None = None
    date: str | None = None
    warnings: tuple[str, ...] = ()
    #: Said to a reader after the text (never indexed) when reading stopped early.
    notice: str = ""
    #: 1-based line number -> spreadsheet row number, for row lines only.
    row_at_line: dict[int, int] = field(default_factory=dict)
    #: 1-based line number -> the label of the ``## rows`` block the line is under.
    block_at_line: dict[int, str] = field(default_factory=dict)


@contextmanager
def _open(data: bytes) -> Iterator[Any]:
    """The workbook, read-only with cached values; every openpyxl failure a ParseError."""
    check_archive(data)
    data = transitional(data)
    from openpyxl import load_workbook

    try:
        with warnings.catch_warnings():  # "no default style", unsupported extensions, ...
            warnings.simplefilter("ignore")
            book = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (ParseError, MemoryError):  # out of memory is not damage (the worker says so)
        raise
    except Exception as exc:  # InvalidFileException, BadZipFile, KeyError, XML errors, ...
        raise ParseError(f"not a readable XLSX workbook ({_reason(exc)})") from None
    try:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield book
        except (ParseError, MemoryError):
            raise
        except Exception as exc:  # a sheet that fails while it is streamed
            raise ParseError(f"damaged XLSX workbook ({_reason(exc)})") from None
    finally:
        book.close()


def _reason(exc: Exception) -> str:
    first = (str(exc).strip().splitlines() or [""])[0][:120].rstrip(".")
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _read_workbook(data: bytes, meter: Meter) -> _Book:
    book = _Book()
    lines: list[str] = []
    budget = [MAX_CELLS]
    with _open(data) as workbook:
        props = workbook.properties
        book.title = _SPACE.sub(" ", str(getattr(props, "title", None) or "")).strip() or None
        created = getattr(props, "created", None)
        if isinstance(created, dt.datetime | dt.date):
            book.date = created.isoformat()[:10]
        for sheet in workbook.worksheets:
            rows, cut_at = _sheet_rows(sheet, budget, meter)
            if rows:
                hidden = str(getattr(sheet, "sheet_state", "visible")) != "visible"
                _write_sheet(book, lines, str(sheet.title), rows, hidden)
            if cut_at is not None:
                where = f"sheet {str(sheet.title)[:60]!r} at row {cut_at:,}"
                book.warnings = (
                    f"only the first {MAX_CELLS:,} cells were read (stopped in {where}); "
                    "the rest of the workbook is not indexed",
                )
                book.notice = (
                    f"\n(Not read past {where}: the workbook has more than {MAX_CELLS:,} cells.)\n"
                )
                break
    book.text = "\n".join(lines) + "\n" if lines else ""
    return book


@dataclass(frozen=True, slots=True)
class _Row:
    number: int
    cells: list[str]
    #: every non-empty cell holds text (not a number, date or truth value)
    all_text: bool


def _sheet_rows(sheet: Any, budget: list[int], meter: Meter) -> tuple[list[_Row], int | None]:
    """The sheet's non-empty rows, read until the workbook's cell budget runs out; the
    second value is the row reading stopped at, if it did. Text is counted before it is
    copied: a cell holding a shared string is the one string, until it is cleaned up."""
    sheet.reset_dimensions()  # never trust the declared size: read the cells there are
    rows: list[_Row] = []
    for number, values in enumerate(sheet.iter_rows(values_only=True), start=1):
        budget[0] -= max(1, len(values))
        if budget[0] < 0:
            return rows, number
        meter.elements(max(1, len(values)))
        meter.chars(sum(len(value) for value in values if isinstance(value, str)))
        cells = [_cell_text(value) for value in values]
        if any(cells):
            texts = (v for v, c in zip(values, cells, strict=True) if c)
            rows.append(_Row(number, cells, all(isinstance(v, str) for v in texts)))
    return rows, None


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.15g}"
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0, 0):
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="seconds")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return _SPACE.sub(" ", str(value)).strip()


def _column_letter(index: int) -> str:
    """``A`` for 0, ``Z`` for 25, ``AA`` for 26, ..."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def _write_sheet(
    book: _Book, lines: list[str], name: str, rows: Sequence[_Row], hidden: bool = False
) -> None:
    titles = _title_rows(rows)
    rows = rows[len(titles) :]
    first = rows[0]
    header: list[str] = first.cells if first.all_text else []
    body = rows[1:] if first.all_text else rows
    if lines:
        lines.append("")
    lines.extend([f"# {_heading(name)}{' (hidden sheet)' if hidden else ''}", ""])
    plain = [(row.number, _line(" | ".join(text for text in row.cells if text))) for row in titles]
    if not body:  # a header and nothing under it
        plain.append((first.number, _line(" | ".join(text for text in first.cells if text))))
        label = _label(plain[0][0], first.number)
        lines.extend([f"## {label}", ""])
        for number, text in plain:
            book.row_at_line[len(lines) + 1] = number
            book.block_at_line[len(lines) + 1] = label
            lines.append(text)
        return
    row_lines = [(row.number, _line(_pairs(header, row.cells))) for row in body]
    used = {index for row in body for index, text in enumerate(row.cells) if text}
    if any(text and index not in used for index, text in enumerate(header)):
        row_lines.insert(0, (first.number, _line(" | ".join(text for text in header if text))))
    row_lines[:0] = plain
    for block in _blocks(row_lines):
        label = _label(block[0][0], block[-1][0])
        lines.extend([f"## {label}", ""])
        for number, text in block:
            book.row_at_line[len(lines) + 1] = number
            book.block_at_line[len(lines) + 1] = label
            lines.append(text)
        lines.append("")
    lines.pop()


def _title_rows(rows: Sequence[_Row]) -> list[_Row]:
    """Leading rows of one value each (a sheet's title, a note) above a header row of at
    least three text values: they are not the header, and stay lines of their own."""
    for at in range(len(rows) - 1):
        if sum(1 for text in rows[at].cells if text) != 1:
            return []
        below = rows[at + 1]
        if below.all_text and sum(1 for text in below.cells if text) >= 3:
            return [*rows[: at + 1]]
    return []


def _pairs(header: Sequence[str], cells: Sequence[str]) -> str:
    pairs = []
    for index, text in enumerate(cells):
        if not text:
            continue
        key = header[index] if index < len(header) and header[index] else _column_letter(index)
        pairs.append(f"{key}: {text}")
    return " | ".join(pairs)


def _line(text: str) -> str:
    """A row line Markdown reads as text, never as a heading or a fence."""
    return "\\" + text if _MARKDOWN_START.match(text) else text


def _heading(name: str) -> str:
    """The sheet name as heading text that reads back as the same name."""
    name = _SPACE.sub(" ", name).strip() or "(unnamed sheet)"
    if clean_heading(_ATX_CLOSING.sub("", name)) == name:
        return name
    escaped = _MARKUP.sub(r"\\\1", name)
    return escaped if clean_heading(escaped) == name else name


def _label(first: int, last: int) -> str:
    return f"row {first}" if first == last else f"rows {first}–{last}"


def _estimate(text: str) -> int:
    return len(_PIECE.findall(text))


def _blocks(row_lines: Sequence[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """Consecutive rows in blocks of about ``BLOCK_TOKENS`` estimated tokens; a last block
    that would be under half that shares the rows of the one before it evenly instead."""
    blocks: list[list[tuple[int, str]]] = []
    costs: dict[int, int] = {}
    size = 0
    for row in row_lines:
        cost = costs[row[0]] = _estimate(row[1])
        if blocks and size + cost <= BLOCK_TOKENS:
            blocks[-1].append(row)
            size += cost
        else:
            blocks.append([row])
            size = cost
    if len(blocks) > 1 and size < BLOCK_TOKENS // 2:
        pair = blocks[-2] + blocks[-1]
        half = sum(costs[number] for number, _ in pair) / 2
        total, cut = 0, 0
        while cut < len(pair) - 1 and (cut == 0 or total < half):
            total += costs[pair[cut][0]]
            cut += 1
        blocks[-2:] = [pair[:cut], pair[cut:]]
    return blocks


def _exact_rows(chunk: ChunkDraft, book: _Book, budget: ChunkBudget) -> ChunkDraft:
    """A chunk that holds only part of its block names the rows it really holds."""
    if chunk.start_line is None or chunk.end_line is None or not chunk.heading_path:
        return chunk
    span = range(chunk.start_line, chunk.end_line + 1)
    numbers = [book.row_at_line[n] for n in span if n in book.row_at_line]
    block = next((book.block_at_line[n] for n in span if n in book.block_at_line), None)
    if not numbers or block is None or chunk.heading_path[-1] != block:
        return chunk
    label = _label(numbers[0], numbers[-1])
    if label == block:
        return chunk
    path = (*chunk.heading_path[:-1], label)
    if token_count(budget, path, chunk.content) > budget.max_tokens:
        return chunk  # the block's range is still true, only wider
    return replace(chunk, heading=label, heading_path=path)
