"""Source code (the ``code`` format): chunks at definitions with the symbol path in the
heading trail, in every language of ``codelangs``, cited by the file's own lines; a file
the grammar cannot parse in line chunks with a note; a symbol found at its definition
through the real index (issue 39, item 2; decision 0048)."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pytest

from kbmcp_adapters.parsers.budget import OverBudget, ParserLimits
from kbmcp_adapters.parsers.code import CodeParser
from kbmcp_adapters.parsers.registry import build_registry
from kbmcp_core.errors import ConfigError
from kbmcp_core.models import ParsedDocument
from kbmcp_core.ports import ChunkBudget
from tests.conftest import OpenKb, write_files

WORD = re.compile(r"\w+")


def budget(max_tokens: int = 200) -> ChunkBudget:
    return ChunkBudget(
        max_tokens=max_tokens, min_tokens=0, counter=lambda t: math.ceil(len(t.split()) * 1.3) + 2
    )


def assert_cited_by_whole_lines(data: bytes, doc: ParsedDocument) -> None:
    """Every chunk is exactly the file's lines it cites (no line is cut)."""
    lines = data.decode("utf-8").split("\n")
    assert doc.chunks
    for chunk in doc.chunks:
        assert chunk.start_line is not None and chunk.end_line is not None
        assert chunk.content == "\n".join(lines[chunk.start_line - 1 : chunk.end_line]).rstrip()


def trail_of(doc: ParsedDocument, text: str) -> tuple[str, ...]:
    return next(c.heading_path for c in doc.chunks if text in c.content)


#: (file, source, {text in the chunk: the heading trail it carries}) per language
SAMPLES: list[tuple[str, str, dict[str, tuple[str, ...]]]] = [
    ("store.py", '''"""Stores things."""
import os


# Adds two numbers.
@cached
def add(a, b):
    """Add them."""
    return a + b


class Repo:
    """A repository of items."""

    limit = 3

    def save(self, item):
        # keep it
        return item
''', {"@cached": ("store", "add"), "Add them": ("store", "add"),
      "A repository": ("store", "Repo"), "keep it": ("store", "Repo", "save"),
      "import os": ("store",)}),
    ("cart.js", '''import x from "y";

// Totals a cart.
export function total(items) {
  return items.length;
}

export const double = (n) => n * 2;

class Cart {
  /** Adds an item. */
  add(item) {
    return item;
  }
}
''', {"Totals a cart": ("cart", "total"), "n * 2": ("cart", "double"),
      "Adds an item": ("cart", "Cart", "add")}),
    ("shape.ts", '''export interface Shape {
  area(): number;
}

export class Circle implements Shape {
  constructor(private r: number) {}

  area(): number {
    return 3.14 * this.r * this.r;
  }
}
''', {"area(): number;": ("shape", "Shape"), "3.14": ("shape", "Circle", "area")}),
    ("view.tsx", '''export function Badge() {
  return <span>badge</span>;
}
''', {"<span>badge</span>": ("view", "Badge")}),
    ("repo.go", '''package store

// Repo keeps items.
type Repo struct {
	n int
}

// Save stores one item.
func (r *Repo) Save(x int) int {
	return x
}
''', {"Repo keeps items": ("repo", "Repo"), "Save stores one": ("repo", "Repo", "Save")}),
    ("repo.rs", '''/// A repository.
#[derive(Debug)]
struct Repo {
    n: i32,
}

impl Repo {
    /// Saves one item.
    fn save(&self) -> i32 {
        self.n
    }
}
''', {"#[derive(Debug)]": ("repo", "Repo"), "Saves one item": ("repo", "Repo", "save")}),
    ("Repo.java", '''package store;

/** A repository. */
public class Repo {
    private int n;

    /** Saves one item. */
    @Override
    public int save(int x) {
        return x;
    }
}
''', {"private int n": ("Repo", "Repo"), "@Override": ("Repo", "Repo", "save")}),
    ("sum.c", '''#include <stdio.h>

/* Adds two numbers. */
static int add(int a, int b) {
    return a + b;
}

struct point {
    int x;
};
''', {"Adds two numbers": ("sum", "add"), "int x;": ("sum", "point")}),
    ("geo.cpp", '''namespace geo {
class Circle {
 public:
  double area() const {
    return 3.14;
  }
};
}
''', {"return 3.14": ("geo", "geo", "Circle", "area")}),
    ("deploy.sh", '''#!/bin/sh
set -e

# Greets someone.
greet() {
  echo "hello $1"
}

greet world
''', {"Greets someone": ("deploy", "greet"), "greet world": ("deploy",),
      "set -e": ("deploy",)}),
]


