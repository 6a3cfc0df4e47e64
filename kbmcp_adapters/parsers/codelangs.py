"""What the code parser knows of each language: its grammar package, its extensions, and
which syntax nodes are definitions (decision 0048).

A *leaf* definition (a function, a method, a type) is one chunk region, nested definitions
and all; a *container* (a class, an ``impl``, a namespace) is a region for its own lines
and is searched for the definitions inside it; a *wrapper* (a decorator, ``export``,
``template<...>``) lends its first line to the definition it wraps; the comments and
attributes right above a definition (no blank line between) are its doc comment. Every
grammar comes from a prebuilt wheel on PyPI (the ``[code]`` extra), imported only when a
code file is read.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CODE_EXTENSIONS", "GRAMMAR_MODULES", "INSTALL_HINT", "LANGUAGES", "Language",
           "by_name", "grammar", "language_for", "missing_grammars"]

#: How to install what the ``code`` format needs.
INSTALL_HINT = "pip install 'kb-mcp[code]'"


@dataclass(frozen=True, slots=True)
class Language:
    """One language's grammar and the node types that make its definitions."""

    name: str
    module: str
    extensions: tuple[str, ...]
    leaves: frozenset[str]
    containers: frozenset[str] = frozenset()
    wrappers: frozenset[str] = frozenset()
    #: node types above a definition that belong to it (besides comments)
    attached: frozenset[str] = frozenset()
    #: the function of ``module`` that returns the grammar (tree-sitter-typescript has two)
    entry: str = "language"
    #: the grammar to try when this one finds a syntax error (``.h``: C, then C++)
    fallback: str | None = None
    #: value node types that make a ``const f = () => ...`` a function definition
    valued: frozenset[str] = field(default_factory=frozenset)


_JS_LEAVES = frozenset({
    "function_declaration", "generator_function_declaration", "method_definition",
    "lexical_declaration", "variable_declaration",
})
_JS_VALUED = frozenset({"arrow_function", "function_expression", "function",
                        "generator_function", "class"})
_TS_LEAVES = _JS_LEAVES | frozenset({
    "interface_declaration", "type_alias_declaration", "enum_declaration",
    "abstract_method_signature", "function_signature", "method_signature",
})
_TS_CONTAINERS = frozenset({"class_declaration", "abstract_class_declaration",
                            "internal_module", "module"})
_C_LEAVES = frozenset({"function_definition", "type_definition", "struct_specifier",
                       "union_specifier", "enum_specifier"})

LANGUAGES: tuple[Language, ...] = (
    Language("Python", "tree_sitter_python", ("py", "pyi"),
             frozenset({"function_definition"}), frozenset({"class_definition"}),
             frozenset({"decorated_definition"})),
    Language("JavaScript", "tree_sitter_javascript", ("js", "mjs", "cjs", "jsx"),
             _JS_LEAVES, frozenset({"class_declaration"}), frozenset({"export_statement"}),
             valued=_JS_VALUED),
    Language("TypeScript", "tree_sitter_typescript", ("ts", "mts", "cts"), _TS_LEAVES,
             _TS_CONTAINERS, frozenset({"export_statement"}), entry="language_typescript",
             valued=_JS_VALUED),
    Language("TSX", "tree_sitter_typescript", ("tsx",), _TS_LEAVES, _TS_CONTAINERS,
             frozenset({"export_statement"}), entry="language_tsx", valued=_JS_VALUED),
    Language("Go", "tree_sitter_go", ("go",),
             frozenset({"function_declaration", "method_declaration", "type_declaration"})),
    Language("Rust", "tree_sitter_rust", ("rs",),
             frozenset({"function_item", "struct_item", "enum_item", "union_item",
                        "type_item", "macro_definition", "function_signature_item"}),
             frozenset({"impl_item", "trait_item", "mod_item"}),
             attached=frozenset({"attribute_item"})),
    Language("Java", "tree_sitter_java", ("java",),
             frozenset({"method_declaration", "constructor_declaration",
                        "compact_constructor_declaration"}),
             frozenset({"class_declaration", "interface_declaration", "enum_declaration",
                        "record_declaration", "annotation_type_declaration"})),
    Language("C", "tree_sitter_c", ("c", "h"), _C_LEAVES, fallback="C++"),
    Language("C++", "tree_sitter_cpp", ("cc", "cpp", "cxx", "c++", "hpp", "hh", "hxx", "h++"),
             _C_LEAVES, frozenset({"class_specifier", "namespace_definition"}),
             frozenset({"template_declaration"})),
    Language("shell", "tree_sitter_bash", ("sh", "bash"), frozenset({"function_definition"})),
)

_BY_NAME = {language.name: language for language in LANGUAGES}
_BY_EXTENSION = {ext: language for language in LANGUAGES for ext in language.extensions}
#: Every extension the ``code`` format reads.
CODE_EXTENSIONS: tuple[str, ...] = tuple(_BY_EXTENSION)
#: The grammar modules (and the binding) a parser worker loads before its memory cap.
GRAMMAR_MODULES: tuple[str, ...] = ("tree_sitter",) + tuple(
    dict.fromkeys(language.module for language in LANGUAGES))


def language_for(extension: str) -> Language | None:
    """The language of a file extension (lower case, no dot)."""
    return _BY_EXTENSION.get(extension)


def by_name(name: str) -> Language:
    return _BY_NAME[name]


def missing_grammars() -> tuple[str, ...]:
    """The modules of ``GRAMMAR_MODULES`` that are not installed (looked up, not imported)."""
    return tuple(m for m in GRAMMAR_MODULES if importlib.util.find_spec(m) is None)


_GRAMMARS: dict[str, Any] = {}


def grammar(language: Language) -> Any:
    """The tree-sitter ``Language`` of ``language`` (loaded once per process)."""
    found = _GRAMMARS.get(language.name)
    if found is None:
        import tree_sitter

        entry: Callable[[], Any] = getattr(importlib.import_module(language.module),
                                           language.entry)
        found = _GRAMMARS[language.name] = tree_sitter.Language(entry())
    return found
