"""A plain-text file's headings: numbered, underlined and boxed titles, and the lines that
only look like them (decision 0056, sixth addendum)."""

from __future__ import annotations

from kbmcp_adapters.parsers.text_headings import text_headings

FAQ = """\
                Frequently Asked Questions about frobnicate

1. GENERAL

1.1. How do I pronounce frobnicate?

  Like it is written.

1.2. Why does frobnicate get signal 17 on an old kernel
     that has no threads?

  Your system has been broken into.

2.0\tBuilding Problems

2.1\tWhere are the header files?

  In the development package.
"""


def titles(text: str) -> list[tuple[int, int, int, str]]:
    return [(h.line + 1, h.lines, h.level, h.text) for h in text_headings(text.split("\n"))]


def test_a_numbered_faq_has_its_questions_and_sections_as_headings() -> None:
    assert titles(FAQ) == [
        (3, 1, 1, "GENERAL"),
        (5, 1, 2, "How do I pronounce frobnicate?"),
        (9, 2, 2, "Why does frobnicate get signal 17 on an old kernel that has no threads?"),
        (14, 1, 1, "Building Problems"),  # 2.0 is a first-level title
        (16, 1, 2, "Where are the header files?"),
    ]


def test_underlined_and_boxed_titles_are_headings() -> None:
    text = ("Release Notes\n=============\n\nIntro.\n\nFixes since v1.0\n----------------\n\n"
            " * a fix.\n\n" + "-" * 72 + "\n3. Valgrind aborts unexpectedly\n" + "-" * 72
            + "\n\nBody.\n")
    assert titles(text) == [(1, 2, 1, "Release Notes"), (6, 2, 2, "Fixes since v1.0"),
                            (12, 2, 2, "3. Valgrind aborts unexpectedly")]


def test_a_list_of_steps_and_sentences_stay_prose() -> None:
    steps = "Install:\n\n1. Download the tarball\n\n2. Unpack it\n\n3. Run make\n"
    assert titles(steps) == []  # one level of numbers: a list, not a numbering of sections
    prose = ("Intro.\n\n1. Usage\n\n1.1. the first thing is lower case\n\n"
             "1.2. This one ends like a sentence.\n\n1.3. Followed at once\nby more prose\n\n"
             "2.1 A short rule under a long line of text that goes on\n---\n")
    assert titles(prose) == []
    assert titles("A paragraph line\nThat ends here\n--------------\n") == []  # not alone


def test_a_generated_manual_s_link_marks_are_not_part_of_its_titles() -> None:
    text = "Python Policy\n=============\n\nAbstract\u00b6\n---------\n\nThe policy.\n"
    assert titles(text) == [(1, 2, 1, "Python Policy"), (4, 2, 2, "Abstract")]


NEWS = """\
GNU frobnicate NEWS                                    -*- outline -*-

* Noteworthy changes in release 9.1 (2022-04-15) [stable]

** Bug fixes

  frob --fast no longer loses the last byte.
  The fix since 8.32 covers pipes too.

* Noteworthy changes in release 9.0 (2021-09-24) [stable]

** New features

  frob reads zstd archives.

Version 9.0 was also the first to need a C99 compiler, and it ran on
every platform the 8.x series ran on.

- Fixed a crash on Solaris 2.7

* Noteworthy changes in release 8.32 (2020-03-05) [stable]

  Nothing else changed.
"""


def test_a_release_notes_file_has_each_release_as_a_heading() -> None:
    # a GNU-style NEWS file: a question about one release must land in that release's part
    assert titles(NEWS) == [
        (3, 1, 1, "Noteworthy changes in release 9.1 (2022-04-15) [stable]"),
        (10, 1, 1, "Noteworthy changes in release 9.0 (2021-09-24) [stable]"),
        (21, 1, 1, "Noteworthy changes in release 8.32 (2020-03-05) [stable]"),
    ]  # the paragraph naming 9.0 runs on; the Solaris 2.7 item has no like


def test_release_lines_count_only_when_several_are_worded_alike() -> None:
    other = "Changes in 2.40:\n\n* a\n\nChanges in 2.39:\n\n* b\n\nChanges in 2.38:\n\n* c\n"
    assert [t[3] for t in titles(other)] == ["Changes in 2.40", "Changes in 2.39",
                                            "Changes in 2.38"]
    two = "Changes in 2.40:\n\n* a\n\nChanges in 2.39:\n\n* b\n"
    assert titles(two) == []  # two are not a file's pattern
    mixed = "Version 1.2 ok\n\nTUI built in (GDB 6.1)\n\nFixed a panic on Solaris 2.7\n\nx\n"
    assert titles(mixed) == []  # three lines naming numbers, each worded its own way
