"""EPUB books are read from their own structure (spine, navigation, h1–h6), not from a
rendered layout: vertical Japanese, CJK paragraphs, Devanagari, inline SVG and nested
headings come out as a reader sees them (books assembled by the tests with ``zipfile``)."""

from __future__ import annotations

from kbmcp_adapters.parsers.epub import EpubParser
from tests.integration.test_parsers import budget
from tests.integration.test_parsers_html_epub import make_epub

VERTICAL = (
    '<div style="writing-mode: vertical-rl; -epub-writing-mode: vertical-rl">'
    "<h1>草枕</h1>"
    + "".join(
        f"<p>山路を登りながら、こう考えた。<ruby>智<rt>ち</rt></ruby>に働けば角が立つ。"
        f"情に棹させば流される。第{n}段。</p>"
        for n in range(40)
    )
    + "</div>"
)


def test_vertical_japanese_keeps_its_one_heading_and_whole_sentences() -> None:
    text = EpubParser().extract_text("kusamakura.epub", make_epub([("草枕", VERTICAL)]))
    headings = [line for line in text.split("\n") if line.startswith("#")]
    assert headings == ["# 草枕"]
    # ruby readings are left out: the base text reads as one sentence
    assert "智に働けば角が立つ。情に棹させば流される。第39段。" in text


def test_cjk_paragraphs_are_not_cut_at_source_line_ends() -> None:
    body = (
        "<p>日本語の文章は\n    行末で改行されても\n    一つの段落です。</p>"
        "<p>English words\nstay apart.</p>"
    )
    text = EpubParser().extract_text("cjk.epub", make_epub([("段落", body)]))
    assert "日本語の文章は行末で改行されても一つの段落です。" in text
    assert "English words stay apart." in text


def test_devanagari_vowel_signs_stay_on_their_letters() -> None:
    body = "<h1>महाभारत</h1><p>कि<span>ताब</span> पढ़िए और धर्मक्षेत्रे कुरुक्षेत्रे समवेता युयुत्सवः।</p>"
    text = EpubParser().extract_text("mahabharata.epub", make_epub([("महाभारत", body)]))
    assert "किताब पढ़िए और धर्मक्षेत्रे कुरुक्षेत्रे समवेता युयुत्सवः।" in text
    assert " \u093f" not in text and " \u0947" not in text


def test_text_in_inline_svg_and_alt_text_are_kept() -> None:
    body = (
        "<p>The chart of the bay:</p>"
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100">'
        "<text x='1' y='10'>Sous le vent</text><text x='1' y='30'>Îles de la Société</text>"
        "</svg>"
        '<p><img src="map.png" alt="Map of the leeward islands"/></p>'
    )
    text = EpubParser().extract_text("sous-le-vent.epub", make_epub([("Carte", body)]))
    assert "Sous le vent Îles de la Société" in text
    assert "[image: Map of the leeward islands]" in text


def test_heading_paths_follow_the_source_headings() -> None:
    body = (
        "<h2>The Burial of the Dead</h2><p>April is the cruellest month.</p>"
        '<p style="font-size: 3em; font-weight: bold">Unreal City,</p>'
        '<h3 style="font-size: 0.7em; font-weight: normal">Stanza two</h3>'
        "<p>What are the roots that clutch.</p>"
        "<h2>A Game of Chess</h2><p>The chair she sat in.</p>"
    )
    chapters = [("The Waste Land", "<h1>The Waste Land</h1>" + body)]
    doc = EpubParser().parse("wasteland.epub", make_epub(chapters), budget(max_tokens=40))
    paths = {c.heading_path: c.content for c in doc.chunks}
    assert paths[("The Waste Land", "The Burial of the Dead")] == (
        "April is the cruellest month.\n\nUnreal City,"
    )
    assert paths[("The Waste Land", "The Burial of the Dead", "Stanza two")] == (
        "What are the roots that clutch."
    )
    assert paths[("The Waste Land", "A Game of Chess")] == "The chair she sat in."


def test_html_named_entities_in_a_chapter_read_as_their_characters() -> None:
    body = "<p>Caf&eacute;&nbsp;du&nbsp;port &amp; quai &mdash; ouvert.</p>"
    text = EpubParser().extract_text("cafe.epub", make_epub([("Quai", body)]))
    assert (
        "Café\u00a0du\u00a0port & quai — ouvert." in text or "Café du port & quai — ouvert." in text
    )


def _encryption(uri: str) -> bytes:
    return (
        '<?xml version="1.0"?><encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:'
        'container" xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
        '<enc:EncryptionMethod Algorithm="http://www.idpf.org/2008/embedding"/>'
        f'<enc:CipherData><enc:CipherReference URI="{uri}"/></enc:CipherData>'
        "</enc:EncryptedData></encryption>"
    ).encode()


def test_a_book_whose_chapters_are_encrypted_is_refused_but_obfuscated_fonts_are_fine() -> None:
    import pytest

    from kbmcp_core.errors import ParseError

    chapters = [("Harbour", "<p>Ships arrived at dawn.</p>")]
    locked = make_epub(chapters, extra={"META-INF/encryption.xml": _encryption("OEBPS/c0.xhtml")})
    with pytest.raises(ParseError, match="encrypted EPUB"):
        EpubParser().extract_text("locked.epub", locked)
    fonts = make_epub(chapters, extra={"META-INF/encryption.xml": _encryption("OEBPS/f.otf")})
    assert "Ships arrived at dawn." in EpubParser().extract_text("fonts.epub", fonts)


def test_an_epub2_book_takes_its_chapter_titles_from_the_ncx() -> None:
    import io
    import zipfile

    source = zipfile.ZipFile(io.BytesIO(make_epub([("ignored", "<p>Ropes and knots.</p>")])))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as book:
        for name in source.namelist():
            data = source.read(name)
            if name == "OEBPS/nav.xhtml":
                continue
            if name == "OEBPS/content.opf":
                data = (
                    data.replace(b'properties="nav"', b"")
                    .replace(b"<spine>", b'<spine toc="ncx">')
                    .replace(
                        b"</manifest>",
                        b'<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
                        b"</manifest>",
                    )
                )
            book.writestr(name, data)
        book.writestr(
            "OEBPS/toc.ncx",
            '<?xml version="1.0"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" '
            'version="2005-1"><navMap><navPoint id="p1"><navLabel><text>Seamanship</text>'
            '</navLabel><content src="c0.xhtml"/></navPoint></navMap></ncx>',
        )
    text = EpubParser().extract_text("old.epub", out.getvalue())
    assert text.startswith("# Seamanship\n\nRopes and knots.")
