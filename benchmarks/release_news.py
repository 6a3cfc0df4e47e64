"""Build a release-notes folder from the ``NEWS`` files Debian ships compressed in
``/usr/share/doc`` (issue 42, decision 0056): one file per release, as git's
``RelNotes`` are, for the ``news`` question set of ``benchmarks/eval-sets/news``.

``python -m benchmarks.release_news OUT_DIR [--doc-root /usr/share/doc]`` writes
``OUT_DIR/corpus/<package>/<release>.txt`` (each release's section of the package's
``NEWS``, its heading line first), ``OUT_DIR/LICENSES.txt`` (each package's
``copyright``) and ``OUT_DIR/kb.toml`` (the corpus indexed into ``OUT_DIR/idx``). The
golden file's paths and lines are those files': the same packages at the same versions
give the same bytes. A package that is missing is left out with a line on stderr.
Nothing from ``/usr/share/doc`` is kept in the repository.
"""

from __future__ import annotations

import argparse
import gzip
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

DOC_ROOT = Path("/usr/share/doc")


@dataclass(frozen=True, slots=True)
class Source:
    """One package's ``NEWS``: where it is below the doc root, and the line that opens a
    release (its first group names the release, the file's name)."""

    package: str
    file: str
    release: re.Pattern[str]


SOURCES = (
    Source("gdb", "NEWS.gz", re.compile(r"^\*\*\* Changes (?:in|since) GDB ([\w.\-]+)")),
    Source("gnupg", "NEWS.gz", re.compile(r"^Noteworthy changes in version ([\w.\-]+)")),
    Source("strace", "NEWS.gz", re.compile(r"^Noteworthy changes in release ([\w.\-]+)")),
)


def releases(text: str, opener: re.Pattern[str]) -> dict[str, str]:
    """Each release's section of ``text`` (from its opening line to the next one's),
    by release name; the lines before the first release are left out, and a name seen
    twice keeps its first section."""
    out: dict[str, str] = {}
    name: str | None = None
    lines: list[str] = []
    for line in [*text.splitlines(), None]:
        found = opener.match(line) if line is not None else None
        if line is None or found:
            if name is not None and name not in out:
                out[name] = "\n".join(lines).rstrip() + "\n"
            if found:
                name, lines = found.group(1).rstrip("."), []
        if line is not None and name is not None:
            lines.append(line)
    return out


def build(out: Path, doc_root: Path = DOC_ROOT) -> int:
    """The corpus, licences and ``kb.toml`` in ``out``; how many files were written."""
    corpus = out / "corpus"
    if corpus.exists():
        shutil.rmtree(corpus)
    written = 0
    licences: list[str] = []
    for src in SOURCES:
        news = doc_root / src.package / src.file
        if not news.is_file():
            print(f"{src.package}: {news} not found, left out", file=sys.stderr)
            continue
        text = gzip.decompress(news.read_bytes()).decode("utf-8", errors="replace")
        folder = corpus / src.package
        folder.mkdir(parents=True)
        for name, section in releases(text, src.release).items():
            (folder / f"{name}.txt").write_text(section, encoding="utf-8")
            written += 1
        copyright_file = doc_root / src.package / "copyright"
        if copyright_file.is_file():
            licences.append(f"== {src.package} ({copyright_file})\n"
                            + copyright_file.read_text("utf-8", errors="replace"))
    (out / "LICENSES.txt").write_text("\n".join(licences), encoding="utf-8")
    (out / "kb.toml").write_text(
        f'kb_path = "{corpus}"\nindex_dir = "{out / "idx"}"\n\n[parsers]\nenabled = ["txt"]\n',
        encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder to write (created)")
    parser.add_argument("--doc-root", type=Path, default=DOC_ROOT)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"{build(args.out, args.doc_root)} release files in {args.out / 'corpus'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
