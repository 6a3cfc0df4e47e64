"""Builders of small files that ask a parser for far more work than their size, or that
are intact but unusual: each mirrors a file from a public test suite (Apache POI) or a
probe of issue 22, written here by hand so the tests need no download."""

from __future__ import annotations

import io
import zipfile

__all__ = [
    "broken_link_epub",
    "deep_html",
    "office_folder",
    "shared_strings_workbook",
    "slideshow_as_pptx",
    "strict_workbook",
]

_MIB = 1024 * 1024
_SML = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_CT = "application/vnd.openxmlformats-officedocument.spreadsheetml"


def _column(index: int) -> str:
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def shared_strings_workbook(cells: int = 12_000, string_bytes: int = _MIB) -> bytes:
    """POI's ``poc-shared-strings.xlsx`` rebuilt: one shared string of ``string_bytes``
    referenced by ``cells`` cells (100 to a row). About 30 KB on disk; expanded, 12 GB."""
    rows = []
    for row in range(cells // 100):
        refs = "".join(f'<c r="{_column(c)}{row + 1}" t="s"><v>0</v></c>' for c in range(100))
        rows.append(f'<row r="{row + 1}">{refs}</row>')
    sheet = f'<worksheet xmlns="{_SML}"><sheetData>{"".join(rows)}</sheetData></worksheet>'
    text = ("lorem ipsum " * (string_bytes // 12 + 1))[:string_bytes]
    strings = f'<sst xmlns="{_SML}" count="{cells}" uniqueCount="1"><si><t>{text}</t></si></sst>'
    parts = {
        "[Content_Types].xml": (
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
            'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
            f'<Override PartName="/xl/workbook.xml" ContentType="{_CT}.sheet.main+xml"/>'
            f'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="{_CT}.worksheet+xml"/>'
            f'<Override PartName="/xl/sharedStrings.xml" ContentType="{_CT}.sharedStrings+xml"/>'
            "</Types>"
        ),
        "_rels/.rels": (
            f'<Relationships xmlns="{_PKG_REL}"><Relationship Id="rId1" '
            f'Type="{_REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>'
        ),
        "xl/workbook.xml": (
            f'<workbook xmlns="{_SML}" xmlns:r="{_REL}"><sheets>'
            '<sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>'
        ),
        "xl/_rels/workbook.xml.rels": (
            f'<Relationships xmlns="{_PKG_REL}">'
            f'<Relationship Id="rId1" Type="{_REL}/worksheet" Target="worksheets/sheet1.xml"/>'
            f'<Relationship Id="rId2" Type="{_REL}/sharedStrings" Target="sharedStrings.xml"/>'
            "</Relationships>"
        ),
        "xl/worksheets/sheet1.xml": sheet,
        "xl/sharedStrings.xml": strings,
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in parts.items():
            archive.writestr(name, '<?xml version="1.0" encoding="UTF-8"?>' + body)
    return out.getvalue()


def deep_html(depth: int = 400_000) -> bytes:
    """A page of ``depth`` nested ``<b>`` tags (never closed) around one sentence: about
    1.2 MB, and a tree of ``depth`` elements once parsed."""
    return (
        "<html><head><title>Deep</title></head><body><p>Nested greenhouse notes.</p>"
        + "<b>" * depth
        + "tomato seedlings</body></html>"
    ).encode()


#: Transitional namespace -> its Strict name (ISO/IEC 29500 Strict).
_STRICT = (
    (_SML.encode(), b"http://purl.oclc.org/ooxml/spreadsheetml/main"),
    (_REL.encode(), b"http://purl.oclc.org/ooxml/officeDocument/relationships"),
)


def strict_workbook() -> bytes:
    """A Strict OOXML workbook like POI's ``SampleSS.strict.xlsx``: text on three sheets,
    every part in the ``purl.oclc.org`` namespaces."""
    from openpyxl import Workbook

    book = Workbook()
    first = book.active
    assert first is not None
    first.title = "Beds"
    first.append(["Crop", "Bed"])
    first.append(["basil", "north bed"])
    book.create_sheet("Tools").append(["spade", "rake", "dibber"])
    book.create_sheet("Notes").append(["compost turned weekly"])
    raw = io.BytesIO()
    book.save(raw)
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(raw.getvalue())) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            body = source.read(info)
            for transitional, strict in _STRICT:
                body = body.replace(transitional, strict)
            target.writestr(info.filename, body)
    return out.getvalue()


def slideshow_as_pptx() -> bytes:
    """A slide show (``.ppsx`` content type) saved under ``.pptx``, like POI's
    ``stress022.pptx``."""
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Irrigation plan"
    slide.placeholders[1].text = "Drip lines along the raised beds"
    raw = io.BytesIO()
    deck.save(raw)
    presentation = b"presentationml.presentation.main+xml"
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(raw.getvalue())) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            body = source.read(info)
            if info.filename == "[Content_Types].xml":
                assert presentation in body
                body = body.replace(presentation, b"presentationml.slideshow.main+xml")
            target.writestr(info.filename, body)
    return out.getvalue()


def broken_link_epub() -> bytes:
    """An EPUB whose reading order lists a chapter the archive does not hold."""
    out = io.BytesIO()
    chapter = (
        '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>c'
        "</title></head><body><h1>Seed saving</h1><p>Dry bean pods on the vine.</p>"
        "</body></html>"
    )
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:'
            'opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        archive.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
            'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            '<dc:title>Garden Book</dc:title><dc:identifier id="id">garden</dc:identifier>'
            "<dc:language>en</dc:language></metadata><manifest>"
            '<item id="c1" href="one.xhtml" media-type="application/xhtml+xml"/>'
            '<item id="c2" href="lost/two.xhtml" media-type="application/xhtml+xml"/>'
            '</manifest><spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>',
        )
        archive.writestr("OEBPS/one.xhtml", chapter)
    return out.getvalue()


def office_folder(count: int) -> dict[str, bytes]:
    """``count`` small office files (Word, PowerPoint, Excel in turn), each a page of
    distinct text: the folder the parser pool's per-file cost is measured on."""
    import docx
    from openpyxl import Workbook
    from pptx import Presentation

    files: dict[str, bytes] = {}
    for n in range(count):
        raw = io.BytesIO()
        kind = n % 3
        if kind == 0:
            document = docx.Document()
            document.add_heading(f"Report {n}", 1)
            for p in range(8):
                document.add_paragraph(f"Paragraph {p} of report {n} on crop rotation plots.")
            document.save(raw)
            files[f"report-{n:03}.docx"] = raw.getvalue()
        elif kind == 1:
            deck = Presentation()
            for s in range(4):
                slide = deck.slides.add_slide(deck.slide_layouts[1])
                slide.shapes.title.text = f"Deck {n} slide {s}"
                slide.placeholders[1].text = f"Watering schedule {n}.{s} for the east beds"
            deck.save(raw)
            files[f"deck-{n:03}.pptx"] = raw.getvalue()
        else:
            book = Workbook()
            sheet = book.active
            assert sheet is not None
            sheet.append(["Plot", "Crop", "Yield"])
            for r in range(40):
                sheet.append([f"P{n}-{r}", f"crop {r % 7}", r * 1.5])
            book.save(raw)
            files[f"yields-{n:03}.xlsx"] = raw.getvalue()
    return files
