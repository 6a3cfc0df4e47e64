"""The pure half of an index run: disk scan versus indexed rows, in, a plan of actions, out."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from kbmcp_core.models import INDEX_CAP_BYTES, DiskScan, IndexedState, extension_of
from kbmcp_core.ports import HashNeeded


@dataclass(frozen=True, slots=True)
class IndexPlan:
    """What an index run will do. Every path appears in at most one action."""

    #: new files and files whose content hash changed (all files with ``force``)
    to_index: tuple[str, ...] = ()
    #: (old path, new path): the old file vanished and a new one has its exact bytes
    renames: tuple[tuple[str, str], ...] = ()
    #: content hash equal: nothing is parsed, embedded or written
    unchanged: tuple[str, ...] = ()
    #: unchanged documents whose size was never recorded -> size from the scan
    backfill_sizes: Mapping[str, int] = field(default_factory=dict)
    #: indexed documents now over the index cap: row kept, new size recorded
    oversize_sizes: Mapping[str, int] = field(default_factory=dict)
    #: new files over the index cap: nothing to record, reported as skipped
    oversize_new: tuple[str, ...] = ()
    #: gone from disk, newly excluded, or no longer a document (symlink, hard link, ...)
    delete: tuple[str, ...] = ()
    #: indexed files that failed to be read this run: their rows stay as they were
    kept_after_failure: tuple[str, ...] = ()


def plan(
    scan: DiskScan,
    indexed: Mapping[str, IndexedState],
    *,
    enabled_extensions: Collection[str],
    force: bool = False,
    prune_disabled: bool = False,
    reparse_extensions: Collection[str] = (),
) -> IndexPlan:
    """Decide what to do with every path, touching nothing.

    Rows whose extension is not enabled are outside the run and stay as they are (they
    remain searchable but are not offered), unless ``prune_disabled`` removes them.
    Documents with an extension in ``reparse_extensions`` (their parser changed since
    they were indexed) are indexed again even when their bytes did not change, and a
    moved one is indexed at its new path rather than renamed.
    """
    failed = {r.path for r in scan.refused if r.kind == "failed"}
    in_scope = {
        p: s
        for p, s in indexed.items()
        if prune_disabled or extension_of(p) in enabled_extensions
    }

    to_index: list[str] = []
    unchanged: list[str] = []
    backfill: dict[str, int] = {}
    oversize_sizes: dict[str, int] = {}
    oversize_new: list[str] = []
    new_by_hash: dict[str, list[str]] = {}

    for path in sorted(scan.files):
        f = scan.files[path]
        state = in_scope.get(path)
        if f.oversize:
            if state is not None:
                oversize_sizes[path] = f.size
            else:
                oversize_new.append(path)
            continue
        if f.content_hash is None:  # not hashed: indexed whatever its bytes (``hash_needed``)
            to_index.append(path)
        elif state is None:
            new_by_hash.setdefault(f.content_hash, []).append(path)
        elif force or state.content_hash != f.content_hash \
                or extension_of(path) in reparse_extensions:
            to_index.append(path)
        else:
            unchanged.append(path)
            if state.size_bytes is None:
                backfill[path] = f.size

    vanished = [
        p
        for p in sorted(in_scope)
        if p not in scan.files and not _under_failure(p, failed)
    ]
    renames: list[tuple[str, str]] = []
    delete: list[str] = []
    for old in vanished:
        candidates = new_by_hash.get(in_scope[old].content_hash)
        if candidates and not force and extension_of(old) not in reparse_extensions:
            renames.append((old, candidates.pop(0)))
        else:
            delete.append(old)
    for paths in new_by_hash.values():
        to_index.extend(paths)

    return IndexPlan(
        to_index=tuple(sorted(to_index)),
        renames=tuple(renames),
        unchanged=tuple(unchanged),
        backfill_sizes=backfill,
        oversize_sizes=oversize_sizes,
        oversize_new=tuple(oversize_new),
        delete=tuple(delete),
        kept_after_failure=tuple(
            sorted(p for p in in_scope if p not in scan.files and _under_failure(p, failed))
        ),
    )


def hash_needed(
    indexed: Mapping[str, IndexedState],
    *,
    enabled_extensions: Collection[str],
    force: bool = False,
    prune_disabled: bool = False,
) -> HashNeeded:
    """What ``plan`` needs hashed, so that the walk reads only those files and every other
    file is read once, by the run that indexes it. A file needs no hash when its bytes
    cannot equal those of any document in the run's scope (a different size means
    different bytes): it is new or changed whatever it holds. ``force`` indexes every
    file and pairs no renames, so it needs none. A document whose size is not known, or
    is not the size of the bytes it was hashed from (recorded while over the cap), could
    have any bytes: then every file the plan could match against it is hashed."""
    if force:
        return lambda _path, _size: False
    in_scope = {p: s for p, s in indexed.items()
                if prune_disabled or extension_of(p) in enabled_extensions}
    unknown = any(s.size_bytes is None or s.size_bytes > INDEX_CAP_BYTES
                  for s in in_scope.values())
    sizes = {s.size_bytes for s in in_scope.values()}

    def needs_hash(path: str, size: int) -> bool:
        # an indexed file is compared with its own row; a new one with every row (renames)
        state = in_scope.get(path)
        if state is not None and state.size_bytes is not None \
                and state.size_bytes <= INDEX_CAP_BYTES:
            return state.size_bytes == size
        return unknown or size in sizes

    return needs_hash


def _under_failure(path: str, failed: Collection[str]) -> bool:
    """True when ``path`` failed itself or lies in a folder that could not be listed
    (``"."`` is the root): what a run could not see is kept, never deleted."""
    if path in failed or "." in failed:
        return True
    parts = path.split("/")
    return any("/".join(parts[:i]) in failed for i in range(1, len(parts)))
