"""``blank_noise``: link-reference definitions and HTML comments become empty lines (the
rest keeps its line numbers); code blocks, footnotes and unclosed comments stay."""

from __future__ import annotations

from kbmcp_adapters.parsers.markdown import MarkdownParser
from kbmcp_adapters.parsers.markdown_noise import blank_noise
from kbmcp_core.ports import ChunkBudget

DOC = """# API
<!-- YAML
added: v0.1.0
-->
Runs the callback <!-- hidden --> later, see [later][].

```md
[kept]: https://example.org/in-a-code-block
<!-- kept too -->
```

[later]: #later
[guide]: https://example.org/guide "The guide"
[^1]: A footnote is prose.
text
[not-a-definition]: inside a paragraph
<!-- never closed
tail"""


def test_definitions_and_comments_become_empty_lines_in_place() -> None:
    lines = DOC.split("\n")
    out = blank_noise(lines)
    assert len(out) == len(lines)
    assert out[1:4] == ["", "", ""]
    assert out[4] == "Runs the callback  later, see [later][]."
    assert out[7:9] == lines[7:9]  # inside the fence
    assert out[11:13] == ["", ""]
    assert out[13:] == lines[13:]  # footnote, paragraph text, the unclosed comment


def test_an_inline_comment_next_to_inline_code_stays() -> None:
    line = "Write `<!--` to open a comment <!-- like this -->."
    assert blank_noise([line]) == [line]


def test_frontmatter_lines_are_left_alone() -> None:
    lines = ["---", "x: <!-- not a comment -->", "---", "<!-- c -->", "body"]
    assert blank_noise(lines, 3) == ["---", "x: <!-- not a comment -->", "---", "", "body"]


def test_a_section_of_link_definitions_is_no_chunk() -> None:
    text = ("# Page\n\nSome prose about timers and ticks, long enough to be a chunk.\n\n"
            "## See also\n\n" + "".join(f"[t{i}]: https://example.org/{i}\n" for i in range(30)))
    budget = ChunkBudget(256, 24, lambda s: len(s.split()))
    doc = MarkdownParser().parse("p.md", text.encode(), budget)
    assert all("https://example.org" not in c.content for c in doc.chunks)
    assert doc.chunks[0].start_line == 1
