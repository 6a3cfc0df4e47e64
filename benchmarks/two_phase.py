"""Time to full keyword search: `kb-mcp index` on a fresh folder until phase one has made
every file searchable by keywords, against the bare cost of the same work in one script.

The measured side is the real CLI with the real model (`kb-mcp index`, stderr a pipe): the
clock runs from its start to its line saying every file is searchable by keywords; the
index is then checked (every document has its chunks, every chunk its two lexical rows)
and the run is killed in its phase two, as a user may do. The floor is a fresh interpreter
that walks the folder, reads every Markdown file, splits it at its headings and inserts
documents, chunks and both FTS5 tables (the same tokenizers) in one SQLite transaction.

`python -m benchmarks.two_phase floor KB DB` runs the floor alone.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.measure import CHILD_ENV, REPO, kb_mcp, run_child, summary

#: What `kb-mcp index` prints (stderr, not a terminal) once phase one has ended.
READY_LINE = "kb-mcp: every file is now searchable by keywords"
#: The goal of issue 14: time to full keyword search at most this times the floor.
TARGET_RATIO = 2.0
_HEADING = re.compile(r"^#{1,6} ", re.MULTILINE)


def keyword_ready(work: Path, files: int, repeats: int, seed: int) -> dict[str, Any]:
    """Measure both sides ``repeats`` times on one generated folder of ``files`` notes."""
    from benchmarks import steps

    kb = work / "two-phase"
    facts = steps.prepare(kb, files, seed, None, "short")
    steps.say(f"time to full keyword search: {facts['files']} files, "
              f"{facts['bytes'] / 1e6:.1f} MB, {repeats} x (kb-mcp index | bare script)")
    runs = []
    for r in range(repeats):
        floor_db = work / "two-phase-floor.db"
        floor_db.unlink(missing_ok=True)
        floor = run_child([sys.executable, "-m", "benchmarks.two_phase", "floor", str(kb),
                           str(floor_db)])
        floor_db.unlink(missing_ok=True)
        measured = _cli_until_ready(kb)
        run = {**measured, "floor_s": floor.wall_s, "floor_chunks": floor.data["chunks"],
               "floor_files": floor.data["files"], "floor_peak_rss_mb": floor.max_rss_mb}
        run["ratio"] = run["ready_s"] / run["floor_s"]
        runs.append(run)
        steps.say(f"  run {r + 1}: searchable by keywords after {run['ready_s']:.1f}s "
                  f"({run['documents']} documents, {run['chunks']} chunks), bare script "
                  f"{run['floor_s']:.1f}s, ratio {run['ratio']:.2f}")
    ready = summary([r["ready_s"] for r in runs])
    floor_s = summary([r["floor_s"] for r in runs])
    return {
        "corpus": facts,
        "runs": runs,
        "ready_s": ready,
        "floor_s": floor_s,
        "ratio": summary([r["ratio"] for r in runs]),
        "ratio_of_medians": ready["median"] / floor_s["median"],
        "documents": runs[-1]["documents"],
        "chunks": runs[-1]["chunks"],
    }


def _cli_until_ready(kb: Path, timeout: float = 1800.0) -> dict[str, Any]:
    """Start `kb-mcp index` on ``kb`` (its index removed first), return when it says every
    file is searchable by keywords, after checking the index says so too."""
    import shutil

    shutil.rmtree(kb / ".kb-mcp", ignore_errors=True)
    env = {**os.environ, **CHILD_ENV}
    started = time.perf_counter()
    proc = subprocess.Popen([kb_mcp(), "index", "--kb-path", str(kb)], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, cwd=REPO)
    assert proc.stderr is not None
    tail: list[str] = []
    try:
        for line in proc.stderr:  # ends when the process does
            if line.rstrip("\n") == READY_LINE:
                ready = time.perf_counter() - started
                break
            tail = [*tail[-20:], line]
            if time.perf_counter() - started > timeout:
                raise RuntimeError("kb-mcp index took too long to reach its phase two")
        else:
            raise RuntimeError("kb-mcp index ended without saying every file is searchable "
                               "by keywords:\n" + "".join(tail))
        facts = _index_facts(kb / ".kb-mcp" / "index.db")
        facts["phase_two_still_running"] = proc.poll() is None
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)  # a user stopping it in phase two
        proc.wait(timeout=60)
        proc.stderr.close()
    return {"ready_s": ready, **facts}


def _index_facts(db: Path) -> dict[str, Any]:
    """Read the index as a searcher would (read-only), and refuse a half-written one."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        one = conn.execute
        documents = one("SELECT count(*) FROM documents").fetchone()[0]
        without = one("SELECT count(*) FROM documents WHERE id NOT IN "
                      "(SELECT document_id FROM chunks)").fetchone()[0]
        chunks = one("SELECT count(*) FROM chunks").fetchone()[0]
        words = one("SELECT count(*) FROM fts_words").fetchone()[0]
        grams = one("SELECT count(*) FROM fts_grams").fetchone()[0]
    finally:
        conn.close()
    if without or not chunks or words != chunks or grams != chunks:
        raise RuntimeError(f"phase one said done, but {without} documents have no chunks "
                           f"and {chunks} chunks have {words}/{grams} lexical rows")
    return {"documents": documents, "chunks": chunks}


