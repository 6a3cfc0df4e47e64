"""Ranged reads through the library on a real folder: a document over the read cap read in
ranges with every byte accounted for, sections, pages, outlines and range URIs
(decision 0033)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import DocumentView, KnowledgeBase
from kbmcp_core.errors import InvalidRange, PathRefused
from kbmcp_core.ranges import LONG_DOCUMENT_LINES
from kbmcp_core.reading import TEXT_READ_CAP
from kbmcp_core.uris import doc_range_uri, doc_uri
from tests.conftest import make_big_pdf, write_files
from tests.hashing_embedder import HashingEmbedder

MIB = 1024 * 1024
BIG = "notes/ledger.md"
#: Sections long enough to stay chunks of their own (an outline lists the index's sections).
WORDS = " ".join(f"word{i}" for i in range(30))
SETUP = f"## Setup\n\nInstall it: {WORDS}.\nRun it: {WORDS}.\n"
GUIDE = (f"# Guide\n\nIntro: {WORDS}.\n\n{SETUP}\n"
         f"## Usage\n\nUse it daily: {WORDS}.\n")
#: Sections so short that the parser merges them into one chunk: a section read must still
#: be exactly its heading's lines, from the file's headings, not from the chunk.
PART_ONE = "## Part one\n\nThe first part.\n"
PART_TWO = "## Part two\n\nThe second part.\n"
DUP = "# Dup\n\nThe dup section.\n"
SMALL = f"# Intro\n\nA short note.\n\n{PART_ONE}\n{PART_TWO}\n{DUP}"
#: Headings that hold the trail separator themselves.
ARROWS = ("# Budget\n\n## Costs > Q1\n\nRent and power.\n\n# Costs\n\n## Q1\n\n"
          "Nothing yet.\n")


def ledger_text(size: int = 3 * MIB) -> str:
    """Over ``size`` bytes of Markdown whose every line is different (a line out of place
    or lost changes the text), in 40 sections, with non-ASCII characters and CRLF lines."""
    out: list[str] = []
    total, section, n = 0, 0, 0
    per_section = size // 40 + 1
    while total < size:
        head = f"## Ledger part {section}\n"
        out.append(head)
        total += len(head)
        taken = 0
        while taken < per_section:
            line = (f"row {n} of part {section}: shipment ÆØÅ-{n * 7919 % 100003} "
                    f"cleared customs on day {n % 365}" + ("\r\n" if n % 97 == 0 else "\n"))
            out.append(line)
            taken += len(line.encode())
            n += 1
        out.append("\n")
        total += taken + 1
        section += 1
    return "# Ledger\n\n" + "".join(out)


def outline_of(view: DocumentView) -> list[dict[str, Any]]:
    entries = view.as_dict()["outline"]
    assert isinstance(entries, list)
    return entries


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    root = tmp_path_factory.mktemp("ranged") / "kb"
    write_files(root, {
        BIG: ledger_text(),
        "notes/guide.md": GUIDE,
        "notes/short.md": "one\ntwo\nthree\n",
        "notes/small.md": SMALL,
        "notes/arrows.md": ARROWS,
    })
    make_big_pdf(root / "papers/telemetry.pdf", pages=12)
    settings = build_settings(None, cwd=root, kb_path=root, enabled_formats=("md", "pdf"))
    k = KnowledgeBase(bootstrap(settings, embedder=HashingEmbedder()))
    k.index()
    yield k
    k.close()


def test_a_document_over_the_read_cap_reads_in_ranges_with_every_byte(kb: KnowledgeBase
                                                                       ) -> None:
    on_disk = (kb.settings.kb_path / BIG).read_bytes()
    assert len(on_disk) > 3 * MIB
    parts: list[str] = []
    start: int | None = 1
    totals = set()
    while start is not None:
        got = kb.get_document(BIG, start_line=start, max_lines=20_000).as_dict()
        assert got["is_range"] is True and got["start_line"] == start
        assert len(str(got["content"]).encode()) <= TEXT_READ_CAP
        parts.append(str(got["content"]))
        totals.add(got["total_lines"])
        start = got["next_start_line"]  # type: ignore[assignment]
        assert len(parts) < 100
    assert len(parts) >= 4  # the read cap, not max_lines, cut the ranges
    assert "".join(parts).encode() == on_disk
    assert totals == {on_disk.count(b"\n")}


def test_a_whole_read_over_the_cap_is_refused_with_how_to_read_it(kb: KnowledgeBase) -> None:
    with pytest.raises(PathRefused, match="read it in ranges") as caught:
        kb.get_document(BIG)
    assert "start_line" in str(caught.value) and "#L1-" in str(caught.value)


def test_a_range_past_the_end_names_the_length(kb: KnowledgeBase) -> None:
    with pytest.raises(InvalidRange, match="has 3 lines") as caught:
        kb.get_document("notes/short.md", start_line=4)
    assert caught.value.code == "invalid_argument" and caught.value.total_lines == 3
    with pytest.raises(InvalidRange, match="has 3 lines"):
        kb.read_resource(doc_range_uri("notes/short.md", 9, 12))


def test_the_last_range_ends_the_document(kb: KnowledgeBase) -> None:
    got = kb.get_document("notes/short.md", start_line=2, max_lines=50).as_dict()
    assert (got["content"], got["start_line"], got["end_line"]) == ("two\nthree\n", 2, 3)
    assert got["next_start_line"] is None and got["total_lines"] == 3
    whole = kb.get_document("notes/short.md").as_dict()
    assert whole["is_range"] is False and whole["content"] == "one\ntwo\nthree\n"


def test_a_long_document_comes_with_its_outline_once(kb: KnowledgeBase) -> None:
    first = kb.get_document(BIG, start_line=1, max_lines=10).as_dict()
    outline = first["outline"]
    assert isinstance(outline, list) and len(outline) == 41
    assert outline[1]["trail"] == ["Ledger", "Ledger part 0"]
    assert int(str(first["total_lines"])) > LONG_DOCUMENT_LINES
    later = kb.get_document(BIG, start_line=500, max_lines=10).as_dict()
    assert "outline" not in later
    short = outline_of(kb.get_document("notes/guide.md", outline=True))
    assert [(e["heading"], e["start_line"]) for e in short] == [
        ("Guide", 1), ("Setup", 5), ("Usage", 10)]


def test_a_section_reads_its_lines(kb: KnowledgeBase) -> None:
    got = kb.get_document("notes/guide.md", section="setup").as_dict()
    assert got["content"] == SETUP
    assert (got["start_line"], got["end_line"], got["is_range"]) == (5, 8, True)
    part = kb.get_document(BIG, section="Ledger > Ledger part 7").as_dict()
    text = str(part["content"])
    assert text.startswith("## Ledger part 7\n") and "of part 7:" in text
    assert "of part 8:" not in text and "of part 6:" not in text
    with pytest.raises(InvalidRange, match="no section"):
        kb.get_document("notes/guide.md", section="Missing")


def test_a_pdf_page_reads_its_lines(kb: KnowledgeBase) -> None:
    outline = outline_of(kb.get_document("papers/telemetry.pdf", outline=True))
    assert [e["page"] for e in outline] == list(range(1, 13))
    page = kb.get_document("papers/telemetry.pdf", page=3).as_dict()
    lines = str(page["content"]).splitlines()
    assert lines[0].startswith("0 Telemetry appendix") and len(lines) >= 50
    assert page["start_line"] == outline[2]["start_line"]
    with pytest.raises(InvalidRange, match="has 12 pages"):
        kb.get_document("papers/telemetry.pdf", page=13)
    with pytest.raises(InvalidRange, match="no pages"):
        kb.get_document("notes/guide.md", page=1)


def test_a_range_uri_reads_exactly_those_lines(kb: KnowledgeBase) -> None:
    assert kb.read_resource(doc_range_uri("notes/guide.md", 5, 8)).text == SETUP
    assert kb.read_resource(doc_range_uri("notes/guide.md", 12, 12)).text == (
        f"Use it daily: {WORDS}.\n")


def test_a_document_over_the_read_cap_is_offered_and_its_uri_reads_its_start(
    kb: KnowledgeBase,
) -> None:
    assert BIG in kb.offered_paths()
    body = kb.read_resource(doc_uri(BIG)).text
    assert len(body.encode()) <= TEXT_READ_CAP
    head, notice = body.rsplit("\n\n---\n", 1)
    assert "of this document are shown" in notice and "kb://doc/notes/ledger.md#L" in notice
    on_disk = (kb.settings.kb_path / BIG).read_bytes().decode()
    assert on_disk.startswith(head)
    hits = kb.search("shipment cleared customs ledger", mode="lexical").results
    assert any(h.path == BIG and h.uri is not None for h in hits)


def test_sections_merged_into_one_chunk_still_read_as_their_own_lines(
        kb: KnowledgeBase) -> None:
    chunks = kb._container.store.chunk_ids_for(["notes/small.md"])
    assert 1 <= len(chunks) < 4  # the four sections were merged
    for name, text in (("Part two", PART_TWO), ("Part one", PART_ONE), ("Dup", DUP),
                       ("Intro > Part two", PART_TWO)):
        got = kb.get_document("notes/small.md", section=name).as_dict()
        assert got["content"] == text, name
    intro = kb.get_document("notes/small.md", section="Intro").as_dict()
    assert intro["content"] == SMALL[:SMALL.index("# Dup")].rstrip("\n") + "\n"
    assert [(e["trail"], e["start_line"], e["end_line"]) for e in outline_of(
        kb.get_document("notes/small.md", outline=True))] == [
        (["Intro"], 1, 11), (["Intro", "Part one"], 5, 7), (["Intro", "Part two"], 9, 11),
        (["Dup"], 13, 15)]


def test_a_heading_holding_the_trail_separator_can_be_named(kb: KnowledgeBase) -> None:
    own = kb.get_document("notes/arrows.md", section="Costs > Q1").as_dict()
    assert own["content"] == "## Costs > Q1\n\nRent and power.\n"  # its own text first
    assert kb.get_document("notes/arrows.md", section="Budget > Costs > Q1").as_dict()[
        "content"] == own["content"]
    nested = kb.get_document("notes/arrows.md", section="Q1").as_dict()
    assert nested["content"] == "## Q1\n\nNothing yet.\n"


def test_an_unknown_section_is_an_invalid_argument_naming_the_sections(
        kb: KnowledgeBase) -> None:
    with pytest.raises(InvalidRange) as caught:
        kb.get_document("notes/small.md", section="Part three")
    assert caught.value.code == "invalid_argument"
    assert str(caught.value) == (
        "'notes/small.md' has no section 'Part three'; its sections: Intro (lines 1-11); "
        "Intro > Part one (lines 5-7); Intro > Part two (lines 9-11); Dup (lines 13-15)")


def test_an_unindexed_or_changed_document_has_the_outline_of_its_own_text(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    root = kb.settings.kb_path
    write_files(root, {"notes/new.md": "# New\n\n" + "line\n" * 500})
    try:
        got = kb.get_document("notes/new.md", start_line=1, max_lines=5).as_dict()
        assert got["outline"] == [{"heading": "New", "level": 1, "trail": ["New"],
                                   "start_line": 1, "end_line": 502}]
        assert kb.get_document("notes/new.md", section="New").as_dict()["end_line"] == 502
    finally:
        (root / "notes/new.md").unlink()
    guide = root / "notes/guide.md"
    before = guide.read_bytes()
    guide.write_bytes(before + b"\n## Added\n\nlater\n")
    try:
        added = kb.get_document("notes/guide.md", section="Added").as_dict()
        assert added["content"] == "## Added\n\nlater\n"
    finally:
        guide.write_bytes(before)


def test_bad_range_requests_are_invalid_arguments(kb: KnowledgeBase) -> None:
    for bad in ({"start_line": 0}, {"max_lines": 0}, {"page": 1, "section": "Setup"},
                {"start_line": 2, "page": 1}, {"section": "  "}):
        with pytest.raises(InvalidRange):
            kb.get_document("notes/guide.md", **bad)


FORMAT_GUIDES = {
    "g.rst": ("Guide\n=====\n\nIntro text.\n\nSetup\n-----\n\nInstall it.\n\nUsage\n-----\n\n"
              "Use it.\n", "Setup\n-----\n\nInstall it.\n"),
    "g.adoc": ("= Guide\n\nIntro text.\n\n== Setup\n\nInstall it.\n\n== Usage\n\nUse it.\n",
               "== Setup\n\nInstall it.\n"),
    "g.html": ("<html><body><main><h1>Guide</h1><p>Intro text.</p><h2>Setup</h2>"
               "<p>Install it.</p><h2>Usage</h2><p>Use it.</p></main></body></html>",
               "## Setup\n\nInstall it.\n"),
}


def test_sections_of_html_rst_and_asciidoc_come_from_their_headings(tmp_path: Path) -> None:
    """Each format's parser finds the headings in what a read serves (the file, or the
    Markdown it converts to): the same outline indexed or not."""
    from tests.fakes import FakeEmbedder, FakeIndexStore, FakeVectorStore

    root = tmp_path / "kb"
    write_files(root, {name: text for name, (text, _) in FORMAT_GUIDES.items()})
    settings = build_settings(None, cwd=root, kb_path=root,
                              enabled_formats=("md", "rst", "adoc", "html"))
    k = KnowledgeBase(bootstrap(settings, store=FakeIndexStore(), vectors=FakeVectorStore(),
                                embedder=FakeEmbedder()))
    try:
        for indexed in (False, True):
            if indexed:
                k.index()
            for name, (_, setup) in FORMAT_GUIDES.items():
                assert k.get_document(name, section="Guide > Setup").content == setup, name
                trails = [e["trail"] for e in outline_of(k.get_document(name, outline=True))]
                assert trails == [["Guide"], ["Guide", "Setup"], ["Guide", "Usage"]], name
    finally:
        k.close()
