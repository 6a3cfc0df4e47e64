"""Ports: the interfaces the core needs from the outside world, in core types only."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from kbmcp_core.chunk_labels import ChunkLabels, LabelFilter
from kbmcp_core.fields import FieldValue
from kbmcp_core.keyword_pool import KeywordHit, KeywordStatistics
from kbmcp_core.models import (
    ChunkRecord,
    Consistency,
    DiskScan,
    DocumentFilter,
    DocumentRecord,
    IndexedState,
    IndexStats,
    ParsedDocument,
    StoredChunk,
    StoredDocument,
    Vector,
)
from kbmcp_core.outline import HeadingMark

A = TypeVar("A")
B = TypeVar("B")


class SideBySide(Protocol):
    """Runs two independent calls at once (a hybrid search's two legs, decision 0058)."""

    def both(self, first: Callable[[], A], second: Callable[[], B]) -> tuple[A, B]:
        """``first()`` and ``second()``, perhaps at the same time on two threads; both
        have ended when this returns. An exception of either is raised as it is (the
        first's when both fail)."""
        ...


class Clock(Protocol):
    def now_iso(self) -> str:
        """Current UTC time as ISO-8601 with seconds, e.g. 2026-11-29T13:37:00Z."""
        ...


class Embedder(Protocol):
    """Turns text into unit-length vectors. Loading may be lazy."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    @property
    def max_tokens(self) -> int:
        """The model's token window: longer inputs would be truncated."""
        ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Token counts including special tokens, without truncation."""
        ...

    def coverage(self, text: str) -> float:
        """How much of ``text`` the model can read: the share of its tokens that are not
        the unknown token (1.0 for a model with no unknown token). Search weighs the
        vector leg by it, so an English-only model does not add noise to Japanese."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]: ...

    def embed_query(self, text: str) -> Vector: ...


#: Character ranges of one text read together as one part, ``(start, end)`` pairs: the last
#: is the part itself, any before it the context it is read with (a heading trail).
SpanGroup = Sequence[tuple[int, int]]


@runtime_checkable
class SpanEmbedder(Protocol):
    """An embedder that can also read parts of a text in the context of the whole (decision
    0028, addendum of session 11): one model run over the text, and for each group of
    character ranges the vector of those characters' tokens as the run read them, pooled
    as the text's own vector is. Nothing is embedded twice, so a chunk's paragraphs cost
    what the chunk costs."""

    def embed_spans(self, items: Sequence[tuple[str, Sequence[SpanGroup]]],
                    ) -> list[list[Vector | None]] | None:
        """For each ``(text, groups)``, one vector per group (None for a group none of whose
        characters the model read: past its window). None when this embedder cannot read
        parts (its pooling is not a mean of tokens, or it stands for several models)."""
        ...


@dataclass(frozen=True, slots=True)
class ChunkBudget:
    """How large a chunk may be, measured by the embedder's own tokenizer."""

    max_tokens: int
    min_tokens: int
    counter: TokenCounter


class TokenCounter(Protocol):
    def __call__(self, text: str) -> int: ...


class Parser(Protocol):
    """Parses one format. Raises ``ParseError`` for a file it cannot use."""

    extensions: tuple[str, ...]

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument: ...

    def extract_text(self, path: str, data: bytes) -> str:
        """The text served to clients for this file."""
        ...

    def headings(self, path: str, text: str) -> Sequence[HeadingMark] | None:
        """The headings of ``text`` (what a read of this file serves), found as an index
        run finds them, in document order: the structure a section read cuts. () for a
        text with none; None for a format whose outline is not in its text (PDF: pages,
        from the index). Raises ``ParseError`` as ``parse`` would."""
        ...


class ParserRegistry(Protocol):
    def extensions(self) -> frozenset[str]: ...

    def parser_for(self, extension: str) -> Parser | None: ...

    def supports(self, extension: str) -> bool:
        """True when kb-mcp has a format for ``extension``, enabled or not: a read of a
        file without a parser then says the format is not enabled, else that kb-mcp does
        not read it (never suggesting to enable what cannot be)."""
        ...

    def conversion_versions(self) -> Mapping[str, int]:
        """Per enabled extension, the generation of what its parser makes of a file (its
        text, headings, chunks): a number that changes whenever that output changes, so an
        index run reads again the unchanged documents an older parser converted."""
        ...


class OpenFile(Protocol):
    """One document held open: every fact and every byte comes from this one handle."""

    @property
    def size(self) -> int:
        """Its size by ``fstat`` on the handle."""
        ...

    def read(self, cap: int) -> bytes | None:
        """At most ``cap`` bytes, or None when the file is larger than ``cap`` (nothing is
        read when the size already says so). Raises ``PathRefused`` on an I/O error."""
        ...


class FileSystem(Protocol):
    """Read-only access to documents under the knowledge-base root, bound to it by
    construction: the root is opened once, each folder on a path is opened relative to
    the one before it without following a link, and so is the file itself."""

    def open_file(self, rel_path: str) -> AbstractContextManager[OpenFile]:
        """Open ``rel_path`` (a clean relative POSIX path). Raises ``PathRefused`` when a
        folder on the way or the file is a symbolic link, when it is missing, a folder, a
        special file (FIFOs never block) or has more than one hard link, or on I/O errors.
        """
        ...


class ExclusionPolicy(Protocol):
    """The single answer to "is this path excluded from indexing"."""

    def is_excluded(self, rel_path: str, is_dir: bool = False) -> bool: ...

    def reason(self, rel_path: str, is_dir: bool = False) -> str | None:
        """Why the path is excluded (the skip reason the walk counts it under), or None."""
        ...


#: ``needs_hash(path, size)``: whether an index run's plan needs the content hash of the
#: file at ``path`` holding ``size`` bytes (``index_plan.hash_needed``). A scanner leaves
#: a file it says no to unread (``DiskFile.content_hash`` None): the run's read of it is
#: then its only one.
HashNeeded = Callable[[str, int], bool]


class Scanner(Protocol):
    def scan(self, needs_hash: HashNeeded | None = None) -> DiskScan:
        """Walk the whole knowledge base (hashing every file unless ``needs_hash`` says
        which)."""
        ...

    def scan_paths(self, paths: Collection[str], needs_hash: HashNeeded | None = None
                   ) -> DiskScan:
        """Classify just these paths (files, or folders to walk) with the same rules."""
        ...


class IndexMeta(Protocol):
    """Small key/value facts kept with the index (model id, run markers)."""

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...


@dataclass(frozen=True, slots=True)
class ConvertedText:
    """The text a read serves for a converted document (HTML, Office, EPUB, PDF), made by
    the index run that parsed it and kept with the index. Keyed by ``content_hash``, the
    sha256 of the exact bytes it was made from: it is served only for those bytes
    (docs/decisions/0023)."""

    content_hash: str
    #: what a read serves: the conversion, cut at the read cap of extracted text
    text: str
    #: characters in the whole conversion; more than ``len(text)`` when it was cut
    chars: int

    @property
    def truncated(self) -> bool:
        return len(self.text) < self.chars


class ConvertedTexts(Protocol):
    """Where a read looks for the text an index run already converted."""

    def converted_text(self, content_hash: str) -> ConvertedText | None:
        """The conversion of the bytes whose sha256 is ``content_hash``, or None."""
        ...


@dataclass(frozen=True, slots=True)
class DocumentWrite:
    """One document of a ``write_documents`` batch: its row, its chunks, the path it was
    renamed from (whose rows it replaces), if any, and its converted text, if it has one."""

    document: DocumentRecord
    chunks: Sequence[ChunkRecord]
    replaces: str | None = None
    converted: ConvertedText | None = None


def batch_paths(batch: Sequence[DocumentWrite]) -> set[str]:
    """Every path a ``write_documents`` batch replaces; ``ValueError`` when one appears
    twice (the order of the two writes would then decide what is left)."""
    paths: set[str] = set()
    for write in batch:
        for path in {write.document.path, write.replaces or write.document.path}:
            if path in paths:
                raise ValueError(f"{path!r} appears twice in one write batch")
            paths.add(path)
    return paths


class DocumentRows(Protocol):
    """The write port of the document rows: each write replaces a document's row with its
    chunks, lexical rows and field rows in one transaction (the chunk and lexical rows are
    never written apart from their document's)."""

    def write_documents(self, batch: Sequence[DocumentWrite]) -> list[int]:
        """Write a batch of documents in one transaction: all of them or, on any error,
        none. Each replaces the rows at its path (and at ``replaces``) with its document,
        chunks, lexical rows and field rows (``DocumentRecord.fields``), exactly as
        ``write_document`` would one by one, and keeps
        its ``converted`` text; a converted text no document's hash refers to any more is
        removed in the same transaction. No path may appear twice in a batch (as a
        document or a ``replaces``): ``ValueError``.
        Returns the ids of chunks that existed before and are gone now."""
        ...

    def write_document(
        self,
        document: DocumentRecord,
        chunks: Sequence[ChunkRecord],
        replaces: str | None = None,
    ) -> list[int]:
        """Atomically replace the rows at ``document.path`` (and at ``replaces``, a
        renamed-from path) with this document, its chunks and their lexical rows.
        Returns the ids of chunks that were removed."""
        ...

    def update_document_metadata(
        self, document: DocumentRecord, converted: ConvertedText | None = None
    ) -> None:
        """Rewrite only the document row (title, tags, size, hash, ...), its field rows and
        its lexical rows; keep ``converted`` and drop converted texts no document refers to
        any more, in the same transaction."""
        ...

    def delete_documents(self, paths: Iterable[str]) -> list[int]:
        """Remove documents with their chunks and lexical rows, and the converted texts no
        remaining document refers to; returns chunk ids."""
        ...

    def backfill_sizes(self, sizes: Mapping[str, int]) -> int:
        """Set size_bytes only where it is NULL. Returns rows changed."""
        ...

    def record_size(self, path: str, size: int) -> bool:
        """Overwrite the recorded size of an existing row (oversize refusal)."""
        ...


class FieldRows(IndexMeta, Protocol):
    """The declared-field rows, rewritten apart from the documents when the declarations
    they were made for (a meta marker) change (``field_index.sync_fields``)."""

    def documents(self, paths: Collection[str] | None = None) -> list[StoredDocument]:
        """Every document row, or only those at ``paths``, sorted by path."""
        ...

    def replace_fields(self, by_path: Mapping[str, Sequence[FieldValue]] | None) -> int:
        """Rewrite the declared-field rows (``DocumentRecord.fields``) of the documents at
        these paths, in one transaction, leaving every other row alone; None drops every
        field row. Returns how many of the paths were indexed documents."""
        ...


class ChunkRows(Protocol):
    """What an index run reuses of the chunks already stored: their hashes (a chunk whose
    text did not change keeps its vector) and the rows themselves."""

    def chunk_hashes(self, hashes: Iterable[str]) -> dict[str, int]:
        """Map chunk text hashes (``ChunkRecord.text_hash``) to an existing chunk id
        carrying that hash."""
        ...

    def document_chunk_hashes(self, path: str) -> list[str] | None:
        """Hashes of the document's chunks in ordinal order; None when not indexed."""
        ...

    def chunks_of(self, paths: Collection[str]) -> dict[str, list[tuple[int, str]]]:
        """(id, text hash) of each indexed document's chunks in ordinal order, by path, in
        one look-up; a path not indexed is absent, one without chunks maps to []."""
        ...

    def chunk_ids(self) -> set[int]: ...

    def get_chunks(self, ids: Collection[int]) -> dict[int, StoredChunk]: ...

    def chunk_ids_by_path(self, paths: Collection[str] | None = None) -> dict[str, list[int]]:
        """Each document's chunk ids, of every document or of those at ``paths``."""
        ...


class ConversionRows(Protocol):
    """The converted texts kept with the index apart from a document write."""

    def keep_conversions(self, texts: Sequence[ConvertedText]) -> int:
        """Keep (or replace) these converted texts, each only while a document carries its
        hash (one no document carries is not kept); returns how many were kept."""
        ...

    def converted_hashes(self, hashes: Collection[str]) -> set[str]:
        """Which of ``hashes`` have a converted text kept."""
        ...


class RunBookkeeping(IndexMeta, Protocol):
    """An index run's own state: what is indexed (hash and size per path), its meta
    markers, and the sweep of rows left dangling."""

    def indexed_states(self) -> dict[str, IndexedState]: ...

    def prune_dangling(self) -> int:
        """Remove lexical rows and chunks whose owner is gone, and converted texts no
        document refers to; returns rows removed."""
        ...


class IndexWriter(DocumentRows, FieldRows, ChunkRows, ConversionRows, RunBookkeeping,
                  Protocol):
    """What an index run needs: every write port above, as the read side is
    ``IndexReader`` of ``DocumentCatalog`` and ``ConvertedTexts``. A module that needs
    less names the smaller port."""


class DocumentCatalog(Protocol):
    """The indexed documents as rows: what OfferRules decides from."""

    def get_document(self, path: str) -> StoredDocument | None: ...

    def documents(self, paths: Collection[str] | None = None) -> list[StoredDocument]:
        """Every document row, or only those at ``paths``, sorted by path."""
        ...

    def document_paths(self) -> list[str]: ...

    def sizes_over(self, min_bytes: int) -> list[tuple[str, int]]:
        """(path, size_bytes) of rows whose recorded size exceeds ``min_bytes``."""
        ...


class IndexReader(DocumentCatalog, ConvertedTexts, Protocol):
    """What search and the facade read: documents, chunks, the lexical leg, counts, and
    the converted texts a read serves."""

    def get_meta(self, key: str) -> str | None: ...

    def stats(self) -> IndexStats: ...

    def get_chunks(self, ids: Collection[int]) -> dict[int, StoredChunk]: ...

    def chunk_ids_for(self, paths: Collection[str]) -> list[int]:
        """Ids of every chunk of the given documents."""
        ...

    def matching_paths(self, spec: DocumentFilter) -> set[str]:
        """Paths of the documents ``spec`` keeps (``DocumentFilter.matches``), decided by
        the store without handing every document row over."""
        ...

    def lexical_search(
        self, query: str, limit: int, document_paths: Collection[str] | None = None
    ) -> list[tuple[int, float]]:
        """(chunk id, relevance in [0, 1]) best first, for arbitrary user text; never
        raises on query syntax. 1.0 means "the best match of this query, containing all
        of it". ``document_paths`` restricts the search when given."""
        ...

    def keyword_statistics(self, query: str, document_paths: Collection[str] | None = None,
                           *, presence: bool = False) -> KeywordStatistics:
        """The counts this store's keyword leg scores ``query`` on (chunks, and the chunks
        holding each term), for a joint search to pool over several stores (0052).
        ``presence``: only which terms some chunk holds matters (``low_confidence``'s
        unseen words): a held term counts at least 1, not necessarily how many hold it,
        which a store may answer with the first match instead of counting them all."""
        ...

    def keyword_hits(self, query: str, limit: int, document_paths: Collection[str] | None,
                     statistics: KeywordStatistics) -> list[KeywordHit]:
        """The keyword leg's candidates scored on ``statistics`` (pooled over several
        stores) rather than this store's own, not yet relative to any best:
        ``keyword_pool.pooled_relevance`` of every store's hits is what ``lexical_search``
        of one store holding all their chunks returns."""
        ...

    def paths_containing(self, terms: Collection[str]) -> set[str]:
        """Paths of the documents holding any of ``terms`` in a chunk's title, heading
        trail or text, as the lexical leg matches them (words by their stem, several words
        as a phrase, CJK text as a substring): what a query's ``-term`` leaves out of both
        legs (``query_syntax``)."""
        ...

    def chunk_windows(self, ids: Collection[int], radius: int) -> dict[int, list[StoredChunk]]:
        """For each chunk id: the chunks of its document whose position (ordinal) is
        within ``radius`` of its own, itself included, in document order. Unknown ids
        are left out."""
        ...


class StoreDiagnostics(Protocol):
    """What doctor needs: raw consistency facts and the store's own integrity check."""

    def stats(self) -> IndexStats: ...

    def document_paths(self) -> list[str]: ...

    def sizes_over(self, min_bytes: int) -> list[tuple[str, int]]: ...

    def get_chunks(self, ids: Collection[int]) -> dict[int, StoredChunk]:
        """The chunks of ``ids`` that exist (doctor names their files in its samples)."""
        ...

    def consistency(self) -> Consistency:
        """Raw facts for doctor: chunk and lexical ids, dangling rows, NULL sizes, schema."""
        ...

    def has_integrity_check(self) -> bool:
        """False when the store has no integrity check for kb-mcp to run (a database
        server that guards its own pages): doctor then reports it as not applicable."""
        ...

    def quick_check(self, budget_s: float) -> list[str] | None:
        """The store's own integrity check, stopped after ``budget_s`` seconds: [] when
        healthy, the problems found, or None when it did not finish in time."""
        ...


class IndexStore(IndexWriter, IndexReader, StoreDiagnostics, Protocol):
    """The source of truth: one object (the composition root holds it) that plays every
    role above; core modules name only the narrow port they use."""

    def close(self) -> None: ...


class Reranker(Protocol):
    """Scores (query, passage) pairs together, as a cross-encoder does."""

    @property
    def model_id(self) -> str: ...

    def coverage(self, text: str) -> float:
        """How much of ``text`` the model can read, from 0 to 1 (as ``Embedder.coverage``):
        search lets the reranker reorder a query only as far as it can read it."""
        ...

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in the passages' order: the probability, from 0 to 1,
        that the passage answers the query (a cross-encoder's sigmoid). Search trusts the
        order these scores give as far as the best of them is confident."""
        ...


class VectorReader(Protocol):
    """Chunk vectors read by chunk id and by nearness: what search, diversity, neighbours
    and doctor need. A joint view of several collections plays only this role."""

    def get(self, ids: Collection[int]) -> dict[int, Vector]: ...

    def ids(self) -> set[int]: ...

    def count(self) -> int: ...

    def search(
        self, vector: Vector, limit: int, allowed_ids: Collection[int] | None = None
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) best first."""
        ...

    def search_labelled(self, vector: Vector, limit: int, where: LabelFilter
                        ) -> list[tuple[int, float]] | None:
        """As ``search``, among the chunks whose labels pass ``where`` (filtered before
        ``limit``); None when the store is not ``labelled`` (the caller then filters by
        the allowed ids)."""
        ...

    def labelled(self) -> bool:
        """Whether every stored vector carries its chunk's labels, so ``search_labelled``
        can filter by them (decision 0058's addendum). False for vectors written without them (a
        store made before labels existed, until an index run gives them), and when the
        store cannot be read (the search that follows reports that)."""
        ...

    def fingerprint(self) -> str | None:
        """A cheap token of the stored data (no store opened) that changes whenever the
        vectors change on disk; None when it cannot be told cheaply."""
        ...


class VectorWriter(Protocol):
    """The writes an index run (and an index copy) makes to the chunk vectors."""

    def add(self, ids: Sequence[int], vectors: Sequence[Vector],
            labels: Sequence[ChunkLabels] | None = None) -> None:
        """Insert or replace: an id the store holds gets the new vector (and the labels,
        one per id; without them the rows carry none and the store is not ``labelled``)."""
        ...

    def append(self, ids: Sequence[int], vectors: Sequence[Vector],
               labels: Sequence[ChunkLabels] | None = None) -> None:
        """Insert vectors for ids the store does not hold yet, which the caller knows (ids
        it has just made, or read as missing while it holds the writer lock). Cheaper
        than ``add`` on a large store (no lookup of the ids); an id the store already
        holds would be stored twice, so wherever an id may exist, use ``add``. ``labels``
        as for ``add``."""
        ...

    def relabel(self, labels: Mapping[int, ChunkLabels]) -> None:
        """Give these stored chunks new labels, their vectors unchanged (a document whose
        metadata alone changed; every chunk of a store written before labels existed).
        An id the store does not hold is left out."""
        ...

    def delete(self, ids: Collection[int]) -> None: ...

    def reset(self) -> None:
        """Drop every vector (a forced rebuild or a model change)."""
        ...

    def compact(self) -> None:
        """Fold small writes together and drop old versions (end of a run)."""
        ...


class VectorStore(VectorReader, VectorWriter, Protocol):
    """Chunk vectors keyed by chunk id, both halves: one object (the composition root holds
    it); core modules name only the half they use. SQLite stays the source of truth."""
