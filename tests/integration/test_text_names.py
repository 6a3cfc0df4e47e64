"""Text files without an extension (``README``, ``NEWS``, ``*-README``, ...) are read as
text when their bytes are text; any other file kb-mcp cannot read is named as unsupported,
never as a format to enable (issue 39, item 3; decision 0048)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbmcp_core.errors import PathRefused
from tests.conftest import OpenKb, write_files

FOLDER: dict[str, str | bytes] = {
    "README": "The lighthouse keeper winds the clockwork lamp every dusk.\n",
    "NEWS": "Version 3 adds a foghorn schedule.\n",
    "git/contrib/completion-README": "Source the completion script from your shell rc.\n",
    "doc/ChangeLog": "2024-05-01  Keeper\n\n\t* lamp.c: brighter wick.\n",
    "AUTHORS": b"\x7fELF\x02\x01\x01\x00\x00\x00 not text at all",
    "Makefile": "all:\n\tcc lamp.c\n",
    "photo.heic": b"\x89PNG\r\n\x1a\n\x00\x00",
    "manual.pdf": b"%PDF-1.4 not enabled here",
}


@pytest.fixture
def kb_root(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    write_files(root, FOLDER)
    return root


def test_extensionless_text_files_are_indexed_by_name_and_binary_ones_refused(
    kb_root: Path, open_kb: OpenKb
) -> None:
    kb = open_kb(kb_root, enabled_formats=("md", "txt"))
    summary = kb.index()
    assert summary.added == 4
    assert summary.failed_files == {"could not be read as its format": ["AUTHORS"]}
    assert "AUTHORS: not a text file (it holds NUL bytes), though its name is one kb-mcp " \
           "reads as text" in summary.warnings
    assert sorted(summary.skipped_files["not a supported format"]) == ["Makefile", "photo.heic"]
    assert summary.skipped_files["format not enabled"] == ["manual.pdf"]
    hit = kb.search("clockwork lamp keeper", limit=3).results[0]
    assert (hit.path, hit.start_line) == ("README", 1)
    assert hit.uri == "kb://doc/README"
    assert kb.get_document("git/contrib/completion-README").content == (
        "Source the completion script from your shell rc.\n")
    assert kb.search("brighter wick", limit=3).results[0].path == "doc/ChangeLog"


@pytest.mark.parametrize(("path", "reason"), [
    ("Makefile", "not a supported format: a file without an extension is read only when its "
                 "name is one of the text names (README, NEWS, AUTHORS, CHANGELOG, ...)"),
    ("photo.heic", "not a supported format (kb-mcp does not read .heic files)"),
    ("manual.pdf", "the pdf format is not enabled; add it to [parsers].enabled"),
    ("README", "the txt format is not enabled; add it to [parsers].enabled"),
])  # fmt: skip
def test_a_read_says_whether_a_format_can_be_enabled_at_all(
    kb_root: Path, open_kb: OpenKb, path: str, reason: str
) -> None:
    # The client is told only "no such document" (issue 37 item 6: existence never leaks);
    # the detail, for the server's log and `kb-mcp get -v`, says whether it can be enabled.
    kb = open_kb(kb_root, enabled_formats=("md",))
    with pytest.raises(PathRefused) as refused:
        kb.get_document(path)
    assert refused.value.reason == "no such document"
    assert refused.value.detail == reason


QUALIFIED: dict[str, str | bytes] = {
    "bzip2/README.Debian": "Debian builds the bzip2 binary with large file support.\n",
    "python/README.venv": "Install python3-venv to get ensurepip for virtual environments.\n",
    "gnutls/NEWS.Debian": "The priority string now disables the weak cipher suites.\n",
    "zlib/COPYING.LIB": "This library is free software under the lesser licence.\n",
    "readme/README.md": "# Heading\n\nMarkdown stays Markdown even with a text name.\n",
    "bzip2/changelog.Debian.gz": b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03 packed",
    "bzip2/README.Debian.swp": b"b0VIM 8.2\x00\x00\x00\x00 swap",
    "openjdk/JAVA_HOME": "/usr/lib/jvm/java-17-openjdk-amd64\n",
}


def test_a_text_name_with_a_qualifier_is_text_and_a_packed_one_is_not(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    # /usr/share/doc keeps a package's own notes as README.Debian, NEWS.Debian, README.venv:
    # a folder of them copied as-is lost exactly the notes its user came for.
    root = tmp_path / "kb"
    write_files(root, QUALIFIED)
    kb = open_kb(root, enabled_formats=("md", "txt"))
    summary = kb.index()
    assert summary.added == 5
    assert summary.failed_files == {}
    assert sorted(summary.skipped_files["not a supported format"]) == [
        "bzip2/README.Debian.swp", "bzip2/changelog.Debian.gz", "openjdk/JAVA_HOME"]
    venv = kb.search("ensurepip virtual environments", limit=3).results[0]
    assert (venv.path, venv.title) == ("python/README.venv", "README.venv")  # not "README"
    assert kb.search("large file support bzip2", limit=3).results[0].uri == \
        "kb://doc/bzip2/README.Debian"
    assert kb.get_document("gnutls/NEWS.Debian").content.startswith("The priority string")
    assert kb.search("Markdown stays Markdown", limit=3).results[0].heading_path == ("Heading",)


def test_a_hit_in_a_news_file_names_the_release_it_is_in(tmp_path: Path,
                                                         open_kb: OpenKb) -> None:
    # One NEWS file for every release (gnutls, coreutils, gettext ...): a hit on the TLS 1.3
    # item must say which release it belongs to, not sit in a chunk of several releases.
    releases = [("3.6.5", "Added support for zero round-trip mode in the handshake."),
                ("3.6.4", "Added the final version numbering of the TLS1.3 protocol."),
                ("3.6.3", "Introduced support for draft twenty-eight of the protocol.")]
    news = "".join(f"* Version {v} (released 2018-0{n}-01)\n\n** libfrob: {item}\n\n"
                   for n, (v, item) in enumerate(releases, start=1))
    root = tmp_path / "kb"
    write_files(root, {"gnutls/NEWS": news})
    kb = open_kb(root, enabled_formats=("md", "txt"))
    kb.index()
    hit = kb.search("final version numbering TLS1.3", limit=1).results[0]
    assert hit.heading_path == ("Version 3.6.4 (released 2018-02-01)",)
    assert (hit.start_line, hit.end_line) == (5, 7)