# -- the floor: one bare script ------------------------------------------------------------
def floor(kb: Path, db: Path) -> dict[str, Any]:
    """Walk, read, split at headings, insert everything into SQLite FTS5: no embedding."""
    conn = sqlite3.connect(db)
    conn.executescript(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
        "CREATE TABLE documents (id INTEGER PRIMARY KEY, path TEXT UNIQUE, title TEXT);"
        "CREATE TABLE chunks (id INTEGER PRIMARY KEY, document_id INTEGER, ordinal INTEGER,"
        " heading TEXT, content TEXT);"
        "CREATE VIRTUAL TABLE fts_words USING fts5(title, heading, body,"
        " tokenize = 'porter unicode61 remove_diacritics 2');"
        "CREATE VIRTUAL TABLE fts_grams USING fts5(title, heading, body, tokenize = 'trigram');"
    )
    files = chunks = 0
    with conn:
        for path in sorted(_markdown_files(kb)):
            text = path.read_bytes().decode("utf-8")
            rel = path.relative_to(kb).as_posix()
            sections = _sections(text)
            title = sections[0][0] or path.stem
            doc = conn.execute("INSERT INTO documents (path, title) VALUES (?, ?)",
                               (rel, title)).lastrowid
            for ordinal, (heading, body) in enumerate(sections):
                cid = conn.execute(
                    "INSERT INTO chunks (document_id, ordinal, heading, content) "
                    "VALUES (?, ?, ?, ?)", (doc, ordinal, heading, body)).lastrowid
                for table in ("fts_words", "fts_grams"):
                    conn.execute(f"INSERT INTO {table} (rowid, title, heading, body) "
                                 "VALUES (?, ?, ?, ?)", (cid, title, heading, body))
                chunks += 1
            files += 1
    conn.close()
    return {"files": files, "chunks": chunks}


def _markdown_files(root: Path) -> list[Path]:
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [Path(folder, n) for n in names if n.endswith(".md")]
    return found


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) per heading; text before the first heading has heading ""."""
    starts = [m.start() for m in _HEADING.finditer(text)]
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    out = []
    for begin, end in zip(starts, [*starts[1:], len(text)], strict=True):
        block = text[begin:end]
        first, _, body = block.partition("\n")
        heading = first.lstrip("#").strip() if first.startswith("#") else ""
        out.append((heading, body if heading else block))
    return out


def main(argv: list[str]) -> None:
    from benchmarks.measure import write_result

    if len(argv) != 3 or argv[0] != "floor":
        raise SystemExit("usage: python -m benchmarks.two_phase floor KB DB")
    write_result(floor(Path(argv[1]), Path(argv[2])))


if __name__ == "__main__":
    main(sys.argv[1:])
