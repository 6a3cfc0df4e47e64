"""In-memory fakes of the core ports, shared by unit tests (a contract test keeps them honest)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kbmcp_core.chunk_labels import ChunkLabels, LabelFilter
from kbmcp_core.cjk import is_cjk
from kbmcp_core.errors import NoSuchDocument, ParseError, StoreError, VectorsUnreadable
from kbmcp_core.fields import FieldValue
from kbmcp_core.index_deps import IndexDeps
from kbmcp_core.keyword_pool import KeywordHit, KeywordStatistics
from kbmcp_core.meta_keys import META_DIMENSION, META_LAST_RUN, META_MODEL
from kbmcp_core.models import (
    ChunkDraft,
    ChunkRecord,
    Consistency,
    DiskFile,
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
from kbmcp_core.ports import (
    ChunkBudget,
    Clock,
    ConvertedText,
    DocumentWrite,
    Embedder,
    FileSystem,
    HashNeeded,
    IndexReader,
    IndexStore,
    IndexWriter,
    Parser,
    ParserRegistry,
    Scanner,
    StoreDiagnostics,
    VectorStore,
    batch_paths,
)
from tests.hashing_embedder import HashingEmbedder


class FakeClock:
    def __init__(self) -> None:
        self.tick = 0

    def now_iso(self) -> str:
        self.tick += 1
        return f"2026-01-01T00:00:{self.tick:02d}Z"


class FakeEmbedder(HashingEmbedder):
    """The shared model-free embedder (``tests/hashing_embedder.py``, also the
    benchmarks' stand-in), 16 dimensions; counts every text it embeds."""

    def __init__(self, model_id: str = "fake-model") -> None:
        super().__init__(model_id=model_id, dimension=16, max_tokens=64)
        self.embedded: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.embedded.extend(texts)
        return super().embed_documents(texts)


class FakeParser:
    """'# heading' lines start chunks; 'title: X' on line 1 sets the title; 'FAIL' fails."""

    extensions: tuple[str, ...] = ("md",)

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        text = data.decode("utf-8")
        if "FAIL" in text:
            raise ParseError("cannot parse this file")
        lines = text.splitlines()
        title = path
        if lines and lines[0].startswith("title:"):
            title = lines[0][6:].strip()
            lines = lines[1:]
        chunks: list[ChunkDraft] = []
        heading, body = "", list[str]()
        for line in [*lines, "# <end>"]:
            if line.startswith("# "):
                if body:
                    chunks.append(ChunkDraft(len(chunks), heading, (heading,), "\n".join(body)))
                heading, body = line[2:], []
            elif line.strip():
                body.append(line)
        return ParsedDocument(title=title, chunks=tuple(chunks))

    def extract_text(self, path: str, data: bytes) -> str:
        return data.decode("utf-8")

    def headings(self, path: str, text: str) -> tuple[HeadingMark, ...]:
        """Each ``# `` line, as ``parse`` cuts sections at them."""
        return tuple(HeadingMark(n, 1, line[2:]) for n, line in
                     enumerate(text.split("\n"), 1) if line.startswith("# "))


class FakeRegistry:
    def __init__(self, parser: FakeParser | None = None) -> None:
        self.parser = parser or FakeParser()
        #: the parser generation every extension reports (raise it to "upgrade" the parser)
        self.generation = 1

    def extensions(self) -> frozenset[str]:
        return frozenset(self.parser.extensions)

    def conversion_versions(self) -> dict[str, int]:
        return dict.fromkeys(self.parser.extensions, self.generation)

    def parser_for(self, extension: str) -> FakeParser | None:
        return self.parser if extension in self.parser.extensions else None

    def supports(self, extension: str) -> bool:
        return extension in self.parser.extensions


class FakeOpenFile:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.size = len(data)

    def read(self, cap: int) -> bytes | None:
        return None if self.size > cap else self.data


class FakeFileSystem:
    """Files as a dict of path -> bytes."""

    def __init__(self, files: dict[str, bytes] | None = None) -> None:
        self.files: dict[str, bytes] = dict(files or {})
        self.reads: list[str] = []

    @contextmanager
    def open_file(self, rel_path: str) -> Iterator[FakeOpenFile]:
        self.reads.append(rel_path)
        if rel_path not in self.files:
            raise NoSuchDocument(rel_path)
        yield FakeOpenFile(self.files[rel_path])


class FakeScanner:
    def __init__(self, fs: FakeFileSystem, oversize: Mapping[str, int] | None = None) -> None:
        self.fs = fs
        self.oversize = dict(oversize or {})

    def scan_paths(self, paths: Collection[str], needs_hash: HashNeeded | None = None
                   ) -> DiskScan:
        full = self.scan(needs_hash)
        return DiskScan({p: f for p, f in full.files.items() if p in paths})

    def scan(self, needs_hash: HashNeeded | None = None) -> DiskScan:
        """Every file, hashed unless ``needs_hash`` says its hash is not needed (as the
        real walk, which then leaves it unread)."""
        files = {
            p: DiskFile(p, len(d), None if needs_hash is not None and not needs_hash(p, len(d))
                        else hashlib.sha256(d).hexdigest())
            for p, d in self.fs.files.items()
        }
        for p, size in self.oversize.items():
            files[p] = DiskFile(p, size, None, oversize=True)
        return DiskScan(files=files)


@dataclass
class _Doc:
    record: DocumentRecord
    id: int
    chunks: list[ChunkRecord] = field(default_factory=list)
    size_bytes: int | None = None


class FakeIndexStore:
    """Dictionary-backed IndexStore; counts document row writes."""

    #: as the real store: False unless this process may not write the index
    read_only = False

    def __init__(self) -> None:
        self.docs: dict[str, _Doc] = {}
        self.meta: dict[str, str] = {}
        #: converted texts by content hash, as the ``converted_text`` table
        self.conversions: dict[str, ConvertedText] = {}
        self.row_writes: list[str] = []
        self._next = 1

    def indexed_states(self) -> dict[str, IndexedState]:
        return {
            p: IndexedState(p, d.record.content_hash, d.size_bytes) for p, d in self.docs.items()
        }

    def write_document(
        self, document: DocumentRecord, chunks: Sequence[ChunkRecord], replaces: str | None = None
    ) -> list[int]:
        return self.write_documents([DocumentWrite(document, chunks, replaces)])

    def _write_one(
        self, document: DocumentRecord, chunks: Sequence[ChunkRecord], replaces: str | None
    ) -> list[int]:
        removed = self._delete([p for p in (document.path, replaces) if p])
        self.docs[document.path] = _Doc(document, self._next, list(chunks), document.size_bytes)
        self._next += 1
        self.row_writes.append(document.path)
        written = {c.id for c in chunks}
        return [cid for cid in removed if cid not in written]

    def write_documents(self, batch: Sequence[DocumentWrite]) -> list[int]:
        paths = batch_paths(batch)  # checked before anything is written: all or nothing
        held = {c.id for p, d in self.docs.items() if p not in paths for c in d.chunks}
        ids = [c.id for w in batch for c in w.chunks]
        if len(set(ids)) != len(ids) or held & set(ids):
            raise StoreError("index store error: UNIQUE constraint failed: chunks.id")
        removed: list[int] = []
        for w in batch:
            removed += self._write_one(w.document, w.chunks, w.replaces)
        self._keep([w.converted for w in batch if w.converted is not None
                    and w.converted.content_hash == w.document.content_hash])
        self._drop_unreferenced()
        written = {c.id for w in batch for c in w.chunks}
        return [cid for cid in removed if cid not in written]

    def update_document_metadata(
        self, document: DocumentRecord, converted: ConvertedText | None = None
    ) -> None:
        doc = self.docs.get(document.path)
        if doc is None:
            raise StoreError(f"no indexed document at {document.path!r} to update")
        doc.record, doc.size_bytes = document, document.size_bytes
        self.row_writes.append(document.path)
        if converted is not None and converted.content_hash == document.content_hash:
            self._keep([converted])
        self._drop_unreferenced()

    def delete_documents(self, paths: Iterable[str]) -> list[int]:
        removed = self._delete(paths)
        self._drop_unreferenced()
        return removed

    def replace_fields(self, by_path: Mapping[str, Sequence[FieldValue]] | None) -> int:
        if by_path is None:
            for doc in self.docs.values():
                doc.record = replace(doc.record, fields=())
            return 0
        found = [p for p in by_path if p in self.docs]
        for p in found:
            self.docs[p].record = replace(self.docs[p].record, fields=tuple(by_path[p]))
        return len(found)

    def keep_conversions(self, texts: Sequence[ConvertedText]) -> int:
        carried = {d.record.content_hash for d in self.docs.values()}
        return self._keep([t for t in texts if t.content_hash in carried])

    def converted_hashes(self, hashes: Collection[str]) -> set[str]:
        return set(hashes) & set(self.conversions)

    def converted_text(self, content_hash: str) -> ConvertedText | None:
        return self.conversions.get(content_hash)

    def _keep(self, texts: Sequence[ConvertedText]) -> int:
        self.conversions.update({t.content_hash: t for t in texts})
        return len({t.content_hash for t in texts})

    def _drop_unreferenced(self) -> None:
        carried = {d.record.content_hash for d in self.docs.values()}
        self.conversions = {h: t for h, t in self.conversions.items() if h in carried}

    def _delete(self, paths: Iterable[str]) -> list[int]:
        removed: list[int] = []
        for p in paths:
            doc = self.docs.pop(p, None)
            if doc:
                removed += [c.id for c in doc.chunks]
        return removed

    def backfill_sizes(self, sizes: Mapping[str, int]) -> int:
        n = 0
        for p, size in sizes.items():
            if p in self.docs and self.docs[p].size_bytes is None:
                self.docs[p].size_bytes = size
                n += 1
        return n

    def record_size(self, path: str, size: int) -> bool:
        if path not in self.docs:
            return False
        self.docs[path].size_bytes = size
        return True

    def chunk_hashes(self, hashes: Iterable[str]) -> dict[str, int]:
        wanted = set(hashes)
        return {c.text_hash: c.id for d in self.docs.values() for c in d.chunks
                if c.text_hash in wanted}

    def document_chunk_hashes(self, path: str) -> list[str] | None:
        doc = self.docs.get(path)
        if doc is None:
            return None
        return [c.text_hash for c in sorted(doc.chunks, key=lambda c: c.ordinal)]

    def chunks_of(self, paths: Collection[str]) -> dict[str, list[tuple[int, str]]]:
        return {p: [(c.id, c.text_hash) for c in sorted(d.chunks, key=lambda c: c.ordinal)]
                for p in paths if (d := self.docs.get(p)) is not None}

    def chunk_ids(self) -> set[int]:
        return {c.id for d in self.docs.values() for c in d.chunks}

    def prune_dangling(self) -> int:
        return 0  # a dictionary store cannot hold a row without its owner

    def get_meta(self, key: str) -> str | None:
        return self.meta.get(key)

    def set_meta(self, key: str, value: str) -> None:
        self.meta[key] = value

    def stats(self) -> IndexStats:
        last = self.meta.get(META_LAST_RUN)
        dimension = self.meta.get(META_DIMENSION)
        return IndexStats(len(self.docs), len(self.chunk_ids()), self.meta.get(META_MODEL),
                          int(dimension) if dimension and dimension.isdigit() else None,
                          json.loads(last) if last else None, "fake")

    def _stored(self, d: _Doc) -> StoredDocument:
        r = d.record
        return StoredDocument(d.id, r.path, r.title, r.content_hash, d.size_bytes, r.date,
                              r.topic, r.category, r.tags, r.metadata, r.last_indexed)

    def get_document(self, path: str) -> StoredDocument | None:
        d = self.docs.get(path)
        return None if d is None else self._stored(d)

    def documents(self, paths: Collection[str] | None = None) -> list[StoredDocument]:
        return [self._stored(d) for p, d in sorted(self.docs.items())
                if paths is None or p in paths]

    def document_paths(self) -> list[str]:
        return sorted(self.docs)

    def sizes_over(self, min_bytes: int) -> list[tuple[str, int]]:
        return [(p, d.size_bytes) for p, d in sorted(self.docs.items())
                if d.size_bytes is not None and d.size_bytes > min_bytes]

    def get_chunks(self, ids: Collection[int]) -> dict[int, StoredChunk]:
        out: dict[int, StoredChunk] = {}
        for d in self.docs.values():
            r = d.record
            for c in d.chunks:
                if c.id in ids:
                    out[c.id] = StoredChunk(c.id, r.path, r.title, c.heading, c.heading_path,
                                            c.content, c.start_line, c.end_line, c.page, r.tags,
                                            r.date, r.topic, r.category)
        return out

    def chunk_ids_for(self, paths: Collection[str]) -> list[int]:
        return [c.id for p in paths if p in self.docs for c in self.docs[p].chunks]

    def chunk_ids_by_path(self, paths: Collection[str] | None = None) -> dict[str, list[int]]:
        return {p: [c.id for c in d.chunks] for p, d in self.docs.items()
                if paths is None or p in paths}

    def matching_paths(self, spec: DocumentFilter) -> set[str]:
        return {d.path for d in self.documents()
                if spec.matches(d, self.docs[d.path].record.fields)}

    def chunk_windows(self, ids: Collection[int], radius: int) -> dict[int, list[StoredChunk]]:
        out: dict[int, list[StoredChunk]] = {}
        for d in self.docs.values():
            ordered = sorted(d.chunks, key=lambda c: c.ordinal)
            for c in ordered:
                if c.id in ids:
                    near = [n.id for n in ordered if abs(n.ordinal - c.ordinal) <= radius]
                    found = self.get_chunks(near)
                    out[c.id] = [found[i] for i in near]
        return out

    def lexical_search(self, query: str, limit: int,
                       document_paths: Collection[str] | None = None) -> list[tuple[int, float]]:
        if limit <= 0:
            return []
        words = set(re.findall(r"\w+", query.lower()))
        phrases = [p for p in re.findall(r'"([^"]*)"', query) if re.search(r"\w", p)
                   ] if query.count('"') % 2 == 0 else []
        scored = []
        for p, d in self.docs.items():
            if document_paths is not None and p not in document_paths:
                continue
            for c in d.chunks:  # title, heading and body, as the real lexical rows
                text = f"{d.record.title} {c.heading} {c.content}".lower()
                overlap = len(words & set(re.findall(r"\w+", text)))
                if overlap and all(_holds(text, phrase) for phrase in phrases):
                    scored.append((c.id, overlap / len(words)))
        return sorted(scored, key=lambda x: -x[1])[:limit]

    def keyword_statistics(self, query: str, document_paths: Collection[str] | None = None,
                           *, presence: bool = False) -> KeywordStatistics:
        """None to pool: the fake's relevance (the share of the query's words a chunk
        holds) depends on the chunk alone."""
        return KeywordStatistics(len(self.chunk_ids()))

    def keyword_hits(self, query: str, limit: int, document_paths: Collection[str] | None,
                     statistics: KeywordStatistics) -> list[KeywordHit]:
        return [KeywordHit(cid, None, score)
                for cid, score in self.lexical_search(query, limit, document_paths)]

    def paths_containing(self, terms: Collection[str]) -> set[str]:
        """Documents whose title, heading or text holds a term: its words in a row (no
        stemming: the fake's lexical leg compares whole words), CJK text as a substring."""
        return {p for term in terms for p, d in self.docs.items()
                if any(_holds(f"{d.record.title} {c.heading} {c.content}", term)
                       for c in d.chunks)}

    def consistency(self) -> Consistency:
        chunk_ids = frozenset(self.chunk_ids())
        return Consistency(
            chunk_ids=chunk_ids,
            lexical_ids=chunk_ids,  # the fake's lexical index is the chunks themselves
            chunks_without_document=(),
            documents_without_chunks=tuple(p for p, d in sorted(self.docs.items())
                                           if not d.chunks),
            null_size_paths=tuple(p for p, d in sorted(self.docs.items())
                                  if d.size_bytes is None),
            schema_revision="fake",
            head_revision="fake",
        )

    def has_integrity_check(self) -> bool:
        return True

    def quick_check(self, budget_s: float) -> list[str] | None:
        return []

    def close(self) -> None:
        return None


def _holds(text: str, term: str) -> bool:
    """Whether ``text`` holds ``term``: CJK as a substring, else its words in a row."""
    text, term = text.lower(), term.lower()
    if any(is_cjk(ch) for ch in term):
        return " ".join(term.split()) in text
    words, held = re.findall(r"\w+", term), re.findall(r"\w+", text)
    return bool(words) and any(held[i:i + len(words)] == words for i in range(len(held)))


class FakeVectorStore:
    def __init__(self) -> None:
        self.rows: dict[int, Vector] = {}
        #: ids ``append`` was given while the store held them: the real store then holds
        #: two rows for the id (``count`` counts both, ``ids`` names it once)
        self.doubled: list[int] = []
        #: how many writes went through ``add`` (an upsert) and ``append``
        self.upserts = 0
        self.appends = 0
        #: bumped by every change, like the real store's file fingerprint
        self.generation = 0
        #: set to make every read fail as damaged LanceDB files do
        self.unreadable = False
        #: each labelled chunk's labels (``append``/``add`` with labels, ``relabel``), and
        #: how many chunks ``relabel`` changed
        self.labels: dict[int, ChunkLabels] = {}
        self.relabelled = 0

    def fingerprint(self) -> str | None:
        return f"gen-{self.generation}" if self.rows or self.generation else "absent"

    def _check(self) -> None:
        if self.unreadable:
            raise VectorsUnreadable("could not read vectors: damaged")

    def _label(self, ids: Sequence[int], labels: Sequence[ChunkLabels] | None) -> None:
        if labels is None:
            for i in ids:
                self.labels.pop(i, None)
        else:
            self.labels.update(zip(ids, labels, strict=True))

    def add(self, ids: Sequence[int], vectors: Sequence[Vector],
            labels: Sequence[ChunkLabels] | None = None) -> None:
        self.rows.update(zip(ids, vectors, strict=True))
        self._label(ids, labels)
        self.upserts += 1
        self.generation += 1

    def append(self, ids: Sequence[int], vectors: Sequence[Vector],
               labels: Sequence[ChunkLabels] | None = None) -> None:
        given = dict(zip(ids, vectors, strict=True))
        self.doubled += [i for i in given if i in self.rows]
        self.rows.update(given)
        self._label(ids, labels)
        self.appends += 1
        self.generation += 1

    def relabel(self, labels: Mapping[int, ChunkLabels]) -> None:
        self.labels.update({i: v for i, v in labels.items() if i in self.rows})
        self.relabelled += len([i for i in labels if i in self.rows])
        self.generation += 1

    def labelled(self) -> bool:
        return not self.unreadable and all(i in self.labels for i in self.rows)

    def get(self, ids: Collection[int]) -> dict[int, Vector]:
        self._check()
        return {i: self.rows[i] for i in ids if i in self.rows}

    def delete(self, ids: Collection[int]) -> None:
        for i in ids:
            self.rows.pop(i, None)
            self.labels.pop(i, None)
        self.doubled = [i for i in self.doubled if i not in ids]
        self.generation += 1

    def ids(self) -> set[int]:
        self._check()
        return set(self.rows)

    def count(self) -> int:
        self._check()
        return len(self.rows) + len(self.doubled)

    def search_labelled(self, vector: Vector, limit: int, where: LabelFilter
                        ) -> list[tuple[int, float]] | None:
        if not self.labelled():
            return None
        return self.search(vector, limit, {i for i in self.rows
                                           if where.matches(self.labels[i])})

    def search(self, vector: Vector, limit: int,
               allowed_ids: Collection[int] | None = None) -> list[tuple[int, float]]:
        self._check()
        scored = [(i, sum(a * b for a, b in zip(vector, v, strict=True)))
                  for i, v in self.rows.items() if allowed_ids is None or i in allowed_ids]
        return sorted(scored, key=lambda x: -x[1])[:limit]

    def reset(self) -> None:
        self.rows.clear()
        self.labels.clear()
        self.doubled.clear()
        self.unreadable = False
        self.generation += 1

    def compact(self) -> None:
        return None


def with_size(record: DocumentRecord, size: int) -> DocumentRecord:
    return replace(record, size_bytes=size)


def fake_deps(
    fs: FakeFileSystem,
    *,
    embedder: Embedder | None = None,
    store: FakeIndexStore | None = None,
    vectors: VectorStore | None = None,
    max_tokens: int = 64,
    batch_size: int = 32,
) -> IndexDeps:
    """An index run's adapters, all fakes over ``fs``: chunks of at most ``max_tokens``
    words, ``batch_size`` chunks per embedding call."""
    return IndexDeps(
        store=FakeIndexStore() if store is None else store,
        vectors=FakeVectorStore() if vectors is None else vectors,
        embedder=FakeEmbedder() if embedder is None else embedder, registry=FakeRegistry(), fs=fs,
        scanner=FakeScanner(fs), clock=FakeClock(),
        budget=ChunkBudget(max_tokens, 1, lambda t: len(t.split())), batch_size=batch_size,
    )


if TYPE_CHECKING:  # mypy checks every fake against the port it stands in for
    _clock: Clock = FakeClock()
    _embedder: Embedder = FakeEmbedder()
    _parser: Parser = FakeParser()
    _registry: ParserRegistry = FakeRegistry()
    _fs: FileSystem = FakeFileSystem()
    _scanner: Scanner = FakeScanner(FakeFileSystem())
    _store: IndexStore = FakeIndexStore()
    _writer: IndexWriter = FakeIndexStore()
    _reader: IndexReader = FakeIndexStore()
    _diagnostics: StoreDiagnostics = FakeIndexStore()
    _vectors: VectorStore = FakeVectorStore()
