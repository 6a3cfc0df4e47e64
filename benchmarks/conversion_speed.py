"""Conversion speed on generated worst cases: an 11 MB EPUB book and a Word file of 2,672
chained paragraph styles (run through ``python -m benchmarks.fidelity --big-epub
--styles``; decision 0030)."""

from __future__ import annotations

import io
import time
import zipfile

__all__ = ["big_epub", "many_styles_docx", "time_big_epub", "time_many_styles"]


def big_epub(megabytes: int = 11) -> bytes:
    """A generated book of about ``megabytes`` MB of XHTML: 60 chapters of headed sections."""
    paragraph = (
        "<p>The keeper walked the length of the breakwater at dusk, counting lanterns "
        "and noting in the ledger which ones the spray had put out. — {n}</p>\n"
    )
    per_chapter = megabytes * 1_000_000 // 60
    chapters = []
    for c in range(60):
        body, n = [f"<h1>Chapter {c + 1}</h1>"], 0
        while sum(len(b) for b in body) < per_chapter:
            if n % 40 == 0:
                body.append(f"<h2>Watch {n // 40 + 1}</h2>")
            body.append(paragraph.format(n=n))
            n += 1
        chapters.append("".join(body))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        z.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:'
            'opendocument:xmlns:container"><rootfiles><rootfile full-path="content.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        items = "".join(
            f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>'
            for i in range(len(chapters))
        )
        spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
        z.writestr(
            "content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Breakwater'
            f"</dc:title></metadata><manifest>{items}</manifest><spine>{spine}</spine></package>",
        )
        for i, chapter in enumerate(chapters):
            z.writestr(
                f"c{i}.xhtml",
                '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>'
                f"c</title></head><body>{chapter}</body></html>",
            )
    return out.getvalue()


def time_big_epub() -> None:
    from kbmcp_adapters.parsers.budget import ParserLimits
    from kbmcp_adapters.parsers.epub import EpubParser

    data = big_epub()
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        size = sum(i.file_size for i in z.infolist())
    limits = ParserLimits(max_output_chars=100_000_000, max_elements=10_000_000)
    start = time.perf_counter()
    text = EpubParser(limits).extract_text("big.epub", data)
    seconds = time.perf_counter() - start
    print(f"EPUB of {size / 1e6:.1f} MB XHTML -> {len(text) / 1e6:.1f} M chars in {seconds:.2f} s")


def many_styles_docx(count: int = 2672) -> bytes:
    """A Word file with ``count`` paragraph styles (as POI's bug65649.docx has), each based
    on the one before, and a paragraph in every tenth."""
    import docx
    from docx.oxml.parser import parse_xml

    ns = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    document = docx.Document()
    styles = document.styles.element
    for n in range(count):
        based_on = f"S{n - 1}" if n else "Heading1"
        styles.append(parse_xml(
            f'<w:style xmlns:w="{ns}" w:type="paragraph" w:styleId="S{n}">'
            f'<w:name w:val="Style {n}"/><w:basedOn w:val="{based_on}"/></w:style>'
        ))  # fmt: skip
        if n % 10 == 0:
            document.add_paragraph(f"Paragraph in style {n}")._p.style = f"S{n}"
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def time_many_styles() -> None:
    from kbmcp_adapters.parsers.word import DocxParser

    data = many_styles_docx()
    start = time.perf_counter()
    DocxParser().extract_text("styles.docx", data)
    print(f"Word file with 2,672 styles in {time.perf_counter() - start:.2f} s")
