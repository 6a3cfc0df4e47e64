"""Source code parser (the ``code`` format, tree-sitter): chunks at definitions, the
symbol path in the heading trail, cited by the file's own lines (decision 0048).

* ``convert`` (run in a parser worker under the ``[parsers]`` budgets) reads the file as
  strict UTF-8, parses it with the grammar of its extension (``codelangs``) and finds the
  definitions: functions, methods, classes, types, with the decorators, attributes and
  comments right above them. The file is cut into regions: each definition (a class's
  methods are regions of their own, under it), and the lines between definitions, which
  belong to the scope around them (the module, or the class).
* Each region is packed under the chunk budget with the heading trail ``module > Class >
  method`` (``module``: the file name without its extension; a Go method sits under its
  receiver's type, a Rust one under its ``impl``); a region over the budget is cut at
  blank lines, then lines, never inside a line unless one line alone is over the budget.
  Definitions are never merged with each other, so a chunk's trail names what it holds.
* A file the grammar finds a syntax error in (a ``.h`` file is tried as C, then as C++)
  is indexed in line chunks under its module name, with a warning naming the line.
* The served text is the file itself: a hit's lines are the file's lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kbmcp_adapters.parsers.budget import DEFAULT_LIMITS, Meter, ParserLimits
from kbmcp_adapters.parsers.chunking import (
    Unit,
    decode_text,
    fit_heading_path,
    join_lines,
    merge_tiny,
    split_lines,
    split_range,
)
from kbmcp_adapters.parsers.codelangs import (
    CODE_EXTENSIONS,
    Language,
    by_name,
    grammar,
    language_for,
)
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ChunkDraft, ParsedDocument, extension_of
from kbmcp_core.outline import HeadingMark
from kbmcp_core.ports import ChunkBudget

__all__ = ["CodeOutline", "CodeParser"]

_SPACE = re.compile(r"\s+")
#: Node types never searched for definitions: literals and comments hold none.
_OPAQUE = ("string", "comment", "literal", "template_string", "heredoc")
_NAME_CHARS = 120


@dataclass(frozen=True, slots=True)
class CodeOutline:
    """What ``convert`` returns (picklable): the file's lines and its regions, each
    ``(first line, last line, symbol path)`` with 0-based lines, in file order."""

    lines: tuple[str, ...]
    regions: tuple[tuple[int, int, tuple[str, ...]], ...]
    title: str
    warnings: tuple[str, ...] = ()


@dataclass(slots=True)
class _Def:
    start: int
    end: int
    name: str
    scope: tuple[str, ...]
    parent: int  # index of the enclosing definition, -1 at the top


class CodeParser:
    """Parses source files of every language in ``codelangs.LANGUAGES``."""

    extensions: tuple[str, ...] = CODE_EXTENSIONS

    def __init__(self, limits: ParserLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits

    def convert(self, path: str, data: bytes) -> CodeOutline:
        language = language_for(extension_of(path))
        if language is None:
            raise ParseError("not a source file kb-mcp reads")
        text = decode_text(data)
        meter = Meter(self.limits)
        meter.chars(len(text))
        lines = tuple(split_lines(text))
        name = path.rsplit("/", 1)[-1]
        module = name.rsplit(".", 1)[0] or name
        whole = ((0, len(lines) - 1, (module,)),)
        tree, error_row = _parse(language, data)
        if error_row is not None and language.fallback is not None:
            other, other_row = _parse(by_name(language.fallback), data)
            if other_row is None:
                tree, error_row, language = other, None, by_name(language.fallback)
        if error_row is not None:
            note = (f"not parsed as {language.name} (a syntax error near line "
                    f"{error_row + 1}); indexed in line chunks, not at its definitions")
            return CodeOutline(lines, whole, name, (note,))
        defs = _definitions(tree.root_node, language, lines, meter)
        return CodeOutline(lines, _regions(defs, len(lines), module), name)

    def text_of(self, outline: CodeOutline) -> str:
        return "\n".join(outline.lines)

    def headings(self, path: str, text: str) -> tuple[HeadingMark, ...]:
        """The definitions of the file whose text ``text`` is, as its headings."""
        return self.headings_of(self.convert(path, text.encode("utf-8")))

    def headings_of(self, outline: CodeOutline) -> tuple[HeadingMark, ...]:
        """Each definition at the line it starts on (a section read of ``Class > method``
        gives that method's lines), its depth under the module as its level."""
        marks: list[HeadingMark] = []
        previous: tuple[str, ...] = ()
        for start, _, trail in outline.regions:
            for depth in range(1, len(trail)):
                if trail[:depth + 1] != previous[:depth + 1]:
                    marks.append(HeadingMark(start + 1, depth, trail[depth]))
            previous = trail
        return tuple(marks)

    def extract_text(self, path: str, data: bytes) -> str:
        return decode_text(data)

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        return self.document(path, self.convert(path, data), budget)

    def document(self, path: str, outline: CodeOutline, budget: ChunkBudget) -> ParsedDocument:
        lines = outline.lines
        paths = [fit_heading_path(trail, budget) for _, _, trail in outline.regions]
        units: list[Unit] = []
        for label, (start, end, _) in enumerate(outline.regions):
            units.extend(split_range(lines, start, end, paths[label], budget, label))

        def render(start: int, end: int, label: int) -> str:
            while start <= end and not lines[start].strip():
                start += 1
            return join_lines(lines, start, end)

        units = merge_tiny(units, budget, render=render, path_of=lambda label: paths[label],
                           across_labels=False)
        chunks = tuple(
            ChunkDraft(ordinal=n, heading=paths[u.label][-1], heading_path=paths[u.label],
                       content=u.text, start_line=u.start + 1, end_line=u.end + 1)
            for n, u in enumerate(units)
        )
        return ParsedDocument(title=outline.title, chunks=chunks, warnings=outline.warnings)


def _parse(language: Language, data: bytes) -> tuple[Any, int | None]:
    """The syntax tree, and the 0-based row of its first syntax error (None: no error)."""
    import tree_sitter

    tree = tree_sitter.Parser(grammar(language)).parse(data)
    node = tree.root_node
    if not node.has_error:
        return tree, None
    while True:
        for child in node.children:
            if child.is_error or child.is_missing:
                return tree, int(child.start_point.row)
            if child.has_error:
                node = child
                break
        else:
            return tree, int(node.start_point.row)


def _definitions(root: Any, language: Language, lines: tuple[str, ...], meter: Meter
                 ) -> list[_Def]:
    """Every definition under ``root`` in file order (a leaf's insides not searched)."""
    found: list[_Def] = []
    stack: list[tuple[Any, int]] = [(child, -1) for child in reversed(root.named_children)]
    while stack:
        node, parent = stack.pop()
        meter.elements()
        kind = node.type
        if kind in language.leaves or kind in language.containers:
            named = _name(node, language)
            if named is None:
                continue
            name, scope = named
            found.append(_Def(_start(node, language, lines), _end(node), name, scope, parent))
            if kind in language.containers:
                inner = len(found) - 1
                stack.extend((child, inner) for child in reversed(node.named_children))
        elif not any(word in kind for word in _OPAQUE):
            stack.extend((child, parent) for child in reversed(node.named_children))
    return found


def _regions(defs: list[_Def], count: int, module: str
             ) -> tuple[tuple[int, int, tuple[str, ...]], ...]:
    """The file cut into regions: definitions, and the lines of the scope between them."""
    children: dict[int, list[int]] = {}
    for n, d in enumerate(defs):
        children.setdefault(d.parent, []).append(n)
    out: list[tuple[int, int, tuple[str, ...]]] = []

    def cut(parent: int, start: int, end: int, trail: tuple[str, ...]) -> None:
        cursor = start
        for n in sorted(children.get(parent, []), key=lambda k: defs[k].start):
            d = defs[n]
            first, last = max(d.start, cursor), min(d.end, end)
            if last < first:
                continue
            if first > cursor:
                out.append((cursor, first - 1, trail))
            inner = (*trail, *d.scope, d.name)
            if n in children:
                cut(n, first, last, inner)
            else:
                out.append((first, last, inner))
            cursor = last + 1
        if cursor <= end:
            out.append((cursor, end, trail))

    cut(-1, 0, count - 1, (module,))
    return tuple(out)


def _start(node: Any, language: Language, lines: tuple[str, ...]) -> int:
    """The first line of a definition: its wrappers' (decorators, ``export``), then the
    comments and attributes right above it, each on lines of their own."""
    while node.parent is not None and node.parent.type in language.wrappers:
        node = node.parent
    start = int(node.start_point.row)
    sibling = node.prev_named_sibling
    while sibling is not None and ("comment" in sibling.type or sibling.type in language.attached):
        row, column = int(sibling.start_point.row), int(sibling.start_point.column)
        if int(sibling.end_point.row) < start - 1 or lines[row][:column].strip() \
                or lines[row][column:].startswith("#!"):
            break
        start = row
        sibling = sibling.prev_named_sibling
    return start


def _end(node: Any) -> int:
    end = int(node.end_point.row)
    return end - 1 if node.end_point.column == 0 and end > node.start_point.row else end


def _text(node: Any | None) -> str | None:
    if node is None or node.text is None:
        return None
    text = _SPACE.sub(" ", node.text.decode("utf-8", "replace")).strip()
    return text[:_NAME_CHARS] or None


def _name(node: Any, language: Language) -> tuple[str, tuple[str, ...]] | None:
    """A definition's name and the scope it is filed under (a Go method's receiver
    type); None for a node of a definition type that defines nothing (a ``const`` whose
    value is not a function, a ``struct`` named without its body)."""
    kind = node.type
    if kind in ("lexical_declaration", "variable_declaration"):
        for declarator in node.named_children:
            value = declarator.child_by_field_name("value")
            if value is not None and value.type in language.valued:
                name = _text(declarator.child_by_field_name("name"))
                return (name, ()) if name else None
        return None
    if kind in ("struct_specifier", "union_specifier", "enum_specifier", "class_specifier"):
        name = _text(node.child_by_field_name("name"))
        return (name, ()) if name and node.child_by_field_name("body") is not None else None
    if kind in ("function_definition", "type_definition") and language.module != (
            "tree_sitter_python") and language.module != "tree_sitter_bash":
        name = _declarator_name(node.child_by_field_name("declarator"))
        return (name, ()) if name else None
    if kind == "impl_item":
        target = _text(node.child_by_field_name("type"))
        trait = _text(node.child_by_field_name("trait"))
        return (f"{trait} for {target}" if trait else target or "impl", ())
    if kind == "type_declaration":
        spec = next((c for c in node.named_children if c.type in ("type_spec", "type_alias")),
                    None)
        name = _text(spec.child_by_field_name("name")) if spec is not None else None
        return (name, ()) if name else None
    if kind == "namespace_definition":
        return _text(node.child_by_field_name("name")) or "(anonymous namespace)", ()
    name = _text(node.child_by_field_name("name"))
    if name is None:
        return None
    if kind == "method_declaration" and language.name == "Go":
        receiver = node.child_by_field_name("receiver")
        owner = _receiver_type(receiver) if receiver is not None else None
        return name, (owner,) if owner else ()
    return name, ()


def _declarator_name(node: Any | None) -> str | None:
    """The name inside a C declarator (``*f(int)``, ``A::f() const``)."""
    while node is not None:
        if node.type in ("identifier", "field_identifier", "qualified_identifier",
                         "destructor_name", "operator_name", "type_identifier"):
            return _text(node)
        node = node.child_by_field_name("declarator")
    return None


def _receiver_type(node: Any) -> str | None:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "type_identifier":
            return _text(current)
        stack.extend(reversed(current.named_children))
    return None
