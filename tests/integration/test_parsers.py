"""Integration tests of the Markdown, text and PDF parsers and the parser registry."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

from kbmcp_adapters.parsers import (
    KNOWN_FORMATS,
    MarkdownParser,
    PdfParser,
    TextParser,
    build_registry,
)
from kbmcp_core.errors import ConfigError, ParseError
from kbmcp_core.models import ChunkDraft, ParsedDocument
from kbmcp_core.ports import ChunkBudget

TOKENIZER = (Path(__file__).parents[2] / "kbmcp_adapters" / "embedding" / "model_files"
             / "tokenizer.json")


def words_counter(text: str) -> int:
    """A stand-in tokenizer: 1.3 tokens per word, plus two special tokens."""
    return math.ceil(len(text.split()) * 1.3) + 2


def budget(max_tokens: int = 256, min_tokens: int = 0) -> ChunkBudget:
    return ChunkBudget(max_tokens=max_tokens, min_tokens=min_tokens, counter=words_counter)


def md(text: str, b: ChunkBudget | None = None, path: str = "notes/some-note.md") -> ParsedDocument:
    return MarkdownParser().parse(path, text.encode("utf-8"), b or budget())


def by_heading(doc: ParsedDocument) -> dict[str, ChunkDraft]:
    return {c.heading: c for c in doc.chunks}


def sentence(tag: str, words: int = 12) -> str:
    return " ".join(f"{tag}{i}" for i in range(words)) + "."


# -- Markdown: frontmatter -------------------------------------------------------------


def test_frontmatter_fields_are_lifted_and_other_keys_kept_as_json_safe_metadata() -> None:
    doc = md(
        "---\n"
        "title: Release notes\n"
        "date: 2024-03-05\n"
        "tags: [react, hooks]\n"
        "topic: frontend\n"
        "category: guide\n"
        "author: Ada\n"
        "reviewed: 2024-04-01\n"
        "score: .inf\n"
        "nested: {list: [1, 2], when: 2024-05-06T07:08:09Z}\n"
        "---\n"
        "# Heading\n\nBody text.\n"
    )
    assert (doc.title, doc.date, doc.tags) == ("Release notes", "2024-03-05", ("react", "hooks"))
    assert (doc.topic, doc.category) == ("frontend", "guide")
    assert doc.metadata == {
        "author": "Ada",
        "reviewed": "2024-04-01",
        "score": "inf",
        "nested": {"list": [1, 2], "when": "2024-05-06T07:08:09Z"},
    }
    assert doc.warnings == ()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-03-05", "2024-03-05"),
        ("'2024-03-05T10:20:30+02:00'", "2024-03-05"),
        ("2024-03-05 10:20", "2024-03-05"),
        ('"2024/3/5"', "2024-03-05"),
        ("!!timestamp 2024-03-05T10:20:30Z", "2024-03-05"),
    ],
)
def test_frontmatter_dates_are_normalised_to_iso_days(value: str, expected: str) -> None:
    doc = md(f"---\ndate: {value}\n---\nText.\n")
    assert doc.date == expected
    assert doc.warnings == ()


@pytest.mark.parametrize("value", ["next tuesday", "2024-02-30", "20240305"])
def test_an_unparseable_date_is_dropped_with_a_warning_and_the_rest_kept(value: str) -> None:
    doc = md(f"---\ntitle: Kept\ndate: {value}\n---\nText.\n")
    assert doc.date is None
    assert doc.title == "Kept"
    assert len(doc.warnings) == 1 and "date" in doc.warnings[0]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("[a, b, a]", ("a", "b")),
        ('"a, b ,c"', ("a", "b", "c")),
        ("single", ("single",)),
        ("\n  - x\n  - 2024\n  -\n", ("x", "2024")),
        ("[]", ()),
    ],
)
def test_frontmatter_tags_accept_lists_and_comma_strings(
    value: str, expected: tuple[str, ...]
) -> None:
    assert md(f"---\ntags: {value}\n---\nText.\n").tags == expected


@pytest.mark.parametrize(
    ("frontmatter", "reason"),
    [
        ("title: [unclosed\ndate: 2024-01-01", "invalid YAML"),
        ("- just\n- a list", "not a mapping"),
        ("title: 'x'\n\t bad: indent", "invalid YAML"),
    ],
)
def test_broken_frontmatter_warns_and_the_document_is_still_chunked(
    frontmatter: str, reason: str
) -> None:
    text = f"---\n{frontmatter}\n---\n# Real title\n\nBody paragraph stays.\n"
    doc = md(text)
    assert len(doc.warnings) == 1 and reason in doc.warnings[0]
    assert doc.title == "Real title"  # the first H1, since the frontmatter was ignored
    assert (doc.date, doc.tags, dict(doc.metadata)) == (None, (), {})
    assert [c.content for c in doc.chunks] == ["Body paragraph stays."]
    assert "unclosed" not in "".join(c.content for c in doc.chunks)
    assert doc.chunks[0].start_line == text.split("\n").index("# Real title") + 1


def test_title_falls_back_from_frontmatter_to_first_h1_to_file_name() -> None:
    assert md("---\ntitle: From FM\n---\n# From H1\n").title == "From FM"
    assert md("Intro.\n\n## Not H1\n\n# From `H1` {/*h1*/}\n").title == "From H1"
    assert md("## Only H2\n", path="dir/my_daily-log.md").title == "my daily log"


def test_a_thematic_break_on_line_one_without_closing_is_not_frontmatter() -> None:
    doc = md("---\nJust a rule above this text.\n")
    assert doc.warnings == ()
    assert doc.chunks[0].content == "---\nJust a rule above this text."


# -- Markdown: headings, sections and line ranges --------------------------------------


THREE_LEVELS = """\
---
title: Hooks
---
# Hooks

