"""Integration tests of the Excel parser: workbooks written with openpyxl, read back."""

from __future__ import annotations

import io
import math
import re
import zipfile
from pathlib import Path

import pytest
from openpyxl import Workbook

from kbmcp_adapters.parsers import sheets
from kbmcp_adapters.parsers.sheets import XlsxParser
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ChunkDraft, ParsedDocument
from kbmcp_core.ports import ChunkBudget
from tests.conftest import OpenKb

HEADER = ["Order", "Customer", "Region", "Amount"]
REGIONS = ["EMEA", "APAC", "Americas"]


def words_counter(text: str) -> int:
    """A stand-in tokenizer: 1.3 tokens per word, plus two special tokens."""
    return math.ceil(len(text.split()) * 1.3) + 2


def budget(max_tokens: int = 256, min_tokens: int = 24) -> ChunkBudget:
    return ChunkBudget(max_tokens=max_tokens, min_tokens=min_tokens, counter=words_counter)


def save(workbook: Workbook) -> bytes:
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def orders_workbook(rows: int = 200) -> Workbook:
    """Sheet "Orders": a header on row 1 and one order per row; an empty sheet between
    it and a small "Contacts" sheet."""
    workbook = Workbook()
    orders = workbook.active
    assert orders is not None
    orders.title = "Orders"
    orders.append(HEADER)
    for n in range(2, rows + 1):
        orders.append([f"SO-{n:04d}", f"customer{n}", REGIONS[n % 3], n * 10])
    workbook.create_sheet("Empty")
    contacts = workbook.create_sheet("Contacts")
    contacts.append(["Name", "Phone"])
    contacts.append(["Ada Lovelace", "555-0101"])
    return workbook


def parse(data: bytes, b: ChunkBudget | None = None, path: str = "sales/q3.xlsx") -> ParsedDocument:
    return XlsxParser().parse(path, data, b or budget())


def rows_of(chunk: ChunkDraft) -> range:
    """The spreadsheet rows a chunk's heading path names (``rows A–B`` or ``row A``)."""
    match = re.fullmatch(r"rows? (\d+)(?:–(\d+))?", chunk.heading_path[-1])
    assert match, chunk.heading_path
    first = int(match.group(1))
    return range(first, int(match.group(2) or first) + 1)


def test_each_sheet_is_a_section_and_every_chunk_names_its_sheet_and_rows() -> None:
    doc = parse(save(orders_workbook()))
    assert doc.title == "q3"  # no title in the workbook properties: the file name
    assert doc.warnings == ()
    assert [c.heading_path[0] for c in doc.chunks if c.heading_path[0] != "Orders"] == ["Contacts"]
    orders = [c for c in doc.chunks if c.heading_path[0] == "Orders"]
    assert len(orders) > 3  # 199 rows do not fit one chunk
    covered = [n for c in orders for n in rows_of(c)]
    assert covered == list(range(2, 201))  # every data row once, in order, no header row
    for chunk in orders:
        assert len(chunk.heading_path) == 2 and chunk.heading == chunk.heading_path[-1]
        lines = chunk.content.splitlines()
        assert len(lines) == len(rows_of(chunk))
        for number, line in zip(rows_of(chunk), lines, strict=True):
            # the header repeated on every row: a chunk (and a line) stands alone
            assert line == (
                f"Order: SO-{number:04d} | Customer: customer{number} | "
                f"Region: {REGIONS[number % 3]} | Amount: {number * 10}"
            )
    (contacts,) = [c for c in doc.chunks if c.heading_path[0] == "Contacts"]
    assert contacts.heading_path == ("Contacts", "row 2")
    assert contacts.content == "Name: Ada Lovelace | Phone: 555-0101"


def test_a_value_from_row_150_is_cited_with_its_row_range_and_line() -> None:
    data = save(orders_workbook())
    text = XlsxParser().extract_text("q3.xlsx", data)
    doc = parse(data)
    (hit,) = [c for c in doc.chunks if "SO-0150" in c.content]
    assert hit.heading_path[0] == "Orders"
    assert 150 in rows_of(hit)
    assert hit.start_line is not None and hit.end_line is not None
    cited = text.splitlines()[hit.start_line - 1 : hit.end_line]
    assert any("SO-0150" in line for line in cited)  # the line range points into the read
    assert f"## {hit.heading_path[-1]}" in cited[:3]  # under its own sub-heading


