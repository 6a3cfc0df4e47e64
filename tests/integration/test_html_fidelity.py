"""What a reader sees on a web page is kept: images' alt text, and text saved as UTF-8
under a stale declaration of another charset (pages written by the tests)."""

from __future__ import annotations

from kbmcp_adapters.parsers.htmlpage import HtmlParser


def test_image_alt_text_is_kept_where_the_image_stands() -> None:
    page = (
        b"<html><body><h1>Pumps</h1><p>Before priming:"
        b'<img src="valve.png" alt="The bleed valve, turned a quarter left"> then wait.</p>'
        b'<p><img src="spacer.gif" alt=""></p></body></html>'
    )
    text = HtmlParser().extract_text("pumps.html", page)
    assert "Before priming: [image: The bleed valve, turned a quarter left] then wait." in text
    assert "[image: ]" not in text


def test_utf8_bytes_under_a_gb2312_declaration_are_read_as_utf8() -> None:
    body = "<p>腾讯新闻：今日要闻，北京天气晴朗。</p>"
    page = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=gb2312">'
        f"</head><body>{body}</body></html>"
    ).encode()
    text = HtmlParser().extract_text("qq.html", page)
    assert "腾讯新闻：今日要闻，北京天气晴朗。" in text
    assert "\ufffd" not in text


def test_a_page_really_in_its_declared_charset_is_still_read_in_it() -> None:
    page = (
        '<html><head><meta charset="gb2312"></head><body><p>北京天气晴朗</p></body></html>'
    ).encode("gb2312")
    assert "北京天气晴朗" in HtmlParser().extract_text("gb.html", page)
