"""Ranged reads in the core, on fakes: range URIs (one builder, one parser), the lines a
range holds, where it stops, what it says about itself, and its errors."""

from __future__ import annotations

import pytest

from kbmcp_core import ranges
from kbmcp_core.errors import InvalidRange, NotOffered, PathRefused
from kbmcp_core.index_run import run_index
from kbmcp_core.offer import OfferRules, read_resource
from kbmcp_core.ranges import RangeRequest, read_range
from kbmcp_core.reading import RequestPath
from kbmcp_core.uris import DocRangeUri, DocUri, doc_range_uri, doc_uri, parse_uri
from tests.fakes import FakeFileSystem, FakeIndexStore, FakeRegistry, fake_deps

TEXT = "one\r\ntwo\nthree ü\n\nfive"  # CRLF kept, a blank line, no final line end


def read(ask: RangeRequest, files: dict[str, bytes] | None = None) -> ranges.TextRange:
    fs = FakeFileSystem(files or {"a.md": TEXT.encode()})
    return read_range(RequestPath("a.md"), ask, fs, FakeRegistry())


def test_a_range_uri_is_built_once_and_parses_back() -> None:
    uri = doc_range_uri("dir/a b#1.md", 40, 58)
    assert uri == "kb://doc/dir/a%20b%231.md#L40-58"
    assert parse_uri(uri) == DocRangeUri(RequestPath("dir/a b#1.md"), 40, 58)
    assert parse_uri("kb://doc/a.md#L7") == DocRangeUri(RequestPath("a.md"), 7, 7)
    assert parse_uri(doc_uri("a.md")) == DocUri(RequestPath("a.md"))
    with pytest.raises(ValueError):
        doc_range_uri("a.md", 5, 4)


@pytest.mark.parametrize("uri", ["kb://doc/a.md#L0-3", "kb://doc/a.md#L5-4", "kb://doc/a.md#x",
                                 "kb://doc/a.md#L3-", "kb://doc/a.md#"])
def test_a_fragment_that_names_no_lines_is_an_invalid_argument(uri: str) -> None:
    with pytest.raises(InvalidRange) as caught:
        parse_uri(uri)
    assert caught.value.code == "invalid_argument"


def test_a_range_uri_still_passes_the_path_guard() -> None:
    with pytest.raises(PathRefused):
        parse_uri("kb://doc/../secret.md#L1-2")


def test_ranges_cover_the_text_exactly() -> None:
    whole = read(RangeRequest())
    assert (whole.text, whole.total_lines, whole.is_range, whole.next_start_line) == (
        TEXT, 5, False, None)
    parts: list[str] = []
    start: int | None = 1
    while start is not None:
        got = read(RangeRequest(start_line=start, max_lines=2))
        parts.append(got.text)
        start = got.next_start_line
    assert "".join(parts) == TEXT
    last = read(RangeRequest(start_line=4, max_lines=9))
    assert (last.text, last.end_line, last.next_start_line, last.is_range) == (
        "\nfive", 5, None, True)


def test_max_chars_stops_at_a_line_end_and_says_where_to_go_on() -> None:
    got = read(RangeRequest(max_chars=9))
    assert (got.text, got.end_line, got.next_start_line) == ("one\r\ntwo\n", 2, 3)
    assert got.is_range and got.cut_short
    with pytest.raises(InvalidRange, match="alone is longer"):
        read(RangeRequest(start_line=3, max_chars=3))


def test_the_reply_budget_cuts_a_range_at_a_line_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranges, "REPLY_TEXT_BUDGET", 12)
    got = read(RangeRequest(start_line=1, max_lines=5))
    assert (got.text, got.next_start_line) == ("one\r\ntwo\n", 3)
    with pytest.raises(InvalidRange, match="longer than one reply"):
        read(RangeRequest())  # a whole read is never served cut


def test_past_the_end_names_the_length() -> None:
    with pytest.raises(InvalidRange, match="which has 5 lines") as caught:
        read(RangeRequest(start_line=6))
    assert caught.value.total_lines == 5
    empty = read(RangeRequest(start_line=1), {"a.md": b""})
    assert (empty.text, empty.total_lines, empty.next_start_line) == ("", 0, None)


def test_a_resource_range_reads_exactly_its_lines_with_one_open() -> None:
    fs = FakeFileSystem({"a.md": b"# A\nx\ny\nz\n"})
    store = FakeIndexStore()
    run_index(fake_deps(fs, store=store))
    fs.reads.clear()
    rules = OfferRules(store, FakeRegistry())
    assert read_resource(doc_range_uri("a.md", 2, 3), rules, fs).text == "x\ny\n"
    assert fs.reads == ["a.md"]
    with pytest.raises(InvalidRange, match="has 4 lines"):
        read_resource(doc_range_uri("a.md", 5, 6), rules, fs)
    fs.files["b.md"] = b"never indexed\n"
    with pytest.raises(NotOffered):
        read_resource(doc_range_uri("b.md", 1, 1), rules, fs)


def test_an_outline_and_a_section_come_from_the_files_headings() -> None:
    fs = FakeFileSystem({"a.md": b"# Alpha\nbody a\n# Beta\nbody b\n"})
    store = FakeIndexStore()
    run_index(fake_deps(fs, store=store))
    for index in (store, None):  # the parser's headings, indexed or not
        got = read_range(RequestPath("a.md"), RangeRequest(outline=True), fs,
                         FakeRegistry(), index=index)
        assert [(e.trail, e.start_line, e.end_line) for e in got.outline or ()] == [
            (("Alpha",), 1, 2), (("Beta",), 3, 4)]
        beta = read_range(RequestPath("a.md"), RangeRequest(section="Beta"), fs,
                          FakeRegistry(), index=index)
        assert (beta.text, beta.start_line, beta.end_line) == ("# Beta\nbody b\n", 3, 4)
    with pytest.raises(InvalidRange, match="no section 'Gamma'; its sections: Alpha"):
        read_range(RequestPath("a.md"), RangeRequest(section="Gamma"), fs, FakeRegistry(),
                   index=store)