def test_extract_text_is_the_markdown_that_parse_chunks() -> None:
    data = save(orders_workbook(rows=6))
    text = XlsxParser().extract_text("q3.xlsx", data)
    assert text == (
        "# Orders\n\n## rows 2–6\n\n"
        + "\n".join(
            f"Order: SO-{n:04d} | Customer: customer{n} | Region: {REGIONS[n % 3]} | "
            f"Amount: {n * 10}"
            for n in range(2, 7)
        )
        + "\n\n# Contacts\n\n## row 2\n\nName: Ada Lovelace | Phone: 555-0101\n"
    )
    assert "Empty" not in text  # an empty sheet is left out
    chunks = parse(save(orders_workbook(rows=6))).chunks
    lines = text.splitlines()
    for chunk in chunks:
        assert chunk.start_line is not None and chunk.end_line is not None
        assert chunk.content in "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


def test_a_block_split_by_a_small_budget_names_the_rows_each_piece_holds() -> None:
    doc = parse(save(orders_workbook(rows=40)), budget(max_tokens=40, min_tokens=0))
    orders = [c for c in doc.chunks if c.heading_path[0] == "Orders"]
    assert [n for c in orders for n in rows_of(c)] == list(range(2, 41))
    for chunk in orders:
        assert words_counter(chunk.whole_text) <= 40
        numbers = [int(m) for m in re.findall(r"SO-(\d+)", chunk.content)]
        assert numbers == list(rows_of(chunk))


def test_formulas_read_as_the_value_the_spreadsheet_app_stored() -> None:
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Totals"
    sheet.append(["Item", "Price", "Qty", "Total"])
    sheet.append(["bolts", 2, 3, "=B2*C2"])
    written = save(workbook)
    # openpyxl writes the formula with no computed value: the cell reads as empty (and the
    # header row is kept as a line, since "Total" has nothing under it)
    assert parse(written).chunks[0].content == (
        "Item | Price | Qty | Total\nItem: bolts | Price: 2 | Qty: 3"
    )
    # what Excel or LibreOffice would have stored after computing it
    computed = rewrite_entry(
        written, "xl/worksheets/sheet1.xml", lambda xml: xml.replace(b"<v></v>", b"<v>6</v>")
    )
    assert parse(computed).chunks[0].content == "Item: bolts | Price: 2 | Qty: 3 | Total: 6"
    assert "B2*C2" not in XlsxParser().extract_text("t.xlsx", computed)


def test_values_are_written_as_a_reader_expects_and_markup_stays_text() -> None:
    import datetime as dt

    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "_Draft_ plan <v2>"
    sheet.append(["# of units", "When", "Ratio", "Done", None, "Note"])
    sheet.append([3, dt.datetime(2024, 5, 6), 0.25, True, "orphan", "two\nlines"])
    sheet.append([7.0, dt.datetime(2024, 5, 6, 14, 30), 1 / 3, False, None, "```not code"])
    doc = parse(save(workbook))
    (chunk,) = doc.chunks
    assert chunk.heading_path == ("_Draft_ plan <v2>", "rows 2–3")
    assert chunk.content.splitlines() == [
        "\\# of units: 3 | When: 2024-05-06 | Ratio: 0.25 | Done: TRUE | E: orphan | "
        "Note: two lines",
        "\\# of units: 7 | When: 2024-05-06 14:30:00 | Ratio: 0.333333333333333 | "
        "Done: FALSE | Note: ```not code",
    ]


def test_a_first_row_of_numbers_is_data_and_columns_are_named_by_letter() -> None:
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Readings"
    sheet.append([1, 20.5, "ok"])
    sheet.append([2, 21.5, "ok"])
    (chunk,) = parse(save(workbook)).chunks
    assert chunk.heading_path == ("Readings", "rows 1–2")
    assert chunk.content == "A: 1 | B: 20.5 | C: ok\nA: 2 | B: 21.5 | C: ok"


def test_workbook_title_and_creation_date_come_from_its_properties() -> None:
    import datetime as dt

    workbook = orders_workbook(rows=3)
    workbook.properties.title = "Quarter three orders"
    workbook.properties.created = dt.datetime(2023, 7, 1, 9, 0)
    doc = parse(save(workbook))
    assert (doc.title, doc.date) == ("Quarter three orders", "2023-07-01")


