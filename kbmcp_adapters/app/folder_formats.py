"""Which formats a folder holds: what `kb-mcp init` enables in the config it writes
(decision 0025)."""

from __future__ import annotations

import os
from pathlib import Path

from kbmcp_adapters.filesystem.exclusion import holds_index
from kbmcp_adapters.parsers.registry import FORMAT_EXTENSIONS, KNOWN_FORMATS
from kbmcp_core.settings import DEFAULT_EXCLUDE_DIRS

__all__ = ["formats_in"]

#: At most this many entries are looked at to choose the formats (a huge tree: the rest
#: keep the defaults' choice; the user edits the list).
_LOOK_AT = 100_000


def formats_in(kb: Path) -> dict[str, int]:
    """How many files of each format kb-mcp reads lie in ``kb`` (dot folders and the
    default excluded folder names and kb-mcp index folders left out; links not followed),
    in the documentation order of the formats; Markdown always listed."""
    format_of = {ext: name for name, exts in FORMAT_EXTENSIONS.items() for ext in exts}
    skip = set(DEFAULT_EXCLUDE_DIRS)
    counts: dict[str, int] = {}
    seen = 0
    for top, dirs, files in os.walk(kb, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in skip
                   and not holds_index(Path(top, d))]
        for name in files:
            fmt = format_of.get(name.rpartition(".")[2].lower()) if "." in name else None
            if fmt is not None and not name.startswith("."):
                counts[fmt] = counts.get(fmt, 0) + 1
        seen += len(files) + len(dirs)
        if seen > _LOOK_AT:
            break
    counts.setdefault("md", 0)
    return {name: counts[name] for name in KNOWN_FORMATS if name in counts}
