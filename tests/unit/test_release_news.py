"""The ``news`` eval set's folder builder (``benchmarks/release_news.py``; decision 0056,
third addendum): one file per release of each package's ``NEWS``."""

from __future__ import annotations

import gzip
from pathlib import Path

from benchmarks.release_news import SOURCES, build, releases


def test_a_news_file_is_cut_into_one_section_per_release() -> None:
    gdb = next(s for s in SOURCES if s.package == "gdb")
    text = ("\t\tWhat has changed in GDB?\n\n*** Changes in GDB 13\n\n* MI 1 is deprecated.\n\n"
            "*** Changes in GDB 12\n\n* Python 2 is deprecated.\n")
    cut = releases(text, gdb.release)
    assert list(cut) == ["13", "12"]
    assert cut["13"] == "*** Changes in GDB 13\n\n* MI 1 is deprecated.\n"
    assert cut["12"].startswith("*** Changes in GDB 12\n")


def test_build_writes_the_folder_the_golden_file_names(tmp_path: Path) -> None:
    root = tmp_path / "doc"
    (root / "strace").mkdir(parents=True)
    (root / "strace" / "NEWS.gz").write_bytes(gzip.compress(
        b"Noteworthy changes in release 6.1 (2022-12-12)\n====\n\n* Improvements\n"
        b"Noteworthy changes in release 6.0 (2022-10-29)\n====\n"))
    (root / "strace" / "copyright").write_text("License: LGPL-2.1+\n")
    out = tmp_path / "news"
    assert build(out, root) == 2  # gdb and gnupg are not there: left out
    assert sorted(p.name for p in (out / "corpus" / "strace").iterdir()) == ["6.0.txt",
                                                                           "6.1.txt"]
    assert (out / "corpus" / "strace" / "6.1.txt").read_text().splitlines()[3] == (
        "* Improvements")
    assert "LGPL-2.1+" in (out / "LICENSES.txt").read_text()
    assert f'kb_path = "{out / "corpus"}"' in (out / "kb.toml").read_text()
