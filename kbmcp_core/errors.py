"""The error tree of kb-mcp; every failure a user can see is a ``KbError``.

    KbError
    ├── ConfigError             bad settings, unknown keys, bad kb_path
    │   └── IndexReadOnly       a writer met an index (or folder) it may not write
    ├── IndexNotFound           no index yet: run `kb-mcp index`
    │   └── IndexNotReady       an index whose first run has not completed phase one
    ├── ModelMismatch           the index was built with another embedding model
    ├── EmbeddingUnavailable    the embedding model cannot be loaded (offline, bad file)
    │   ├── EmbeddingUnreachable  the embedding service does not answer (search: keywords)
    │   └── EmbeddingRejected   the embedding service refused some texts (they are skipped)
    ├── RerankerUnavailable     the reranker asked for cannot run (package missing, bad file)
    ├── StoreError              the index store or vector store failed
    │   ├── StoreUnreachable    the database server holding the index does not answer
    │   ├── StoreFailed         the database server holding the index refused a statement
    │   ├── StoreCorrupt        the index store file is damaged
    │   ├── IndexUnwritable     the index folder cannot take a write (a full disk)
    │   └── VectorsUnreadable   the vector data cannot be read (search uses keywords)
    │       └── VectorsUnreachable  the object store holding them does not answer
    ├── WriterBusy              another process holds the writer lock
    ├── ReadBusy                every conversion slot of the server stayed taken
    ├── ParseError              a file could not be parsed (kept per file, never fatal)
    ├── InsufficientScope       the caller's OAuth token lacks the scope a tool needs
    ├── PathRefused             a read was refused by the guard chain
    │   ├── NoSuchDocument      no document kb-mcp serves by that name (why: log only)
    │   └── NotOffered          the index does not offer the document as a resource
    └── InvalidQuery            a search request is malformed
        ├── InvalidRange        a line range, section or page the document does not have
        └── UnknownCollection   a call named a collection the server does not have
"""

from __future__ import annotations

from collections.abc import Sequence


class KbError(Exception):
    """Root of every kb-mcp error. ``code`` is stable and safe to show to clients."""

    code = "kb_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    @property
    def public_message(self) -> str:
        """The message for a client of the server: never a path on the server's disk."""
        return self.message


class ConfigError(KbError):
    code = "bad_config"


class IndexReadOnly(ConfigError):
    """A writer met an index it may not write. Readers open such an index read-only;
    only ``index``, ``rebuild_index`` and the watcher stop here. A ConfigError because,
    like a bad kb_path, the fix is in the set-up (permissions), not in kb-mcp."""

    code = "index_read_only"

    #: the sentence's ending when the index exists and only writing is refused
    READERS_WORK = ("indexing needs write access there; search, status and doctor still "
                    "work on a read-only index")
    #: its ending when there is no index folder and none can be created
    NO_FOLDER = ("indexing needs write access there; set index_dir in kb-mcp.toml to a "
                 "folder you can write, or index as a user who can")

    def __init__(self, location: str, why: str, hint: str = READERS_WORK) -> None:
        super().__init__(f"cannot write the index at {location} ({why}): {hint}")
        self.location = location
        self.why = why
        self.hint = hint

    @property
    def public_message(self) -> str:
        return f"cannot write the index ({self.why}): {self.hint}"


class IndexNotFound(KbError):
    code = "index_not_found"

    def __init__(self, location: str) -> None:
        super().__init__(f"no index at {location}: run `kb-mcp index` first")
        self.location = location

    @property
    def public_message(self) -> str:
        return "no index yet: run `kb-mcp index` first"


class IndexNotReady(IndexNotFound):
    """The index exists but no run has yet finished phase one over the whole folder (the
    first run failed, was stopped, or is still parsing): an empty answer would be a lie.
    Ready means every file of the folder was searchable by keywords at least once."""

    code = "index_not_ready"

    def __init__(self, location: str) -> None:
        KbError.__init__(
            self, f"the index at {location} is not ready: no index run has finished "
            "reading the folder yet; run `kb-mcp index` (it completes what was left)")
        self.location = location

    @property
    def public_message(self) -> str:
        return ("the index is not ready: no index run has finished reading the folder yet; "
                "run `kb-mcp index` or call rebuild_index, then try again")


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


class EmbeddingUnreachable(EmbeddingUnavailable):
    """The embedding service does not answer, or stays overloaded past its retries. A
    search answers from keywords with a notice; an index run stops where it is and the
    next one continues (decision 0037)."""

    def __init__(self, detail: str, message: str | None = None) -> None:
        super().__init__(message or f"the embedding service cannot be reached ({detail})")
        self.detail = detail


class EmbeddingRejected(EmbeddingUnavailable):
    """The embedding service refused some texts of a batch even one at a time (HTTP 400,
    413, 422). ``vectors`` holds a vector per text asked for, None for each refused one;
    ``reasons`` maps a refused text's position to what the service said."""

    def __init__(self, vectors: list[list[float] | None], reasons: dict[int, str]) -> None:
        super().__init__(f"the embedding service refused {len(reasons)} of {len(vectors)} "
                         "texts")
        self.vectors = vectors
        self.reasons = reasons


class RerankerUnavailable(KbError):
    """The configured reranker cannot run: its package is missing, or its files are
    damaged; the message names the ``pip`` command that fixes it."""

    code = "reranker_unavailable"


class StoreError(KbError):
    code = "store_error"


