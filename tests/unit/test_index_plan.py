"""The pure planner: disk scan versus indexed rows, checked with plain values."""

from __future__ import annotations

from kbmcp_core.index_plan import plan
from kbmcp_core.models import DiskFile, DiskScan, IndexedState, Refusal

MD = {"md"}


def disk(**files: str) -> DiskScan:
    return DiskScan({p.replace("__", "/") + ".md": DiskFile(p.replace("__", "/") + ".md", 10, h)
                     for p, h in files.items()})


def rows(**files: tuple[str, int | None]) -> dict[str, IndexedState]:
    return {p + ".md": IndexedState(p + ".md", h, s) for p, (h, s) in files.items()}


def test_new_changed_unchanged_and_deleted() -> None:
    p = plan(disk(a="h1", b="h2x", c="h3"), rows(a=("h1", 10), b=("h2", 10), d=("h4", 5)),
             enabled_extensions=MD)
    assert p.to_index == ("b.md", "c.md")
    assert p.unchanged == ("a.md",)
    assert p.delete == ("d.md",)
    assert p.renames == ()


def test_unchanged_with_null_size_is_backfilled_from_the_scan() -> None:
    p = plan(disk(a="h1", b="h2"), rows(a=("h1", None), b=("h2", 10)), enabled_extensions=MD)
    assert p.unchanged == ("a.md", "b.md")
    assert dict(p.backfill_sizes) == {"a.md": 10}


def test_same_bytes_at_a_new_path_is_a_rename() -> None:
    p = plan(disk(new="h1"), rows(old=("h1", 10)), enabled_extensions=MD)
    assert p.renames == (("old.md", "new.md"),)
    assert p.to_index == () and p.delete == ()


def test_force_reindexes_everything_and_does_not_rename() -> None:
    p = plan(disk(a="h1", new="h2"), rows(a=("h1", 10), old=("h2", 10)),
             enabled_extensions=MD, force=True)
    assert p.to_index == ("a.md", "new.md")
    assert p.delete == ("old.md",)


def test_oversize_keeps_the_row_and_records_the_new_size() -> None:
    scan = DiskScan({"a.md": DiskFile("a.md", 60 << 20, None, oversize=True),
                     "n.md": DiskFile("n.md", 60 << 20, None, oversize=True)})
    p = plan(scan, rows(a=("h1", 10)), enabled_extensions=MD)
    assert dict(p.oversize_sizes) == {"a.md": 60 << 20}
    assert p.oversize_new == ("n.md",)
    assert p.delete == ()


def test_failed_file_keeps_its_rows_but_absent_one_is_removed() -> None:
    scan = DiskScan({}, (Refusal("a.md", "unreadable", "failed"),
                         Refusal("b.md", "is a symbolic link", "absent")))
    p = plan(scan, rows(a=("h1", 10), b=("h2", 10)), enabled_extensions=MD)
    assert p.kept_after_failure == ("a.md",)
    assert p.delete == ("b.md",)


def test_rows_of_disabled_formats_stay_unless_pruned() -> None:
    indexed = {"a.txt": IndexedState("a.txt", "h", 1)}
    assert plan(DiskScan({}), indexed, enabled_extensions=MD).delete == ()
    assert plan(DiskScan({}), indexed, enabled_extensions=MD, prune_disabled=True).delete == (
        "a.txt",)


def _rows(*paths: str) -> dict[str, IndexedState]:
    return {p: IndexedState(p, "h-" + p, 10) for p in paths}


def test_rows_under_a_folder_that_could_not_be_listed_are_kept() -> None:
    scan = DiskScan({"a.md": DiskFile("a.md", 10, "h-a.md")},
                    (Refusal("locked", "cannot list (Permission denied)", "failed"),))
    p = plan(scan, _rows("a.md", "locked/b.md", "locked/deep/c.md", "lockedx.md"),
             enabled_extensions=MD)
    assert p.delete == ("lockedx.md",)
    assert p.kept_after_failure == ("locked/b.md", "locked/deep/c.md")


def test_nothing_is_deleted_when_the_root_could_not_be_listed() -> None:
    scan = DiskScan({}, (Refusal(".", "cannot list (Permission denied)", "failed"),))
    p = plan(scan, _rows("a.md", "sub/b.md"), enabled_extensions=MD)
    assert p.delete == ()
    assert p.kept_after_failure == ("a.md", "sub/b.md")
