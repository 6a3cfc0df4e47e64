"""The Debian FAQ eval set generator (``benchmarks/debian_faq.py``) on a doc root of tiny
FAQ files written here: each question leaves the corpus copy, each golden ``lines`` names
the answer's first and last line in the corpus file as written, kb-mcp reads the golden
file and the config it writes, and a package that is missing or no longer fits its rule is
left out with a line on stderr."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import yaml

from benchmarks import debian_faq
from benchmarks.debian_faq_texts import NO_ANSWER
from kbmcp_adapters.app.bootstrap import settings_for
from kbmcp_adapters.evaluation.golden import load_golden

XZ = """XZ Utils FAQ
============

Q:  What do the letters XZ mean?

A:  Nothing. They are just two letters.
    The name was chosen for being short.

Q:  Can I compress with xz and decompress
    with gzip?

A:  No. The formats differ.

    Use gzip for gzip files.

"""

PROCPS = """Why does ps -aux complain about a bogus dash?
\tBecause BSD options take no dash.
\tUse ps aux instead.

Why is top slow on this machine?

\tIt reads every file in /proc.
"""

ZLIB = """
                Frequently Asked Questions about zlib

 1. Is zlib Y2K-compliant?

    Yes. zlib does not handle dates.

 2. Where can I get a Windows DLL
    built with the right compiler?

    It is in the win32 folder.
    See the README there.
