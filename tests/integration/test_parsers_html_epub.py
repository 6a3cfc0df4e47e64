"""Integration tests of the HTML (bs4 + lxml) and EPUB (pymupdf) parsers, and both formats
end to end through the library: index, search with citations, and both read routes."""

from __future__ import annotations

import io
import math
import re
import zipfile
from pathlib import Path

import pytest

from kbmcp_adapters.parsers.epub import EpubParser
from kbmcp_adapters.parsers.htmlpage import HtmlParser
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ParsedDocument
from kbmcp_core.ports import ChunkBudget
from kbmcp_core.uris import doc_uri
from tests.conftest import OpenKb, write_files

WORD = re.compile(r"\w+")


def words_counter(text: str) -> int:
    """A stand-in tokenizer: 1.3 tokens per word, plus two special tokens."""
    return math.ceil(len(text.split()) * 1.3) + 2


def budget(max_tokens: int = 256, min_tokens: int = 0) -> ChunkBudget:
    return ChunkBudget(max_tokens=max_tokens, min_tokens=min_tokens, counter=words_counter)


def assert_citations_point_into(text: str, doc: ParsedDocument) -> None:
    """Every chunk's line range, read from the served text, holds every word of the chunk."""
    lines = text.split("\n")
    assert doc.chunks
    for chunk in doc.chunks:
        assert chunk.start_line is not None and chunk.end_line is not None
        cited = "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        assert set(WORD.findall(chunk.content)) <= set(WORD.findall(cited)), chunk


