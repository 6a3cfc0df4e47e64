"""Declared fields in the core (decision 0036): declarations, the rows front matter gives,
the filter conditions a request names, the ``--field`` syntax, and an index run that
fills a later declaration from the stored rows without a file read or a model call."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import click
import pytest

from kbmcp_cli.field_option import to_filter
from kbmcp_core.errors import ConfigError, InvalidQuery
from kbmcp_core.field_filters import conditions
from kbmcp_core.fields import Declared, FieldValue, declare, front_matter, values_of
from kbmcp_core.index_run import run_index
from kbmcp_core.meta_keys import META_FIELDS
from kbmcp_core.models import DocumentFilter
from tests.fakes import FakeEmbedder, FakeFileSystem, FakeIndexStore, FakeVectorStore, fake_deps

DECLARED: Declared = (("due", "date"), ("status", "string"), ("tags", "list"),
                      ("year", "number"))


def test_declarations_are_checked_and_sorted() -> None:
    assert declare({"year": "number", "due": "date"}) == (("due", "date"), ("year", "number"))
    with pytest.raises(ConfigError, match=r"\[fields\]\.year must be one of string, number, "
                                          "date, list, got 'int'"):
        declare({"year": "int"})
    with pytest.raises(ConfigError, match="'a=b' is not a field name"):
        declare({"a=b": "string"})
    with pytest.raises(ConfigError, match="must be a table"):
        declare(["year"])


def test_front_matter_gives_one_row_per_value_and_warns_about_the_rest() -> None:
    found = front_matter({"status": "In Review", "year": "2024", "due": "2024-02-30",
                          "extra": 1}, "T", None, ("A", "b", "a"), None, None)
    rows, warnings = values_of(found, DECLARED)
    assert rows == (FieldValue("status", text="in review"), FieldValue("tags", text="a"),
                    FieldValue("tags", text="b"), FieldValue("year", number=2024.0))
    assert warnings == ("front matter 'due': '2024-02-30' is not a date; not indexed as a "
                        "field",)
    rows, warnings = values_of({"due": "2024-02-03T10:00:00+02:00", "year": True,
                                "status": ["x"], "tags": ["ok", {"no": 1}]}, DECLARED)
    assert rows == (FieldValue("due", day="2024-02-03"), FieldValue("tags", text="ok"))
    assert [w.split(":")[0] for w in warnings] == ["front matter 'status'",
                                                   "front matter 'tags'",
                                                   "front matter 'year'"]


@pytest.mark.parametrize(("raw", "message"), [
    ({"nope": 1}, "fields: 'nope' is not a declared field; declared fields: due (date), "
                  "status (string), tags (list), year (number)"),
    ({"year": "x1"}, "fields.year: 'x1' is not a number"),
    ({"year": True}, "fields.year: True is not a number"),
    ({"due": "1st May"}, "fields.due: '1st May' is not an ISO 8601 date"),
    ({"tags": {"gte": "a"}}, "fields.tags: a range applies to number and date fields"),
    ({"year": {"from": 1}}, "fields.year: a range takes gt, gte, lt, lte, not 'from'"),
    ({"year": []}, "fields.year: an empty list matches nothing"),
    ({"status": "a\x00b"}, "fields.status must not contain control characters"),
    ({}, "fields must be a non-empty object"),
])
def test_a_bad_condition_says_what_to_fix(raw: Any, message: str) -> None:
    with pytest.raises(InvalidQuery) as caught:
        conditions(raw, DECLARED)
    assert str(caught.value).startswith(message)


def test_no_declaration_names_where_to_declare() -> None:
    with pytest.raises(InvalidQuery, match=r"declared fields: none \(declare them under "
                                            r"\[fields\] in kb-mcp.toml\)"):
        conditions({"status": "x"}, ())


@pytest.mark.parametrize(("tests", "expected"), [
    (("status=draft",), {"status": "draft"}),
    (("tags=a", "tags=b=c"), {"tags": ["a", "b=c"]}),
    (("year>=2020", "year < 2024"), {"year": {"gte": "2020", "lt": "2024"}}),
    (("due>2024-01-01", "due<=2024-12-31"), {"due": {"gt": "2024-01-01",
                                                     "lte": "2024-12-31"}}),
    ((), None),
])
def test_the_field_option_syntax(tests: tuple[str, ...], expected: object) -> None:
    assert to_filter(None, None, tests) == expected


@pytest.mark.parametrize("tests", [("year",), ("=2020",), ("year>=",), ("year=1", "year<2")])
def test_a_field_option_that_does_not_parse_is_a_usage_error(tests: tuple[str, ...]) -> None:
    with pytest.raises(click.BadParameter):
        to_filter(None, None, tests)


def test_a_later_declaration_is_filled_from_the_stored_rows_without_the_model() -> None:
    fs = FakeFileSystem()
    fs.files.update({"a.md": b"# A\nalpha words\n", "b.md": b"# B\nbeta words\n"})
    store, vectors, embedder = FakeIndexStore(), FakeVectorStore(), FakeEmbedder()
    run_index(fake_deps(fs, store=store, vectors=vectors, embedder=embedder))
    embedded = len(embedder.embedded)
    assert embedded == 2
    for path, status in (("a.md", "draft"), ("b.md", 7)):  # front matter the rows keep
        store.docs[path].record = replace(store.docs[path].record, metadata={"status": status})
    writes, reads = list(store.row_writes), list(fs.reads)
    deps = fake_deps(fs, store=store, vectors=vectors, embedder=embedder)
    deps.fields = (("status", "string"),)
    summary = run_index(deps)
    assert len(embedder.embedded) == embedded and store.row_writes == writes
    assert fs.reads == reads, "no file was read again"
    assert summary.unchanged == 2
    draft = DocumentFilter(fields=conditions({"status": "draft"}, deps.fields))
    assert store.matching_paths(draft) == {"a.md"}
    assert store.matching_paths(DocumentFilter(fields=conditions({"status": "7"},
                                                                 deps.fields))) == {"b.md"}
    assert store.meta[META_FIELDS] == '{"status": "string"}'
    deps.fields = ()
    run_index(deps)
    assert store.matching_paths(draft) == set() and store.meta[META_FIELDS] == ""
