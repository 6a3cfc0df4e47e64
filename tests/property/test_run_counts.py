"""Property: an index run's counts add up, whatever mix a folder holds.

Every path the walk meets is counted once: ``scanned == added + updated + renamed +
unchanged + skipped + failed`` (docs/usage.md), on a first run and on the next one after
edits, moves and deletions, with symbolic links (to files, folders, nowhere), files of a
disabled format, files excluded by ``.kb-mcpignore``, an excluded folder, FIFOs, hard links,
files with no text and files that fail. The per-reason counts add up to their totals and
name every path (``kb-mcp index -v``). Real walk, parsers and SQLite store; the model-free
embedder and in-memory vectors keep each example quick.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_core.models import RunSummary
from tests.fakes import FakeEmbedder, FakeVectorStore
from tests.property.support import budget

#: What each kind of entry is, and where a first run counts it.
KINDS = ("md", "txt", "empty", "bad", "png", "link", "dir_link", "dangling", "ignored",
         "excluded_dir", "fifo", "hard_link")
FIRST_RUN = {"md": "added", "txt": "added", "empty": "skipped", "bad": "failed",
             "png": "skipped", "link": "skipped", "dir_link": "skipped", "dangling": "skipped",
             "ignored": "skipped", "excluded_dir": "skipped", "fifo": "skipped",
             "hard_link": "skipped"}


def make(root: Path, kind: str, i: int) -> int:
    """Create entry ``i`` of ``kind`` under ``root``; the number of paths the walk meets."""
    name = f"{kind}-{i}"
    sub = root / ("sub" if i % 2 else "")
    sub.mkdir(exist_ok=True)
    if kind == "md":
        (sub / f"{name}.md").write_text(f"# Note {i}\n\nThe {name} body about otters.\n")
    elif kind == "txt":
        (sub / f"{name}.txt").write_text(f"Plain text {name} about herons.\n")
    elif kind == "empty":
        (sub / f"{name}.md").write_text("   \n\n")
    elif kind == "bad":
        (sub / f"{name}.md").write_bytes(b"# Broken \xff\xfe\n\nnot UTF-8\n")
    elif kind == "png":
        (sub / f"{name}.heic").write_bytes(b"\x89PNG\r\n\x1a\n")
    elif kind == "link":
        (sub / f"{name}-target.heic").write_bytes(b"png")  # a disabled format: one more skip
        os.symlink(f"{name}-target.heic", sub / f"{name}.md")
        return 2
    elif kind == "dir_link":
        os.symlink(str(root.parent), sub / name)
    elif kind == "dangling":
        os.symlink("nowhere.md", sub / f"{name}.md")
    elif kind == "ignored":
        (sub / f"ignored-{i}.md").write_text("# Ignored\n\nkept out\n")
    elif kind == "excluded_dir":
        (sub / f"node_modules-{i}" / "node_modules").mkdir(parents=True)
        (sub / f"node_modules-{i}" / "node_modules" / "a.md").write_text("# A\n\na\n")
        (sub / f"node_modules-{i}" / "node_modules" / "b.md").write_text("# B\n\nb\n")
        return 1  # the folder is one path; nothing under it is walked
    elif kind == "fifo":
        os.mkfifo(sub / f"{name}.md")
    elif kind == "hard_link":
        (sub / f"{name}.md").write_text("# Hard\n\nlinked twice\n")
        os.link(sub / f"{name}.md", sub / f"{name}-second.md")
        return 2
    return 1


def open_kb(root: Path) -> KnowledgeBase:
    s = build_settings(None, cwd=root, kb_path=root, enabled_formats=("md", "txt"),
                       exclude_dirs=("node_modules",))
    return KnowledgeBase(bootstrap(s, embedder=FakeEmbedder(), vectors=FakeVectorStore()))


def run(root: Path) -> RunSummary:
    kb = open_kb(root)
    try:
        return kb.index()
    finally:
        kb.close()


def assert_adds_up(s: RunSummary) -> None:
    assert s.scanned == s.added + s.updated + s.renamed + s.unchanged + s.skipped + s.failed, (
        s.as_dict())
    assert sum(s.skipped_reasons.values()) == s.skipped
    assert sum(s.failed_reasons.values()) == s.failed
    named = s.as_dict(files=True)
    for key, total in (("skipped_files", s.skipped), ("failed_files", s.failed)):
        files = named[key]
        assert isinstance(files, dict)
        assert sum(len(paths) for paths in files.values()) == total, (key, files)


@settings(max_examples=budget(25))
@given(mix=st.lists(st.sampled_from(KINDS), min_size=1, max_size=14),
       edits=st.lists(st.sampled_from(["edit", "move", "delete", "break", "keep"]),
                      max_size=6))
def test_the_counts_of_every_run_add_up(mix: list[str], edits: list[str]) -> None:
    base = Path(tempfile.mkdtemp(prefix="kb-counts-"))
    try:
        root = base / "kb"
        root.mkdir()
        (root / ".kb-mcpignore").write_text("ignored-*\n")
        expected: Counter[str] = Counter()
        for i, kind in enumerate(mix):
            expected[FIRST_RUN[kind]] += make(root, kind, i)
        first = run(root)
        assert_adds_up(first)
        assert (first.added, first.skipped, first.failed) == (
            expected["added"], expected["skipped"], expected["failed"]), first.as_dict()
        assert first.scanned == sum(expected.values())

        documents = sorted(p for p in root.rglob("*") if p.suffix in (".md", ".txt")
                           and p.is_file() and not p.is_symlink() and p.stat().st_nlink == 1
                           and "node_modules" not in p.parts and not p.name.startswith(
                               ("ignored-", "empty-", "bad-")))
        for n, (edit, doc) in enumerate(zip(edits, documents, strict=False)):
            if edit == "edit":
                doc.write_text(doc.read_text() + f"\nA new line {n} about kestrels.\n")
            elif edit == "move":
                doc.rename(doc.with_name(f"moved-{n}{doc.suffix}"))
            elif edit == "delete":
                doc.unlink()
            elif edit == "break":
                doc.write_bytes(b"\xff\xfe broken now\n")
        second = run(root)
        assert_adds_up(second)
        assert second.deleted == edits[: len(documents)].count("delete")
    finally:
        shutil.rmtree(base, ignore_errors=True)
