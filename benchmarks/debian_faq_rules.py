"""The rules that cut questions out of Debian's FAQ files (the ``debian_faq`` eval set):
one function per file layout, each taking the file's lines and returning what to remove
from the corpus copy and where each question's answer is.

A rule reads lines only (no disk), so it can be tested on a few lines written by hand.
Line numbers here are 0-based indexes into the original file; ``debian_faq`` turns them
into 1-based lines of the corpus file as written. A file whose layout no longer fits its
rule raises ``LayoutChanged`` instead of producing a wrong answer range.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

#: A title that is a question (a numbered FAQ also has section titles that are not).
Predicate = Callable[[str], bool]
#: Never matches: a rule whose answers end only at the next question.
NOTHING = re.compile(r"(?!)")


class LayoutChanged(Exception):
    """The file does not have the layout its rule was written for (a new upstream
    version): the package is left out of the set rather than given wrong answers."""


@dataclass(frozen=True, slots=True)
class Item:
    """One question: its text and its answer's first and last line (0-based, inclusive,
    in the original file)."""

    query: str
    first: int
    last: int


@dataclass(slots=True)
class Cut:
    """What a rule found: the original lines the corpus copy leaves out (the questions,
    and any table of contents repeating them) and the questions with their answers."""

    remove: set[int] = field(default_factory=set)
    items: list[Item] = field(default_factory=list)


#: A plain-text layout's rule: the file's lines to what is cut.
Rule = Callable[[list[str]], Cut]


def collapse(parts: list[str]) -> str:
    """Lines joined into one, every run of white space one space."""
    return re.sub(r"\s+", " ", " ".join(parts)).strip()


def trim(lines: list[str], a: int, b: int, junk: re.Pattern[str] | None = None) -> tuple[int, int]:
    """Shrink [a, b] to its first and last line that has words (not blank, not `junk`);
    a > b when there is none."""

    def empty(i: int) -> bool:
        return not lines[i].strip() or bool(junk and junk.match(lines[i]))

    while a <= b and empty(a):
        a += 1
    while b >= a and empty(b):
        b -= 1
    return a, b


def paragraph_end(lines: list[str], i: int) -> int:
    """Last line of the paragraph starting at i (up to the next blank line)."""
    while i + 1 < len(lines) and lines[i + 1].strip():
        i += 1
    return i


def _indented(line: str) -> bool:
    return line.startswith((" ", "\t"))


def _quoted_after(lines: list[str], text: str, end: int) -> tuple[str, int]:
    """A question followed by an indented block (after a blank line when it ends with
    ':') quotes what it asks about (valgrind's error messages): the block joins the
    question. The question's text and last line, with or without it."""
    j = end + 1
    if j < len(lines) and not lines[j].strip() and text.endswith(":"):
        j += 1
    if j < len(lines) and _indented(lines[j]) and lines[j].strip():
        while j < len(lines) and (_indented(lines[j]) or (
                not lines[j].strip() and j + 1 < len(lines) and _indented(lines[j + 1]))):
            j += 1
        return collapse([text, *lines[end + 1:j]]), j - 1
    return text, end


def titled(lines: list[str], title: re.Pattern[str], is_question: Predicate,
           boundary: re.Pattern[str], start: int = 0, code_after: bool = False) -> Cut:
    """Numbered-title FAQs: a line matching `title` and the non-blank lines after it (up
    to a blank line) form a title, its number dropped; `is_question(text)` says which
    titles are questions. An answer runs to the next title or `boundary` line. With
    `code_after`, a line ending in '?' or an indented line also ends the title, and an
    indented block straight after it is part of the question (``_quoted_after``)."""
    heads = [i for i in range(start, len(lines)) if title.match(lines[i])]
    cut = Cut()
    for n, h in enumerate(heads):
        end = h
        while end + 1 < len(lines) and lines[end + 1].strip() and not (
                code_after and _indented(lines[end + 1])) and not (
                code_after and lines[end].rstrip().endswith("?")):
            end += 1
        text = re.sub(r"^\d+(\.\d+)*\.?\s+", "", collapse(lines[h:end + 1]))
        if not is_question(text):
            continue
        if code_after:
            text, end = _quoted_after(lines, text, end)
        nxt = heads[n + 1] if n + 1 < len(heads) else len(lines)
        stop = next((k for k in range(end + 1, nxt) if boundary.match(lines[k])), nxt)
        a, b = trim(lines, end + 1, stop - 1, boundary)
        cut.remove.update(range(h, end + 1))
        if a <= b:  # a title followed at once by sub-questions has no answer of its own
            cut.items.append(Item(text, a, b))
    return cut


def toc(lines: list[str], header: str, first_entry: str) -> set[int]:
    """The table of contents: from its header line to the line before `first_entry`'s
    second appearance (the body's own title)."""
    if header not in lines:
        raise LayoutChanged(f"no table of contents headed {header!r}")
    seen = [i for i, line in enumerate(lines) if line.strip() == first_entry]
    if len(seen) < 2:
        raise LayoutChanged(f"{first_entry!r} is not both in the contents and the body")
    return set(range(lines.index(header), seen[1]))


def procps(lines: list[str]) -> Cut:
    """Questions start in column 0; answers are indented with a tab."""
    qs = [i for i, line in enumerate(lines) if line.strip() and not line[0].isspace()]
    cut = Cut(set(qs))
    for n, q in enumerate(qs):
        a, b = trim(lines, q + 1, (qs[n + 1] if n + 1 < len(qs) else len(lines)) - 1)
        cut.items.append(Item(lines[q].strip(), a, b))
    return cut


def zlib(lines: list[str]) -> Cut:
    """`` 1. Is zlib Y2K-compliant?``: every numbered entry is a question (some state a
    problem instead: "compress() returns Z_BUF_ERROR.")."""
    return titled(lines, re.compile(r"^ ?\d+\. \S"), lambda t: True, NOTHING)


def valgrind(lines: list[str]) -> Cut:
    """``1.1. How do you pronounce ...``: every x.y entry is a question, often quoting the
    error it is about; sections (``1. Background``) sit between lines of dashes."""
    return titled(lines, re.compile(r"^\d+\.\d+\. \S"), lambda t: True,
                  re.compile(r"^(-{20,}|\d+\. \S)"), code_after=True)


def sed(lines: list[str]) -> Cut:
    """``4.10. How do I ...?``: numbered titles with a '?' are questions. Sections
    (``4. EXAMPLES``), lines of dashes and section 4's upper-case group labels
    (``   CHANGING STRINGS``) end an answer. The table of contents is removed."""
    drop = toc(lines, "CONTENTS", "1. GENERAL INFORMATION")
    cut = titled(lines, re.compile(r"^\d+(\.\d+)*\.\s+\S"), lambda t: "?" in t,
                 re.compile(r"^(-{20,}|   [A-Z][A-Z ,-]+[A-Z]( \([a-z ]+\))?$)"),
                 start=max(drop) + 1)
    cut.remove |= drop
    return cut


def lsof(lines: list[str]) -> Cut:
    """``3.10<TAB>Why don't lsof and netstat output match?``: numbered titles, continued
    on tab-indented lines; those with a '?' are questions. Lines of underscores end an
    answer. The table of contents is removed."""
    drop = toc(lines, "Table of Contents:", "1.0\tGeneral Concepts")
    cut = titled(lines, re.compile(r"^\d+(\.\d+)+\s+\S"), lambda t: "?" in t,
                 re.compile(r"^_{20,}"), start=max(drop) + 1)
    cut.remove |= drop
    return cut


def xz(lines: list[str]) -> Cut:
    """``Q:  ...`` paragraphs; the answer (``A:  ...``) runs to the next ``Q:``."""
    qs = [i for i, line in enumerate(lines) if line.startswith("Q:")]
    cut = Cut()
    for n, q in enumerate(qs):
        end = paragraph_end(lines, q)
        cut.remove.update(range(q, end + 1))
        a, b = trim(lines, end + 1, (qs[n + 1] if n + 1 < len(qs) else len(lines)) - 1)
        cut.items.append(Item(collapse(lines[q:end + 1])[2:].strip(), a, b))
    return cut


def base_files(lines: list[str]) -> Cut:
    """``Q. ...`` paragraphs, one or more, then an ``A. ...`` answer up to the next
    ``Q.``, a ``* Questions about ...`` group line or the author's signature (a name and
    an address in angle brackets)."""
    qs = [i for i, line in enumerate(lines) if line.startswith("Q. ")]
    stops = [i for i, line in enumerate(lines)
             if line.startswith(("Q. ", "* ")) or re.match(r"^\S.*<\S+@\S+>$", line)]
    cut = Cut()
    for q in qs:
        end = paragraph_end(lines, q)
        cut.remove.update(range(q, end + 1))
        ans = next((i for i in range(end + 1, len(lines)) if lines[i].startswith("A. ")), None)
        if ans is None:
            raise LayoutChanged(f"no 'A. ' answer after the question on line {q + 1}")
        stop = next((s for s in stops if s > ans), len(lines))
        a, b = trim(lines, ans, stop - 1)
        cut.items.append(Item(collapse(lines[q:end + 1])[2:].strip(), a, b))
    return cut


def ncurses(lines: list[str]) -> Cut:
    """Entries between lines of eight asterisks: the first paragraph is the problem
    asked about, the rest its answer."""
    seps = [i for i, line in enumerate(lines) if line.strip() == "********"]
    cut = Cut()
    for n, s in enumerate(seps):
        q = s + 1
        while q < len(lines) and not lines[q].strip():
            q += 1
        if q == len(lines):
            raise LayoutChanged(f"nothing after the asterisks on line {s + 1}")
        end = paragraph_end(lines, q)
        cut.remove.update(range(q, end + 1))
        a, b = trim(lines, end + 1, (seps[n + 1] if n + 1 < len(seps) else len(lines)) - 1)
        cut.items.append(Item(collapse(lines[q:end + 1]), a, b))
    return cut


def man_db(lines: list[str]) -> Cut:
    """Setext titles (a line underlined with '='); one with a '?' is a question, removed
    with its underline; its answer runs to the next title or the end."""
    heads = [i for i in range(len(lines) - 1)
             if lines[i].strip() and re.fullmatch(r"=+", lines[i + 1].strip() or "x")]
    cut = Cut()
    for n, h in enumerate(heads):
        if "?" not in lines[h]:
            continue
        cut.remove.update((h, h + 1))
        a, b = trim(lines, h + 2, (heads[n + 1] if n + 1 < len(heads) else len(lines)) - 1)
        cut.items.append(Item(lines[h].strip(), a, b))
    return cut


#: libxslt's FAQ list: each ``<li>`` opens with ``<em>question</em>``, sometimes followed
#: by ``<p><em>...</em></p>`` paragraphs quoting the command asked about (also question).
_XSLT_QUESTION = re.compile(r"(<li>\s*)<em>(.*?)</em>((?:\s*<p><em>.*?</em></p>)*)", re.S)


def libxslt(page: str) -> tuple[str, list[Item]]:
    """The HTML page with its questions cut out, and each question with its answer's
    first and last line (0-based) in the Markdown kb-mcp serves for the cut page."""
    from kbmcp_adapters.parsers.htmlpage import decode_html, html_to_markdown

    queries = [collapse([re.sub(r"<[^>]+>", " ", m.group(2) + " " + m.group(3))])
               for m in _XSLT_QUESTION.finditer(page)]
    cut = _XSLT_QUESTION.sub(lambda m: m.group(1), page)
    served = html_to_markdown(decode_html(cut.encode("iso-8859-1"))[0])[0].splitlines()
    faq_list = re.search(r"<ol>(.*?)</ol>", cut, re.S)
    if faq_list is None:
        raise LayoutChanged("no <ol> list of questions")
    answers = re.findall(r"<li>(.*?)</li>", faq_list.group(1), re.S)
    if len(answers) != len(queries):
        raise LayoutChanged(f"{len(queries)} questions but {len(answers)} list items")
    items: list[Item] = []
    pos = 0
    for query, answer in zip(queries, answers, strict=True):
        part = [line for line in html_to_markdown(f"<html><body>{answer}</body></html>")[0]
                .splitlines() if line.strip()]
        try:
            first = served.index(part[0], pos)
            last = served.index(part[-1], first)
        except (IndexError, ValueError):
            raise LayoutChanged(f"the answer to {query!r} is not in the served text") from None
        pos = last + 1
        items.append(Item(query, first, last))
    return cut, items
