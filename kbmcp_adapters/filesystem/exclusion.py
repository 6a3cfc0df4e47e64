"""The one exclusion predicate: fail-safe dirs, index folders, ``exclude_dirs`` and
``.kb-mcpignore``."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from kbmcp_core.models import SKIP_EXCLUDED_FOLDER, SKIP_IGNORED, SKIP_INDEX_FOLDER
from kbmcp_core.settings import (
    FAIL_SAFE_DIRS,
    IGNORE_FILE_NAME,
    INDEX_DB_NAME,
    VECTORS_DIR_NAME,
    WRITER_LOCK_NAME,
)

log = logging.getLogger(__name__)

#: kb-mcp's own index folder: excluded, and not reported as a skipped path
INDEX_FOLDER = "the index folder"


def _kind(path: Path) -> int:
    try:
        return stat.S_IFMT(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return 0


def holds_index(folder: Path) -> bool:
    """Whether ``folder`` holds a kb-mcp index, whatever its name: the index database
    beside the writer lock or the vectors folder (what every SQLite index run leaves)."""
    if _kind(folder / INDEX_DB_NAME) != stat.S_IFREG:
        return False
    return (_kind(folder / WRITER_LOCK_NAME) == stat.S_IFREG
            or _kind(folder / VECTORS_DIR_NAME) == stat.S_IFDIR)


class ExclusionRules:
    """Answers "is this path excluded from indexing" for the walk, the watcher and the rest.

    Paths are POSIX paths relative to the knowledge-base root. Matching is
    case-insensitive throughout. A path is excluded when any of its directories is
    excluded (so, as in git, nothing under an excluded directory can be re-included),
    or when the path itself matches.

    With a ``root``, a folder under it that holds a kb-mcp index (``holds_index``) is
    excluded too, whatever its name: an old ``.kb-mcp/`` left behind when ``index_dir``
    moved, or another knowledge base's index. The answer is looked up once per folder
    for the rules' life (one index run, one live-sync batch).
    """

    def __init__(
        self,
        exclude_dirs: Iterable[str],
        ignore_lines: Iterable[str] = (),
        index_dir_rel: str | None = None,
        root: Path | None = None,
    ) -> None:
        from pathspec import GitIgnoreSpec

        self._dir_names = frozenset(d.lower() for d in (*FAIL_SAFE_DIRS, *exclude_dirs))
        self._index_dir = index_dir_rel.strip("/").lower() if index_dir_rel else None
        lines = [line.lower() for line in ignore_lines]
        self._spec = GitIgnoreSpec.from_lines(lines) if lines else None
        self._root = root
        self._holds_index: dict[str, bool] = {}
        self._folders: dict[str, tuple[str | None, tuple[str, ...], tuple[str, ...]]] = {}

    @classmethod
    def load(
        cls, kb_path: Path, exclude_dirs: Iterable[str], index_dir: Path | None = None
    ) -> ExclusionRules:
        """Read ``.kb-mcpignore`` from the root (only there) and build the rules."""
        ignore = kb_path / IGNORE_FILE_NAME
        lines: list[str] = []
        try:
            if ignore.is_file() and not ignore.is_symlink():
                lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError as exc:
            log.warning("could not read %s: %s", IGNORE_FILE_NAME, exc.strerror)
        rel_index: str | None = None
        if index_dir is not None:
            try:
                rel_index = index_dir.resolve().relative_to(kb_path.resolve()).as_posix()
            except ValueError:
                rel_index = None
        return cls(exclude_dirs, lines, rel_index, kb_path)

    def is_excluded(self, rel_path: str, is_dir: bool = False) -> bool:
        return self.reason(rel_path, is_dir) is not None

    def reason(self, rel_path: str, is_dir: bool = False) -> str | None:
        """Why the path is excluded (``SKIP_EXCLUDED_FOLDER``, ``SKIP_IGNORED`` or
        ``SKIP_INDEX_FOLDER`` or ``INDEX_FOLDER``), or None when it is not.

        What its folders say is looked up once per folder for the rules' life: a walk asks
        about every file of a folder (222,500 files: a tenth of an unchanged run's time
        went to taking each path apart again; decision 0058's addendum)."""
        folder, _, name = rel_path.rpartition("/")
        if name in ("", ".") or rel_path.startswith("/"):  # the whole path, part by part
            return self.whole_reason(rel_path, is_dir)
        above, named, parts = self._folder(folder)
        if above is not None:
            return above
        named, parts = (*named, name), (*parts, name.lower())
        if is_dir:
            return self._dir_excluded(parts, named)
        if self._spec is not None and self._spec.match_file("/".join(parts)):
            return SKIP_IGNORED
        return None

    def _folder(self, folder: str) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
        """(why ``folder`` is excluded or None, its parts as on disk, lowercased)."""
        known = self._folders.get(folder)
        if known is None:
            named, parts = PurePosixPath(folder).parts, PurePosixPath(folder.lower()).parts
            known = (self.whole_reason(folder, is_dir=True) if parts else None, named, parts)
            self._folders[folder] = known
        return known

    def whole_reason(self, rel_path: str, is_dir: bool = False) -> str | None:
        """``reason``, each part of the path looked at again."""
        named = PurePosixPath(rel_path).parts  # as on disk, for the look inside a folder
        parts = PurePosixPath(rel_path.lower()).parts  # (lower() never adds a "/")
        if not parts:
            return None
        for i in range(len(parts)):
            last = i == len(parts) - 1
            as_dir = is_dir or not last
            if as_dir and (why := self._dir_excluded(parts[: i + 1], named[: i + 1])):
                return why
        if self._spec is not None and not is_dir and self._spec.match_file("/".join(parts)):
            return SKIP_IGNORED
        return None

    def _dir_excluded(self, parts: tuple[str, ...], named: tuple[str, ...]) -> str | None:
        if parts[-1] in self._dir_names:
            return SKIP_EXCLUDED_FOLDER
        joined = "/".join(parts)
        if self._index_dir is not None and joined == self._index_dir:
            return INDEX_FOLDER
        if self._is_index(named):
            return SKIP_INDEX_FOLDER
        if self._spec is not None and self._spec.match_file(joined + "/"):
            return SKIP_IGNORED
        return None

    def _is_index(self, named: tuple[str, ...]) -> bool:
        if self._root is None:
            return False
        rel = "/".join(named)
        known = self._holds_index.get(rel)
        if known is None:
            known = self._holds_index[rel] = holds_index(self._root.joinpath(*named))
        return known
