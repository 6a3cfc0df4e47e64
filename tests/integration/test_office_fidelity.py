"""What a reader sees in a Word file is kept: footnotes and endnotes, pictures' alt text,
hyperlink targets, list numbers; and a file with thousands of styles still converts (files
written by the tests with python-docx, their extra parts added as Word writes them)."""

from __future__ import annotations

import struct
import zlib
from typing import Any

from kbmcp_adapters.parsers.word import DocxParser
from tests.integration.test_parsers import budget
from tests.integration.test_parsers_office import docx_bytes

_W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_RT = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"


def png() -> bytes:
    """A 1x1 PNG."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def add_notes_part(document: Any, kind: str, notes: dict[int, str]) -> None:
    """A ``footnotes.xml``/``endnotes.xml`` part as Word writes it (separators included)."""
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part

    body = "".join(
        f'<w:{kind} w:id="{note_id}"><w:p><w:r><w:{kind}Ref/></w:r>'
        f'<w:r><w:t xml:space="preserve"> {text}</w:t></w:r></w:p></w:{kind}>'
        for note_id, text in notes.items()
    )
    xml = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:{kind}s xmlns:w="{_W_NS}">'
        f'<w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:{kind}>'
        f"{body}</w:{kind}s>"
    )
    content_type = f"application/vnd.openxmlformats-officedocument.wordprocessingml.{kind}s+xml"
    part = Part(PackURI(f"/word/{kind}s.xml"), content_type, xml.encode(), document.part.package)
    document.part.relate_to(part, _RT + kind + "s")


def note_reference(paragraph: Any, kind: str, note_id: int) -> None:
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    run = OxmlElement("w:r")
    ref = OxmlElement(f"w:{kind}Reference")
    ref.set(qn("w:id"), str(note_id))
    run.append(ref)
    paragraph._p.append(run)


def hyperlink(document: Any, paragraph: Any, text: str, url: str) -> None:
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    rid = document.part.relate_to(url, _RT + "hyperlink", is_external=True)
    link = OxmlElement("w:hyperlink")
    link.set(qn("r:id"), rid)
    run = OxmlElement("w:r")
    t = OxmlElement("w:t")
    t.text = text
    run.append(t)
    link.append(run)
    paragraph._p.append(link)


def annotated(document: Any) -> None:
    import io

    document.add_heading("Pumps", level=1)
    p = document.add_paragraph("The pump must be primed before use.")
    note_reference(p, "footnote", 1)
    p = document.add_paragraph("Drain the tank every winter.")
    note_reference(p, "footnote", 2)
    note_reference(p, "endnote", 1)
    add_notes_part(
        document, "footnote", {1: "See the marigold maintenance log.", 2: "Twice in alpine sites."}
    )
    add_notes_part(document, "endnote", {1: "Revised after the 2019 flood survey."})
    document.add_picture(io.BytesIO(png()))
    drawing = document.paragraphs[-1]._p
    for pr in drawing.iter(
        "{http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing}docPr"
    ):
        pr.set("descr", "Cutaway diagram of the impeller housing")
    p = document.add_paragraph("Wiring rules are in ")
    hyperlink(document, p, "the electrical code", "https://example.org/code?part=4")
    document.add_paragraph("Open the valve", style="List Number")
    document.add_paragraph("Start the motor", style="List Number")
    document.add_paragraph("Check the gauge", style="List Number")


def test_docx_footnotes_and_endnotes_are_kept_and_cited_where_they_stand() -> None:
    data = docx_bytes(annotated)
    text = DocxParser().extract_text("pumps.docx", data)
    assert "The pump must be primed before use.[^1]" in text
    assert "Drain the tank every winter.[^2][^i]" in text
    assert (
        "# Footnotes\n\n[^1]: See the marigold maintenance log.\n[^2]: Twice in alpine sites."
        in text
    )
    assert "# Endnotes\n\n[^i]: Revised after the 2019 flood survey." in text
    doc = DocxParser().parse("pumps.docx", data, budget())
    hit = next(c for c in doc.chunks if "marigold" in c.content)
    assert hit.heading_path == ("Footnotes",)
    assert hit.start_line is not None and hit.end_line is not None
    assert "marigold" in "\n".join(text.split("\n")[hit.start_line - 1 : hit.end_line])


def test_docx_alt_text_links_and_list_numbers_are_kept() -> None:
    text = DocxParser().extract_text("pumps.docx", docx_bytes(annotated))
    assert "[image: Cutaway diagram of the impeller housing]" in text
    assert "Wiring rules are in [the electrical code](https://example.org/code?part=4)" in text
    assert "1. Open the valve\n2. Start the motor\n3. Check the gauge" in text


def test_docx_nested_numbering_restarts_sub_lists_and_labels_as_word_does() -> None:
    def build(document: Any) -> None:
        from docx.oxml import OxmlElement
        from docx.oxml.ns import qn

        for text, level in (("Scope", 0), ("Goals", 1), ("Limits", 1), ("Method", 0), ("Tools", 1)):
            p = document.add_paragraph(text, style="List Number")
            ppr = p._p.get_or_add_pPr()
            num_pr = OxmlElement("w:numPr")
            ilvl = OxmlElement("w:ilvl")
            ilvl.set(qn("w:val"), str(level))
            num_id = OxmlElement("w:numId")
            num_id.set(qn("w:val"), "1")
            num_pr.extend([ilvl, num_id])
            ppr.append(num_pr)
        numbering = document.part.numbering_part.element
        for abstract in numbering.findall(qn("w:abstractNum")):
            numbering.remove(abstract)
        for num in numbering.findall(qn("w:num")):
            numbering.remove(num)
        from docx.oxml.parser import parse_xml

        numbering.append(
            parse_xml(
                f'<w:abstractNum xmlns:w="{_W_NS}" w:abstractNumId="7">'
                '<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/>'
                '<w:lvlText w:val="%1."/></w:lvl>'
                '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/>'
                '<w:lvlText w:val="%2)"/></w:lvl>'
                "</w:abstractNum>"
            )
        )
        numbering.append(
            parse_xml(f'<w:num xmlns:w="{_W_NS}" w:numId="1"><w:abstractNumId w:val="7"/></w:num>')
        )

    text = DocxParser().extract_text("plan.docx", docx_bytes(build))
    assert "1. Scope\n  a) Goals\n  b) Limits\n2. Method\n  a) Tools" in text


def test_docx_with_thousands_of_styles_reads_them_all() -> None:
    # a style deep in a long styles part, based on Heading 2, still makes a heading
    def build(document: Any) -> None:
        from docx.oxml.parser import parse_xml

        styles = document.styles.element
        for n in range(3000):
            based_on = "Heading2" if n == 2999 else "Normal"
            styles.append(
                parse_xml(
                    f'<w:style xmlns:w="{_W_NS}" w:type="paragraph" w:styleId="Custom{n}">'
                    f'<w:name w:val="Custom {n}"/><w:basedOn w:val="{based_on}"/></w:style>'
                )
            )
        document.add_paragraph("Deep heading")._p.style = "Custom2999"
        document.add_paragraph("Body under it")._p.style = "Custom5"

    text = DocxParser().extract_text("styles.docx", docx_bytes(build))
    assert text.startswith("## Deep heading\n\nBody under it")
