"""Settings: one frozen value holding every knob, validated once at the edge."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

DEFAULT_EXCLUDE_DIRS: tuple[str, ...] = (
    ".venv",
    "venv",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".tox",
    ".idea",
    ".vscode",
    ".cache",
    ".trash",
    ".obsidian",
    "dist",
    "build",
)

#: Directory names never walked, whatever the configuration says.
FAIL_SAFE_DIRS: tuple[str, ...] = (".git", ".svn", ".hg", "node_modules")

INDEX_DIR_NAME = ".kb-mcp"
IGNORE_FILE_NAME = ".kb-mcpignore"
CONFIG_FILE_NAME = "kb-mcp.toml"


@dataclass(frozen=True, slots=True)
class Settings:
    kb_path: Path
    index_dir: Path
    database_url: str | None = None
    embedding_model: str = "kb-mcp/all-MiniLM-L6-v2-int8"
    embedding_batch_size: int = 32
    embedding_threads: int | None = None
    model_cache_dir: Path | None = None
    enabled_formats: tuple[str, ...] = ("md",)
    exclude_dirs: tuple[str, ...] = DEFAULT_EXCLUDE_DIRS
    chunk_max_tokens: int | None = None
    chunk_min_tokens: int = 24
    search_default_limit: int = 5
    search_max_limit: int = 50
    search_chunks_per_document: int = 2
    watch: bool = True
    watch_debounce_ms: int = 400
    writer_lock_timeout_s: float = 30.0
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def sqlite_path(self) -> Path:
        return self.index_dir / "index.db"

    @property
    def vectors_dir(self) -> Path:
        return self.index_dir / "vectors"

    @property
    def store_url(self) -> str:
        """``database_url``, or the index folder's SQLite file as a URL (percent-encoded,
        so a folder name with ``?``, ``#`` or ``%`` names the same file)."""
        return self.database_url or f"sqlite:///{quote(str(self.sqlite_path))}"
