"""Where kb-mcp keeps what it learned about one index between runs, outside the index
folder (decision 0058): ``$XDG_STATE_HOME/kb-mcp/indexes/<folder name>-<hash of its path>``
(``~/.local/state`` by default).

It holds the index database's stamp after a check (``store/checked_stamp.py``) and the
walk's remembered hashes (``filesystem/hash_cache.py``): facts that speed a run and are
checked before use, never the index itself. The index folder keeps only what readers
need, and a copied or replaced index never matches a stamp kept for another file (the
stamp names the inode).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["CHECKED", "SCAN_HASHES", "state_dir"]

#: The index database's stamp after a check that found nothing.
CHECKED = "index.db-checked"
#: The walk's remembered content hashes.
SCAN_HASHES = "scan-hashes.bin"


def state_dir(index_dir: Path) -> Path:
    """The folder of ``index_dir``'s kept facts (not created here)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    resolved = Path(os.path.abspath(index_dir))
    key = hashlib.sha256(str(resolved).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    name = f"{resolved.parent.name}-{resolved.name}".strip("-") or "index"
    return Path(base) / "kb-mcp" / "indexes" / f"{name[:40]}-{key}"
