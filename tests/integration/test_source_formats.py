"""reStructuredText, AsciiDoc and Jupyter notebooks: headings, literal blocks and tables
kept, every hit cited by lines of the source file (issue 26, item 3; decision 0029).

The fixtures in ``tests/fixtures/sources`` are written here in the shape of real ones:
``user_guide.rst`` after pip's user guide, ``git-add.adoc`` after git's manual pages,
``readings.ipynb`` a small notebook with stream, result, image and error outputs."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from kbmcp_adapters.parsers.asciidoc import AsciiDocParser
from kbmcp_adapters.parsers.budget import OverBudget, ParserLimits
from kbmcp_adapters.parsers.notebook import NotebookParser
from kbmcp_adapters.parsers.registry import build_registry
from kbmcp_adapters.parsers.restructured import RstParser
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ChunkDraft, ParsedDocument
from kbmcp_core.ports import ChunkBudget
from tests.conftest import OpenKb, write_files

SOURCES = Path(__file__).parent.parent / "fixtures" / "sources"
WORD = re.compile(r"\w+")


def budget(max_tokens: int = 120) -> ChunkBudget:
    return ChunkBudget(
        max_tokens=max_tokens, min_tokens=0, counter=lambda t: math.ceil(len(t.split()) * 1.3) + 2
    )


def read(name: str) -> bytes:
    return (SOURCES / name).read_bytes()


def cited(data: bytes, start: int | None, end: int | None) -> str:
    assert start is not None and end is not None and 1 <= start <= end
    return "\n".join(data.decode("utf-8").split("\n")[start - 1 : end])


def assert_cited_by_source_lines(data: bytes, doc: ParsedDocument) -> None:
    """Every chunk's line range, read from the file itself, holds every word of it."""
    assert doc.chunks
    for chunk in doc.chunks:
        words = set(WORD.findall(cited(data, chunk.start_line, chunk.end_line)))
        assert set(WORD.findall(chunk.content)) <= words, chunk


def holding(doc: ParsedDocument, word: str) -> ChunkDraft:
    return next(c for c in doc.chunks if word in c.content)


# -- reStructuredText --------------------------------------------------------------------


def test_rst_sections_literal_blocks_and_tables_are_kept_and_cited_by_file_lines() -> None:
    data = read("user_guide.rst")
    doc = RstParser().parse("docs/user_guide.rst", data, budget())
    assert doc.title == "User Guide"
    assert_cited_by_source_lines(data, doc)
    literal = holding(doc, "python -m pip install -r requirements.txt")
    assert literal.heading_path == ("User Guide", "Installing Packages", "Requirements Files")
    assert "# a comment line inside the literal block" in literal.content
    assert "--no-deps" in literal.content
    simple_table = holding(doc, "slowgrindtable")
    assert simple_table.heading == "Constraints Files"
    assert "``-c FILE``        constrain versions" in simple_table.content
    grid = holding(doc, "cachedirunix")
    assert "| Platform   | Cache directory" in grid.content
    assert holding(doc, "uninstall SomePackage").heading_path == (
        "User Guide", "Uninstalling Packages")  # fmt: skip
    assert "Running pip" not in [c.heading for c in doc.chunks if "Installing" in c.content]


def test_rst_include_and_raw_directives_read_nothing_outside_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import docutils.io

    opened: list[object] = []
    real_init = docutils.io.FileInput.__init__

    def spy(self: object, *args: object, **kwargs: object) -> None:
        opened.append(kwargs.get("source_path", args[1] if len(args) > 1 else args))
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(docutils.io.FileInput, "__init__", spy)
    secret = tmp_path / "secret.txt"
    secret.write_text("topsecretpassword\n", encoding="utf-8")
    page = (f"Title\n=====\n\n.. include:: {secret}\n\n.. literalinclude:: {secret}\n\n"
            f".. csv-table:: Data\n   :file: {secret}\n\n"
            f".. raw:: html\n   :file: {secret}\n\nA closing paragraph.\n")  # fmt: skip
    doc = RstParser().parse("hostile.rst", page.encode(), budget())
    assert doc.chunks and all("topsecretpassword" not in c.content for c in doc.chunks)
    assert "A closing paragraph." in doc.chunks[-1].content
    assert opened == []  # docutils never opened a file


def test_rst_over_its_budgets_is_refused_naming_the_limit() -> None:
    rows = "\n".join(f"| {n:<6} | value {n:<6} |\n+--------+--------------+" for n in range(400))
    table = "Big\n===\n\n+--------+--------------+\n" + rows + "\n"
    tight = RstParser(ParserLimits(max_elements=500))
    with pytest.raises(OverBudget, match="max_elements"):
        tight.parse("big.rst", table.encode(), budget())
    with pytest.raises(OverBudget, match="max_output_chars"):
        RstParser(ParserLimits(max_output_chars=1000)).parse("big.rst", table.encode(), budget())
    deep = "Title\n=====\n\n" + "".join(" " * n + "quoted\n\n" for n in range(3000))
    with pytest.raises(ParseError, match="nested too deeply"):
        RstParser().parse("deep.rst", deep.encode(), budget())
    with pytest.raises(ParseError, match="UTF-8"):
        RstParser().parse("latin.rst", "Titre\n=====\n\ncaf\xe9\n".encode("latin-1"), budget())


