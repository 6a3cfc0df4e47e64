"""The pure planner: disk scan versus indexed rows, checked with plain values."""

from __future__ import annotations

from kbmcp_core.index_plan import hash_needed, plan
from kbmcp_core.models import INDEX_CAP_BYTES, DiskFile, DiskScan, IndexedState, Refusal

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


def test_a_file_the_walk_did_not_hash_is_indexed_whatever_it_holds() -> None:
    unread = DiskScan({"a.md": DiskFile("a.md", 12, None), "n.md": DiskFile("n.md", 7, None)})
    p = plan(unread, rows(a=("h1", 10), gone=("h9", 5)), enabled_extensions=MD)
    assert p.to_index == ("a.md", "n.md")
    assert p.delete == ("gone.md",) and p.oversize_new == () and p.oversize_sizes == {}


def test_only_the_hashes_the_plan_compares_are_needed() -> None:
    indexed = rows(a=("h1", 10), b=("h2", 20))
    needs = hash_needed(indexed, enabled_extensions=MD)
    assert needs("a.md", 10)  # may be unchanged
    assert not needs("a.md", 11)  # another size: changed whatever it holds
    assert needs("new.md", 20)  # may be b.md moved
    assert not needs("new.md", 30)  # no document of that size to be a rename of
    assert not hash_needed(indexed, enabled_extensions=MD, force=True)("a.md", 10)
    assert hash_needed({}, enabled_extensions=MD)("new.md", 10) is False  # a first index


def test_a_document_of_unknown_size_makes_every_hash_needed() -> None:
    for size in (None, INDEX_CAP_BYTES + 1):  # never recorded, or recorded while too big
        needs = hash_needed(rows(a=("h1", size), b=("h2", 20)), enabled_extensions=MD)
        assert needs("a.md", 10) and needs("new.md", 30) and needs("b.md", 20)
        assert not needs("b.md", 21)
