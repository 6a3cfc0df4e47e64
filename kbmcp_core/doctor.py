"""``kb-mcp doctor``: read-only checks of what the index knows about itself."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal

from kbmcp_core.errors import KbError, StoreCorrupt, VectorsUnreachable, VectorsUnreadable
from kbmcp_core.models import extension_of
from kbmcp_core.ports import ParserRegistry, StoreDiagnostics, VectorReader
from kbmcp_core.reading import RANGED_READ_CAP, readable_bytes_for

Severity = Literal["error", "warning", "info"]
SAMPLES = 5
#: The store's integrity check stops after this long (about 0.2 s per 150 MB of index
#: when the file is in the page cache, 1.5 s when it is not: docs/behaviour.md).
CHECK_BUDGET_S = 20.0


@dataclass(frozen=True, slots=True)
class CheckInfo:
    id: str
    severity: Severity
    what: str


#: Every check doctor runs, in order (also rendered into `kb-mcp doctor --help`).
CHECKS: tuple[CheckInfo, ...] = (
    CheckInfo("store-corrupt", "error",
              "the index database fails SQLite's integrity check (damaged file)"),
    CheckInfo("index-incomplete", "error",
              "no index run has finished reading the folder yet (search answers "
              "index_not_ready)"),
    CheckInfo("vectors-unreadable", "error",
              "the vector files cannot be read (search falls back to keywords)"),
    CheckInfo("missing-vector", "error", "a chunk has no vector (the vector leg cannot find it)"),
    CheckInfo("orphan-vector", "warning", "a vector has no chunk (ignored by search)"),
    CheckInfo("missing-lexical-row", "error", "a chunk has no lexical row (BM25 cannot find it)"),
    CheckInfo("orphan-lexical-row", "warning", "a lexical row has no chunk"),
    CheckInfo("chunk-without-document", "error", "a chunk points at a missing document"),
    CheckInfo("document-without-chunks", "warning", "a document has no chunks to search"),
    CheckInfo("model-mismatch", "error", "the index was built with another embedding model"),
    CheckInfo("schema-behind", "error", "the index schema is older than this kb-mcp"),
    CheckInfo("copy-unfinished", "error",
              "a `kb-mcp migrate-store` copy into this index has not finished"),
    CheckInfo("reranker-unavailable", "error",
              "[search].rerank is on but the cross-encoder's package is missing or damaged"),
    CheckInfo("extension-not-enabled", "warning",
              "indexed documents whose format is no longer in [parsers].enabled"),
    CheckInfo("larger-than-read-cap", "warning",
              "documents searchable but too large to be offered or read"),
    CheckInfo("size-not-recorded", "info", "documents indexed before sizes were recorded"),
)
_BY_ID = {c.id: c for c in CHECKS}


@dataclass(frozen=True, slots=True)
class Finding:
    check: str
    severity: Severity
    summary: str
    count: int
    samples: tuple[str, ...]
    remedy: str

    def as_dict(self) -> dict[str, object]:
        return {
            "check": self.check,
            "severity": self.severity,
            "summary": self.summary,
            "count": self.count,
            "samples": list(self.samples),
            "remedy": self.remedy,
        }


StoreCheck = Literal["ok", "damaged", "unfinished", "not applicable"]


@dataclass(frozen=True, slots=True)
class DoctorReport:
    documents: int
    chunks: int
    findings: tuple[Finding, ...] = field(default_factory=tuple)
    #: the integrity check's outcome; "unfinished" when it ran out of CHECK_BUDGET_S
    store_check: StoreCheck = "ok"

    @property
    def healthy(self) -> bool:
        return not self.findings

    def as_dict(self) -> dict[str, object]:
        return {
            "documents": self.documents,
            "chunks": self.chunks,
            "store_check": self.store_check,
            "findings": [f.as_dict() for f in self.findings],
        }


def _finding(check: str, items: Sequence[object], summary: str, remedy: str) -> Finding:
    info = _BY_ID[check]
    return Finding(check, info.severity, summary.format(n=len(items)), len(items),
                   tuple(str(i) for i in list(items)[:SAMPLES]), remedy)


def chunk_samples(store: StoreDiagnostics, ids: Sequence[int]) -> tuple[str, ...]:
    """Each chunk as the file and lines (or page) it came from, ``guides/keys.md L10-24``;
    a chunk that no longer exists, or whose document is gone, says so instead."""
    try:
        chunks = store.get_chunks(ids)
    except KbError:
        chunks = {}
    shown: list[str] = []
    for cid in ids:
        chunk = chunks.get(cid)
        if chunk is None:
            shown.append(f"no chunk or no document left (row {cid})")
        elif chunk.page is not None:
            shown.append(f"{chunk.document_path} p.{chunk.page}")
        elif chunk.start_line is not None:
            shown.append(f"{chunk.document_path} L{chunk.start_line}-{chunk.end_line}")
        else:
            shown.append(chunk.document_path)
    return tuple(shown)


def damaged_store_report(problems: Sequence[str], store_location: str,
                         documents: int = 0, chunks: int = 0) -> DoctorReport:
    """The report for an index database SQLite calls damaged: nothing else is checked
    (every other check would read the damaged pages)."""
    finding = Finding(
        "store-corrupt", "error",
        f"the index database is damaged: {problems[0]}", len(problems),
        tuple(problems[:SAMPLES]),
        f"delete {store_location} and run `kb-mcp index`: it rebuilds the index from your "
        "files (every chunk is embedded again)")
    return DoctorReport(documents, chunks, (finding,), "damaged")


def diagnose(
    store: StoreDiagnostics,
    vectors: VectorReader,
    registry: ParserRegistry,
    configured_model: str,
    *,
    store_location: str,
    check_budget_s: float = CHECK_BUDGET_S,
    copied_from: str | None = None,
    reranker_problem: str | None = None,
    ready: bool | None = True,
) -> DoctorReport:
    """Run every check; touches nothing. ``store_location`` names what to delete when
    the database is damaged; ``copied_from`` names the source of a `kb-mcp migrate-store`
    copy into this index that has not finished (its marker), if there is one;
    ``reranker_problem`` why the reranker ``[search].rerank`` turns on cannot run;
    ``ready`` whether a run has read the whole folder into the index (None: unknown)."""
    extra = _incomplete_findings(ready) + _reranker_findings(reranker_problem)
    if not store.has_integrity_check():
        report = _diagnose(store, vectors, registry, configured_model, copied_from, extra)
        return DoctorReport(report.documents, report.chunks, report.findings, "not applicable")
    problems = store.quick_check(check_budget_s)
    if problems:
        try:  # the counts may well live on undamaged pages
            stats = store.stats()
        except StoreCorrupt:
            return damaged_store_report(problems, store_location)
        return damaged_store_report(problems, store_location, stats.documents, stats.chunks)
    try:
        report = _diagnose(store, vectors, registry, configured_model, copied_from, extra)
    except StoreCorrupt as exc:  # damage the quick check did not reach, or did not finish
        return damaged_store_report([exc.detail], store_location)
    if problems is None:
        return DoctorReport(report.documents, report.chunks, report.findings, "unfinished")
    return report


def empty_store_report() -> DoctorReport:
    """The report for an index database nothing was ever written into (an empty file, no
    schema): the index is incomplete, and nothing else can be checked."""
    return DoctorReport(0, 0, tuple(_incomplete_findings(False)))


def _incomplete_findings(ready: bool | None) -> list[Finding]:
    if ready is not False:
        return []
    return [Finding(
        "index-incomplete", "error",
        "no index run has finished reading the folder into this index (the first run "
        "failed, was stopped, or is still running): search answers index_not_ready", 1, (),
        "run `kb-mcp index`: it reads the whole folder, completing what an earlier run "
        "left (unless one is running now: then let it finish)")]


def _reranker_findings(problem: str | None) -> list[Finding]:
    if problem is None:
        return []
    return [Finding(
        "reranker-unavailable", "error",
        "[search].rerank is on, but its cross-encoder cannot run: every search fails", 1,
        (problem,),
        "run the pip command the sample names (or pip install 'kb-mcp[rerank]'), or set "
        "[search].rerank = false in the configuration; then check with `kb-mcp doctor`")]


def _diagnose(
    store: StoreDiagnostics,
    vectors: VectorReader,
    registry: ParserRegistry,
    configured_model: str,
    copied_from: str | None = None,
    extra: Sequence[Finding] = (),
) -> DoctorReport:
    findings: list[Finding] = list(extra)
    facts = store.consistency()
    chunk_ids = facts.chunk_ids
    reindex = "run `kb-mcp index --force` to rebuild the chunks, vectors and lexical rows"

    def add(check: str, items: Collection[object], summary: str, remedy: str) -> None:
        if items:
            findings.append(_finding(check, sorted(items, key=str), summary, remedy))

    def add_chunks(check: str, ids: Collection[int], summary: str, remedy: str) -> None:
        """A finding about chunks, its samples naming their files (never a bare id)."""
        if ids:
            found = _finding(check, sorted(ids), summary, remedy)
            named = chunk_samples(store, sorted(ids)[:SAMPLES])
            findings.append(Finding(found.check, found.severity, found.summary, found.count,
                                    named, found.remedy))

    try:
        vector_ids: set[int] | None = vectors.ids()
    except VectorsUnreachable as exc:
        vector_ids = None
        findings.append(Finding(
            "vectors-unreadable", "error",
            "the vector store does not answer: search answers from keywords only", 1,
            (exc.detail,),
            "check that the object store is reachable from this machine and that "
            "vectors_uri, [vectors.storage_options] and the AWS_* (or GOOGLE_*, AZURE_*) "
            "environment name the right endpoint and credentials; nothing needs rebuilding"))
    except VectorsUnreadable as exc:
        vector_ids = None
        findings.append(Finding(
            "vectors-unreadable", "error",
            "the vector files cannot be read: search answers from keywords only", 1,
            (exc.detail,),
            "run `kb-mcp index`: it finds the damaged vector files and rebuilds the vectors "
            "from the indexed chunks"))
    if vector_ids is not None:
        add_chunks("missing-vector", chunk_ids - vector_ids, "{n} chunks have no vector",
                   "run `kb-mcp index`: it embeds the chunks that have no vector")
        add_chunks("orphan-vector", vector_ids - chunk_ids, "{n} vectors belong to no chunk",
                   "run `kb-mcp index`: it removes the vectors that belong to no chunk")
    add_chunks("missing-lexical-row", chunk_ids - facts.lexical_ids,
               "{n} chunks have no lexical row", reindex)
    add_chunks("orphan-lexical-row", facts.lexical_ids - chunk_ids,
               "{n} lexical rows belong to no chunk", reindex)
    add_chunks("chunk-without-document", facts.chunks_without_document,
               "{n} chunks point at a missing document", reindex)
    add("document-without-chunks", facts.documents_without_chunks,
        "{n} documents have no chunks", reindex)
    stats = store.stats()
    if stats.model_id is not None and stats.model_id != configured_model:
        findings.append(Finding(
            "model-mismatch", "error",
            f"index built with {stats.model_id!r}, configured model is {configured_model!r}",
            1, (stats.model_id,),
            "configure the model the index was built with, or run `kb-mcp index --force` "
            "to re-embed everything with the configured one"))
    if facts.schema_revision != facts.head_revision:
        findings.append(Finding(
            "schema-behind", "error",
            f"schema revision {facts.schema_revision} is behind {facts.head_revision}", 1,
            (str(facts.schema_revision),),
            "run any command that opens the index for writing (`kb-mcp index`): it "
            "upgrades the schema in place without re-embedding"))
    if copied_from is not None:
        findings.append(Finding(
            "copy-unfinished", "error",
            f"a copy from {copied_from} into this index is running or was interrupted: "
            "the index may lack documents and vectors", 1, (copied_from,),
            "unless a migrate-store is still running: run `kb-mcp index` to complete the "
            "index from its folder (it embeds what is missing), or, to finish without "
            "embedding, run the interrupted migrate-store command again from the source's "
            "configuration: it resumes where the copy stopped"))
    enabled = registry.extensions()
    paths = store.document_paths()
    add("extension-not-enabled", [p for p in paths if extension_of(p) not in enabled],
        "{n} indexed documents have a format that is not enabled: searchable, not offered",
        "add the format back to [parsers].enabled to offer them again, or run "
        "`kb-mcp index --prune` to remove them from the index")
    current = facts.schema_revision == facts.head_revision
    too_big = [
        f"{p} ({size} bytes)"
        for p, size in (store.sizes_over(RANGED_READ_CAP) if current else [])
        if size > readable_bytes_for(extension_of(p))
    ]
    add("larger-than-read-cap", too_big,
        "{n} documents are larger than any read accepts (they grew past the 50 MiB index "
        "cap after they were indexed): found by search, but not offered and not readable",
        "split each into files under 50 MiB, then run `kb-mcp index`; a document between "
        "1 MiB and 50 MiB needs nothing: it is read in ranges (decision 0033)")
    add("size-not-recorded", facts.null_size_paths,
        "{n} documents have no recorded size (indexed before sizes were recorded); they "
        "stay offered",
        "run `kb-mcp index` once: it records the sizes from its scan without re-embedding")
    order = {c.id: i for i, c in enumerate(CHECKS)}
    return DoctorReport(stats.documents, stats.chunks,
                        tuple(sorted(findings, key=lambda f: order[f.check])))
