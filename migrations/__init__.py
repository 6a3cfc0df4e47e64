"""Alembic migrations of the kb-mcp index store (shipped inside the wheel)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

#: The newest revision in ``versions/``: a new migration sets it (a test compares it with
#: the head Alembic computes from the scripts, so a forgotten update fails the build).
HEAD = "0008"


def frozen_revision(filename: str) -> ModuleType:
    """The migration script ``versions/<filename>``, loaded from its file: a later
    revision reads an earlier one's frozen SQL texts from it (0007 and 0008 read 0006's)."""
    path = Path(__file__).with_name("versions") / filename
    spec = importlib.util.spec_from_file_location(f"kbmcp_migration_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