# -- AsciiDoc ----------------------------------------------------------------------------


def test_adoc_headings_of_both_styles_blocks_and_tables_are_kept() -> None:
    data = read("git-add.adoc")
    doc = AsciiDocParser().parse("Documentation/git-add.adoc", data, budget())
    assert doc.title == "git-add(1)"
    assert_cited_by_source_lines(data, doc)
    assert holding(doc, "Add file contents to the index").heading_path == ("git-add(1)", "NAME")
    listing = holding(doc, "fakeheadinginsidelisting")
    assert listing.heading_path == ("git-add(1)", "EXAMPLES")
    assert "$ git add Documentation/\\*.txt" in listing.content
    assert "Title" not in {c.heading for c in doc.chunks}
    table = holding(doc, "statuscommandrow")
    assert table.heading_path == ("git-add(1)", "EXAMPLES", "Interactive mode")
    assert "| revert | revert staged set" in table.content
    literal = holding(doc, "literalblockword")
    assert "literal text stays as it is" in literal.content
    assert holding(doc, "nestedsectionword").heading_path == (
        "git-add(1)", "CONFIGURATION", "advice.addEmptyPathspec")  # fmt: skip


# -- Jupyter notebooks -------------------------------------------------------------------


def test_notebook_cells_and_text_outputs_are_read_and_cited_by_json_lines() -> None:
    data = read("readings.ipynb")
    doc = NotebookParser().parse("analysis/readings.ipynb", data, budget(60))
    assert doc.title == "Loading the sensor data"
    assert_cited_by_source_lines(data, doc)
    text = "\n".join(c.content for c in doc.chunks)
    for word in ("markdowncellword", "codecellword", "streamoutputword", "resultplainword",
                 "errorvalueword"):  # fmt: skip
        chunk = holding(doc, word)
        assert word in cited(data, chunk.start_line, chunk.end_line), word
    assert "iVBORw0KGgo" not in text and "\x1b" not in text
    assert holding(doc, "resultplainword").heading_path == ("Loading the sensor data", "Plotting")
    assert "not a heading in a fence" not in {c.heading for c in doc.chunks}


@pytest.mark.parametrize(
    ("data", "reason"),
    [(b"{not json", "not JSON"), (b'{"worksheets": []}', "nbformat 4"), (b"[1, 2]", "cells")],
)
def test_a_file_that_is_no_notebook_is_refused_with_one_line(data: bytes, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        NotebookParser().parse("bad.ipynb", data, budget())


# -- registry and end to end -------------------------------------------------------------


def test_the_new_formats_are_registered_by_name_and_extension() -> None:
    registry = build_registry(["md", "rst", "adoc", "ipynb"])
    assert registry.extensions() >= {"rst", "rest", "adoc", "asciidoc", "ipynb"}
    assert build_registry(["md"]).parser_for("rst") is None
    registry.close()


def test_rst_adoc_and_notebooks_are_searched_and_cited_by_lines_of_the_served_file(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    root = tmp_path / "kb"
    write_files(root, {
        "pip/user_guide.rst": read("user_guide.rst"),
        "git/git-add.adoc": read("git-add.adoc"),
        "lab/readings.ipynb": read("readings.ipynb"),
        "lab/notes.txt": "plain text stays text\n",
    })  # fmt: skip
    kb = open_kb(root, enabled_formats=("md", "txt", "rst", "adoc", "ipynb"))
    summary = kb.index()
    assert (summary.added, summary.failed) == (4, 0)
    for query, word, path, heading in (
        ("cachedirunix cache directory", "cachedirunix", "pip/user_guide.rst",
         "Constraints Files"),
        ("statuscommandrow show paths with changes", "statuscommandrow", "git/git-add.adoc",
         "Interactive mode"),
        ("streamoutputword loaded readings", "streamoutputword", "lab/readings.ipynb",
         "Loading the sensor data"),
        ("errorvalueword out of range", "errorvalueword", "lab/readings.ipynb", "Plotting"),
    ):  # fmt: skip
        hit = next(h for h in kb.search(query, limit=5).results if h.path == path)
        assert hit.heading == heading
        served = kb.get_document(path).content
        assert served == (root / path).read_text(encoding="utf-8")
        assert word in cited(served.encode(), hit.start_line, hit.end_line), query
