"""Hostile ZIP-based documents (docx, pptx, xlsx, epub), built by hand with ``zipfile``:
each is refused by the archive guard and by its parser with one line, and an index run
over all of them finishes, counts each as one failed file and indexes the good note.
Then the amplifiers and the unusual-but-intact files of issue 22 (``amplifiers``): each
is refused for its real reason, or read, and the run goes on with the other files."""

from __future__ import annotations

import io
import random
import struct
import zipfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from kbmcp_adapters.parsers.epub import EpubParser
from kbmcp_adapters.parsers.sheets import XlsxParser
from kbmcp_adapters.parsers.slides import PptxParser
from kbmcp_adapters.parsers.word import DocxParser
from kbmcp_adapters.parsers.zipguard import check_archive
from kbmcp_core.errors import ParseError, PathRefused
from kbmcp_core.ports import ChunkBudget, Parser
from tests.conftest import OpenKb
from tests.integration.amplifiers import (
    broken_link_epub,
    deep_html,
    shared_strings_workbook,
    slideshow_as_pptx,
    strict_workbook,
)

MIB = 1024 * 1024
ZIP_FORMATS: dict[str, Callable[[], Parser]] = {
    "docx": DocxParser,
    "pptx": PptxParser,
    "xlsx": XlsxParser,
    "epub": EpubParser,
}
#: The part each format's library reads first: a hostile archive names it, so nothing
#: but the guard stands between the bytes and the library.
MAIN_PART = {
    "docx": "word/document.xml",
    "pptx": "ppt/presentation.xml",
    "xlsx": "xl/workbook.xml",
    "epub": "META-INF/container.xml",
}
BUDGET = ChunkBudget(max_tokens=256, min_tokens=24, counter=lambda text: len(text.split()) + 2)


