"""The kb:// scheme (one build, one parse) and the core resource read on fakes."""

from __future__ import annotations

import pytest

from kbmcp_core import reading, uris
from kbmcp_core.errors import NotOffered, PathRefused
from kbmcp_core.index_run import run_index
from kbmcp_core.offer import OfferRules, read_resource
from kbmcp_core.uris import DocUri, TopicUri, doc_uri, parse_uri, topic_uri
from tests.fakes import FakeFileSystem, FakeIndexStore, FakeRegistry, fake_deps

FILES = {
    "guides/keys.md": b"# Keys\nrotate the keys every quarter\n",
    "guides/ünï code.md": b"# Accents\nnon-ASCII names read too\n",
    "readme.md": b"# Readme\nthe top level\n",
}


@pytest.fixture
def world() -> tuple[OfferRules, FakeFileSystem]:
    fs = FakeFileSystem(FILES)
    store = FakeIndexStore()
    run_index(fake_deps(fs, store=store))
    fs.files["notes/later.md"] = b"# Later\non disk, never indexed\n"
    fs.reads.clear()
    return OfferRules(store, FakeRegistry()), fs


def test_built_uris_parse_back_to_what_they_name() -> None:
    for path in FILES:
        assert parse_uri(doc_uri(path)) == DocUri(reading.RequestPath(path))
    assert parse_uri(topic_uri("guides")) == TopicUri("guides")
    assert parse_uri(topic_uri("")) == TopicUri("")
    assert uris.DOC_URI_TEMPLATE == "kb://doc/{path}"


@pytest.mark.parametrize("uri", ["kb://doc/a%ff.md", "kb://topic/gu%c3ides"])
def test_malformed_percent_encoding_is_refused_for_both_kinds(uri: str) -> None:
    with pytest.raises(PathRefused) as refused:
        parse_uri(uri)
    assert refused.value.reason == "malformed percent-encoding"
    assert not isinstance(refused.value, NotOffered)


@pytest.mark.parametrize("uri", ["kb://doc/%2e%2e%2fsecret.md", "kb://doc/%2fetc%2fpasswd",
                                 "kb://doc/a%00.md", "kb://doc/a%5cb.md"])
def test_a_hostile_document_path_is_refused_while_parsing(uri: str) -> None:
    with pytest.raises(PathRefused):
        parse_uri(uri)


@pytest.mark.parametrize("uri", ["kb://other/a.md", "file:///etc/passwd", "kb://doc", ""])
def test_any_other_uri_is_not_offered(uri: str) -> None:
    with pytest.raises(NotOffered, match="unknown resource URI"):
        parse_uri(uri)


def test_an_offered_document_reads_with_the_guard_run_once(
        world: tuple[OfferRules, FakeFileSystem], monkeypatch: pytest.MonkeyPatch) -> None:
    rules, fs = world
    calls: list[str] = []
    guard = reading.clean_request_path

    def counted(raw: str) -> reading.RequestPath:
        calls.append(raw)
        return guard(raw)

    monkeypatch.setattr(reading, "clean_request_path", counted)
    monkeypatch.setattr(uris, "clean_request_path", counted)
    body = read_resource(doc_uri("guides/ünï code.md"), rules, fs)
    assert body.text == FILES["guides/ünï code.md"].decode()
    assert body.media_type == "text/markdown"
    assert calls == ["guides/ünï code.md"]
    assert fs.reads == ["guides/ünï code.md"]


def test_a_file_the_index_does_not_offer_is_never_opened(
        world: tuple[OfferRules, FakeFileSystem]) -> None:
    rules, fs = world
    with pytest.raises(NotOffered, match="not offered"):
        read_resource(doc_uri("notes/later.md"), rules, fs)
    assert fs.reads == []


def test_a_topic_lists_its_offered_documents_and_an_unknown_one_is_not_offered(
        world: tuple[OfferRules, FakeFileSystem]) -> None:
    rules, fs = world
    body = read_resource("kb://topic/guides/", rules, fs)
    assert body.media_type == "text/markdown"
    assert doc_uri("guides/keys.md") in body.text
    assert "readme.md" not in body.text
    with pytest.raises(NotOffered, match="no such topic"):
        read_resource(topic_uri("notes"), rules, fs)
    assert fs.reads == []
