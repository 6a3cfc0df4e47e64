"""What a reader sees in a workbook is kept: a header with nothing under it, and which
sheets are hidden (workbooks written by the tests with openpyxl)."""

from __future__ import annotations

import io

from kbmcp_adapters.parsers.sheets import XlsxParser
from tests.integration.test_parsers import budget


def workbook() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Contacts"
    sheet.append(["Name", "Phone", "Escalation contact"])
    sheet.append(["Ada Lovelace", "555-0101"])
    sheet.append(["Charles Babbage", "555-0102"])
    secret = book.create_sheet("Pins")
    secret.append(["Door", "Code"])
    secret.append(["Boiler room", "4711"])
    secret.sheet_state = "hidden"
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def test_a_header_with_nothing_under_it_is_kept_with_its_row() -> None:
    text = XlsxParser().extract_text("contacts.xlsx", workbook())
    assert text.startswith(
        "# Contacts\n\n## rows 1–3\n\n"
        "Name | Phone | Escalation contact\n"
        "Name: Ada Lovelace | Phone: 555-0101\n"
    )
    doc = XlsxParser().parse("contacts.xlsx", workbook(), budget())
    hit = next(c for c in doc.chunks if "Escalation contact" in c.content)
    assert hit.heading_path == ("Contacts", "rows 1–3")


def test_a_hidden_sheet_is_read_and_marked_hidden() -> None:
    doc = XlsxParser().parse("contacts.xlsx", workbook(), budget())
    hit = next(c for c in doc.chunks if "Boiler room" in c.content)
    assert hit.heading_path == ("Pins (hidden sheet)", "row 2")
    assert "# Contacts\n" in XlsxParser().extract_text("contacts.xlsx", workbook())


def test_a_title_row_above_the_header_is_not_taken_for_the_header() -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Structure"
    sheet.append(["KYC download file structure version 3.1"])
    sheet.append(["Sr. No", "Field Name", "Remarks"])
    sheet.append([1, "APP_PAN_EXEMPT", "Reason must be given for a Sikkim resident"])
    out = io.BytesIO()
    book.save(out)
    text = XlsxParser().extract_text("kyc.xlsx", out.getvalue())
    assert text == (
        "# Structure\n\n## rows 1–3\n\n"
        "KYC download file structure version 3.1\n"
        "Sr. No: 1 | Field Name: APP_PAN_EXEMPT | Remarks: Reason must be given for a Sikkim "
        "resident\n"
    )
