"""The headings of a plain-text file: numbered titles, underlined titles and titles boxed
between rules (decision 0056, sixth addendum).

Plain text has no heading syntax, but the documents people keep as ``.txt`` mark their
sections the same few ways: an FAQ's ``4.10. How do I ...?`` and ``3.2<TAB>Compilation
Problems``, a release note's title underlined with ``===`` or ``---``, a manual's section
name between two lines of dashes. A heading is a heading whatever the folder: the text
parser cuts its chunks at them and carries them as each chunk's heading trail, as the
Markdown parser does with ``#``.

What is not a heading stays prose, so the rules ask for what a list item or a sentence
lacks: a title line stands alone (a blank line, a rule or the file's start above it; a
blank line, an underline or the end below it, after at most ``MAX_CONTINUATION`` indented
lines that continue it), is short, starts with no lower-case letter and ends with no
sentence stop. Numbered titles count only in a file that numbers at least ``MIN_NUMBERED``
of them and at least one with two levels (``1.2``): a README's ``1. Install`` ``2. Run``
steps have one level and stay a list.

A release notes file (``NEWS``) opens each release with a line that names it:
``* Noteworthy changes in release 9.1 (2022-04-15) [stable]``, ``* Version 3.6.5
(released 2018-12-01)``, ``Changes in 2.40:``, ``E2fsprogs 1.47.0 (February 5, 2023)``.
Such a line is a first-level title when it starts the line (an outline's first-level
``* `` allowed), names a dotted release number, stands alone with a blank line, a rule or
a list below it, and at least ``MIN_NUMBERED`` such lines of the file word it alike up to
the number (``Version``, ``Changes in``): a paragraph that mentions a version runs on into
its next line, and the odd list item that names one (``Fixed a panic on Solaris 2.7``) has
no like.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kbmcp_adapters.parsers.sections import Heading

__all__ = ["rule_above", "text_headings"]

#: The longest line that may be a title (characters, white space collapsed).
MAX_TITLE = 80
#: The fewest numbered titles that make a file's numbering its headings.
MIN_NUMBERED = 3
#: The most indented lines that may continue a numbered title (lsof's long questions).
MAX_CONTINUATION = 2

_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)\.?[ \t]+(\S.*?)\s*$")
#: A line that may name a release: at the line's start (after an outline's ``* ``), a
#: word, and a release number somewhere in it (``9.1``, ``v1.47.0``, ``2.2.40``).
_RELEASE_LINE = re.compile(r"^(?:\*[ \t]+)?([A-Z0-9][^\n]*)$")
_RELEASE_NUMBER = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?![\w.]*\w)")
#: What may follow a release line on the next line: a list item (``*``, ``-``, ``o``,
#: ``+``, a bullet) or an indented line.
_LIST_BELOW = re.compile(r"^(?:[ \t]+\S|[*\-+•o][ \t])")
_RULE = re.compile(r"^\s*([=\-~*#_])\1{2,}\s*$")
_UNDERLINE_LEVEL = {"=": 1, "-": 2, "~": 3}
_STOP = (".", ",", ";", ":")
_SPACE = re.compile(r"\s+")
#: What a documentation generator leaves after a title in its text output: a link mark
#: (Sphinx's ``¶``), not part of the title's words.
_MARKS = "¶"


def _blank(lines: Sequence[str], i: int) -> bool:
    return i >= len(lines) or not lines[i].strip()


def _rule(lines: Sequence[str], i: int) -> bool:
    return 0 <= i < len(lines) and bool(_RULE.match(lines[i]))


def rule_above(lines: Sequence[str], i: int) -> bool:
    """Line ``i`` has a rule right above it (the top of a boxed title's box, or a separator
    over a title): a line of no words, which belongs to neither section beside it."""
    return _rule(lines, i - 1)


def _title_text(text: str) -> str | None:
    """``text`` collapsed when it reads as a title: short, not opening in lower case, not
    ending like a sentence or a lead-in; else None. A trailing link mark is left out."""
    text = _SPACE.sub(" ", text).strip().rstrip(_MARKS).rstrip()
    if not text or len(text) > MAX_TITLE or text[0].islower() or text.endswith(_STOP):
        return None
    return text


def _stands_alone(lines: Sequence[str], i: int) -> bool:
    """Line ``i`` opens a block: the file's start, a blank line or a rule above it."""
    return i == 0 or _blank(lines, i - 1) or _rule(lines, i - 1)