class StoreUnreachable(StoreError):
    """The database server holding the index cannot be reached, or refuses the connection
    (down, wrong port, wrong password, no such database). The message names the server
    (password hidden) for the terminal and the server's log; a client of the server is
    told only that the store is unreachable."""

    PUBLIC = "the index store is unreachable; the details are in the kb-mcp server's log"

    @property
    def public_message(self) -> str:
        return self.PUBLIC


class StoreFailed(StoreError):
    """The database server holding the index refused or broke off a statement. The
    driver's words go to the terminal and the server's log; a client is told only that
    the store failed."""

    PUBLIC = "the index store failed; the details are in the kb-mcp server's log"

    @property
    def public_message(self) -> str:
        return self.PUBLIC


class StoreCorrupt(StoreError):
    """SQLite reports the index file as damaged; rebuilding it from the files is the fix."""

    code = "store_corrupt"

    def __init__(self, location: str, detail: str) -> None:
        super().__init__(
            f"the index store is damaged ({detail}); delete {location} and run "
            "`kb-mcp index` to rebuild it from your files"
        )
        self.location = location
        self.detail = detail

    @property
    def public_message(self) -> str:
        return (f"the index store is damaged ({self.detail}); delete the index database "
                "(index.db in the index folder) and run `kb-mcp index` to rebuild it")


class IndexUnwritable(StoreError):
    """A writer could not write in the index folder (a full disk, a quota, an I/O error)
    and stopped before it changed anything; the message names the folder, a client of
    the server is told only why."""

    def __init__(self, location: str, why: str, hint: str) -> None:
        super().__init__(f"cannot write the index at {location} ({why}): {hint}")
        self.location = location
        self.why = why
        self.hint = hint

    @property
    def public_message(self) -> str:
        return f"cannot write the index ({self.why}): {self.hint}"


class VectorsUnreadable(StoreError):
    """The vector data cannot be read (damaged files, a LanceDB panic). Search falls back
    to keywords; an index run rebuilds the vectors from the stored chunks."""

    code = "vectors_unreadable"

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"the stored vectors cannot be read ({detail}); run `kb-mcp index` to rebuild them"
        )
        self.detail = detail


class VectorsUnreachable(VectorsUnreadable):
    """The object store holding the vectors does not answer or refuses the credentials.
    Search falls back to keywords; nothing is rebuilt: the vectors are fine where they are."""

    code = "vectors_unreachable"

    def __init__(self, detail: str) -> None:
        StoreError.__init__(
            self, f"the vector store cannot be reached ({detail}); search uses keywords "
            "until it answers again")
        self.detail = detail


class WriterBusy(KbError):
    code = "writer_busy"


class ReadBusy(KbError):
    """A read that must convert a document (HTML, Office, EPUB, PDF) waited its deadline
    for one of the server's conversion slots; the client may try again shortly."""

    code = "server_busy"


class ParseError(KbError):
    code = "parse_error"


class InsufficientScope(KbError):
    """The OAuth access token of the call does not hold ``scope``, which ``tool`` needs."""

    code = "insufficient_scope"

    def __init__(self, tool: str, scope: str) -> None:
        super().__init__(f"{tool} needs an access token with the scope {scope!r}; this "
                         "token does not hold it (ask the identity provider for it)")
        self.tool = tool
        self.scope = scope


class PathRefused(KbError):
    """A read refused by the guard chain. ``reason`` never contains a server path; it is
    what a client is told. ``detail`` is why, for the server's log and the index run's
    warnings: the same as ``reason`` unless a subclass keeps it from clients."""

    code = "path_refused"

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path!r} refused: {reason}")
        self.path = path
        self.reason = reason

    @property
    def detail(self) -> str:
        return self.reason


class NoSuchDocument(PathRefused):
    """No document kb-mcp serves has that name: nothing by it, or something that is not
    served (a folder, a symbolic link on the way or at the end, a FIFO or device, a second
    hard link, a format that is not enabled, a file that cannot be opened). Every one of
    them answers the same ``reason``, so a client cannot tell ``.env`` or ``.git/config``
    that exist from names that do not; ``why`` (``detail``) says which, for the server's
    log and the index run's warnings only."""

    REASON = "no such document"

    def __init__(self, path: str, why: str = REASON) -> None:
        super().__init__(path, self.REASON)
        self.why = why

    @property
    def detail(self) -> str:
        return self.why


class NotOffered(PathRefused):
    """The index does not offer this document or topic (decision 0001). The wire code keeps
    its published spelling, ``not_servable``."""

    code = "not_servable"


class InvalidQuery(KbError):
    code = "invalid_argument"


class InvalidRange(InvalidQuery):
    """A ranged read asked for lines, a section or a page the document does not have.
    ``total_lines`` is the document's length in lines (None when not known)."""

    def __init__(self, message: str, total_lines: int | None = None) -> None:
        super().__init__(message)
        self.total_lines = total_lines


class UnknownCollection(InvalidQuery):
    """A call named collections the server does not serve (or named none while none is
    searched by default). ``unknown``: the names asked that do not exist; ``known``: the
    collections there are, in configured order. Never widened to all collections."""

    def __init__(self, unknown: Sequence[str], known: Sequence[str]) -> None:
        self.unknown = tuple(unknown)
        self.known = tuple(known)
        names = ", ".join(self.known) or "none"
        if not self.unknown:
            message = ("no collection is searched by default: name one or more with "
                       f"collection; the collections are: {names}")
        else:
            asked = ", ".join(repr(n) for n in self.unknown)
            noun = "collection" if len(self.unknown) == 1 else "collections"
            message = f"unknown {noun} {asked}; the collections are: {names}"
        super().__init__(message)