# -- HTML ------------------------------------------------------------------------------

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Operations   Handbook</title>
<style>.banner { colour: chartreuse; }</style><script>var trackerpixel = 1;</script></head>
<body>
<header><a href="/">Home</a> sitebanner</header>
<nav><ul><li>menuentry one</li><li>menuentry two</li></ul></nav>
<main><article>
<h1>Deployments</h1>
<p>Every release ships through the <b>canary</b> ring first.<br>Then the fleet.</p>
<h2>Rollback</h2>
<p>Press the revert switch within ten minutes.</p>
<h3>Ports</h3>
<table><caption>Service ports</caption>
<thead><tr><th>Service</th><th>Port</th><th>Owner</th></tr></thead>
<tbody><tr><td>gateway</td><td>8443</td><td>platform team</td></tr>
<tr><td>ledger</td><td>5432</td><td>finance squad</td></tr></tbody></table>
<pre>
# kubectl rollout undo deploy/gateway
```
</pre>
<h2>Monitoring</h2>
<ul><li>latency dashboards</li><li>error budgets</li></ul>
<noscript>enablejavascript please</noscript>
</article></main>
<aside>relatedlinks sidebar</aside>
<footer>copyrightnotice 2024</footer>
<template><p>templatecontent</p></template>
</body></html>
"""


def html(page: str | bytes, path: str = "wiki/ops.html") -> tuple[str, ParsedDocument]:
    data = page.encode("utf-8") if isinstance(page, str) else page
    parser = HtmlParser()
    return parser.extract_text(path, data), parser.parse(path, data, budget())


def test_html_headings_become_the_heading_path_and_the_title_comes_from_title() -> None:
    text, doc = html(PAGE)
    assert doc.title == "Operations Handbook"
    paths = [c.heading_path for c in doc.chunks]
    assert paths == [
        ("Deployments",),
        ("Deployments", "Rollback"),
        ("Deployments", "Rollback", "Ports"),
        ("Deployments", "Monitoring"),
    ]
    by_heading = {c.heading: c.content for c in doc.chunks}
    assert "canary ring first." in by_heading["Deployments"]
    assert "latency dashboards" in by_heading["Monitoring"]
    assert doc.warnings == ()


def test_html_boilerplate_is_dropped_from_chunks_and_served_text() -> None:
    text, doc = html(PAGE)
    served = text + "\n".join(c.content for c in doc.chunks)
    for word in (
        "sitebanner",
        "menuentry",
        "trackerpixel",
        "chartreuse",
        "relatedlinks",
        "copyrightnotice",
        "enablejavascript",
        "templatecontent",
        "Home",
    ):
        assert word not in served, word


def test_html_tables_become_one_line_per_row() -> None:
    text, doc = html(PAGE)
    assert (
        "Service | Port | Owner\ngateway | 8443 | platform team\nledger | 5432 | finance squad"
        in text
    )
    ports = next(c for c in doc.chunks if c.heading == "Ports")
    assert "ledger | 5432 | finance squad" in ports.content


def test_html_line_ranges_point_into_the_served_markdown() -> None:
    text, doc = html(PAGE)
    assert text.startswith("# Deployments\n")
    assert_citations_point_into(text, doc)
    long_page = "<h1>Log</h1>" + "".join(
        f"<p>Entry {n} recorded the pump pressure and the valve state.</p>" for n in range(80)
    )
    data = long_page.encode()
    long_doc = HtmlParser().parse("log.html", data, budget(max_tokens=60))
    assert len(long_doc.chunks) > 3
    assert_citations_point_into(HtmlParser().extract_text("log.html", data), long_doc)


def test_html_preformatted_text_is_never_read_as_headings() -> None:
    text, doc = html(PAGE)
    assert "# kubectl rollout undo deploy/gateway" in text
    assert all("kubectl" not in " ".join(c.heading_path) for c in doc.chunks)
    ports = next(c for c in doc.chunks if c.heading == "Ports")
    assert "kubectl rollout undo" in ports.content


def test_html_title_falls_back_to_the_first_h1_then_the_file_name() -> None:
    assert html("<h1>Runbook  Index</h1><p>body</p>")[1].title == "Runbook Index"
    assert html("<p>just a paragraph</p>", "wiki/team_notes-2024.html")[1].title == (
        "team notes 2024"
    )


@pytest.mark.parametrize(
    "page",
    [
        b"",
        b"   \n",
        b"<html><head><title>T</title></head></html>",
        b"<nav>only navigation</nav><script>x()</script>",
    ],
)
def test_an_empty_html_page_is_a_document_without_chunks(page: bytes) -> None:
    text, doc = html(page)
    assert doc.chunks == ()
    assert text.strip() == ""


def test_broken_html_is_read_as_far_as_it_can_be_recovered() -> None:
    broken = b"<html><body><h1>Outage<p>The primary <b>database failed <table><tr><td>node7"
    text, doc = html(broken)
    assert [c.heading_path for c in doc.chunks] == [("Outage",)]
    assert "database failed" in doc.chunks[0].content and "node7" in doc.chunks[0].content
    assert_citations_point_into(text, doc)


def test_html_nested_far_deeper_than_the_stack_is_still_read() -> None:
    page = "<h1>Deep</h1>" + "<div><span>" * 5000 + "bottom text" + "</span></div>" * 5000
    text, doc = html(page)
    assert text == "# Deep\n\nbottom text\n"
    assert doc.chunks[0].heading_path == ("Deep",)


@pytest.mark.parametrize(
    ("encoding", "declaration"),
    [
        ("windows-1252", '<meta charset="windows-1252">'),
        ("iso-8859-1", '<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">'),
        ("shift_jis", '<meta charset="Shift_JIS">'),
        ("utf-16", ""),  # Python writes a byte-order mark
    ],
)
def test_html_in_a_declared_charset_or_with_a_bom_is_decoded(
    encoding: str, declaration: str
) -> None:
    heading, body = (
        ("Menü", "Café crème, naïve façade")
        if encoding != "shift_jis"
        else ("会議", "東京の会議室は三階です")
    )
    page = (
        f"<html><head>{declaration}<title>{heading}</title></head>"
        f"<body><h1>{heading}</h1><p>{body}</p>"
    )
    text, doc = html(page.encode(encoding))
    assert body in text
    assert (doc.title, doc.chunks[0].heading, doc.chunks[0].content) == (heading, heading, body)
    assert doc.warnings == ()


def test_undeclared_non_utf8_html_is_read_as_a_browser_reads_it_with_one_warning() -> None:
    # libxslt's manual declares no charset and names "Jan Pokorn\xfd" in Latin-1
    page = "<h1>Caf\u00e9</h1><p>cr\u00e8me br\u00fbl\u00e9e \u20ac5 recipe</p>".encode("cp1252")
    text, doc = html(page + b"<p>odd \x81 byte</p>")
    assert doc.chunks[0].heading == "Caf\u00e9"
    assert "cr\u00e8me br\u00fbl\u00e9e \u20ac5 recipe" in doc.chunks[0].content
    assert "odd \x81 byte" in text and "\ufffd" not in text  # every byte read, none lost
    assert doc.warnings == ("text is not valid in UTF-8 (byte 7) and the page declares no "
                            "charset; read as Windows-1252, as a browser does",)


# -- EPUB ------------------------------------------------------------------------------


def make_epub(
    chapters: list[tuple[str, str]],
    title: str = "Harbour Tales",
    extra: dict[str, bytes] | None = None,
) -> bytes:
    """An EPUB 3 built by hand: mimetype, container, OPF, XHTML chapters and a nav."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(
            zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED
        )
        z.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" '
            'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
            '<rootfile full-path="OEBPS/content.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        items = "".join(
            f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>'
            for i in range(len(chapters))
        )
        spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
        z.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
            'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            f'<dc:identifier id="id">urn:uuid:1</dc:identifier><dc:title>{title}</dc:title>'
            "<dc:language>en</dc:language></metadata><manifest>"
            '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" '
            f'properties="nav"/>{items}</manifest><spine>{spine}</spine></package>',
        )
        links = "".join(
            f'<li><a href="c{i}.xhtml">{name}</a></li>' for i, (name, _) in enumerate(chapters)
        )
        z.writestr(
            "OEBPS/nav.xhtml",
            '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml" '
            'xmlns:epub="http://www.idpf.org/2007/ops"><head><title>Contents</title></head>'
            f'<body><nav epub:type="toc"><ol>{links}</ol></nav></body></html>',
        )
        for i, (name, body) in enumerate(chapters):
            z.writestr(
                f"OEBPS/c{i}.xhtml",
                '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head>'
                f"<title>{name}</title></head><body>{body}</body></html>",
            )
        for name, content in (extra or {}).items():
            z.writestr(name, content)
    return buf.getvalue()


BOOK = [
    (
        "The Harbour",
        "<h1>The Harbour</h1><p>Ships arrived at dawn carrying amber cargo.</p>"
        "<h2>Night Watch</h2><p>The lighthouse keeper counted seventeen lanterns.</p>",
    ),
    (
        "The Mountain",
        "<h1>Ascent</h1><p>Climbers reached the glacier plateau by noon.</p>"
        + "".join(f"<p>Camp {n} stored rope, fuel and barley flour.</p>" for n in range(60)),
    ),
]


def test_epub_chapters_are_the_top_of_the_heading_path_with_their_text() -> None:
    data = make_epub(BOOK)
    doc = EpubParser().parse("books/tales.epub", data, budget(max_tokens=120))
    assert doc.title == "Harbour Tales"
    by_path = {c.heading_path: c.content for c in doc.chunks}
    assert by_path[("The Harbour",)] == "Ships arrived at dawn carrying amber cargo."
    assert by_path[("The Harbour", "Night Watch")] == (
        "The lighthouse keeper counted seventeen lanterns."
    )
    mountain = [c for c in doc.chunks if c.heading_path[0] == "The Mountain"]
    assert len(mountain) > 1  # a long chapter is split, every piece still names it
    ascent = next(c for c in mountain if "glacier plateau" in c.content)
    assert ascent.heading_path == ("The Mountain", "Ascent")
    assert "Camp 59 stored rope" in mountain[-1].content


def test_epub_line_ranges_point_into_the_served_markdown() -> None:
    data = make_epub(BOOK)
    text = EpubParser().extract_text("tales.epub", data)
    assert text.startswith("# The Harbour\n\nShips arrived at dawn")
    assert "\n# The Mountain\n\n## Ascent\n" in text
    assert_citations_point_into(text, EpubParser().parse("tales.epub", data, budget(120)))


def test_an_epub_without_a_title_is_named_after_its_first_chapter_or_file() -> None:
    untitled = make_epub(
        [("", "<p>Only a paragraph about tide tables and moorings.</p>")], title=""
    )
    doc = EpubParser().parse("books/tide_tables.epub", untitled, budget())
    assert doc.chunks[0].heading_path == ("Chapter 1",)
    assert doc.title == "Chapter 1"


def one_line_parse_error(data: bytes) -> str:
    parser = EpubParser()
    with pytest.raises(ParseError) as parsed:
        parser.parse("books/bad.epub", data, budget())
    with pytest.raises(ParseError) as extracted:
        parser.extract_text("books/bad.epub", data)
    message = str(parsed.value)
    assert message == str(extracted.value) and "\n" not in message
    return message


@pytest.mark.parametrize(
    "data",
    [
        make_epub(BOOK)[:300],  # cut short
        b"PK\x03\x04 not really a zip",
        b"\x00" * 64,
        b"",
    ],
    ids=["truncated", "fake-zip-header", "zeros", "empty"],
)
def test_a_corrupt_epub_is_refused_with_one_line(data: bytes) -> None:
    assert "not a readable" in one_line_parse_error(data)


def test_a_zip_that_is_no_book_is_refused_with_one_line() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("notes.txt", "just a zip")
    assert "EPUB" in one_line_parse_error(buf.getvalue())


def test_a_zip_bomb_like_epub_is_refused_before_it_is_unpacked() -> None:
    # A valid book whose one extra chapter-sized entry declares 51 MiB (it compresses to
    # about 50 KiB): pymupdf alone would happily open it.
    padding = b"<!-- " + b" " * (51 * 1024 * 1024) + b" -->"
    data = make_epub(BOOK, extra={"OEBPS/padding.xhtml": padding})
    assert len(data) < 1024 * 1024
    assert "ZIP bomb" in one_line_parse_error(data)


def test_an_epub_with_too_many_entries_is_refused() -> None:
    data = make_epub(BOOK, extra={f"OEBPS/img/{n}.txt": b"" for n in range(10_001)})
    assert "ZIP bomb" in one_line_parse_error(data)


# -- end to end ------------------------------------------------------------------------


def test_html_and_epub_index_search_and_read_through_both_routes(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    root = tmp_path / "kb"
    write_files(
        root,
        {
            "notes/intro.md": "# Intro\n\nA note about sourdough starters.\n",
            "wiki/ops.html": PAGE,
            "books/tales.epub": make_epub(BOOK),
        },
    )
    kb = open_kb(root, enabled_formats=("md", "html", "epub"))
    summary = kb.index()
    assert (summary.added, summary.failed) == (3, 0)

    hits = kb.search("ledger 5432 finance squad", limit=5).results
    table_hit = next(h for h in hits if h.path == "wiki/ops.html")
    assert table_hit.heading_path == ("Deployments", "Rollback", "Ports")
    assert table_hit.title == "Operations Handbook"
    page_doc = kb.get_document("wiki/ops.html")
    assert table_hit.start_line is not None and table_hit.end_line is not None
    cited = page_doc.content.split("\n")[table_hit.start_line - 1 : table_hit.end_line]
    assert "ledger | 5432 | finance squad" in cited

    hits = kb.search("lighthouse keeper counted lanterns", limit=5).results
    book_hit = next(h for h in hits if h.path == "books/tales.epub")
    assert book_hit.heading_path == ("The Harbour", "Night Watch")
    assert book_hit.title == "Harbour Tales"

    book_doc = kb.get_document("books/tales.epub")
    assert book_doc.content == EpubParser().extract_text("tales.epub", make_epub(BOOK))
    assert "# The Harbour" in book_doc.content and not book_doc.truncated
    assert page_doc.content.startswith("# Deployments\n")
    for path, doc in (("wiki/ops.html", page_doc), ("books/tales.epub", book_doc)):
        body = kb.read_resource(doc_uri(path))
        assert body.media_type == "text/markdown"
        assert body.text == doc.content
