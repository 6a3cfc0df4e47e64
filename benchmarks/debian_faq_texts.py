"""The fixed texts of the ``debian_faq`` eval set: the questions nothing in its corpus
answers, and the README written beside the set (what it holds, per package, and how to
measure kb-mcp on it)."""

from __future__ import annotations

from pathlib import Path

#: Questions about software none of the FAQ files covers (``expected: []``): a search
#: should answer them with ``low_confidence``.
NO_ANSWER = (
    "How do I configure a reverse proxy with Apache httpd for a Node.js app",
    "Why does Docker say permission denied when I try to connect to the daemon socket",
    "How can I resize an ext4 partition without losing data",
    "What is the difference between systemd timers and cron jobs",
    "How do I undo the last commit in Mercurial",
    "Why is my Python virtual environment not activating in PowerShell",
    "How do I enable HTTP/2 in nginx",
    "Can I use PostgreSQL full-text search with Japanese text",
    "How do I write a udev rule to run a script when a USB drive is plugged in",
    "Why does my Bluetooth headset connect but play no sound with PipeWire",
    "How do I set up two-factor authentication for SSH logins",
    "What is the difference between a Kubernetes Service and an Ingress",
    "How do I make a bootable USB stick from an ISO image on Windows",
    "Why does Firefox use so much memory with many tabs open",
    "How do I convert a video to WebM with ffmpeg keeping subtitles",
    "How do I recover a lost partition table with TestDisk",
    "How do I change the default Java version with update-alternatives",
    "Why does my Wi-Fi keep disconnecting after suspend on a laptop",
    "How do I schedule a backup of a MySQL database every night",
    "How do I add a dependency to a Gradle build for an Android app",
)

NO_ANSWER_HEAD = [
    "# No-answer questions for usdfaq: each asks about software the corpus (Debian FAQ",
    "# files of procps, zlib, valgrind, xz, sed, lsof, base-files, ncurses, man-db,",
    "# libxslt) does not cover; `expected: []`, scored by the low_confidence share.",
    "queries:",
]

#: (package, FAQ file, the rule in words, queries taken, questions found, Debian version)
Row = tuple[str, str, str, int, int, str]


def readme(out: Path, doc_root: Path, rows: list[Row], cap: int) -> list[str]:
    """The README of a set built into `out` from `doc_root`, one table row per package."""
    taken = sum(r[3] for r in rows)
    return [
        "# A natural-question eval set from Debian's FAQ files",
        "",
        f"Written by `python -m benchmarks.debian_faq {out} --doc-root {doc_root}` (kb-mcp's",
        "repository); run it again to rebuild. Nothing here is edited by hand.",
        "",
        "Each query is a question taken from a package's own FAQ, as its authors wrote it.",
        "`corpus/` holds the same FAQ files with every question removed (and the tables of",
        "contents that repeat them, for sed and lsof), so a search has to find the answer by",
        "what it says, not by the question's words. Plain-text files get a `.txt` name (kb-mcp",
        "indexes `.txt`) and are otherwise as shipped; libxslt's page stays HTML. `lines` is",
        "the answer's first and last non-blank line in the corpus file as written, and for the",
        "HTML page in the Markdown kb-mcp serves for it.",
        "",
        f"{taken} queries:",
        "",
        "| package | version | file | a question is | queries (found) |",
        "|---|---|---|---|---|",
        *(f"| {pkg} | {version} | {file} | {how} | {n} ({found}) |"
          for pkg, file, how, n, found, version in rows),
        "",
        f"A file gives at most {cap} queries, spread evenly over its questions; all of its",
        "questions leave the corpus all the same. A question with no answer of its own (a",
        "title followed at once by sub-questions) is not a query. A package that is not",
        "installed, or whose FAQ changed layout, is missing from the table (the build said",
        "so on stderr); other versions of these packages give other questions.",
        "",
        "- `golden.yml`: the questions (`kind` is the package).",
        f"- `no-answer.yml`: {len(NO_ANSWER)} questions about software the corpus does not",
        "  cover (`expected: []`): a good search flags them `low_confidence`.",
        "- `both.yml`: the two together.",
        "- `LICENSES.txt`: each package's copyright file, which covers its FAQ.",
        "- `kb.toml`: the corpus as a knowledge base (Markdown, text and HTML enabled), its",
        "  index in `idx/` here.",
        "",
        "Measure:",
        "",
        "```sh",
        f"kb-mcp index --config {out / 'kb.toml'}",
        f"kb-mcp eval --config {out / 'kb.toml'} --golden {out / 'both.yml'} --mode all",
        "```",
        "",
        "Known weak spots: lsof's answers refer to other questions by their title, so a few",
        "query texts are found word for word inside other answers; valgrind's answers may",
        "quote a second error message that belongs to the question; some ncurses and zlib",
        "questions state a problem rather than ask.",
    ]
