"""HTML written by documentation generators: main content only, block structure kept as
lines, and hits cited by lines a reader can open (issue 26, item 1; decision 0029)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from kbmcp_adapters.parsers.htmlpage import HtmlParser
from kbmcp_core.models import ParsedDocument
from kbmcp_core.ports import ChunkBudget
from tests.conftest import OpenKb, write_files

WORD = re.compile(r"\w+")

#: The libxml/libxslt site stylesheet's frame: a banner table, then a layout table whose
#: first cell is the menu sidebar and whose second holds the page.
_FRAME = """<?xml version="1.0" encoding="ISO-8859-1"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "x.dtd">
<html xmlns="http://www.w3.org/1999/xhtml"><head>
<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1" />
<title>{title}</title></head><body bgcolor="#8b7765">
<table border="0" width="100%"><tr><td width="120"><a href="http://x.org/"><img src="a.png"
 alt="Logo" /></a></td><td><table width="90%"><tr><td><table width="100%"><tr>
<td align="center"><h1>The XSLT C library for GNOME</h1><h2>{title}</h2></td></tr></table>
</td></tr></table></td></tr></table>
<table border="0" width="100%"><tr><td bgcolor="#8b7765"><table width="100%"><tr>
<td valign="top" width="200"><table width="100%"><tr><td><table width="100%">
<tr><td align="center"><center><b>Main Menu</b></center></td></tr>
<tr><td><form action="search.php"><input name="query" type="text" /></form><ul>
<li><a href="index.html">Home</a></li><li><a href="intro.html">Introduction</a></li>
<li><a href="bugs.html">Reporting bugs and getting help</a></li>
<li><a href="downloads.html">Downloads</a></li><li><a href="news.html">News</a></li>
<li><a href="python.html">Python and bindings</a></li></ul></td></tr></table>
<table width="100%"><tr><td align="center"><center><b>Related links</b></center></td></tr>
<tr><td><ul><li><a href="t.html">Tutorial</a></li><li><a href="m.html">Mail archive</a></li>
<li><a href="w.html">Windows binaries</a></li></ul></td></tr></table></td></tr></table></td>
<td valign="top"><table width="100%"><tr><td><table width="100%"><tr><td>
{content}
</td></tr></table></td></tr></table></td></tr></table></td></tr></table></body></html>
"""

FAQ_CONTENT = """<ol>
<li><em>Troubles compiling or linking programs using libxslt</em>
<p>Usually the problem comes from the fact that the compiler doesn't get
the right compilation or linking flags. There is a small shell script
<code>xslt-config</code> which is installed as part of libxslt.</p>
<p><code>CFLAGS=`xslt-config --cflags`</code></p></li>
<li><em>passing parameters on the xsltproc command line doesn't work</em>
<p><code>xsltproc --param test alpha foo.xsl foo.xml</code></p>
<p>the param does not get passed and ends up as ""</p>
<p>In a nutshell do a double escaping at the shell prompt: quoteescaping twice.</p></li>
<li><em>Is there C++ bindings ?</em>
<p>Yes for example <a href="http://x.org/">xmlwrapp</a>, see
<a href="python.html">the related pages about bindings</a></p></li>
</ol><p><a href="bugs.html">Daniel Veillard</a></p>"""

SIDEBAR_WORDS = ("Main Menu", "Reporting bugs", "Windows binaries", "Mail archive", "Downloads")


def _symbols() -> dict[str, list[str]]:
    letters: dict[str, list[str]] = {}
    for n in range(400):
        letter = "CIX"[n % 3]
        letters.setdefault(letter, []).append(f"{letter}SLT_SYMBOL_{n:03d}_NAME")
    return letters


def symbols_page() -> str:
    parts = ["<h2>Alphabetic List of Symbols in libxslt</h2>"]
    for letter, names in _symbols().items():
        links = "<br />\n".join(f'<a href="html/x.html#{s}">{s}</a>' for s in names)
        parts.append(f"<h2>Letter {letter}:</h2><p>{links}<br />\n</p>")
    return _FRAME.format(title="Symbols", content="\n".join(parts))


#: A Sphinx/DocBook-shaped page: navigation bars, a sidebar, a main region.
SPHINX = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Installation</title></head>
<body>
<div class="related" role="navigation"><h3>Navigation</h3><ul><li><a href="genindex.html">
relatedbarindex</a></li><li><a href="next.html">relatedbarnext</a></li></ul></div>
<div class="navheader"><table><tr><td><a href="prev.html">Prev docbookprev</a></td>
<td><a href="next.html">docbooknext</a></td></tr></table></div>
<div class="document"><div class="documentwrapper"><div class="bodywrapper">
<div class="body" role="main">
<h1>Installation</h1><p>Install the wheel with the pinned constraints file.</p>
<h2>Supported platforms</h2>
<table class="docutils"><thead><tr><th>System</th><th>Status</th></tr></thead>
<tbody><tr><td>Linux</td><td>tier one</td></tr><tr><td>macOS</td><td>tier two</td></tr></tbody>
</table>
<pre>pip install -c constraints.txt kb-mcp</pre>
</div></div></div>
<div class="sphinxsidebar" role="navigation"><h3>Quick search</h3><p>sidebarsearchbox</p>
<h3>Table of contents</h3><ul><li><a href="#">sidebartocentry</a></li></ul></div></div>
<div class="navfooter"><a href="index.html">docbookfooterhome</a></div>
<div class="footer">footercopyright 2026</div>
</body></html>"""


