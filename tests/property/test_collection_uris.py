"""Properties of ``kb://`` URIs on a server of several collections (decision 0042).

A URI built for a collection reads back as that collection and that path, whatever the
path holds (even a first folder named like another collection); a URI naming no
collection belongs to the one default, or is refused naming the form; a path that would
climb out of its collection is refused while parsing; a server of one folder parses
exactly as before.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbmcp_core.errors import NotOffered, PathRefused
from kbmcp_core.reading import RequestPath
from kbmcp_core.uris import (
    DocRangeUri,
    DocUri,
    TopicUri,
    UriSpace,
    collection_of,
    doc_range_uri,
    doc_uri,
    parse_uri,
    topic_uri,
)
from tests.property.support import budget

NAMES = ("handbook", "notes", "api-docs", "x_1")
name = st.sampled_from(NAMES)
#: a path segment as files are named: letters, spaces, dots, '#', '%', '?', non-ASCII,
#: and now and then exactly a collection's name
segment = (st.text(alphabet="abcXYZ09 .-_#%?&+é日本", min_size=1, max_size=12)
           .filter(lambda s: s not in (".", "..") and s.strip() != "") | name)
path = st.lists(segment, min_size=1, max_size=4).map("/".join)


def _clean(p: str) -> str:
    return "/".join(x for x in p.split("/") if x not in ("", "."))


@settings(max_examples=budget(400))
@given(c=name, p=path, default=st.sampled_from((None, *NAMES)))
def test_a_collection_uri_reads_back_as_its_collection_and_path(c: str, p: str,
                                                                 default: str | None) -> None:
    space = UriSpace(NAMES, default)
    assert parse_uri(doc_uri(p, c), space) == DocUri(RequestPath(_clean(p)), c)


@settings(max_examples=budget(300))
@given(c=name, p=path, start=st.integers(1, 10**6), span=st.integers(0, 500))
def test_a_ranged_collection_uri_keeps_its_lines(c: str, p: str, start: int,
                                                  span: int) -> None:
    got = parse_uri(doc_range_uri(p, start, start + span, c), UriSpace(NAMES))
    assert got == DocRangeUri(RequestPath(_clean(p)), start, start + span, c)


@settings(max_examples=budget(200))
@given(c=name, prefix=st.sampled_from(("", "guides", "notes", "日本")))
def test_a_collection_topic_uri_reads_back(c: str, prefix: str) -> None:
    assert parse_uri(topic_uri(prefix, c), UriSpace(NAMES)) == TopicUri(prefix, c)


@settings(max_examples=budget(300))
@given(p=path.filter(lambda p: _clean(p).split("/")[0] not in NAMES), default=name)
def test_a_uri_naming_no_collection_belongs_to_the_one_default(p: str, default: str) -> None:
    uri = doc_uri(p)
    assert collection_of(uri, UriSpace(NAMES, default)) == (default, uri)
    assert parse_uri(uri, UriSpace(NAMES, default)) == DocUri(RequestPath(_clean(p)), default)
    with pytest.raises(NotOffered) as refused:
        parse_uri(uri, UriSpace(NAMES, None))
    assert "kb://doc/{collection}/" in refused.value.reason
    assert all(n in refused.value.reason for n in NAMES)


@settings(max_examples=budget(200))
@given(p=path)
def test_one_folder_parses_as_it_always_did(p: str) -> None:
    """Without a space, a first folder named like a collection is just a folder."""
    assert parse_uri(doc_uri(p)) == DocUri(RequestPath(_clean(p)))
    assert parse_uri(doc_uri(f"handbook/{p}")) == DocUri(RequestPath(f"handbook/{_clean(p)}"))


@pytest.mark.parametrize("uri", [
    "kb://doc/handbook/../notes/secret.md",
    "kb://doc/handbook/%2e%2e/notes/secret.md",
    "kb://doc/handbook/%2e%2e%2fnotes%2fsecret.md",
    "kb://doc/handbook//etc/passwd",
    "kb://doc/handbook/%2fetc%2fpasswd",
    "kb://doc/handbook/a%00.md",
    "kb://doc/handbook/a%5c..%5cb.md",
    "kb://doc/handbook/",
    "kb://doc/%68andbook/../x.md",
])
def test_a_collection_uri_cannot_climb_out_of_its_collection(uri: str) -> None:
    with pytest.raises(PathRefused):
        parse_uri(uri, UriSpace(NAMES, "notes"))


def test_the_first_segment_decides_even_percent_encoded() -> None:
    space = UriSpace(NAMES, "notes")
    assert parse_uri("kb://doc/%68andbook/a.md", space) == DocUri(RequestPath("a.md"), "handbook")
    # a name in another case is no collection name: the default collection's folder
    assert parse_uri("kb://doc/Handbook/a.md", space) == DocUri(RequestPath("Handbook/a.md"),
                                                                "notes")
    with pytest.raises(NotOffered):
        parse_uri("kb://other/handbook/a.md", space)
