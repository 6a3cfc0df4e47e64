"""The read path's kept conversions on fakes: served only for the bytes they were made from."""

from __future__ import annotations

import hashlib

import pytest

from kbmcp_core.errors import IndexNotFound, ReadBusy, StoreError
from kbmcp_core.models import ParsedDocument
from kbmcp_core.outline import HeadingMark
from kbmcp_core.ports import ChunkBudget, ConvertedText
from kbmcp_core.reading import EXTRACTED_TEXT_CAP, ConversionGate, conversion_of, load_document
from tests.fakes import FakeFileSystem


class PageParser:
    """Converts ``.html`` by upper-casing it; counts its conversions."""

    extensions: tuple[str, ...] = ("html",)

    def __init__(self) -> None:
        self.converted: list[str] = []

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        raise AssertionError("reads never parse")

    def extract_text(self, path: str, data: bytes) -> str:
        self.converted.append(path)
        return data.decode("utf-8").upper()

    def headings(self, path: str, text: str) -> tuple[HeadingMark, ...]:
        return ()


class Registry:
    def __init__(self, parser: PageParser) -> None:
        self.parser = parser

    def extensions(self) -> frozenset[str]:
        return frozenset({"html"})

    def conversion_versions(self) -> dict[str, int]:
        return {"html": 1}

    def parser_for(self, extension: str) -> PageParser | None:
        return self.parser if extension == "html" else None

    def supports(self, extension: str) -> bool:
        return extension == "html"


class Kept:
    """A ConvertedTexts holding some texts, or failing as a store would."""

    def __init__(self, texts: dict[str, ConvertedText], error: Exception | None = None) -> None:
        self.texts = texts
        self.error = error

    def converted_text(self, content_hash: str) -> ConvertedText | None:
        if self.error is not None:
            raise self.error
        return self.texts.get(content_hash)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_kept_text_is_served_for_its_own_bytes_without_converting() -> None:
    parser = PageParser()
    fs = FakeFileSystem({"a.html": b"<p>now</p>"})
    kept = Kept({sha(b"<p>now</p>"): ConvertedText(sha(b"<p>now</p>"), "kept text", 3_000_000)})
    doc = load_document("a.html", fs, Registry(parser), kept, ConversionGate())
    assert (doc.text, doc.truncated, doc.media_type) == ("kept text", True, "text/markdown")
    assert parser.converted == []


def test_a_kept_text_of_other_bytes_is_never_served() -> None:
    parser = PageParser()
    fs = FakeFileSystem({"a.html": b"<p>edited</p>"})
    kept = Kept({sha(b"<p>before</p>"): ConvertedText(sha(b"<p>before</p>"), "stale", 5)})
    doc = load_document("a.html", fs, Registry(parser), kept, ConversionGate())
    assert (doc.text, doc.truncated) == ("<P>EDITED</P>", False)
    assert parser.converted == ["a.html"]


@pytest.mark.parametrize("error", [IndexNotFound("no index"), StoreError("store down")])
def test_no_index_or_a_failing_store_means_the_file_is_converted(error: Exception) -> None:
    parser = PageParser()
    fs = FakeFileSystem({"a.html": b"<p>x</p>"})
    doc = load_document("a.html", fs, Registry(parser), Kept({}, error), ConversionGate())
    assert doc.text == "<P>X</P>"


def test_what_the_index_keeps_is_what_a_read_would_serve() -> None:
    long = "é" * EXTRACTED_TEXT_CAP  # two bytes each: cut at half the characters
    kept = conversion_of("h", long)
    assert kept is not None
    assert (len(kept.text), kept.chars, kept.truncated) == (EXTRACTED_TEXT_CAP // 2, len(long),
                                                           True)
    short = conversion_of("h", "whole")
    assert short is not None and (short.text, short.truncated) == ("whole", False)
    assert conversion_of("h", "a\x00b") is None  # PostgreSQL cannot keep a NUL


def test_a_gate_refuses_after_its_wait_and_frees_its_slot() -> None:
    gate = ConversionGate(slots=1, wait_s=0.05)
    with gate.slot("a.html"), pytest.raises(ReadBusy) as busy, gate.slot("b.html"):
        pass
    assert busy.value.code == "server_busy"
    with gate.slot("c.html"):  # the first slot was given back
        assert gate.waiting == 0
    with pytest.raises(ValueError):
        ConversionGate(slots=0)