def words_counter(text: str) -> int:
    return math.ceil(len(text.split()) * 1.3) + 2


def parse(page: str, path: str = "doc/page.html") -> tuple[str, ParsedDocument]:
    data = page.encode("latin-1" if "ISO-8859-1" in page else "utf-8")
    parser = HtmlParser()
    budget = ChunkBudget(max_tokens=120, min_tokens=0, counter=words_counter)
    return parser.extract_text(path, data), parser.parse(path, data, budget)


def cited(text: str, start: int | None, end: int | None) -> str:
    assert start is not None and end is not None
    return "\n".join(text.split("\n")[start - 1 : end])


def test_a_table_laid_out_faq_keeps_its_blocks_as_lines_without_the_menu() -> None:
    text, doc = parse(_FRAME.format(title="FAQ", content=FAQ_CONTENT))
    for word in SIDEBAR_WORDS:
        assert word not in text, word
    lines = text.split("\n")
    assert max(len(line) for line in lines) < 120
    assert "Troubles compiling or linking programs using libxslt" in lines
    assert "xsltproc --param test alpha foo.xsl foo.xml" in lines
    chunk = next(c for c in doc.chunks if "quoteescaping" in c.content)
    assert chunk.heading_path == ("The XSLT C library for GNOME", "FAQ")
    assert chunk.end_line is not None and chunk.start_line is not None
    assert "quoteescaping" in cited(text, chunk.start_line, chunk.end_line)
    for c in doc.chunks:
        assert set(WORD.findall(c.content)) <= set(
            WORD.findall(cited(text, c.start_line, c.end_line))
        )


def test_a_long_symbol_index_is_one_symbol_a_line_under_its_letter() -> None:
    text, doc = parse(symbols_page())
    lines = text.split("\n")
    assert max(len(line) for line in lines) < 80
    for names in _symbols().values():
        for name in names:
            assert name in lines, name
    assert "## Letter X:" in lines and "Main Menu" not in text
    chunk = next(c for c in doc.chunks if "XSLT_SYMBOL_398_NAME" in c.content)
    assert chunk.heading == "Letter X:"
    assert chunk.end_line is not None and chunk.start_line is not None
    assert chunk.end_line - chunk.start_line < 120
    assert "XSLT_SYMBOL_398_NAME" in cited(text, chunk.start_line, chunk.end_line)