def archive(entries: Sequence[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, body in entries:
            zf.writestr(name, body)
    return out.getvalue()


def zip_bomb(fmt: str) -> bytes:
    """One entry declaring 60 MiB (of zeros, so it compresses to about 60 KB)."""
    return archive([("[Content_Types].xml", b"<Types/>"), (MAIN_PART[fmt], bytes(60 * MIB))])


def lying_size(fmt: str) -> bytes:
    """A ZIP bomb in disguise: the entry declares 1,000 bytes, with the checksum of its
    first 1,000 bytes, but inflates to 60 MiB. ``zipfile`` reads it back in bounded steps
    without complaint, while a library's ``read()`` inflates the whole stream at once."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", b"<Types/>")
        with zf.open(MAIN_PART[fmt], "w") as member:
            for _ in range(60):
                member.write(bytes(MIB))
        info = zf.getinfo(MAIN_PART[fmt])
    data = bytearray(out.getvalue())
    crc, size = zlib.crc32(bytes(1000)), 1000
    struct.pack_into("<I", data, info.header_offset + 14, crc)  # local header
    struct.pack_into("<I", data, info.header_offset + 22, size)
    central = data.index(b"PK\x01\x02", info.header_offset + 30 + info.compress_size)
    name = MAIN_PART[fmt].encode()
    while data[central + 46 : central + 46 + len(name)] != name:
        central = data.index(b"PK\x01\x02", central + 4)
    struct.pack_into("<I", data, central + 16, crc)  # central directory
    struct.pack_into("<I", data, central + 24, size)
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as check, check.open(MAIN_PART[fmt]) as member:
        assert check.getinfo(MAIN_PART[fmt]).file_size == 1000
        while member.read(65536):  # zipfile itself finds nothing wrong
            pass
    return bytes(data)


def many_entries(fmt: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(MAIN_PART[fmt], b"<x/>")
        for n in range(10_000):
            zf.writestr(f"parts/{n}.xml", b"")
    return out.getvalue()


def encrypted_entry(fmt: str) -> bytes:
    """The main part flagged "encrypted" (bit 0 of its flags). ``writestr`` clears the
    flags it is given, so the bit is set on the entry once written, for the central
    directory, and patched into the local header."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("[Content_Types].xml", b"<Types/>")
        zf.writestr(MAIN_PART[fmt], b"\x8a\x01\x99" * 50)
        info = zf.getinfo(MAIN_PART[fmt])
        info.flag_bits |= 0x1
    data = bytearray(out.getvalue())
    data[info.header_offset + 6] |= 0x1
    assert zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo(MAIN_PART[fmt]).flag_bits & 0x1
    return bytes(data)


def ole_container(fmt: str) -> bytes:
    """What Office writes for a password-protected file: an OLE compound document."""
    header = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(16) + b"\x3e\x00\x03\x00\xfe\xff"
    return header.ljust(512, b"\x00") + b"EncryptionInfo".ljust(4096, b"\x00")


def truncated(fmt: str) -> bytes:
    whole = archive([("[Content_Types].xml", b"<Types/>" * 200), (MAIN_PART[fmt], b"<a/>" * 500)])
    return whole[: len(whole) // 2]


def random_bytes(fmt: str) -> bytes:
    return random.Random(fmt).randbytes(8192)


#: case -> (builder, what the one-line reason says)
HOSTILE: dict[str, tuple[Callable[[str], bytes], str]] = {
    "zip-bomb": (zip_bomb, "zip bomb"),
    "zip-bomb-lying-size": (lying_size, "declared size"),
    "10001-entries": (many_entries, "10,001 entries"),
    "encrypted-entry": (encrypted_entry, "encrypted"),
    "ole-encrypted-office": (ole_container, "encrypted"),
    "truncated": (truncated, "not a readable zip"),
    "random-bytes": (random_bytes, "not a readable zip"),
}


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert text and "\n" not in text, repr(text)
    return text.lower()


@pytest.mark.parametrize("case", list(HOSTILE))
def test_the_archive_guard_refuses_each_hostile_archive(case: str) -> None:
    build, reason = HOSTILE[case]
    with pytest.raises(ParseError) as caught:
        check_archive(build("xlsx"))
    assert reason in one_line(caught.value)


def test_the_guard_accepts_an_archive_within_the_limits() -> None:
    check_archive(archive([("a.xml", bytes(40 * MIB))] + [(f"{n}", b"") for n in range(9_998)]))


@pytest.mark.parametrize("fmt", list(ZIP_FORMATS))
@pytest.mark.parametrize("case", list(HOSTILE))
def test_every_zip_format_refuses_each_hostile_archive_in_parse_and_read(
    fmt: str, case: str
) -> None:
    build, reason = HOSTILE[case]
    data = build(fmt)
    parser = ZIP_FORMATS[fmt]()
    with pytest.raises(ParseError) as parsed:
        parser.parse(f"hostile.{fmt}", data, BUDGET)
    assert reason in one_line(parsed.value)
    with pytest.raises(ParseError) as read:
        parser.extract_text(f"hostile.{fmt}", data)
    assert reason in one_line(read.value)


def test_an_index_run_over_hostile_archives_fails_each_once_and_indexes_the_rest(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    hostile = [f"{case}.{fmt}" for case in HOSTILE for fmt in ZIP_FORMATS]
    for name in hostile:
        case, fmt = name.rsplit(".", 1)
        (tmp_path / name).write_bytes(HOSTILE[case][0](fmt))
    (tmp_path / "good.md").write_text(
        "# Greenhouse\n\nTomatoes need warm nights and steady watering.\n", encoding="utf-8"
    )
    kb = open_kb(tmp_path, enabled_formats=("md", "html", "docx", "pptx", "xlsx", "epub"))
    summary = kb.index()
    assert (summary.added, summary.failed) == (1, len(hostile))
    for name in hostile:
        case = name.rsplit(".", 1)[0]
        (warning,) = [w for w in summary.warnings if w.startswith(f"{name}:")]
        assert HOSTILE[case][1] in one_line(Exception(warning))
    assert kb.indexed_paths() == ["good.md"]
    assert kb.search("tomatoes warm nights").results[0].path == "good.md"
    # reads refuse them the same way, one line each, and the server goes on
    for name in hostile:
        with pytest.raises(PathRefused) as caught:
            kb.get_document(name)
        assert "cannot be extracted" in one_line(caught.value)
    assert "Tomatoes" in kb.get_document("good.md").content


@pytest.mark.parametrize("error", [RuntimeError("parser bug"), ValueError("bad value")])
def test_a_parser_that_crashes_costs_one_failed_file_never_the_run(
    tmp_path: Path, open_kb: OpenKb, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["Crop", "Bed"])
    sheet.append(["basil", "north bed"])
    out = io.BytesIO()
    workbook.save(out)
    (tmp_path / "beds.xlsx").write_bytes(out.getvalue())
    (tmp_path / "good.md").write_text("# Compost\n\nTurn the heap weekly.\n", encoding="utf-8")
    # in this process, so the patched parser is the one used (a crash in a worker process
    # is tested in test_parser_isolation.py)
    kb = open_kb(tmp_path, enabled_formats=("md", "xlsx"), parsers_isolate=False)
    assert kb.index().added == 2  # both index while the parser works

    def crash(self: object, path: str, data: bytes, budget: ChunkBudget) -> object:
        raise error

    monkeypatch.setattr(XlsxParser, "parse", crash)
    sheet.append(["mint", "pots"])
    out = io.BytesIO()
    workbook.save(out)
    (tmp_path / "beds.xlsx").write_bytes(out.getvalue())
    (tmp_path / "later.md").write_text("# Seeds\n\nSow carrots in spring.\n", encoding="utf-8")
    summary = kb.index()
    assert (summary.added, summary.failed) == (1, 1)
    (warning,) = [w for w in summary.warnings if w.startswith("beds.xlsx:")]
    assert warning == f"beds.xlsx: unexpected error while parsing ({type(error).__name__})"
    assert kb.search("sow carrots spring").results[0].path == "later.md"
    # the file that failed keeps what was indexed before
    assert kb.search("basil north bed").results[0].path == "beds.xlsx"


ALL_FORMATS = ("md", "html", "docx", "pptx", "xlsx", "epub")


def _garden(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text(
        "# Greenhouse\n\nTomatoes need warm nights and steady watering.\n", encoding="utf-8"
    )


def _warning_for(name: str, warnings: Sequence[str]) -> str:
    (warning,) = [w for w in warnings if w.startswith(f"{name}:")]
    return warning


def test_a_workbook_whose_one_shared_string_fills_every_cell_is_refused_as_over_budget(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    """POI's poc-shared-strings.xlsx: 30 KB that expand to 12 GB of cell text. It is an
    intact workbook: the reason names the budget, never "damaged"."""
    (tmp_path / "shared.xlsx").write_bytes(shared_strings_workbook())
    _garden(tmp_path)
    kb = open_kb(tmp_path, enabled_formats=ALL_FORMATS)
    summary = kb.index()
    assert (summary.added, summary.failed) == (1, 1)
    warning = _warning_for("shared.xlsx", summary.warnings)
    assert warning == ("shared.xlsx: produces more than 10,000,000 characters of text; "
                       "limit [parsers].max_output_chars")
    assert kb.search("tomatoes warm nights").results[0].path == "good.md"
    with pytest.raises(PathRefused) as caught:  # a read is held to the same budget
        kb.get_document("shared.xlsx")
    assert "limit [parsers].max_output_chars" in one_line(caught.value)


def test_a_page_of_deeply_nested_tags_is_refused_before_its_tree_is_built(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    (tmp_path / "deep.html").write_bytes(deep_html())
    _garden(tmp_path)
    kb = open_kb(tmp_path, enabled_formats=ALL_FORMATS)
    summary = kb.index()
    assert (summary.added, summary.failed) == (1, 1)
    warning = _warning_for("deep.html", summary.warnings)
    assert "holds more than 300,000 elements" in warning
    assert warning.endswith("limit [parsers].max_elements")
    assert kb.search("tomatoes warm nights").results[0].path == "good.md"


def test_a_strict_ooxml_workbook_is_read_not_called_empty(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    (tmp_path / "strict.xlsx").write_bytes(strict_workbook())
    _garden(tmp_path)
    kb = open_kb(tmp_path, enabled_formats=ALL_FORMATS)
    summary = kb.index()
    assert (summary.added, summary.failed) == (2, 0)
    assert not [w for w in summary.warnings if w.startswith("strict.xlsx")]
    text = kb.get_document("strict.xlsx").content
    for sheet, value in (("Beds", "Bed: north bed"), ("Tools", "dibber"),
                         ("Notes", "compost turned weekly")):
        assert f"# {sheet}" in text and value in text
    assert kb.search("basil north bed").results[0].path == "strict.xlsx"


def test_a_slide_show_saved_as_pptx_is_read_as_a_presentation(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    (tmp_path / "plan.pptx").write_bytes(slideshow_as_pptx())
    _garden(tmp_path)
    kb = open_kb(tmp_path, enabled_formats=ALL_FORMATS)
    summary = kb.index()
    assert (summary.added, summary.failed) == (2, 0)
    text = kb.get_document("plan.pptx").content
    assert "# Slide 1: Irrigation plan" in text and "Drip lines along the raised beds" in text
    assert kb.search("drip lines raised beds").results[0].path == "plan.pptx"


def test_an_epub_chapter_missing_from_the_book_is_left_out_with_a_warning(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    """pymupdf stands in a page 'ERROR: cannot find chapter "<path>"' for it: never text."""
    (tmp_path / "garden.epub").write_bytes(broken_link_epub())
    _garden(tmp_path)
    kb = open_kb(tmp_path, enabled_formats=ALL_FORMATS)
    summary = kb.index()
    assert (summary.added, summary.failed) == (2, 0)
    warning = _warning_for("garden.epub", summary.warnings)
    assert "chapter 2" in warning and "missing from it; left out" in warning
    text = kb.get_document("garden.epub").content
    assert "Dry bean pods on the vine." in text
    assert "cannot find" not in text and "ERROR" not in text
    hits = kb.search("cannot find chapter lost two xhtml").results
    assert all("cannot find" not in hit.content for hit in hits)