"""

# (package, question as a query, answer's first line, answer's last line)
EXPECTED = [
    ("procps", "Why does ps -aux complain about a bogus dash?",
     "\tBecause BSD options take no dash.", "\tUse ps aux instead."),
    ("procps", "Why is top slow on this machine?",
     "\tIt reads every file in /proc.", "\tIt reads every file in /proc."),
    ("zlib1g-dev", "Is zlib Y2K-compliant?",
     "    Yes. zlib does not handle dates.", "    Yes. zlib does not handle dates."),
    ("zlib1g-dev", "Where can I get a Windows DLL built with the right compiler?",
     "    It is in the win32 folder.", "    See the README there."),
    ("xz-utils", "What do the letters XZ mean?",
     "A:  Nothing. They are just two letters.", "    The name was chosen for being short."),
    ("xz-utils", "Can I compress with xz and decompress with gzip?",
     "A:  No. The formats differ.", "    Use gzip for gzip files."),
]


def gz(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode("utf-8")))


@pytest.fixture
def doc_root(tmp_path: Path) -> Path:
    root = tmp_path / "doc"
    gz(root / "procps" / "FAQ.gz", PROCPS)
    gz(root / "zlib1g-dev" / "FAQ.gz", ZLIB)
    gz(root / "xz-utils" / "faq.txt.gz", XZ)
    # sed's rule needs its table of contents: this one has none, so sed is left out
    gz(root / "sed" / "sedfaq.txt.gz", "1. GENERAL INFORMATION\n\n1.1. What is sed?\n\nA tool.\n")
    return root


def build(doc_root: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert debian_faq.main([str(out), "--doc-root", str(doc_root)]) == 0
    return capsys.readouterr().err


def test_questions_leave_the_corpus_and_lines_point_at_each_answer(
        doc_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "set"
    build(doc_root, out, capsys)
    golden = yaml.safe_load((out / "golden.yml").read_text(encoding="utf-8"))["queries"]
    got = []
    for q in golden:
        (expected,) = q["expected"]
        first, last = expected["lines"]
        lines = (out / "corpus" / expected["path"]).read_text(encoding="utf-8").splitlines()
        got.append((q["kind"], q["query"], lines[first - 1], lines[last - 1]))
    assert got == EXPECTED
    corpus = {p.relative_to(out / "corpus").as_posix(): p.read_text(encoding="utf-8")
              for p in (out / "corpus").rglob("*") if p.is_file()}
    assert sorted(corpus) == ["procps/FAQ.txt", "xz-utils/faq.txt", "zlib1g-dev/FAQ.txt"]
    for question in ("bogus dash", "top slow", "Y2K", "Windows DLL", "right compiler",
                     "letters XZ", "Can I compress", "with gzip?"):
        assert not any(question in text for text in corpus.values()), question
    # the rest of each file is kept as it was
    assert corpus["xz-utils/faq.txt"] == (
        "XZ Utils FAQ\n============\n\n\nA:  Nothing. They are just two letters.\n"
        "    The name was chosen for being short.\n\n\nA:  No. The formats differ.\n\n"
        "    Use gzip for gzip files.\n\n")


def test_kb_mcp_reads_the_set_it_writes(
        doc_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "set"
    build(doc_root, out, capsys)
    answerable = load_golden(out / "golden.yml")
    both = load_golden(out / "both.yml")
    assert len(answerable) == len(EXPECTED)
    assert len(both) == len(EXPECTED) + len(NO_ANSWER)
    assert [q.expected for q in load_golden(out / "no-answer.yml")] == [()] * len(NO_ANSWER)
    settings = settings_for(config=out / "kb.toml")
    assert settings.kb_path == (out / "corpus").resolve()
    assert settings.index_dir == (out / "idx").resolve()
    assert set(settings.enabled_formats) == {"md", "txt", "html"}
    assert "corpus/xz-utils/" in (out / "LICENSES.txt").read_text(encoding="utf-8")
    assert "| xz-utils | ? | faq.txt.gz |" in (out / "README.md").read_text(encoding="utf-8")


def test_a_missing_or_changed_package_is_left_out_with_a_line_on_stderr(
        doc_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = build(doc_root, tmp_path / "set", capsys)
    assert "skipped lsof: " in err and "not found" in err
    assert "skipped libxslt1-dev: " in err
    assert "skipped sed: " in err and "does not fit its rule" in err
    assert "skipped procps" not in err
    golden = (tmp_path / "set" / "golden.yml").read_text(encoding="utf-8")
    assert "kind: sed" not in golden and "kind: procps" in golden


def test_a_folder_it_did_not_write_is_refused_and_kept(
        doc_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "notes" / "corpus" / "mine.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("keep me\n", encoding="utf-8")
    assert debian_faq.main([str(tmp_path / "notes"), "--doc-root", str(doc_root)]) == 2
    assert "choose an empty or new OUT_DIR" in capsys.readouterr().err
    assert mine.read_text(encoding="utf-8") == "keep me\n"
    # a set it wrote is rebuilt in place, its old corpus replaced
    build(doc_root, tmp_path / "set", capsys)
    stale = tmp_path / "set" / "corpus" / "gone" / "FAQ.txt"
    stale.parent.mkdir()
    stale.write_text("from an older build\n", encoding="utf-8")
    build(doc_root, tmp_path / "set", capsys)
    assert not stale.exists()
    assert (tmp_path / "set" / "corpus" / "xz-utils" / "faq.txt").is_file()


def test_no_faq_at_all_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert debian_faq.main([str(tmp_path / "set"), "--doc-root", str(tmp_path / "empty")]) == 2
    assert "no FAQ question found" in capsys.readouterr().err
    assert not (tmp_path / "set" / "golden.yml").exists()


def test_a_long_faq_gives_at_most_cap_queries_spread_over_it() -> None:
    source = debian_faq.SOURCES[0]
    found = [(f"q{i}", i, i) for i in range(50)]
    taken = debian_faq.Built(source, b"", found).taken()
    assert len(taken) <= debian_faq.CAP
    assert taken == found[::3]


SED = """THE SED FAQ

CONTENTS
1. GENERAL INFORMATION
   1.1. What is sed?

1. GENERAL INFORMATION

1.1. What is sed?

     A stream editor.
     It edits text as it flows.

------------------------------

1.2. Introduction

     Not a question: it stays.
"""


def test_a_table_of_contents_repeating_the_questions_leaves_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gz(tmp_path / "doc" / "sed" / "sedfaq.txt.gz", SED)
    build(tmp_path / "doc", tmp_path / "set", capsys)
    (q,) = yaml.safe_load((tmp_path / "set" / "golden.yml").read_text(encoding="utf-8"))[
        "queries"]
    assert q["query"] == "What is sed?"
    text = (tmp_path / "set" / "corpus" / "sed" / "sedfaq.txt").read_text(encoding="utf-8")
    assert text == ("THE SED FAQ\n\n1. GENERAL INFORMATION\n\n\n     A stream editor.\n"
                    "     It edits text as it flows.\n\n------------------------------\n\n"
                    "1.2. Introduction\n\n     Not a question: it stays.\n")
    assert q["expected"] == [{"path": "sed/sedfaq.txt", "lines": [6, 7]}]
