"""SPEC §3 discovery on a real directory: exclusions, refusals, and the index cap."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kbmcp_adapters.filesystem.exclusion import ExclusionRules
from kbmcp_adapters.filesystem.local import LocalFileSystem
from kbmcp_adapters.filesystem.scanner import DiskScanner
from kbmcp_adapters.parsers.registry import READABLE_EXTENSIONS
from kbmcp_core.models import (
    SKIP_BAD_NAME,
    SKIP_EXCLUDED_FOLDER,
    SKIP_FORMAT,
    SKIP_IGNORED,
    SKIP_LINK,
    SKIP_UNSUPPORTED,
)
from kbmcp_core.settings import DEFAULT_EXCLUDE_DIRS
from tests.conftest import OpenKb


def write(root: Path, rel: str, text: str = "# T\nbody\n") -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def scan(root: Path, exclude_dirs: tuple[str, ...] = DEFAULT_EXCLUDE_DIRS,
         exts: tuple[str, ...] = ("md",)):
    rules = ExclusionRules.load(root, exclude_dirs, root / ".kb-mcp")
    return DiskScanner(root, LocalFileSystem(root), rules, exts, READABLE_EXTENSIONS).scan()


def test_fail_safe_and_default_dirs_are_never_walked(tmp_path: Path) -> None:
    for rel in [".git/x.md", "node_modules/p/readme.md", ".kb-mcp/y.md", ".svn/z.md",
                ".venv/lib/a.md", "notes/a.md", "NODE_MODULES/b.md"]:
        write(tmp_path, rel)
    assert sorted(scan(tmp_path).files) == ["notes/a.md"]


def test_fail_safe_dirs_stay_excluded_with_a_user_list(tmp_path: Path) -> None:
    for rel in [".git/x.md", "Drafts/a.md", "keep/b.md", ".venv/c.md"]:
        write(tmp_path, rel)
    # a user list replaces the defaults (.venv is walked now) but not the fail-safe
    assert sorted(scan(tmp_path, exclude_dirs=("drafts",)).files) == [".venv/c.md", "keep/b.md"]


def test_kbmcpignore_gitignore_semantics_case_insensitive(tmp_path: Path) -> None:
    (tmp_path / ".kb-mcpignore").write_text(
        "*.draft.md\nprivate/\n!private/ok.md\nlogs/*.md\n!logs/keep.md\nSecret.md\n")
    for rel in ["a.md", "b.DRAFT.md", "private/x.md", "private/ok.md", "logs/1.md",
                "logs/keep.md", "sub/secret.md", "sub/deeper/SECRET.md"]:
        write(tmp_path, rel)
    assert sorted(scan(tmp_path).files) == ["a.md", "logs/keep.md"]


def test_nested_kbmcpignore_is_not_read(tmp_path: Path) -> None:
    write(tmp_path, "sub/.kb-mcpignore", "*.md\n")
    write(tmp_path, "sub/a.md")
    assert sorted(scan(tmp_path).files) == ["sub/a.md"]


def test_only_enabled_extensions(tmp_path: Path) -> None:
    for rel in ["a.md", "b.txt", "c.pdf", "d.MD", "e.rst"]:
        write(tmp_path, rel)
    assert sorted(scan(tmp_path).files) == ["a.md", "d.MD"]
    assert sorted(scan(tmp_path, exts=("md", "txt")).files) == ["a.md", "b.txt", "d.MD"]


def test_links_and_special_files_are_refused_and_the_rest_indexed(tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    write(outside, "secret.md", "# secret\n")
    kb = tmp_path / "kb"
    write(kb, "good.md")
    os.symlink(outside / "secret.md", kb / "link.md")
    os.symlink(outside, kb / "linkdir")
    os.link(write(kb, "hard.md"), kb / "hard2.md")
    os.mkfifo(kb / "pipe.md")
    s = scan(kb)
    assert sorted(s.files) == ["good.md"]
    reasons = {r.path: r.reason for r in s.refused}
    assert "symbolic link" in reasons["link.md"]
    assert "symbolic link" in reasons["linkdir"]
    assert "hard link" in reasons["hard.md"] and "hard link" in reasons["hard2.md"]
    assert "regular" in reasons["pipe.md"]
    assert all(r.kind == "absent" for r in s.refused)


def test_unreadable_file_is_a_failure_not_an_abort(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "locked.md")
    write(tmp_path, "ok.md")
    real_open = os.open

    def deny(path: str, flags: int, *a: object, **kw: object) -> int:
        if str(path).endswith("locked.md"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", deny)  # root can read anything: simulate EACCES
    s = scan(tmp_path)
    assert sorted(s.files) == ["ok.md"]
    assert [(r.path, r.kind) for r in s.refused] == [("locked.md", "failed")]
    assert "Permission denied" in s.refused[0].reason


def test_file_over_the_index_cap_is_only_stated(tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    with open(big, "wb") as f:
        f.truncate(60 * 1024 * 1024)  # sparse: 60 MiB by stat, no disk used
    write(tmp_path, "ok.md")
    s = scan(tmp_path)
    assert s.files["big.md"].oversize and s.files["big.md"].content_hash is None
    assert s.files["big.md"].size == 60 * 1024 * 1024
    assert not s.files["ok.md"].oversize


def test_one_predicate_answers_for_single_paths_too(tmp_path: Path) -> None:
    (tmp_path / ".kb-mcpignore").write_text("private/\n!private/ok.md\n")
    rules = ExclusionRules.load(tmp_path, DEFAULT_EXCLUDE_DIRS, tmp_path / ".kb-mcp")
    assert rules.is_excluded("private/ok.md")
    assert rules.is_excluded("a/.git/config.md")
    assert rules.is_excluded(".kb-mcp/index.md")
    assert not rules.is_excluded("public/ok.md")


def test_names_that_are_not_utf8_are_refused_once_and_the_rest_indexed(tmp_path: Path) -> None:
    write(tmp_path, "ok.md")
    root = os.fsencode(tmp_path)
    with open(root + b"/bad-\xff.md", "wb") as f:
        f.write(b"# Bad\n\nbody\n")
    os.mkdir(root + b"/dir-\xfe")
    with open(root + b"/dir-\xfe/inside.md", "wb") as f:
        f.write(b"# Inside\n")
    with open(root + b"/photo-\xff.heic", "wb") as f:
        f.write(b"\x89PNG")
    s = scan(tmp_path)
    assert sorted(s.files) == ["ok.md"]
    assert [(r.path, r.reason, r.kind, r.category) for r in s.refused] == [
        ("bad-\\xff.md", "file name is not valid UTF-8; rename it", "absent", SKIP_BAD_NAME),
        ("dir-\\xfe", "folder name is not valid UTF-8; rename it (its contents are not "
                      "indexed)", "absent", SKIP_BAD_NAME),
    ]
    assert s.skipped == {SKIP_UNSUPPORTED: 1}  # a format kb-mcp cannot read: quiet


def test_dot_leading_names_follow_one_rule(tmp_path: Path) -> None:
    for rel in ["..md", ".foo.md", ".md", "notes.", "sub/...md", "sub/.MD"]:
        write(tmp_path, rel)
    s = scan(tmp_path)
    assert sorted(s.files) == ["..md", ".foo.md", "sub/...md"]
    assert s.skipped == {SKIP_UNSUPPORTED: 3} and s.refused == ()


def make_mixed_folder(root: Path) -> None:
    (root / ".kb-mcpignore").write_text("drafts/\n*.tmp.md\n")
    for rel in ["a.md", "drafts/x.md", "drafts/y.md", "b.tmp.md", "node_modules/p/readme.md",
                ".git/config", "notes.txt"]:
        write(root, rel)
    for i in range(40):
        (root / f"img/{i}.heic").parent.mkdir(exist_ok=True)
        (root / f"img/{i}.heic").write_bytes(b"\x89PNG")
    os.symlink(root / "a.md", root / "link.md")


def test_every_path_the_walk_does_not_take_is_counted_with_its_reason(tmp_path: Path) -> None:
    make_mixed_folder(tmp_path)
    s = scan(tmp_path)
    assert sorted(s.files) == ["a.md"]
    assert s.skipped == {
        SKIP_UNSUPPORTED: 40,  # 40 images: kb-mcp reads no image
        SKIP_FORMAT: 1,  # a text file: kb-mcp reads text, but txt is not enabled
        SKIP_IGNORED: 2,  # the drafts/ folder (not walked) and b.tmp.md
        SKIP_EXCLUDED_FOLDER: 2,  # node_modules and .git (not walked)
    }
    assert [(r.path, r.category) for r in s.refused] == [("link.md", SKIP_LINK)]


def test_a_run_summary_breaks_skips_down_by_reason_with_one_warning_per_refusal(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    make_mixed_folder(tmp_path)
    summary = open_kb(tmp_path).index()
    assert summary.skipped_reasons == {SKIP_UNSUPPORTED: 40, SKIP_FORMAT: 1, SKIP_IGNORED: 2,
                                       SKIP_EXCLUDED_FOLDER: 2, SKIP_LINK: 1}
    assert summary.skipped == 46
    assert summary.warnings == ["link.md: is a symbolic link; links are never followed"]
    assert "46 skipped (not a supported format: 40, " in summary.line()
    assert "format not enabled: 1" in summary.line()
    assert summary.as_dict()["skipped_reasons"] == summary.skipped_reasons
