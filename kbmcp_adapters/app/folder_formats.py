"""Which formats a folder holds: what `kb-mcp init` enables in the config it writes
(decision 0025), and which of them need an extra installed first (decision 0048)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from kbmcp_adapters.filesystem.exclusion import holds_index
from kbmcp_adapters.parsers.codelangs import INSTALL_HINT, missing_grammars
from kbmcp_adapters.parsers.registry import FORMAT_EXTENSIONS, KNOWN_FORMATS
from kbmcp_core.models import extension_of
from kbmcp_core.settings import DEFAULT_EXCLUDE_DIRS

__all__ = ["formats_in", "missing_extras"]

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
            fmt = format_of.get(extension_of(name))  # README, NEWS, ...: txt
            if fmt is not None and not name.startswith("."):
                counts[fmt] = counts.get(fmt, 0) + 1
        seen += len(files) + len(dirs)
        if seen > _LOOK_AT:
            break
    counts.setdefault("md", 0)
    return {name: counts[name] for name in KNOWN_FORMATS if name in counts}


def missing_extras(found: Mapping[str, int]) -> dict[str, str]:
    """The formats of ``found`` that cannot be enabled yet, each with the command that
    installs what it needs (``code``: tree-sitter and its grammars)."""
    return {"code": INSTALL_HINT} if found.get("code") and missing_grammars() else {}