def _underlined(lines: Sequence[str], i: int) -> Heading | None:
    """Line ``i`` underlined by a rule about its length, or boxed between two rules."""
    if _blank(lines, i) or _rule(lines, i) or not _rule(lines, i + 1):
        return None
    text = _title_text(lines[i])
    if text is None or not _stands_alone(lines, i):
        return None
    mark = lines[i + 1].strip()
    boxed = _rule(lines, i - 1)
    if not boxed and not len(text) / 2 <= len(mark) <= len(text) * 3 / 2 + 2:
        return None
    return Heading(i, 2, _UNDERLINE_LEVEL.get(mark[0], 2), text)


def _numbered(lines: Sequence[str], i: int) -> tuple[Heading, bool] | None:
    """A numbered title at line ``i`` (with its indented continuation lines), and whether
    its number has two levels or more; its level is the number's depth, trailing zeros
    left out (``1.0`` is a first-level title, as ``1.`` is)."""
    match = _NUMBERED.match(lines[i])
    if match is None or not _stands_alone(lines, i):
        return None
    end = i
    while (end + 1 < len(lines) and end - i < MAX_CONTINUATION and not _blank(lines, end + 1)
           and lines[end + 1][:1] in (" ", "\t") and not _rule(lines, end + 1)):
        end += 1
    if not (_blank(lines, end + 1) or _rule(lines, end + 1)):
        return None
    text = _title_text(" ".join([match.group(2), *lines[i + 1:end + 1]]))
    if text is None:
        return None
    parts = match.group(1).split(".")
    while len(parts) > 1 and parts[-1] == "0":
        parts.pop()
    return Heading(i, end - i + 1, len(parts), text), "." in match.group(1)


def _release(lines: Sequence[str], i: int) -> tuple[Heading, str] | None:
    """A line at ``i`` that may open a release's notes (see the module's docstring), and
    its wording up to the release number (lower case), which its like must share."""
    match = _RELEASE_LINE.match(lines[i])
    if match is None or not _stands_alone(lines, i) or _NUMBERED.match(lines[i]):
        return None  # a numbered title's shape is the numbered rule's to judge
    title = match.group(1)
    number = _RELEASE_NUMBER.search(title)
    if number is None:
        return None
    if not (_blank(lines, i + 1) or _rule(lines, i + 1) or _LIST_BELOW.match(lines[i + 1])):
        return None
    text = _title_text(title.rstrip().removesuffix(":"))
    if text is None:
        return None
    return Heading(i, 1, 1, text), _SPACE.sub(" ", title[:number.start()]).lower()


def _alike(candidates: Sequence[tuple[Heading, str]]) -> list[Heading]:
    """The release lines whose wording up to the number at least ``MIN_NUMBERED`` share."""
    counts: dict[str, int] = {}
    for _, wording in candidates:
        counts[wording] = counts.get(wording, 0) + 1
    return [head for head, wording in candidates if counts[wording] >= MIN_NUMBERED]


def text_headings(lines: Sequence[str]) -> list[Heading]:
    """The headings of a plain-text file's ``lines`` (0-based), in order."""
    found: list[Heading] = []
    numbered: list[Heading] = []
    releases: list[tuple[Heading, str]] = []
    two_levels = False
    i = 0
    while i < len(lines):
        head = _underlined(lines, i)
        if head is not None:
            found.append(head)
            i += 2
            continue
        counted = _numbered(lines, i)
        if counted is not None:
            numbered.append(counted[0])
            two_levels = two_levels or counted[1]
            i += counted[0].lines
            continue
        release = _release(lines, i)
        if release is not None:
            releases.append(release)
        i += 1
    if len(numbered) >= MIN_NUMBERED and two_levels:
        found = [*found, *numbered]
    return sorted([*found, *_alike(releases)], key=lambda h: h.line)