@pytest.mark.parametrize(
    "page",
    [SPHINX, SPHINX.replace(' role="main"', "")],
    ids=["with-main-region", "by-class-and-role"],
)
def test_navigation_bars_and_sidebars_of_a_generated_page_are_not_indexed(page: str) -> None:
    text, doc = parse(page)
    for word in (
        "relatedbar",
        "docbookprev",
        "docbooknext",
        "sidebarsearchbox",
        "sidebartocentry",
        "docbookfooterhome",
        "footercopyright",
        "Quick search",
    ):
        assert word not in text, word
    assert text.startswith("# Installation\n")
    assert "Linux | tier one" in text.split("\n")
    assert "pip install -c constraints.txt kb-mcp" in text
    assert [c.heading_path for c in doc.chunks][-1] == ("Installation", "Supported platforms")


def test_a_generated_page_is_found_and_cited_by_lines_the_read_opens(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    root = tmp_path / "kb"
    faq = _FRAME.format(title="FAQ", content=FAQ_CONTENT).encode("latin-1")
    write_files(root, {"libxslt/FAQ.html": faq, "libxslt/APIsymbols.html": symbols_page()})
    kb = open_kb(root, enabled_formats=("md", "html"))
    assert kb.index().failed == 0
    for query, word, path in (
        ("double escaping at the shell prompt quoteescaping", "quoteescaping", "libxslt/FAQ.html"),
        ("XSLT_SYMBOL_251_NAME", "XSLT_SYMBOL_251_NAME", "libxslt/APIsymbols.html"),
    ):
        hit = next(h for h in kb.search(query, limit=5).results if h.path == path)
        served = kb.get_document(path).content
        assert word in cited(served, hit.start_line, hit.end_line)
        assert hit.end_line is not None and hit.start_line is not None
        assert hit.end_line - hit.start_line < 120
    assert not any("Main Menu" in h.content for h in kb.search("Main Menu", limit=10).results)


#: A texinfo manual on one page (``makeinfo --html --no-split``): a table of contents of
#: links, sections, and a back-of-book index whose entries link to the sections.
_INDEX_ENTRIES = [("AES", "AES"), ("AES encryption", "AES")] + [
    (f"aes{bits}_{op}", "AES") for bits in ("", "128", "192", "256")
    for op in ("encrypt", "decrypt", "set_encrypt_key", "set_decrypt_key", "invert_key")
] + [("encryption", "Cipher functions"), ("block cipher", "Cipher functions"),
     ("sha256_digest", "Hash functions"), ("CBC mode encryption", "Cipher modes")]
TEXINFO = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Nettle Manual</title>
</head><body>
<h1 class="top">Nettle</h1>
<h2 class="contents-heading">Table of Contents</h2>
<div class="contents"><ul class="no-bullet">
<li><a href="#Introduction">1 Introduction</a></li>
<li><a href="#Reference">2 Reference</a><ul class="no-bullet">
<li><a href="#Hash-functions">2.1 Hash functions</a></li>
<li><a href="#Cipher-functions">2.2 Cipher functions</a><ul class="no-bullet">
<li><a href="#AES">2.2.1 AES: encrypt and decrypt with the Advanced Encryption Standard</a></li>
</ul></li><li><a href="#Cipher-modes">2.3 Cipher modes: CBC, CTR, GCM encryption</a></li>
</ul></li><li><a href="#Index">Function and Concept Index</a></li></ul></div>
<div class="nav-panel"><p>Next: <a href="#Reference">Reference</a></p></div>
<h2 class="chapter" id="Introduction">1 Introduction</h2>
<p>Nettle is a cryptographic library designed to fit easily in any context.</p>
<h2 class="chapter" id="Reference">2 Reference</h2>
<h3 class="section" id="Hash-functions">2.1 Hash functions</h3>
<p>A hash function maps a message of any length to a short digest. Call
<code>sha256_init</code>, then <code>sha256_update</code> for each piece of data.</p>
<h3 class="section" id="Cipher-functions">2.2 Cipher functions</h3>
<p>A cipher is a keyed permutation of a fixed-size block of data.</p>
<h4 class="subsection" id="AES">2.2.1 AES</h4>
<p>AES is a block cipher with a block size of 16 octets. To encrypt a message with AES,
first set up a context with <code>aes128_set_encrypt_key</code> and your 16-octet key, then
call <code>aes128_encrypt</code> on the data; its length must be a multiple of the block
size. Decryption needs a context set up with the decryption key.</p>
<h3 class="section" id="Cipher-modes">2.3 Cipher modes</h3>
<p>A block cipher alone encrypts one block; a mode chains blocks:</p>
<ul><li><a href="#CBC">Cipher block chaining (CBC)</a>: chains each block to the last</li>
<li><a href="#CTR">Counter mode (CTR)</a>: a counter is encrypted and XORed in</li>
<li><a href="#GCM">Galois counter mode (GCM)</a>: CTR with a message authentication</li></ul>
<h2 class="unnumbered" id="Index">Function and Concept Index</h2>
<table><tr><th>Jump to:</th><td><a class="summary-letter" href="#Index_cp_letter-A">A</a>
<a class="summary-letter" href="#Index_cp_letter-B">B</a>
<a class="summary-letter" href="#Index_cp_letter-C">C</a>
<a class="summary-letter" href="#Index_cp_letter-E">E</a>
<a class="summary-letter" href="#Index_cp_letter-S">S</a></td></tr></table>
<table class="index-cp" border="0">
<tr><td></td><th>Index Entry</th><td>&nbsp;</td><th>Section</th></tr>
{entries}
</table>
</body></html>"""


def texinfo_page() -> str:
    rows = "\n".join(
        f'<tr><td></td><td><a href="#index-{term}"><code>{term}</code></a>:</td><td>&nbsp;</td>'
        f'<td><a href="#{section.replace(" ", "-")}">{section}</a></td></tr>'
        for term, section in _INDEX_ENTRIES
    )
    return TEXINFO.replace("{entries}", rows)


def test_a_manuals_index_and_contents_are_read_but_not_searched() -> None:
    text, doc = parse(texinfo_page())
    lines = text.split("\n")
    # a read shows the index and the table of contents as they are
    assert " | aes192_invert_key : |  | AES" in lines and " | aes256_encrypt : |  | AES" in lines
    assert "- 2.2.1 AES: encrypt and decrypt with the Advanced Encryption Standard" in lines
    # but no chunk holds an entry of either: they point at the sections, which answer
    searched = "\n".join(c.content for c in doc.chunks)
    for word in ("aes192_invert_key", "aes256_encrypt", "Index Entry",
                 "Advanced Encryption Standard", "2.3 Cipher modes: CBC"):
        assert word not in searched, word
    # a list whose links each come with a sentence of their own is content, and searched
    assert "Counter mode (CTR): a counter is encrypted and XORed in" in searched
    aes = next(c for c in doc.chunks if c.heading == "2.2.1 AES")
    assert "aes128_set_encrypt_key" in cited(text, aes.start_line, aes.end_line)
    for c in doc.chunks:  # every chunk still cites the lines a read opens
        assert set(WORD.findall(c.content)) <= set(
            WORD.findall(cited(text, c.start_line, c.end_line))
        )


def test_a_question_gets_the_manuals_sections_not_its_contents_or_index(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    root = tmp_path / "kb"
    write_files(root, {"nettle.html": texinfo_page()})
    kb = open_kb(root, enabled_formats=("md", "html"))
    assert kb.index().failed == 0
    hits = kb.search("how do I encrypt with AES in nettle", limit=3).results
    assert hits and hits[0].heading == "2.2.1 AES"
    for hit in hits:  # today's code: the contents 2nd, the index 3rd
        assert "aes192_invert_key" not in hit.content, hit.heading
        assert "Advanced Encryption Standard" not in hit.content, hit.heading
    assert " | aes128_set_decrypt_key : |  | AES" in kb.get_document("nettle.html").content
