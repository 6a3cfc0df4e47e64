"""Build a natural-question eval set from the FAQ files Debian ships in ``/usr/share/doc``
(issue 25): each query is a question cut out of a package's own FAQ, written by its
authors; the corpus holds the same files with those questions removed, so the answer has
to be found by meaning.

``python -m benchmarks.debian_faq OUT_DIR [--doc-root /usr/share/doc]`` writes, in
OUT_DIR: ``corpus/<package>/<file>``, ``golden.yml`` (the questions, each with its
answer's lines), ``no-answer.yml`` (questions the corpus has no answer to), ``both.yml``
(the two together), ``LICENSES.txt``, ``README.md`` (what was found, per package) and
``kb.toml`` (the corpus as a knowledge base indexed into ``OUT_DIR/idx``). One rule per
file layout (``benchmarks/debian_faq_rules.py``), nothing edited by hand: the same
packages at the same versions give the same bytes. A package that is not installed, or
whose FAQ no longer has the layout of its rule, is left out with a line on stderr.
Nothing from ``/usr/share/doc`` is kept in the repository.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from benchmarks import debian_faq_rules as rules
from benchmarks.debian_faq_texts import NO_ANSWER, NO_ANSWER_HEAD, readme

DOC_ROOT = Path("/usr/share/doc")
#: Queries taken from one file at most, an even stride over its questions (lsof's FAQ
#: alone has about 300, sed's about 40); every question is removed from the corpus.
CAP = 24
#: The golden file's first line: a folder whose golden.yml starts with it is a set this
#: module wrote, and its corpus may be replaced.
FIRST_LINE = ("# Natural questions from Debian's /usr/share/doc FAQ files (held-out set): "
              "each")


@dataclass(frozen=True, slots=True)
class Source:
    """One package's FAQ: where it is below the doc root, its name in the corpus, the
    rule that cuts it (None: libxslt's HTML page), and the rule in words (README)."""

    package: str
    file: str
    name: str
    rule: rules.Rule | None
    how: str


SOURCES = (
    Source("procps", "FAQ.gz", "FAQ.txt", rules.procps,
           "a line in column 0 (answers are tab-indented)"),
    Source("zlib1g-dev", "FAQ.gz", "FAQ.txt", rules.zlib,
           "every numbered entry `N. ...` with its continuation lines"),
    Source("valgrind", "FAQ.txt.gz", "FAQ.txt", rules.valgrind,
           "every `x.y.` entry, to its first line ending in `?` or a blank line, plus an "
           "error quoted right after it"),
    Source("xz-utils", "faq.txt.gz", "faq.txt", rules.xz,
           "`Q:` paragraphs (the answer is the `A:` text)"),
    Source("sed", "sedfaq.txt.gz", "sedfaq.txt", rules.sed,
           "numbered titles with a `?`; table of contents removed"),
    Source("lsof", "00FAQ.gz", "00FAQ.txt", rules.lsof,
           "numbered titles with a `?`; table of contents removed"),
    Source("base-files", "FAQ", "FAQ.txt", rules.base_files,
           "`Q.` paragraphs; several may share one `A.`"),
    Source("ncurses-base", "FAQ", "FAQ.txt", rules.ncurses,
           "the first paragraph after each `********` line"),
    Source("man-db", "FAQ", "FAQ.txt", rules.man_db, "`=`-underlined titles with a `?`"),
    Source("libxslt1-dev", "html/FAQ.html", "FAQ.html", None,
           "the `<em>` opening each `<li>` of the FAQ list, and `<p><em>` quotes after it"),
)


@dataclass(frozen=True, slots=True)
class Built:
    """One package's part of the set: the corpus file's bytes and its questions, each
    with its answer's first and last line (1-based) in the corpus file as served."""

    source: Source
    data: bytes
    found: list[tuple[str, int, int]]

    @property
    def path(self) -> str:
        return f"{self.source.package}/{self.source.name}"

    def taken(self) -> list[tuple[str, int, int]]:
        """The questions that become queries: all, or an even stride down to ``CAP``."""
        return self.found[::max(1, math.ceil(len(self.found) / CAP))]


class SetError(Exception):
    """The set cannot be built: nothing was found, or OUT_DIR holds something else."""


def read_text(path: Path) -> str:
    """A FAQ file's text, gunzipped when its name ends in ``.gz``."""
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")


def cut_text(source: Source, rule: rules.Rule, text: str) -> Built:
    """A plain-text FAQ through its rule: the questions' lines dropped from the copy."""
    lines = text.splitlines()
    cut = rule(lines)
    kept = [i for i in range(len(lines)) if i not in cut.remove]
    line_of = {old: n for n, old in enumerate(kept, 1)}
    for item in cut.items:
        if any(i not in line_of for i in range(item.first, item.last + 1)):
            raise rules.LayoutChanged(f"the answer to {item.query!r} would be removed")
    body = "\n".join(lines[i] for i in kept) + "\n"
    return Built(source, body.encode("utf-8"),
                 [(it.query, line_of[it.first], line_of[it.last]) for it in cut.items])


def build_one(source: Source, doc_root: Path) -> Built:
    path = doc_root / source.package / source.file
    if source.rule is not None:
        return cut_text(source, source.rule, read_text(path))
    page, items = rules.libxslt(path.read_bytes().decode("iso-8859-1"))
    return Built(source, page.encode("iso-8859-1"),
                 [(it.query, it.first + 1, it.last + 1) for it in items])


def build_all(doc_root: Path, log: TextIO) -> list[Built]:
    """Every package's part, in ``SOURCES`` order; a missing or changed one is left out
    with a line on `log`."""
    out: list[Built] = []
    for source in SOURCES:
        path = doc_root / source.package / source.file
        if not path.is_file():
            print(f"skipped {source.package}: {path} not found (package not installed?)",
                  file=log)
            continue
        try:
            out.append(build_one(source, doc_root))
        except (rules.LayoutChanged, UnicodeDecodeError, OSError, EOFError) as exc:
            print(f"skipped {source.package}: {path} does not fit its rule: {exc}", file=log)
    return out


def yaml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # a JSON string is a valid YAML scalar


def golden_lines(built: list[Built]) -> list[str]:
    rows = [(b, q, first, last) for b in built for q, first, last in b.taken()]
    per = {b.source.package: len(b.taken()) for b in built if b.taken()}
    found = {b.source.package: len(b.found) for b in built}
    out = [
        FIRST_LINE,
        "# query is a question cut out of a package's own FAQ; the corpus holds the same",
        "# files with those question lines (and tables of contents repeating them) removed.",
        "# Derived mechanically by `python -m benchmarks.debian_faq`; do not edit by hand.",
        "# Corpus root: corpus/   `lines` is the answer's body (1-based, inclusive).",
        f"# {len(rows)} queries: " + ", ".join(f"{k} {v}" for k, v in per.items())
        + " (questions found per file: " + ", ".join(f"{k} {v}" for k, v in found.items())
        + f"; at most {CAP} taken per file, an even stride)",
        "queries:",
    ]
    for n, (b, q, first, last) in enumerate(rows):
        out += [f"  - id: usd-{n:03d}", f"    kind: {b.source.package}",
                f"    query: {yaml_str(q)}", "    expected:",
                f"      - path: {yaml_str(b.path)}", f"        lines: [{first}, {last}]"]
    return out


def no_answer_entries() -> list[str]:
    out: list[str] = []
    for n, q in enumerate(NO_ANSWER):
        out += [f"  - id: none-usd-{n:02d}", "    kind: no_answer", f"    query: {yaml_str(q)}",
                "    expected: []"]
    return out


def check_out_dir(out: Path) -> None:
    """Refuse an OUT_DIR that is a file, or whose ``corpus/`` this module did not write."""
    if out.exists() and not out.is_dir():
        raise SetError(f"{out} is not a directory")
    golden = out / "golden.yml"
    if (out / "corpus").exists() and not (
            golden.is_file() and golden.read_text(encoding="utf-8").startswith(FIRST_LINE)):
        raise SetError(f"{out / 'corpus'} exists and {golden} is not a set this module "
                       "wrote: choose an empty or new OUT_DIR")


def write_set(out: Path, doc_root: Path, log: TextIO) -> list[Built]:
    """Build the set from `doc_root` into `out` (its ``corpus/`` replaced)."""
    check_out_dir(out)
    built = build_all(doc_root, log)
    if not any(b.found for b in built):
        raise SetError(f"no FAQ question found under {doc_root}")
    if (out / "corpus").exists():
        shutil.rmtree(out / "corpus")
    for b in built:
        dest = out / "corpus" / b.path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(b.data)
    golden = golden_lines(built)
    write(out / "golden.yml", golden)
    write(out / "no-answer.yml", NO_ANSWER_HEAD + no_answer_entries())
    write(out / "both.yml", golden + no_answer_entries())
    write(out / "LICENSES.txt", [
        "# Licences: each corpus file's package copyright file, as Debian ships it", "",
        *(f"corpus/{b.source.package}/: {doc_root / b.source.package / 'copyright'}"
          for b in built)])
    root = out.resolve()
    write(out / "kb.toml", [f"kb_path = {json.dumps(str(root / 'corpus'))}",
                            f"index_dir = {json.dumps(str(root / 'idx'))}", "",
                            "[parsers]", 'enabled = ["md", "txt", "html"]'])
    rows = [(b.source.package, b.source.file, b.source.how, len(b.taken()), len(b.found),
             debian_version(doc_root / b.source.package)) for b in built]
    write(out / "README.md", readme(root, doc_root, rows, CAP))
    return built


def write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def debian_version(package_doc: Path) -> str:
    """The package's version from the first line of its Debian changelog ("?" if none):
    the set's questions are those of that version's FAQ."""
    for name in ("changelog.Debian.gz", "changelog.gz"):
        try:
            with gzip.open(package_doc / name, "rt", encoding="utf-8") as f:
                head = f.readline()
        except (OSError, UnicodeDecodeError, EOFError):
            continue
        match = re.match(r"^\S+ \(([^)\s]+)\)", head)
        if match:
            return match[1]
    return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.debian_faq",
        description="Build the Debian FAQ natural-question eval set into OUT_DIR.")
    parser.add_argument("out_dir", metavar="OUT_DIR", type=Path,
                        help="where the corpus, golden files, README and kb.toml go")
    parser.add_argument("--doc-root", type=Path, default=DOC_ROOT,
                        help=f"the folder of the packages' documentation (default {DOC_ROOT})")
    args = parser.parse_args(argv)
    try:
        built = write_set(args.out_dir, args.doc_root, sys.stderr)
    except (SetError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    taken = sum(len(b.taken()) for b in built)
    print(f"{taken} queries from {len(built)} packages, {len(NO_ANSWER)} without an answer, "
          f"in {args.out_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
