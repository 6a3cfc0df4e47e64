"""The error tree of kb-mcp; every failure a user can see is a ``KbError``.

    KbError
    ├── ConfigError             bad settings, unknown keys, bad kb_path
    ├── IndexNotFound           no index yet: run `kb-mcp index`
    ├── ModelMismatch           the index was built with another embedding model
    ├── EmbeddingUnavailable    the embedding model cannot be loaded (offline, bad file)
    ├── StoreError              the index store or vector store failed
    ├── WriterBusy              another process holds the writer lock
    ├── ParseError              a file could not be parsed (kept per file, never fatal)
    ├── PathRefused             a read was refused by the guard chain
    │   └── NotServable         the document is not offered as a resource
    └── InvalidQuery            a search request is malformed
"""

from __future__ import annotations


class KbError(Exception):
    """Root of every kb-mcp error. ``code`` is stable and safe to show to clients."""

    code = "kb_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigError(KbError):
    code = "bad_config"


class IndexNotFound(KbError):
    code = "index_not_found"

    def __init__(self, location: str) -> None:
        super().__init__(f"no index at {location}: run `kb-mcp index` first")
        self.location = location


class ModelMismatch(KbError):
    code = "model_mismatch"

    def __init__(self, indexed: str, configured: str) -> None:
        super().__init__(
            f"the index was built with embedding model {indexed!r} but {configured!r} is "
            "configured; use the same model, or rebuild with `kb-mcp index --force`"
        )
        self.indexed = indexed
        self.configured = configured


class EmbeddingUnavailable(KbError):
    code = "embedding_unavailable"


class StoreError(KbError):
    code = "store_error"


class WriterBusy(KbError):
    code = "writer_busy"


class ParseError(KbError):
    code = "parse_error"


class PathRefused(KbError):
    """A read refused by the guard chain. ``reason`` never contains a server path."""

    code = "path_refused"

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path!r} refused: {reason}")
        self.path = path
        self.reason = reason


class NotServable(PathRefused):
    code = "not_servable"


class InvalidQuery(KbError):
    code = "invalid_argument"