@pytest.mark.parametrize(("name", "source", "trails"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_each_language_is_chunked_at_its_definitions_with_the_symbol_trail(
    name: str, source: str, trails: dict[str, tuple[str, ...]]
) -> None:
    data = source.encode()
    doc = CodeParser().parse(f"src/{name}", data, budget())
    assert doc.title == name and doc.warnings == ()
    assert_cited_by_whole_lines(data, doc)
    for text, trail in trails.items():
        assert trail_of(doc, text) == trail, text
        assert next(c for c in doc.chunks if text in c.content).heading == trail[-1]


def test_a_file_over_the_chunk_bound_is_cut_at_definitions_never_inside_a_line() -> None:
    functions = [f"def step_{n}(value):\n    \"\"\"Step {n} of the pipeline.\"\"\"\n"
                 f"    total = value + {n}\n    return total * {n}\n" for n in range(40)]
    data = ("\n\n".join(functions)).encode()
    doc = CodeParser().parse("pipeline.py", data, budget(60))
    assert_cited_by_whole_lines(data, doc)
    assert len(doc.chunks) == 40
    for n, chunk in enumerate(doc.chunks):
        assert chunk.heading_path == ("pipeline", f"step_{n}")
        assert chunk.content.startswith(f"def step_{n}(value):")


def test_a_long_definition_is_cut_at_its_blank_lines_under_its_own_trail() -> None:
    body = "\n\n".join(f"        part_{n} = compute({n}, 'a fairly long argument list here')"
                       for n in range(30))
    data = f"class Engine:\n    def run(self):\n{body}\n".encode()
    doc = CodeParser().parse("engine.py", data, budget(40))
    assert_cited_by_whole_lines(data, doc)
    parts = [c for c in doc.chunks if "part_" in c.content]
    assert len(parts) > 2
    assert {c.heading_path for c in parts} == {("engine", "Engine", "run")}


def test_a_file_the_grammar_cannot_parse_is_read_in_line_chunks_with_a_note() -> None:
    data = b"def fine():\n    return 1\n\ndef broken(:\n    pass\n"
    doc = CodeParser().parse("broken.py", data, budget())
    assert doc.warnings == ("not parsed as Python (a syntax error near line 4); indexed in "
                            "line chunks, not at its definitions",)
    assert_cited_by_whole_lines(data, doc)
    assert {c.heading_path for c in doc.chunks} == {("broken",)}
    assert "def broken(:" in "\n".join(c.content for c in doc.chunks)


def test_a_header_that_is_not_c_is_read_as_cpp() -> None:
    data = b"class Shape {\n public:\n  virtual double area() const { return 0; }\n};\n"
    doc = CodeParser().parse("shape.h", data, budget())
    assert doc.warnings == ()
    assert trail_of(doc, "virtual double") == ("shape", "Shape", "area")


def test_code_is_held_to_the_parser_budgets() -> None:
    data = ("\n".join(f"def f{n}(): pass" for n in range(200))).encode()
    with pytest.raises(OverBudget, match=r"limit \[parsers\].max_elements"):
        CodeParser(ParserLimits(max_elements=50)).parse("many.py", data, budget())
    with pytest.raises(OverBudget, match=r"limit \[parsers\].max_output_chars"):
        CodeParser(ParserLimits(max_output_chars=100)).parse("many.py", data, budget())


def test_enabling_code_without_its_grammars_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tree_sitter_rust", None)  # not importable
    with pytest.raises(ConfigError, match=r"pip install 'kb-mcp\[code\]'"):
        build_registry(["md", "code"])


def test_a_symbol_is_found_at_its_definition_and_served_as_the_file_itself(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    root = tmp_path / "kb"
    write_files(root, {
        "billing/invoices.py": (
            '"""Invoices."""\n\n\ndef format_total(amount):\n    return f"{amount:.2f}"\n\n\n'
            "def parse_invoice(text):\n"
            '    """Read an invoice: its number, its lines and its total."""\n'
            "    number, *rows = text.splitlines()\n    return number, rows\n"),
        "billing/report.py": (
            "from billing.invoices import parse_invoice\n\n\n"
            "def monthly_report(texts):\n"
            "    parsed = [parse_invoice(t) for t in texts]\n"
            "    again = [parse_invoice(t) for t in texts]\n"
            "    return parsed, again\n"),
        "web/app.ts": ("import { parseInvoice } from './invoices';\n\n"
                       "export function handleUpload(body: string) {\n"
                       "  return parseInvoice(body);\n}\n"),
        "notes.md": "# Notes\n\nWe call parse_invoice from the monthly report.\n",
    })  # fmt: skip
    kb = open_kb(root, enabled_formats=("md", "code"))
    summary = kb.index()
    assert (summary.added, summary.failed) == (4, 0)
    top = kb.search("parse_invoice", limit=5).results[0]
    assert (top.path, top.heading_path) == ("billing/invoices.py", ("invoices", "parse_invoice"))
    served = kb.get_document("billing/invoices.py").content
    assert served == (root / "billing/invoices.py").read_text(encoding="utf-8")
    assert top.start_line is not None and top.end_line is not None
    cited = served.split("\n")[top.start_line - 1 : top.end_line]
    assert cited[0] == "def parse_invoice(text):"
    hit = kb.search("handleUpload", limit=3).results[0]
    assert (hit.path, hit.heading_path) == ("web/app.ts", ("app", "handleUpload"))


def test_a_section_read_of_code_names_a_definition_and_gives_its_own_lines(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    root = tmp_path / "kb"
    write_files(root, {"shop/cart.py": (
        '"""Carts."""\n\n\nclass Cart:\n'
        "    def add(self, item):\n        self.items.append(item)\n\n"
        "    def total(self):\n        return sum(i.price for i in self.items)\n\n\n"
        "def empty_cart():\n    return Cart()\n")})  # fmt: skip
    kb = open_kb(root, enabled_formats=("code",))
    kb.index()
    part = kb.get_document("shop/cart.py", section="Cart > total").content
    assert part == "    def total(self):\n        return sum(i.price for i in self.items)\n"
    whole_class = kb.get_document("shop/cart.py", section="Cart").content
    assert whole_class.startswith("class Cart:\n") and "def total" in whole_class
    assert "empty_cart" not in whole_class
