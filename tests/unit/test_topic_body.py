"""A topic group's Markdown body: document titles are text, never Markdown."""

from __future__ import annotations

from markdown_it import MarkdownIt

from kbmcp_core.models import StoredDocument
from kbmcp_core.offer import TopicGroup, code_span, markdown_text, topic_body
from kbmcp_core.uris import doc_uri


def _doc(path: str, title: str) -> StoredDocument:
    return StoredDocument(id=1, path=path, title=title, content_hash="h", size_bytes=1,
                          date=None, topic=None, category=None, tags=(), metadata={},
                          last_indexed="2026-12-01T00:00:00Z")


def _links(markdown: str) -> list[tuple[str, str]]:
    """(href, visible text) of every link a Markdown renderer would make."""
    out: list[tuple[str, str]] = []
    for block in MarkdownIt("commonmark").parse(markdown):
        children = block.children or []
        for i, tok in enumerate(children):
            if tok.type == "link_open":
                text = "".join(
                    c.content for c in children[i + 1:]
                    if c.type in ("text", "code_inline")
                ).split("\x00")[0]
                out.append((str(tok.attrs.get("href")), text))
    return out


HOSTILE_TITLES = [
    "x](javascript:alert(1)) [y",
    "line one\n# injected heading\n- [evil](https://evil.example)",
    "<img src=x onerror=alert(1)>",
    "![pic](https://tracker.example/p.png)",
    "back\\slash ] and [ brackets",
]


def test_a_hostile_title_makes_exactly_one_link_to_its_own_document() -> None:
    docs = tuple(_doc(f"notes/d{i}.md", t) for i, t in enumerate(HOSTILE_TITLES))
    body = topic_body(TopicGroup("notes", "kb://topic/notes", docs))
    links = _links(body)
    assert [href for href, _ in links] == [doc_uri(d.path) for d in docs]
    # one line per document, under the heading, count line and blank line
    assert len(body.splitlines()) == 4 + len(docs)
    rendered = MarkdownIt("commonmark").render(body)
    assert "<img" not in rendered and "javascript:" not in rendered.split('href="')[0]
    assert rendered.count("<h1>") == 1 and "<li>" in rendered
    assert all(not href.startswith("javascript") for href, _ in links)


def test_escaped_text_reads_back_as_the_original_title() -> None:
    for title in HOSTILE_TITLES:
        rendered = MarkdownIt("commonmark").renderInline(markdown_text(title))
        flat = " ".join(title.split())
        assert rendered == (flat.replace("&", "&amp;").replace("<", "&lt;")
                            .replace(">", "&gt;").replace('"', "&quot;"))


def test_a_path_with_backticks_stays_one_code_span() -> None:
    path = "odd/``tick`` name.md"
    tokens = MarkdownIt("commonmark").parseInline(code_span(path))[0].children or []
    assert [t.type for t in tokens] == ["code_inline"]
    assert tokens[0].content == path