Hooks let you use state and other React features without writing a class at all.

## useState {/*usestate*/}

useState is a Hook that lets you add a state variable to your component right away.

### Parameters {/*parameters*/}

initialState is the value you want the state to be initially when rendering first.

```md
# not a heading inside a fence
## nor this
```

### Returns

useState returns an array with exactly two values for you to destructure now.

## useEffect

~~~~
### still code
~~~
## still code, the fence needs four tildes
~~~~

useEffect is a Hook that lets you synchronize a component with an external system.
"""


def test_heading_paths_follow_the_outline_and_ignore_headings_in_code_fences() -> None:
    doc = md(THREE_LEVELS)
    assert [(c.heading, c.heading_path) for c in doc.chunks] == [
        ("Hooks", ("Hooks",)),
        ("useState", ("Hooks", "useState")),
        ("Parameters", ("Hooks", "useState", "Parameters")),
        ("Returns", ("Hooks", "useState", "Returns")),
        ("useEffect", ("Hooks", "useEffect")),
    ]
    assert "# not a heading inside a fence" in by_heading(doc)["Parameters"].content
    assert "### still code" in by_heading(doc)["useEffect"].content
    assert [c.ordinal for c in doc.chunks] == list(range(len(doc.chunks)))


def test_line_ranges_are_exact_original_file_lines() -> None:
    doc = md(THREE_LEVELS)
    lines = THREE_LEVELS.split("\n")
    ranges = {c.heading: (c.start_line, c.end_line) for c in doc.chunks}
    assert ranges == {
        "Hooks": (4, 6),
        "useState": (8, 10),
        "Parameters": (12, 19),
        "Returns": (21, 23),
        "useEffect": (25, 33),
    }
    for chunk in doc.chunks:
        assert chunk.start_line is not None and chunk.end_line is not None
        assert lines[chunk.start_line - 1].startswith("#")
        assert lines[chunk.end_line - 1].strip() == chunk.content.split("\n")[-1].strip()
        assert chunk.content.split("\n")[0] == lines[chunk.start_line + 1]


def test_crlf_bom_and_setext_headings_are_understood() -> None:
    text = (
        "\ufeffTitle Line\r\n==========\r\n\r\nFirst body line.\r\n\r\nSub\r\n---\r\nSub body.\r\n"
    )
    doc = MarkdownParser().parse("x.md", text.encode("utf-8"), budget())
    assert doc.title == "Title Line"
    assert [(c.heading_path, c.content, c.start_line, c.end_line) for c in doc.chunks] == [
        (("Title Line",), "First body line.", 1, 4),
        (("Title Line", "Sub"), "Sub body.", 6, 8),
    ]


def test_headings_are_cleaned_for_section_matching() -> None:
    doc = md(
        "## `useState(initialState)` {/*usestate*/}\n\nText.\n### **Bold** [link](/x)\n\nMore.\n"
    )
    assert [c.heading_path for c in doc.chunks] == [
        ("useState(initialState)",),
        ("useState(initialState)", "Bold link"),
    ]


def test_text_before_the_first_heading_is_a_section_without_heading() -> None:
    doc = md("Preamble paragraph.\n\n## First\n\nBody.\n")
    assert [(c.heading, c.heading_path, c.content) for c in doc.chunks] == [
        ("", (), "Preamble paragraph."),
        ("First", ("First",), "Body."),
    ]


# -- Markdown: budget, splitting and merging -------------------------------------------


def long_section_doc() -> tuple[str, list[str]]:
    body: list[str] = []
    for n in range(30):
        body.append(sentence(f"para{n}x", 15))
        if n % 7 == 3:
            body.append(
                "```python\n" + "\n".join(f"line_{n}_{k} = {k}" for k in range(6)) + "\n```"
            )
    body.append(" ".join(f"run{k}" for k in range(400)))  # one paragraph longer than the budget
    return "# Big\n\n## Long section\n\n" + "\n\n".join(body) + "\n\n## After\n\nTail text.\n", body


def test_a_long_section_is_split_under_budget_and_no_text_is_lost() -> None:
    text, body = long_section_doc()
    doc = md(text, budget(max_tokens=80))
    long_chunks = [c for c in doc.chunks if c.heading == "Long section"]
    assert len(long_chunks) > 5
    for chunk in doc.chunks:
        assert words_counter(chunk.whole_text) <= 80
        assert chunk.content.strip()
        assert chunk.heading_path == ("Big", chunk.heading) or chunk.heading == "Big"
    joined = "\n".join(c.content for c in long_chunks)
    for line in "\n\n".join(body[:-1]).split("\n"):
        if line.strip():
            assert line in joined
    words = " ".join(c.content for c in long_chunks).split()
    assert [w for w in words if w.startswith("run")] == [f"run{k}" for k in range(400)]
    starts = [c.start_line or 0 for c in long_chunks]
    assert starts == sorted(starts) and long_chunks[0].start_line == 3


def test_a_code_block_is_not_cut_when_it_fits_in_a_chunk() -> None:
    code = "```js\n" + "\n\n".join(f"const v{k} = {k};" for k in range(10)) + "\n```"
    text = "## Code\n\n" + sentence("lead", 30) + "\n\n" + code + "\n\n" + sentence("tail", 30)
    doc = md(text, budget(max_tokens=70))
    holding = [c for c in doc.chunks if "const v0" in c.content]
    assert len(holding) == 1 and "const v9 = 9;\n```" in holding[0].content


def test_real_tokenizer_keeps_long_markdown_with_code_inside_the_window() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def count(text: str) -> int:
        return len(tokenizer.encode(text).ids)

    sections = []
    for n in range(8):
        code = "\n".join(f"  const value{n}_{k} = computeSomething({k}, '{n}');" for k in range(60))
        prose = " ".join(["The quick brown fox jumps over the lazy dog again."] * 40)
        sections.append(f"## Part {n} {{/*p{n}*/}}\n\n{prose}\n\n```js\n{code}\n```\n\n{prose}")
    doc = MarkdownParser().parse(
        "big.md", "\n\n".join(sections).encode(), ChunkBudget(256, 24, count)
    )
    assert len(doc.chunks) > 8
    assert max(count(c.whole_text) for c in doc.chunks) <= 256
    assert {c.heading for c in doc.chunks} == {f"Part {n}" for n in range(8)}


def test_a_heading_only_parent_folds_into_its_first_child() -> None:
    text = "# API\n\n## Reference {/*reference*/}\n\n### `useState()` {/*usestate*/}\n\n" + (
        sentence("state", 20) + "\n"
    )
    doc = md(text, budget(min_tokens=8))
    assert len(doc.chunks) == 1
    chunk = doc.chunks[0]
    assert (chunk.heading, chunk.heading_path) == ("useState()", ("API", "Reference", "useState()"))
    assert (chunk.start_line, chunk.end_line) == (1, 7)
    assert chunk.content == sentence("state", 20)


def test_a_tiny_section_joins_the_previous_chunk_and_keeps_its_heading_line_visible() -> None:
    text = (
        "## Parameters\n\n" + sentence("param", 20) + "\n\n"
        "## Returns\n\nNothing.\n\n"
        "## Caveats\n\n" + sentence("caveat", 20) + "\n"
    )
    doc = md(text, budget(min_tokens=10))
    assert [c.heading for c in doc.chunks] == ["Parameters", "Caveats"]
    first = doc.chunks[0]
    assert first.content.endswith("## Returns\n\nNothing.")
    assert (first.start_line, first.end_line) == (1, 7)
    assert doc.chunks[1].content == sentence("caveat", 20)


def test_without_a_minimum_every_section_keeps_its_own_chunk() -> None:
    doc = md("## A\n\nx\n\n## B\n\ny\n")
    assert [(c.heading, c.content) for c in doc.chunks] == [("A", "x"), ("B", "y")]


def test_a_lone_heading_becomes_a_chunk_of_its_own_line() -> None:
    doc = md("# Only a title {/*t*/}\n")
    assert [(c.heading, c.content, c.start_line) for c in doc.chunks] == [
        ("Only a title", "# Only a title {/*t*/}", 1)
    ]


@pytest.mark.parametrize("text", ["", "   \n\n\t\n", "---\ntitle: Just metadata\n---\n"])
def test_empty_or_whitespace_documents_have_zero_chunks_and_no_error(text: str) -> None:
    doc = md(text)
    assert doc.chunks == ()
    assert doc.title in ("some note", "Just metadata")


def test_invalid_utf8_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="not valid UTF-8"):
        MarkdownParser().parse("bad.md", b"# Title\n\xff\xfe broken", budget())
    with pytest.raises(ParseError, match="not valid UTF-8"):
        MarkdownParser().extract_text("bad.md", b"\xc3\x28")


def test_extract_text_returns_the_raw_markdown() -> None:
    raw = "---\ntitle: T\n---\n# Heading\r\n\nbody\n"
    assert MarkdownParser().extract_text("a.md", raw.encode()) == raw


# -- text ------------------------------------------------------------------------------


def test_text_files_chunk_by_paragraph_with_line_ranges_and_file_name_title() -> None:
    paragraphs = [sentence(f"t{n}x", 25) for n in range(6)]
    text = "\n\n\n".join(paragraphs) + "\n"
    doc = TextParser().parse("docs/meeting_notes-2024.txt", text.encode(), budget(max_tokens=80))
    assert doc.title == "meeting notes 2024"
    assert len(doc.chunks) == 3
    lines = text.split("\n")
    for chunk in doc.chunks:
        assert (chunk.heading, chunk.heading_path, chunk.page) == ("", (), None)
        assert words_counter(chunk.whole_text) <= 80
        assert chunk.start_line is not None and chunk.end_line is not None
        assert lines[chunk.start_line - 1] == chunk.content.split("\n")[0]
        assert lines[chunk.end_line - 1] == chunk.content.split("\n")[-1]
    assert "\n".join(c.content for c in doc.chunks).replace("\n", "") == "".join(paragraphs)


def test_a_text_faq_is_cut_at_its_numbered_questions_with_their_heading_path() -> None:
    text = ("1. Using ps\n\n1.1. Why does ps get signal 17?\n\n\tYour system was broken into.\n"
            "\n1.2. Why do ps and top show threads individually?\n\n\tThe old kernel cannot "
            "group threads.\n\n2. Other\n\n2.1. Where do I report bugs?\n\n\tTo the list.\n")
    parser = TextParser()
    doc = parser.parse("procps/FAQ.txt", text.encode(), budget(min_tokens=4))
    # a section title with no body of its own opens its first question's chunk
    assert [(c.heading_path, c.content, c.start_line, c.end_line) for c in doc.chunks] == [
        (("Using ps", "Why does ps get signal 17?"), "\tYour system was broken into.", 1, 5),
        (("Using ps", "Why do ps and top show threads individually?"),
         "\tThe old kernel cannot group threads.", 7, 9),
        (("Other", "Where do I report bugs?"), "\tTo the list.", 11, 15),
    ]
    assert doc.title == "FAQ"  # a text file's title stays its file name
    assert [(m.line, m.level, m.text) for m in parser.headings("procps/FAQ.txt", text)] == [
        (1, 1, "Using ps"), (3, 2, "Why does ps get signal 17?"),
        (7, 2, "Why do ps and top show threads individually?"), (11, 1, "Other"),
        (13, 2, "Where do I report bugs?")]


def test_a_text_file_s_title_block_is_read_with_its_first_section() -> None:
    body = "\n\n".join(sentence(f"b{n}x", 20) for n in range(2))
    text = (f"25/10/95 Peter <poe@example.org>\n\nSome notes on modems\n\nSetup\n-----\n\n{body}\n"
            f"\nDialling\n--------\n\n{body}\n")
    doc = TextParser().parse("modems.txt", text.encode(), budget(max_tokens=60, min_tokens=4))
    first = doc.chunks[0]
    # a date and a title above the first heading are no section of their own
    assert (first.heading_path, first.start_line) == (("Setup",), 1)
    assert first.content.startswith("25/10/95 Peter") and "Some notes on modems" in first.content
    assert ("Dialling",) in [c.heading_path for c in doc.chunks[1:]]
    long_intro = "\n\n".join(sentence(f"i{n}x", 20) for n in range(4))
    doc = TextParser().parse("x.txt", f"{long_intro}\n\nSetup\n-----\n\n{body}\n".encode(),
                             budget(max_tokens=60, min_tokens=4))
    assert doc.chunks[0].heading_path == ()  # an introduction of its own stays one


def test_the_rule_above_a_boxed_title_is_no_part_of_the_section_before_it() -> None:
    rule = "-" * 72
    body = "\n\n".join(sentence(f"b{n}x", 20) for n in range(2))
    text = (f"{rule}\n4. Valgrind behaves unexpectedly\n{rule}\n\n{body}\n\n{rule}\n"
            f"5. Miscellaneous\n{rule}\n\n{body}\n")
    doc = TextParser().parse("valgrind/FAQ.txt", text.encode(), budget(max_tokens=30))
    # where the section before a box filled its chunks, the box's top rule was a chunk of
    # its own: a hit citing a line of dashes (Valgrind's FAQ); elsewhere it ended a chunk
    assert [c for c in doc.chunks if not any(ch.isalnum() for ch in c.content)] == []
    assert [c.content for c in doc.chunks
            if c.content.startswith(rule) or c.content.rstrip().endswith(rule)] == []
    assert [(c.heading_path[-1][:2], c.start_line, c.end_line) for c in doc.chunks] == [
        ("4.", 2, 5), ("4.", 5, 5), ("4.", 7, 7), ("4.", 7, 7),
        ("5.", 10, 13), ("5.", 13, 13), ("5.", 15, 15), ("5.", 15, 15)]


def test_text_parser_rejects_invalid_utf8_and_accepts_empty_files() -> None:
    with pytest.raises(ParseError, match="not valid UTF-8"):
        TextParser().parse("a.txt", b"caf\xe9", budget())
    assert TextParser().parse("a.txt", b"\n\n", budget()).chunks == ()
    assert TextParser().extract_text("a.txt", "\ufeffhé".encode()) == "hé"


# -- PDF -------------------------------------------------------------------------------


def mupdf() -> Any:
    """pymupdf, imported where the PDF tests need it (it ships without type hints)."""
    import pymupdf

    return pymupdf


def make_pdf(
    pages: list[str],
    *,
    title: str = "",
    created: str = "",
    toc: list[list[Any]] | None = None,
    **save: Any,
) -> bytes:
    pymupdf = mupdf()
    doc = pymupdf.open()
    for text in pages:
        page = doc.new_page()
        if text:
            page.insert_textbox(pymupdf.Rect(50, 50, 550, 800), text, fontsize=9)
    doc.set_metadata({"title": title, "creationDate": created})
    if toc:
        doc.set_toc(toc)
    data: bytes = doc.tobytes(**save)
    doc.close()
    return data


def test_pdf_chunks_carry_page_numbers_title_and_date_from_metadata() -> None:
    data = make_pdf(
        [sentence("alpha"), "", sentence("gamma") + "\n\n" + sentence("delta")],
        title="Quarterly  Report",
        created="D:20230115123000+01'00'",
    )
    doc = PdfParser().parse("reports/q1.pdf", data, budget())
    assert (doc.title, doc.date) == ("Quarterly Report", "2023-01-15")
    assert [(c.page, c.heading, c.heading_path) for c in doc.chunks] == [
        (1, "Page 1", ("Page 1",)),
        (3, "Page 3", ("Page 3",)),
    ]
    assert "alpha0" in doc.chunks[0].content and "delta11." in doc.chunks[1].content
    assert all(c.start_line is None for c in doc.chunks)


def test_pdf_title_falls_back_to_the_file_name_and_long_pages_split() -> None:
    long_page = "\n\n".join(sentence(f"w{n}x", 20) for n in range(10))
    doc = PdfParser().parse("papers/deep_learning-intro.pdf", make_pdf([long_page]), budget(60))
    assert doc.title == "deep learning intro"
    assert doc.date is None
    assert len(doc.chunks) > 3
    assert {c.page for c in doc.chunks} == {1}
    assert all(words_counter(c.whole_text) <= 60 for c in doc.chunks)


def test_pdf_outline_titles_name_the_pages_they_cover() -> None:
    toc = [[1, "Introduction", 1], [2, "Motivation", 2], [1, "Method", 3]]
    data = make_pdf([sentence(f"pg{n}x") for n in range(4)], toc=toc)
    doc = PdfParser().parse("a.pdf", data, budget())
    assert [(c.page, c.heading_path) for c in doc.chunks] == [
        (1, ("Introduction",)),
        (2, ("Introduction", "Motivation")),
        (3, ("Method",)),
        (4, ("Method",)),
    ]


def test_encrypted_pdf_is_refused() -> None:
    pymupdf = mupdf()
    data = make_pdf(
        [sentence("secret")],
        encryption=pymupdf.PDF_ENCRYPT_AES_256,
        user_pw="user",
        owner_pw="owner",
    )
    with pytest.raises(ParseError, match="encrypted PDF"):
        PdfParser().parse("s.pdf", data, budget())
    with pytest.raises(ParseError, match="encrypted PDF"):
        PdfParser().extract_text("s.pdf", data)


def test_image_only_pdf_is_refused() -> None:
    pymupdf = mupdf()
    doc = pymupdf.open()
    page = doc.new_page()
    page.draw_rect(pymupdf.Rect(100, 100, 300, 300), color=(0, 0, 0), fill=(0.5, 0.5, 0.5))
    data = doc.tobytes()
    doc.close()
    with pytest.raises(ParseError, match=re.escape("no extractable text (image-only PDF?)")):
        PdfParser().parse("scan.pdf", data, budget())


@pytest.mark.parametrize("data", [b"", b"this is not a pdf at all", b"%PDF-1.7\n\x00\x01garbage"])
def test_garbage_bytes_are_a_parse_error(data: bytes) -> None:
    with pytest.raises(ParseError):
        PdfParser().parse("x.pdf", data, budget())


def test_pdf_extract_text_joins_pages() -> None:
    data = make_pdf([sentence("one"), sentence("two")])
    text = PdfParser().extract_text("a.pdf", data)
    assert text.index("one0") < text.index("two0")
    assert "\n\n" in text


# -- registry --------------------------------------------------------------------------


def test_registry_offers_the_enabled_formats_only() -> None:
    assert KNOWN_FORMATS == (
        "md", "txt", "pdf", "html", "docx", "pptx", "xlsx", "epub", "rst", "adoc", "ipynb", "code",
        "ocr",
    )  # fmt: skip
    markdown_only = build_registry(["md"])
    assert markdown_only.extensions() == frozenset({"md", "markdown"})
    assert isinstance(markdown_only.parser_for("markdown"), MarkdownParser)
    assert markdown_only.parser_for("pdf") is None
    everything = build_registry(["pdf", "TXT", "md", "md"])
    assert everything.extensions() == frozenset({"md", "markdown", "txt", "pdf"})
    pdf = everything.parser_for("PDF")
    assert isinstance(pdf, PdfParser)
    assert isinstance(everything.parser_for("txt"), TextParser)
    converted = build_registry(["html", "docx", "pptx", "xlsx", "epub"])
    assert converted.extensions() == frozenset({"html", "htm", "docx", "pptx", "xlsx", "epub"})
    assert converted.parser_for("md") is None
    assert {type(converted.parser_for(e)).__name__ for e in converted.extensions()} == {
        "HtmlParser", "DocxParser", "PptxParser", "XlsxParser", "EpubParser"}


@pytest.mark.parametrize("enabled", [[], ["md", "doc"], ["markdown"], ["xls"], "md"])
def test_registry_refuses_unknown_or_empty_format_lists(enabled: Any) -> None:
    with pytest.raises(ConfigError, match="md, txt, pdf, html, docx, pptx, xlsx, epub"):
        build_registry(enabled)