def test_a_workbook_with_only_empty_sheets_has_no_chunks() -> None:
    workbook = Workbook()
    workbook.create_sheet("Also empty")
    data = save(workbook)
    assert parse(data).chunks == ()
    assert XlsxParser().extract_text("e.xlsx", data) == ""


def test_reading_stops_at_the_cell_limit_with_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sheets, "MAX_CELLS", 100)  # 4 cells a row: rows 1..25 fit
    data = save(orders_workbook(rows=200))
    doc = parse(data)
    (warning,) = doc.warnings
    assert "100 cells" in warning and "'Orders' at row 26" in warning
    assert [n for c in doc.chunks for n in rows_of(c)] == list(range(2, 26))
    assert "Contacts" not in XlsxParser().extract_text("q3.xlsx", data)
    assert "Not read past sheet 'Orders' at row 26" in XlsxParser().extract_text("q3.xlsx", data)


def rewrite_entry(data: bytes, name: str, change: object) -> bytes:
    assert callable(change)
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            body = source.read(info)
            target.writestr(info, change(body) if info.filename == name else body)
    return out.getvalue()


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(
            lambda data: rewrite_entry(data, "xl/workbook.xml", lambda _: b"<workbook"),
            id="broken-workbook-xml",
        ),
        pytest.param(lambda data: zip_of({"hello.txt": b"not a workbook"}), id="other-zip"),
        pytest.param(lambda data: b"Order,Customer\nSO-1,Ada\n", id="csv-renamed"),
    ],
)
def test_a_damaged_workbook_is_refused_with_one_line(damage: object) -> None:
    assert callable(damage)
    data = damage(save(orders_workbook(rows=5)))
    for call in (lambda: parse(data), lambda: XlsxParser().extract_text("d.xlsx", data)):
        with pytest.raises(ParseError) as caught:
            call()
        assert str(caught.value) and "\n" not in str(caught.value)


def zip_of(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, body in entries.items():
            archive.writestr(name, body)
    return out.getvalue()


# -- through the library ------------------------------------------------------------------


def test_a_workbook_is_indexed_searched_and_read_with_sheet_and_rows(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Inventory"
    sheet.append(["Part", "Supplier", "Warehouse", "Stock"])
    for n in range(2, 121):
        sheet.append([f"part-{n}", f"supplier {n % 7}", f"bay {n % 11}", n])
    sheet.append(["flux capacitor", "Doc Brown Industries", "Hill Valley", 88])  # row 121
    (tmp_path / "stock.xlsx").write_bytes(save(workbook))
    (tmp_path / "readme.md").write_text("# Readme\n\nNothing about parts.\n", encoding="utf-8")
    kb = open_kb(tmp_path, enabled_formats=("md", "xlsx"))
    summary = kb.index()
    assert (summary.added, summary.failed) == (2, 0)
    hits = kb.search("flux capacitor Hill Valley").results
    top = hits[0]
    assert top.path == "stock.xlsx"
    assert top.heading_path[0] == "Inventory"
    assert 121 in rows_of_path(top.heading_path)
    assert "Part: flux capacitor | Supplier: Doc Brown Industries" in top.content
    view = kb.get_document("stock.xlsx")
    assert view.content.startswith("# Inventory\n\n## rows 2–")
    assert view.content == XlsxParser().extract_text("stock.xlsx", save(workbook))
    assert top.start_line is not None and top.end_line is not None
    cited = view.content.splitlines()[top.start_line - 1 : top.end_line]
    assert any(line.startswith("Part: flux capacitor") for line in cited)


def rows_of_path(path: tuple[str, ...]) -> range:
    return rows_of(ChunkDraft(0, path[-1], path, ""))


def test_a_far_away_cell_costs_bounded_work_not_a_million_empty_rows() -> None:
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Sparse"
    sheet.append(["Key", "Value"])
    sheet.append(["alpha", 1])
    sheet.cell(row=1_000_000, column=16_384, value="far away")  # XFD1000000
    doc = parse(save(workbook))
    (warning,) = doc.warnings
    assert f"{sheets.MAX_CELLS:,} cells" in warning and "'Sparse'" in warning
    assert [c.content for c in doc.chunks] == ["Key: alpha | Value: 1"]
